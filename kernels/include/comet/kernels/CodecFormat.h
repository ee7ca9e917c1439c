//===- CodecFormat.h - The codec byte format, shared CPU/CUDA ---*- C++ -*-===//
//
// The parts of docs/codec-format.md (versions 1 and 2) that both the CPU and
// the CUDA codec must agree on: the constants, the eb range and quantization
// step, and the 128-byte header (its encoding and its check against the
// stream length). They live here once so that the two implementations cannot
// drift apart. Everything is plain integer code, so that it compiles for the
// host (the CPU codec, the CUDA host code) and, under nvcc, for the device
// (the CUDA decompress kernel checks the header itself).
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

//===----------------------------------------------------------------------===//
// The header.
//===----------------------------------------------------------------------===//

struct Header {
  // The CUDA codec writes version 1; the CPU encoder sets 2 itself.
  uint32_t version = kFormatVersion1;
  uint32_t codec = 0, dtype = 0, rank = 0;
  uint32_t blockSize = 0;
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
      h.rank > kMaxRank || p[9] || p[10] || p[11])
    return COMET_RT_ERROR_CORRUPT;
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
    if (addOverflow(total, 4 * h.numBlocks, total) ||
        addOverflow(total, h.payloadBytes, total))
      return COMET_RT_ERROR_CORRUPT;
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
