//===- Codec.cpp - CPU codec kernels --------------------------------------===//
//
// Implements docs/codec-format.md on the CPU. Both directions run in parallel
// by blocks with OpenMP; every block's bytes depend only on its own elements,
// so the output is the same for any thread count.
//
//===----------------------------------------------------------------------===//
#include "comet/kernels/cpu/Codec.h"

#include "Quantizer.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#if __has_include(<omp.h>)
#include <omp.h>
#else
// clang without its own omp.h, built against libgomp (scripts/sanitizers.sh).
extern "C" int omp_get_max_threads(void);
#endif

namespace comet::kernels::cpu {
namespace {

// The format's header, quantization step and helpers are shared with the
// CUDA codec.
using format::addOverflow;
using format::bitsFloat;
using format::Bounds;
using format::ceilDiv;
using format::encodeHeader;
using format::floatBits;
using format::Header;
using format::mulOverflow;
using format::parseHeader;
using format::QuantParams;
using format::quantParams;

std::atomic<int> gNumThreads{0};

// Below this many blocks the thread start-up costs more than it saves.
constexpr uint64_t kParallelBlocks = 64;

//===----------------------------------------------------------------------===//
// Arguments.
//===----------------------------------------------------------------------===//

bool validDtype(int d) { return d >= 0 && d <= COMET_RT_DTYPE_BF16; }
bool validCodec(int c) { return c >= 0 && c <= COMET_RT_CODEC_MASK; }

// Element count of dims[0..rank) (rank 0 is a scalar), false on overflow.
bool elementCount(const uint64_t *dims, uint32_t rank, uint64_t &n) {
  n = 1;
  for (uint32_t i = 0; i < rank; ++i)
    if (mulOverflow(n, dims[i], n))
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Bit packing: value i of width w occupies stream bits [i*w, (i+1)*w), and
// stream bit k is bit k%8 of byte k/8 (LSB first).
//
// Both directions work on groups of 8 values, which fill exactly w bytes.
// There is one instance per width, so every shift is a constant and a group
// is a few loads, shifts and ORs instead of a loop with a branch per value.
//===----------------------------------------------------------------------===//

inline size_t packedBytes(uint64_t count, uint32_t w) {
  return size_t(ceilDiv(count * w, 8));
}

// Packs `groups` groups of 8 values into W bytes each. Values past the
// caller's count must be 0, so the padding bits of the last byte are 0.
template <unsigned W>
void packGroups(uint8_t *out, const uint32_t *v, unsigned groups) {
  static_assert(W >= 1 && W <= kMaxWidth, "three words hold 8 values");
  for (unsigned g = 0; g < groups; ++g, v += 8, out += W) {
    uint64_t word[3] = {0, 0, 0};
#pragma GCC unroll 8
    for (unsigned j = 0; j < 8; ++j) {
      const unsigned bit = j * W, k = bit / 64, sh = bit % 64;
      word[k] |= uint64_t(v[j]) << sh;
      if (sh + W > 64)
        word[(k + 1) % 3] |= uint64_t(v[j]) >> ((64 - sh) % 64);
    }
    std::memcpy(out, word, W);
  }
}

// Unpacks `count` values of W bits from exactly packedBytes(count, W) bytes.
// v must have room for count rounded up to a multiple of 8.
template <unsigned W>
void unpackValues(const uint8_t *in, uint32_t *v, unsigned count) {
  static_assert(W >= 1 && W <= kMaxWidth, "three words hold 8 values");
  constexpr uint32_t mask = (1u << W) - 1;
  auto group = [](const uint8_t *src, uint32_t *dst) {
    uint64_t word[3] = {0, 0, 0};
    std::memcpy(word, src, W);
#pragma GCC unroll 8
    for (unsigned j = 0; j < 8; ++j) {
      const unsigned bit = j * W, k = bit / 64, sh = bit % 64;
      uint64_t x = word[k] >> sh;
      if (sh + W > 64)
        x |= word[(k + 1) % 3] << ((64 - sh) % 64);
      dst[j] = uint32_t(x) & mask;
    }
  };
  const unsigned full = count / 8, rem = count % 8;
  for (unsigned g = 0; g < full; ++g)
    group(in + g * W, v + g * 8);
  if (rem) { // the last, partial group: never read past its bytes
    uint8_t tail[W] = {};
    std::memcpy(tail, in + full * W, packedBytes(rem, W));
    group(tail, v + full * 8);
  }
}

using PackFn = void (*)(uint8_t *, const uint32_t *, unsigned);
using UnpackFn = void (*)(const uint8_t *, uint32_t *, unsigned);

void packNothing(uint8_t *, const uint32_t *, unsigned) {}
void unpackZeros(const uint8_t *, uint32_t *v, unsigned count) {
  std::fill(v, v + count, 0u);
}

template <size_t... I>
constexpr std::array<PackFn, sizeof...(I) + 1>
makePackTable(std::index_sequence<I...>) {
  return {{&packNothing, &packGroups<unsigned(I + 1)>...}};
}
template <size_t... I>
constexpr std::array<UnpackFn, sizeof...(I) + 1>
makeUnpackTable(std::index_sequence<I...>) {
  return {{&unpackZeros, &unpackValues<unsigned(I + 1)>...}};
}
// Indexed by width 0..kMaxWidth.
constexpr auto kPack = makePackTable(std::make_index_sequence<kMaxWidth>());
constexpr auto kUnpack = makeUnpackTable(std::make_index_sequence<kMaxWidth>());

// Packs count values of width w (w <= kMaxWidth) into packedBytes(count, w)
// bytes at out, which must have room for ceil(count / 8) * w bytes; v must
// have room for count rounded up to a multiple of 8 (it is zero-padded).
inline void packBits(uint8_t *out, uint32_t *v, unsigned count, uint32_t w) {
  for (unsigned i = count; i % 8; ++i)
    v[i] = 0;
  kPack[w](out, v, (count + 7) / 8);
}

// Reads exactly packedBytes(count, w) bytes (w <= kMaxWidth).
inline void unpackBits(const uint8_t *in, uint32_t *v, unsigned count,
                       uint32_t w) {
  kUnpack[w](in, v, count);
}

// Quantizes a block and fills s; q is 0 past len, res may be filled (see
// s.haveRes).
template <typename E>
inline void scanBlock(const uint8_t *x, unsigned len, const QuantParams &qp,
                      int32_t *q, uint32_t *res, BlockStats &s) {
#if defined(__SSE2__)
  if constexpr (std::is_same_v<E, F32>) {
    quantizeF32(x, len, qp, q, res, s);
    if (s.haveRes)
      return;
    reduceScalar(q, len, s);
    return;
  }
#endif
  (void)res;
  quantizeScalar<E>(x, len, qp, q, s);
  reduceScalar(q, len, s);
}

struct BlockPlan {
  uint8_t mode = kDense;
  uint8_t width = 0;
  uint8_t nnz = 0;
  uint8_t outliers = 0;
  uint32_t bytes = 0; // payload bytes, counts and outliers excluded
};

// Picks the cheapest mode for a block; ties go to the lower mode number.
// On return q holds the values the chosen mode codes (dense: outliers take
// their predecessor's code so that their residual is 0).
inline BlockPlan planBlock(int32_t *q, const BlockStats &s, unsigned len,
                           size_t elemSize) {
  const uint64_t badMask = s.bad;
  unsigned numBad = popcount64(badMask), nnz = popcount64(s.nz);
  uint64_t outlierCost = uint64_t(numBad) * kOutlierEntrySize;
  BlockPlan best;
  best.mode = kDense;
  best.width = uint8_t(bitWidth(s.resOr));
  best.bytes = uint32_t(packedBytes(len, best.width));
  best.outliers = uint8_t(numBad);
  uint64_t bestCost = best.bytes + outlierCost;

  uint8_t sw = uint8_t(s.allPos ? bitWidth(s.posOr) : bitWidth(s.zzOr));
  uint32_t sparseBytes = uint32_t(ceilDiv(len, 8) + packedBytes(nnz, sw));
  uint64_t sparseCost = sparseBytes + 1 + outlierCost;
  if (sparseCost < bestCost) {
    best.mode = s.allPos ? kSparsePositive : kSparseSigned;
    best.width = sw;
    best.bytes = sparseBytes;
    best.nnz = uint8_t(nnz);
    bestCost = sparseCost;
  }
  uint64_t rawCost = uint64_t(len) * elemSize;
  if (rawCost < bestCost) {
    best = BlockPlan();
    best.mode = kRawBlock;
    best.bytes = uint32_t(rawCost);
  }
  if (best.mode == kDense && badMask) {
    int32_t p = 0;
    for (unsigned i = 0; i < len; ++i) {
      if ((badMask >> i) & 1)
        q[i] = p;
      p = q[i];
    }
  }
  return best;
}

// Room for a staged block body: a sparse mask plus 8 groups of the widest
// values.
constexpr size_t kStageBytes = kBlockSize / 8 + kBlockSize / 8 * kMaxWidth;

// Writes the body of a dense or sparse block (plan.bytes bytes) into stage,
// which has room for kStageBytes; q is zero past len. res: the dense codes
// when s.haveRes.
inline void emitBody(const int32_t *q, uint32_t *res, unsigned len,
                     const BlockPlan &plan, const BlockStats &s,
                     uint8_t *stage) {
  alignas(64) uint32_t v[kBlockSize];
  if (plan.mode == kDense) {
    if (plan.width == 0)
      return;
    if (s.haveRes) {
      packBits(stage, res, len, plan.width);
      return;
    }
    v[0] = zigzag(q[0]);
    for (unsigned i = 1; i < kBlockSize; ++i)
      v[i] = zigzag(q[i] - q[i - 1]);
    packBits(stage, v, len, plan.width);
    return;
  }
  const uint64_t nz = s.nz;
  unsigned maskBytes = unsigned(ceilDiv(len, 8)), k = 0;
  std::memcpy(stage, &nz, maskBytes); // LSB first; bits past len are 0
  // Visit only the nonzeros: no branch on the data.
  if (plan.mode == kSparsePositive)
    for (uint64_t m = nz; m; m &= m - 1)
      v[k++] = uint32_t(q[__builtin_ctzll(m)] - 1);
  else
    for (uint64_t m = nz; m; m &= m - 1)
      v[k++] = zigzag(q[__builtin_ctzll(m)]);
  packBits(stage + maskBytes, v, k, plan.width);
}

// Quantizes, plans and writes one block: its body (exactly plan.bytes bytes)
// at dst; its outliers are the set bits of *badMask (none for raw blocks).
template <typename E>
inline BlockPlan encodeBlock(const uint8_t *x, unsigned len,
                             const QuantParams &qp, uint8_t *dst,
                             uint64_t *badMask) {
  alignas(64) int32_t q[kBlockSize];
  alignas(64) uint32_t res[kBlockSize];
  BlockStats s;
  scanBlock<E>(x, len, qp, q, res, s);
  BlockPlan plan = planBlock(q, s, len, E::size);
  if (plan.mode == kRawBlock) {
    std::memcpy(dst, x, size_t(len) * E::size);
    *badMask = 0; // raw blocks carry their outliers inline
    return plan;
  }
  alignas(64) uint8_t stage[kStageBytes];
  emitBody(q, res, len, plan, s, stage);
  std::memcpy(dst, stage, plan.bytes);
  *badMask = s.bad;
  return plan;
}

inline bool isSparse(uint8_t mode) {
  return mode == kSparseSigned || mode == kSparsePositive;
}

// Outlier indices of one range of blocks, in order. malloc-based so that
// running out of memory is a status, not an exception inside OpenMP.
struct IndexList {
  uint64_t *data = nullptr;
  size_t size = 0, cap = 0;
  bool failed = false;
  IndexList() = default;
  IndexList(const IndexList &) = delete;
  IndexList &operator=(const IndexList &) = delete;
  ~IndexList() { std::free(data); }
  void pushMask(uint64_t first, uint64_t mask) {
    for (; mask; mask &= mask - 1) {
      if (size == cap) {
        size_t nc = cap ? 2 * cap : 256;
        void *p = std::realloc(data, nc * sizeof(uint64_t));
        if (!p) {
          failed = true;
          return;
        }
        data = static_cast<uint64_t *>(p);
        cap = nc;
      }
      data[size++] = first + __builtin_ctzll(mask);
    }
  }
};

// One thread's contiguous range of blocks in the one-pass encoder.
struct Chunk {
  uint64_t b0 = 0, b1 = 0;
  uint8_t *begin = nullptr; // where its bodies were written
  uint64_t bytes = 0, sparse = 0;
  IndexList outliers;
};

template <typename E>
void writeOutlierValues(const uint8_t *x, const uint64_t *idx, uint64_t count,
                        uint8_t *outIdx, uint8_t *outVal) {
  for (uint64_t k = 0; k < count; ++k) {
    storeLE<uint64_t>(outIdx + 8 * k, idx[k]);
    storeLE<uint32_t>(outVal + 4 * k, E::bits(x + idx[k] * E::size));
  }
}

// One pass, for an output buffer of the worst-case size: each thread takes a
// contiguous range of blocks and writes their bodies back to back from the
// range's raw position after room for every count (a block's body never
// exceeds its raw bytes), then the bodies move down to their final offsets
// and the counts and outliers are filled in. The bytes are those of the
// two-pass encoder below.
template <typename E>
comet_rt_status compressSzOnePass(const uint8_t *x, Header &h,
                                  const QuantParams &qp, uint8_t *out,
                                  size_t *outSize) {
  const uint64_t n = h.n, nb = h.numBlocks;
  const uint64_t blockRaw = uint64_t(kBlockSize) * E::size;
  const unsigned nc =
      nb > kParallelBlocks ? unsigned(std::min<uint64_t>(numThreads(), nb)) : 1;
  std::unique_ptr<Chunk[]> chunks(new (std::nothrow) Chunk[nc]);
  std::unique_ptr<uint8_t[]> nnz(new (std::nothrow) uint8_t[nb ? nb : 1]);
  if (!chunks || !nnz)
    return COMET_RT_ERROR_OUT_OF_MEMORY;
  uint8_t *desc = out + kHeaderSize;
  uint8_t *staging = desc + 2 * nb;
  for (unsigned c = 0; c < nc; ++c) {
    chunks[c].b0 = nb / nc * c + std::min<uint64_t>(c, nb % nc);
    chunks[c].b1 = nb / nc * (c + 1) + std::min<uint64_t>(c + 1, nb % nc);
  }

#pragma omp parallel for num_threads(nc) schedule(static, 1) if (nc > 1)
  for (int c = 0; c < int(nc); ++c) {
    Chunk &ch = chunks[c];
    uint8_t *dst = ch.begin = staging + ch.b0 * blockRaw;
    for (uint64_t b = ch.b0; b < ch.b1; ++b) {
      unsigned len =
          unsigned(std::min<uint64_t>(kBlockSize, n - b * kBlockSize));
      uint64_t bad;
      BlockPlan p = encodeBlock<E>(x + b * blockRaw, len, qp, dst, &bad);
      desc[b] = uint8_t(p.mode << 6 | p.width);
      nnz[b] = p.nnz;
      ch.sparse += isSparse(p.mode);
      ch.outliers.pushMask(b * kBlockSize, bad);
      dst += p.bytes;
    }
    ch.bytes = uint64_t(dst - ch.begin);
  }

  uint64_t numSparse = 0, payloadBytes = 0, numOutliers = 0;
  for (unsigned c = 0; c < nc; ++c) {
    if (chunks[c].outliers.failed)
      return COMET_RT_ERROR_OUT_OF_MEMORY;
    numSparse += chunks[c].sparse;
    payloadBytes += chunks[c].bytes;
    numOutliers += chunks[c].outliers.size;
  }
  h.numSparse = numSparse;
  h.payloadBytes = payloadBytes;
  h.numOutliers = numOutliers;
  *outSize = size_t(kHeaderSize + nb + numSparse + payloadBytes +
                    numOutliers * kOutlierEntrySize);

  // Each range's bodies move down (never up: the final offset of a range is
  // at most its staging offset), in order, so no unread byte is overwritten.
  uint8_t *counts = desc + nb, *payload = counts + numSparse;
  uint8_t *dst = payload;
  for (unsigned c = 0; c < nc; ++c) {
    if (dst != chunks[c].begin)
      std::memmove(dst, chunks[c].begin, chunks[c].bytes);
    dst += chunks[c].bytes;
  }
  // The counts end before the payload starts: no overlap with the bodies.
  for (uint64_t b = 0, k = 0; b < nb; ++b)
    if (isSparse(desc[b] >> 6))
      counts[k++] = nnz[b];
  uint8_t *outIdx = payload + payloadBytes;
  uint8_t *outVal = outIdx + 8 * numOutliers;
  for (unsigned c = 0, k = 0; c < nc; ++c) {
    const IndexList &l = chunks[c].outliers;
    writeOutlierValues<E>(x, l.data, l.size, outIdx + 8 * k, outVal + 4 * k);
    k += l.size;
  }
  encodeHeader(h, out);
  return COMET_RT_SUCCESS;
}

template <typename E>
comet_rt_status compressSz(const uint8_t *x, Header &h, uint8_t *out,
                           size_t outCapacity, size_t *outSize) {
  QuantParams qp;
  if (!quantParams(h.eb, qp))
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  const uint64_t n = h.n, nb = ceilDiv(n, kBlockSize);
  h.blockSize = kBlockSize;
  h.numBlocks = nb;
  if (outCapacity >= kHeaderSize + 2 * nb + n * E::size)
    return compressSzOnePass<E>(x, h, qp, out, outSize);

  // A smaller buffer: plan every block first, so that nothing is written
  // past the stream's size and a too-small buffer is reported before any
  // write, then quantize again (cheaper than keeping n codes) and write.
  std::unique_ptr<BlockPlan[]> plans(new (std::nothrow) BlockPlan[nb ? nb : 1]);
  if (!plans)
    return COMET_RT_ERROR_OUT_OF_MEMORY;
  const int nt = numThreads();

#pragma omp parallel for num_threads(nt)                                       \
    schedule(static) if (nb > kParallelBlocks)
  for (int64_t b = 0; b < int64_t(nb); ++b) {
    unsigned len = unsigned(std::min<uint64_t>(kBlockSize, n - b * kBlockSize));
    alignas(64) int32_t q[kBlockSize];
    alignas(64) uint32_t res[kBlockSize];
    const uint8_t *xb = x + uint64_t(b) * kBlockSize * E::size;
    BlockStats s;
    scanBlock<E>(xb, len, qp, q, res, s);
    plans[b] = planBlock(q, s, len, E::size);
  }

  // Offsets: a prefix sum over block sizes (and over sparse and outlier
  // counts); the CUDA encoder does the same with a device scan.
  std::unique_ptr<uint64_t[]> off(new (std::nothrow) uint64_t[nb + 1]);
  std::unique_ptr<uint64_t[]> outOff(new (std::nothrow) uint64_t[nb + 1]);
  std::unique_ptr<uint64_t[]> sparseOff(new (std::nothrow) uint64_t[nb + 1]);
  if (!off || !outOff || !sparseOff)
    return COMET_RT_ERROR_OUT_OF_MEMORY;
  off[0] = outOff[0] = sparseOff[0] = 0;
  for (uint64_t b = 0; b < nb; ++b) {
    const BlockPlan &p = plans[b];
    off[b + 1] = off[b] + p.bytes;
    outOff[b + 1] = outOff[b] + p.outliers;
    sparseOff[b + 1] = sparseOff[b] + isSparse(p.mode);
  }
  h.numSparse = sparseOff[nb];
  h.payloadBytes = off[nb];
  h.numOutliers = outOff[nb];
  uint64_t total = kHeaderSize + nb + h.numSparse + h.payloadBytes +
                   h.numOutliers * kOutlierEntrySize;
  *outSize = size_t(total);
  if (total > outCapacity)
    return COMET_RT_ERROR_BUFFER_TOO_SMALL;

  uint8_t *desc = out + kHeaderSize;
  uint8_t *counts = desc + nb;
  uint8_t *payload = counts + h.numSparse;
  uint8_t *outIdx = payload + h.payloadBytes;
  uint8_t *outVal = outIdx + 8 * h.numOutliers;

#pragma omp parallel for num_threads(nt)                                       \
    schedule(static) if (nb > kParallelBlocks)
  for (int64_t b = 0; b < int64_t(nb); ++b) {
    unsigned len = unsigned(std::min<uint64_t>(kBlockSize, n - b * kBlockSize));
    const uint8_t *xb = x + uint64_t(b) * kBlockSize * E::size;
    uint64_t bad;
    BlockPlan p = encodeBlock<E>(xb, len, qp, payload + off[b], &bad);
    desc[b] = uint8_t(p.mode << 6 | p.width);
    if (isSparse(p.mode))
      counts[sparseOff[b]] = p.nnz;
    unsigned k = 0;
    for (uint64_t m = bad; m; m &= m - 1, ++k) {
      uint64_t i = uint64_t(b) * kBlockSize + __builtin_ctzll(m);
      storeLE<uint64_t>(outIdx + 8 * (outOff[b] + k), i);
      storeLE<uint32_t>(outVal + 4 * (outOff[b] + k), E::bits(x + i * E::size));
    }
  }
  encodeHeader(h, out);
  return COMET_RT_SUCCESS;
}

template <typename E>
comet_rt_status decompressSz(const uint8_t *in, const Header &h, uint8_t *out) {
  QuantParams qp;
  quantParams(h.eb, qp); // checked by parseHeader
  const uint64_t n = h.n, nb = h.numBlocks;
  const uint8_t *desc = in + kHeaderSize;
  const uint8_t *counts = desc + nb;
  const uint8_t *payload = counts + h.numSparse;
  const uint8_t *outIdx = payload + h.payloadBytes;
  const uint8_t *outVal = outIdx + 8 * h.numOutliers;

  // Block offsets from the descriptors and counts; every size is checked
  // before any payload byte is read.
  std::unique_ptr<uint64_t[]> off(new (std::nothrow) uint64_t[nb + 1]);
  if (!off)
    return COMET_RT_ERROR_OUT_OF_MEMORY;
  off[0] = 0;
  uint64_t sparseSeen = 0, outliersInBlocks = 0;
  for (uint64_t b = 0; b < nb; ++b) {
    unsigned len = unsigned(std::min<uint64_t>(kBlockSize, n - b * kBlockSize));
    uint8_t mode = desc[b] >> 6, w = desc[b] & 63;
    uint64_t bytes;
    if (mode == kRawBlock) {
      if (w != 0)
        return COMET_RT_ERROR_CORRUPT;
      bytes = uint64_t(len) * E::size;
    } else if (w > kMaxWidth) {
      return COMET_RT_ERROR_CORRUPT;
    } else if (mode == kDense) {
      bytes = packedBytes(len, w);
      outliersInBlocks += len;
    } else {
      if (sparseSeen >= h.numSparse)
        return COMET_RT_ERROR_CORRUPT;
      uint8_t nnz = counts[sparseSeen++];
      if (nnz > len)
        return COMET_RT_ERROR_CORRUPT;
      bytes = ceilDiv(len, 8) + packedBytes(nnz, w);
      outliersInBlocks += len;
    }
    off[b + 1] = off[b] + bytes;
    if (off[b + 1] > h.payloadBytes)
      return COMET_RT_ERROR_CORRUPT;
  }
  if (off[nb] != h.payloadBytes || sparseSeen != h.numSparse ||
      h.numOutliers > outliersInBlocks)
    return COMET_RT_ERROR_CORRUPT;

  std::atomic<bool> corrupt{false};
  std::unique_ptr<uint64_t[]> sparseIdx(new (std::nothrow) uint64_t[nb + 1]);
  if (!sparseIdx)
    return COMET_RT_ERROR_OUT_OF_MEMORY;
  sparseIdx[0] = 0;
  for (uint64_t b = 0; b < nb; ++b) {
    uint8_t mode = desc[b] >> 6;
    sparseIdx[b + 1] =
        sparseIdx[b] + (mode == kSparseSigned || mode == kSparsePositive);
  }

  const int nt = numThreads();
#pragma omp parallel for num_threads(nt)                                       \
    schedule(static) if (nb > kParallelBlocks)
  for (int64_t b = 0; b < int64_t(nb); ++b) {
    unsigned len = unsigned(std::min<uint64_t>(kBlockSize, n - b * kBlockSize));
    uint8_t mode = desc[b] >> 6, w = desc[b] & 63;
    const uint8_t *src = payload + off[b];
    uint8_t *dst = out + uint64_t(b) * kBlockSize * E::size;
    if (mode == kRawBlock) {
      std::memcpy(dst, src, size_t(len) * E::size);
      continue;
    }
    uint32_t v[kBlockSize];
    int32_t q[kBlockSize];
    if (mode == kDense) {
      unpackBits(src, v, len, w);
      uint32_t acc = 0; // wraps on corrupt input instead of overflowing
      for (unsigned i = 0; i < len; ++i) {
        acc += uint32_t(unzigzag(v[i]));
        q[i] = int32_t(acc);
      }
    } else {
      unsigned maskBytes = unsigned(ceilDiv(len, 8));
      unsigned nnz = counts[sparseIdx[b]], seen = 0;
      uint64_t maskBits = 0;
      std::memcpy(&maskBits, src, maskBytes);
      seen = popcount64(maskBits);
      bool tailClear = len % 8 == 0 || (src[maskBytes - 1] >> (len % 8)) == 0;
      if (seen != nnz || !tailClear) {
        corrupt.store(true, std::memory_order_relaxed);
        continue;
      }
      unpackBits(src + maskBytes, v, nnz, w);
      // Scatter by visiting the mask's set bits: no branch on the data.
      std::fill(q, q + kBlockSize, 0);
      unsigned k = 0;
      if (mode == kSparsePositive)
        for (uint64_t m = maskBits; m; m &= m - 1)
          q[__builtin_ctzll(m)] = int32_t(v[k++] + 1);
      else
        for (uint64_t m = maskBits; m; m &= m - 1)
          q[__builtin_ctzll(m)] = unzigzag(v[k++]);
    }
    for (unsigned i = 0; i < len; ++i)
      E::storeBits(dst + i * E::size, dequantize<E>(q[i], qp));
  }
  if (corrupt.load())
    return COMET_RT_ERROR_CORRUPT;

  // Outliers: strictly increasing indices into non-raw blocks.
  uint64_t prevIdx = 0;
  for (uint64_t k = 0; k < h.numOutliers; ++k) {
    uint64_t i = loadLE<uint64_t>(outIdx + 8 * k);
    uint32_t bits = loadLE<uint32_t>(outVal + 4 * k);
    if (i >= n || (k > 0 && i <= prevIdx) ||
        (desc[i / kBlockSize] >> 6) == kRawBlock ||
        (E::size == 2 && bits > 0xFFFFu))
      return COMET_RT_ERROR_CORRUPT;
    prevIdx = i;
    E::storeBits(out + i * E::size, bits);
  }
  return COMET_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// sz, version 2: chunks of kChunkBlocks blocks, each coded on its own.
//===----------------------------------------------------------------------===//

using format::kChunkBlocks;
using format::kChunkElems;
using format::kChunkHeaderSize;
using format::kMaxRiceBytes;
using format::kV2Dense;
using format::kV2Raw;
using format::kV2RiceLorenzo;
using format::kV2RiceLorenzo2d;
using format::kV2RicePlain;
using format::kV2SparsePositive;
using format::kV2SparseSigned;

// Chunks per thread that the encoder stages at a time when the output is
// smaller than the worst case (about 0.5 MiB per thread for f32).
constexpr uint64_t kWaveChunks = 32;

// The instruction set of the encoder's hot loops; the bytes never depend
// on it.
std::atomic<int> gIsa{COMET_RT_CODEC_ISA_AUTO};

bool cpuHasAvx2() {
#if defined(COMET_CODEC_HAVE_AVX2)
  // The AVX2 encoder also uses BMI2's shifts (every AVX2 CPU has them).
  static const bool has = __builtin_cpu_supports("avx2") &&
                          __builtin_cpu_supports("bmi") &&
                          __builtin_cpu_supports("bmi2");
  return has;
#else
  return false;
#endif
}

// Whether the encoder tries coded chunks (mode 7): a comet_rt_codec_entropy.
std::atomic<int> gEntropy{COMET_RT_CODEC_ENTROPY_AUTO};

bool useAvx2() {
  int isa = gIsa.load(std::memory_order_relaxed);
  return isa == COMET_RT_CODEC_ISA_AVX2 ||
         (isa == COMET_RT_CODEC_ISA_AUTO && cpuHasAvx2());
}

template <typename E, bool Avx2>
inline void scanBlockIsa(const uint8_t *x, unsigned len, const QuantParams &qp,
                         int32_t *q, uint32_t *res, BlockStats &s) {
#if defined(COMET_CODEC_HAVE_AVX2)
  if constexpr (Avx2 && std::is_same_v<E, F32>) {
    quantizeF32Avx2(x, len, qp, q, res, s);
    if (!s.haveRes)
      reduceScalar(q, len, s);
    return;
  }
#endif
  scanBlock<E>(x, len, qp, q, res, s);
}

inline size_t worstChunkBytes(uint64_t len, size_t elemSize) {
  return kChunkHeaderSize + 2 * ceilDiv(len, kBlockSize) + len * elemSize;
}

// The cheapest Golomb-Rice parameter k for v[0..len) (values < 2^25) among
// m - 1, m, m + 1 with m = floor(log2(mean)) (the optimum for geometric data
// is within one of it), and its cost in bits; ties go to the lower k. A
// value costs (v >> k) + 1 + k bits. All sums fit 32 bits (64 values).
template <unsigned Len>
inline uint64_t bestRiceN(const uint32_t *v, unsigned len, unsigned &kOut) {
  const unsigned n = Len ? Len : len;
  uint32_t sum = 0;
  for (unsigned i = 0; i < n; ++i)
    sum += v[i];
  uint32_t mean = sum / n;
  unsigned k0 = mean ? 31 - __builtin_clz(mean) : 0;
  unsigned lo = k0 ? k0 - 1 : 0;
  uint32_t s0 = 0, s1 = 0, s2 = 0; // sums of v >> lo, lo + 1, lo + 2
  for (unsigned i = 0; i < n; ++i) {
    uint32_t x = v[i] >> lo;
    s0 += x;
    s1 += x >> 1;
    s2 += x >> 2;
  }
  const uint32_t sums[3] = {s0, s1, s2};
  const unsigned hi = std::min<unsigned>(k0 + 1, kMaxWidth);
  uint64_t best = ~uint64_t(0);
  for (unsigned k = lo; k <= hi; ++k) {
    uint64_t b = uint64_t(sums[k - lo]) + uint64_t(n) * (k + 1);
    if (b < best) {
      best = b;
      kOut = k;
    }
  }
  return best;
}

inline uint64_t bestRice(const uint32_t *v, unsigned len, unsigned &kOut) {
  return len == kBlockSize ? bestRiceN<kBlockSize>(v, len, kOut)
                           : bestRiceN<0>(v, len, kOut);
}

// LSB-first bit writer into a zeroed buffer.
struct BitWriter {
  uint8_t *p;
  uint64_t acc = 0;
  unsigned n = 0;                       // bits in acc
  size_t pos = 0;                       // bytes flushed
  void put(uint64_t v, unsigned bits) { // bits <= 32
    acc |= v << n;
    n += bits;
    if (n >= 32) {
      storeLE<uint32_t>(p + pos, uint32_t(acc));
      pos += 4;
      acc >>= 32;
      n -= 32;
    }
  }
  size_t finish() {
    while (n > 0) {
      p[pos++] = uint8_t(acc);
      acc >>= 8;
      n = n > 8 ? n - 8 : 0;
    }
    return pos;
  }
};

// The Rice code of x with parameter k.
inline void ricePut(BitWriter &w, uint32_t x, unsigned k) {
  const uint32_t lowMask = (uint32_t(1) << k) - 1;
  uint32_t u = x >> k;
  if (u + 1 + k <= 32) { // the common case: one write of both parts
    w.put((uint64_t(x & lowMask) << (u + 1)) | (uint64_t(1) << u), u + 1 + k);
    return;
  }
  for (; u >= 31; u -= 31)
    w.put(0, 31);
  w.put(uint64_t(1) << u, u + 1);
  if (k)
    w.put(x & lowMask, k);
}

inline size_t riceEncode(const uint32_t *v, unsigned len, unsigned k,
                         uint8_t *out) {
  BitWriter w{out};
  for (unsigned i = 0; i < len; ++i)
    ricePut(w, v[i], k);
  return w.finish();
}

// Decodes len values from exactly `bytes` bytes; false unless the codes end
// in the last byte, its padding bits are 0 and every value is below 2^25.
inline bool riceDecode(const uint8_t *in, unsigned bytes, unsigned k,
                       unsigned len, uint32_t *v) {
  uint8_t buf[kMaxRiceBytes + 8];
  std::memcpy(buf, in, bytes);
  std::memset(buf + bytes, 0, 8); // what the 8-byte loads see past the end
  const uint64_t end = uint64_t(bytes) * 8;
  uint64_t pos = 0;
  for (unsigned i = 0; i < len; ++i) {
    uint32_t u = 0;
    for (;;) {
      if (pos >= end)
        return false;
      uint64_t word = loadLE<uint64_t>(buf + pos / 8) >> (pos % 8);
      if (word) {
        unsigned z = __builtin_ctzll(word);
        u += z;
        pos += z + 1;
        break;
      }
      u += 64 - unsigned(pos % 8);
      pos += 64 - pos % 8;
    }
    if (pos + k > end || (u >> (kMaxWidth + 1 - k)) != 0)
      return false;
    uint32_t low = 0;
    if (k)
      low = uint32_t(loadLE<uint64_t>(buf + pos / 8) >> (pos % 8)) &
            ((uint32_t(1) << k) - 1);
    pos += k;
    v[i] = u << k | low;
  }
  if (ceilDiv(pos, 8) != bytes)
    return false;
  return pos % 8 == 0 || (buf[bytes - 1] >> (pos % 8)) == 0;
}

// Where the 2D Lorenzo predictor (mode 6) finds an element's neighbours:
// rows of w elements in planes of hw, the tensor's last two dims; w = 0 for
// rank < 2 (no mode 6).
struct Grid {
  uint64_t w = 0, hw = 0;
};

// The mode 6 values of chunk elements [i0, i0 + len): zigzag(r[i] - pred)
// with pred from r's left, upper and upper-left neighbours inside the chunk
// (c0: the chunk's first flat index). r holds the chunk's reference codes.
__attribute__((always_inline)) inline void lorenzo2d(const int32_t *r,
                                                     unsigned i0, unsigned len,
                                                     uint64_t c0, const Grid &g,
                                                     uint32_t *out) {
  uint64_t col = (c0 + i0) % g.w, inPlane = (c0 + i0) % g.hw;
  if (i0 >= g.w + 1 && inPlane >= g.w && inPlane + len <= g.hw) {
    // Fast path, the same values: every element has its upper neighbours
    // in the chunk and the plane, so only the first column lacks a left one.
    const int32_t *a = r + i0 - 1, *b = r + i0 - g.w, *c = r + i0 - g.w - 1;
    const int32_t *x = r + i0;
    for (unsigned j = 0; j < len; ++j)
      out[j] = zigzag(int32_t(
          uint32_t(x[j]) - (uint32_t(a[j]) + uint32_t(b[j]) - uint32_t(c[j]))));
    for (uint64_t j = col ? g.w - col : 0; j < len; j += g.w)
      out[j] = zigzag(int32_t(uint32_t(x[j]) - uint32_t(b[j])));
    return;
  }
  for (unsigned j = 0; j < len; ++j) {
    const unsigned i = i0 + j;
    const bool left = col > 0 && i >= 1, up = inPlane >= g.w && i >= g.w;
    uint32_t pred = 0;
    if (left && up && i >= g.w + 1)
      pred =
          uint32_t(r[i - 1]) + uint32_t(r[i - g.w]) - uint32_t(r[i - g.w - 1]);
    else if (left)
      pred = uint32_t(r[i - 1]);
    else if (up)
      pred = uint32_t(r[i - g.w]);
    out[j] = zigzag(int32_t(uint32_t(r[i]) - pred));
    if (++col == g.w)
      col = 0;
    if (++inPlane == g.hw)
      inPlane = 0;
  }
}

// Decodes mode 6: r[i0 + j] = unzigzag(v[j]) + pred, in element order.
inline void unLorenzo2d(int32_t *r, unsigned i0, unsigned len, uint64_t c0,
                        const Grid &g, const uint32_t *v) {
  uint64_t col = (c0 + i0) % g.w, inPlane = (c0 + i0) % g.hw;
  for (unsigned j = 0; j < len; ++j) {
    const unsigned i = i0 + j;
    const bool left = col > 0 && i >= 1, up = inPlane >= g.w && i >= g.w;
    uint32_t pred = 0;
    if (left && up && i >= g.w + 1)
      pred =
          uint32_t(r[i - 1]) + uint32_t(r[i - g.w]) - uint32_t(r[i - g.w - 1]);
    else if (left)
      pred = uint32_t(r[i - 1]);
    else if (up)
      pred = uint32_t(r[i - g.w]);
    r[i] = int32_t(uint32_t(unzigzag(v[j])) + pred); // wraps on bad input
    if (++col == g.w)
      col = 0;
    if (++inPlane == g.hw)
      inPlane = 0;
  }
}

inline Grid gridOf(const Header &h) {
  Grid g;
  if (h.rank >= 2 && h.n) {
    g.w = h.dims[h.rank - 1];
    g.hw = g.w * h.dims[h.rank - 2]; // <= n: no overflow
  }
  return g;
}

//===----------------------------------------------------------------------===//
// Coded chunks (mode 7): a binary range coder with adaptive probabilities
// (LZMA's: 11-bit probabilities, shift-5 updates, carry through a cached
// byte) over the residuals of one predictor, with contexts from the left
// and upper neighbours' values. It goes below one bit per value where the
// Rice modes cannot (near-constant codes) and fits any distribution's
// shape; it is chunk-local and one pass, so a GPU can run it one thread per
// chunk.
//===----------------------------------------------------------------------===//

using format::kCodedChunkFlag;
using format::kNumPredictors;
using format::kPredLeft;
using format::kPredLorenzo2d;
using format::kPredPlain;
using format::kPredUp;
using format::kV2Coded;

constexpr unsigned kProbBits = 11, kProbMove = 5;
constexpr uint16_t kProbInit = 1 << (kProbBits - 1);
constexpr uint32_t kRangeTop = uint32_t(1) << 24;
constexpr unsigned kNumContexts = 9, kNumLenContexts = 16, kWideContext = 4;
// A coded chunk's fixed part: the chunk header, the descriptor and the u16
// length of the range coder's bytes.
constexpr uint32_t kCodedHeaderSize = kChunkHeaderSize + 3;
constexpr uint32_t kMinRangeBytes = 5;
// AUTO's gate: the bits a value of a near-constant block (see
// encodeChunkBody).
constexpr unsigned kAutoBits = 2;

// Branch-free: the bit lengths of residuals are data, not a pattern.
inline unsigned bitLength(uint32_t v) {
  return 32 - __builtin_clz(v | 1) - (v == 0);
}

struct CodedModel {
  uint16_t nz[kNumContexts], gt1[kNumContexts], gt2[kNumContexts];
  uint16_t len[kNumLenContexts][32]; // a 5-level binary tree, nodes 1..31
  CodedModel() {
    std::fill(std::begin(nz), std::end(nz), kProbInit);
    std::fill(std::begin(gt1), std::end(gt1), kProbInit);
    std::fill(std::begin(gt2), std::end(gt2), kProbInit);
    for (auto &t : len)
      std::fill(std::begin(t), std::end(t), kProbInit);
  }
};

// The contexts of chunk element i from the values v of its left (i - 1)
// and upper (i - w) elements in the chunk: nz's from their values capped
// at 2, the length tree's from their bit lengths.
struct CodedContext {
  unsigned nz, len;
};
inline CodedContext codedContext(const uint32_t *v, unsigned i, uint64_t w) {
  const uint32_t l = i ? v[i - 1] : 0;
  const uint32_t u = w ? (i >= w ? v[i - w] : 0) : l;
  const unsigned a = bitLength(l), b = bitLength(u);
  return {3 * std::min<uint32_t>(l, 2) + (w ? std::min<uint32_t>(u, 2) : 0),
          std::min<unsigned>((a + b + 1) / 2, kNumLenContexts - 1)};
}

// Writes at most cap bytes; `over` is set when more were needed.
struct RangeEncoder {
  uint8_t *out;
  size_t cap, pos = 0;
  uint64_t low = 0, cacheSize = 1;
  uint32_t range = 0xFFFFFFFFu;
  uint8_t cache = 0;
  bool over = false;
  void emit(uint8_t b) {
    if (pos < cap)
      out[pos] = b;
    else
      over = true;
    ++pos;
  }
  void shiftLow() {
    if (uint32_t(low) < 0xFF000000u || (low >> 32) != 0) {
      const uint8_t carry = uint8_t(low >> 32);
      uint8_t t = cache;
      do {
        emit(uint8_t(t + carry));
        t = 0xFF;
      } while (--cacheSize != 0);
      cache = uint8_t(low >> 24);
    }
    ++cacheSize;
    low = (low & 0x00FFFFFFu) << 8;
  }
  // Probabilities stay in [31, 2017], so one renormalization suffices.
  void bit(uint16_t &p, unsigned b) {
    const uint32_t bound = (range >> kProbBits) * p;
    low += bound & (0u - b);
    range = b ? range - bound : bound;
    p = b ? uint16_t(p - (p >> kProbMove))
          : uint16_t(p + (((1u << kProbBits) - p) >> kProbMove));
    if (range < kRangeTop) {
      range <<= 8;
      shiftLow();
    }
  }
  size_t finish() {
    for (int i = 0; i < 5; ++i)
      shiftLow();
    return pos;
  }
};

// Reads only [p, end); `bad` is set on reading past it.
struct RangeDecoder {
  const uint8_t *p, *end;
  uint32_t range = 0xFFFFFFFFu, code = 0;
  bool bad = false;
  RangeDecoder(const uint8_t *in, size_t size) : p(in), end(in + size) {
    if (size < kMinRangeBytes || in[0] != 0) {
      bad = true;
      return;
    }
    for (int i = 1; i < 5; ++i)
      code = code << 8 | in[i];
    p += 5;
    bad = code == 0xFFFFFFFFu;
  }
  unsigned bit(uint16_t &prob) {
    const uint32_t bound = (range >> kProbBits) * prob;
    const unsigned b = code >= bound;
    code -= bound & (0u - b);
    range = b ? range - bound : bound;
    prob = b ? uint16_t(prob - (prob >> kProbMove))
             : uint16_t(prob + (((1u << kProbBits) - prob) >> kProbMove));
    if (range < kRangeTop) {
      range <<= 8;
      if (p == end)
        bad = true;
      else
        code = code << 8 | *p++;
    }
    return b;
  }
  // A valid stream ends with every byte read and the code at 0.
  bool finished() const { return !bad && p == end && code == 0; }
};

// LSB-first reader of the raw bits; `bad` past the end.
struct RawBitReader {
  const uint8_t *p;
  uint64_t size, pos = 0; // bits
  bool bad = false;
  uint32_t get(unsigned bits) { // bits <= 25
    if (pos + bits > size * 8) {
      bad = true;
      return 0;
    }
    uint64_t word = 0;
    const uint64_t byte = pos / 8;
    std::memcpy(&word, p + byte, std::min<uint64_t>(8, size - byte));
    pos += bits;
    return uint32_t(word >> (pos - bits - byte * 8)) & ((1u << bits) - 1);
  }
};

// A number below 32 as a 5-level binary tree, most significant bit first;
// t[node] for nodes 1..31.
inline void encodeTree(RangeEncoder &rc, uint16_t *t, unsigned x) {
  unsigned node = 1;
  for (int j = 4; j >= 0; --j) {
    const unsigned b = (x >> j) & 1;
    rc.bit(t[node], b);
    node = node * 2 + b;
  }
}
inline unsigned decodeTree(RangeDecoder &rc, uint16_t *t) {
  unsigned node = 1;
  for (int j = 0; j < 5; ++j)
    node = node * 2 + rc.bit(t[node]);
  return node - 32;
}

// Where the neighbours are wide (len context >= kWideContext): L = the bit
// length of v (0..25) as a tree (models len[lctx]) and the L - 1 bits of v
// below its leading one, raw. Else v != 0, v >= 2, v >= 3 (models nz, gt1,
// gt2 [ctx]); then for
// u = v - 2, L = floor(log2 u) (0..24) as a 5-bit binary tree, most
// significant bit first (models len[lctx]), and the L bits of u below its
// leading one, raw.
inline void encodeValue(RangeEncoder &rc, BitWriter &raw, CodedModel &m,
                        CodedContext c, uint32_t v) {
  if (c.len >= kWideContext) {
    const unsigned l = bitLength(v);
    encodeTree(rc, m.len[c.len], l);
    if (l >= 2)
      raw.put(v & ((1u << (l - 1)) - 1), l - 1);
    return;
  }
  rc.bit(m.nz[c.nz], v != 0);
  if (!v)
    return;
  rc.bit(m.gt1[c.nz], v >= 2);
  if (v < 2)
    return;
  rc.bit(m.gt2[c.nz], v >= 3);
  if (v < 3)
    return;
  const uint32_t u = v - 2;
  const unsigned l = 31 - __builtin_clz(u);
  encodeTree(rc, m.len[c.len], l);
  if (l)
    raw.put(u & ((1u << l) - 1), l);
}

inline bool decodeValue(RangeDecoder &rc, RawBitReader &raw, CodedModel &m,
                        CodedContext c, uint32_t &v) {
  if (c.len >= kWideContext) {
    const unsigned l = decodeTree(rc, m.len[c.len]);
    if (l > kMaxWidth + 1)
      return false;
    v = l == 0 ? 0 : l == 1 ? 1 : (1u << (l - 1)) | raw.get(l - 1);
    return v < (uint32_t(1) << (kMaxWidth + 1));
  }
  if (!rc.bit(m.nz[c.nz])) {
    v = 0;
    return true;
  }
  if (!rc.bit(m.gt1[c.nz])) {
    v = 1;
    return true;
  }
  if (!rc.bit(m.gt2[c.nz])) {
    v = 2;
    return true;
  }
  const unsigned l = decodeTree(rc, m.len[c.len]);
  if (l > kMaxWidth)
    return false;
  v = ((1u << l) | (l ? raw.get(l) : 0)) + 2;
  return v < (uint32_t(1) << (kMaxWidth + 1));
}

// The prediction of chunk element i from the reference codes r before it
// (c0: the chunk's first flat index; col, inPlane: (c0 + i) modulo the last
// dim and the last two dims' product); the neighbour rules of mode 6.
inline uint32_t predictCoded(unsigned pred, const int32_t *r, unsigned i,
                             uint64_t col, uint64_t inPlane, const Grid &g) {
  if (pred == kPredPlain)
    return 0;
  if (pred == kPredLeft)
    return i ? uint32_t(r[i - 1]) : 0;
  const bool left = col != 0 && i >= 1;
  const bool up = inPlane >= g.w && i >= g.w;
  if (pred == kPredLorenzo2d && left && up && i >= g.w + 1)
    return uint32_t(r[i - 1]) + uint32_t(r[i - g.w]) - uint32_t(r[i - g.w - 1]);
  if (pred == kPredUp && up)
    return uint32_t(r[i - g.w]);
  if (left)
    return uint32_t(r[i - 1]);
  if (up)
    return uint32_t(r[i - g.w]);
  return 0;
}

// The values of chunk elements [i0, i0 + len) under predictor `pred`.
__attribute__((always_inline)) inline void
predictBlock(unsigned pred, const int32_t *r, unsigned i0, unsigned len,
             uint64_t c0, const Grid &g, uint32_t *v) {
  const int32_t *x = r + i0;
  if (pred == kPredPlain) {
    for (unsigned j = 0; j < len; ++j)
      v[j] = zigzag(x[j]);
    return;
  }
  if (pred == kPredLorenzo2d)
    return lorenzo2d(r, i0, len, c0, g, v);
  if (pred == kPredLeft && i0) {
    const int32_t *left = x - 1;
    for (unsigned j = 0; j < len; ++j)
      v[j] = zigzag(int32_t(uint32_t(x[j]) - uint32_t(left[j])));
    return;
  }
  uint64_t col = g.w ? (c0 + i0) % g.w : 0;
  uint64_t inPlane = g.w ? (c0 + i0) % g.hw : 0;
  if (pred == kPredUp && i0 >= g.w && inPlane >= g.w && inPlane + len <= g.hw) {
    const int32_t *up = x - g.w; // every element has its upper one
    for (unsigned j = 0; j < len; ++j)
      v[j] = zigzag(int32_t(uint32_t(x[j]) - uint32_t(up[j])));
    return;
  }
  for (unsigned j = 0; j < len; ++j) {
    v[j] = zigzag(int32_t(uint32_t(x[j]) -
                          predictCoded(pred, r, i0 + j, col, inPlane, g)));
    if (g.w) {
      if (++col == g.w)
        col = 0;
      if (++inPlane == g.hw)
        inPlane = 0;
    }
  }
}

// The values of the present blocks' elements under predictor `pred`, 0
// elsewhere. r: the chunk's reference codes (0 at outliers and in absent
// blocks).
__attribute__((always_inline)) inline void
codedValues(unsigned pred, const int32_t *r, unsigned len, uint64_t bitmap,
            uint64_t c0, const Grid &g, uint32_t *v) {
  std::memset(v, 0, len * sizeof(uint32_t));
  for (uint64_t m = bitmap; m; m &= m - 1) {
    const unsigned i0 = __builtin_ctzll(m) * kBlockSize;
    predictBlock(pred, r, i0, std::min<unsigned>(kBlockSize, len - i0), c0, g,
                 v + i0);
  }
}

// The sum of bitLength(v[i]) over i < n, for values below 2^25.
template <bool Avx2>
__attribute__((always_inline)) inline uint64_t bitLengthSum(const uint32_t *v,
                                                            unsigned n);

// The encoder's choice of predictor: the least sum of the values' bit
// lengths over every fourth present block (the first, fifth, ...), ties to
// the lower number.
template <bool Avx2>
__attribute__((always_inline)) inline unsigned
choosePredictor(const int32_t *r, unsigned len, uint64_t bitmap, uint64_t c0,
                const Grid &g) {
  uint64_t cost[kNumPredictors] = {};
  const unsigned np = g.w ? kNumPredictors : kPredLeft + 1;
  unsigned k = 0;
  alignas(64) uint32_t v[kBlockSize];
  for (uint64_t m = bitmap; m; m &= m - 1, ++k) {
    if (k % 4)
      continue;
    const unsigned i0 = __builtin_ctzll(m) * kBlockSize;
    const unsigned bl = std::min<unsigned>(kBlockSize, len - i0);
    for (unsigned p = 0; p < np; ++p) {
      predictBlock(p, r, i0, bl, c0, g, v);
      cost[p] += bitLengthSum<Avx2>(v, bl);
    }
  }
  unsigned best = kPredPlain;
  for (unsigned pred = 1; pred < np; ++pred)
    if (cost[pred] < cost[best])
      best = pred;
  return best;
}

// Codes the present blocks' values v (in element order): the range coder's
// bytes at out, then the raw bits; returns their total size, or 0 if it
// would exceed cap or the range coder's bytes 65535. rcBytes: the first
// part's size.
inline size_t encodeCoded(const uint32_t *v, unsigned len, uint64_t bitmap,
                          const Grid &g, uint8_t *out, size_t cap,
                          size_t &rcBytes) {
  CodedModel m;
  RangeEncoder rc{out, cap};
  alignas(64) uint8_t rawBuf[kChunkElems * 3 + 8];
  BitWriter raw{rawBuf};
  const uint64_t w = g.w;
  for (uint64_t bm = bitmap; bm; bm &= bm - 1) {
    const unsigned i0 = __builtin_ctzll(bm) * kBlockSize;
    const unsigned bl = std::min<unsigned>(kBlockSize, len - i0);
    for (unsigned i = i0; i < i0 + bl; ++i)
      encodeValue(rc, raw, m, codedContext(v, i, w), v[i]);
    if (rc.over)
      return 0;
  }
  rcBytes = rc.finish();
  const size_t rawBytes = raw.finish();
  if (rc.over || rcBytes > 0xFFFF || rcBytes + rawBytes > cap)
    return 0;
  std::memcpy(out + rcBytes, rawBuf, rawBytes);
  return rcBytes + rawBytes;
}

//===----------------------------------------------------------------------===//
// Rice-coded chunks (mode 7, coder 1): the coded chunk's values and length
// contexts, but each value Golomb-Rice coded with the k its context has in a
// per-chunk table. The contexts carry what makes the range coder win on dense
// and GELU data (the magnitude of the left and upper residuals: a feature's
// scale), at a cost of a few table lookups and one bit write per value.
//===----------------------------------------------------------------------===//

using format::kCoderRange;
using format::kCoderRice;
using format::kNumCoders;
using format::kRiceContexts;
using format::kRiceTableBytes;

// The chunk header, the descriptor and the k table.
constexpr uint32_t kRiceHeaderSize = kChunkHeaderSize + 1 + kRiceTableBytes;

inline unsigned lenContext(unsigned a, unsigned b) {
  return std::min<unsigned>((a + b + 1) / 2, kRiceContexts - 1);
}

// Plans a Rice-coded chunk over the present blocks' values v (0 elsewhere):
// every present element's length context (ctx) and each context's k, the
// least k (at most 24) with count * 2^k >= the sum of its values (JPEG-LS's
// rule; 0 for an unused context).
#if defined(COMET_CODEC_HAVE_AVX2)
// bl[i] = bitLength(v[i]) for values below 2^25, 8 lanes: v >> 1 converts
// to float exactly, and its exponent gives the length.
__attribute__((target("avx2"))) inline void
bitLengthsAvx2(const uint32_t *v, unsigned n, uint32_t *bl) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  const __m256i bias = _mm256_set1_epi32(126);
  unsigned i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i x =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(v + i));
    const __m256 f = _mm256_cvtepi32_ps(_mm256_srli_epi32(x, 1));
    __m256i e =
        _mm256_sub_epi32(_mm256_srli_epi32(_mm256_castps_si256(f), 23), bias);
    e = _mm256_add_epi32(_mm256_max_epi32(e, zero), one);
    e = _mm256_andnot_si256(_mm256_cmpeq_epi32(x, zero), e);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(bl + i), e);
  }
  for (; i < n; ++i)
    bl[i] = bitLength(v[i]);
}
#endif

