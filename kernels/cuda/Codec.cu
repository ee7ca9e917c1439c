//===- Codec.cu - CUDA codec kernels --------------------------------------===//
//
// docs/codec-format.md on the GPU, byte for byte the CPU codec's output.
//
// sz: one warp codes one 64-element block (lane l holds elements l and
// l + 32, so loads coalesce and the block's masks are two ballots). Each
// direction is one cooperative kernel over a grid that fits on the device at
// once; CTA c owns a contiguous range of blocks. The layout puts the payload
// after the counts section and the outliers after the payload, so where any
// block's body goes depends on totals over the whole tensor (the number of
// sparse blocks, the payload size); a grid-wide barrier after a first pass
// that sizes every block is therefore needed, and the device-wide prefix sum
// is a reduce-then-scan over the per-CTA sums in between:
//
//   compress:   plan blocks -> CTA sums | barrier | scan of CTA sums, header,
//               re-quantize and write every block at its offset
//   decompress: check descriptors, count sparse blocks | barrier | scan,
//               size blocks | barrier | scan, check the payload size, decode
//               | barrier | outliers
//
// Re-quantizing in the writing pass (as the CPU codec does) keeps the kernel
// free of an n-sized scratch buffer. Nothing is read back to the host but
// the final size (compress) or status (decompress).
//
//===----------------------------------------------------------------------===//
#include "comet/kernels/CodecFixedChunk.h"
#include "comet/kernels/CodecFormat.h"

#include "comet/runtime/codec_cuda.h"

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>

namespace cg = cooperative_groups;

namespace comet::kernels::cuda {
namespace {

// The format's constants, header, element types and scalar quantizer are the
// CPU codec's (CodecFormat.h).
using namespace format;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBlocksPerWarp = 4; // compress
// Blocks per CTA iteration of the version 1 encoder (not the version 2
// chunk, format::kChunkBlocks).
constexpr uint32_t kCtaBlocks = kWarps * kBlocksPerWarp;
constexpr unsigned kFull = 0xFFFFFFFFu;

thread_local int gLastError = 0;
// The mode of the last blocking decode's refusal (0: none).
thread_local int gLastUnsupportedMode = 0;

//===----------------------------------------------------------------------===//
// Block-wide scans of up to three u64 sums.
//===----------------------------------------------------------------------===//

// Plain (no initializers) so that it may live in shared memory; write
// Sums{} for zero.
struct Sums {
  uint64_t a, b, c;
};
__device__ __forceinline__ Sums operator+(Sums x, Sums y) {
  return {x.a + y.a, x.b + y.b, x.c + y.c};
}
__device__ __forceinline__ Sums operator-(Sums x, Sums y) {
  return {x.a - y.a, x.b - y.b, x.c - y.c};
}
__device__ __forceinline__ Sums shflUp(Sums v, int d) {
  return {__shfl_up_sync(kFull, v.a, d), __shfl_up_sync(kFull, v.b, d),
          __shfl_up_sync(kFull, v.c, d)};
}

// Exclusive prefix of v over the CTA's threads, in thread order; *total gets
// the CTA's sum. All threads must call it.
__device__ Sums blockExclusiveScan(Sums v, Sums *total) {
  __shared__ Sums warpSums[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  Sums incl = v;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    Sums t = shflUp(incl, d);
    if (lane >= d)
      incl = incl + t;
  }
  if (lane == 31)
    warpSums[warp] = incl;
  __syncthreads();
  Sums before{}, all{};
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp)
      before = before + warpSums[w];
    all = all + warpSums[w];
  }
  __syncthreads(); // warpSums is reused by the next call
  *total = all;
  return before + incl - v;
}

// The sums of slots[0..count) and of slots[0..self), over the whole CTA.
__device__ void reduceSlots(const Sums *slots, uint32_t count, uint32_t self,
                            Sums *all, Sums *before) {
  Sums a{}, b{};
  for (uint32_t i = threadIdx.x; i < count; i += kThreads) {
    Sums s = slots[i];
    a = a + s;
    if (i < self)
      b = b + s;
  }
  Sums t{};
  blockExclusiveScan(a, all);
  blockExclusiveScan(b, &t);
  *before = t;
}

//===----------------------------------------------------------------------===//
// Element access.
//===----------------------------------------------------------------------===//

template <typename E>
__device__ __forceinline__ uint32_t loadElem(const uint8_t *x, uint64_t i) {
  if constexpr (E::size == 4)
    return reinterpret_cast<const uint32_t *>(x)[i];
  else
    return reinterpret_cast<const uint16_t *>(x)[i];
}
template <typename E>
__device__ __forceinline__ void storeElem(uint8_t *x, uint64_t i, uint32_t b) {
  if constexpr (E::size == 4)
    reinterpret_cast<uint32_t *>(x)[i] = b;
  else
    reinterpret_cast<uint16_t *>(x)[i] = uint16_t(b);
}

__device__ __forceinline__ uint64_t belowMask(uint32_t i) {
  return (uint64_t(1) << i) - 1; // i < 64
}

//===----------------------------------------------------------------------===//
// sz, one warp per block.
//===----------------------------------------------------------------------===//

// A block as the warp sees it: lane l holds elements l and l + 32. All plan
// fields are the same in every lane.
struct WarpBlock {
  int32_t q0, q1;      // codes (outliers: 0)
  uint32_t res0, res1; // zigzag Lorenzo residuals, outliers repeating
  uint64_t bad, nz;    // outlier and nonzero-code masks
  uint32_t len, mode, width, nnz, numBad, bytes;
};

template <typename E>
__device__ void planBlock(const uint8_t *x, uint64_t block, uint64_t n,
                          const QuantParams &qp, WarpBlock &wb) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t first = block * kBlockSize;
  const uint32_t len = uint32_t(minU64(kBlockSize, n - first));
  const bool v0 = lane < len, v1 = lane + 32 < len;
  bool bad0 = false, bad1 = false;
  int32_t q0 = v0 ? quantize<E>(loadElem<E>(x, first + lane), qp, &bad0) : 0;
  int32_t q1 =
      v1 ? quantize<E>(loadElem<E>(x, first + lane + 32), qp, &bad1) : 0;
  const uint64_t bad = uint64_t(__ballot_sync(kFull, bad0)) |
                       uint64_t(__ballot_sync(kFull, bad1)) << 32;
  const uint64_t nz = uint64_t(__ballot_sync(kFull, q0 != 0)) |
                      uint64_t(__ballot_sync(kFull, q1 != 0)) << 32;
  const uint64_t valid = len == 64 ? ~uint64_t(0) : belowMask(len);

  // Dense codes: an outlier repeats the code of the last good element
  // before it (0 if none), so its residual is 0.
  const uint64_t good = ~bad & valid;
  auto lastGood = [&](uint32_t i) -> int {
    uint64_t m = good & (i == 63 ? ~uint64_t(0) : belowMask(i + 1));
    return m ? 63 - __clzll((long long)m) : -1;
  };
  int j0 = lastGood(lane), j1 = lastGood(lane + 32);
  int32_t a0 = __shfl_sync(kFull, q0, j0 & 31);
  int32_t b0 = __shfl_sync(kFull, q1, j0 & 31);
  int32_t a1 = __shfl_sync(kFull, q0, j1 & 31);
  int32_t b1 = __shfl_sync(kFull, q1, j1 & 31);
  int32_t d0 = j0 < 0 ? 0 : (j0 < 32 ? a0 : b0);
  int32_t d1 = j1 < 0 ? 0 : (j1 < 32 ? a1 : b1);
  int32_t up0 = __shfl_up_sync(kFull, d0, 1);
  int32_t up1 = __shfl_up_sync(kFull, d1, 1);
  int32_t last0 = __shfl_sync(kFull, d0, 31);
  int32_t p0 = lane == 0 ? 0 : up0;
  int32_t p1 = lane == 0 ? last0 : up1;
  uint32_t res0 = v0 ? zigzag(d0 - p0) : 0;
  uint32_t res1 = v1 ? zigzag(d1 - p1) : 0;

  uint32_t zz = zigzag(q0) | zigzag(q1);
  uint32_t pos =
      (q0 > 0 ? uint32_t(q0 - 1) : 0u) | (q1 > 0 ? uint32_t(q1 - 1) : 0u);
  const uint32_t resOr = __reduce_or_sync(kFull, res0 | res1);
  const uint32_t zzOr = __reduce_or_sync(kFull, zz);
  const uint32_t posOr = __reduce_or_sync(kFull, pos);
  const bool allPos = !__any_sync(kFull, q0 < 0 || q1 < 0);
  const uint32_t nnz = __popcll(nz);
  const uint32_t numBad = __popcll(bad);

  // The CPU's choice: cheapest of dense, sparse, raw; ties to the lower mode.
  const uint64_t outlierCost = uint64_t(numBad) * kOutlierEntrySize;
  uint32_t mode = kDense, width = bitWidth(resOr);
  uint32_t bytes = uint32_t(ceilDiv(uint64_t(len) * width, 8));
  uint64_t best = bytes + outlierCost;
  const uint32_t sw = allPos ? bitWidth(posOr) : bitWidth(zzOr);
  const uint32_t sparseBytes =
      uint32_t(ceilDiv(len, 8) + ceilDiv(uint64_t(nnz) * sw, 8));
  const uint64_t sparseCost = sparseBytes + 1 + outlierCost;
  if (sparseCost < best) {
    mode = allPos ? kSparsePositive : kSparseSigned;
    width = sw;
    bytes = sparseBytes;
    best = sparseCost;
  }
  const uint64_t rawCost = uint64_t(len) * E::size;
  uint32_t outliers = numBad;
  if (rawCost < best) {
    mode = kRawBlock;
    width = 0;
    bytes = uint32_t(rawCost);
    outliers = 0;
  }
  wb = {q0, q1, res0, res1, bad, nz, len, mode, width, nnz, outliers, bytes};
}

