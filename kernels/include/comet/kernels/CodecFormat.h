//===- CodecFormat.h - The codec byte format, shared CPU/CUDA ---*- C++ -*-===//
//
// The parts of docs/codec-format.md (versions 1 and 2) that both the CPU and
// the CUDA codec must agree on: the constants, the eb range and quantization
// step, the 128-byte header (its encoding and its check against the stream
// length), the element types and the scalar quantizer. They live here once so
// that the two implementations cannot drift apart. Everything is plain
// integer code or one IEEE float operation at a time, so that it compiles for
// the host (the CPU codec, the CUDA host code) and, under nvcc, for the
// device with the same results: on the device the float operations are the
// _rn intrinsics, which never contract into an FMA; the host code is built
// with -ffp-contract=off. The CPU's SIMD quantizers are checked bit for bit
// against quantize() below (CodecQuantizerTest).
//
//===----------------------------------------------------------------------===//
#ifndef COMET_KERNELS_CODECFORMAT_H
#define COMET_KERNELS_CODECFORMAT_H

#include "comet/runtime/codec.h"

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define COMET_HD __host__ __device__ __forceinline__
#else
#define COMET_HD inline
#endif

namespace comet::kernels::format {

// The version the CPU encoder writes; decoders read both.
inline constexpr uint16_t kFormatVersion = 2;
inline constexpr uint16_t kFormatVersion1 = 1;
inline constexpr size_t kHeaderSize = 128;
inline constexpr uint32_t kBlockSize = 64;
inline constexpr size_t kOutlierEntrySize = 12; // u64 index + u32 bits
// |x / (2 eb)| must stay below this for x to be quantized (else outlier).
// 2^22 - 0.5 keeps |q| <= 2^22 - 1 after rounding, so a Lorenzo residual
// (|d| <= 2^23 - 2) always fits kMaxWidth bits after zigzag.
inline constexpr float kQuantLimit = 4194303.5f; // 2^22 - 0.5
// Adding and subtracting 1.5 * 2^23 rounds |v| < 2^22 to the nearest
// integer, ties to even, in one IEEE operation each.
inline constexpr float kRoundMagic = 12582912.0f;
inline constexpr uint32_t kMaxWidth = 24;

// Block modes, the top two bits of a block descriptor.
enum BlockMode : uint8_t {
  kDense = 0,          // Lorenzo residuals, zigzag, w bits each
  kSparseSigned = 1,   // nonzero mask + zigzag(q) of the nonzeros
  kSparsePositive = 2, // nonzero mask + (q - 1) of the nonzeros, all q > 0
  kRawBlock = 3,       // the block's elements verbatim
};

// Version 2: the tensor is cut into chunks of kChunkBlocks blocks, each coded
// on its own (docs/codec-format.md, "sz, version 2").
inline constexpr uint32_t kChunkBlocks = 64;
inline constexpr uint64_t kChunkElems = uint64_t(kChunkBlocks) * kBlockSize;
inline constexpr uint32_t kChunkHeaderSize = 10; // u64 bitmap, u16 outliers
inline constexpr uint32_t kMaxRiceBytes = 255;   // a rice body's length byte
// A v2 descriptor byte is mode << 5 | param.
enum BlockModeV2 : uint8_t {
  kV2Dense = 0,        // as v1
  kV2SparseSigned = 1, // as v1
  kV2SparsePositive = 2,
  kV2Raw = 3,
  kV2RiceLorenzo = 4,   // Golomb-Rice(k) of the dense mode's residual codes
  kV2RicePlain = 5,     // Golomb-Rice(k) of zigzag(q)
  kV2RiceLorenzo2d = 6, // Golomb-Rice(k) of 2D Lorenzo residuals (rank >= 2)
  kV2Coded = 7,         // a whole chunk, range-coded with adaptive contexts
};
// Block descriptors take modes below kV2NumModes; mode 7 is the one
// descriptor of a coded chunk, flagged by kCodedChunkFlag in its u16
// outlier count (docs/codec-format.md, "Coded chunks").
inline constexpr uint32_t kV2NumModes = 7;
inline constexpr uint16_t kCodedChunkFlag = 0x8000;
// Predictors of a coded chunk (its descriptor's param).
enum CodedPredictor : uint8_t {
  kPredPlain = 0,
  kPredLeft = 1,
  kPredLorenzo2d = 2, // rank >= 2
  kPredUp = 3,        // rank >= 2
};
inline constexpr uint32_t kNumPredictors = 4;
// The coder of a coded chunk, its descriptor's param bits 2-3 (bits 0-1: the
// predictor): the adaptive binary range coder, or Golomb-Rice with one k per
// length context (a table in the chunk).
enum CodedCoder : uint8_t {
  kCoderRange = 0,
  kCoderRice = 1,
};
inline constexpr uint32_t kNumCoders = 2;
// A Rice-coded chunk's k table: one 5-bit k per length context.
inline constexpr uint32_t kRiceContexts = 16;
inline constexpr uint32_t kRiceTableBytes = kRiceContexts * 5 / 8;

inline constexpr uint32_t kMaxRank = COMET_RT_CODEC_MAX_RANK;
// The range of eb: FLT_MIN <= eb <= FLT_MAX / 2.
inline constexpr double kMinEb = double(FLT_MIN);
inline constexpr double kMaxEb = double(FLT_MAX) / 2;

//===----------------------------------------------------------------------===//
// Bits, little-endian bytes and checked arithmetic.
//===----------------------------------------------------------------------===//

COMET_HD uint32_t floatBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
COMET_HD float bitsFloat(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
COMET_HD uint64_t doubleBits(double d) {
#ifdef __CUDA_ARCH__
  return uint64_t(__double_as_longlong(d));
#else
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
#endif
}
COMET_HD double bitsDouble(uint64_t u) {
#ifdef __CUDA_ARCH__
  return __longlong_as_double((long long)u);
#else
  double d;
  std::memcpy(&d, &u, 8);
  return d;
#endif
}

COMET_HD uint64_t loadU64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}
COMET_HD uint32_t loadU32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
COMET_HD void storeU64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = uint8_t(v >> (8 * i));
}
COMET_HD void storeU32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = uint8_t(v >> (8 * i));
}

