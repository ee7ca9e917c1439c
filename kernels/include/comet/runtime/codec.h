/*===- comet/runtime/codec.h - Error-bounded activation codec C ABI -------===*
 *
 * The byte format is specified in docs/codec-format.md. Every function
 * returns a comet_rt_status (status.h); none of them aborts on bad input.
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_CODEC_H
#define COMET_RUNTIME_CODEC_H

#include "comet/runtime/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum comet_rt_codec {
  COMET_RT_CODEC_RAW = 0,
  COMET_RT_CODEC_SZ = 1,
  COMET_RT_CODEC_MASK = 2
} comet_rt_codec;

typedef enum comet_rt_dtype {
  COMET_RT_DTYPE_F32 = 0,
  COMET_RT_DTYPE_F16 = 1,
  COMET_RT_DTYPE_BF16 = 2
} comet_rt_dtype;

#define COMET_RT_CODEC_MAX_RANK 8

/* What a stream's header says. */
typedef struct comet_rt_codec_info {
  uint32_t version;
  uint32_t codec; /* a comet_rt_codec */
  uint32_t dtype; /* a comet_rt_dtype */
  uint32_t rank;
  uint64_t dims[COMET_RT_CODEC_MAX_RANK];
  uint64_t num_elements;
  double eb;
  uint32_t block_size;
  uint64_t num_blocks;        /* blocks of block_size elements */
  uint64_t num_sparse_blocks; /* version 1 only; 0 in version 2 */
  uint64_t payload_bytes;
  uint64_t num_outliers;
  uint64_t compressed_bytes; /* the whole stream, header included */
  uint64_t decompressed_bytes;
  /* 1: an sz stream with one bound per channel of dim 1 (eb is their
   * largest; comet_rt_codec_compress_channels), else 0 */
  uint32_t channel_bounds;
} comet_rt_codec_info;

/* Codec and dtype arguments are ints holding comet_rt_codec and
 * comet_rt_dtype values, so that any value a caller passes is defined
 * behaviour and gets COMET_RT_ERROR_INVALID_ARGUMENT. */

/* Size in bytes of one element of dtype (0 for an unknown dtype). */
COMET_RT_API size_t comet_rt_dtype_size(int dtype);

/* Worst-case compressed size for n elements; 0 on bad arguments. */
COMET_RT_API size_t comet_rt_codec_max_compressed_size(int codec, int dtype,
                                                       uint64_t n);

/* Threads used by compress and decompress: 0 (the default) means the
 * OpenMP default. The bytes written never depend on it. */
COMET_RT_API void comet_rt_codec_set_num_threads(int num_threads);

/* Compresses the rank-dimensional tensor at data (row-major, dtype elements)
 * into out (capacity out_capacity bytes) and sets *out_size. eb is the
 * absolute error bound of the sz codec and is ignored by raw and mask.
 * When out is too small it returns COMET_RT_ERROR_BUFFER_TOO_SMALL with
 * *out_size the stream's size, which the same call with the same input
 * then fits exactly; out may be NULL with out_capacity 0 (a size query,
 * which for sz costs an encoding). Below the worst-case size the encoder
 * holds no buffer of the stream's size besides out. */
COMET_RT_API comet_rt_status comet_rt_codec_compress(
    int codec, int dtype, const void *data, const uint64_t *dims, uint32_t rank,
    double eb, void *out, size_t out_capacity, size_t *out_size);

/* The stream format version comet_rt_codec_compress writes; decoding reads
 * every version up to it. */
#define COMET_RT_CODEC_FORMAT_VERSION 2

/* comet_rt_codec_compress writing format version 1 or 2 (1: what the CUDA
 * codec writes, kept for it and for streams stored by older builds). */
COMET_RT_API comet_rt_status comet_rt_codec_compress_version(
    int version, int codec, int dtype, const void *data, const uint64_t *dims,
    uint32_t rank, double eb, void *out, size_t out_capacity, size_t *out_size);

/* The instruction set of the CPU encoder's hot loops. The bytes written never
 * depend on it. */
typedef enum comet_rt_codec_isa {
  COMET_RT_CODEC_ISA_AUTO = 0,     /* AVX2 when the CPU has it (default) */
  COMET_RT_CODEC_ISA_BASELINE = 1, /* SSE2 on x86-64 */
  COMET_RT_CODEC_ISA_AVX2 = 2
} comet_rt_codec_isa;

/* Selects the encoder's instruction set for all threads (an int holding a
 * comet_rt_codec_isa); COMET_RT_ERROR_UNSUPPORTED when the CPU lacks it. */
COMET_RT_API comet_rt_status comet_rt_codec_set_isa(int isa);

/* The instruction set the encoder uses now (never AUTO). */
COMET_RT_API int comet_rt_codec_active_isa(void);