__device__ __forceinline__ bool isSparse(uint32_t mode) {
  return mode == kSparseSigned || mode == kSparsePositive;
}

// ORs the w-bit value v into the LSB-first bit stream buf at bit p.
__device__ __forceinline__ void putBits(uint32_t *buf, uint32_t p, uint32_t v,
                                        uint32_t w) {
  const uint32_t word = p >> 5, sh = p & 31;
  atomicOr(&buf[word], v << sh);
  if (sh + w > 32)
    atomicOr(&buf[word + 1], v >> (32 - sh));
}

// Writes the warp's block: descriptor, count, body and outlier entries. buf
// is the warp's 64-word staging area.
template <typename E>
__device__ void
writeBlock(const WarpBlock &wb, const uint8_t *x, uint64_t block, uint8_t *desc,
           uint8_t *counts, uint8_t *body, uint8_t *outIdx, uint8_t *outVal,
           uint64_t sparseOff, uint64_t outlierOff, uint32_t *buf) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t first = block * kBlockSize;
  if (lane == 0) {
    desc[block] = uint8_t(wb.mode << 6 | wb.width);
    if (isSparse(wb.mode))
      counts[sparseOff] = uint8_t(wb.nnz);
  }
  if (wb.mode == kRawBlock) {
    const uint8_t *src = x + first * E::size;
    for (uint32_t k = lane; k < wb.bytes; k += 32)
      body[k] = src[k];
    return; // raw blocks keep their outliers inline
  }
  buf[lane] = 0;
  buf[lane + 32] = 0;
  __syncwarp();
  const uint32_t w = wb.width;
  if (wb.mode == kDense) {
    if (w) {
      if (lane < wb.len)
        putBits(buf, lane * w, wb.res0, w);
      if (lane + 32 < wb.len)
        putBits(buf, (lane + 32) * w, wb.res1, w);
    }
  } else {
    const uint32_t base = uint32_t(ceilDiv(wb.len, 8)) * 8;
    if (lane < 2)
      atomicOr(&buf[lane], uint32_t(wb.nz >> (32 * lane)));
    const bool positive = wb.mode == kSparsePositive;
    if (w) {
      if (wb.q0 != 0)
        putBits(buf, base + __popcll(wb.nz & belowMask(lane)) * w,
                positive ? uint32_t(wb.q0 - 1) : zigzag(wb.q0), w);
      if (wb.q1 != 0)
        putBits(buf, base + __popcll(wb.nz & belowMask(lane + 32)) * w,
                positive ? uint32_t(wb.q1 - 1) : zigzag(wb.q1), w);
    }
  }
  __syncwarp();
  for (uint32_t k = lane; k < wb.bytes; k += 32)
    body[k] = uint8_t(buf[k >> 2] >> ((k & 3) * 8));
  __syncwarp(); // buf is reused by the warp's next block

  for (uint32_t h = 0; h < 2; ++h) {
    const uint32_t i = lane + 32 * h;
    if (!((wb.bad >> i) & 1))
      continue;
    const uint64_t k = outlierOff + __popcll(wb.bad & belowMask(i));
    storeU64(outIdx + 8 * k, first + i);
    storeU32(outVal + 4 * k, loadElem<E>(x, first + i));
  }
}

struct CompressArgs {
  const uint8_t *x;
  uint8_t *out;
  Header h; // every field but the three totals
  QuantParams qp;
  Sums *slots; // one per CTA
  uint64_t *outSize;
};

// Two CTAs per SM (at most 128 registers) keep more loads in flight.
template <typename E>
__global__ void __launch_bounds__(kThreads, 2)
    compressSzKernel(CompressArgs args) {
  __shared__ uint32_t stage[kWarps][64];
  __shared__ Sums chunkWarp[kWarps];
  __shared__ uint8_t headerBytes[kHeaderSize];
  cg::grid_group grid = cg::this_grid();
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t cta = blockIdx.x, numCtas = gridDim.x;
  const uint64_t n = args.h.n, nb = args.h.numBlocks;
  const uint64_t perCta = ceilDiv(nb, numCtas);
  const uint64_t b0 = minU64(nb, perCta * cta);
  const uint64_t b1 = minU64(nb, b0 + perCta);

  // Pass 1: the size of every block; the CTA's sums to its slot.
  Sums mine{}; // a: payload bytes, b: sparse blocks, c: outliers
  for (uint64_t base = b0; base < b1; base += kCtaBlocks) {
#pragma unroll
    for (int j = 0; j < kBlocksPerWarp; ++j) {
      uint64_t b = base + warp * kBlocksPerWarp + j;
      if (b >= b1) // warp-uniform
        break;
      WarpBlock wb;
      planBlock<E>(args.x, b, n, args.qp, wb);
      if (lane == 0) {
        mine.a += wb.bytes;
        mine.b += isSparse(wb.mode);
        mine.c += wb.numBad;
      }
    }
  }
  Sums ctaSum{};
  blockExclusiveScan(mine, &ctaSum);
  if (threadIdx.x == 0)
    args.slots[cta] = ctaSum;
  grid.sync();

  // The device-wide scan: totals and this CTA's offsets.
  Sums total{}, before{};
  reduceSlots(args.slots, numCtas, cta, &total, &before);
  const uint64_t numSparse = total.b, payloadBytes = total.a;
  uint8_t *desc = args.out + kHeaderSize;
  uint8_t *counts = desc + nb;
  uint8_t *payload = counts + numSparse;
  uint8_t *outIdx = payload + payloadBytes;
  uint8_t *outVal = outIdx + 8 * total.c;
  if (cta == 0) {
    if (threadIdx.x == 0) {
      Header h = args.h;
      h.numSparse = numSparse;
      h.payloadBytes = payloadBytes;
      h.numOutliers = total.c;
      encodeHeader(h, headerBytes);
      *args.outSize = kHeaderSize + nb + numSparse + payloadBytes +
                      uint64_t(kOutlierEntrySize) * total.c;
    }
    __syncthreads();
    if (threadIdx.x < kHeaderSize)
      args.out[threadIdx.x] = headerBytes[threadIdx.x];
  }

  // Pass 2: quantize again and write every block at its offset.
  Sums running = before;
  for (uint64_t base = b0; base < b1; base += kCtaBlocks) {
    WarpBlock wb[kBlocksPerWarp];
    Sums off[kBlocksPerWarp], warpSum{};
#pragma unroll
    for (int j = 0; j < kBlocksPerWarp; ++j) {
      uint64_t b = base + warp * kBlocksPerWarp + j;
      off[j] = warpSum;
      if (b < b1) {
        planBlock<E>(args.x, b, n, args.qp, wb[j]);
        warpSum.a += wb[j].bytes;
        warpSum.b += isSparse(wb[j].mode);
        warpSum.c += wb[j].numBad;
      }
    }
    if (lane == 0)
      chunkWarp[warp] = warpSum;
    __syncthreads();
    Sums warpOff = running, chunkSum{};
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      if (w < int(warp))
        warpOff = warpOff + chunkWarp[w];
      chunkSum = chunkSum + chunkWarp[w];
    }
#pragma unroll
    for (int j = 0; j < kBlocksPerWarp; ++j) {
      uint64_t b = base + warp * kBlocksPerWarp + j;
      if (b < b1) {
        Sums o = warpOff + off[j];
        writeBlock<E>(wb[j], args.x, b, desc, counts, payload + o.a, outIdx,
                      outVal, o.b, o.c, stage[warp]);
      }
    }
    running = running + chunkSum;
    __syncthreads(); // chunkWarp is rewritten by the next chunk
  }
}