COMET_HD bool mulOverflow(uint64_t a, uint64_t b, uint64_t &r) {
#ifdef __CUDA_ARCH__
  r = a * b;
  return a != 0 && r / a != b;
#else
  return __builtin_mul_overflow(a, b, &r);
#endif
}
COMET_HD bool addOverflow(uint64_t a, uint64_t b, uint64_t &r) {
#ifdef __CUDA_ARCH__
  r = a + b;
  return r < a;
#else
  return __builtin_add_overflow(a, b, &r);
#endif
}
COMET_HD uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Size in bytes of one element of dtype, 0 for an unknown dtype.
COMET_HD uint32_t dtypeSize(uint32_t dtype) {
  return dtype == COMET_RT_DTYPE_F32                                     ? 4
         : (dtype == COMET_RT_DTYPE_F16 || dtype == COMET_RT_DTYPE_BF16) ? 2
                                                                         : 0;
}

//===----------------------------------------------------------------------===//
// The quantization step (docs/codec-format.md, "Quantization").
//===----------------------------------------------------------------------===//

struct QuantParams {
  float step, inv; // 2 eb and 1 / (2 eb), rounded to float
  double eb;
};

// The step and its reciprocal for eb, or false when eb is out of range:
// eb must lie in [kMinEb, kMaxEb] and both floats must be finite and > 0.
COMET_HD bool quantParams(double eb, QuantParams &qp) {
  if (!(eb >= kMinEb) || !(eb <= kMaxEb))
    return false;
  double twice = eb * 2.0; // exact
  qp.eb = eb;
  qp.step = float(twice);
  qp.inv = float(1.0 / twice);
  uint32_t sb = floatBits(qp.step), ib = floatBits(qp.inv);
  // finite and > 0: below the infinity pattern and not zero (sign clear)
  return sb < 0x7F800000u && sb != 0 && ib < 0x7F800000u && ib != 0;
}

// Header byte 9 (docs/codec-format.md, "Bounds per channel"): bit 0 marks a
// version 2 sz stream with one bound per channel (dim 1) after the header.
inline constexpr uint32_t kFlagChannelBounds = 1;

