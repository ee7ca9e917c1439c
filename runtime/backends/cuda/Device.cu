//===- Device.cu - A context on a CUDA device -----------------------------===//
//
// comet_rt_context_set_device(ctx, COMET_RT_DEVICE_CUDA) attaches this
// backend to a context (attach()): one CUDA stream, one stream-ordered
// memory pool (cudaMallocFromPoolAsync, release threshold at its maximum so
// that freed memory is reused, not returned to the driver), a cuBLAS and a
// cuDNN handle bound to that stream. Every block comet_rt_alloc gives out
// for the context is device memory from the pool, counted per category as
// host blocks are, so the report's peak is the device's; cuDNN workspaces
// and kernel temporaries are category workspace.
//
// Kernels take the same memref descriptors as the CPU ones (the
// descriptors are host memory, the data they point to device memory) and
// queue their work on the stream without waiting for it. The host waits
// inside a call only where the dispatcher stages PARAM and SCAN operands
// (abi.def) and where compress reads back the stream's size.
//
// Numerics: cuBLAS in CUBLAS_DEFAULT_MATH (no TF32 for SGEMM), cuDNN
// convolutions in CUDNN_FMA_MATH (no TF32, no tensor-op conversion), the
// files compiled with -fmad=false. COMET_RT_CUDA_CONV_TF32=1 at attach lets
// the convolutions use TF32 tensor cores, as PyTorch does by default.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"
#include "comet/runtime/device.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

namespace comet::rt::cuda {
namespace {

void destroyState(State *s) {
  if (!s)
    return;
  if (s->stream)
    cudaStreamSynchronize(s->stream);
  if (s->dnn)
    cudnnDestroy(s->dnn);
  if (s->blas)
    cublasDestroy(s->blas);
  if (s->stream)
    cudaStreamDestroy(s->stream);
  if (s->pool)
    cudaMemPoolDestroy(s->pool);
  delete s;
}

void *devAlloc(comet_rt_context *ctx, size_t bytes, bool zero) {
  State &s = state(ctx);
  void *p = nullptr;
  if (cudaMallocFromPoolAsync(&p, bytes, s.pool, s.stream) != cudaSuccess) {
    cudaGetLastError(); // out of memory is not sticky
    return nullptr;
  }
  if (zero && cudaMemsetAsync(p, 0, bytes, s.stream) != cudaSuccess) {
    cudaFreeAsync(p, s.stream);
    return nullptr;
  }
  return p;
}

void devFree(comet_rt_context *ctx, void *p) {
  cudaFreeAsync(p, state(ctx).stream);
}

int32_t devCopy(comet_rt_context *ctx, void *dst, const void *src,
                size_t bytes) {
  State &s = state(ctx);
  CU_TRY("comet_rt_memcpy",
         cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.stream));
  CU_TRY("comet_rt_memcpy", cudaStreamSynchronize(s.stream));
  return ok();
}

int32_t devFill(comet_rt_context *ctx, void *dst, int value, size_t bytes) {
  CU_TRY("comet_rt_memset",
         cudaMemsetAsync(dst, value, bytes, state(ctx).stream));
  return ok();
}

int32_t devSync(comet_rt_context *ctx) {
  CU_TRY("comet_rt_synchronize", cudaStreamSynchronize(state(ctx).stream));
  return ok();
}

void devDestroy(comet_rt_context *ctx) {
  destroyState(static_cast<State *>(ctx->deviceState));
  ctx->deviceState = nullptr;
}

const DeviceOps deviceOps = {devAlloc, devFree, devCopy,
                             devFill,  devSync, devDestroy};

} // namespace

int32_t attach(comet_rt_context *ctx) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  // "no CUDA device" only for a machine without one (or without a driver):
  // the tests skip on exactly that message.
  bool noDriver = e == cudaErrorInsufficientDriver &&
                  !dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) &&
                  !dlopen("libcuda.so.1", RTLD_NOW);
  if ((e == cudaSuccess && count == 0) || e == cudaErrorNoDevice || noDriver)
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                concat("no CUDA device (",
                       e != cudaSuccess ? cudaGetErrorString(e)
                                        : "the driver reports 0 devices",
                       ")"));
  if (e != cudaSuccess)
    return cudaFail("cudaGetDeviceCount", e);
  auto *s = new State();
  const char *tf32 = std::getenv("COMET_RT_CUDA_CONV_TF32");
  s->convTf32 = tf32 && *tf32 && std::strcmp(tf32, "0") != 0;
  auto bail = [&](int32_t rc) {
    destroyState(s);
    return rc;
  };
  if ((e = cudaSetDevice(s->device)) != cudaSuccess)
    return bail(cudaFail("cudaSetDevice", e));
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = s->device;
  if ((e = cudaMemPoolCreate(&s->pool, &props)) != cudaSuccess)
    return bail(cudaFail("cudaMemPoolCreate", e));
  // Keep freed memory in the pool: a training step frees and reallocates
  // the same sizes every step.
  uint64_t threshold = UINT64_MAX;
  if ((e = cudaMemPoolSetAttribute(s->pool, cudaMemPoolAttrReleaseThreshold,
                                   &threshold)) != cudaSuccess)
    return bail(cudaFail("cudaMemPoolSetAttribute", e));
  if ((e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) !=
      cudaSuccess)
    return bail(cudaFail("cudaStreamCreate", e));
  cublasStatus_t be;
  if ((be = cublasCreate(&s->blas)) != CUBLAS_STATUS_SUCCESS ||
      (be = cublasSetStream(s->blas, s->stream)) != CUBLAS_STATUS_SUCCESS ||
      (be = cublasSetMathMode(s->blas, CUBLAS_DEFAULT_MATH)) !=
          CUBLAS_STATUS_SUCCESS)
    return bail(blasFail("cuBLAS", be));
  cudnnStatus_t de;
  if ((de = cudnnCreate(&s->dnn)) != CUDNN_STATUS_SUCCESS ||
      (de = cudnnSetStream(s->dnn, s->stream)) != CUDNN_STATUS_SUCCESS)
    return bail(dnnFail("cuDNN", de));
  ctx->deviceState = s;
  ctx->device = &deviceOps;
  ctx->deviceKind = COMET_RT_DEVICE_CUDA;
  return ok();
}

} // namespace comet::rt::cuda