// Reads the w-bit value at bit p of the LSB-first stream at src; touches
// only the bytes that hold its bits.
__device__ __forceinline__ uint32_t getBits(const uint8_t *src, uint32_t p,
                                            uint32_t w) {
  const uint32_t byte = p >> 3, sh = p & 7;
  const uint32_t nbytes = ((sh + w - 1) >> 3) + 1;
  uint64_t acc = 0;
  for (uint32_t k = 0; k < nbytes; ++k)
    acc |= uint64_t(src[byte + k]) << (8 * k);
  return uint32_t(acc >> sh) & ((1u << w) - 1); // w <= 24
}

__device__ __forceinline__ uint32_t warpInclusiveSum(uint32_t v) {
  const uint32_t lane = threadIdx.x & 31;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    uint32_t t = __shfl_up_sync(kFull, v, d);
    if (lane >= uint32_t(d))
      v += t;
  }
  return v;
}

// Decodes one (validated-size) block into out; false if a sparse block's
// mask disagrees with its count or has bits past the block.
template <typename E>
__device__ bool decodeBlock(const uint8_t *src, uint32_t mode, uint32_t w,
                            uint32_t nnz, uint32_t len, uint64_t first,
                            const QuantParams &qp, uint8_t *out) {
  const uint32_t lane = threadIdx.x & 31;
  if (mode == kRawBlock) {
    uint8_t *dst = out + first * E::size;
    for (uint32_t k = lane; k < len * E::size; k += 32)
      dst[k] = src[k];
    return true;
  }
  const bool v0 = lane < len, v1 = lane + 32 < len;
  int32_t q0 = 0, q1 = 0;
  if (mode == kDense) {
    uint32_t u0 = v0 && w ? getBits(src, lane * w, w) : 0;
    uint32_t u1 = v1 && w ? getBits(src, (lane + 32) * w, w) : 0;
    // Codes are the running sums of the residuals; u32 wraps on corrupt
    // input where the CPU's does too.
    uint32_t s0 = warpInclusiveSum(uint32_t(unzigzag(u0)));
    uint32_t s1 = warpInclusiveSum(uint32_t(unzigzag(u1)));
    s1 += __shfl_sync(kFull, s0, 31);
    q0 = int32_t(s0);
    q1 = int32_t(s1);
  } else {
    const uint32_t maskBytes = uint32_t(ceilDiv(len, 8));
    uint64_t mask = 0;
    for (uint32_t k = 0; k < maskBytes; ++k)
      mask |= uint64_t(src[k]) << (8 * k);
    const bool tailClear = len == 64 || (mask >> len) == 0;
    if (uint32_t(__popcll(mask)) != nnz || !tailClear)
      return false; // warp-uniform
    const uint8_t *vals = src + maskBytes;
    const bool positive = mode == kSparsePositive;
    for (uint32_t h = 0; h < 2; ++h) {
      const uint32_t i = lane + 32 * h;
      int32_t q = 0;
      if (i < len && ((mask >> i) & 1)) {
        uint32_t c =
            w ? getBits(vals, __popcll(mask & belowMask(i)) * w, w) : 0;
        q = positive ? int32_t(c + 1) : unzigzag(c);
      }
      (h ? q1 : q0) = q;
    }
  }
  if (v0)
    storeElem<E>(out, first + lane, dequantize<E>(q0, qp));
  if (v1)
    storeElem<E>(out, first + lane + 32, dequantize<E>(q1, qp));
  return true;
}

struct DecompressArgs {
  const uint8_t *in;
  uint64_t inSize;
  uint8_t *out;
  uint64_t outCapacity;
  Sums *slotsA, *slotsB; // one each per CTA
  int32_t *status;
};

// The size of a block of len elements from its descriptor d and count nnz.
template <typename E>
__device__ __forceinline__ uint64_t blockBytes(uint32_t d, uint32_t nnz,
                                               uint32_t len) {
  const uint32_t mode = d >> 6, w = d & 63;
  if (mode == kRawBlock)
    return uint64_t(len) * E::size;
  if (mode == kDense)
    return ceilDiv(uint64_t(len) * w, 8);
  return ceilDiv(len, 8) + ceilDiv(uint64_t(nnz) * w, 8);
}

// Thread t's block of a chunk of kThreads blocks from base (none past b1):
// its descriptor, length and count. The chunk's sparse blocks' counts follow
// one another from counts[sparseRun]; *chunkSparse gets how many there are.
// All threads must call it.
struct ChunkBlock {
  bool valid, sparse;
  uint32_t d, len, nnz;
};
__device__ ChunkBlock chunkBlock(const uint8_t *desc, const uint8_t *counts,
                                 uint64_t n, uint64_t base, uint64_t b1,
                                 uint64_t sparseRun, uint64_t *chunkSparse) {
  const uint64_t b = base + threadIdx.x;
  ChunkBlock c{b < b1, false, 0, 0, 0};
  if (c.valid) {
    c.d = desc[b];
    c.len = uint32_t(minU64(kBlockSize, n - b * kBlockSize));
    c.sparse = isSparse(c.d >> 6);
  }
  Sums s{}, chunk{};
  s.a = c.sparse;
  const Sums ex = blockExclusiveScan(s, &chunk);
  if (c.sparse)
    c.nnz = counts[sparseRun + ex.a];
  *chunkSparse = chunk.a;
  return c;
}