template <bool Avx2>
__attribute__((always_inline)) inline uint64_t bitLengthSum(const uint32_t *v,
                                                            unsigned n) {
#if defined(COMET_CODEC_HAVE_AVX2)
  if constexpr (Avx2) {
    alignas(64) uint32_t bl[kBlockSize];
    uint64_t sum = 0;
    for (unsigned i0 = 0; i0 < n; i0 += kBlockSize) {
      const unsigned m = std::min<unsigned>(kBlockSize, n - i0);
      bitLengthsAvx2(v + i0, m, bl);
      uint32_t s = 0;
      for (unsigned i = 0; i < m; ++i)
        s += bl[i];
      sum += s;
    }
    return sum;
  }
#endif
  uint64_t sum = 0;
  for (unsigned i = 0; i < n; ++i)
    sum += bitLength(v[i]);
  return sum;
}

template <bool Avx2>
__attribute__((always_inline)) inline void
planRiceChunk(const uint32_t *v, unsigned len, uint64_t bitmap, uint64_t w,
              uint8_t *ctx, uint8_t *kTable) {
  alignas(64) uint32_t bl[kChunkElems];
#if defined(COMET_CODEC_HAVE_AVX2)
  if constexpr (Avx2)
    bitLengthsAvx2(v, len, bl);
  else
#endif
    for (unsigned i = 0; i < len; ++i)
      bl[i] = bitLength(v[i]);
  // Every element's context (absent ones unused), in loops without
  // branches: the left neighbour's length, the upper one's (0 above the
  // chunk's first row; the left one's again for rank < 2).
  ctx[0] = 0;
  if (!w) {
    for (unsigned i = 1; i < len; ++i)
      ctx[i] = uint8_t(std::min<uint32_t>(bl[i - 1], kRiceContexts - 1));
  } else {
    const unsigned top = unsigned(std::min<uint64_t>(w, len));
    for (unsigned i = 1; i < top; ++i)
      ctx[i] =
          uint8_t(std::min<uint32_t>((bl[i - 1] + 1) >> 1, kRiceContexts - 1));
    for (unsigned i = top; i < len; ++i)
      ctx[i] = uint8_t(std::min<uint32_t>((bl[i - 1] + bl[i - w] + 1) >> 1,
                                          kRiceContexts - 1));
  }
  // Neighbouring elements mostly share a context: four copies of the
  // counters (element i updates copy i % 4) break the chains of updates
  // through memory.
  // Count and sum share one word: the count (at most 4096) in the low 13
  // bits, the sum (below 4096 * 2^25) above.
  constexpr unsigned kCopies = 4, kCountBits = 13;
  uint64_t acc[kCopies][kRiceContexts] = {};
  for (uint64_t m = bitmap; m; m &= m - 1) {
    const unsigned i0 = __builtin_ctzll(m) * kBlockSize;
    const unsigned i1 = std::min<unsigned>(i0 + kBlockSize, len);
    for (unsigned i = i0; i < i1; ++i)
      acc[i % kCopies][ctx[i]] += uint64_t(v[i]) << kCountBits | 1;
  }
  for (unsigned j = 0; j < kRiceContexts; ++j) {
    uint64_t n = 0, s = 0;
    for (unsigned c = 0; c < kCopies; ++c) {
      n += acc[c][j] & ((uint64_t(1) << kCountBits) - 1);
      s += acc[c][j] >> kCountBits;
    }
    unsigned k = 0;
    while (k < kMaxWidth && (n << (k + 1)) < s)
      ++k;
    kTable[j] = uint8_t(k);
  }
}

