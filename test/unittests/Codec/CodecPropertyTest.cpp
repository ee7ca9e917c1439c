//===- CodecPropertyTest.cpp - Seeded property tests of the codec ---------===//
//
// Every combination of distribution x magnitude x specials x eb x length is
// compressed and decompressed, and the guarantees of docs/codec-format.md are
// checked element by element, in the double arithmetic the format defines.
//
//===----------------------------------------------------------------------===//
#include "CodecTestUtil.h"

#include "gtest/gtest.h"

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>

using namespace comet::test;

namespace {

enum class Mag { Denormal, Tiny, Unit, Large, Huge };

const char *distName(Dist d) {
  switch (d) {
  case Dist::Smooth:
    return "smooth";
  case Dist::Uniform:
    return "uniform";
  case Dist::Normal:
    return "normal";
  case Dist::Relu50:
    return "relu50";
  case Dist::Relu95:
    return "relu95";
  case Dist::Constant:
    return "constant";
  }
  return "?";
}

double magScale(Mag m) {
  switch (m) {
  case Mag::Denormal:
    return 1e-40; // float denormals
  case Mag::Tiny:
    return 1e-6;
  case Mag::Unit:
    return 1.0;
  case Mag::Large:
    return 1e6;
  case Mag::Huge:
    return 1e38; // values up to FLT_MAX
  }
  return 1;
}

std::vector<float> makeData(Dist dist, Mag mag, size_t n, bool specials,
                            uint32_t seed) {
  return comet::test::makeData(dist, magScale(mag), n, specials, seed);
}

// Checks every guarantee; returns the number of violations (and reports the
// first few).
size_t checkGuarantees(const std::vector<float> &x, const std::vector<float> &y,
                       double eb) {
  size_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    bool ok;
    if (!std::isfinite(x[i]))
      ok = bitsOf(x[i]) == bitsOf(y[i]); // NaN and Inf bit-exact
    else if (bitsOf(x[i]) == 0u)
      ok = bitsOf(y[i]) == 0u; // +0.0 stays +0.0
    else if (x[i] == 0.0f)
      ok = y[i] == 0.0f; // -0.0 gives +0.0, or -0.0 in a raw block
    else
      ok = std::isfinite(y[i]) && std::fabs(double(x[i]) - double(y[i])) <= eb;
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << "element " << i << ": x=" << x[i] << " (0x" << std::hex
                    << bitsOf(x[i]) << ") y=" << y[i] << " (0x" << bitsOf(y[i])
                    << std::dec << ") eb=" << eb;
  }
  return bad;
}

std::vector<float> decompressVec(const std::vector<uint8_t> &s, size_t n,
                                 comet_rt_status *st) {
  std::vector<float> y(n, 123.0f);
  *st = comet_rt_codec_decompress(s.data(), s.size(), y.data(),
                                  y.size() * sizeof(float));
  return y;
}

class CodecProperty : public ::testing::TestWithParam<std::tuple<Dist, Mag>> {
protected:
  void TearDown() override { comet_rt_codec_set_num_threads(0); }
};