template <typename E>
__device__ void decompressSz(const DecompressArgs &args, const Header &h) {
  __shared__ uint64_t chunkOff[kThreads];
  __shared__ uint8_t chunkNnz[kThreads];
  cg::grid_group grid = cg::this_grid();
  const uint32_t cta = blockIdx.x, numCtas = gridDim.x;
  const uint32_t warp = threadIdx.x >> 5;
  const uint64_t n = h.n, nb = h.numBlocks;
  const uint64_t perCta = ceilDiv(nb, numCtas);
  const uint64_t b0 = minU64(nb, perCta * cta);
  const uint64_t b1 = minU64(nb, b0 + perCta);
  const uint8_t *desc = args.in + kHeaderSize;
  const uint8_t *counts = desc + nb;
  const uint8_t *payload = counts + h.numSparse;
  const uint8_t *outIdx = payload + h.payloadBytes;
  const uint8_t *outVal = outIdx + 8 * h.numOutliers;
  QuantParams qp;
  quantParams(h.eb, qp); // checked with the header

  // Phase 1: descriptors are well formed; count the sparse ones.
  Sums mine{}; // a: sparse blocks, b: bad descriptors
  for (uint64_t b = b0 + threadIdx.x; b < b1; b += kThreads) {
    const uint32_t d = desc[b], mode = d >> 6, w = d & 63;
    mine.a += isSparse(mode);
    mine.b += mode == kRawBlock ? w != 0 : w > kMaxWidth;
  }
  Sums sum{};
  blockExclusiveScan(mine, &sum);
  if (threadIdx.x == 0)
    args.slotsA[cta] = sum;
  grid.sync();
  Sums total{}, before{};
  reduceSlots(args.slotsA, numCtas, cta, &total, &before);
  if (total.b != 0 || total.a != h.numSparse) {
    if (cta == 0 && threadIdx.x == 0)
      *args.status = COMET_RT_ERROR_CORRUPT;
    return; // every CTA sees the same totals
  }
  const uint64_t sparseBase = before.a;

  // Phase 2: block sizes (a sparse block's size needs its count, found by
  // the scan over "is sparse"); the CTA's payload bytes.
  mine = Sums{};
  {
    uint64_t sparseRun = sparseBase;
    for (uint64_t base = b0; base < b1; base += kThreads) {
      uint64_t chunkSparse; // the counts read are < numSparse: checked above
      const ChunkBlock c =
          chunkBlock(desc, counts, n, base, b1, sparseRun, &chunkSparse);
      if (c.valid) {
        mine.b += c.nnz > c.len;
        mine.a += blockBytes<E>(c.d, c.nnz, c.len);
      }
      sparseRun += chunkSparse;
    }
  }
  blockExclusiveScan(mine, &sum);
  if (threadIdx.x == 0)
    args.slotsB[cta] = sum;
  grid.sync();
  reduceSlots(args.slotsB, numCtas, cta, &total, &before);
  if (total.b != 0 || total.a != h.payloadBytes) {
    if (cta == 0 && threadIdx.x == 0)
      *args.status = COMET_RT_ERROR_CORRUPT;
    return;
  }

  // Phase 3: every block's offset is now in range; decode. Chunks of 256
  // blocks: one thread per block for the offsets, then one warp per block.
  {
    uint64_t sparseRun = sparseBase, byteRun = before.a;
    bool corrupt = false;
    for (uint64_t base = b0; base < b1; base += kThreads) {
      uint64_t chunkSparse;
      const ChunkBlock c =
          chunkBlock(desc, counts, n, base, b1, sparseRun, &chunkSparse);
      Sums sz{}, chunkBytes{};
      sz.a = c.valid ? blockBytes<E>(c.d, c.nnz, c.len) : 0;
      Sums exBytes = blockExclusiveScan(sz, &chunkBytes);
      chunkOff[threadIdx.x] = byteRun + exBytes.a;
      chunkNnz[threadIdx.x] = uint8_t(c.nnz);
      __syncthreads();
      const uint64_t inChunk = minU64(kThreads, b1 - base);
      for (uint32_t t = warp; t < inChunk; t += kWarps) {
        const uint64_t bb = base + t;
        const uint32_t dd = desc[bb];
        const uint32_t ll = uint32_t(minU64(kBlockSize, n - bb * kBlockSize));
        corrupt |=
            !decodeBlock<E>(payload + chunkOff[t], dd >> 6, dd & 63,
                            chunkNnz[t], ll, bb * kBlockSize, qp, args.out);
      }
      sparseRun += chunkSparse;
      byteRun += chunkBytes.a;
      __syncthreads(); // chunkOff is rewritten by the next chunk
    }
    if (corrupt)
      atomicExch(args.status, int32_t(COMET_RT_ERROR_CORRUPT));
  }
  grid.sync();

  // Phase 4: outliers, strictly increasing indices into non-raw blocks,
  // over the decoded blocks.
  const uint64_t stride = uint64_t(numCtas) * kThreads;
  bool badOutlier = false;
  for (uint64_t k = uint64_t(cta) * kThreads + threadIdx.x; k < h.numOutliers;
       k += stride) {
    const uint64_t i = loadU64(outIdx + 8 * k);
    const uint32_t bits = loadU32(outVal + 4 * k);
    if (i >= n || (k > 0 && i <= loadU64(outIdx + 8 * (k - 1))) ||
        (desc[i / kBlockSize] >> 6) == kRawBlock ||
        (E::size == 2 && bits > 0xFFFFu)) {
      badOutlier = true;
      continue;
    }
    storeElem<E>(args.out, i, bits);
  }
  if (badOutlier)
    atomicExch(args.status, int32_t(COMET_RT_ERROR_CORRUPT));
}

template <typename E>
__device__ void decompressMask(const DecompressArgs &args, const Header &h) {
  const uint8_t *bits = args.in + kHeaderSize;
  const uint64_t stride = uint64_t(gridDim.x) * kThreads;
  for (uint64_t i = uint64_t(blockIdx.x) * kThreads + threadIdx.x; i < h.n;
       i += stride)
    storeElem<E>(args.out, i, (bits[i >> 3] >> (i & 7)) & 1 ? E::one : 0u);
}

__device__ void copyBytes(uint8_t *dst, const uint8_t *src, uint64_t bytes) {
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  uint64_t head = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) &
       15) == 0) {
    const uint64_t vecs = bytes / 16;
    for (uint64_t v = tid; v < vecs; v += stride)
      reinterpret_cast<uint4 *>(dst)[v] =
          reinterpret_cast<const uint4 *>(src)[v];
    head = vecs * 16;
  }
  for (uint64_t k = head + tid; k < bytes; k += stride)
    dst[k] = src[k];
}

// Parses the stream's header (h) and checks the output buffer against it:
// what both decoders' kernels run first, thread 0 of each CTA.
__device__ comet_rt_status readHeader(const uint8_t *in, uint64_t inSize,
                                      const uint8_t *out, uint64_t outCapacity,
                                      Header &h) {
  if (!in && inSize)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  uint8_t hb[kHeaderSize] = {};
  for (uint64_t k = 0; k < minU64(inSize, kHeaderSize); ++k)
    hb[k] = in[k];
  comet_rt_status st = parseHeader(hb, inSize, h);
  if (st != COMET_RT_SUCCESS)
    return st;
  // Bounds per channel are the CPU codec's alone (docs/codec-format.md).
  if (h.flags & format::kFlagChannelBounds)
    return COMET_RT_ERROR_UNSUPPORTED;
  const uint32_t es = dtypeSize(h.dtype);
  const uint64_t bytes = h.n * es;
  if (bytes > outCapacity)
    return COMET_RT_ERROR_BUFFER_TOO_SMALL;
  if (bytes && (!out || reinterpret_cast<uintptr_t>(out) % es != 0))
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  if (h.codec == COMET_RT_CODEC_MASK && h.n % 8 &&
      (in[kHeaderSize + ceilDiv(h.n, 8) - 1] >> (h.n % 8)) != 0)
    return COMET_RT_ERROR_CORRUPT; // bits past the end must be clear
  return COMET_RT_SUCCESS;
}

// A version 2 sz stream that readHeader accepts is the fixed-width
// decoder's (below); this kernel then writes nothing, not even the status.
__device__ bool isFixedStream(comet_rt_status st, const Header &h) {
  return st == COMET_RT_SUCCESS && h.codec == COMET_RT_CODEC_SZ &&
         h.version == kFormatVersion;
}

