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
// CPU encoder, byte for byte. Its decoder (below) reads such chunks with a
// thread per block, and the CUDA decoder calls it too; the same test runs
// it on the host against the CPU decoder.
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

// Stores the bits b as element i of a little-endian array of E.
template <typename E>
COMET_HD void storeElemLE(uint8_t *x, uint32_t i, uint32_t b) {
  uint8_t *p = x + size_t(i) * E::size;
  for (uint32_t k = 0; k < E::size; ++k)
    p[k] = uint8_t(b >> (8 * k));
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

//===----------------------------------------------------------------------===//
// Decoding. A version 2 sz stream whose chunks use the fixed-width modes
// only decodes without any serial stage across blocks: a chunk's layout
// follows from its descriptors and sparse counts (one pass over at most 64
// bytes), then every block decodes on its own, then the outliers overwrite
// their elements. The checks are the CPU decoder's, in its order, so that a
// stream both accept decodes to the same bits, and a corrupt one gets the
// same status. Rice blocks (modes 4-6) and coded chunks (mode 7) are
// refused as COMET_RT_ERROR_UNSUPPORTED before anything is decoded
// (fixedChunkRefusal); a GPU would decode them only in series.
//===----------------------------------------------------------------------===//

// The name of a version 2 mode (coded chunks: 7), for messages.
inline const char *v2ModeName(uint32_t mode) {
  switch (mode) {
  case kV2Dense:
    return "dense";
  case kV2SparseSigned:
    return "sparse signed";
  case kV2SparsePositive:
    return "sparse positive";
  case kV2Raw:
    return "raw";
  case kV2RiceLorenzo:
    return "Rice Lorenzo";
  case kV2RicePlain:
    return "Rice plain";
  case kV2RiceLorenzo2d:
    return "Rice 2-D Lorenzo";
  case kV2Coded:
    return "coded chunk";
  default:
    return "unknown";
  }
}

// The first mode of the chunk at in (size bytes, len elements) that the
// fixed-width decoder does not decode: 7 for a coded chunk (outlier count
// bit 15), else the first descriptor of mode 4, 5 or 6; 0 when there is
// none or the chunk is too short to say (its decoder then finds it
// corrupt).
COMET_HD uint32_t fixedChunkRefusal(const uint8_t *in, uint64_t size) {
  if (size < kChunkHeaderSize)
    return 0;
  if (in[9] & (kCodedChunkFlag >> 8))
    return kV2Coded;
  const uint32_t nd = popcount64(loadU64(in));
  if (kChunkHeaderSize + uint64_t(nd) > size)
    return 0;
  for (uint32_t i = 0; i < nd; ++i) {
    const uint32_t mode = in[kChunkHeaderSize + i] >> 5;
    if (mode >= kV2RiceLorenzo && mode < kV2NumModes)
      return mode;
  }
  return 0;
}

// A checked chunk: where its parts start, and each block's descriptor,
// sparse count and body offset (valid for present blocks).
struct FixedView {
  uint64_t bitmap = 0;
  uint32_t nd = 0, outliers = 0;
  uint32_t bodies = 0, idx = 0, val = 0; // byte offsets in the chunk
  uint8_t desc[kChunkBlocks];
  uint8_t nnz[kChunkBlocks];
  uint32_t body[kChunkBlocks];
};

// The body bytes of a block of len elements, mode and width w, nnz nonzeros.
template <typename E>
COMET_HD uint32_t fixedBodyBytes(uint32_t mode, uint32_t w, uint32_t nnz,
                                 uint32_t len) {
  if (mode == kV2Raw)
    return len * E::size;
  if (mode == kV2Dense)
    return packedBytesOf(len, w);
  return uint32_t(ceilDiv(len, 8)) + packedBytesOf(nnz, w);
}

// Checks the chunk at in (size > 0 bytes, len elements) up to its outlier
// list and fills v: the bitmap (nonzero, no bit past the chunk), every
// descriptor (mode below 4, width at most 24, raw with width 0), every
// sparse count (at most the block's length) and the parts' sizes, which
// must add up to size. COMET_RT_ERROR_UNSUPPORTED for a coded chunk or a
// Rice descriptor.
template <typename E>
COMET_HD comet_rt_status layoutFixedDecode(const uint8_t *in, uint64_t size,
                                           uint32_t len, FixedView &v) {
  const uint32_t nbk = uint32_t(ceilDiv(len, kBlockSize));
  if (size < kChunkHeaderSize)
    return COMET_RT_ERROR_CORRUPT;
  v.bitmap = loadU64(in);
  const uint32_t nOut = uint32_t(in[8]) | uint32_t(in[9]) << 8;
  if (!v.bitmap || (nbk < 64 && (v.bitmap >> nbk)))
    return COMET_RT_ERROR_CORRUPT;
  if (nOut & kCodedChunkFlag)
    return COMET_RT_ERROR_UNSUPPORTED;
  v.nd = popcount64(v.bitmap);
  v.outliers = nOut;
  uint64_t pos = kChunkHeaderSize;
  if (pos + v.nd > size)
    return COMET_RT_ERROR_CORRUPT;
  const uint8_t *desc = in + pos;
  uint32_t na = 0;
  bool rice = false;
  for (uint32_t i = 0; i < v.nd; ++i) {
    const uint32_t mode = desc[i] >> 5, w = desc[i] & 31;
    if (mode >= kV2NumModes || w > kMaxWidth || (mode == kV2Raw && w != 0))
      return COMET_RT_ERROR_CORRUPT;
    rice = rice || mode >= kV2RiceLorenzo;
    na += mode != kV2Dense && mode != kV2Raw;
  }
  if (rice)
    return COMET_RT_ERROR_UNSUPPORTED;
  pos += v.nd;
  if (pos + na > size)
    return COMET_RT_ERROR_CORRUPT;
  const uint8_t *aux = in + pos;
  pos += na;
  uint64_t bodyTotal = 0;
  uint32_t i = 0, a = 0;
  for (uint64_t m = v.bitmap; m; m &= m - 1, ++i) {
    const uint32_t b = ctz64(m);
    const uint32_t bl = minU32(kBlockSize, len - b * kBlockSize);
    const uint32_t mode = desc[i] >> 5, w = desc[i] & 31;
    uint32_t c = 0;
    if (hasAux(uint8_t(mode))) {
      c = aux[a++];
      if (c > bl)
        return COMET_RT_ERROR_CORRUPT;
    }
    v.desc[b] = desc[i];
    v.nnz[b] = uint8_t(c);
    v.body[b] = uint32_t(bodyTotal);
    bodyTotal += fixedBodyBytes<E>(mode, w, c, bl);
  }
  if (pos + bodyTotal + uint64_t(nOut) * (2 + E::size) != size)
    return COMET_RT_ERROR_CORRUPT;
  v.bodies = uint32_t(pos);
  v.idx = uint32_t(pos + bodyTotal);
  v.val = v.idx + 2 * nOut;
  return COMET_RT_SUCCESS;
}

// Whether outlier k of the checked chunk at in is well placed: its index
// below len, above the one before it, in a present block that is not raw.
COMET_HD bool fixedOutlierOk(const uint8_t *in, const FixedView &v, uint32_t k,
                             uint32_t len) {
  const uint8_t *idx = in + v.idx;
  const uint32_t i = uint32_t(idx[2 * k]) | uint32_t(idx[2 * k + 1]) << 8;
  if (i >= len)
    return false;
  if (k > 0 && i <= (uint32_t(idx[2 * k - 2]) | uint32_t(idx[2 * k - 1]) << 8))
    return false;
  const uint32_t b = i / kBlockSize;
  return ((v.bitmap >> b) & 1) && (v.desc[b] >> 5) != kV2Raw;
}

// The w-bit value at bit p of the LSB-first stream at src, reading only
// the bytes that hold its bits (w <= 24).
COMET_HD uint32_t readBits(const uint8_t *src, uint32_t p, uint32_t w) {
  if (w == 0)
    return 0;
  const uint32_t byte = p >> 3, sh = p & 7;
  const uint32_t nbytes = ((sh + w - 1) >> 3) + 1;
  uint64_t acc = 0;
  for (uint32_t k = 0; k < nbytes; ++k)
    acc |= uint64_t(src[byte + k]) << (8 * k);
  return uint32_t(acc >> sh) & ((1u << w) - 1);
}

// Decodes block b of the checked chunk at in into out (the chunk's first
// element); an absent block gives +0.0. False when a sparse block's mask
// disagrees with its count or has bits past the block.
template <typename E>
COMET_HD bool decodeFixedBlock(const uint8_t *in, const FixedView &v,
                               uint32_t b, uint32_t len, const QuantParams &qp,
                               uint8_t *out) {
  const uint32_t i0 = b * kBlockSize, bl = minU32(kBlockSize, len - i0);
  uint8_t *dst = out + size_t(i0) * E::size;
  if (!((v.bitmap >> b) & 1)) {
    for (uint32_t k = 0; k < bl * E::size; ++k)
      dst[k] = 0;
    return true;
  }
  const uint32_t mode = v.desc[b] >> 5, w = v.desc[b] & 31;
  const uint8_t *src = in + v.bodies + v.body[b];
  if (mode == kV2Raw) {
    for (uint32_t k = 0; k < bl * E::size; ++k)
      dst[k] = src[k];
    return true;
  }
  if (mode == kV2Dense) {
    uint32_t acc = 0; // wraps on corrupt input, as the CPU's does
    for (uint32_t j = 0; j < bl; ++j) {
      acc += uint32_t(unzigzag(readBits(src, j * w, w)));
      storeElemLE<E>(dst, j, dequantize<E>(int32_t(acc), qp));
    }
    return true;
  }
  const uint32_t maskBytes = uint32_t(ceilDiv(bl, 8));
  uint64_t mask = 0;
  for (uint32_t k = 0; k < maskBytes; ++k)
    mask |= uint64_t(src[k]) << (8 * k);
  if (popcount64(mask) != v.nnz[b] || (bl < 64 && (mask >> bl)))
    return false;
  const uint8_t *vals = src + maskBytes;
  uint32_t k = 0;
  for (uint32_t j = 0; j < bl; ++j) {
    int32_t q = 0;
    if ((mask >> j) & 1) {
      const uint32_t c = readBits(vals, k++ * w, w);
      q = mode == kV2SparsePositive ? int32_t(c + 1) : unzigzag(c);
    }
    storeElemLE<E>(dst, j, dequantize<E>(q, qp));
  }
  return true;
}

// Writes outlier k of the checked chunk at in over its element in out.
template <typename E>
COMET_HD void placeFixedOutlier(const uint8_t *in, const FixedView &v,
                                uint32_t k, uint8_t *out) {
  const uint8_t *idx = in + v.idx;
  const uint32_t i = uint32_t(idx[2 * k]) | uint32_t(idx[2 * k + 1]) << 8;
  for (uint32_t j = 0; j < E::size; ++j)
    out[size_t(i) * E::size + j] = in[v.val + E::size * k + j];
}

// The whole chunk at in (size bytes, len elements) into out, serially:
// what the CUDA decoder runs with one CTA per chunk (layoutFixedDecode by
// one thread, the outlier checks and then decodeFixedBlock by a thread per
// block, placeFixedOutlier after a barrier). Adds its outliers to
// *numOutliers.
template <typename E>
COMET_HD comet_rt_status decodeFixedChunk(const uint8_t *in, uint64_t size,
                                          uint32_t len, const QuantParams &qp,
                                          FixedView &v, uint8_t *out,
                                          uint64_t *numOutliers) {
  if (size == 0) {
    for (uint64_t k = 0; k < uint64_t(len) * E::size; ++k)
      out[k] = 0;
    return COMET_RT_SUCCESS;
  }
  comet_rt_status st = layoutFixedDecode<E>(in, size, len, v);
  if (st != COMET_RT_SUCCESS)
    return st;
  for (uint32_t k = 0; k < v.outliers; ++k)
    if (!fixedOutlierOk(in, v, k, len))
      return COMET_RT_ERROR_CORRUPT;
  const uint32_t nbk = uint32_t(ceilDiv(len, kBlockSize));
  for (uint32_t b = 0; b < nbk; ++b)
    if (!decodeFixedBlock<E>(in, v, b, len, qp, out))
      return COMET_RT_ERROR_CORRUPT;
  for (uint32_t k = 0; k < v.outliers; ++k)
    placeFixedOutlier<E>(in, v, k, out);
  *numOutliers += v.outliers;
  return COMET_RT_SUCCESS;
}

// Checks a version 2 sz stream's chunk table (h parsed by parseHeader):
// every size at most its chunk's worst case, their sum the payload. Fills
// offsets (h.numBlocks + 1 entries) when given.
COMET_HD comet_rt_status checkFixedTable(const uint8_t *in, const Header &h,
                                         uint64_t *offsets) {
  const uint32_t es = dtypeSize(h.dtype);
  const uint8_t *table = in + kHeaderSize;
  uint64_t sum = 0;
  for (uint64_t c = 0; c < h.numBlocks; ++c) {
    if (offsets)
      offsets[c] = sum;
    const uint64_t len = minU64(kChunkElems, h.n - c * kChunkElems);
    const uint64_t size = loadU32(table + 4 * c);
    if (size > worstFixedChunkBytes(len, es))
      return COMET_RT_ERROR_CORRUPT;
    sum += size;
  }
  if (offsets)
    offsets[h.numBlocks] = sum;
  return sum == h.payloadBytes ? COMET_RT_SUCCESS : COMET_RT_ERROR_CORRUPT;
}

// Why the fixed-width decoder refuses a stream whose header and table
// check: the first chunk (in stream order) with a mode it does not decode,
// and that mode; mode 0 when it decodes every chunk.
struct FixedRefusal {
  uint64_t chunk = 0;
  uint32_t mode = 0;
};

// Host code: the serial composition of the decoder of a whole stream, the
// CUDA decoder's steps in its order (the header and table, the refusal,
// every chunk, the outlier total); the host emulation that the tests and
// the fuzzer check against the CPU decoder. *refusal (when given) names the
// chunk and mode of a refusal (COMET_RT_ERROR_UNSUPPORTED); a valid stream
// that is not version 2 sz is unsupported too, with mode 0 (the CUDA
// codec's version 1 kernel reads those).
inline comet_rt_status decodeFixedStream(const uint8_t *in, uint64_t inSize,
                                         uint8_t *out, uint64_t outCapacity,
                                         FixedRefusal *refusal = nullptr) {
  Header h;
  comet_rt_status st = parseHeader(in, inSize, h);
  if (st != COMET_RT_SUCCESS)
    return st;
  if (h.flags & kFlagChannelBounds)
    return COMET_RT_ERROR_UNSUPPORTED; // the CPU codec's alone
  const uint32_t es = dtypeSize(h.dtype);
  if (h.n * es > outCapacity)
    return COMET_RT_ERROR_BUFFER_TOO_SMALL;
  if (h.n && !out)
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  if (h.codec != COMET_RT_CODEC_SZ || h.version != kFormatVersion)
    return COMET_RT_ERROR_UNSUPPORTED; // not this decoder's
  if ((st = checkFixedTable(in, h, nullptr)) != COMET_RT_SUCCESS)
    return st;
  const uint8_t *chunks = in + kHeaderSize + 4 * h.numBlocks;
  uint64_t off = 0;
  for (uint64_t c = 0; c < h.numBlocks; ++c) {
    const uint64_t size = loadU32(in + kHeaderSize + 4 * c);
    if (const uint32_t mode = fixedChunkRefusal(chunks + off, size)) {
      if (refusal)
        *refusal = FixedRefusal{c, mode};
      return COMET_RT_ERROR_UNSUPPORTED;
    }
    off += size;
  }
  QuantParams qp;
  quantParams(h.eb, qp); // checked by parseHeader
  FixedView v;
  uint64_t outliers = 0;
  off = 0;
  for (uint64_t c = 0; c < h.numBlocks; ++c) {
    const uint64_t size = loadU32(in + kHeaderSize + 4 * c);
    const uint32_t len = uint32_t(minU64(kChunkElems, h.n - c * kChunkElems));
    uint8_t *o = out + c * kChunkElems * es;
    st = h.dtype == COMET_RT_DTYPE_F32
             ? decodeFixedChunk<F32>(chunks + off, size, len, qp, v, o,
                                     &outliers)
         : h.dtype == COMET_RT_DTYPE_F16
             ? decodeFixedChunk<F16>(chunks + off, size, len, qp, v, o,
                                     &outliers)
             : decodeFixedChunk<BF16>(chunks + off, size, len, qp, v, o,
                                      &outliers);
    if (st != COMET_RT_SUCCESS)
      return st;
    off += size;
  }
  return outliers == h.numOutliers ? COMET_RT_SUCCESS : COMET_RT_ERROR_CORRUPT;
}

} // namespace comet::kernels::format

#endif // COMET_KERNELS_CODECFIXEDCHUNK_H