TEST_P(CodecProperty, SzGuaranteesHold) {
  auto [dist, mag] = GetParam();
  const double ebs[] = {1e-7, 1e-5, 1e-3, 1e-1, 1.0, 1e2};
  const size_t lengths[] = {0, 1, 7, 63, 64, 65, 1001, 70001};
  uint32_t seed = 1 + unsigned(dist) * 100 + unsigned(mag) * 10;
  for (bool specials : {false, true}) {
    for (size_t n : lengths) {
      std::vector<float> x = makeData(dist, mag, n, specials, seed++);
      for (double eb : ebs) {
        SCOPED_TRACE(std::string(distName(dist)) + " n=" + std::to_string(n) +
                     " eb=" + std::to_string(eb) +
                     (specials ? " specials" : ""));
        comet_rt_status st;
        comet_rt_codec_set_num_threads(1);
        auto s1 = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                              {n}, eb, &st);
        ASSERT_EQ(st, COMET_RT_SUCCESS);
        ASSERT_LE(s1.size(), comet_rt_codec_max_compressed_size(
                                 COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, n));
        // The same bytes on any thread count.
        comet_rt_codec_set_num_threads(3);
        auto s3 = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                              {n}, eb, &st);
        ASSERT_EQ(st, COMET_RT_SUCCESS);
        ASSERT_EQ(s1, s3);
        // And the same bytes twice.
        auto again = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32,
                                 x.data(), {n}, eb, &st);
        ASSERT_EQ(s1, again);

        std::vector<float> y = decompressVec(s1, n, &st);
        ASSERT_EQ(st, COMET_RT_SUCCESS);
        ASSERT_EQ(checkGuarantees(x, y, eb), 0u);
        comet_rt_codec_set_num_threads(1);
        std::vector<float> y1 = decompressVec(s1, n, &st);
        ASSERT_EQ(st, COMET_RT_SUCCESS);
        ASSERT_TRUE(n == 0 ||
                    !std::memcmp(y.data(), y1.data(), n * sizeof(float)));
        // Version 1, which the decoder keeps reading, holds them too.
        auto v1 = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                              {n}, eb, &st, 1);
        ASSERT_EQ(st, COMET_RT_SUCCESS);
        y1 = decompressVec(v1, n, &st);
        ASSERT_EQ(st, COMET_RT_SUCCESS);
        ASSERT_EQ(checkGuarantees(x, y1, eb), 0u);
      }
    }
  }
}

TEST_P(CodecProperty, MaskAndRawSemantics) {
  auto [dist, mag] = GetParam();
  for (size_t n : {size_t(0), size_t(1), size_t(9), size_t(100003)}) {
    std::vector<float> x = makeData(dist, mag, n, true, 7 + unsigned(n));
    comet_rt_status st;
    auto raw = compressVec(COMET_RT_CODEC_RAW, COMET_RT_DTYPE_F32, x.data(),
                           {n}, 0.0, &st);
    ASSERT_EQ(st, COMET_RT_SUCCESS);
    std::vector<float> y = decompressVec(raw, n, &st);
    ASSERT_EQ(st, COMET_RT_SUCCESS);
    ASSERT_TRUE(n == 0 || !std::memcmp(x.data(), y.data(), n * sizeof(float)));

    auto mask = compressVec(COMET_RT_CODEC_MASK, COMET_RT_DTYPE_F32, x.data(),
                            {n}, 0.0, &st);
    ASSERT_EQ(st, COMET_RT_SUCCESS);
    EXPECT_EQ(mask.size(), 128 + (n + 7) / 8); // 1 bit per element
    y = decompressVec(mask, n, &st);
    ASSERT_EQ(st, COMET_RT_SUCCESS);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(bitsOf(y[i]), bitsOf(x[i] > 0.0f ? 1.0f : 0.0f)) << i;
  }
}