// Writes the k table and the Rice codes of a planned chunk at out, which
// has room for cap bytes plus kRiceSlack; returns the bytes, or 0 if they
// exceed cap.
constexpr size_t kRiceSlack = 64 * 8 + 16;

#if defined(COMET_CODEC_HAVE_AVX2)
// The Rice codes (code[j], clen[j] bits) of a block's 64 values, k from the
// contexts through the table; false if one of the first bl is longer than
// 32 bits.
__attribute__((target("avx2"))) inline bool
riceCodesAvx2(const uint32_t *v, const uint8_t *ctx, const uint8_t *kTable,
              unsigned bl, uint32_t *code, uint32_t *clen) {
  const __m128i table =
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(kTable));
  const __m256i one = _mm256_set1_epi32(1), limit = _mm256_set1_epi32(32);
  uint64_t longMask = 0;
  for (unsigned j = 0; j < kBlockSize; j += 16) {
    const __m128i k8 = _mm_shuffle_epi8(
        table, _mm_loadu_si128(reinterpret_cast<const __m128i *>(ctx + j)));
    for (unsigned h = 0; h < 16; h += 8) {
      const __m256i k = _mm256_cvtepu8_epi32(h ? _mm_srli_si128(k8, 8) : k8);
      const __m256i x =
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(v + j + h));
      const __m256i u = _mm256_srlv_epi32(x, k);
      const __m256i u1 = _mm256_add_epi32(u, one);
      const __m256i low =
          _mm256_and_si256(x, _mm256_sub_epi32(_mm256_sllv_epi32(one, k), one));
      const __m256i c = _mm256_or_si256(_mm256_sllv_epi32(low, u1),
                                        _mm256_sllv_epi32(one, u));
      const __m256i l = _mm256_add_epi32(u1, k);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(code + j + h), c);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(clen + j + h), l);
      longMask |= uint64_t(unsigned(_mm256_movemask_ps(
                      _mm256_castsi256_ps(_mm256_cmpgt_epi32(l, limit)))))
                  << (j + h);
    }
  }
  if (bl < kBlockSize)
    longMask &= (uint64_t(1) << bl) - 1;
  return longMask == 0;
}
#endif