__global__ void __launch_bounds__(kThreads)
    decompressKernel(DecompressArgs args) {
  // Header has initializers, which shared memory does not run.
  __shared__ alignas(8) unsigned char shHeader[sizeof(Header)];
  __shared__ int32_t shStatus;
  if (threadIdx.x == 0) {
    Header h;
    comet_rt_status st =
        readHeader(args.in, args.inSize, args.out, args.outCapacity, h);
    memcpy(shHeader, &h, sizeof(Header));
    shStatus = isFixedStream(st, h) ? -1 : st;
    if (blockIdx.x == 0 && shStatus >= 0)
      *args.status = st; // the only write before the first grid barrier
  }
  __syncthreads();
  if (shStatus != COMET_RT_SUCCESS)
    return; // every CTA parsed the same header
  Header h;
  memcpy(&h, shHeader, sizeof(Header));
  switch (h.codec) {
  case COMET_RT_CODEC_RAW:
    copyBytes(args.out, args.in + kHeaderSize, h.payloadBytes);
    return;
  case COMET_RT_CODEC_MASK:
    if (h.dtype == COMET_RT_DTYPE_F32)
      decompressMask<F32>(args, h);
    else if (h.dtype == COMET_RT_DTYPE_F16)
      decompressMask<F16>(args, h);
    else
      decompressMask<BF16>(args, h);
    return;
  default:
    if (h.dtype == COMET_RT_DTYPE_F32)
      decompressSz<F32>(args, h);
    else if (h.dtype == COMET_RT_DTYPE_F16)
      decompressSz<F16>(args, h);
    else
      decompressSz<BF16>(args, h);
  }
}

//===----------------------------------------------------------------------===//
// sz version 2 decoding in the fixed-width modes (CodecFixedChunk.h), after
// decompressKernel has passed the stream on:
//
//   fixedHeaderKernel   one CTA: the header again, the chunk table (sizes
//                       checked, offsets by a scan), the status
//   fixedRefusalKernel  a thread per chunk: a coded chunk or a Rice block
//                       refuses the stream (the first chunk's mode wins)
//   decodeFixedChunks   nothing when refused; else one CTA per chunk, a
//                       thread per block: one thread lays the chunk out,
//                       all check the outliers, decode their block, then
//                       place the outliers
//   fixedFinishKernel   the status: unsupported, corrupt or success (the
//                       outliers add up to the header's count)
//===----------------------------------------------------------------------===//

// What the kernels share, in device scratch. Plain fields: the memory is
// not constructed.
struct FixedDecodeState {
  Header h;
  QuantParams qp;
  int32_t active;              // a fixed-width stream whose table checks
  int32_t corrupt;             // a chunk failed its checks
  unsigned long long refusal;  // min over chunks of c << 3 | mode
  unsigned long long outliers; // over the decoded chunks
};
constexpr unsigned long long kNoRefusal = ~0ull;

struct FixedDecodeArgs {
  const uint8_t *in;
  uint64_t inSize;
  uint8_t *out;
  uint64_t outCapacity;
  FixedDecodeState *state;
  uint64_t *offsets;  // maxChunks + 1
  uint64_t maxChunks; // the most chunks a stream that fits can have
  int32_t *status;
  uint64_t *refusalOut; // optional: the refusal word, for the host
};

__global__ void __launch_bounds__(kThreads)
    fixedHeaderKernel(FixedDecodeArgs args) {
  __shared__ int32_t shActive;
  FixedDecodeState &s = *args.state;
  if (threadIdx.x == 0) {
    Header h;
    comet_rt_status st =
        readHeader(args.in, args.inSize, args.out, args.outCapacity, h);
    shActive = isFixedStream(st, h);
    if (shActive && h.numBlocks > args.maxChunks) {
      // Not reached: the output and the table bound the chunk count.
      *args.status = COMET_RT_ERROR_CORRUPT;
      shActive = 0;
    }
    s.active = 0;
    s.corrupt = 0;
    s.refusal = kNoRefusal;
    s.outliers = 0;
    if (shActive) {
      s.h = h;
      quantParams(h.eb, s.qp); // checked by parseHeader
    }
  }
  __syncthreads();
  if (!shActive)
    return;
  // checkFixedTable's checks, the sums by a CTA scan.
  const Header &h = s.h;
  const uint32_t es = dtypeSize(h.dtype);
  const uint8_t *table = args.in + kHeaderSize;
  Sums run{};
  for (uint64_t base = 0; base < h.numBlocks; base += kThreads) {
    const uint64_t c = base + threadIdx.x;
    Sums v{};
    if (c < h.numBlocks) {
      const uint64_t len = minU64(kChunkElems, h.n - c * kChunkElems);
      v.a = loadU32(table + 4 * c);
      v.b = v.a > worstFixedChunkBytes(len, es);
    }
    Sums tile{};
    const Sums ex = blockExclusiveScan(v, &tile);
    if (c < h.numBlocks)
      args.offsets[c] = run.a + ex.a;
    run = run + tile;
  }
  if (threadIdx.x == 0) {
    args.offsets[h.numBlocks] = run.a;
    const bool ok = run.b == 0 && run.a == h.payloadBytes;
    s.active = ok;
    *args.status = ok ? COMET_RT_SUCCESS : COMET_RT_ERROR_CORRUPT;
  }
}

__global__ void __launch_bounds__(kThreads)
    fixedRefusalKernel(FixedDecodeArgs args) {
  FixedDecodeState &s = *args.state;
  if (!s.active)
    return;
  const uint64_t nc = s.h.numBlocks;
  const uint8_t *chunks = args.in + kHeaderSize + 4 * nc;
  const uint64_t stride = uint64_t(gridDim.x) * kThreads;
  for (uint64_t c = uint64_t(blockIdx.x) * kThreads + threadIdx.x; c < nc;
       c += stride) {
    const uint64_t off = args.offsets[c];
    if (const uint32_t mode =
            fixedChunkRefusal(chunks + off, args.offsets[c + 1] - off))
      atomicMin(&s.refusal, (unsigned long long)(c << 3 | mode));
  }
}

template <typename E>
__device__ void decodeFixedChunksOf(const FixedDecodeArgs &args, FixedView &v,
                                    int32_t &shLayout) {
  FixedDecodeState &s = *args.state;
  const Header &h = s.h;
  const uint64_t nc = h.numBlocks;
  const uint8_t *chunks = args.in + kHeaderSize + 4 * nc;
  const uint32_t b = threadIdx.x;
  for (uint64_t c = blockIdx.x; c < nc; c += gridDim.x) {
    const uint8_t *in = chunks + args.offsets[c];
    const uint64_t size = args.offsets[c + 1] - args.offsets[c];
    const uint32_t len = uint32_t(minU64(kChunkElems, h.n - c * kChunkElems));
    uint8_t *out = args.out + c * kChunkElems * E::size;
    if (size == 0) {
      for (uint32_t k = b; k < len * E::size; k += kChunkBlocks)
        out[k] = 0;
      continue;
    }
    if (b == 0)
      shLayout = layoutFixedDecode<E>(in, size, len, v);
    __syncthreads();
    bool bad = shLayout != COMET_RT_SUCCESS;
    if (!bad)
      for (uint32_t k = b; k < v.outliers; k += kChunkBlocks)
        bad = bad || !fixedOutlierOk(in, v, k, len);
    if (!__syncthreads_or(bad)) {
      if (b < ceilDiv(len, kBlockSize))
        bad = !decodeFixedBlock<E>(in, v, b, len, s.qp, out);
      if (!__syncthreads_or(bad)) {
        for (uint32_t k = b; k < v.outliers; k += kChunkBlocks)
          placeFixedOutlier<E>(in, v, k, out);
        if (b == 0)
          atomicAdd(&s.outliers, (unsigned long long)v.outliers);
      }
    }
    if (bad)
      atomicExch(&s.corrupt, 1);
    __syncthreads(); // v and shLayout are rewritten by the next chunk
  }
}

__global__ void __launch_bounds__(kChunkBlocks)
    decodeFixedChunks(FixedDecodeArgs args) {
  // Plain storage: FixedView has initializers, which shared memory does not
  // run; thread 0 fills it in layoutFixedDecode.
  __shared__ alignas(8) unsigned char viewBytes[sizeof(FixedView)];
  __shared__ int32_t shLayout;
  FixedView &v = *reinterpret_cast<FixedView *>(viewBytes);
  const FixedDecodeState &s = *args.state;
  if (!s.active || s.refusal != kNoRefusal)
    return; // nothing is written for a refused stream
  if (s.h.dtype == COMET_RT_DTYPE_F32)
    decodeFixedChunksOf<F32>(args, v, shLayout);
  else if (s.h.dtype == COMET_RT_DTYPE_F16)
    decodeFixedChunksOf<F16>(args, v, shLayout);
  else
    decodeFixedChunksOf<BF16>(args, v, shLayout);
}

