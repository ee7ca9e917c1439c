//===- Quantizer.h - The CPU codec's block quantizers -----------*- C++ -*-===//
//
// The quantizers of one 64-element block: the scalar one, which is the
// format's (comet/kernels/CodecFormat.h, quantizeValue, shared with the CUDA
// codec), and for f32 an SSE2 (4 lanes) and an AVX2 (8 lanes) one that do the
// same IEEE operations in the same order and so must give the same codes,
// outliers and reductions. Internal to the CPU codec (Codec.cpp); a header so
// that CodecQuantizerTest checks the SIMD quantizers against the scalar one
// bit for bit. Built with -ffp-contract=off -fno-fast-math.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_KERNELS_CPU_QUANTIZER_H
#define COMET_KERNELS_CPU_QUANTIZER_H

#include "comet/kernels/CodecFormat.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace comet::kernels::cpu {

using format::bitsFloat;
using format::kBlockSize;
using format::kQuantLimit;
using format::kRoundMagic;
using format::QuantParams;

//===----------------------------------------------------------------------===//
// Little-endian loads and stores at any alignment.
//===----------------------------------------------------------------------===//

template <typename T> inline T loadLE(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v; // x86-64 and the CUDA targets are little-endian.
}
template <typename T> inline void storeLE(uint8_t *p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

using format::bitWidth;
using format::dequantize;
using format::popcount64;
using format::quantizeValue;
using format::roundQuant;
using format::unzigzag;
using format::zigzag;

//===----------------------------------------------------------------------===//
// Element types: the format's conversions (CodecFormat.h) plus loads and
// stores at any alignment.
//===----------------------------------------------------------------------===//

struct F32 : format::F32 {
  static float load(const uint8_t *p) { return bitsFloat(loadLE<uint32_t>(p)); }
  static uint32_t bits(const uint8_t *p) { return loadLE<uint32_t>(p); }
  static void storeBits(uint8_t *p, uint32_t b) { storeLE<uint32_t>(p, b); }
};

template <typename Base> struct Half : Base {
  static float load(const uint8_t *p) {
    return Base::toFloat(loadLE<uint16_t>(p));
  }
  static uint32_t bits(const uint8_t *p) { return loadLE<uint16_t>(p); }
  static void storeBits(uint8_t *p, uint32_t b) {
    storeLE<uint16_t>(p, uint16_t(b));
  }
};
using F16 = Half<format::F16>;
using BF16 = Half<format::BF16>;

//===----------------------------------------------------------------------===//
// The quantizers of one 64-element block.
//===----------------------------------------------------------------------===//

// What a block's mode choice needs: ORs of the values each mode would code
// (their widths), the nonzero and outlier masks.
struct BlockStats {
  uint64_t bad = 0; // outliers (bit i: element i)
  uint64_t nz = 0;  // q != 0; 0 past len
  uint32_t resOr = 0, zzOr = 0, posOr = 0;
  bool allPos = true;
  bool haveRes = false; // res[] holds the dense codes
};

// Quantizes one block with the format's scalar quantizer. q[i] is the
// integer code of element i, or 0 where the element is an outlier; q is 0
// past len. Fills s.bad only.
template <typename E>
inline void quantizeScalar(const uint8_t *x, unsigned len,
                           const QuantParams &qp, int32_t *q, BlockStats &s) {
  alignas(64) float xs[kBlockSize];
  alignas(64) int32_t bad[kBlockSize];
  for (unsigned i = 0; i < len; ++i)
    xs[i] = E::load(x + i * E::size);
  for (unsigned i = len; i < kBlockSize; ++i)
    xs[i] = 0.0f;
  for (unsigned i = 0; i < kBlockSize; ++i) {
    bool b;
    q[i] = quantizeValue<E>(xs[i], qp, &b);
    bad[i] = b;
  }
  uint64_t mask = 0;
  for (unsigned i = 0; i < len; ++i)
    mask |= uint64_t(bad[i]) << i;
  s.bad = mask;
}

// The reductions of a block, from its codes (any outliers, any len).
inline void reduceScalar(const int32_t *q, unsigned len, BlockStats &s) {
  const uint64_t badMask = s.bad;
  uint32_t zzOr = 0, posOr = 0, resOr = 0;
  uint64_t nz = 0;
  bool allPos = true;
  int32_t prev = 0;
  if (badMask == 0) {
    // Branch-free reductions, written to vectorize.
    int32_t negOr = 0;
    resOr = len ? zigzag(q[0]) : 0;
    for (unsigned i = 1; i < len; ++i)
      resOr |= zigzag(q[i] - q[i - 1]);
    for (unsigned i = 0; i < len; ++i) {
      int32_t v = q[i];
      zzOr |= zigzag(v);
      negOr |= v;
      posOr |= uint32_t(v - 1) & uint32_t(-(v > 0));
    }
    allPos = negOr >= 0;
  } else {
    for (unsigned i = 0; i < len; ++i) {
      int32_t v = q[i];
      zzOr |= zigzag(v);
      allPos &= v >= 0;
      posOr |= uint32_t(v - 1) & (v > 0 ? ~0u : 0u);
      int32_t d = (badMask >> i) & 1 ? prev : v;
      resOr |= zigzag(d - prev);
      prev = d;
    }
  }
  for (unsigned i = 0; i < kBlockSize; ++i)
    nz |= uint64_t(q[i] != 0) << i;
  s.resOr = resOr;
  s.zzOr = zzOr;
  s.posOr = posOr;
  s.allPos = allPos;
  s.nz = nz;
}

#if defined(__SSE2__)
// The F32 quantizer, 4 lanes at a time: the same IEEE operations in the same
// order as quantizeScalar (mul, compare, add, sub, mul, widen, sub, compare;
// no FMA), so the same codes and outliers. A full block without outliers
// also gets its reductions and its dense codes (res) here; other blocks
// leave them to reduceScalar.
inline void quantizeF32(const uint8_t *x, unsigned len, const QuantParams &qp,
                        int32_t *q, uint32_t *res, BlockStats &s) {
  alignas(16) float tail[kBlockSize];
  const float *xs = reinterpret_cast<const float *>(x); // loadu only
  if (len < kBlockSize) {
    std::memcpy(tail, x, len * 4);
    std::fill(tail + len, tail + kBlockSize, 0.0f);
    xs = tail;
  }
  const __m128 inv = _mm_set1_ps(qp.inv), step = _mm_set1_ps(qp.step);
  const __m128 limit = _mm_set1_ps(kQuantLimit);
  const __m128 magic = _mm_set1_ps(kRoundMagic);
  const __m128 absMask = _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF));
  const __m128d absMaskD =
      _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m128d eb = _mm_set1_pd(qp.eb);
  const __m128i zero = _mm_setzero_si128(), one = _mm_set1_epi32(1);
  __m128i prev = zero, resOr = zero, zzOr = zero, negOr = zero, posOr = zero;
  uint64_t ok = 0, nz = 0;
  for (unsigned i = 0; i < kBlockSize; i += 4) {
    __m128 xv = _mm_loadu_ps(xs + i);
    __m128 v = _mm_mul_ps(xv, inv);
    __m128 inRange = _mm_cmplt_ps(_mm_and_ps(v, absMask), limit);
    __m128 qf = _mm_and_ps(_mm_sub_ps(_mm_add_ps(v, magic), magic), inRange);
    __m128 xr = _mm_mul_ps(qf, step);
    __m128d dLo = _mm_sub_pd(_mm_cvtps_pd(xv), _mm_cvtps_pd(xr));
    __m128d dHi = _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(xv, xv)),
                             _mm_cvtps_pd(_mm_movehl_ps(xr, xr)));
    __m128d leLo = _mm_cmple_pd(_mm_and_pd(dLo, absMaskD), eb);
    __m128d leHi = _mm_cmple_pd(_mm_and_pd(dHi, absMaskD), eb);
    __m128 le = _mm_shuffle_ps(_mm_castpd_ps(leLo), _mm_castpd_ps(leHi),
                               _MM_SHUFFLE(2, 0, 2, 0));
    __m128 okv = _mm_and_ps(inRange, le);
    __m128i qi = _mm_cvttps_epi32(_mm_and_ps(qf, okv));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + i), qi);
    ok |= uint64_t(_mm_movemask_ps(okv)) << i;
    __m128i isZero = _mm_cmpeq_epi32(qi, zero);
    nz |= uint64_t(_mm_movemask_ps(_mm_castsi128_ps(isZero)) ^ 0xF) << i;
    // Reductions (only used for full blocks without outliers).
    __m128i zz = _mm_xor_si128(_mm_slli_epi32(qi, 1), _mm_srai_epi32(qi, 31));
    zzOr = _mm_or_si128(zzOr, zz);
    negOr = _mm_or_si128(negOr, qi);
    __m128i pos = _mm_cmpgt_epi32(qi, zero);
    posOr = _mm_or_si128(posOr, _mm_and_si128(_mm_sub_epi32(qi, one), pos));
    __m128i before =
        _mm_or_si128(_mm_slli_si128(qi, 4), _mm_srli_si128(prev, 12));
    __m128i d = _mm_sub_epi32(qi, before);
    __m128i dz = _mm_xor_si128(_mm_slli_epi32(d, 1), _mm_srai_epi32(d, 31));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(res + i), dz);
    resOr = _mm_or_si128(resOr, dz);
    prev = qi;
  }
  s.bad = ~ok & (len == kBlockSize ? ~uint64_t(0) : (uint64_t(1) << len) - 1);
  s.nz = nz;
  if (s.bad || len != kBlockSize)
    return;
  auto orAll = [](__m128i a) {
    a = _mm_or_si128(a, _mm_srli_si128(a, 8));
    a = _mm_or_si128(a, _mm_srli_si128(a, 4));
    return uint32_t(_mm_cvtsi128_si32(a));
  };
  s.resOr = orAll(resOr);
  s.zzOr = orAll(zzOr);
  s.posOr = orAll(posOr);
  s.allPos = int32_t(orAll(negOr)) >= 0;
  s.haveRes = true;
}
#endif