// The bounds of a stream: one for every block, or one per channel (dim 1,
// `inner` elements per channel and sample) where each block is quantized
// at the smallest bound of the channels its elements fall in. Per block
// rather than per element, so the quantizer's loops keep one step.
struct Bounds {
  QuantParams uniform;
  const double *channel = nullptr; // `channels` bounds, or null
  uint64_t channels = 0, inner = 1;
  double minEb = 0; // the smallest channel bound

  // The step of the block of len (>= 1) elements that starts at element i0.
  COMET_HD QuantParams block(uint64_t i0, uint64_t len) const {
    if (!channel)
      return uniform;
    const uint64_t k0 = i0 / inner, k1 = (i0 + len - 1) / inner;
    double eb = minEb;
    if (k1 - k0 + 1 < channels) {
      eb = channel[k0 % channels];
      for (uint64_t k = k0 + 1; k <= k1; ++k)
        eb = channel[k % channels] < eb ? channel[k % channels] : eb;
    }
    QuantParams qp;
    quantParams(eb, qp); // every channel bound was checked
    return qp;
  }
};

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
  return float(v); // cvtsi2ss, round to nearest even
#endif
}
COMET_HD float fabsF(float v) { return bitsFloat(floatBits(v) & 0x7FFFFFFFu); }
COMET_HD double fabsD(double v) {
  return bitsDouble(doubleBits(v) & 0x7FFFFFFFFFFFFFFFull);
}

// Rounds v to the nearest integer, ties to even, for |v| < kQuantLimit: adding
// 1.5 * 2^23 moves v to where the float spacing is 1.
COMET_HD float roundQuant(float v) {
  return fsubRn(faddRn(v, kRoundMagic), kRoundMagic);
}

//===----------------------------------------------------------------------===//
// Element types: bits <-> float (IEEE binary16 and bfloat16 round to nearest
// even; NaNs stay NaNs).
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
    if (exp == 0) // zero or subnormal: mant * 2^-24, exact in float
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
    if (ax > 0x7F800000u) // NaN: keep it a (quiet) NaN
      return sign | 0x7E00u | ((ax >> 13) & 0x3FF);
    if (ax >= 0x477FF000u) // rounds to at least 65520: infinity
      return sign | 0x7C00u;
    if (ax < 0x38800000u) { // below 2^-14: a half subnormal, unit 2^-24
      float scaled = fmulRn(bitsFloat(ax), 16777216.0f); // exact
      return sign | uint32_t(roundQuant(scaled));
    }
    // Rebias the exponent by 127 - 15 and round the 13 dropped bits to even.
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
// The scalar quantizer (docs/codec-format.md, "Quantization"): the one
// definition of an element's code, its reconstruction and its outlier test.
//===----------------------------------------------------------------------===//

// The code of x (E::toFloat of an element): q = round(x / (2 eb)) with
// |x - x'| <= eb checked in the arithmetic the format defines (x' the
// reconstruction in E). *bad is set when x must be stored verbatim (NaN,
// Inf, |x| / (2 eb) out of range, or a reconstruction that breaks the bound);
// the code is then 0. x = +-0 gives q = 0.
template <typename E>
COMET_HD int32_t quantizeValue(float x, const QuantParams &qp, bool *bad) {
  float v = fmulRn(x, qp.inv);
  bool inRange = fabsF(v) < kQuantLimit; // false for NaN
  float qf = inRange ? roundQuant(v) : 0.0f;
  float xr = E::toFloat(E::fromFloat(fmulRn(qf, qp.step)));
  bool ok = inRange && fabsD(dsubRn(double(x), double(xr))) <= qp.eb;
  *bad = !ok;
  return ok ? int32_t(qf) : 0;
}
// The same from the element's bits (x = E::toFloat(bits)).
template <typename E>
COMET_HD int32_t quantize(uint32_t bits, const QuantParams &qp, bool *bad) {
  return quantizeValue<E>(E::toFloat(bits), qp, bad);
}