// Writes the k table and the Rice codes of a planned chunk at out, which
// has room for cap bytes plus kRiceSlack; returns the bytes, or 0 if they
// exceed cap.
template <bool Avx2>
__attribute__((always_inline)) inline size_t
encodeRiceChunk(const uint32_t *v, unsigned len, uint64_t bitmap,
                const uint8_t *ctx, const uint8_t *kTable, uint8_t *out,
                size_t cap) {
  uint8_t table[16] = {};
  BitWriter tw{table};
  for (unsigned j = 0; j < kRiceContexts; ++j)
    tw.put(kTable[j], 5);
  tw.finish();
  std::memcpy(out, table, kRiceTableBytes);
  if (cap < kRiceTableBytes)
    return 0;
  uint8_t *p = out + kRiceTableBytes;
  const size_t codeCap = cap - kRiceTableBytes;
  // Branch-free writer: the pending bits (< 8) and a code (<= 32 bits) fit
  // one 64-bit store; whole bytes advance p.
  uint64_t acc = 0;
  unsigned n = 0;
  size_t pos = 0;
  for (uint64_t m = bitmap; m; m &= m - 1) {
    const unsigned i0 = __builtin_ctzll(m) * kBlockSize;
    const unsigned i1 = std::min<unsigned>(i0 + kBlockSize, len);
#if defined(COMET_CODEC_HAVE_AVX2)
    if constexpr (Avx2) {
      alignas(64) uint32_t code[kBlockSize], clen[kBlockSize];
      if (riceCodesAvx2(v + i0, ctx + i0, kTable, i1 - i0, code, clen)) {
        for (unsigned j = 0; j < i1 - i0; ++j) {
          acc |= uint64_t(code[j]) << n;
          n += clen[j];
          storeLE<uint64_t>(p + pos, acc);
          pos += n / 8;
          acc >>= n & ~7u;
          n &= 7;
        }
        if (pos > codeCap)
          return 0;
        continue;
      }
    }
#endif
    for (unsigned i = i0; i < i1; ++i) {
      const unsigned k = kTable[ctx[i]];
      const uint32_t x = v[i], u = x >> k;
      if (__builtin_expect(u + 1 + k > 32, 0)) {
        // A long unary part: through the general writer, capped.
        if (pos + (uint64_t(u) + 1 + k + 7) / 8 > codeCap)
          return 0;
        storeLE<uint64_t>(p + pos, acc);
        BitWriter bw{p + pos, acc, n, 0};
        ricePut(bw, x, k);
        pos += bw.pos;
        acc = bw.acc;
        n = bw.n;
        while (n >= 8) {
          p[pos++] = uint8_t(acc);
          acc >>= 8;
          n -= 8;
        }
        continue;
      }
      const uint64_t code =
          (uint64_t(x & ((uint32_t(1) << k) - 1)) << (u + 1)) |
          (uint64_t(1) << u);
      acc |= code << n;
      n += u + 1 + k;
      storeLE<uint64_t>(p + pos, acc);
      pos += n / 8;
      acc >>= n & ~7u;
      n &= 7;
    }
    if (pos > codeCap)
      return 0;
  }
  if (n)
    p[pos++] = uint8_t(acc);
  if (pos > codeCap)
    return 0;
  return kRiceTableBytes + pos;
}