/* Whether the sz encoder (format version 2) writes coded chunks (mode 7:
 * one 4096-element chunk through an adaptive range coder, or Golomb-Rice
 * with a k per neighbour-length context). Range coding shrinks
 * near-constant codes (softmax at coarse bounds) 2-3x but makes a chunk
 * 3-8x slower to encode and decode; Rice-coded chunks save 3-13 % on dense
 * and GELU codes at about the block modes' encoding speed. Every setting's
 * bytes decode with the same decoder, to the same values. */
typedef enum comet_rt_codec_entropy {
  /* Rice-coded chunks for dense codes, without planning their blocks;
   * range-coded ones for chunks with at least half their values in blocks
   * that the block modes code in under 2 bits a value (default). */
  COMET_RT_CODEC_ENTROPY_AUTO = 0,
  COMET_RT_CODEC_ENTROPY_OFF = 1, /* never: block chunks only */
  /* both coders on every eligible chunk, the smallest kept */
  COMET_RT_CODEC_ENTROPY_ALWAYS = 2,
  /* no entropy stage at all: block chunks in the fixed-width modes only
   * (absent, dense, sparse, raw), the bytes the CUDA encoder writes
   * (comet/kernels/CodecFixedChunk.h) */
  COMET_RT_CODEC_ENTROPY_NONE = 3
} comet_rt_codec_entropy;

/* Selects it for all threads (an int holding a comet_rt_codec_entropy). */
COMET_RT_API comet_rt_status comet_rt_codec_set_entropy(int entropy);

/* The setting in force. */
COMET_RT_API int comet_rt_codec_get_entropy(void);

/* comet_rt_codec_compress with this call's entropy stage (a
 * comet_rt_codec_entropy) instead of the process-wide setting: what a
 * runtime context uses to give each site its own (comet_rt_site_set_entropy).
 * COMET_RT_ERROR_INVALID_ARGUMENT for a value out of the enum. */
COMET_RT_API comet_rt_status comet_rt_codec_compress_entropy(
    int entropy, int codec, int dtype, const void *data, const uint64_t *dims,
    uint32_t rank, double eb, void *out, size_t out_capacity, size_t *out_size);

/* An sz stream (format version 2) with one bound per channel: eb holds
 * dims[1] bounds, each as comet_rt_codec_compress's, and element i of
 * channel (i / prod(dims[2..rank))) % dims[1] is within its channel's bound.
 * Each 64-element block is quantized at the smallest bound of the channels
 * its elements fall in, so a channel shorter than a block gets the tightest
 * bound among its neighbours there. A BatchNorm input whose channels differ
 * in 1/std is stored at t / inv_std_c per channel instead of
 * t / max(inv_std) for all. rank >= 2 and dims[1] >= 1, and entropy is a
 * comet_rt_codec_entropy; COMET_RT_ERROR_INVALID_ARGUMENT otherwise. The
 * stream is at most comet_rt_codec_max_compressed_size + 8 * dims[1] bytes.
 * The CPU decoder reads it; the CUDA decoder refuses it with
 * COMET_RT_ERROR_UNSUPPORTED. */
COMET_RT_API comet_rt_status comet_rt_codec_compress_channels(
    int entropy, int dtype, const void *data, const uint64_t *dims,
    uint32_t rank, const double *eb, void *out, size_t out_capacity,
    size_t *out_size);

/* Whether one bound per channel can pay for its table on a tensor of these
 * dims: rank >= 2, at least 2 channels, and at least 16 elements per
 * channel and sample (dims 2 and up). With fewer, a 64-element block spans
 * more than four channels and takes the smallest of their bounds, and the
 * table (8 bytes a channel, 64 / (dims[0] * inner) bits a value) costs more
 * than the looser channels save: on MobileNetV2's 1x1 maps at batch 64 the
 * per-channel stream is 5-21 % larger than the one-bound one, on its 2x2
 * maps from 13 % smaller to 5 % larger (docs/benchmarks.md). The runtime stores a slot's tensor with one bound
 * where this is 0. */
COMET_RT_API int comet_rt_codec_channel_bounds_pay(const uint64_t *dims,
                                                   uint32_t rank);

/* Parses and checks the header of the stream at in. */
COMET_RT_API comet_rt_status comet_rt_codec_get_info(const void *in,
                                                     size_t in_size,
                                                     comet_rt_codec_info *info);

/* Decompresses the stream at in into out (capacity out_capacity bytes), which
 * must hold info.decompressed_bytes. The whole stream is validated; on any
 * error nothing beyond out_capacity is written. */
COMET_RT_API comet_rt_status comet_rt_codec_decompress(const void *in,
                                                       size_t in_size,
                                                       void *out,
                                                       size_t out_capacity);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_CODEC_H */
