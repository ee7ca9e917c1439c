//===- CodecEntropyTest.cpp - When the encoder tries coded chunks ---------===//
//
// comet_rt_codec_set_entropy selects whether the sz encoder tries coded
// chunks (mode 7, range- or Rice-coded): never (OFF), range-coded on
// near-constant chunks, sparse ones included, and Rice-coded on other dense
// ones (AUTO, the default) or both on every eligible chunk (ALWAYS). It
// changes which bytes are written, never the values they decode to, and one
// decoder reads them all.
//
//===----------------------------------------------------------------------===//
#include "CodecTestUtil.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

using namespace comet::test;

namespace {

constexpr int kSettings[] = {
    COMET_RT_CODEC_ENTROPY_OFF, COMET_RT_CODEC_ENTROPY_AUTO,
    COMET_RT_CODEC_ENTROPY_ALWAYS, COMET_RT_CODEC_ENTROPY_NONE};

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
    EXPECT_EQ(comet_rt_codec_set_entropy(entropy), COMET_RT_SUCCESS);
    EXPECT_EQ(comet_rt_codec_get_entropy(), entropy);
    comet_rt_status st;
    auto s = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, in.x.data(),
                         in.dims, in.eb, &st);
    EXPECT_EQ(st, COMET_RT_SUCCESS);
    return s;
  }

  static bool hasCodedChunk(const std::vector<uint8_t> &s) {
    auto modes = v2Modes(s);
    return std::find(modes.begin(), modes.end(), 7) != modes.end();
  }
};

TEST_F(CodecEntropy, SelectionIsChecked) {
  EXPECT_EQ(comet_rt_codec_get_entropy(), COMET_RT_CODEC_ENTROPY_AUTO);
  EXPECT_EQ(comet_rt_codec_set_entropy(4), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(comet_rt_codec_set_entropy(-1), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(comet_rt_codec_get_entropy(), COMET_RT_CODEC_ENTROPY_AUTO);
  for (int e : kSettings) {
    ASSERT_EQ(comet_rt_codec_set_entropy(e), COMET_RT_SUCCESS);
    EXPECT_EQ(comet_rt_codec_get_entropy(), e);
  }
}

// Every setting's stream decodes, within the bound, to the same values
// (the modes differ, the codes do not); OFF never writes a coded chunk, NONE
// only the fixed-width block modes, and
// ALWAYS, which keeps the smallest of the block, range-coded and
// Rice-coded chunk, is never larger than OFF or AUTO. (AUTO may write a
// Rice-coded chunk that the block modes would have beaten: it compares it
// with the fixed-width modes only, to skip planning the blocks.)
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
                COMET_RT_SUCCESS);
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
    const auto &none = streams[3];
    EXPECT_FALSE(hasCodedChunk(off));
    EXPECT_LE(always.size(), autoS.size());
    EXPECT_LE(always.size(), off.size());
    // NONE: the fixed-width modes only, never smaller than OFF's choice
    // among them and the Rice block modes.
    for (int m : v2Modes(none))
      EXPECT_LE(m, 3);
    EXPECT_LE(off.size(), none.size());
  }
}

// AUTO range-codes the near-constant softmax chunks, at a fraction of their
// size without; Rice-codes the dense Gaussian chunks, a few percent smaller
// than the block modes; and leaves post-ReLU chunks in the block modes.
TEST_F(CodecEntropy, AutoPicksTheCoderPerChunk) {
  auto in = inputs();
  const Input &softmax = in[0], &gaussian = in[1], &relu = in[3];
  auto softOff = compressWith(COMET_RT_CODEC_ENTROPY_OFF, softmax);
  auto softAuto = compressWith(COMET_RT_CODEC_ENTROPY_AUTO, softmax);
  EXPECT_EQ(v2Modes(softAuto), std::vector<int>(4, 7));
  EXPECT_EQ(v2Coders(softAuto), std::vector<int>(4, 0));
  EXPECT_LT(2 * softAuto.size(), softOff.size());

  auto gaussOff = compressWith(COMET_RT_CODEC_ENTROPY_OFF, gaussian);
  auto gaussAuto = compressWith(COMET_RT_CODEC_ENTROPY_AUTO, gaussian);
  EXPECT_EQ(v2Coders(gaussAuto), std::vector<int>(4, 1));
  EXPECT_LT(gaussAuto.size(), gaussOff.size());
  EXPECT_GT(100 * gaussAuto.size(), 90 * gaussOff.size());

  auto reluOff = compressWith(COMET_RT_CODEC_ENTROPY_OFF, relu);
  auto reluAuto = compressWith(COMET_RT_CODEC_ENTROPY_AUTO, relu);
  EXPECT_FALSE(hasCodedChunk(reluAuto));
  EXPECT_EQ(reluAuto, reluOff);
}

// At a bound near a quarter of the spread, post-ReLU codes are mostly 0 with
// a few 1s: the sparse blocks' one-bit-a-value mask is then most of the
// block chunk, and AUTO range-codes such chunks (under two bits a value)
// although their blocks are sparse, at well under half the size.
TEST_F(CodecEntropy, LooseBoundPostReluChunksAreRangeCoded) {
  Input relu{
      "relu", makeData(Dist::Relu50, 1.0, 16384, false, 11), {128, 128}, 0.0};
  float hi = *std::max_element(relu.x.begin(), relu.x.end());
  relu.eb = 0.3 * hi;
  auto off = compressWith(COMET_RT_CODEC_ENTROPY_OFF, relu);
  auto autoS = compressWith(COMET_RT_CODEC_ENTROPY_AUTO, relu);
  EXPECT_EQ(v2Modes(autoS), std::vector<int>(4, 7));
  EXPECT_EQ(v2Coders(autoS), std::vector<int>(4, 0));
  EXPECT_LT(2 * autoS.size(), off.size());
  // Under one bit a value where the block modes cannot go.
  EXPECT_LT(8 * autoS.size(), relu.x.size());
}

