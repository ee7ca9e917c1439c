//===- Codec.h - CPU codec kernels ------------------------------*- C++ -*-===//
//
// The CPU implementation of the format in docs/codec-format.md. The runtime's
// C ABI (comet/runtime/codec.h) forwards here.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_KERNELS_CPU_CODEC_H
#define COMET_KERNELS_CPU_CODEC_H

#include "comet/kernels/CodecFormat.h"
#include "comet/runtime/codec.h"

#include <cstddef>
#include <cstdint>

namespace comet::kernels::cpu {

// The format's constants are shared with the CUDA codec.
using format::BlockMode;
using format::kBlockSize;
using format::kDense;
using format::kFormatVersion;
using format::kHeaderSize;
using format::kMaxWidth;
using format::kOutlierEntrySize;
using format::kQuantLimit;
using format::kRawBlock;
using format::kRoundMagic;
using format::kSparsePositive;
using format::kSparseSigned;

size_t dtypeSize(int dtype);
size_t maxCompressedSize(int codec, int dtype, uint64_t n);
void setNumThreads(int n);
int numThreads();

comet_rt_status compress(int codec, int dtype, const void *data,
                         const uint64_t *dims, uint32_t rank, double eb,
                         void *out, size_t outCapacity, size_t *outSize);
comet_rt_status compressVersion(int version, int codec, int dtype,
                                const void *data, const uint64_t *dims,
                                uint32_t rank, double eb, void *out,
                                size_t outCapacity, size_t *outSize);
/// compressVersion with the entropy stage given instead of setEntropy's.
comet_rt_status compressWith(int version, int entropy, int codec, int dtype,
                             const void *data, const uint64_t *dims,
                             uint32_t rank, double eb, void *out,
                             size_t outCapacity, size_t *outSize);
/// One bound per channel (dim 1) of an sz stream (format version 2).
comet_rt_status compressChannels(int entropy, int dtype, const void *data,
                                 const uint64_t *dims, uint32_t rank,
                                 const double *eb, void *out,
                                 size_t outCapacity, size_t *outSize);
comet_rt_status setIsa(int isa);
int activeIsa();
comet_rt_status setEntropy(int entropy);
int entropy();
comet_rt_status getInfo(const void *in, size_t inSize,
                        comet_rt_codec_info *info);
comet_rt_status decompress(const void *in, size_t inSize, void *out,
                           size_t outCapacity);

} // namespace comet::kernels::cpu

#endif // COMET_KERNELS_CPU_CODEC_H
