//===- Common.cuh - What the CUDA backend's families share ----------------===//
//
// The context's device state (one stream, one memory pool, a cuBLAS and a
// cuDNN handle), error reporting for CUDA, cuDNN and cuBLAS calls, launch
// helpers and numpy broadcasting in device code. Not installed.
//
// Numerics: the files are compiled with -fmad=false, IEEE division and
// square root, so that a kernel rounds as the CPU backend's loop does.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_BACKENDS_CUDA_COMMON_CUH
#define COMET_RUNTIME_BACKENDS_CUDA_COMMON_CUH

#include "Context.h"
#include "Cuda.h"
#include "Shapes.h"
#include "Workspace.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>

namespace comet::rt::cuda {

/// The device state of a context (Device.cu creates and destroys it).
struct State {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudaMemPool_t pool = nullptr;
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;
  /// COMET_RT_CUDA_CONV_TF32 set at attach: convolutions may take cuDNN's
  /// TF32 tensor-core algorithms (PyTorch's default for cuDNN), not only
  /// FP32 FMA ones; results then differ from the CPU's beyond 1e-4.
  bool convTf32 = false;
  /// Convolution algorithms by problem (conv key + direction).
  std::mutex algoMu;
  std::unordered_map<std::string, int> algos;
};

inline State &state(comet_rt_context *ctx) {
  return *static_cast<State *>(resolve(ctx)->deviceState);
}
inline cudaStream_t streamOf(comet_rt_context *ctx) {
  return state(ctx).stream;
}

inline int32_t cudaFail(const char *what, cudaError_t e) {
  return fail(COMET_RT_ERROR_BACKEND,
              concat(what, ": CUDA error ", cudaGetErrorName(e), " (",
                     cudaGetErrorString(e), ")"));
}
inline int32_t dnnFail(const char *what, cudnnStatus_t e) {
  return fail(COMET_RT_ERROR_BACKEND,
              concat(what, ": cuDNN error ", cudnnGetErrorString(e)));
}
inline int32_t blasFail(const char *what, cublasStatus_t e) {
  return fail(COMET_RT_ERROR_BACKEND,
              concat(what, ": cuBLAS error ", cublasGetStatusString(e)));
}
inline int32_t oom(const char *op) {
  return fail(COMET_RT_ERROR_OUT_OF_MEMORY,
              concat(op, ": out of device memory"));
}

#define CU_TRY(what, expr)                                                     \
  do {                                                                         \
    cudaError_t cuErr_ = (expr);                                               \
    if (cuErr_ != cudaSuccess)                                                 \
      return ::comet::rt::cuda::cudaFail(what, cuErr_);                        \
  } while (0)
#define DNN_TRY(what, expr)                                                    \
  do {                                                                         \
    cudnnStatus_t dnnErr_ = (expr);                                            \
    if (dnnErr_ != CUDNN_STATUS_SUCCESS)                                       \
      return ::comet::rt::cuda::dnnFail(what, dnnErr_);                        \
  } while (0)
#define BLAS_TRY(what, expr)                                                   \
  do {                                                                         \
    cublasStatus_t blasErr_ = (expr);                                          \
    if (blasErr_ != CUBLAS_STATUS_SUCCESS)                                     \
      return ::comet::rt::cuda::blasFail(what, blasErr_);                      \
  } while (0)
/// After a launch: reports a bad launch configuration (no wait).
#define LAUNCHED(what) CU_TRY(what, cudaGetLastError())

constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over n elements.
inline unsigned gridFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(b, 1, 65535));
}

/// Blocks for a kernel with one block per item (a row, a channel) that
/// loops when there are more items than blocks.
inline unsigned blocksFor(int64_t items) {
  return static_cast<unsigned>(std::clamp<int64_t>(items, 1, 65535));
}

#define GRID_STRIDE(i, n)                                                      \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);    \
       i += (int64_t)blockDim.x * gridDim.x)

/// Sum over the block (blockDim.x == kThreads); every thread gets it.
template <typename T> __device__ T blockSum(T v) {
  __shared__ T sh[kThreads];
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  T r = sh[0];
  __syncthreads();
  return r;
}

/// Dims of up to kMaxRank and the element strides of up to three inputs
/// seen from them (0 along broadcast dims), passed to kernels by value.
struct Bcast {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t s[3][kMaxRank] = {};
};

/// Y's dims and each input's broadcast strides (the contract checked that
/// they broadcast).
inline Bcast bcastOf(const std::vector<int64_t> &out,
                     std::initializer_list<const std::vector<int64_t> *> ins) {
  Bcast b;
  b.rank = static_cast<int>(out.size());
  std::copy(out.begin(), out.end(), b.dims);
  int k = 0;
  for (const std::vector<int64_t> *in : ins) {
    std::vector<int64_t> strides;
    broadcastStrides(*in, out, strides);
    std::copy(strides.begin(), strides.end(), b.s[k++]);
  }
  return b;
}

/// The offset of flat output index i in input k.
__device__ inline int64_t bcastOffset(const Bcast &b, int k, int64_t i) {
  int64_t off = 0;
  for (int d = b.rank - 1; d >= 0; --d) {
    int64_t q = i / b.dims[d];
    off += (i - q * b.dims[d]) * b.s[k][d];
    i = q;
  }
  return off;
}

/// Copies bytes on the context's stream (either may be host memory: a
/// constant of the compiled code).
inline int32_t copyAsync(comet_rt_context *ctx, const char *op, void *dst,
                         const void *src, size_t bytes) {
  if (bytes && dst != src)
    CU_TRY(op,
           cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, streamOf(ctx)));
  return ok();
}

inline int32_t zeroAsync(comet_rt_context *ctx, const char *op, void *dst,
                         size_t bytes) {
  if (bytes)
    CU_TRY(op, cudaMemsetAsync(dst, 0, bytes, streamOf(ctx)));
  return ok();
}

} // namespace comet::rt::cuda

#endif // COMET_RUNTIME_BACKENDS_CUDA_COMMON_CUH