std::string
paramName(const ::testing::TestParamInfo<std::tuple<Dist, Mag>> &info) {
  static const char *mags[] = {"denormal", "tiny", "unit", "large", "huge"};
  return std::string(distName(std::get<0>(info.param))) + "_" +
         mags[unsigned(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(
    AllDistributions, CodecProperty,
    ::testing::Combine(::testing::Values(Dist::Uniform, Dist::Normal,
                                         Dist::Relu50, Dist::Relu95,
                                         Dist::Constant, Dist::Smooth),
                       ::testing::Values(Mag::Denormal, Mag::Tiny, Mag::Unit,
                                         Mag::Large, Mag::Huge)),
    paramName);

// Multi-dimensional shapes reach the 2D Lorenzo mode, whose neighbours
// depend on the last two dims and on where chunks start.
TEST(CodecSz, ShapesKeepGuaranteesAndBytes) {
  const std::vector<std::vector<uint64_t>> shapes = {
      {20, 30},    {3, 20, 30}, {2, 5, 61, 67}, {4101, 3},
      {1, 70, 70}, {64, 1},     {2, 1, 4097}};
  uint32_t seed = 500;
  for (const auto &dims : shapes) {
    uint64_t n = 1;
    for (uint64_t d : dims)
      n *= d;
    for (Dist dist : {Dist::Smooth, Dist::Relu50, Dist::Normal}) {
      for (bool specials : {false, true}) {
        std::vector<float> x = makeData(dist, Mag::Unit, n, specials, seed++);
        for (double eb : {1e-5, 1e-3, 1e-1}) {
          SCOPED_TRACE("dims[0]=" + std::to_string(dims[0]) +
                       " n=" + std::to_string(n) + " " + distName(dist) +
                       " eb=" + std::to_string(eb));
          comet_rt_status st;
          comet_rt_codec_set_num_threads(1);
          auto s1 = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                                dims, eb, &st);
          ASSERT_EQ(st, COMET_RT_SUCCESS);
          comet_rt_codec_set_num_threads(3);
          auto s3 = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                                dims, eb, &st);
          ASSERT_EQ(s1, s3);
          std::vector<float> y = decompressVec(s1, n, &st);
          ASSERT_EQ(st, COMET_RT_SUCCESS);
          ASSERT_EQ(checkGuarantees(x, y, eb), 0u);
        }
      }
    }
  }
  comet_rt_codec_set_num_threads(0);
}

// Zero-preservation is what makes post-ReLU data train: the zeros of x must
// be the zeros of x' and sz must actually compress such data.
TEST(CodecSz, PostReluZerosExactAndCompresses) {
  std::vector<float> x = makeData(Dist::Relu95, Mag::Unit, 1 << 16, false, 5);
  comet_rt_status st;
  auto s = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                       {256, 256}, 1e-2, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  EXPECT_LT(s.size() * 8, x.size() * sizeof(float)); // better than 8x
  std::vector<float> y = decompressVec(s, x.size(), &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] == 0.0f)
      ASSERT_EQ(bitsOf(y[i]), 0u) << i;
  EXPECT_EQ(checkGuarantees(x, y, 1e-2), 0u);
  // Nothing but zeros: a zero u32 size per 4096-element chunk (version 2),
  // one descriptor byte per 64-element block (version 1).
  std::vector<float> zeros(64 * 1000, 0.0f);
  s = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, zeros.data(),
                  {zeros.size()}, 1e-3, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  EXPECT_EQ(s.size(), 128u + 4u * 16u);
  s = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, zeros.data(),
                  {zeros.size()}, 1e-3, &st, 1);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  EXPECT_EQ(s.size(), 128u + 1000u);
}

// Codes at both ends of the quantizable range next to each other give the
// largest Lorenzo residual; it must still fit the format's maximum width
// and decode. (Values just past the range become outliers.)
TEST(CodecSz, ExtremeResidualsStayInFormat) {
  // Alone (dense is the cheapest mode), and repeated over a full block.
  for (size_t n : {size_t(2), size_t(64)}) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i)
      x[i] = i % 2 ? 8388607.0f : -8388607.0f;
    comet_rt_status st;
    auto s = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                         {x.size()}, 1.0, &st);
    ASSERT_EQ(st, COMET_RT_SUCCESS);
    std::vector<float> y = decompressVec(s, x.size(), &st);
    ASSERT_EQ(st, COMET_RT_SUCCESS) << "n = " << n;
    EXPECT_EQ(checkGuarantees(x, y, 1.0), 0u);
  }
}

TEST(CodecSz, HeaderRecordsShapeAndBound) {
  std::vector<float> x(2 * 3 * 5, 1.5f);
  comet_rt_status st;
  auto s = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                       {2, 3, 5}, 0.125, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  comet_rt_codec_info info;
  ASSERT_EQ(comet_rt_codec_get_info(s.data(), s.size(), &info), COMET_RT_SUCCESS);
  EXPECT_EQ(info.version, 2u);
  EXPECT_EQ(info.codec, COMET_RT_CODEC_SZ);
  EXPECT_EQ(info.rank, 3u);
  EXPECT_EQ(info.dims[0], 2u);
  EXPECT_EQ(info.dims[2], 5u);
  EXPECT_EQ(info.num_elements, 30u);
  EXPECT_EQ(info.eb, 0.125);
  EXPECT_EQ(info.block_size, 64u);
  EXPECT_EQ(info.num_blocks, 1u);
  EXPECT_EQ(info.compressed_bytes, s.size());
  EXPECT_EQ(info.decompressed_bytes, 120u);
}