// The bits of the decoded element of code q.
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
// The number of bits of v (0 for 0).
COMET_HD uint32_t bitWidth(uint32_t v) {
#ifdef __CUDA_ARCH__
  return 32 - __clz(int(v));
#else
  return v ? 32 - __builtin_clz(v) : 0;
#endif
}
COMET_HD uint32_t popcount64(uint64_t v) {
#ifdef __CUDA_ARCH__
  return __popcll(v);
#else
  // SWAR: the baseline x86-64 target has no popcnt instruction.
  v = v - ((v >> 1) & 0x5555555555555555ull);
  v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
  v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return uint32_t((v * 0x0101010101010101ull) >> 56);
#endif
}
// The index of the lowest set bit of v != 0.
COMET_HD uint32_t ctz64(uint64_t v) {
#ifdef __CUDA_ARCH__
  return __ffsll((long long)v) - 1;
#else
  return uint32_t(__builtin_ctzll(v));
#endif
}
COMET_HD uint64_t minU64(uint64_t a, uint64_t b) { return a < b ? a : b; }
COMET_HD uint32_t minU32(uint32_t a, uint32_t b) { return a < b ? a : b; }

//===----------------------------------------------------------------------===//
// The header.
//===----------------------------------------------------------------------===//

struct Header {
  // The CUDA codec writes version 1; the CPU encoder sets 2 itself.
  uint32_t version = kFormatVersion1;
  uint32_t codec = 0, dtype = 0, rank = 0;
  uint32_t blockSize = 0;
  uint32_t flags = 0; // kFlagChannelBounds
  double eb = 0;
  uint64_t n = 0;
  uint64_t dims[kMaxRank] = {};
  // v2 sz: numBlocks holds the number of chunks, numSparse the blocks per
  // chunk (kChunkBlocks), payloadBytes the sum of the chunks' sizes.
  uint64_t numBlocks = 0, numSparse = 0, payloadBytes = 0, numOutliers = 0;
  uint64_t totalBytes = 0; // the whole stream, from the section sizes
};

// The 128 header bytes of h (all fields but totalBytes).
COMET_HD void encodeHeader(const Header &h, uint8_t *p) {
  for (uint32_t i = 0; i < kHeaderSize; ++i)
    p[i] = 0;
  p[0] = 'C';
  p[1] = 'M';
  p[2] = 'T';
  p[3] = 'C';
  p[4] = uint8_t(h.version);
  p[5] = uint8_t(h.version >> 8);
  p[6] = uint8_t(h.codec);
  p[7] = uint8_t(h.dtype);
  p[8] = uint8_t(h.rank);
  p[9] = uint8_t(h.flags);
  storeU32(p + 12, h.blockSize);
  storeU64(p + 16, doubleBits(h.eb));
  storeU64(p + 24, h.n);
  for (uint32_t i = 0; i < kMaxRank; ++i)
    storeU64(p + 32 + 8 * i, h.dims[i]);
  storeU64(p + 96, h.numBlocks);
  storeU64(p + 104, h.numSparse);
  storeU64(p + 112, h.payloadBytes);
  storeU64(p + 120, h.numOutliers);
}

