//===- CodecQuantizerTest.cpp - SIMD quantizers against the scalar one ----===//
//
// The format defines an element's code and its outlier test by the scalar
// quantizer of comet/kernels/CodecFormat.h (quantize, shared with the CUDA
// codec). The CPU codec's f32 blocks go through SSE2 (4 lanes) and AVX2 (8
// lanes) versions of it (kernels/cpu/Quantizer.h); here every lane's code,
// the outlier and nonzero masks, the dense codes and the width reductions
// must equal the scalar quantizer's, bit for bit, on values chosen to hit
// the edges: ties, the eb boundary on either side, the range limit 2^22,
// denormals, +-0, NaN payloads, +-Inf, huge values, every eb decade, and
// every block length.
//
//===----------------------------------------------------------------------===//
#include "Quantizer.h"

#include "gtest/gtest.h"

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace comet::kernels;
using comet::kernels::cpu::BlockStats;
using comet::kernels::format::kBlockSize;

namespace {

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Values around eb's edges: ties (k + 1/2 steps), codes +- eb and their
// neighbouring floats, the range limit, specials, and random values at
// several scales, shuffled.
std::vector<float> edgeValues(double eb, uint32_t seed) {
  format::QuantParams qp;
  EXPECT_TRUE(format::quantParams(eb, qp));
  const float step = qp.step;
  std::vector<float> v;
  auto withNeighbours = [&](float x) {
    v.push_back(x);
    v.push_back(std::nextafter(x, INFINITY));
    v.push_back(std::nextafter(x, -INFINITY));
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float s :
       {0.0f, -0.0f, nan, -nan, INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, FLT_MIN,
        -FLT_MIN, std::numeric_limits<float>::denorm_min(), 1e-40f, -1e-42f,
        fromBits(0x7FC12345u), fromBits(0xFFA00001u), fromBits(0x7F800001u)})
    v.push_back(s);
  for (double k :
       {0.0, 1.0, -1.0, 2.0, 7.0, -1000.0, 12345.0, 1048576.0, -2097151.0,
        4194301.0, 4194302.0, 4194303.0, 4194304.0, 8388608.0}) {
    withNeighbours(float(k * step));              // a code
    withNeighbours(float((k + 0.5) * step));      // a tie
    withNeighbours(float(k * double(step) + eb)); // the bound above
    withNeighbours(float(k * double(step) - eb)); // and below
    withNeighbours(float((k + 0.5) * step) * 1.0000001f);
  }
  // The range limit 2^22 - 1/2 in units of the step.
  withNeighbours(float(4194303.5 * step));
  withNeighbours(-float(4194303.5 * step));
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<uint32_t> any;
  for (double scale : {1e-3, 0.3, 1.0, 1e3, 1e6, 4e6, 1e8})
    for (int i = 0; i < 200; ++i)
      v.push_back(float(nd(rng) * scale * step));
  for (int i = 0; i < 400; ++i)
    v.push_back(fromBits(any(rng))); // any pattern: NaNs, denormals, huge
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// The scalar reference: the format's quantize() per element, then the
// reductions of the scalar path.
BlockStats scalarBlock(const float *x, unsigned len,
                       const format::QuantParams &qp, int32_t *q) {
  BlockStats s;
  uint64_t bad = 0;
  for (unsigned i = 0; i < kBlockSize; ++i) {
    bool b = false;
    uint32_t bits = 0;
    if (i < len)
      std::memcpy(&bits, x + i, 4);
    q[i] = format::quantize<format::F32>(bits, qp, &b);
    bad |= uint64_t(b && i < len) << i;
  }
  // The CPU's own scalar path (f16/bf16 and partial blocks) must agree too.
  int32_t q2[kBlockSize];
  cpu::quantizeScalar<cpu::F32>(reinterpret_cast<const uint8_t *>(x), len, qp,
                                q2, s);
  EXPECT_EQ(std::memcmp(q, q2, sizeof(q2)), 0);
  EXPECT_EQ(s.bad, bad);
  cpu::reduceScalar(q, len, s);
  return s;
}

using SimdFn = void (*)(const uint8_t *, unsigned, const format::QuantParams &,
                        int32_t *, uint32_t *, BlockStats &);

struct Counts {
  size_t blocks = 0, ties = 0, boundaryOutliers = 0, quantized = 0;
};

void compareBlock(SimdFn simd, const char *name, const float *x, unsigned len,
                  const format::QuantParams &qp, Counts &c) {
  int32_t want[kBlockSize], got[kBlockSize];
  uint32_t res[kBlockSize];
  BlockStats ref = scalarBlock(x, len, qp, want);
  BlockStats s;
  simd(reinterpret_cast<const uint8_t *>(x), len, qp, got, res, s);
  const bool haveRes = s.haveRes;
  if (!haveRes)
    cpu::reduceScalar(got, len, s);
  for (unsigned i = 0; i < kBlockSize; ++i)
    ASSERT_EQ(got[i], want[i])
        << name << " lane " << i << " of " << len << ": x=" << x[i] << " (0x"
        << std::hex << format::floatBits(i < len ? x[i] : 0.0f) << std::dec
        << ") eb=" << qp.eb;
  ASSERT_EQ(s.bad, ref.bad) << name << " len " << len;
  ASSERT_EQ(s.nz, ref.nz) << name;
  ASSERT_EQ(s.resOr, ref.resOr) << name;
  ASSERT_EQ(s.zzOr, ref.zzOr) << name;
  ASSERT_EQ(s.posOr, ref.posOr) << name;
  ASSERT_EQ(s.allPos, ref.allPos) << name;
  if (haveRes) { // a full block without outliers: its dense codes
    ASSERT_EQ(len, kBlockSize);
    ASSERT_EQ(ref.bad, 0u);
    for (unsigned i = 0; i < kBlockSize; ++i)
      ASSERT_EQ(res[i], format::zigzag(want[i] - (i ? want[i - 1] : 0)))
          << name << " dense code " << i;
  }
  ++c.blocks;
  for (unsigned i = 0; i < len; ++i) {
    const float v = format::fmulRn(x[i], qp.inv);
    const bool bad = (ref.bad >> i) & 1;
    c.quantized += !bad;
    c.ties +=
        !bad && std::fabs(v) < format::kQuantLimit && v - std::floor(v) == 0.5f;
    c.boundaryOutliers +=
        bad && std::isfinite(x[i]) && std::fabs(v) < format::kQuantLimit;
  }
}

bool haveAvx2() {
#if defined(COMET_CODEC_HAVE_AVX2)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

void checkSimd(SimdFn simd, const char *name) {
  Counts c;
  uint32_t seed = 1;
  for (double eb : {double(FLT_MIN), 1e-30, 1e-7, 1e-4, 1e-3, 0.01, 0.25, 0.5,
                    1.0, 3.0, 1e3, 1e20, double(FLT_MAX) / 2}) {
    SCOPED_TRACE("eb " + std::to_string(eb));
    format::QuantParams qp;
    ASSERT_TRUE(format::quantParams(eb, qp));
    std::vector<float> v = edgeValues(eb, ++seed);
    // Full blocks at every offset modulo the lane count, then every length.
    for (size_t off = 0; off + kBlockSize <= v.size(); off += 61)
      compareBlock(simd, name, v.data() + off, kBlockSize, qp, c);
    for (unsigned len = 1; len <= kBlockSize; ++len)
      compareBlock(simd, name, v.data() + len, len, qp, c);
    // Blocks without outliers (the path that also returns the dense
    // codes): codes and ties only.
    std::vector<float> clean;
    for (float x : v) {
      bool bad;
      uint32_t b = format::floatBits(x);
      format::quantize<format::F32>(b, qp, &bad);
      if (!bad)
        clean.push_back(x);
    }
    for (size_t off = 0; off + kBlockSize <= clean.size(); off += 37)
      compareBlock(simd, name, clean.data() + off, kBlockSize, qp, c);
    if (::testing::Test::HasFatalFailure())
      return;
  }
  // The edges were reached: the comparisons above are not vacuous.
  EXPECT_GT(c.blocks, 1000u);
  EXPECT_GT(c.ties, 1000u);
  EXPECT_GT(c.boundaryOutliers, 100u);
  EXPECT_GT(c.quantized, 10000u);
}

#if defined(__SSE2__)
TEST(CodecQuantizer, Sse2MatchesScalar) {
  checkSimd(&cpu::quantizeF32, "sse2");
}
#endif

TEST(CodecQuantizer, Avx2MatchesScalar) {
  if (!haveAvx2()) {
    // A CI machine must exercise the AVX2 path.
    if (const char *ci = std::getenv("CI"); ci && std::string(ci) == "true")
      FAIL() << "this CPU has no AVX2; the AVX2 quantizer is untested";
    GTEST_SKIP() << "this CPU has no AVX2";
  }
#if defined(COMET_CODEC_HAVE_AVX2)
  checkSimd(&cpu::quantizeF32Avx2, "avx2");
#endif
}

// The 16-bit dtypes have only the scalar path: it is the format's quantizer
// on every bit pattern.
template <typename E, typename Cpu> void checkHalf(double eb) {
  format::QuantParams qp;
  ASSERT_TRUE(format::quantParams(eb, qp));
  std::vector<uint16_t> all(0x10000);
  for (uint32_t h = 0; h < 0x10000u; ++h)
    all[h] = uint16_t(h);
  for (size_t b = 0; b < all.size(); b += kBlockSize) {
    int32_t q[kBlockSize];
    BlockStats s;
    cpu::quantizeScalar<Cpu>(reinterpret_cast<const uint8_t *>(&all[b]),
                             kBlockSize, qp, q, s);
    for (unsigned i = 0; i < kBlockSize; ++i) {
      bool bad;
      int32_t want = format::quantize<E>(all[b + i], qp, &bad);
      ASSERT_EQ(q[i], want) << "bits 0x" << std::hex << all[b + i];
      ASSERT_EQ((s.bad >> i) & 1, uint64_t(bad)) << std::hex << all[b + i];
    }
  }
}

TEST(CodecQuantizer, HalfTypesUseTheFormatQuantizer) {
  for (double eb : {1e-7, 1e-3, 0.5, 100.0}) {
    checkHalf<format::F16, cpu::F16>(eb);
    checkHalf<format::BF16, cpu::BF16>(eb);
  }
}

// The guarantees, on the scalar quantizer itself: |x - x'| <= eb where
// quantized (in double, as the format checks it), 0 -> code 0, and
// non-finite values are outliers.
TEST(CodecQuantizer, ScalarKeepsTheGuarantees) {
  size_t checked = 0;
  for (double eb : {1e-30, 1e-4, 0.25, 1e3}) {
    format::QuantParams qp;
    ASSERT_TRUE(format::quantParams(eb, qp));
    for (float x : edgeValues(eb, 99)) {
      bool bad;
      const uint32_t bits = format::floatBits(x);
      int32_t q = format::quantize<format::F32>(bits, qp, &bad);
      if (!std::isfinite(x)) {
        ASSERT_TRUE(bad) << x;
        continue;
      }
      if (x == 0.0f) {
        ASSERT_FALSE(bad);
        ASSERT_EQ(q, 0);
        ASSERT_EQ(format::dequantize<format::F32>(q, qp), 0u); // +0.0
      }
      if (bad) {
        ASSERT_EQ(q, 0);
        continue;
      }
      const float y = format::bitsFloat(format::dequantize<format::F32>(q, qp));
      ASSERT_LE(std::fabs(double(x) - double(y)), eb) << x << " eb " << eb;
      ++checked;
    }
  }
  EXPECT_GT(checked, 4000u);
}

} // namespace