__global__ void fixedFinishKernel(FixedDecodeArgs args) {
  const FixedDecodeState &s = *args.state;
  if (!s.active)
    return;
  if (args.refusalOut)
    *args.refusalOut = s.refusal;
  *args.status = s.refusal != kNoRefusal ? COMET_RT_ERROR_UNSUPPORTED
                 : s.corrupt || s.outliers != s.h.numOutliers
                     ? COMET_RT_ERROR_CORRUPT
                     : COMET_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// sz version 2 in the fixed-width modes (CodecFixedChunk.h): the bytes of
// the CPU encoder under COMET_RT_CODEC_ENTROPY_NONE.
//
//   compressFixedChunks  one CTA per chunk, one thread per block: plan the
//                        block, scan the blocks' parts, write the chunk at
//                        its worst-case slot in a scratch buffer
//   scanFixedChunks      one CTA: the chunks' offsets (an exclusive scan of
//                        their sizes), the totals, the header
//   placeFixedChunks     one CTA per chunk: its table entry and its bytes
//===----------------------------------------------------------------------===//

struct FixedArgs {
  const uint8_t *x;
  uint8_t *out;
  Header h; // every field but the two totals
  QuantParams qp;
  uint8_t *staging; // numBlocks (chunks) slots of `slot` bytes
  uint64_t slot;
  uint64_t *sizes, *outliers, *offsets; // one per chunk
  uint64_t *outSize;
};

template <typename E>
__global__ void __launch_bounds__(kChunkBlocks)
    compressFixedChunks(FixedArgs args) {
  __shared__ uint32_t summary[kChunkBlocks];
  // Plain storage: FixedSlot and FixedChunk have initializers, which shared
  // memory does not run; thread 0 constructs them in layoutFixedChunk.
  __shared__ alignas(
      8) unsigned char slotBytes[sizeof(FixedSlot) * kChunkBlocks];
  __shared__ alignas(8) unsigned char chunkBytes[sizeof(FixedChunk)];
  FixedSlot *slots = reinterpret_cast<FixedSlot *>(slotBytes);
  FixedChunk &fc = *reinterpret_cast<FixedChunk *>(chunkBytes);
  const uint64_t c = blockIdx.x;
  const uint32_t b = threadIdx.x;
  const uint64_t first = c * kChunkElems;
  const uint32_t len = uint32_t(minU64(kChunkElems, args.h.n - first));
  const uint32_t nbk = uint32_t(ceilDiv(len, kBlockSize));
  const uint8_t *xb = args.x + (first + uint64_t(b) * kBlockSize) * E::size;
  FixedBlock fb;
  fb.present = false;
  if (b < nbk)
    planFixedBlock<E>(xb, minU32(kBlockSize, len - b * kBlockSize), args.qp,
                      fb);
  summary[b] = fixedSummary(fb);
  __syncthreads();
  if (b == 0) // 64 entries: one thread's scan is cheapest
    layoutFixedChunk<E>(summary, nbk, slots, fc);
  __syncthreads();
  uint8_t *dst = args.staging + c * args.slot;
  if (fb.present)
    writeFixedBlock<E>(fc, fb, b, slots[b], xb, dst);
  if (b == 0) {
    if (fc.bytes)
      writeFixedChunkHeader(fc, dst);
    args.sizes[c] = fc.bytes;
    args.outliers[c] = fc.outliers;
  }
}

__global__ void __launch_bounds__(kThreads) scanFixedChunks(FixedArgs args) {
  __shared__ uint8_t headerBytes[kHeaderSize];
  const uint64_t nc = args.h.numBlocks;
  Sums run{};
  for (uint64_t base = 0; base < nc; base += kThreads) {
    const uint64_t i = base + threadIdx.x;
    Sums v{};
    if (i < nc) {
      v.a = args.sizes[i];
      v.b = args.outliers[i];
    }
    Sums tile{};
    const Sums ex = blockExclusiveScan(v, &tile);
    if (i < nc)
      args.offsets[i] = run.a + ex.a;
    run = run + tile;
  }
  if (threadIdx.x == 0) {
    Header h = args.h;
    h.payloadBytes = run.a;
    h.numOutliers = run.b;
    encodeHeader(h, headerBytes);
    *args.outSize = kHeaderSize + 4 * nc + run.a;
  }
  __syncthreads();
  if (threadIdx.x < kHeaderSize)
    args.out[threadIdx.x] = headerBytes[threadIdx.x];
}

__global__ void __launch_bounds__(kThreads) placeFixedChunks(FixedArgs args) {
  const uint64_t c = blockIdx.x, nc = args.h.numBlocks;
  const uint64_t size = args.sizes[c];
  if (threadIdx.x == 0)
    storeU32(args.out + kHeaderSize + 4 * c, uint32_t(size));
  const uint8_t *src = args.staging + c * args.slot;
  uint8_t *dst = args.out + kHeaderSize + 4 * nc + args.offsets[c];
  for (uint64_t k = threadIdx.x; k < size; k += kThreads)
    dst[k] = src[k];
}

//===----------------------------------------------------------------------===//
// raw and mask compression: plain grid-stride kernels.
//===----------------------------------------------------------------------===//

struct SimpleArgs {
  const uint8_t *x;
  uint8_t *out;
  Header h;
  uint64_t *outSize;
};

__device__ void writeSimpleHeader(const SimpleArgs &args) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    encodeHeader(args.h, args.out);
    *args.outSize = kHeaderSize + args.h.payloadBytes;
  }
}

__global__ void __launch_bounds__(kThreads) compressRawKernel(SimpleArgs args) {
  writeSimpleHeader(args);
  copyBytes(args.out + kHeaderSize, args.x, args.h.payloadBytes);
}

template <typename E>
__global__ void __launch_bounds__(kThreads)
    compressMaskKernel(SimpleArgs args) {
  writeSimpleHeader(args);
  // One warp makes 4 bytes from 32 elements.
  const uint64_t n = args.h.n, nbytes = ceilDiv(n, 8);
  const uint64_t stride = uint64_t(gridDim.x) * kThreads;
  const uint64_t span = ceilDiv(n, 32) * 32; // whole warps stay in the loop
  const uint32_t lane = threadIdx.x & 31;
  for (uint64_t i = uint64_t(blockIdx.x) * kThreads + threadIdx.x; i < span;
       i += stride) {
    bool set = i < n && E::toFloat(loadElem<E>(args.x, i)) > 0.0f;
    uint32_t m = __ballot_sync(kFull, set);
    const uint64_t byte = (i - lane) / 8 + lane;
    if (lane < 4 && byte < nbytes)
      args.out[kHeaderSize + byte] = uint8_t(m >> (8 * lane));
  }
}

//===----------------------------------------------------------------------===//
// Host side.
//===----------------------------------------------------------------------===//

bool check(cudaError_t e) {
  if (e == cudaSuccess)
    return true;
  gLastError = int(e);
  return false;
}

comet_rt_status cudaStatus(cudaError_t e) {
  return e == cudaErrorMemoryAllocation ? COMET_RT_ERROR_OUT_OF_MEMORY
                                        : COMET_RT_ERROR_CUDA;
}

// The largest grid of kernel whose CTAs are all resident at once (what a
// cooperative launch allows), at most want and at least 1.
template <typename K>
cudaError_t coopGrid(K kernel, uint64_t want, unsigned *grid) {
  int dev = 0, sms = 0, perSm = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, kThreads,
                                                      0);
  if (e != cudaSuccess)
    return e;
  uint64_t most = uint64_t(std::max(1, sms)) * uint64_t(std::max(1, perSm));
  *grid = unsigned(std::max<uint64_t>(1, std::min(most, want)));
  return cudaSuccess;
}

