//===- CodecFixtureTest.cpp - Byte-exact test vectors ---------------------===//
//
// test/fixtures/codec/manifest.txt lists small inputs with the exact format
// version 2 stream they must compress to and the exact values that stream
// decodes to, and optionally the comet_rt_codec_set_entropy setting it is
// written with (auto, the default, off or always); test/fixtures/codec/v1/
// holds the same for version 1, which the decoder keeps reading and the CUDA
// codec writes; test/fixtures/codec/v2-blocks/ holds version 2 streams of
// an earlier encoder, which must still decode. Regenerate them with
// test/fixtures/codec/regenerate.py only when a format version changes.
//
//===----------------------------------------------------------------------===//
#include "CodecTestUtil.h"

#include "gtest/gtest.h"

#include <fstream>
#include <sstream>
#include <string>

using namespace comet::test;

namespace {

std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot open " << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

struct Case {
  std::string name, codec, dtype;
  double eb = 0;
  std::vector<uint64_t> dims;
  std::string input, stream, output;
  int entropy = COMET_RT_CODEC_ENTROPY_AUTO;
};

std::vector<Case> readManifest(const std::string &dir) {
  std::ifstream f(dir + "/manifest.txt");
  EXPECT_TRUE(f.good());
  std::vector<Case> cases;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream ls(line);
    Case c;
    std::string dims;
    ls >> c.name >> c.codec >> c.dtype >> c.eb >> dims >> c.input >> c.stream >>
        c.output;
    EXPECT_FALSE(ls.fail()) << line;
    std::string entropy;
    if (ls >> entropy) {
      EXPECT_TRUE(entropy == "auto" || entropy == "off" || entropy == "always")
          << line;
      c.entropy = entropy == "off"      ? COMET_RT_CODEC_ENTROPY_OFF
                  : entropy == "always" ? COMET_RT_CODEC_ENTROPY_ALWAYS
                                        : COMET_RT_CODEC_ENTROPY_AUTO;
    }
    std::istringstream ds(dims);
    for (std::string d; std::getline(ds, d, 'x');)
      c.dims.push_back(std::stoull(d));
    cases.push_back(c);
  }
  return cases;
}

comet_rt_codec codecOf(const std::string &s) {
  return s == "sz"     ? COMET_RT_CODEC_SZ
         : s == "mask" ? COMET_RT_CODEC_MASK
                       : COMET_RT_CODEC_RAW;
}
comet_rt_dtype dtypeOf(const std::string &s) {
  return s == "f16"    ? COMET_RT_DTYPE_F16
         : s == "bf16" ? COMET_RT_DTYPE_BF16
                       : COMET_RT_DTYPE_F32;
}

void checkSet(const std::string &dir, int version, size_t minCases) {
  auto cases = readManifest(dir);
  ASSERT_GE(cases.size(), minCases);
  const bool avx2 =
      comet_rt_codec_set_isa(COMET_RT_CODEC_ISA_AVX2) == COMET_RT_SUCCESS;
  for (const Case &c : cases) {
    SCOPED_TRACE(dir + "/" + c.name);
    auto input = readFile(dir + "/" + c.input);
    auto expected = readFile(dir + "/" + c.stream);
    auto output = readFile(dir + "/" + c.output);
    comet_rt_codec_info info;
    ASSERT_EQ(comet_rt_codec_get_info(expected.data(), expected.size(), &info),
              COMET_RT_SUCCESS);
    EXPECT_EQ(info.version, unsigned(version));
    ASSERT_EQ(comet_rt_codec_set_entropy(c.entropy), COMET_RT_SUCCESS);
    for (int isa : {COMET_RT_CODEC_ISA_BASELINE, COMET_RT_CODEC_ISA_AVX2}) {
      if (isa == COMET_RT_CODEC_ISA_AVX2 && !avx2)
        continue; // CodecIsa fails on CI when the path is missing
      ASSERT_EQ(comet_rt_codec_set_isa(isa), COMET_RT_SUCCESS);
      for (int threads : {1, 4}) {
        comet_rt_codec_set_num_threads(threads);
        comet_rt_status st;
        auto s = compressVec(codecOf(c.codec), dtypeOf(c.dtype), input.data(),
                             c.dims, c.eb, &st, version);
        ASSERT_EQ(st, COMET_RT_SUCCESS);
        ASSERT_EQ(s, expected) << "compressed bytes differ";
        std::vector<uint8_t> y(output.size());
        ASSERT_EQ(comet_rt_codec_decompress(expected.data(), expected.size(),
                                            y.data(), y.size()),
                  COMET_RT_SUCCESS);
        ASSERT_EQ(y, output) << "decompressed bytes differ";
      }
    }
  }
  comet_rt_codec_set_num_threads(0);
  comet_rt_codec_set_isa(COMET_RT_CODEC_ISA_AUTO);
  comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_AUTO);
}

TEST(CodecFixtures, Version2ByteExact) {
  checkSet(COMET_CODEC_FIXTURE_DIR, 2, 16);
}

// Version 2 streams that an earlier encoder wrote (block chunks where AUTO
// now writes Rice-coded ones) still decode to the same values.
TEST(CodecFixtures, Version2EarlierStreamsDecode) {
  const std::string dir = std::string(COMET_CODEC_FIXTURE_DIR) + "/v2-blocks";
  auto cases = readManifest(dir);
  ASSERT_GE(cases.size(), 6u);
  for (const Case &c : cases) {
    SCOPED_TRACE(dir + "/" + c.name);
    auto stream = readFile(dir + "/" + c.stream);
    auto output = readFile(dir + "/" + c.output);
    auto current =
        readFile(std::string(COMET_CODEC_FIXTURE_DIR) + "/" + c.stream);
    ASSERT_NE(stream, current) << "not an earlier encoder's stream";
    std::vector<uint8_t> y(output.size());
    ASSERT_EQ(comet_rt_codec_decompress(stream.data(), stream.size(), y.data(),
                                        y.size()),
              COMET_RT_SUCCESS);
    EXPECT_EQ(y, output) << "decompressed bytes differ";
  }
}

// The decoder keeps reading version 1, and the version 1 encoder (the CUDA
// codec's format) still writes these bytes.
TEST(CodecFixtures, Version1ByteExact) {
  checkSet(std::string(COMET_CODEC_FIXTURE_DIR) + "/v1", 1, 12);
}

} // namespace
