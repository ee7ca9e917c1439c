/*===- comet/runtime/codec_cuda.h - CUDA activation codec C ABI -----------===*
 *
 * The CUDA implementation of the stream format of docs/codec-format.md: for
 * the same input, dtype and eb it writes the same bytes as the CPU codec
 * (comet/runtime/codec.h), and either decodes the other's streams to the same
 * bits. Data pointers are device pointers; all work is queued on the
 * caller's stream. The blocking calls synchronise the host once, to read
 * back the compressed size (compress) or the status (decompress); the
 * *_async calls leave that word in device memory and never synchronise.
 *
 * The header needs no CUDA header: a comet_rt_cuda_stream is a cudaStream_t
 * (0 is the legacy default stream).
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_CODEC_CUDA_H
#define COMET_RUNTIME_CODEC_CUDA_H

#include "comet/runtime/codec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *comet_rt_cuda_stream;

/* Returned when a CUDA call fails (no device, launch failure, ...); see
 * comet_rt_codec_cuda_last_error for the cudaError_t. Outside the range of
 * comet_rt_status so that it cannot collide with a future CPU status. */
#define COMET_RT_ERROR_CUDA ((comet_rt_status)64)

/* The cudaError_t of the last CUDA failure on this host thread (0: none). */
COMET_RT_API int comet_rt_codec_cuda_last_error(void);

/* The worst-case stream size for n elements, the same bound as
 * comet_rt_codec_max_compressed_size. The compress calls require an output
 * buffer at least this large: its final size is only known on the device. */
COMET_RT_API size_t comet_rt_codec_cuda_max_compressed_size(int codec,
                                                            int dtype,
                                                            uint64_t n);

/* Compresses the device tensor d_data (row-major, dtype elements, dims on the
 * host) into the device buffer d_out (out_capacity bytes, at least the
 * worst case) on stream, waits for the stream once and sets *out_size. */
COMET_RT_API comet_rt_status comet_rt_codec_cuda_compress(
    int codec, int dtype, const void *d_data, const uint64_t *dims,
    uint32_t rank, double eb, void *d_out, size_t out_capacity,
    size_t *out_size, comet_rt_cuda_stream stream);

/* The same without any host synchronisation: the stream size is written, as
 * a uint64_t, to d_out_size (device or mapped memory) when the stream gets
 * there. Arguments are checked on the host before anything is queued. */
COMET_RT_API comet_rt_status comet_rt_codec_cuda_compress_async(
    int codec, int dtype, const void *d_data, const uint64_t *dims,
    uint32_t rank, double eb, void *d_out, size_t out_capacity,
    uint64_t *d_out_size, comet_rt_cuda_stream stream);

/* Decompresses the device stream d_in (in_size bytes) into d_out (capacity
 * out_capacity bytes) on stream. The header, the block sizes and every
 * index are validated on the device; corrupt input gives the status the CPU
 * decoder gives for the same bytes, and no access outside [d_in, d_in +
 * in_size) or [d_out, d_out + out_capacity). Waits for the stream once, to
 * read the status. */
COMET_RT_API comet_rt_status comet_rt_codec_cuda_decompress(
    const void *d_in, size_t in_size, void *d_out, size_t out_capacity,
    comet_rt_cuda_stream stream);

/* The same without host synchronisation: the comet_rt_status, as an int32_t,
 * is written to d_status when the stream gets there. */
COMET_RT_API comet_rt_status comet_rt_codec_cuda_decompress_async(
    const void *d_in, size_t in_size, void *d_out, size_t out_capacity,
    int32_t *d_status, comet_rt_cuda_stream stream);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_CODEC_CUDA_H */
