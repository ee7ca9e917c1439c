//===- CodecFixtureTest.cpp - Byte-exact test vectors ---------------------===//
//
// test/fixtures/codec/manifest.txt lists small inputs with the exact format
// version 2 stream they must compress to and the exact values that stream
// decodes to, and optionally the comet_rt_codec_set_entropy setting it is
// written with (auto, the default, off, always or none);
// test/fixtures/codec/v2-fixed/ holds every case written with none (the
// fixed-width modes, what the CUDA encoder writes as version 2);
// test/fixtures/codec/v1/
// holds the same for version 1, which the decoder keeps reading and the CUDA
// codec writes; test/fixtures/codec/v2-blocks/ holds version 2 streams of
// an earlier encoder, which must still decode. Regenerate them with
// test/fixtures/codec/regenerate.py only when a format version changes.
//
//===----------------------------------------------------------------------===//
#include "CodecTestUtil.h"

#include "gtest/gtest.h"

#include <string>

using namespace comet::test;

namespace {

void checkSet(const std::string &dir, int version, size_t minCases) {
  auto cases = readManifest(dir);
  ASSERT_GE(cases.size(), minCases);
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
    atEveryIsaAndThreadCount([&] {
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
    });
    if (::testing::Test::HasFatalFailure())
      break;
  }
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

// Version 2 in the fixed-width modes (entropy none), the bytes the CUDA
// encoder writes as version 2.
TEST(CodecFixtures, Version2FixedByteExact) {
  checkSet(std::string(COMET_CODEC_FIXTURE_DIR) + "/v2-fixed", 2, 16);
}

// The decoder keeps reading version 1, and the version 1 encoder (the CUDA
// codec's format) still writes these bytes.
TEST(CodecFixtures, Version1ByteExact) {
  checkSet(std::string(COMET_CODEC_FIXTURE_DIR) + "/v1", 1, 12);
}

} // namespace