// 16-bit inputs: the bound holds for the value actually stored in the dtype.
template <typename Conv>
void check16(comet_rt_dtype dtype, Conv toFloat, uint16_t (*fromFloat)(float)) {
  const size_t n = 20000;
  std::vector<float> src = makeData(Dist::Relu50, Mag::Unit, n, true, 99);
  std::vector<uint16_t> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = fromFloat(src[i] * 40.0f);
  for (double eb : {1e-4, 1e-2, 0.5}) {
    comet_rt_status st;
    auto s = compressVec(COMET_RT_CODEC_SZ, dtype, x.data(), {n}, eb, &st);
    ASSERT_EQ(st, COMET_RT_SUCCESS);
    std::vector<uint16_t> y(n);
    ASSERT_EQ(comet_rt_codec_decompress(s.data(), s.size(), y.data(), 2 * n),
              COMET_RT_SUCCESS);
    for (size_t i = 0; i < n; ++i) {
      float a = toFloat(x[i]), b = toFloat(y[i]);
      if (!std::isfinite(a))
        ASSERT_EQ(x[i], y[i]) << i;
      else if (a == 0.0f)
        ASSERT_EQ(y[i], 0u) << i;
      else
        ASSERT_LE(std::fabs(double(a) - double(b)), eb) << i;
    }
  }
}

float bf16ToFloat(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t floatToBf16Trunc(float f) { return uint16_t(bitsOf(f) >> 16); }

float f16ToFloat(uint16_t h) {
  int exp = (h >> 10) & 31, mant = h & 1023;
  float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exp == 31)
    return mant ? std::numeric_limits<float>::quiet_NaN()
                : sign * std::numeric_limits<float>::infinity();
  if (exp == 0)
    return sign * std::ldexp(float(mant), -24);
  return sign * std::ldexp(float(mant + 1024), exp - 25);
}
uint16_t floatToF16Trunc(float f) {
  // Truncating conversion, enough to make test inputs.
  if (std::isnan(f))
    return 0x7E00;
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (a >= 65504.0f)
    return sign | (std::isinf(a) ? 0x7C00 : 0x7BFF);
  if (a < std::ldexp(1.0f, -14))
    return sign | uint16_t(a * std::ldexp(1.0f, 24));
  int e;
  float m = std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  return sign | uint16_t((e + 14) << 10) | uint16_t((m * 2048.0f) - 1024.0f);
}

TEST(CodecSz, Bf16Bound) {
  check16(COMET_RT_DTYPE_BF16, bf16ToFloat, floatToBf16Trunc);
}
TEST(CodecSz, F16Bound) {
  check16(COMET_RT_DTYPE_F16, f16ToFloat, floatToF16Trunc);
}