// LSB-first reader of a Rice-coded chunk's codes; `bad` on reading past the
// end or on a value of 2^25 or more.
struct RiceBitReader {
  const uint8_t *p;
  uint64_t size, pos = 0; // bytes, bits
  bool bad = false;
  uint64_t peek() const { // 64 bits from byte pos / 8, zeros past the end
    const uint64_t byte = pos / 8;
    if (byte + 8 <= size)
      return loadLE<uint64_t>(p + byte);
    uint64_t w = 0;
    if (byte < size)
      std::memcpy(&w, p + byte, size - byte);
    return w;
  }
  uint32_t get(unsigned k) {
    const uint64_t end = size * 8;
    const uint32_t maxU = ((uint32_t(1) << (kMaxWidth + 1)) - 1) >> k;
    uint32_t u = 0;
    for (;;) {
      if (pos >= end || u > maxU) {
        bad = true;
        return 0;
      }
      const unsigned sh = unsigned(pos % 8);
      const uint64_t word = peek() >> sh;
      if (word) {
        const unsigned z = __builtin_ctzll(word);
        u += z;
        pos += z + 1;
        break;
      }
      u += 64 - sh;
      pos += 64 - sh;
    }
    if (u > maxU || pos + k > end) {
      bad = true;
      return 0;
    }
    uint32_t low = 0;
    if (k)
      low = uint32_t(peek() >> (pos % 8)) & ((uint32_t(1) << k) - 1);
    pos += k;
    return u << k | low;
  }
};

// Decodes a Rice-coded chunk's codes (`size` bytes at codes) into out, in
// two passes: the values, whose contexts depend on values only, then the
// reference codes from the values and the predictor. r and v: scratch for
// the chunk, zeroed.
template <typename E>
comet_rt_status decodeRiceChunk(const uint8_t *codes, uint64_t size,
                                uint64_t len, uint64_t bitmap, unsigned pred,
                                const uint8_t *kTable, const uint64_t *outMask,
                                const Bounds &bd, uint8_t *out, uint64_t c0,
                                const Grid &g, int32_t *r, uint32_t *v) {
  const uint64_t w = g.w;
  const unsigned n = unsigned(len);
  alignas(64) uint8_t blen[kChunkElems];
  std::memset(blen, 0, n);
  // k by the sum of the two neighbours' bit lengths (each at most 32).
  uint8_t kBySum[2 * 32 + 1];
  for (unsigned t = 0; t <= 2 * 32; ++t)
    kBySum[t] = kTable[std::min<unsigned>((t + 1) / 2, kRiceContexts - 1)];
  RiceBitReader rb{codes, size};
  for (uint64_t m = bitmap; m; m &= m - 1) {
    const unsigned i0 = __builtin_ctzll(m) * kBlockSize;
    const unsigned i1 = std::min<unsigned>(i0 + kBlockSize, n);
    // The left neighbour's length stays in a register.
    unsigned a = i0 ? blen[i0 - 1] : 0;
    for (unsigned i = i0; i < i1; ++i) {
      const unsigned b = w ? (i >= w ? blen[i - w] : 0) : a;
      const unsigned k = kBySum[a + b];
      uint32_t x;
      const uint64_t byte = rb.pos / 8;
      const unsigned sh = unsigned(rb.pos % 8);
      const uint64_t word =
          byte + 8 <= size ? loadLE<uint64_t>(codes + byte) >> sh : 0;
      const unsigned z = word ? unsigned(__builtin_ctzll(word)) : 64;
      if (z + 1 + k <= 64 - sh) {
        // The whole code lies in the word: its zeros, the one, k bits.
        if (z > (((uint32_t(1) << (kMaxWidth + 1)) - 1) >> k))
          return COMET_RT_ERROR_CORRUPT;
        // Two shifts: z + 1 is 64 when z = 63 (and then k = 0).
        x = uint32_t(z) << k |
            (uint32_t(word >> z >> 1) & ((uint32_t(1) << k) - 1));
        rb.pos += z + 1 + k;
      } else {
        x = rb.get(k);
        if (rb.bad)
          return COMET_RT_ERROR_CORRUPT;
      }
      v[i] = x;
      a = bitLength(x);
      blen[i] = uint8_t(a);
    }
  }
  // The codes end in the last byte, its padding bits 0.
  if (ceilDiv(rb.pos, 8) != size ||
      (rb.pos % 8 && (codes[size - 1] >> (rb.pos % 8)) != 0))
    return COMET_RT_ERROR_CORRUPT;
  const unsigned nbk = unsigned(ceilDiv(len, kBlockSize));
  for (unsigned bk = 0; bk < nbk; ++bk) {
    const unsigned i0 = bk * kBlockSize;
    const unsigned bl = std::min<unsigned>(kBlockSize, n - i0);
    uint8_t *dst = out + size_t(i0) * E::size;
    if (!((bitmap >> bk) & 1)) {
      std::memset(dst, 0, size_t(bl) * E::size);
      continue;
    }
    int32_t *x = r + i0;
    const uint32_t *vb = v + i0;
    const uint64_t col = w ? (c0 + i0) % w : 0;
    const uint64_t inPlane = w ? (c0 + i0) % g.hw : 0;
    const bool inside = w && i0 >= w + 1 && inPlane >= w &&
                        inPlane + bl <= g.hw; // every upper neighbour exists
    // The left, upper and upper-left neighbours (valid where used).
    const int32_t *left = r + (i0 ? i0 - 1 : 0);
    const int32_t *up = inside ? x - w : x, *upLeft = inside ? x - w - 1 : x;
    if (outMask[bk] == 0 && pred == kPredPlain) {
      for (unsigned j = 0; j < bl; ++j)
        x[j] = unzigzag(vb[j]);
    } else if (outMask[bk] == 0 && pred == kPredLeft && i0) {
      for (unsigned j = 0; j < bl; ++j)
        x[j] = int32_t(uint32_t(unzigzag(vb[j])) + uint32_t(left[j]));
    } else if (outMask[bk] == 0 && pred == kPredUp && inside) {
      for (unsigned j = 0; j < bl; ++j)
        x[j] = int32_t(uint32_t(unzigzag(vb[j])) + uint32_t(up[j]));
    } else if (outMask[bk] == 0 && pred == kPredLorenzo2d && inside) {
      uint64_t c = col;
      for (unsigned j = 0; j < bl; ++j) {
        uint32_t p = uint32_t(up[j]);
        if (c)
          p += uint32_t(left[j]) - uint32_t(upLeft[j]);
        x[j] = int32_t(uint32_t(unzigzag(vb[j])) + p);
        c = c + 1 == w ? 0 : c + 1;
      }
    } else {
      uint64_t c = col, ip = inPlane;
      for (unsigned j = 0; j < bl; ++j) {
        // Wraps on bad input; an outlier's reference code is 0.
        x[j] = (outMask[bk] >> j) & 1
                   ? 0
                   : int32_t(uint32_t(unzigzag(vb[j])) +
                             predictCoded(pred, r, i0 + j, c, ip, g));
        if (w) {
          c = c + 1 == w ? 0 : c + 1;
          ip = ip + 1 == g.hw ? 0 : ip + 1;
        }
      }
    }
    const QuantParams qp = bd.block(c0 + i0, bl);
    for (unsigned j = 0; j < bl; ++j)
      E::storeBits(dst + j * E::size, dequantize<E>(x[j], qp));
  }
  return COMET_RT_SUCCESS;
}

// Decodes a coded chunk (its u16 carried kCodedChunkFlag): the descriptor,
// the coded values (range coder's bytes and raw bits, or the k table and
// Rice codes), the outliers. Reads only [in, in + size).
template <typename E>
comet_rt_status
decodeCodedChunk(const uint8_t *in, uint64_t size, uint64_t len,
                 uint64_t bitmap, unsigned nOut, const Bounds &bd, uint8_t *out,
                 uint64_t *numOutliers, uint64_t c0, const Grid &g) {
  const uint64_t outBytes = uint64_t(nOut) * (2 + E::size);
  if (size < kChunkHeaderSize + 1 + outBytes)
    return COMET_RT_ERROR_CORRUPT;
  const unsigned desc = in[kChunkHeaderSize];
  const unsigned mode = desc >> 5, pred = desc & 3, coder = (desc >> 2) & 7;
  if (mode != kV2Coded || coder >= kNumCoders ||
      (!g.w && (pred == kPredLorenzo2d || pred == kPredUp)))
    return COMET_RT_ERROR_CORRUPT;
  uint64_t rcBytes = 0;
  uint8_t kTable[kRiceContexts];
  if (coder == kCoderRange) {
    if (size < kCodedHeaderSize + kMinRangeBytes + outBytes)
      return COMET_RT_ERROR_CORRUPT;
    rcBytes = loadLE<uint16_t>(in + kChunkHeaderSize + 1);
    if (kCodedHeaderSize + rcBytes + outBytes > size)
      return COMET_RT_ERROR_CORRUPT;
  } else {
    if (size < kRiceHeaderSize + outBytes)
      return COMET_RT_ERROR_CORRUPT;
    RawBitReader tr{in + kChunkHeaderSize + 1, kRiceTableBytes};
    for (unsigned j = 0; j < kRiceContexts; ++j)
      if ((kTable[j] = uint8_t(tr.get(5))) > kMaxWidth)
        return COMET_RT_ERROR_CORRUPT;
  }
  const uint8_t *idx = in + size - outBytes, *val = idx + 2 * nOut;
  uint64_t outMask[kChunkBlocks] = {};
  for (unsigned k = 0, prev = 0; k < nOut; ++k) {
    unsigned i = loadLE<uint16_t>(idx + 2 * k);
    if (i >= len || (k > 0 && i <= prev) || !((bitmap >> (i / kBlockSize)) & 1))
      return COMET_RT_ERROR_CORRUPT;
    prev = i;
    outMask[i / kBlockSize] |= uint64_t(1) << (i % kBlockSize);
  }
  alignas(64) int32_t r[kChunkElems];
  alignas(64) uint32_t v[kChunkElems];
  std::memset(r, 0, len * sizeof(int32_t));
  std::memset(v, 0, len * sizeof(uint32_t));
  // Decodes every element with readValue(i) (false: corrupt), then checks
  // the coder's end with finished().
  auto decodeAll = [&](auto &&readValue, auto &&bad,
                       auto &&finished) -> comet_rt_status {
    const unsigned nbk = unsigned(ceilDiv(len, kBlockSize));
    uint64_t col = 0, inPlane = 0;
    if (g.w) {
      col = c0 % g.w;
      inPlane = c0 % g.hw;
    }
    for (unsigned b = 0; b < nbk; ++b) {
      const unsigned i0 = b * kBlockSize;
      const unsigned bl = unsigned(std::min<uint64_t>(kBlockSize, len - i0));
      uint8_t *dst = out + size_t(i0) * E::size;
      const bool present = (bitmap >> b) & 1;
      if (!present)
        std::memset(dst, 0, size_t(bl) * E::size);
      for (unsigned j = 0; j < bl; ++j) {
        const unsigned i = i0 + j;
        if (present) {
          if (!readValue(i))
            return COMET_RT_ERROR_CORRUPT;
          // Wraps on bad input; an outlier's reference code is 0.
          r[i] = (outMask[b] >> j) & 1
                     ? 0
                     : int32_t(uint32_t(unzigzag(v[i])) +
                               predictCoded(pred, r, i, col, inPlane, g));
        }
        if (g.w) {
          if (++col == g.w)
            col = 0;
          if (++inPlane == g.hw)
            inPlane = 0;
        }
      }
      if (bad())
        return COMET_RT_ERROR_CORRUPT;
      if (present) {
        const QuantParams qp = bd.block(c0 + i0, bl);
        for (unsigned j = 0; j < bl; ++j)
          E::storeBits(dst + j * E::size, dequantize<E>(r[i0 + j], qp));
      }
    }
    return finished() ? COMET_RT_SUCCESS : COMET_RT_ERROR_CORRUPT;
  };
  comet_rt_status st;
  if (coder == kCoderRange) {
    CodedModel m;
    const uint8_t *rcIn = in + kCodedHeaderSize;
    RangeDecoder rc(rcIn, rcBytes);
    RawBitReader raw{rcIn + rcBytes, uint64_t(idx - (rcIn + rcBytes))};
    if (rc.bad)
      return COMET_RT_ERROR_CORRUPT;
    st = decodeAll(
        [&](unsigned i) {
          return decodeValue(rc, raw, m, codedContext(v, i, g.w), v[i]);
        },
        [&] { return rc.bad || raw.bad; },
        [&] {
          // Every byte of both parts read, the raw bits' padding 0.
          return rc.finished() && ceilDiv(raw.pos, 8) == raw.size &&
                 (raw.pos % 8 == 0 ||
                  (raw.p[raw.size - 1] >> (raw.pos % 8)) == 0);
        });
  } else {
    st = decodeRiceChunk<E>(in + kRiceHeaderSize,
                            uint64_t(idx - in) - kRiceHeaderSize, len, bitmap,
                            pred, kTable, outMask, bd, out, c0, g, r, v);
  }
  if (st != COMET_RT_SUCCESS)
    return st;
  for (unsigned k = 0; k < nOut; ++k) {
    unsigned i = loadLE<uint16_t>(idx + 2 * k);
    std::memcpy(out + size_t(i) * E::size, val + E::size * k, E::size);
  }
  *numOutliers += nOut;
  return COMET_RT_SUCCESS;
}

struct PlanV2 {
  uint8_t mode = kV2Dense, param = 0;
  bool present = false, hasAux = false;
  uint8_t aux = 0;
  unsigned bytes = 0; // body bytes
};

// Plans and writes one quantized block's body (its codes at r + i0, its
// stats s, its dense codes in res when s.haveRes) into stage (room for
// kStageV2 bytes). Outliers are the set bits of *badMask (0 for raw and
// absent blocks). Without rice, only the fixed-width modes are candidates
// (COMET_RT_CODEC_ENTROPY_NONE: format::planFixedBlock's choice).
constexpr size_t kStageV2 = std::max<size_t>(kStageBytes, kMaxRiceBytes + 8);

