//===- CodecCommon.h - Format pieces shared by host and device --*- C++ -*-===//
//
// The parts of docs/codec-format.md that the CUDA kernels evaluate per
// element: the dtype conversions and the quantizer. The constants, the
// quantization step and the header check are the CPU codec's own, from
// comet/kernels/CodecFormat.h. Everything here is plain integer code or one
// IEEE float operation at a time, so that it compiles for the host (the
// host-side tests run it) and for the device with the same results; on the
// device the float operations are the _rn intrinsics, which never contract
// into an FMA.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_KERNELS_CUDA_CODECCOMMON_H
#define COMET_KERNELS_CUDA_CODECCOMMON_H

#include "comet/kernels/CodecFormat.h"
#include "comet/runtime/codec.h"

#include <cstddef>
#include <cstdint>

namespace comet::kernels::cuda {

// The format's constants, eb range, quantization step and header are shared
// with the CPU codec (COMET_HD comes from there too).
using format::addOverflow;
using format::bitsDouble;
using format::bitsFloat;
using format::BlockMode;
using format::ceilDiv;
using format::doubleBits;
using format::dtypeSize;
using format::encodeHeader;
using format::floatBits;
using format::Header;
using format::kBlockSize;
using format::kDense;
using format::kFormatVersion;
using format::kFormatVersion1;
using format::kHeaderSize;
using format::kMaxRank;
using format::kMaxWidth;
using format::kOutlierEntrySize;
using format::kQuantLimit;
using format::kRawBlock;
using format::kRoundMagic;
using format::kSparsePositive;
using format::kSparseSigned;
using format::loadU32;
using format::loadU64;
using format::mulOverflow;
using format::parseHeader;
using format::QuantParams;
using format::quantParams;
using format::storeU32;
using format::storeU64;

//===----------------------------------------------------------------------===//
// One IEEE operation each, round to nearest even.
//===----------------------------------------------------------------------===//

COMET_HD float fmulRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b; // built with -ffp-contract=off
#endif
}
COMET_HD float faddRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
COMET_HD float fsubRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
COMET_HD double dsubRn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
COMET_HD float i2fRn(int32_t v) {
#ifdef __CUDA_ARCH__
  return __int2float_rn(v);
#else
  return float(v); // cvtsi2ss, MXCSR round to nearest even
#endif
}
COMET_HD float fabsF(float v) { return bitsFloat(floatBits(v) & 0x7FFFFFFFu); }
COMET_HD double fabsD(double v) {
  return bitsDouble(doubleBits(v) & 0x7FFFFFFFFFFFFFFFull);
}

COMET_HD float roundQuant(float v) {
  return fsubRn(faddRn(v, kRoundMagic), kRoundMagic);
}

//===----------------------------------------------------------------------===//
// Element types: bits <-> float, the same integer code as the CPU codec.
//===----------------------------------------------------------------------===//

struct F32 {
  static constexpr uint32_t size = 4;
  static constexpr uint32_t one = 0x3F800000u;
  static COMET_HD float toFloat(uint32_t b) { return bitsFloat(b); }
  static COMET_HD uint32_t fromFloat(float f) { return floatBits(f); }
};

struct F16 {
  static constexpr uint32_t size = 2;
  static constexpr uint32_t one = 0x3C00u;
  static COMET_HD float toFloat(uint32_t h) {
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    if (exp == 0) // mant * 2^-24, exact
      return bitsFloat(sign | floatBits(fmulRn(i2fRn(int32_t(mant)),
                                               5.9604644775390625e-8f)));
    if (exp == 31)
      return bitsFloat(sign | 0x7F800000u | (mant << 13));
    return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
  }
  static COMET_HD uint32_t fromFloat(float f) {
    uint32_t x = floatBits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u)
      return sign | 0x7E00u | ((ax >> 13) & 0x3FF);
    if (ax >= 0x477FF000u)
      return sign | 0x7C00u;
    if (ax < 0x38800000u) {
      float scaled = fmulRn(bitsFloat(ax), 16777216.0f);
      return sign | uint32_t(roundQuant(scaled));
    }
    uint32_t odd = (ax >> 13) & 1;
    return sign | ((ax - 0x38000000u + 0xFFFu + odd) >> 13);
  }
};

struct BF16 {
  static constexpr uint32_t size = 2;
  static constexpr uint32_t one = 0x3F80u;
  static COMET_HD float toFloat(uint32_t h) { return bitsFloat(h << 16); }
  static COMET_HD uint32_t fromFloat(float f) {
    uint32_t x = floatBits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
      return (x >> 16) | 0x40u;
    return (x + 0x7FFFu + ((x >> 16) & 1)) >> 16;
  }
};

//===----------------------------------------------------------------------===//
// The quantizer of docs/codec-format.md, "Quantization".
//===----------------------------------------------------------------------===//

// The element's code; *bad is set when it must be stored verbatim (then the
// code is 0).
template <typename E>
COMET_HD int32_t quantize(uint32_t bits, const QuantParams &qp, bool *bad) {
  float x = E::toFloat(bits);
  float v = fmulRn(x, qp.inv);
  bool inRange = fabsF(v) < kQuantLimit; // false for NaN
  float qf = inRange ? roundQuant(v) : 0.0f;
  float xr = E::toFloat(E::fromFloat(fmulRn(qf, qp.step)));
  bool ok = inRange && fabsD(dsubRn(double(x), double(xr))) <= qp.eb;
  *bad = !ok;
  return ok ? int32_t(qf) : 0;
}

// The decoded element of code q.
template <typename E>
COMET_HD uint32_t dequantize(int32_t q, const QuantParams &qp) {
  return E::fromFloat(fmulRn(i2fRn(q), qp.step));
}

COMET_HD uint32_t zigzag(int32_t v) {
  return (uint32_t(v) << 1) ^ uint32_t(v >> 31);
}
COMET_HD int32_t unzigzag(uint32_t u) {
  return int32_t((u >> 1) ^ (0u - (u & 1)));
}
COMET_HD uint32_t bitWidth(uint32_t v) {
#ifdef __CUDA_ARCH__
  return 32 - __clz(int(v));
#else
  return v ? 32 - __builtin_clz(v) : 0;
#endif
}
COMET_HD uint64_t minU64(uint64_t a, uint64_t b) { return a < b ? a : b; }

} // namespace comet::kernels::cuda

#endif // COMET_KERNELS_CUDA_CODECCOMMON_H