// Coded chunks (mode 7) go below one bit per value on near-constant codes
// (attention softmax rows at a coarse bound), where a Rice code cannot, and
// keep the bound, the zeros and the specials; f16 and bf16 too.
TEST(CodecSz, CodedChunksGoBelowOneBitPerValue) {
  std::vector<float> x = makeAttention(16, 28, 7); // 12544: 4 chunks
  comet_rt_status st;
  auto s = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                       {16, 28, 28}, 1e-2, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  EXPECT_EQ(v2Modes(s), std::vector<int>(4, 7));
  EXPECT_LT(s.size() * 8, x.size() / 2); // under half a bit per value
  std::vector<float> y = decompressVec(s, x.size(), &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  EXPECT_EQ(checkGuarantees(x, y, 1e-2), 0u);
  // Exact zeros and specials inside coded chunks.
  for (size_t i = 0; i < x.size(); i += 37)
    x[i] = 0.0f;
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[4100] = -std::numeric_limits<float>::infinity();
  x[9000] = 100.0f; // a long value
  for (uint32_t dtype :
       {COMET_RT_DTYPE_F32, COMET_RT_DTYPE_F16, COMET_RT_DTYPE_BF16}) {
    SCOPED_TRACE(dtype);
    std::vector<uint16_t> half(x.size());
    const void *data = x.data();
    if (dtype != COMET_RT_DTYPE_F32) {
      for (size_t i = 0; i < x.size(); ++i)
        half[i] = dtype == COMET_RT_DTYPE_F16 ? floatToF16Trunc(x[i])
                                              : floatToBf16Trunc(x[i]);
      data = half.data();
    }
    s = compressVec(COMET_RT_CODEC_SZ, comet_rt_dtype(dtype), data,
                    {16, 28, 28}, 1e-2, &st);
    ASSERT_EQ(st, COMET_RT_SUCCESS);
    EXPECT_EQ(v2Modes(s), std::vector<int>(4, 7));
    std::vector<uint8_t> out(x.size() * (dtype == COMET_RT_DTYPE_F32 ? 4 : 2));
    ASSERT_EQ(
        comet_rt_codec_decompress(s.data(), s.size(), out.data(), out.size()),
        COMET_RT_SUCCESS);
    for (size_t i = 0; i < x.size(); ++i) {
      float in = x[i], got;
      if (dtype == COMET_RT_DTYPE_F32) {
        std::memcpy(&got, &out[4 * i], 4);
      } else {
        uint16_t h;
        std::memcpy(&h, &out[2 * i], 2);
        in = dtype == COMET_RT_DTYPE_F16 ? f16ToFloat(half[i])
                                         : bf16ToFloat(half[i]);
        got = dtype == COMET_RT_DTYPE_F16 ? f16ToFloat(h) : bf16ToFloat(h);
      }
      if (in == 0.0f)
        ASSERT_EQ(bitsOf(got), 0u) << i;
      else if (std::isnan(in))
        ASSERT_TRUE(std::isnan(got)) << i;
      else if (std::isinf(in))
        ASSERT_EQ(in, got) << i;
      else
        ASSERT_LE(std::fabs(double(in) - double(got)), 1e-2) << i;
    }
  }
}

// One 256 MB run: the size the issue names, with all threads.
TEST(CodecSz, Large256MB) {
#ifdef COMET_CODEC_NO_LARGE_TEST
  GTEST_SKIP() << "the 256 MB case runs in the unsanitized tree";
#endif
  const size_t n = size_t(64) << 20; // 64 Mi floats = 256 MiB
  std::vector<float> x(n);
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    float r = u(rng);
    x[i] = r < 0.6f ? 0.0f : (r - 0.6f) * 10.0f;
  }
  x[12345] = std::numeric_limits<float>::quiet_NaN();
  x[n - 1] = -std::numeric_limits<float>::infinity();
  comet_rt_status st;
  auto s = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(), {n},
                       1e-3, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  std::vector<float> y = decompressVec(s, n, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  ASSERT_EQ(checkGuarantees(x, y, 1e-3), 0u);
}

TEST(CodecApi, RejectsBadArguments) {
  float x[4] = {1, 2, 3, 4};
  uint64_t dims[1] = {4};
  std::vector<uint8_t> out(1024);
  size_t size;
  for (double eb : {0.0, -1.0, std::nan(""), HUGE_VAL, 1e-300, 1e300})
    EXPECT_EQ(comet_rt_codec_compress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x,
                                      dims, 1, eb, out.data(), out.size(),
                                      &size),
              COMET_RT_ERROR_INVALID_ARGUMENT)
        << eb;
  EXPECT_EQ(comet_rt_codec_compress(9, COMET_RT_DTYPE_F32, x, dims, 1, 1.0,
                                    out.data(), out.size(), &size),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(comet_rt_codec_compress(COMET_RT_CODEC_RAW, 7, x, dims, 1, 1.0,
                                    out.data(), out.size(), &size),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(comet_rt_codec_compress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x,
                                    dims, 9, 1.0, out.data(), out.size(),
                                    &size),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  uint64_t overflow[2] = {uint64_t(1) << 40, uint64_t(1) << 40};
  EXPECT_EQ(comet_rt_codec_compress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x,
                                    overflow, 2, 1.0, out.data(), out.size(),
                                    &size),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  // Too small an output buffer says so, and says the size it needs.
  EXPECT_EQ(comet_rt_codec_compress(COMET_RT_CODEC_RAW, COMET_RT_DTYPE_F32, x,
                                    dims, 1, 0.0, out.data(), 100, &size),
            COMET_RT_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(size, 128u + 16u);
  EXPECT_STREQ(comet_rt_status_string(COMET_RT_ERROR_CORRUPT), "corrupt stream");
}

} // namespace