#if defined(__x86_64__) || defined(__i386__)
#define COMET_CODEC_HAVE_AVX2 1
// The F32 quantizer, 8 lanes: the same IEEE operations in the same order as
// quantizeScalar and quantizeF32 (VEX-encoded, same rounding, no FMA), so
// the same codes, outliers and reductions. Built for AVX2 only; called only
// when the CPU has it (see activeIsa).
__attribute__((target("avx2"))) inline void
quantizeF32Avx2(const uint8_t *x, unsigned len, const QuantParams &qp,
                int32_t *q, uint32_t *res, BlockStats &s) {
  alignas(32) float tail[kBlockSize];
  const float *xs = reinterpret_cast<const float *>(x); // loadu only
  if (len < kBlockSize) {
    std::memcpy(tail, x, len * 4);
    std::fill(tail + len, tail + kBlockSize, 0.0f);
    xs = tail;
  }
  const __m256 inv = _mm256_set1_ps(qp.inv), step = _mm256_set1_ps(qp.step);
  const __m256 limit = _mm256_set1_ps(kQuantLimit);
  const __m256 magic = _mm256_set1_ps(kRoundMagic);
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256d absMaskD =
      _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m256d eb = _mm256_set1_pd(qp.eb);
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  const __m256i rot = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6);
  const __m256i last = _mm256_set1_epi32(7);
  const __m256i evens = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  __m256i prev = zero, resOr = zero, zzOr = zero, negOr = zero, posOr = zero;
  uint64_t ok = 0, nz = 0;
  for (unsigned i = 0; i < kBlockSize; i += 8) {
    __m256 xv = _mm256_loadu_ps(xs + i);
    __m256 v = _mm256_mul_ps(xv, inv);
    __m256 inRange =
        _mm256_cmp_ps(_mm256_and_ps(v, absMask), limit, _CMP_LT_OQ);
    __m256 qf =
        _mm256_and_ps(_mm256_sub_ps(_mm256_add_ps(v, magic), magic), inRange);
    __m256 xr = _mm256_mul_ps(qf, step);
    __m256d dLo = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(xv)),
                                _mm256_cvtps_pd(_mm256_castps256_ps128(xr)));
    __m256d dHi = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1)),
                                _mm256_cvtps_pd(_mm256_extractf128_ps(xr, 1)));
    __m256i leLo = _mm256_castpd_si256(
        _mm256_cmp_pd(_mm256_and_pd(dLo, absMaskD), eb, _CMP_LE_OQ));
    __m256i leHi = _mm256_castpd_si256(
        _mm256_cmp_pd(_mm256_and_pd(dHi, absMaskD), eb, _CMP_LE_OQ));
    __m256i le =
        _mm256_blend_epi32(_mm256_permutevar8x32_epi32(leLo, evens),
                           _mm256_permutevar8x32_epi32(leHi, evens), 0xF0);
    __m256 okv = _mm256_and_ps(inRange, _mm256_castsi256_ps(le));
    __m256i qi = _mm256_cvttps_epi32(_mm256_and_ps(qf, okv));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(q + i), qi);
    ok |= uint64_t(_mm256_movemask_ps(okv)) << i;
    __m256i isZero = _mm256_cmpeq_epi32(qi, zero);
    nz |= uint64_t(_mm256_movemask_ps(_mm256_castsi256_ps(isZero)) ^ 0xFF) << i;
    __m256i zz =
        _mm256_xor_si256(_mm256_slli_epi32(qi, 1), _mm256_srai_epi32(qi, 31));
    zzOr = _mm256_or_si256(zzOr, zz);
    negOr = _mm256_or_si256(negOr, qi);
    __m256i pos = _mm256_cmpgt_epi32(qi, zero);
    posOr = _mm256_or_si256(posOr,
                            _mm256_and_si256(_mm256_sub_epi32(qi, one), pos));
    __m256i before =
        _mm256_blend_epi32(_mm256_permutevar8x32_epi32(qi, rot),
                           _mm256_permutevar8x32_epi32(prev, last), 0x01);
    __m256i d = _mm256_sub_epi32(qi, before);
    __m256i dz =
        _mm256_xor_si256(_mm256_slli_epi32(d, 1), _mm256_srai_epi32(d, 31));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(res + i), dz);
    resOr = _mm256_or_si256(resOr, dz);
    prev = qi;
  }
  s.bad = ~ok & (len == kBlockSize ? ~uint64_t(0) : (uint64_t(1) << len) - 1);
  s.nz = nz;
  if (s.bad || len != kBlockSize)
    return;
  auto orAll = [](__m256i a) __attribute__((target("avx2"))) {
    __m128i b =
        _mm_or_si128(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    b = _mm_or_si128(b, _mm_srli_si128(b, 8));
    b = _mm_or_si128(b, _mm_srli_si128(b, 4));
    return uint32_t(_mm_cvtsi128_si32(b));
  };
  s.resOr = orAll(resOr);
  s.zzOr = orAll(zzOr);
  s.posOr = orAll(posOr);
  s.allPos = int32_t(orAll(negOr)) >= 0;
  s.haveRes = true;
}
#endif

} // namespace comet::kernels::cpu

#endif // COMET_KERNELS_CPU_QUANTIZER_H
