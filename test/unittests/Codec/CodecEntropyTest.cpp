//===- CodecEntropyTest.cpp - When the encoder tries coded chunks ---------===//
//
// comet_rt_codec_set_entropy selects whether the sz encoder tries coded
// chunks (mode 7): never (OFF), on near-constant chunks (AUTO, the default)
// or on every eligible chunk (ALWAYS). It changes which bytes are written,
// never the values they decode to, and one decoder reads them all.
//
//===----------------------------------------------------------------------===//
#include "CodecTestUtil.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

using namespace comet::test;

namespace {

constexpr int kSettings[] = {COMET_RT_CODEC_ENTROPY_OFF,
                             COMET_RT_CODEC_ENTROPY_AUTO,
                             COMET_RT_CODEC_ENTROPY_ALWAYS};

struct Input {
  std::string name;
  std::vector<float> x;
  std::vector<uint64_t> dims;
  double eb;
};

// Softmax rows (near-constant codes), dense Gaussian and smooth data, a
// post-ReLU tensor, and Gaussian data with specials; several chunks each.
std::vector<Input> inputs() {
  std::vector<Input> in;
  in.push_back({"softmax", makeAttention(16, 28, 3), {16, 28, 28}, 1e-2});
  in.push_back({"gaussian",
                makeData(Dist::Normal, 1.0, 12544, false, 5),
                {12544},
                1e-3});
  in.push_back({"smooth",
                makeData(Dist::Smooth, 1.0, 10000, false, 6),
                {100, 100},
                1e-4});
  in.push_back(
      {"relu", makeData(Dist::Relu50, 1.0, 9000, false, 7), {90, 100}, 1e-2});
  in.push_back({"specials",
                makeData(Dist::Normal, 1.0, 9000, true, 8),
                {30, 300},
                1e-2});
  return in;
}

class CodecEntropy : public ::testing::Test {
protected:
  void TearDown() override {
    comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_AUTO);
  }

  static std::vector<uint8_t> compressWith(int entropy, const Input &in) {
    EXPECT_EQ(comet_rt_codec_set_entropy(entropy), COMET_RT_OK);
    EXPECT_EQ(comet_rt_codec_get_entropy(), entropy);
    comet_rt_status st;
    auto s = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, in.x.data(),
                         in.dims, in.eb, &st);
    EXPECT_EQ(st, COMET_RT_OK);
    return s;
  }

  static bool hasCodedChunk(const std::vector<uint8_t> &s) {
    auto modes = v2Modes(s);
    return std::find(modes.begin(), modes.end(), 7) != modes.end();
  }
};

TEST_F(CodecEntropy, SelectionIsChecked) {
  EXPECT_EQ(comet_rt_codec_get_entropy(), COMET_RT_CODEC_ENTROPY_AUTO);
  EXPECT_EQ(comet_rt_codec_set_entropy(3), COMET_RT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(comet_rt_codec_set_entropy(-1), COMET_RT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(comet_rt_codec_get_entropy(), COMET_RT_CODEC_ENTROPY_AUTO);
  for (int e : kSettings) {
    ASSERT_EQ(comet_rt_codec_set_entropy(e), COMET_RT_OK);
    EXPECT_EQ(comet_rt_codec_get_entropy(), e);
  }
}

// Every setting's stream decodes, within the bound, to the same values
// (the modes differ, the codes do not); OFF never writes a coded chunk and
// ALWAYS is never larger than AUTO, which is never larger than OFF.
TEST_F(CodecEntropy, EverySettingRoundTripsToTheSameValues) {
  for (const Input &in : inputs()) {
    SCOPED_TRACE(in.name);
    std::vector<std::vector<uint8_t>> streams;
    std::vector<std::vector<float>> decoded;
    for (int e : kSettings) {
      streams.push_back(compressWith(e, in));
      std::vector<float> y(in.x.size());
      ASSERT_EQ(comet_rt_codec_decompress(streams.back().data(),
                                          streams.back().size(), y.data(),
                                          y.size() * sizeof(float)),
                COMET_RT_OK);
      for (size_t i = 0; i < y.size(); ++i) {
        if (std::isnan(in.x[i]))
          ASSERT_TRUE(std::isnan(y[i])) << i;
        else if (std::isinf(in.x[i]))
          ASSERT_EQ(y[i], in.x[i]) << i;
        else
          ASSERT_LE(std::fabs(double(in.x[i]) - double(y[i])), in.eb) << i;
      }
      decoded.push_back(std::move(y));
    }
    for (size_t k = 1; k < decoded.size(); ++k)
      ASSERT_EQ(std::memcmp(decoded[k].data(), decoded[0].data(),
                            decoded[0].size() * sizeof(float)),
                0);
    const auto &off = streams[0], &autoS = streams[1], &always = streams[2];
    EXPECT_FALSE(hasCodedChunk(off));
    EXPECT_LE(always.size(), autoS.size());
    EXPECT_LE(autoS.size(), off.size());
  }
}

// AUTO codes the near-constant softmax chunks, at a fraction of their size
// without, and leaves dense Gaussian chunks in the block modes, where ALWAYS
// codes them for a few percent.
TEST_F(CodecEntropy, AutoCodesNearConstantChunksOnly) {
  auto in = inputs();
  const Input &softmax = in[0], &gaussian = in[1];
  auto softOff = compressWith(COMET_RT_CODEC_ENTROPY_OFF, softmax);
  auto softAuto = compressWith(COMET_RT_CODEC_ENTROPY_AUTO, softmax);
  EXPECT_EQ(v2Modes(softAuto), std::vector<int>(4, 7));
  EXPECT_LT(2 * softAuto.size(), softOff.size());

  auto gaussOff = compressWith(COMET_RT_CODEC_ENTROPY_OFF, gaussian);
  auto gaussAuto = compressWith(COMET_RT_CODEC_ENTROPY_AUTO, gaussian);
  auto gaussAlways = compressWith(COMET_RT_CODEC_ENTROPY_ALWAYS, gaussian);
  EXPECT_FALSE(hasCodedChunk(gaussAuto));
  EXPECT_EQ(gaussAuto, gaussOff);
  EXPECT_TRUE(hasCodedChunk(gaussAlways));
  EXPECT_LT(gaussAlways.size(), gaussAuto.size());
}

// The setting applies to format version 2 only: version 1 has no coded
// chunks, and its bytes do not depend on it.
TEST_F(CodecEntropy, Version1IgnoresIt) {
  const Input in = inputs()[0];
  std::vector<std::vector<uint8_t>> streams;
  for (int e : kSettings) {
    ASSERT_EQ(comet_rt_codec_set_entropy(e), COMET_RT_OK);
    comet_rt_status st;
    streams.push_back(compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32,
                                  in.x.data(), in.dims, in.eb, &st, 1));
    ASSERT_EQ(st, COMET_RT_OK);
  }
  EXPECT_EQ(streams[0], streams[1]);
  EXPECT_EQ(streams[0], streams[2]);
}

} // namespace