// Queues the version 2 encoder (fixed-width chunks) of an sz stream whose
// header h has every field but the totals.
comet_rt_status queueCompressFixed(const uint8_t *x, uint8_t *o, Header h,
                                   const QuantParams &qp, uint64_t *dSize,
                                   cudaStream_t stream) {
  const uint64_t nc = ceilDiv(h.n, kChunkElems);
  if (nc > 0x7FFFFFFFu) // one CTA per chunk
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  h.numBlocks = nc;
  h.numSparse = kChunkBlocks;
  const uint32_t es = dtypeSize(h.dtype);
  const uint64_t slot = worstFixedChunkBytes(kChunkElems, es);
  // The staging slots, then three u64 words per chunk at an 8-byte
  // boundary (a slot is 138 + 4096 * es bytes: not a multiple of 8).
  const uint64_t wordsAt = (nc * slot + 7) / 8 * 8;
  uint8_t *scratch = nullptr;
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void **>(&scratch),
                                  wordsAt + 3 * 8 * nc + 8, stream);
  if (!check(e))
    return cudaStatus(e);
  uint64_t *words = reinterpret_cast<uint64_t *>(scratch + wordsAt);
  FixedArgs args{
      x, o, h, qp, scratch, slot, words, words + nc, words + 2 * nc, dSize};
  if (nc) {
    if (h.dtype == COMET_RT_DTYPE_F32)
      compressFixedChunks<F32><<<unsigned(nc), kChunkBlocks, 0, stream>>>(args);
    else if (h.dtype == COMET_RT_DTYPE_F16)
      compressFixedChunks<F16><<<unsigned(nc), kChunkBlocks, 0, stream>>>(args);
    else
      compressFixedChunks<BF16>
          <<<unsigned(nc), kChunkBlocks, 0, stream>>>(args);
  }
  scanFixedChunks<<<1, kThreads, 0, stream>>>(args);
  if (nc)
    placeFixedChunks<<<unsigned(nc), kThreads, 0, stream>>>(args);
  e = cudaGetLastError();
  cudaError_t f = cudaFreeAsync(scratch, stream);
  if (!check(e) || !check(f))
    return cudaStatus(e != cudaSuccess ? e : f);
  return COMET_RT_SUCCESS;
}

bool validCodec(int c) { return c >= 0 && c <= COMET_RT_CODEC_MASK; }
bool validDtype(int d) { return d >= 0 && d <= COMET_RT_DTYPE_BF16; }

size_t maxSize(int codec, int dtype, uint64_t n) {
  // The CPU library's bound, so that both always agree.
  return comet_rt_codec_max_compressed_size(codec, dtype, n);
}

// Checks the arguments like the CPU compressor, then queues the kernel that
// writes the stream and its size (to dSize).
comet_rt_status queueCompress(int version, int codec, int dtype,
                              const void *data, const uint64_t *dims,
                              uint32_t rank, double eb, void *out,
                              size_t outCapacity, uint64_t *dSize,
                              cudaStream_t stream) {
  if (!out || !dSize || (rank && !dims) || rank > kMaxRank ||
      !validCodec(codec) || !validDtype(dtype) ||
      (version != kFormatVersion1 && version != kFormatVersion))
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  Header h;
  h.version = uint32_t(version);
  h.codec = uint32_t(codec);
  h.dtype = uint32_t(dtype);
  h.rank = rank;
  uint64_t n = 1, bytes;
  for (uint32_t i = 0; i < rank; ++i) {
    h.dims[i] = dims[i];
    if (mulOverflow(n, dims[i], n))
      return COMET_RT_ERROR_INVALID_ARGUMENT;
  }
  const uint32_t es = dtypeSize(uint32_t(dtype));
  if (mulOverflow(n, es, bytes) || bytes > (uint64_t(1) << 62) ||
      (n && !data) || reinterpret_cast<uintptr_t>(data) % es != 0)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  h.n = n;
  QuantParams qp = {};
  if (codec == COMET_RT_CODEC_SZ && !quantParams(eb, qp))
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  if (outCapacity < maxSize(codec, dtype, n))
    return COMET_RT_ERROR_BUFFER_TOO_SMALL;

  const uint8_t *x = static_cast<const uint8_t *>(data);
  uint8_t *o = static_cast<uint8_t *>(out);
  cudaError_t e;
  if (codec != COMET_RT_CODEC_SZ) {
    h.payloadBytes = codec == COMET_RT_CODEC_RAW ? bytes : ceilDiv(n, 8);
    SimpleArgs args{x, o, h, dSize};
    uint64_t work = codec == COMET_RT_CODEC_RAW ? ceilDiv(bytes, 16) : n;
    unsigned grid =
        unsigned(std::clamp<uint64_t>(ceilDiv(work, kThreads), 1, 65535));
    if (codec == COMET_RT_CODEC_RAW)
      compressRawKernel<<<grid, kThreads, 0, stream>>>(args);
    else if (dtype == COMET_RT_DTYPE_F32)
      compressMaskKernel<F32><<<grid, kThreads, 0, stream>>>(args);
    else if (dtype == COMET_RT_DTYPE_F16)
      compressMaskKernel<F16><<<grid, kThreads, 0, stream>>>(args);
    else
      compressMaskKernel<BF16><<<grid, kThreads, 0, stream>>>(args);
    e = cudaGetLastError();
    return check(e) ? COMET_RT_SUCCESS : cudaStatus(e);
  }

  h.eb = eb;
  h.blockSize = kBlockSize;
  if (version == kFormatVersion)
    return queueCompressFixed(x, o, h, qp, dSize, stream);
  h.numBlocks = ceilDiv(n, kBlockSize);
  void (*kernel)(CompressArgs) =
      dtype == COMET_RT_DTYPE_F32   ? compressSzKernel<F32>
      : dtype == COMET_RT_DTYPE_F16 ? compressSzKernel<F16>
                                    : compressSzKernel<BF16>;
  unsigned grid;
  if (!check(e = coopGrid(kernel, ceilDiv(h.numBlocks, kCtaBlocks), &grid)))
    return cudaStatus(e);
  Sums *slots = nullptr;
  if (!check(e = cudaMallocAsync(reinterpret_cast<void **>(&slots),
                                 sizeof(Sums) * grid, stream)))
    return cudaStatus(e);
  CompressArgs args{x, o, h, qp, slots, dSize};
  void *params[] = {&args};
  e = cudaLaunchCooperativeKernel(reinterpret_cast<const void *>(kernel),
                                  dim3(grid), dim3(kThreads), params, 0,
                                  stream);
  cudaError_t f = cudaFreeAsync(slots, stream);
  if (!check(e) || !check(f))
    return cudaStatus(e != cudaSuccess ? e : f);
  return COMET_RT_SUCCESS;
}

// Queues the fixed-width version 2 decoder's kernels, which act only on a
// stream that decompressKernel passed on (see isFixedStream).
comet_rt_status queueDecompressFixed(const uint8_t *in, uint64_t inSize,
                                     uint8_t *out, uint64_t outCapacity,
                                     int32_t *dStatus, uint64_t *dRefusal,
                                     cudaStream_t stream) {
  // A stream the output can hold has at most this many chunks (elements of
  // 2 bytes or more), each with a 4-byte table entry.
  const uint64_t maxChunks =
      minU64(inSize > kHeaderSize ? (inSize - kHeaderSize) / 4 : 0,
             ceilDiv(outCapacity / 2, kChunkElems));
  const uint64_t offsetsAt = (sizeof(FixedDecodeState) + 7) / 8 * 8;
  uint8_t *scratch = nullptr;
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void **>(&scratch),
                                  offsetsAt + 8 * (maxChunks + 1), stream);
  if (!check(e))
    return cudaStatus(e);
  FixedDecodeArgs args{in,
                       inSize,
                       out,
                       outCapacity,
                       reinterpret_cast<FixedDecodeState *>(scratch),
                       reinterpret_cast<uint64_t *>(scratch + offsetsAt),
                       maxChunks,
                       dStatus,
                       dRefusal};
  // Grid-stride loops: the chunk count is only known on the device.
  const unsigned refusalGrid =
      unsigned(std::clamp<uint64_t>(ceilDiv(maxChunks, kThreads), 1, 4096));
  const unsigned chunkGrid =
      unsigned(std::clamp<uint64_t>(maxChunks, 1, 65535));
  fixedHeaderKernel<<<1, kThreads, 0, stream>>>(args);
  fixedRefusalKernel<<<refusalGrid, kThreads, 0, stream>>>(args);
  decodeFixedChunks<<<chunkGrid, kChunkBlocks, 0, stream>>>(args);
  fixedFinishKernel<<<1, 1, 0, stream>>>(args);
  e = cudaGetLastError();
  cudaError_t f = cudaFreeAsync(scratch, stream);
  if (!check(e) || !check(f))
    return cudaStatus(e != cudaSuccess ? e : f);
  return COMET_RT_SUCCESS;
}

