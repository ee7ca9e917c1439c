/*===- comet/runtime/device.h - The device a runtime context runs on ------===*
 *
 * A context runs the kernels of abi.def on the CPU unless it is put on a
 * CUDA device. Then every block comet_rt_alloc gives out for it is device
 * memory (from one stream-ordered pool, counted as host blocks are), every
 * kernel runs on the context's one CUDA stream, and the host reaches tensor
 * memory only through comet_rt_memcpy / comet_rt_memset.
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_DEVICE_H
#define COMET_RUNTIME_DEVICE_H

#include "comet/runtime/context.h"
#include "comet/runtime/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define COMET_RT_DEVICE_CPU 0
#define COMET_RT_DEVICE_CUDA 1

/* 1 when this runtime was built with its CUDA backend (whether or not the
 * machine has a device), else 0. */
COMET_RT_API int32_t comet_rt_cuda_built(void);

/* Puts ctx on device (COMET_RT_DEVICE_*), CUDA device 0 for CUDA. Only
 * before ctx's first allocation, and not on the default context (NULL),
 * whose blocks the data loader reads on the host. Fails with
 * COMET_RT_ERROR_UNSUPPORTED when the runtime has no CUDA backend or the
 * machine no usable device (comet_rt_last_error says which). */
COMET_RT_API int32_t comet_rt_context_set_device(comet_rt_context *ctx,
                                                 int32_t device);
/* COMET_RT_DEVICE_* of ctx. */
COMET_RT_API int32_t comet_rt_context_get_device(comet_rt_context *ctx);

/* Copies bytes between host memory and ctx's memory, either way; returns
 * when the copy is done (after the work queued before it). On a CPU
 * context: memcpy. */
COMET_RT_API int32_t comet_rt_memcpy(comet_rt_context *ctx, void *dst,
                                     const void *src, size_t bytes);
/* Sets bytes of ctx's memory at dst to value (a byte). */
COMET_RT_API int32_t comet_rt_memset(comet_rt_context *ctx, void *dst,
                                     int value, size_t bytes);
/* Waits for every kernel queued on ctx; reports a failed one. */
COMET_RT_API int32_t comet_rt_synchronize(comet_rt_context *ctx);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_DEVICE_H */
