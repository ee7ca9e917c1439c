//===- CodecIsaTest.cpp - The AVX2 and baseline encoders agree ------------===//
//
// The encoder picks AVX2 at run time when the CPU has it. Both paths must
// write the same bytes for every input, bound and dtype: the format is
// defined by the scalar arithmetic, not by the instruction set.
//
//===----------------------------------------------------------------------===//
#include "CodecTestUtil.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>
#include <string>

using namespace comet::test;

namespace {

// 16-bit inputs from float data: the top bits (bf16) or a truncating f16
// conversion; any bit pattern is a valid input.
std::vector<uint16_t> toHalfBits(const std::vector<float> &x, bool bf16) {
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t u = bitsOf(x[i]);
    if (bf16) {
      h[i] = uint16_t(u >> 16);
      continue;
    }
    uint32_t sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xFF;
    int e = int(exp) - 127 + 15;
    if (exp == 0xFF)
      h[i] = uint16_t(sign | 0x7C00u | ((u & 0x7FFFFF) ? 0x200u : 0u));
    else if (e >= 31)
      h[i] = uint16_t(sign | 0x7BFFu);
    else if (e <= 0)
      h[i] = uint16_t(sign); // flush small values to a signed zero
    else
      h[i] = uint16_t(sign | uint32_t(e) << 10 | ((u >> 13) & 0x3FF));
  }
  return h;
}

class CodecIsa : public ::testing::Test {
protected:
  void SetUp() override {
    comet_rt_status st = comet_rt_codec_set_isa(COMET_RT_CODEC_ISA_AVX2);
    if (st == COMET_RT_ERROR_UNSUPPORTED) {
      // A CI machine must exercise both paths.
      if (const char *ci = std::getenv("CI"); ci && std::string(ci) == "true")
        FAIL() << "this CPU has no AVX2; the AVX2 path is untested";
      GTEST_SKIP() << "this CPU has no AVX2";
    }
    ASSERT_EQ(st, COMET_RT_SUCCESS);
  }
  void TearDown() override { comet_rt_codec_set_isa(COMET_RT_CODEC_ISA_AUTO); }

  std::vector<uint8_t> compressWith(int isa, comet_rt_dtype dtype,
                                    const void *data, uint64_t n, double eb) {
    EXPECT_EQ(comet_rt_codec_set_isa(isa), COMET_RT_SUCCESS);
    EXPECT_EQ(comet_rt_codec_active_isa(), isa);
    comet_rt_status st;
    // Rows of 50 when they fit, so that the 2D Lorenzo mode is in play.
    std::vector<uint64_t> dims = {n};
    if (n % 50 == 0)
      dims = {n / 50, 50};
    auto s = compressVec(COMET_RT_CODEC_SZ, dtype, data, dims, eb, &st);
    EXPECT_EQ(st, COMET_RT_SUCCESS);
    return s;
  }
};

TEST_F(CodecIsa, SelectionIsChecked) {
  EXPECT_EQ(comet_rt_codec_set_isa(7), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(comet_rt_codec_set_isa(-1), COMET_RT_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(comet_rt_codec_set_isa(COMET_RT_CODEC_ISA_AUTO), COMET_RT_SUCCESS);
  EXPECT_EQ(comet_rt_codec_active_isa(), COMET_RT_CODEC_ISA_AVX2);
}

TEST_F(CodecIsa, Avx2AndBaselineWriteTheSameBytes) {
  const Dist dists[] = {Dist::Uniform, Dist::Normal,   Dist::Relu50,
                        Dist::Relu95,  Dist::Constant, Dist::Smooth};
  const double scales[] = {1e-40, 1e-3, 1.0, 1e6, 1e38};
  const size_t lengths[] = {1, 63, 64, 65, 4095, 4096, 4097, 20000, 4150};
  const double ebs[] = {1e-6, 1e-4, 1e-2, 1.0};
  uint32_t seed = 1;
  size_t cases = 0, bytes = 0;
  for (Dist d : dists)
    for (double scale : scales)
      for (size_t n : lengths) {
        std::vector<float> x = makeData(d, scale, n, seed % 2, seed);
        ++seed;
        auto h16 = toHalfBits(x, false), b16 = toHalfBits(x, true);
        for (double eb : ebs) {
          SCOPED_TRACE("dist " + std::to_string(int(d)) + " scale " +
                       std::to_string(scale) + " n " + std::to_string(n) +
                       " eb " + std::to_string(eb));
          struct {
            comet_rt_dtype dtype;
            const void *data;
          } inputs[] = {{COMET_RT_DTYPE_F32, x.data()},
                        {COMET_RT_DTYPE_F16, h16.data()},
                        {COMET_RT_DTYPE_BF16, b16.data()}};
          for (auto in : inputs) {
            auto base = compressWith(COMET_RT_CODEC_ISA_BASELINE, in.dtype,
                                     in.data, n, eb);
            auto avx2 =
                compressWith(COMET_RT_CODEC_ISA_AVX2, in.dtype, in.data, n, eb);
            ASSERT_FALSE(base.empty());
            ASSERT_EQ(base, avx2) << "dtype " << in.dtype;
            ++cases;
            bytes += base.size();
          }
        }
      }
  EXPECT_EQ(cases, 6u * 5u * 9u * 4u * 3u);
  EXPECT_GT(bytes, 0u);
}

} // namespace