template <typename E, bool Avx2>
__attribute__((always_inline)) inline PlanV2
encodeBlockV2(const uint8_t *x, unsigned len, uint8_t *stage, uint64_t *badMask,
              int32_t *r, unsigned i0, uint64_t c0, const Grid &g,
              const BlockStats &s, uint32_t *res, bool rice) {
  // r + i0 holds the block's codes (0 at outliers), the reference codes for
  // mode 6; reset below if the block becomes raw.
  const int32_t *q = r + i0;
  alignas(64) uint32_t zq[kBlockSize];
  alignas(64) uint32_t z2[kBlockSize];
  PlanV2 p;
  *badMask = 0;
  if (s.nz == 0 && s.bad == 0)
    return p; // absent: all codes 0, nothing stored
  p.present = true;
  const unsigned numBad = popcount64(s.bad), nnz = popcount64(s.nz);
  const uint64_t outlierCost = uint64_t(numBad) * (2 + E::size);
  // dense
  unsigned dw = bitWidth(s.resOr);
  uint64_t best = 1 + packedBytes(len, dw) + outlierCost;
  p.mode = kV2Dense;
  p.param = uint8_t(dw);
  // sparse
  unsigned sw = s.allPos ? bitWidth(s.posOr) : bitWidth(s.zzOr);
  uint64_t sparse = 2 + ceilDiv(len, 8) + packedBytes(nnz, sw) + outlierCost;
  if (sparse < best) {
    best = sparse;
    p.mode = s.allPos ? kV2SparsePositive : kV2SparseSigned;
    p.param = uint8_t(sw);
  }
  uint64_t raw = 1 + uint64_t(len) * E::size;
  if (raw < best) {
    best = raw;
    p.mode = kV2Raw;
    p.param = 0;
  }
  // Dense codes with outliers taking their predecessor's code (as v1).
  bool haveRes = s.haveRes;
  auto denseCodes = [&] {
    if (haveRes)
      return;
    int32_t prev = 0;
    for (unsigned i = 0; i < len; ++i) {
      int32_t d = (s.bad >> i) & 1 ? prev : q[i];
      res[i] = zigzag(d - prev);
      prev = d;
    }
    haveRes = true;
  };
  // Rice needs at least one bit per value: skip it when that cannot win.
  unsigned kL = 0, kP = 0, k2 = 0;
  if (rice && best > 2 + ceilDiv(len, 8) + outlierCost) {
    // q holds 0 at outliers, as the plain mode codes them.
    for (unsigned i = 0; i < len; ++i)
      zq[i] = zigzag(q[i]);
    denseCodes();
    uint64_t bl = bestRice(res, len, kL), bp = bestRice(zq, len, kP);
    uint64_t cl = ceilDiv(bl, 8), cp = ceilDiv(bp, 8);
    if (cl <= kMaxRiceBytes && 2 + cl + outlierCost < best) {
      best = 2 + cl + outlierCost;
      p.mode = kV2RiceLorenzo;
      p.param = uint8_t(kL);
    }
    if (cp <= kMaxRiceBytes && 2 + cp + outlierCost < best) {
      best = 2 + cp + outlierCost;
      p.mode = kV2RicePlain;
      p.param = uint8_t(kP);
    }
    if (g.w) {
      lorenzo2d(r, i0, len, c0, g, z2);
      uint64_t c2 = ceilDiv(bestRice(z2, len, k2), 8);
      if (c2 <= kMaxRiceBytes && 2 + c2 + outlierCost < best) {
        best = 2 + c2 + outlierCost;
        p.mode = kV2RiceLorenzo2d;
        p.param = uint8_t(k2);
      }
    }
  }
  switch (p.mode) {
  case kV2Raw:
    std::memcpy(stage, x, size_t(len) * E::size);
    std::memset(r + i0, 0, len * sizeof(int32_t));
    p.bytes = len * unsigned(E::size);
    return p;
  case kV2Dense:
    denseCodes();
    if (dw)
      packBits(stage, res, len, dw);
    p.bytes = unsigned(packedBytes(len, dw));
    break;
  case kV2RiceLorenzo:
    p.bytes = unsigned(riceEncode(res, len, kL, stage));
    p.hasAux = true;
    p.aux = uint8_t(p.bytes);
    break;
  case kV2RicePlain:
    p.bytes = unsigned(riceEncode(zq, len, kP, stage));
    p.hasAux = true;
    p.aux = uint8_t(p.bytes);
    break;
  case kV2RiceLorenzo2d:
    p.bytes = unsigned(riceEncode(z2, len, k2, stage));
    p.hasAux = true;
    p.aux = uint8_t(p.bytes);
    break;
  default: { // sparse: as v1, the mask then the nonzeros' codes
    alignas(64) uint32_t v[kBlockSize];
    unsigned maskBytes = unsigned(ceilDiv(len, 8)), k = 0;
    std::memcpy(stage, &s.nz, maskBytes);
    if (p.mode == kV2SparsePositive)
      for (uint64_t m = s.nz; m; m &= m - 1)
        v[k++] = uint32_t(q[__builtin_ctzll(m)] - 1);
    else
      for (uint64_t m = s.nz; m; m &= m - 1)
        v[k++] = zigzag(q[__builtin_ctzll(m)]);
    packBits(stage + maskBytes, v, k, sw);
    p.bytes = maskBytes + unsigned(packedBytes(nnz, sw));
    p.hasAux = true;
    p.aux = uint8_t(nnz);
    break;
  }
  }
  *badMask = s.bad;
  return p;
}

// AUTO's fast path: a Rice-coded chunk straight from the quantized codes r
// and the blocks' stats, without planning the blocks' modes, for chunks
// whose blocks the fixed-width modes would code as dense, at 3 or more bits
// a value, and none raw (most dense and GELU chunks). It is written if it
// is smaller than the fixed-width modes' chunk (dense, sparse or raw per
// block), an upper bound of the block chunk; returns its size, or 0 to
// plan the blocks.

/// A chunk's outlier tail: nOut little-endian u16 indices, then the
/// outliers' raw values. Returns the end.
template <typename E>
uint8_t *writeOutliers(uint8_t *o, const uint8_t *x, const uint16_t *outIdx,
                       unsigned nOut) {
  for (unsigned k = 0; k < nOut; ++k)
    storeLE<uint16_t>(o + 2 * k, outIdx[k]);
  o += 2 * nOut;
  for (unsigned k = 0; k < nOut; ++k)
    std::memcpy(o + E::size * k, x + size_t(outIdx[k]) * E::size, E::size);
  return o + E::size * nOut;
}

template <typename E, bool Avx2>
__attribute__((always_inline)) inline size_t
encodeRiceFirst(const uint8_t *x, unsigned n, const int32_t *r,
                const BlockStats *stats, uint64_t c0, const Grid &g,
                uint8_t *dst, uint16_t *outIdx, uint64_t *numOutliers) {
  const unsigned nbk = unsigned(ceilDiv(n, kBlockSize));
  uint64_t bitmap = 0;
  unsigned nd = 0, nOut = 0, nSparse = 0, present = 0, cheap = 0;
  uint64_t bound = kChunkHeaderSize;
  for (unsigned b = 0; b < nbk; ++b) {
    const BlockStats &s = stats[b];
    if (s.nz == 0 && s.bad == 0)
      continue; // absent
    const unsigned bl = std::min<unsigned>(kBlockSize, n - b * kBlockSize);
    const uint64_t outCost = uint64_t(popcount64(s.bad)) * (2 + E::size);
    const uint64_t dense = 1 + packedBytes(bl, bitWidth(s.resOr)) + outCost;
    const unsigned sw = s.allPos ? bitWidth(s.posOr) : bitWidth(s.zzOr);
    const uint64_t sparse =
        2 + ceilDiv(bl, 8) + packedBytes(popcount64(s.nz), sw) + outCost;
    const uint64_t raw = 1 + uint64_t(bl) * E::size;
    if (raw <= std::min(dense, sparse))
      return 0;
    bitmap |= uint64_t(1) << b;
    ++nd;
    nSparse += sparse < dense;
    present += bl;
    // Near-constant blocks: dense width 3 or less.
    cheap += 8 * dense < 4 * uint64_t(bl) + 8 ? bl : 0;
    bound += std::min(dense, sparse);
    for (uint64_t m = s.bad; m; m &= m - 1)
      outIdx[nOut++] = uint16_t(b * kBlockSize + __builtin_ctzll(m));
  }
  // As the block path's gate: post-ReLU chunks (sparse blocks) keep the
  // block modes, near-constant ones try the range coder there.
  if (!bitmap || nSparse * 8 > nd || 2 * cheap >= present)
    return 0;
  const size_t outBytes = size_t(nOut) * (2 + E::size);
  if (bound <= kRiceHeaderSize + outBytes + 1)
    return 0;
  alignas(64) uint32_t v[kChunkElems];
  alignas(64) uint8_t ctx[kChunkElems];
  uint8_t kTable[kRiceContexts];
  const unsigned pred = choosePredictor<Avx2>(r, n, bitmap, c0, g);
  codedValues(pred, r, n, bitmap, c0, g, v);
  planRiceChunk<Avx2>(v, n, bitmap, g.w, ctx, kTable);
  // The writer may run past its cap before it checks: stage in riceBuf.
  alignas(64) uint8_t riceBuf[kChunkElems * 4 + 2 * kChunkBlocks + kRiceSlack];
  const size_t bytes = encodeRiceChunk<Avx2>(v, n, bitmap, ctx, kTable, riceBuf,
                                             bound - 1 - kRiceHeaderSize -
                                                 outBytes + kRiceTableBytes);
  if (!bytes)
    return 0;
  uint8_t *o = dst;
  std::memcpy(o + kChunkHeaderSize + 1, riceBuf, bytes);
  storeLE<uint64_t>(o, bitmap);
  storeLE<uint16_t>(o + 8, uint16_t(nOut | kCodedChunkFlag));
  o[kChunkHeaderSize] = uint8_t(kV2Coded << 5 | kCoderRice << 2 | pred);
  o += kChunkHeaderSize + 1 + bytes;
  o = writeOutliers<E>(o, x, outIdx, nOut);
  *numOutliers += nOut;
  return size_t(o - dst);
}

// Encodes chunk elements [0, len) at x into dst (room for
// worstChunkBytes(len)); returns the chunk's size and adds its outliers.
template <typename E, bool Avx2>
__attribute__((always_inline)) inline size_t
encodeChunkBody(const uint8_t *x, uint64_t len, const Bounds &bd, uint8_t *dst,
                uint64_t *numOutliers, uint64_t c0, const Grid &g,
                int entropy) {
  const unsigned nbk = unsigned(ceilDiv(len, kBlockSize));
  const unsigned n = unsigned(len);
  alignas(64) int32_t r[kChunkElems];
  alignas(64) uint32_t res[kChunkElems];
  BlockStats stats[kChunkBlocks];
  // Quantize every block first: the codes (r) decide whether AUTO codes the
  // chunk with Rice right away.
  for (unsigned b = 0; b < nbk; ++b) {
    const unsigned i0 = b * kBlockSize;
    const unsigned bl = std::min<unsigned>(kBlockSize, n - i0);
    alignas(64) int32_t q[kBlockSize];
    scanBlockIsa<E, Avx2>(x + size_t(i0) * E::size, bl, bd.block(c0 + i0, bl),
                          q, res + i0, stats[b]);
    std::memcpy(r + i0, q, bl * sizeof(int32_t));
  }
  uint16_t outIdx[kChunkElems];
  if (entropy == COMET_RT_CODEC_ENTROPY_AUTO) {
    size_t coded = encodeRiceFirst<E, Avx2>(x, n, r, stats, c0, g, dst, outIdx,
                                            numOutliers);
    if (coded)
      return coded;
  }
  uint8_t desc[kChunkBlocks], aux[kChunkBlocks];
  alignas(64) uint8_t bodies[kChunkElems * 4 + 64];
  alignas(64) uint8_t stage[kStageV2];
  uint64_t bitmap = 0;
  unsigned nd = 0, na = 0, nOut = 0, nSparse = 0;
  unsigned presentElems = 0, cheapElems = 0;
  bool anyRaw = false;
  size_t bodyBytes = 0;
  for (unsigned b = 0; b < nbk; ++b) {
    unsigned bl =
        unsigned(std::min<uint64_t>(kBlockSize, len - b * kBlockSize));
    uint64_t bad;
    const uint8_t *xb = x + size_t(b) * kBlockSize * E::size;
    PlanV2 p = encodeBlockV2<E, Avx2>(xb, bl, stage, &bad, r, b * kBlockSize,
                                      c0, g, stats[b], res + b * kBlockSize,
                                      entropy != COMET_RT_CODEC_ENTROPY_NONE);
    if (!p.present)
      continue;
    bitmap |= uint64_t(1) << b;
    presentElems += bl;
    // Blocks under kAutoBits a value (descriptor and aux byte included).
    cheapElems += 8 * (p.bytes + 1 + p.hasAux) < kAutoBits * bl ? bl : 0;
    anyRaw |= p.mode == kV2Raw;
    nSparse += p.mode == kV2SparseSigned || p.mode == kV2SparsePositive;
    desc[nd++] = uint8_t(p.mode << 5 | p.param);
    if (p.hasAux)
      aux[na++] = p.aux;
    std::memcpy(bodies + bodyBytes, stage, p.bytes);
    bodyBytes += p.bytes;
    for (; bad; bad &= bad - 1)
      outIdx[nOut++] = uint16_t(b * kBlockSize + __builtin_ctzll(bad));
  }
  if (!bitmap)
    return 0; // an all-zero chunk: size 0, no bytes
  const size_t outBytes = size_t(nOut) * (2 + E::size);
  const size_t blockBytes = kChunkHeaderSize + nd + na + bodyBytes + outBytes;
  uint8_t *o = dst;
  // A coded chunk, where it is smaller; not tried where raw blocks
  // (incompressible) are, nor where sparse blocks (a post-ReLU chunk, cheap
  // already) are frequent, so that those keep their speed, unless the chunk
  // is near-constant: at a loose bound a sparse block's one-bit-a-value mask
  // is most of its size, and the range coder's zero flags cost a fraction
  // of that. AUTO range-codes only chunks
  // where at least half the present elements lie in blocks that spend under
  // kAutoBits bits a value (near-constant codes, where Rice spends its floor
  // of a bit a value and the range coder saves 35-70 %), and Rice-codes the
  // others with per-context k (its cost is computed exactly first, so a
  // chunk only pays for the coding where it wins); ALWAYS tries both.
  const bool nearConst = 2 * cheapElems >= presentElems;
  const bool always = entropy == COMET_RT_CODEC_ENTROPY_ALWAYS;
  const bool autoOn = entropy == COMET_RT_CODEC_ENTROPY_AUTO;
  const bool tryRange = always || (autoOn && nearConst);
  const bool tryRice = always || (autoOn && !nearConst);
  if ((tryRange || tryRice) && !anyRaw && (nSparse * 8 <= nd || nearConst) &&
      blockBytes > kCodedHeaderSize + kMinRangeBytes + outBytes) {
    alignas(64) uint32_t v[kChunkElems];
    alignas(64) uint8_t ctx[kChunkElems];
    uint8_t kTable[kRiceContexts];
    const unsigned pred = choosePredictor<Avx2>(r, n, bitmap, c0, g);
    codedValues(pred, r, n, bitmap, c0, g, v);
    // The smallest of block, range-coded and Rice-coded chunk; ties in
    // that order.
    // The Rice-coded chunk first, into riceBuf: its exact size caps the
    // range coder's.
    alignas(64)
        uint8_t riceBuf[kChunkElems * 4 + 2 * kChunkBlocks + kRiceSlack];
    size_t riceTotal = ~size_t(0), riceBytes = 0;
    if (tryRice && blockBytes > kRiceHeaderSize + outBytes) {
      planRiceChunk<Avx2>(v, n, bitmap, g.w, ctx, kTable);
      riceBytes = encodeRiceChunk<Avx2>(v, n, bitmap, ctx, kTable, riceBuf,
                                        blockBytes - 1 - kRiceHeaderSize -
                                            outBytes + kRiceTableBytes);
      if (riceBytes)
        riceTotal = kChunkHeaderSize + 1 + riceBytes + outBytes;
    }
    size_t coder = kNumCoders, codedBytes = 0, rcBytes = 0;
    if (tryRange) {
      const size_t limit = std::min(blockBytes - 1, riceTotal);
      if (limit > kCodedHeaderSize + outBytes)
        codedBytes = encodeCoded(v, n, bitmap, g, o + kCodedHeaderSize,
                                 limit - kCodedHeaderSize - outBytes, rcBytes);
      if (codedBytes) {
        coder = kCoderRange;
        o[kChunkHeaderSize] = uint8_t(kV2Coded << 5 | pred);
        storeLE<uint16_t>(o + kChunkHeaderSize + 1, uint16_t(rcBytes));
        codedBytes += kCodedHeaderSize;
      }
    }
    if (coder == kNumCoders && riceTotal < blockBytes) {
      coder = kCoderRice;
      o[kChunkHeaderSize] = uint8_t(kV2Coded << 5 | kCoderRice << 2 | pred);
      std::memcpy(o + kChunkHeaderSize + 1, riceBuf, riceBytes);
      codedBytes = kChunkHeaderSize + 1 + riceBytes;
    }
    if (coder != kNumCoders) {
      storeLE<uint64_t>(o, bitmap);
      storeLE<uint16_t>(o + 8, uint16_t(nOut | kCodedChunkFlag));
      o += codedBytes;
      o = writeOutliers<E>(o, x, outIdx, nOut);
      *numOutliers += nOut;
      return size_t(o - dst);
    }
  }
  storeLE<uint64_t>(o, bitmap);
  storeLE<uint16_t>(o + 8, uint16_t(nOut));
  o += kChunkHeaderSize;
  std::memcpy(o, desc, nd);
  o += nd;
  std::memcpy(o, aux, na);
  o += na;
  std::memcpy(o, bodies, bodyBytes);
  o += bodyBytes;
  o = writeOutliers<E>(o, x, outIdx, nOut);
  *numOutliers += nOut;
  return size_t(o - dst);
}