// Reads and checks a stream's header and its section sizes against the
// stream's length inSize; fills h (totalBytes too) on success. p holds
// min(inSize, kHeaderSize) readable bytes. The order of the checks decides
// the status of a stream with several faults, and is part of the format.
COMET_HD comet_rt_status parseHeader(const uint8_t *p, uint64_t inSize,
                                     Header &h) {
  if (!p && inSize)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  if (inSize < 4)
    return COMET_RT_ERROR_TRUNCATED;
  if (p[0] != 'C' || p[1] != 'M' || p[2] != 'T' || p[3] != 'C')
    return COMET_RT_ERROR_CORRUPT;
  if (inSize < kHeaderSize)
    return COMET_RT_ERROR_TRUNCATED;
  h.version = uint32_t(p[4]) | uint32_t(p[5]) << 8;
  if (h.version != kFormatVersion1 && h.version != kFormatVersion)
    return COMET_RT_ERROR_UNSUPPORTED;
  h.codec = p[6];
  h.dtype = p[7];
  h.rank = p[8];
  if (h.codec > COMET_RT_CODEC_MASK || h.dtype > COMET_RT_DTYPE_BF16 ||
      h.rank > kMaxRank || (p[9] & ~kFlagChannelBounds) || p[10] || p[11])
    return COMET_RT_ERROR_CORRUPT;
  h.flags = p[9];
  h.blockSize = loadU32(p + 12);
  const uint64_t ebBits = loadU64(p + 16);
  h.eb = bitsDouble(ebBits);
  h.n = loadU64(p + 24);
  for (uint32_t i = 0; i < kMaxRank; ++i) {
    h.dims[i] = loadU64(p + 32 + 8 * i);
    if (i >= h.rank && h.dims[i] != 0)
      return COMET_RT_ERROR_CORRUPT;
  }
  h.numBlocks = loadU64(p + 96);
  h.numSparse = loadU64(p + 104);
  h.payloadBytes = loadU64(p + 112);
  h.numOutliers = loadU64(p + 120);

  uint64_t n = 1;
  for (uint32_t i = 0; i < h.rank; ++i)
    if (mulOverflow(n, h.dims[i], n))
      return COMET_RT_ERROR_CORRUPT;
  if (n != h.n)
    return COMET_RT_ERROR_CORRUPT;
  uint64_t outBytes;
  if (mulOverflow(n, dtypeSize(h.dtype), outBytes) ||
      outBytes > (uint64_t(1) << 62))
    return COMET_RT_ERROR_CORRUPT;

  uint64_t total = kHeaderSize;
  if (h.codec == COMET_RT_CODEC_SZ && h.version == kFormatVersion) {
    // Header, a u32 size per chunk, the chunks.
    if (h.blockSize != kBlockSize || h.numSparse != kChunkBlocks)
      return COMET_RT_ERROR_UNSUPPORTED;
    QuantParams qp;
    if (!quantParams(h.eb, qp) || h.numBlocks != ceilDiv(n, kChunkElems) ||
        h.numOutliers > n)
      return COMET_RT_ERROR_CORRUPT;
    // Channel bounds: a f64 per channel of dim 1 after the header.
    uint64_t tableBytes = 0;
    if ((h.flags & kFlagChannelBounds) &&
        (h.rank < 2 || mulOverflow(h.dims[1], 8, tableBytes)))
      return COMET_RT_ERROR_CORRUPT;
    if (addOverflow(total, tableBytes, total) ||
        addOverflow(total, 4 * h.numBlocks, total) ||
        addOverflow(total, h.payloadBytes, total))
      return COMET_RT_ERROR_CORRUPT;
  } else if (h.flags) {
    return COMET_RT_ERROR_CORRUPT; // channel bounds: version 2 sz only
  } else if (h.codec == COMET_RT_CODEC_SZ) {
    if (h.blockSize != kBlockSize)
      return COMET_RT_ERROR_UNSUPPORTED;
    QuantParams qp;
    if (!quantParams(h.eb, qp) || h.numBlocks != ceilDiv(n, kBlockSize) ||
        h.numSparse > h.numBlocks || h.numOutliers > n)
      return COMET_RT_ERROR_CORRUPT;
    uint64_t outlierBytes;
    if (mulOverflow(h.numOutliers, kOutlierEntrySize, outlierBytes) ||
        addOverflow(total, h.numBlocks, total) ||
        addOverflow(total, h.numSparse, total) ||
        addOverflow(total, h.payloadBytes, total) ||
        addOverflow(total, outlierBytes, total))
      return COMET_RT_ERROR_CORRUPT;
  } else {
    // raw and mask have no blocks, no bound and a payload fixed by n.
    const uint64_t expected =
        h.codec == COMET_RT_CODEC_RAW ? outBytes : ceilDiv(n, 8);
    if (h.blockSize != 0 || ebBits != 0 || h.numBlocks != 0 ||
        h.numSparse != 0 || h.numOutliers != 0 || h.payloadBytes != expected)
      return COMET_RT_ERROR_CORRUPT;
    total += expected;
  }
  if (inSize < total)
    return COMET_RT_ERROR_TRUNCATED;
  if (inSize > total)
    return COMET_RT_ERROR_CORRUPT;
  h.totalBytes = total;
  return COMET_RT_SUCCESS;
}

} // namespace comet::kernels::format

#endif // COMET_KERNELS_CODECFORMAT_H