// bfloat16 bits of x (round to nearest even, NaN kept a NaN) and back.
uint16_t toBf16(float x) {
  uint32_t b = bitsOf(x);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u)
    return uint16_t(b >> 16 | 0x40);
  return uint16_t((b + 0x7FFFu + ((b >> 16) & 1)) >> 16);
}
float fromBf16(uint16_t h) {
  uint32_t b = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Rice-coded chunks on a 2-D field with a per-column scale (GELU-like:
// the up predictor and the contexts find it), at rank 1 (left neighbours
// only) and rank 3, in f32 and bf16, with outliers, specials and an absent
// block: the bound holds and the specials come back.
TEST_F(CodecEntropy, RiceCodedChunksRoundTrip) {
  std::mt19937 rng(23);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(3 * 4096 + 512);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = nd(rng) * (0.05f + 0.2f * float(i % 64 % 7));
  std::fill(x.begin() + 4096, x.begin() + 4096 + 64, 0.0f); // absent block
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[4200] = std::numeric_limits<float>::infinity();
  x[9000] = 3e30f;
  const std::vector<std::vector<uint64_t>> shapes = {
      {x.size() / 64, 64}, {x.size()}, {x.size() / 16, 4, 4}};
  std::vector<uint16_t> xb(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    xb[i] = toBf16(x[i]);
  for (const auto &dims : shapes) {
    for (bool bf16 : {false, true}) {
      SCOPED_TRACE(std::to_string(dims.size()) + "-d" + (bf16 ? " bf16" : ""));
      for (int e :
           {COMET_RT_CODEC_ENTROPY_AUTO, COMET_RT_CODEC_ENTROPY_ALWAYS}) {
        ASSERT_EQ(comet_rt_codec_set_entropy(e), COMET_RT_SUCCESS);
        comet_rt_status st;
        auto s = bf16 ? compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_BF16,
                                    xb.data(), dims, 1e-3, &st)
                      : compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32,
                                    x.data(), dims, 1e-3, &st);
        ASSERT_EQ(st, COMET_RT_SUCCESS);
        auto coders = v2Coders(s);
        EXPECT_NE(std::find(coders.begin(), coders.end(), 1), coders.end());
        std::vector<float> y(x.size());
        if (bf16) {
          std::vector<uint16_t> yb(x.size());
          ASSERT_EQ(comet_rt_codec_decompress(s.data(), s.size(), yb.data(),
                                              yb.size() * 2),
                    COMET_RT_SUCCESS);
          for (size_t i = 0; i < y.size(); ++i)
            y[i] = fromBf16(yb[i]);
        } else {
          ASSERT_EQ(comet_rt_codec_decompress(s.data(), s.size(), y.data(),
                                              y.size() * 4),
                    COMET_RT_SUCCESS);
        }
        for (size_t i = 0; i < x.size(); ++i) {
          const float xi = bf16 ? fromBf16(xb[i]) : x[i];
          if (std::isnan(xi))
            ASSERT_TRUE(std::isnan(y[i])) << i;
          else if (std::isinf(xi))
            ASSERT_EQ(y[i], xi) << i;
          else
            ASSERT_LE(std::fabs(double(xi) - double(y[i])), 1e-3) << i;
        }
      }
    }
  }
}

// The setting applies to format version 2 only: version 1 has no coded
// chunks, and its bytes do not depend on it.
TEST_F(CodecEntropy, Version1IgnoresIt) {
  const Input in = inputs()[0];
  std::vector<std::vector<uint8_t>> streams;
  for (int e : kSettings) {
    ASSERT_EQ(comet_rt_codec_set_entropy(e), COMET_RT_SUCCESS);
    comet_rt_status st;
    streams.push_back(compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32,
                                  in.x.data(), in.dims, in.eb, &st, 1));
    ASSERT_EQ(st, COMET_RT_SUCCESS);
  }
  EXPECT_EQ(streams[0], streams[1]);
  EXPECT_EQ(streams[0], streams[2]);
}

// comet_rt_codec_compress_entropy takes the setting for one call: the same
// bytes as that setting made process-wide, which it neither reads nor
// changes; a value out of the enum is refused.
TEST_F(CodecEntropy, PerCallSettingGivesThatSettingsBytes) {
  const Input in = inputs()[0];
  ASSERT_EQ(comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_OFF),
            COMET_RT_SUCCESS);
  for (int e : kSettings) {
    SCOPED_TRACE(e);
    std::vector<uint8_t> out(comet_rt_codec_max_compressed_size(
        COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, in.x.size()));
    size_t size = 0;
    ASSERT_EQ(comet_rt_codec_compress_entropy(
                  e, COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, in.x.data(),
                  in.dims.data(), uint32_t(in.dims.size()), in.eb, out.data(),
                  out.size(), &size),
              COMET_RT_SUCCESS);
    out.resize(size);
    EXPECT_EQ(comet_rt_codec_get_entropy(), COMET_RT_CODEC_ENTROPY_OFF);
    std::vector<uint8_t> want = compressWith(e, in);
    EXPECT_EQ(out, want);
    ASSERT_EQ(comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_OFF),
              COMET_RT_SUCCESS);
  }
  size_t size = 0;
  for (int bad : {-1, 4})
    EXPECT_EQ(comet_rt_codec_compress_entropy(
                  bad, COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, in.x.data(),
                  in.dims.data(), uint32_t(in.dims.size()), in.eb, nullptr, 0,
                  &size),
              COMET_RT_ERROR_INVALID_ARGUMENT);
}

} // namespace