template <typename E>
size_t encodeChunkBaseline(const uint8_t *x, uint64_t len, const Bounds &bd,
                           uint8_t *dst, uint64_t *numOutliers, uint64_t c0,
                           const Grid &g, int entropy) {
  return encodeChunkBody<E, false>(x, len, bd, dst, numOutliers, c0, g,
                                   entropy);
}

#if defined(COMET_CODEC_HAVE_AVX2)
// The same code compiled for AVX2: the F32 quantizer is explicit, the rest
// (reductions, Rice costs, packing) is vectorized by the compiler.
template <typename E>
__attribute__((target("avx2,bmi,bmi2"))) size_t
encodeChunkAvx2(const uint8_t *x, uint64_t len, const Bounds &bd, uint8_t *dst,
                uint64_t *numOutliers, uint64_t c0, const Grid &g,
                int entropy) {
  return encodeChunkBody<E, true>(x, len, bd, dst, numOutliers, c0, g, entropy);
}
#endif

// The channel count and elements per channel and sample of h (dim 1).
void channelShape(const Header &h, uint64_t &channels, uint64_t &inner) {
  channels = h.dims[1];
  inner = 1;
  for (uint32_t i = 2; i < h.rank; ++i)
    inner *= h.dims[i];
}

// channelEb: null, or one bound per channel of dim 1 (h.flags says which),
// each valid for quantParams; h.eb is then their largest.
template <typename E>
comet_rt_status compressSzV2(const uint8_t *x, Header &h, uint8_t *out,
                             size_t outCapacity, size_t *outSize, int entropy,
                             const double *channelEb) {
  Bounds bd;
  if (!quantParams(h.eb, bd.uniform))
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  uint64_t tableBytes = 0;
  if (h.flags & format::kFlagChannelBounds) {
    bd.channel = channelEb;
    channelShape(h, bd.channels, bd.inner);
    bd.minEb = h.eb;
    for (uint64_t c = 0; c < bd.channels; ++c)
      bd.minEb = std::min(bd.minEb, channelEb[c]);
    tableBytes = 8 * bd.channels;
  }
  const uint64_t n = h.n, nc = ceilDiv(n, kChunkElems);
  h.version = format::kFormatVersion;
  h.blockSize = kBlockSize;
  h.numBlocks = nc;
  h.numSparse = kChunkBlocks;
  // With a worst-case output, chunk c is staged at c * slot in it (the last
  // may be shorter, so the staging area fits) and all chunks are encoded in
  // one parallel loop. A smaller output gets no worst-case scratch: chunks
  // are encoded a wave at a time into a staging area of a few chunks per
  // thread and appended while they fit; past the capacity they are only
  // sized, so that a too-small output still reports the stream's size.
  const uint64_t slot = worstChunkBytes(kChunkElems, E::size);
  const uint64_t worst =
      maxCompressedSize(COMET_RT_CODEC_SZ, h.dtype, n) + tableBytes;
  const int nt = numThreads();
  const bool inPlace = outCapacity >= worst;
  const uint64_t wave =
      inPlace ? nc : std::min<uint64_t>(nc, uint64_t(nt) * kWaveChunks);
  const uint64_t tableEnd = kHeaderSize + tableBytes + 4 * nc;
  std::unique_ptr<uint8_t[]> stage;
  if (!inPlace) {
    stage.reset(new (std::nothrow) uint8_t[wave ? wave * slot : 1]);
    if (!stage)
      return COMET_RT_ERROR_OUT_OF_MEMORY;
  }
  uint8_t *staging = inPlace ? out + tableEnd : stage.get();
  std::unique_ptr<uint64_t[]> sizes(new (std::nothrow)
                                        uint64_t[wave ? wave : 1]);
  std::unique_ptr<uint64_t[]> outs(new (std::nothrow)
                                       uint64_t[wave ? wave : 1]);
  if (!sizes || !outs)
    return COMET_RT_ERROR_OUT_OF_MEMORY;
  const Grid g = gridOf(h);
  auto encode = encodeChunkBaseline<E>;
#if defined(COMET_CODEC_HAVE_AVX2)
  if (useAvx2())
    encode = encodeChunkAvx2<E>;
#endif
  uint64_t pos = tableEnd, payload = 0, numOutliers = 0;
  bool fits = tableEnd <= outCapacity;
  for (uint64_t c0 = 0; c0 < nc; c0 += wave) {
    const uint64_t wn = std::min(wave, nc - c0);
#pragma omp parallel for num_threads(nt) schedule(static) if (wn > 1)
    for (int64_t i = 0; i < int64_t(wn); ++i) {
      uint64_t c = c0 + uint64_t(i);
      uint64_t len = std::min<uint64_t>(kChunkElems, n - c * kChunkElems);
      outs[i] = 0;
      sizes[i] = encode(x + c * kChunkElems * E::size, len, bd,
                        staging + uint64_t(i) * slot, &outs[i], c * kChunkElems,
                        g, entropy);
    }
    for (uint64_t i = 0; i < wn; ++i) {
      fits = fits && pos + sizes[i] <= outCapacity;
      if (fits) {
        // In place, a chunk only moves down (pos <= its staging offset).
        if (out + pos != staging + i * slot)
          std::memmove(out + pos, staging + i * slot, sizes[i]);
        storeLE<uint32_t>(out + kHeaderSize + tableBytes + 4 * (c0 + i),
                          uint32_t(sizes[i]));
      }
      pos += sizes[i];
      payload += sizes[i];
      numOutliers += outs[i];
    }
  }
  h.payloadBytes = payload;
  h.numOutliers = numOutliers;
  *outSize = size_t(pos);
  if (!fits)
    return COMET_RT_ERROR_BUFFER_TOO_SMALL;
  encodeHeader(h, out);
  for (uint64_t c = 0; c < tableBytes / 8; ++c)
    storeLE<uint64_t>(out + kHeaderSize + 8 * c,
                      format::doubleBits(channelEb[c]));
  return COMET_RT_SUCCESS;
}

// Decodes one chunk of len elements from its `size` bytes at in into out;
// adds its outliers. Reads only [in, in + size), writes only the chunk.
template <typename E>
comet_rt_status decodeChunk(const uint8_t *in, uint64_t size, uint64_t len,
                            const Bounds &bd, uint8_t *out,
                            uint64_t *numOutliers, uint64_t c0, const Grid &g) {
  const unsigned nbk = unsigned(ceilDiv(len, kBlockSize));
  if (size == 0) {
    std::memset(out, 0, size_t(len) * E::size);
    return COMET_RT_SUCCESS;
  }
  if (size < kChunkHeaderSize)
    return COMET_RT_ERROR_CORRUPT;
  const uint64_t bitmap = loadLE<uint64_t>(in);
  unsigned nOut = loadLE<uint16_t>(in + 8);
  if (!bitmap || (nbk < 64 && (bitmap >> nbk)))
    return COMET_RT_ERROR_CORRUPT;
  if (nOut & kCodedChunkFlag)
    return decodeCodedChunk<E>(in, size, len, bitmap, nOut & ~kCodedChunkFlag,
                               bd, out, numOutliers, c0, g);
  const unsigned nd = popcount64(bitmap);
  uint64_t pos = kChunkHeaderSize;
  if (pos + nd > size)
    return COMET_RT_ERROR_CORRUPT;
  const uint8_t *desc = in + pos;
  unsigned na = 0;
  for (unsigned i = 0; i < nd; ++i) {
    unsigned mode = desc[i] >> 5, param = desc[i] & 31;
    if (mode >= format::kV2NumModes || param > kMaxWidth ||
        (mode == kV2Raw && param != 0) || (mode == kV2RiceLorenzo2d && !g.w))
      return COMET_RT_ERROR_CORRUPT;
    na += mode != kV2Dense && mode != kV2Raw;
  }
  pos += nd;
  if (pos + na > size)
    return COMET_RT_ERROR_CORRUPT;
  const uint8_t *aux = in + pos;
  pos += na;
  // Body offsets, each size checked before any body is read; the block of
  // each present descriptor.
  uint32_t off[kChunkBlocks + 1];
  uint8_t blockOf[kChunkBlocks];
  uint64_t bodyTotal = 0;
  uint64_t noOutliers = ~bitmap; // absent and raw blocks
  for (unsigned i = 0, a = 0, b = 0; i < nd; ++i, ++b) {
    while (!((bitmap >> b) & 1))
      ++b;
    blockOf[i] = uint8_t(b);
    unsigned bl =
        unsigned(std::min<uint64_t>(kBlockSize, len - b * kBlockSize));
    unsigned mode = desc[i] >> 5, w = desc[i] & 31;
    uint64_t bytes;
    if (mode == kV2Raw) {
      bytes = uint64_t(bl) * E::size;
      noOutliers |= uint64_t(1) << b;
    } else if (mode == kV2Dense) {
      bytes = packedBytes(bl, w);
    } else if (mode == kV2SparseSigned || mode == kV2SparsePositive) {
      unsigned c = aux[a++];
      if (c > bl)
        return COMET_RT_ERROR_CORRUPT;
      bytes = ceilDiv(bl, 8) + packedBytes(c, w);
    } else {
      bytes = aux[a++]; // Rice
    }
    off[i] = uint32_t(bodyTotal);
    bodyTotal += bytes;
  }
  off[nd] = uint32_t(bodyTotal);
  if (pos + bodyTotal + uint64_t(nOut) * (2 + E::size) != size)
    return COMET_RT_ERROR_CORRUPT;
  const uint8_t *bodies = in + pos;
  // Outliers: strictly increasing indices into present, non-raw blocks;
  // checked before any block is decoded (mode 6 needs their positions).
  const uint8_t *idx = bodies + bodyTotal, *val = idx + 2 * nOut;
  uint64_t outMask[kChunkBlocks] = {};
  for (unsigned k = 0, prev = 0; k < nOut; ++k) {
    unsigned i = loadLE<uint16_t>(idx + 2 * k);
    if (i >= len || (k > 0 && i <= prev) ||
        ((noOutliers >> (i / kBlockSize)) & 1))
      return COMET_RT_ERROR_CORRUPT;
    prev = i;
    outMask[i / kBlockSize] |= uint64_t(1) << (i % kBlockSize);
  }
  // Absent blocks decode to +0.0.
  const uint64_t all = nbk < 64 ? (uint64_t(1) << nbk) - 1 : ~uint64_t(0);
  for (uint64_t m = ~bitmap & all; m; m &= m - 1) {
    const unsigned b = __builtin_ctzll(m);
    std::memset(out + size_t(b) * kBlockSize * E::size, 0,
                size_t(std::min<uint64_t>(kBlockSize, len - b * kBlockSize)) *
                    E::size);
  }
  alignas(64) int32_t r[kChunkElems]; // mode 6's reference codes
  for (unsigned i = 0, a = 0; i < nd; ++i) {
    const unsigned b = blockOf[i], i0 = b * kBlockSize;
    const unsigned bl =
        unsigned(std::min<uint64_t>(kBlockSize, len - uint64_t(i0)));
    if (i == 0 || blockOf[i - 1] + 1u != b) // absent blocks before b
      std::memset(r + (i ? (blockOf[i - 1] + 1u) * kBlockSize : 0), 0,
                  (i0 - (i ? (blockOf[i - 1] + 1u) * kBlockSize : 0)) *
                      sizeof(int32_t));
    unsigned mode = desc[i] >> 5, w = desc[i] & 31;
    const uint8_t *src = bodies + off[i];
    uint8_t *dst = out + size_t(i0) * E::size;
    int32_t *q = r + i0;
    if (mode == kV2Raw) {
      std::memcpy(dst, src, size_t(bl) * E::size);
      std::memset(q, 0, bl * sizeof(int32_t));
      continue;
    }
    alignas(64) uint32_t v[kBlockSize];
    if (mode == kV2Dense) {
      unpackBits(src, v, bl, w);
    } else if (mode == kV2SparseSigned || mode == kV2SparsePositive) {
      unsigned maskBytes = unsigned(ceilDiv(bl, 8)), nnz = aux[a++];
      uint64_t maskBits = 0;
      std::memcpy(&maskBits, src, maskBytes);
      bool tailClear = bl % 8 == 0 || (src[maskBytes - 1] >> (bl % 8)) == 0;
      if (popcount64(maskBits) != nnz || !tailClear)
        return COMET_RT_ERROR_CORRUPT;
      unpackBits(src + maskBytes, v, nnz, w);
      std::fill(q, q + bl, 0);
      unsigned k = 0;
      if (mode == kV2SparsePositive)
        for (uint64_t m = maskBits; m; m &= m - 1)
          q[__builtin_ctzll(m)] = int32_t(v[k++] + 1);
      else
        for (uint64_t m = maskBits; m; m &= m - 1)
          q[__builtin_ctzll(m)] = unzigzag(v[k++]);
    } else {
      if (!riceDecode(src, off[i + 1] - off[i], w, bl, v))
        return COMET_RT_ERROR_CORRUPT;
      ++a;
    }
    if (mode == kV2Dense || mode == kV2RiceLorenzo) {
      uint32_t acc = 0; // wraps on corrupt input instead of overflowing
      for (unsigned j = 0; j < bl; ++j) {
        acc += uint32_t(unzigzag(v[j]));
        q[j] = int32_t(acc);
      }
    } else if (mode == kV2RicePlain) {
      for (unsigned j = 0; j < bl; ++j)
        q[j] = unzigzag(v[j]);
    } else if (mode == kV2RiceLorenzo2d) {
      unLorenzo2d(r, i0, bl, c0, g, v);
    }
    const QuantParams qp = bd.block(c0 + i0, bl);
    for (unsigned j = 0; j < bl; ++j)
      E::storeBits(dst + j * E::size, dequantize<E>(q[j], qp));
    // Outliers' reference codes are 0, whatever their mode decoded.
    for (uint64_t m = outMask[b]; m; m &= m - 1)
      q[__builtin_ctzll(m)] = 0;
  }
  for (unsigned k = 0; k < nOut; ++k) {
    unsigned i = loadLE<uint16_t>(idx + 2 * k);
    std::memcpy(out + size_t(i) * E::size, val + E::size * k, E::size);
  }
  *numOutliers += nOut;
  return COMET_RT_SUCCESS;
}

