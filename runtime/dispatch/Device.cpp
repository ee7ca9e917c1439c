//===- Device.cpp - Putting a context on a device; host <-> device copies -===//
//
// comet/runtime/device.h. The CUDA backend (runtime/backends/cuda)
// attaches itself to a context here when the runtime was built with it.
//
//===----------------------------------------------------------------------===//
#include "comet/runtime/device.h"
#include "Backends.h"
#include "Context.h"

#include <cstring>

using comet::rt::fail;

extern "C" {

int32_t comet_rt_cuda_built(void) {
#ifdef COMET_RT_WITH_CUDA
  return 1;
#else
  return 0;
#endif
}

int32_t comet_rt_context_set_device(comet_rt_context *ctx, int32_t device) {
  if (!ctx || ctx == comet_rt_default_context())
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "comet_rt_context_set_device: not on the default context");
  if (device == ctx->deviceKind)
    return comet::rt::ok();
  comet_rt_alloc_stats st;
  comet_rt_alloc_get_stats(ctx, &st);
  if (st.live_blocks != 0 || ctx->device)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "comet_rt_context_set_device: the context already has "
                "memory or a device");
  if (device != COMET_RT_DEVICE_CUDA)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "comet_rt_context_set_device: unknown device " +
                    std::to_string(device));
#ifdef COMET_RT_WITH_CUDA
  return comet::rt::cuda::attach(ctx);
#else
  return fail(COMET_RT_ERROR_UNSUPPORTED,
              "this runtime was built without its CUDA backend (nvcc and "
              "cuDNN were not found when it was configured)");
#endif
}

int32_t comet_rt_context_get_device(comet_rt_context *ctx) {
  return comet::rt::resolve(ctx)->deviceKind;
}

int32_t comet_rt_memcpy(comet_rt_context *ctx, void *dst, const void *src,
                        size_t bytes) {
  ctx = comet::rt::resolve(ctx);
  if (bytes == 0)
    return comet::rt::ok();
  if (ctx->device)
    return ctx->device->copy(ctx, dst, src, bytes);
  std::memcpy(dst, src, bytes);
  return comet::rt::ok();
}

int32_t comet_rt_memset(comet_rt_context *ctx, void *dst, int value,
                        size_t bytes) {
  ctx = comet::rt::resolve(ctx);
  if (bytes == 0)
    return comet::rt::ok();
  if (ctx->device)
    return ctx->device->fill(ctx, dst, value, bytes);
  std::memset(dst, value, bytes);
  return comet::rt::ok();
}

int32_t comet_rt_synchronize(comet_rt_context *ctx) {
  ctx = comet::rt::resolve(ctx);
  return ctx->device ? ctx->device->synchronize(ctx) : comet::rt::ok();
}

} // extern "C"