comet_rt_status queueDecompress(const void *in, size_t inSize, void *out,
                                size_t outCapacity, int32_t *dStatus,
                                uint64_t *dRefusal, cudaStream_t stream) {
  if (!dStatus)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  // An upper bound on the number of sz blocks of any stream the device will
  // accept: each costs a descriptor byte and at least two output bytes.
  uint64_t nbBound = minU64(inSize > kHeaderSize ? inSize - kHeaderSize : 0,
                            ceilDiv(outCapacity, 2 * kBlockSize));
  unsigned grid;
  cudaError_t e = coopGrid(decompressKernel, ceilDiv(nbBound, kThreads), &grid);
  if (!check(e))
    return cudaStatus(e);
  Sums *slots = nullptr;
  if (!check(e = cudaMallocAsync(reinterpret_cast<void **>(&slots),
                                 2 * sizeof(Sums) * grid, stream)))
    return cudaStatus(e);
  DecompressArgs args{static_cast<const uint8_t *>(in),
                      inSize,
                      static_cast<uint8_t *>(out),
                      outCapacity,
                      slots,
                      slots + grid,
                      dStatus};
  void *params[] = {&args};
  e = cudaLaunchCooperativeKernel(
      reinterpret_cast<const void *>(decompressKernel), dim3(grid),
      dim3(kThreads), params, 0, stream);
  cudaError_t f = cudaFreeAsync(slots, stream);
  if (!check(e) || !check(f))
    return cudaStatus(e != cudaSuccess ? e : f);
  return queueDecompressFixed(static_cast<const uint8_t *>(in), inSize,
                              static_cast<uint8_t *>(out), outCapacity, dStatus,
                              dRefusal, stream);
}

// Reads one word back: the session's single host synchronisation.
template <typename T>
comet_rt_status readBack(const T *dWord, T *host, cudaStream_t stream) {
  cudaError_t e =
      cudaMemcpyAsync(host, dWord, sizeof(T), cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(stream);
  return check(e) ? COMET_RT_SUCCESS : cudaStatus(e);
}

} // namespace
} // namespace comet::kernels::cuda

using namespace comet::kernels::cuda;

extern "C" {

COMET_RT_API int comet_rt_codec_cuda_last_error(void) { return gLastError; }

COMET_RT_API size_t comet_rt_codec_cuda_max_compressed_size(int codec,
                                                            int dtype,
                                                            uint64_t n) {
  return maxSize(codec, dtype, n);
}

COMET_RT_API comet_rt_status comet_rt_codec_cuda_compress_version_async(
    int version, int codec, int dtype, const void *d_data, const uint64_t *dims,
    uint32_t rank, double eb, void *d_out, size_t out_capacity,
    uint64_t *d_out_size, comet_rt_cuda_stream stream) {
  return queueCompress(version, codec, dtype, d_data, dims, rank, eb, d_out,
                       out_capacity, d_out_size, stream);
}

// The default stays version 1. The format no longer forbids version 2: the
// decoder reads every stream the GPU writes, and the engine never hands the
// GPU a CPU stream (a handle is its backend's own). But the version 2
// encoder stages every chunk at its worst case in device scratch as large
// as the stream's worst case, allocated here outside the runtime's memory
// accounting (version 1 needs none), so the runtime's reported peak would
// miss one activation's worth; and neither version 2 kernel has run. Move
// when the staging lives in the caller's worst-case output (or is counted)
// and a device has passed the version 2 tests.
COMET_RT_API comet_rt_status comet_rt_codec_cuda_compress_async(
    int codec, int dtype, const void *d_data, const uint64_t *dims,
    uint32_t rank, double eb, void *d_out, size_t out_capacity,
    uint64_t *d_out_size, comet_rt_cuda_stream stream) {
  return queueCompress(kFormatVersion1, codec, dtype, d_data, dims, rank, eb,
                       d_out, out_capacity, d_out_size, stream);
}

COMET_RT_API comet_rt_status comet_rt_codec_cuda_compress_version(
    int version, int codec, int dtype, const void *d_data, const uint64_t *dims,
    uint32_t rank, double eb, void *d_out, size_t out_capacity,
    size_t *out_size, comet_rt_cuda_stream stream) {
  if (!out_size)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  *out_size = 0;
  uint64_t *dSize = nullptr;
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void **>(&dSize),
                                  sizeof(uint64_t), stream);
  if (!check(e))
    return cudaStatus(e);
  comet_rt_status st = queueCompress(version, codec, dtype, d_data, dims, rank,
                                     eb, d_out, out_capacity, dSize, stream);
  uint64_t size = 0;
  if (st == COMET_RT_SUCCESS)
    st = readBack(dSize, &size, stream);
  cudaFreeAsync(dSize, stream);
  if (st == COMET_RT_ERROR_BUFFER_TOO_SMALL)
    *out_size = maxSize(codec, dtype, [&] {
      uint64_t n = 1;
      for (uint32_t i = 0; i < rank; ++i)
        n *= dims[i];
      return n;
    }());
  else if (st == COMET_RT_SUCCESS)
    *out_size = size_t(size);
  return st;
}

COMET_RT_API comet_rt_status comet_rt_codec_cuda_compress(
    int codec, int dtype, const void *d_data, const uint64_t *dims,
    uint32_t rank, double eb, void *d_out, size_t out_capacity,
    size_t *out_size, comet_rt_cuda_stream stream) {
  return comet_rt_codec_cuda_compress_version(kFormatVersion1, codec, dtype,
                                              d_data, dims, rank, eb, d_out,
                                              out_capacity, out_size, stream);
}

COMET_RT_API comet_rt_status comet_rt_codec_cuda_decompress_async(
    const void *d_in, size_t in_size, void *d_out, size_t out_capacity,
    int32_t *d_status, comet_rt_cuda_stream stream) {
  return queueDecompress(d_in, in_size, d_out, out_capacity, d_status, nullptr,
                         stream);
}

COMET_RT_API comet_rt_status comet_rt_codec_cuda_decompress(
    const void *d_in, size_t in_size, void *d_out, size_t out_capacity,
    comet_rt_cuda_stream stream) {
  gLastUnsupportedMode = 0;
  // The status, then the refusal word (chunk << 3 | mode).
  struct Words {
    int32_t status, pad;
    uint64_t refusal;
  };
  Words *dWords = nullptr;
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void **>(&dWords),
                                  sizeof(Words), stream);
  if (!check(e))
    return cudaStatus(e);
  e = cudaMemsetAsync(dWords, 0xFF, sizeof(Words), stream);
  comet_rt_status st =
      check(e) ? queueDecompress(d_in, in_size, d_out, out_capacity,
                                 &dWords->status, &dWords->refusal, stream)
               : cudaStatus(e);
  Words words{};
  if (st == COMET_RT_SUCCESS)
    st = readBack(dWords, &words, stream);
  cudaFreeAsync(dWords, stream);
  if (st != COMET_RT_SUCCESS)
    return st;
  if (words.status == COMET_RT_ERROR_UNSUPPORTED && words.refusal != ~0ull)
    gLastUnsupportedMode = int(words.refusal & 7);
  return comet_rt_status(words.status);
}

COMET_RT_API int comet_rt_codec_cuda_last_unsupported_mode(void) {
  return gLastUnsupportedMode;
}

} // extern "C"