template <typename E>
comet_rt_status decompressSzV2(const uint8_t *in, const Header &h,
                               uint8_t *out) {
  Bounds bd;
  quantParams(h.eb, bd.uniform); // checked by parseHeader
  std::unique_ptr<double[]> channelEb;
  uint64_t tableBytes = 0;
  if (h.flags & format::kFlagChannelBounds) {
    // Every channel bound valid and at most h.eb, the largest equal to it.
    // parseHeader counted the table in the stream's length.
    channelShape(h, bd.channels, bd.inner);
    tableBytes = 8 * bd.channels;
    channelEb.reset(new (std::nothrow) double[bd.channels ? bd.channels : 1]);
    if (!channelEb)
      return COMET_RT_ERROR_OUT_OF_MEMORY;
    double largest = 0;
    bd.minEb = h.eb;
    for (uint64_t c = 0; c < bd.channels; ++c) {
      const double eb =
          format::bitsDouble(loadLE<uint64_t>(in + kHeaderSize + 8 * c));
      QuantParams qp;
      if (!quantParams(eb, qp) || !(eb <= h.eb))
        return COMET_RT_ERROR_CORRUPT;
      channelEb[c] = eb;
      largest = std::max(largest, eb);
      bd.minEb = std::min(bd.minEb, eb);
    }
    if (largest != h.eb)
      return COMET_RT_ERROR_CORRUPT;
    bd.channel = channelEb.get();
  }
  const uint64_t n = h.n, nc = h.numBlocks;
  const uint8_t *table = in + kHeaderSize + tableBytes,
                *chunks = table + 4 * nc;
  const Grid g = gridOf(h);
  std::unique_ptr<uint64_t[]> off(new (std::nothrow) uint64_t[nc + 1]);
  std::unique_ptr<uint64_t[]> outs(new (std::nothrow) uint64_t[nc ? nc : 1]);
  if (!off || !outs)
    return COMET_RT_ERROR_OUT_OF_MEMORY;
  off[0] = 0;
  for (uint64_t c = 0; c < nc; ++c) {
    uint64_t len = std::min<uint64_t>(kChunkElems, n - c * kChunkElems);
    uint64_t size = loadLE<uint32_t>(table + 4 * c);
    if (size > worstChunkBytes(len, E::size))
      return COMET_RT_ERROR_CORRUPT;
    off[c + 1] = off[c] + size;
  }
  if (off[nc] != h.payloadBytes)
    return COMET_RT_ERROR_CORRUPT;
  std::atomic<int> status{COMET_RT_SUCCESS};
  const int nt = numThreads();
#pragma omp parallel for num_threads(nt) schedule(static) if (nc > 1)
  for (int64_t c = 0; c < int64_t(nc); ++c) {
    uint64_t len =
        std::min<uint64_t>(kChunkElems, n - uint64_t(c) * kChunkElems);
    outs[c] = 0;
    comet_rt_status st =
        decodeChunk<E>(chunks + off[c], off[c + 1] - off[c], len, bd,
                       out + uint64_t(c) * kChunkElems * E::size, &outs[c],
                       uint64_t(c) * kChunkElems, g);
    if (st != COMET_RT_SUCCESS)
      status.store(st, std::memory_order_relaxed);
  }
  if (status.load() != COMET_RT_SUCCESS)
    return comet_rt_status(status.load());
  uint64_t total = 0;
  for (uint64_t c = 0; c < nc; ++c)
    total += outs[c];
  return total == h.numOutliers ? COMET_RT_SUCCESS : COMET_RT_ERROR_CORRUPT;
}

//===----------------------------------------------------------------------===//
// mask and raw.
//===----------------------------------------------------------------------===//

template <typename E>
void compressMask(const uint8_t *x, uint64_t n, uint8_t *out) {
  const uint64_t nbytes = ceilDiv(n, 8);
  const int nt = numThreads();
#pragma omp parallel for num_threads(nt) schedule(static) if (nbytes > 4096)
  for (int64_t j = 0; j < int64_t(nbytes); ++j) {
    unsigned len = unsigned(std::min<uint64_t>(8, n - uint64_t(j) * 8));
    uint8_t byte = 0;
    for (unsigned i = 0; i < len; ++i)
      byte |= uint8_t(E::load(x + (uint64_t(j) * 8 + i) * E::size) > 0.0f) << i;
    out[j] = byte;
  }
}

template <typename E>
comet_rt_status decompressMask(const uint8_t *in, uint64_t n, uint8_t *out) {
  const uint64_t nbytes = ceilDiv(n, 8);
  if (n % 8 && (in[nbytes - 1] >> (n % 8)) != 0)
    return COMET_RT_ERROR_CORRUPT; // bits past the end must be clear
  const int nt = numThreads();
#pragma omp parallel for num_threads(nt) schedule(static) if (nbytes > 4096)
  for (int64_t j = 0; j < int64_t(nbytes); ++j) {
    unsigned len = unsigned(std::min<uint64_t>(8, n - uint64_t(j) * 8));
    for (unsigned i = 0; i < len; ++i)
      E::storeBits(out + (uint64_t(j) * 8 + i) * E::size,
                   (in[j] >> i) & 1 ? E::one : 0u);
  }
  return COMET_RT_SUCCESS;
}

void parallelCopy(uint8_t *dst, const uint8_t *src, uint64_t bytes) {
  constexpr uint64_t chunk = 1 << 20;
  const uint64_t nc = ceilDiv(bytes, chunk);
  const int nt = numThreads();
#pragma omp parallel for num_threads(nt) schedule(static) if (nc > 1)
  for (int64_t c = 0; c < int64_t(nc); ++c)
    std::memcpy(dst + c * chunk, src + c * chunk,
                std::min<uint64_t>(chunk, bytes - c * chunk));
}

template <template <typename> class F, typename... Args>
auto dispatchDtype(uint32_t dtype, Args &&...args) {
  switch (dtype) {
  case COMET_RT_DTYPE_F16:
    return F<F16>::run(std::forward<Args>(args)...);
  case COMET_RT_DTYPE_BF16:
    return F<BF16>::run(std::forward<Args>(args)...);
  default:
    return F<F32>::run(std::forward<Args>(args)...);
  }
}

template <typename E> struct CompressSzFn {
  static comet_rt_status run(const uint8_t *x, Header &h, uint8_t *out,
                             size_t cap, size_t *outSize, int entropy,
                             const double *channelEb) {
    if (h.version == format::kFormatVersion1)
      return compressSz<E>(x, h, out, cap, outSize);
    return compressSzV2<E>(x, h, out, cap, outSize, entropy, channelEb);
  }
};
template <typename E> struct DecompressSzFn {
  static comet_rt_status run(const uint8_t *in, const Header &h, uint8_t *out) {
    if (h.version == format::kFormatVersion1)
      return decompressSz<E>(in, h, out);
    return decompressSzV2<E>(in, h, out);
  }
};
template <typename E> struct CompressMaskFn {
  static int run(const uint8_t *x, uint64_t n, uint8_t *out) {
    compressMask<E>(x, n, out);
    return 0;
  }
};
template <typename E> struct DecompressMaskFn {
  static comet_rt_status run(const uint8_t *in, uint64_t n, uint8_t *out) {
    return decompressMask<E>(in, n, out);
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// Entry points.
//===----------------------------------------------------------------------===//

size_t dtypeSize(int dtype) { return format::dtypeSize(uint32_t(dtype)); }

size_t maxCompressedSize(int codec, int dtype, uint64_t n) {
  uint64_t es = dtypeSize(dtype), bytes, total = kHeaderSize;
  if (!es || !validCodec(codec) || mulOverflow(n, es, bytes))
    return 0;
  switch (codec) {
  case COMET_RT_CODEC_RAW:
    total += bytes;
    break;
  case COMET_RT_CODEC_MASK:
    total += ceilDiv(n, 8);
    break;
  case COMET_RT_CODEC_SZ:
    // Version 2: a u32 size and a chunk header per chunk; a block never
    // costs more than its descriptor, its aux byte and its raw bytes. This
    // also bounds a version 1 stream.
    total += (4 + format::kChunkHeaderSize) * ceilDiv(n, kChunkElems) +
             2 * ceilDiv(n, kBlockSize) + bytes;
    break;
  }
  if (total > std::numeric_limits<size_t>::max())
    return 0;
  return size_t(total);
}

void setNumThreads(int n) { gNumThreads.store(n > 0 ? n : 0); }

int numThreads() {
  int n = gNumThreads.load();
  return n > 0 ? n : std::max(1, omp_get_max_threads());
}

comet_rt_status setIsa(int isa) {
  if (isa < COMET_RT_CODEC_ISA_AUTO || isa > COMET_RT_CODEC_ISA_AVX2)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  if (isa == COMET_RT_CODEC_ISA_AVX2 && !cpuHasAvx2())
    return COMET_RT_ERROR_UNSUPPORTED;
  gIsa.store(isa);
  return COMET_RT_SUCCESS;
}

int activeIsa() {
  return useAvx2() ? COMET_RT_CODEC_ISA_AVX2 : COMET_RT_CODEC_ISA_BASELINE;
}

comet_rt_status setEntropy(int entropy) {
  if (entropy < COMET_RT_CODEC_ENTROPY_AUTO ||
      entropy > COMET_RT_CODEC_ENTROPY_NONE)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  gEntropy.store(entropy);
  return COMET_RT_SUCCESS;
}

int entropy() { return gEntropy.load(); }

comet_rt_status compress(int codec, int dtype, const void *data,
                         const uint64_t *dims, uint32_t rank, double eb,
                         void *out, size_t outCapacity, size_t *outSize) {
  return compressVersion(format::kFormatVersion, codec, dtype, data, dims, rank,
                         eb, out, outCapacity, outSize);
}

comet_rt_status compressVersion(int version, int codec, int dtype,
                                const void *data, const uint64_t *dims,
                                uint32_t rank, double eb, void *out,
                                size_t outCapacity, size_t *outSize) {
  return compressWith(version, gEntropy.load(std::memory_order_relaxed), codec,
                      dtype, data, dims, rank, eb, out, outCapacity, outSize);
}

// compressWith with, where channelEb is not null, one bound per channel
// (version 2 sz only; eb is then their largest).
static comet_rt_status compressImpl(int version, int entropy, int codec,
                                    int dtype, const void *data,
                                    const uint64_t *dims, uint32_t rank,
                                    double eb, const double *channelEb,
                                    void *out, size_t outCapacity,
                                    size_t *outSize) {
  if (!outSize || (!out && outCapacity) || (rank && !dims) ||
      rank > COMET_RT_CODEC_MAX_RANK || !validCodec(codec) ||
      !validDtype(dtype) ||
      (version != format::kFormatVersion1 &&
       version != format::kFormatVersion) ||
      entropy < COMET_RT_CODEC_ENTROPY_AUTO ||
      entropy > COMET_RT_CODEC_ENTROPY_NONE)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  *outSize = 0;
  Header h;
  h.version = uint32_t(version);
  h.codec = uint32_t(codec);
  h.dtype = uint32_t(dtype);
  h.rank = rank;
  for (uint32_t i = 0; i < rank; ++i)
    h.dims[i] = dims[i];
  uint64_t es = dtypeSize(dtype), bytes;
  if (!elementCount(h.dims, rank, h.n) || mulOverflow(h.n, es, bytes) ||
      bytes > (uint64_t(1) << 62) || (h.n && !data))
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  const uint8_t *x = static_cast<const uint8_t *>(data);
  uint8_t *o = static_cast<uint8_t *>(out);

  if (codec == COMET_RT_CODEC_SZ) {
    h.eb = eb;
    h.flags = channelEb ? format::kFlagChannelBounds : 0;
    QuantParams qp;
    if (!quantParams(eb, qp))
      return COMET_RT_ERROR_INVALID_ARGUMENT;
    return dispatchDtype<CompressSzFn>(h.dtype, x, h, o, outCapacity, outSize,
                                       entropy, channelEb);
  }
  h.payloadBytes = codec == COMET_RT_CODEC_RAW ? bytes : ceilDiv(h.n, 8);
  uint64_t total = kHeaderSize + h.payloadBytes;
  *outSize = size_t(total);
  if (total > outCapacity)
    return COMET_RT_ERROR_BUFFER_TOO_SMALL;
  encodeHeader(h, o);
  if (codec == COMET_RT_CODEC_RAW)
    parallelCopy(o + kHeaderSize, x, bytes);
  else
    dispatchDtype<CompressMaskFn>(h.dtype, x, h.n, o + kHeaderSize);
  return COMET_RT_SUCCESS;
}

comet_rt_status compressWith(int version, int entropy, int codec, int dtype,
                             const void *data, const uint64_t *dims,
                             uint32_t rank, double eb, void *out,
                             size_t outCapacity, size_t *outSize) {
  return compressImpl(version, entropy, codec, dtype, data, dims, rank, eb,
                      nullptr, out, outCapacity, outSize);
}

comet_rt_status compressChannels(int entropy, int dtype, const void *data,
                                 const uint64_t *dims, uint32_t rank,
                                 const double *eb, void *out,
                                 size_t outCapacity, size_t *outSize) {
  if (rank < 2 || !dims || dims[1] == 0 || !eb)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  double largest = 0;
  for (uint64_t c = 0; c < dims[1]; ++c) {
    QuantParams qp;
    if (!quantParams(eb[c], qp))
      return COMET_RT_ERROR_INVALID_ARGUMENT;
    largest = std::max(largest, eb[c]);
  }
  return compressImpl(format::kFormatVersion, entropy, COMET_RT_CODEC_SZ, dtype,
                      data, dims, rank, largest, eb, out, outCapacity, outSize);
}

comet_rt_status getInfo(const void *in, size_t inSize,
                        comet_rt_codec_info *info) {
  if (!info)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  Header h;
  comet_rt_status st = parseHeader(static_cast<const uint8_t *>(in), inSize, h);
  if (st != COMET_RT_SUCCESS)
    return st;
  *info = comet_rt_codec_info();
  info->version = h.version;
  info->codec = h.codec;
  info->dtype = h.dtype;
  info->rank = h.rank;
  for (unsigned i = 0; i < COMET_RT_CODEC_MAX_RANK; ++i)
    info->dims[i] = h.dims[i];
  info->num_elements = h.n;
  info->eb = h.eb;
  info->block_size = h.blockSize;
  info->num_blocks = h.numBlocks;
  info->num_sparse_blocks = h.numSparse;
  if (h.codec == COMET_RT_CODEC_SZ && h.version == format::kFormatVersion) {
    info->num_blocks = ceilDiv(h.n, kBlockSize); // the header counts chunks
    info->num_sparse_blocks = 0;                 // v2 does not count them
  }
  info->payload_bytes = h.payloadBytes;
  info->num_outliers = h.numOutliers;
  info->compressed_bytes = h.totalBytes;
  info->decompressed_bytes = h.n * dtypeSize(h.dtype);
  info->channel_bounds = (h.flags & format::kFlagChannelBounds) ? 1 : 0;
  return COMET_RT_SUCCESS;
}

comet_rt_status decompress(const void *in, size_t inSize, void *out,
                           size_t outCapacity) {
  Header h;
  const uint8_t *p = static_cast<const uint8_t *>(in);
  comet_rt_status st = parseHeader(p, inSize, h);
  if (st != COMET_RT_SUCCESS)
    return st;
  uint64_t bytes = h.n * dtypeSize(h.dtype);
  if (bytes > outCapacity)
    return COMET_RT_ERROR_BUFFER_TOO_SMALL;
  if (bytes && !out)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  uint8_t *o = static_cast<uint8_t *>(out);
  switch (h.codec) {
  case COMET_RT_CODEC_RAW:
    parallelCopy(o, p + kHeaderSize, bytes);
    return COMET_RT_SUCCESS;
  case COMET_RT_CODEC_MASK:
    return dispatchDtype<DecompressMaskFn>(h.dtype, p + kHeaderSize, h.n, o);
  default:
    return dispatchDtype<DecompressSzFn>(h.dtype, p, h, o);
  }
}

} // namespace comet::kernels::cpu
