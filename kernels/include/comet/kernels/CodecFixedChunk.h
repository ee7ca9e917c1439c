//===- CodecFixedChunk.h - v2 chunks in the fixed-width modes --*- C++ -*-===//
//
// A version 2 sz chunk coded with the fixed-width block modes only (absent,
// dense, sparse, raw: no Rice block modes, no coded chunks), chosen by the
// version 2 cost rule (docs/codec-format.md, "Choosing the mode (version 2
// encoder)") restricted to those modes. It is what the CPU encoder writes
// under COMET_RT_CODEC_ENTROPY_NONE and what a GPU encoder can write without
// any serial stage: every block's plan depends on its own 64 codes, and a
// chunk's layout on its blocks' sizes (a prefix sum). Plain integer code and
// the format's scalar quantizer, so that it compiles for host and device
// with the same bytes; CodecFixedChunkTest runs it on the host against the
// CPU encoder, byte for byte.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_KERNELS_CODECFIXEDCHUNK_H
#define COMET_KERNELS_CODECFIXEDCHUNK_H

#include "comet/kernels/CodecFormat.h"

namespace comet::kernels::format {

// Element i of a little-endian array of E at any alignment.
template <typename E>
COMET_HD uint32_t loadElemLE(const uint8_t *x, uint32_t i) {
  const uint8_t *p = x + size_t(i) * E::size;
  return E::size == 4 ? loadU32(p) : uint32_t(p[0]) | uint32_t(p[1]) << 8;
}

// One block's quantization and fixed-width plan.
struct FixedBlock {
  int32_t q[kBlockSize];    // codes, 0 at outliers
  uint32_t res[kBlockSize]; // dense codes: outliers repeat the previous code
  uint64_t bad = 0, nz = 0; // outliers; q != 0
  uint32_t len = 0;
  uint8_t mode = kV2Dense, param = 0;
  bool present = false;
  bool allPos = true;
  uint32_t bytes = 0; // the body
};

COMET_HD uint32_t packedBytesOf(uint32_t count, uint32_t w) {
  return uint32_t(ceilDiv(uint64_t(count) * w, 8));
}

// Quantizes the len (1..64) elements at x and plans the block: absent when
// every code is 0 and there is no outlier, else the cheapest of dense,
// sparse (positive when no code is negative) and raw, ties to the earlier.
template <typename E>
COMET_HD void planFixedBlock(const uint8_t *x, uint32_t len,
                             const QuantParams &qp, FixedBlock &b) {
  b.len = len;
  b.bad = b.nz = 0;
  uint32_t resOr = 0, zzOr = 0, posOr = 0;
  bool allPos = true;
  int32_t prev = 0;
  for (uint32_t i = 0; i < len; ++i) {
    bool bad;
    const int32_t v = quantize<E>(loadElemLE<E>(x, i), qp, &bad);
    b.q[i] = v;
    b.bad |= uint64_t(bad) << i;
    b.nz |= uint64_t(v != 0) << i;
    const int32_t d = bad ? prev : v;
    b.res[i] = zigzag(d - prev);
    prev = d;
    resOr |= b.res[i];
    zzOr |= zigzag(v);
    allPos = allPos && v >= 0;
    posOr |= v > 0 ? uint32_t(v - 1) : 0u;
  }
  b.allPos = allPos;
  b.present = b.nz != 0 || b.bad != 0;
  if (!b.present)
    return;
  const uint32_t numBad = popcount64(b.bad), nnz = popcount64(b.nz);
  const uint64_t outlierCost = uint64_t(numBad) * (2 + E::size);
  const uint32_t dw = bitWidth(resOr);
  uint64_t best = 1 + packedBytesOf(len, dw) + outlierCost;
  b.mode = kV2Dense;
  b.param = uint8_t(dw);
  b.bytes = packedBytesOf(len, dw);
  const uint32_t sw = allPos ? bitWidth(posOr) : bitWidth(zzOr);
  const uint32_t sparseBody =
      uint32_t(ceilDiv(len, 8)) + packedBytesOf(nnz, sw);
  if (2 + sparseBody + outlierCost < best) {
    best = 2 + sparseBody + outlierCost;
    b.mode = allPos ? kV2SparsePositive : kV2SparseSigned;
    b.param = uint8_t(sw);
    b.bytes = sparseBody;
  }
  if (1 + uint64_t(len) * E::size < best) {
    b.mode = kV2Raw;
    b.param = 0;
    b.bytes = len * E::size;
  }
}

// ORs the w-bit value v into the LSB-first bit stream out at bit p (out
// zeroed beforehand).
COMET_HD void orBits(uint8_t *out, uint32_t p, uint32_t v, uint32_t w) {
  for (uint32_t k = 0; k < w;) {
    const uint32_t byte = (p + k) >> 3, sh = (p + k) & 7;
    const uint32_t take = minU32(8 - sh, w - k);
    out[byte] |= uint8_t(((v >> k) & ((1u << take) - 1)) << sh);
    k += take;
  }
}

// Writes the block's body (b.bytes bytes) at out; x is the block's
// elements (for raw).
template <typename E>
COMET_HD void writeFixedBody(const FixedBlock &b, const uint8_t *x,
                             uint8_t *out) {
  if (b.mode == kV2Raw) {
    for (uint32_t k = 0; k < b.bytes; ++k)
      out[k] = x[k];
    return;
  }
  for (uint32_t k = 0; k < b.bytes; ++k)
    out[k] = 0;
  const uint32_t w = b.param;
  if (b.mode == kV2Dense) {
    for (uint32_t i = 0; i < b.len; ++i)
      orBits(out, i * w, b.res[i], w);
    return;
  }
  const uint32_t maskBytes = uint32_t(ceilDiv(b.len, 8));
  for (uint32_t k = 0; k < maskBytes; ++k)
    out[k] = uint8_t(b.nz >> (8 * k));
  uint32_t j = 0;
  for (uint32_t i = 0; i < b.len; ++i) {
    const int32_t v = b.q[i];
    if (v == 0)
      continue;
    orBits(out + maskBytes, j++ * w,
           b.mode == kV2SparsePositive ? uint32_t(v - 1) : zigzag(v), w);
  }
}

// The most bytes a chunk of len elements can take: the header, a
// descriptor and an aux byte per block, and every element raw.
COMET_HD uint64_t worstFixedChunkBytes(uint64_t len, uint32_t elemSize) {
  return kChunkHeaderSize + 2 * ceilDiv(len, kBlockSize) + len * elemSize;
}

// Where a present block's parts go in its chunk: its descriptor, aux byte
// (sparse blocks) and first outlier entry by index, its body by byte offset
// from the bodies' start. The exclusive prefix sums over the blocks before
// it, which a GPU computes with a scan.
struct FixedSlot {
  uint32_t desc = 0, aux = 0, body = 0, outlier = 0;
};

COMET_HD bool hasAux(uint8_t mode) {
  return mode == kV2SparseSigned || mode == kV2SparsePositive;
}
// The outliers a block stores in its chunk's tail (a raw block keeps them
// inline).
COMET_HD uint32_t storedOutliers(const FixedBlock &b) {
  return b.present && b.mode != kV2Raw ? popcount64(b.bad) : 0;
}

// A chunk's totals over its planned blocks, and its size (0: all absent).
struct FixedChunk {
  uint64_t bitmap = 0;
  uint32_t nd = 0, na = 0, body = 0, outliers = 0;
  uint64_t bytes = 0;
};

template <typename E> COMET_HD uint64_t fixedChunkBytes(const FixedChunk &c) {
  if (!c.bitmap)
    return 0;
  return kChunkHeaderSize + c.nd + c.na + c.body +
         uint64_t(c.outliers) * (2 + E::size);
}

// What the layout needs of a block's plan: one plain word each, so that a
// GPU can gather them in shared memory (present, aux, outliers: bits 0, 1,
// 2-8; the body's bytes: bits 9-31).
COMET_HD uint32_t fixedSummary(const FixedBlock &b) {
  if (!b.present)
    return 0;
  return 1u | uint32_t(hasAux(b.mode)) << 1 | storedOutliers(b) << 2 |
         b.bytes << 9;
}

// Lays out a chunk from its nbk blocks' summaries: every present block's
// slot (exclusive prefix sums in block order) and the chunk's totals and
// size.
template <typename E>
COMET_HD void layoutFixedChunk(const uint32_t *summary, uint32_t nbk,
                               FixedSlot *slots, FixedChunk &c) {
  c = FixedChunk();
  for (uint32_t b = 0; b < nbk; ++b) {
    const uint32_t v = summary[b];
    slots[b].desc = c.nd;
    slots[b].aux = c.na;
    slots[b].body = c.body;
    slots[b].outlier = c.outliers;
    c.bitmap |= uint64_t(v & 1) << b;
    c.nd += v & 1;
    c.na += (v >> 1) & 1;
    c.outliers += (v >> 2) & 127;
    c.body += v >> 9;
  }
  c.bytes = fixedChunkBytes<E>(c);
}

// Writes the chunk header (bitmap, outlier count) at out.
COMET_HD void writeFixedChunkHeader(const FixedChunk &c, uint8_t *out) {
  storeU64(out, c.bitmap);
  out[8] = uint8_t(c.outliers);
  out[9] = uint8_t(c.outliers >> 8);
}

// Writes block b (present, planned, at slot s) of the chunk c at out; xb
// is the block's elements.
template <typename E>
COMET_HD void writeFixedBlock(const FixedChunk &c, const FixedBlock &fb,
                              uint32_t b, const FixedSlot &s, const uint8_t *xb,
                              uint8_t *out) {
  uint8_t *desc = out + kChunkHeaderSize, *aux = desc + c.nd;
  uint8_t *bodies = aux + c.na, *idx = bodies + c.body;
  uint8_t *val = idx + 2 * c.outliers;
  desc[s.desc] = uint8_t(fb.mode << 5 | fb.param);
  if (hasAux(fb.mode))
    aux[s.aux] = uint8_t(popcount64(fb.nz));
  writeFixedBody<E>(fb, xb, bodies + s.body);
  if (fb.mode == kV2Raw)
    return;
  uint32_t o = s.outlier;
  for (uint64_t m = fb.bad; m; m &= m - 1, ++o) {
    const uint32_t i = ctz64(m), at = b * kBlockSize + i;
    idx[2 * o] = uint8_t(at);
    idx[2 * o + 1] = uint8_t(at >> 8);
    for (uint32_t k = 0; k < E::size; ++k)
      val[E::size * o + k] = xb[size_t(i) * E::size + k];
  }
}

// The whole chunk of len (1..kChunkElems) elements at x, serially: plans
// every block into blocks (room for ceil(len / 64)), lays the chunk out and
// writes it into out (room for worstFixedChunkBytes(len)). Returns its size
// (0: every block absent) and adds its outliers to *numOutliers. The CUDA
// encoder runs the same steps with a thread per block (planFixedBlock,
// fixedSummary), one thread for layoutFixedChunk, then every thread's
// writeFixedBlock.
template <typename E>
COMET_HD uint64_t encodeFixedChunk(const uint8_t *x, uint32_t len,
                                   const QuantParams &qp, FixedBlock *blocks,
                                   uint8_t *out, uint64_t *numOutliers) {
  const uint32_t nbk = uint32_t(ceilDiv(len, kBlockSize));
  uint32_t summary[kChunkBlocks];
  FixedSlot slots[kChunkBlocks];
  for (uint32_t b = 0; b < nbk; ++b) {
    planFixedBlock<E>(x + size_t(b) * kBlockSize * E::size,
                      minU32(kBlockSize, len - b * kBlockSize), qp, blocks[b]);
    summary[b] = fixedSummary(blocks[b]);
  }
  FixedChunk c;
  layoutFixedChunk<E>(summary, nbk, slots, c);
  if (!c.bytes)
    return 0;
  writeFixedChunkHeader(c, out);
  for (uint32_t b = 0; b < nbk; ++b)
    if (blocks[b].present)
      writeFixedBlock<E>(c, blocks[b], b, slots[b],
                         x + size_t(b) * kBlockSize * E::size, out);
  *numOutliers += c.outliers;
  return c.bytes;
}

} // namespace comet::kernels::format

#endif // COMET_KERNELS_CODECFIXEDCHUNK_H
