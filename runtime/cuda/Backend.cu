//===- Backend.cu - The CUDA backend of the runtime ----------------------===//
//
// comet_rt_context_set_device(ctx, COMET_RT_DEVICE_CUDA) attaches this
// backend to a context (attach() below): one CUDA stream, one stream-ordered
// memory pool (cudaMallocFromPoolAsync, release threshold at its maximum so
// that freed memory is reused, not returned to the driver), a cuBLAS and a
// cuDNN handle bound to that stream. Every block comet_rt_alloc gives out for
// the context is device memory from the pool, counted per category as host
// blocks are, so the report's peak is the device's; cuDNN workspaces and
// kernel temporaries are category workspace.
//
// The kernels take the same memref descriptors as the CPU ones (the
// descriptors are host memory, the data they point to device memory) and
// queue their work on the stream without waiting for it, with three
// exceptions, each a small device-to-host read: compress (the stream's size
// sizes the handle's block), and reduce_sum with keepdims = 0 when the
// shapes alone do not tell which axes it reduces.
//
// Numerics: cuBLAS in CUBLAS_DEFAULT_MATH (no TF32 for SGEMM), cuDNN
// convolutions in CUDNN_FMA_MATH (no TF32, no tensor-op conversion), the
// file compiled with -fmad=false. Batch normalization, pooling and the loss
// are kernels of this file, not cuDNN's: ONNX's running variance is the
// biased one, cuDNN's the unbiased, and MaxPool's Indices have no cuDNN
// counterpart.
//
//===----------------------------------------------------------------------===//
#include "Context.h"
#include "HandlesInternal.h"
#include "Internal.h"
#include "comet/runtime/codec.h"
#include "comet/runtime/codec_cuda.h"
#include "comet/runtime/device.h"
#include "comet/runtime/slot_stats.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace comet::rt::cuda {
namespace {

//===----------------------------------------------------------------------===//
// The context's device state
//===----------------------------------------------------------------------===//

struct State {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudaMemPool_t pool = nullptr;
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;
  /// Convolution algorithms by problem (conv key + direction).
  std::mutex algoMu;
  std::unordered_map<std::string, int> algos;
};

State &state(comet_rt_context *ctx) {
  return *static_cast<State *>(resolve(ctx)->deviceState);
}

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

int32_t cudaFail(const char *what, cudaError_t e) {
  return fail(COMET_RT_ERROR_BACKEND,
              concat(what, ": CUDA error ", cudaGetErrorName(e), " (",
                     cudaGetErrorString(e), ")"));
}
int32_t dnnFail(const char *what, cudnnStatus_t e) {
  return fail(COMET_RT_ERROR_BACKEND,
              concat(what, ": cuDNN error ", cudnnGetErrorString(e)));
}
int32_t blasFail(const char *what, cublasStatus_t e) {
  return fail(COMET_RT_ERROR_BACKEND,
              concat(what, ": cuBLAS error ", cublasGetStatusString(e)));
}

#define CU_TRY(what, expr)                                                     \
  do {                                                                         \
    cudaError_t cuErr_ = (expr);                                               \
    if (cuErr_ != cudaSuccess)                                                 \
      return cudaFail(what, cuErr_);                                           \
  } while (0)
#define DNN_TRY(what, expr)                                                    \
  do {                                                                         \
    cudnnStatus_t dnnErr_ = (expr);                                            \
    if (dnnErr_ != CUDNN_STATUS_SUCCESS)                                       \
      return dnnFail(what, dnnErr_);                                           \
  } while (0)
#define BLAS_TRY(what, expr)                                                   \
  do {                                                                         \
    cublasStatus_t blasErr_ = (expr);                                          \
    if (blasErr_ != CUBLAS_STATUS_SUCCESS)                                     \
      return blasFail(what, blasErr_);                                         \
  } while (0)
/// After a launch: reports a bad launch configuration (no wait).
#define LAUNCHED(what) CU_TRY(what, cudaGetLastError())

//===----------------------------------------------------------------------===//
// Memory (DeviceOps)
//===----------------------------------------------------------------------===//

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

/// A kernel temporary from the context's pool, category workspace; freed
/// (stream-ordered) at the end of its scope.
class DevBuf {
public:
  DevBuf(comet_rt_context *ctx, size_t bytes)
      : p(bytes ? comet_rt_alloc(ctx, bytes, COMET_RT_MEM_WORKSPACE) : nullptr),
        wanted(bytes) {}
  ~DevBuf() { comet_rt_free(p); }
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
  bool ok() const { return wanted == 0 || p; }
  void *get() const { return p; }
  template <typename T> T *as() const { return static_cast<T *>(p); }

private:
  void *p;
  size_t wanted;
};

int32_t oom(const char *op) {
  return fail(COMET_RT_ERROR_OUT_OF_MEMORY,
              concat(op, ": out of device memory"));
}

//===----------------------------------------------------------------------===//
// Launch helpers and small kernels
//===----------------------------------------------------------------------===//

constexpr int kThreads = 256;

unsigned gridFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(b, 1, 65535));
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

constexpr int kMaxRank = 8;

/// Output dims and each input's element strides, 0 along broadcast dims.
struct Bcast {
  int rank;
  int64_t dims[kMaxRank];
  int64_t sa[kMaxRank];
  int64_t sb[kMaxRank];
};

__device__ void bcastOffsets(const Bcast &d, int64_t i, int64_t &ia,
                             int64_t &ib) {
  ia = 0;
  ib = 0;
  for (int k = d.rank - 1; k >= 0; --k) {
    int64_t q = i % d.dims[k];
    i /= d.dims[k];
    ia += q * d.sa[k];
    ib += q * d.sb[k];
  }
}

__global__ void addK(const float *a, const float *b, float *y, int64_t n,
                     Bcast d) {
  GRID_STRIDE(i, n) {
    int64_t ia, ib;
    bcastOffsets(d, i, ia, ib);
    y[i] = a[ia] + b[ib];
  }
}

__global__ void bcastCopyK(const float *a, float *y, int64_t n, Bcast d) {
  GRID_STRIDE(i, n) {
    int64_t ia, ib;
    bcastOffsets(d, i, ia, ib);
    y[i] = a[ia];
  }
}

/// Strides of `in` broadcast (numpy, right-aligned) to `out`; false when
/// they do not broadcast.
bool bcastStrides(const std::vector<int64_t> &in,
                  const std::vector<int64_t> &out, int64_t *strides) {
  int r = static_cast<int>(out.size()), ri = static_cast<int>(in.size());
  if (ri > r)
    return false;
  int64_t s = 1;
  for (int k = r - 1; k >= 0; --k) {
    int ki = k - (r - ri);
    int64_t d = ki >= 0 ? in[ki] : 1;
    if (d != out[k] && d != 1)
      return false;
    strides[k] = d == 1 ? 0 : s;
    s *= d;
  }
  return true;
}

__global__ void reluK(const float *x, float *y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void reluGradK(const float *dy, const float *x, float *dx,
                          int64_t n) {
  GRID_STRIDE(i, n) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void leakyReluK(const float *x, float *y, float alpha, int64_t n) {
  GRID_STRIDE(i, n) y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
}

__global__ void leakyReluGradK(const float *dy, const float *y, float *dx,
                               float alpha, int64_t n) {
  GRID_STRIDE(i, n) dx[i] = y[i] > 0.0f ? dy[i] : alpha * dy[i];
}

/// QuickGelu: y = x * s, s = sigmoid(alpha * x); its gradient
/// dx = dy * (s + alpha * x * s * (1 - s)).
__device__ float sigmoidOf(float v) { return 1.0f / (1.0f + expf(-v)); }

__global__ void quickGeluK(const float *x, float *y, float alpha, int64_t n) {
  GRID_STRIDE(i, n) y[i] = x[i] * sigmoidOf(alpha * x[i]);
}

__global__ void quickGeluGradK(const float *dy, const float *x, float *dx,
                               float alpha, int64_t n) {
  GRID_STRIDE(i, n) {
    float v = alpha * x[i], s = sigmoidOf(v);
    dx[i] = dy[i] * (s + v * s * (1.0f - s));
  }
}

__global__ void scaleK(const float *x, const float *s, float *y, int64_t n,
                       int down) {
  float f = *s;
  GRID_STRIDE(i, n) y[i] = down ? x[i] / f : x[i] * f;
}

struct Dims16 {
  int64_t v[16];
};

__global__ void writeDimsK(int64_t *y, Dims16 d, int n) {
  if (threadIdx.x < n)
    y[threadIdx.x] = d.v[threadIdx.x];
}

//===----------------------------------------------------------------------===//
// Convolution (cuDNN)
//===----------------------------------------------------------------------===//

struct ConvDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  std::string key;
  ~ConvDescs() {
    if (x)
      cudnnDestroyTensorDescriptor(x);
    if (y)
      cudnnDestroyTensorDescriptor(y);
    if (b)
      cudnnDestroyTensorDescriptor(b);
    if (w)
      cudnnDestroyFilterDescriptor(w);
    if (conv)
      cudnnDestroyConvolutionDescriptor(conv);
  }
};

struct ConvAttrs {
  int64_t sH, sW, pT, pL, pB, pR, dH, dW, group;
};

/// Describes X[N,C,H,W] * W[M,C/g,kH,kW] -> Y[N,M,oH,oW]; checks that Y's
/// dims are cuDNN's.
int32_t convDescs(const char *op, const std::vector<int64_t> &x,
                  const std::vector<int64_t> &w, const std::vector<int64_t> &y,
                  const ConvAttrs &a, ConvDescs &d) {
  COMET_RT_CHECK(x.size() == 4 && w.size() == 4 && y.size() == 4, op,
                 ": X, W and Y must be 4-D");
  COMET_RT_CHECK(a.group >= 1 && x[1] == w[1] * a.group &&
                     w[0] % a.group == 0 && y[1] == w[0] && y[0] == x[0],
                 op, ": X ", shapeStr(x), ", W ", shapeStr(w), ", Y ",
                 shapeStr(y), " and group ", a.group, " do not agree");
  if (a.pT != a.pB || a.pL != a.pR)
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                concat(op,
                       ": the CUDA backend needs symmetric pads (cuDNN); "
                       "got top/bottom ",
                       a.pT, "/", a.pB, ", left/right ", a.pL, "/", a.pR));
  auto i = [](int64_t v) { return static_cast<int>(v); };
  DNN_TRY(op, cudnnCreateTensorDescriptor(&d.x));
  DNN_TRY(op, cudnnCreateTensorDescriptor(&d.y));
  DNN_TRY(op, cudnnCreateTensorDescriptor(&d.b));
  DNN_TRY(op, cudnnCreateFilterDescriptor(&d.w));
  DNN_TRY(op, cudnnCreateConvolutionDescriptor(&d.conv));
  DNN_TRY(op,
          cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                     i(x[0]), i(x[1]), i(x[2]), i(x[3])));
  DNN_TRY(op,
          cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                     i(y[0]), i(y[1]), i(y[2]), i(y[3])));
  DNN_TRY(op, cudnnSetTensor4dDescriptor(d.b, CUDNN_TENSOR_NCHW,
                                         CUDNN_DATA_FLOAT, 1, i(y[1]), 1, 1));
  DNN_TRY(op,
          cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                     i(w[0]), i(w[1]), i(w[2]), i(w[3])));
  DNN_TRY(op, cudnnSetConvolution2dDescriptor(
                  d.conv, i(a.pT), i(a.pL), i(a.sH), i(a.sW), i(a.dH), i(a.dW),
                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DNN_TRY(op, cudnnSetConvolutionGroupCount(d.conv, i(a.group)));
  // FP32 FMA kernels only: CUDNN_DEFAULT_MATH still lets cuDNN pick TF32
  // tensor-core kernels on sm_80 and later.
  DNN_TRY(op, cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH));
  int on, oc, oh, ow;
  DNN_TRY(op, cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &on, &oc,
                                                    &oh, &ow));
  COMET_RT_CHECK(on == y[0] && oc == y[1] && oh == y[2] && ow == y[3], op,
                 ": Y is ", shapeStr(y), ", the convolution gives [", on, ", ",
                 oc, ", ", oh, ", ", ow, "]");
  d.key = concat(shapeStr(x), shapeStr(w), a.sH, ",", a.sW, ",", a.pT, ",",
                 a.pL, ",", a.dH, ",", a.dW, ",", a.group);
  return COMET_RT_SUCCESS;
}

/// The first algorithm cuDNN's heuristics rank that runs in FP32 FMA math,
/// cached per problem.
template <typename Perf, typename GetFn>
int32_t chooseAlgo(State &s, const char *op, const std::string &key, GetFn get,
                   int &algo) {
  {
    std::lock_guard<std::mutex> lock(s.algoMu);
    auto it = s.algos.find(key);
    if (it != s.algos.end()) {
      algo = it->second;
      return COMET_RT_SUCCESS;
    }
  }
  Perf perf[16];
  int n = 0;
  DNN_TRY(op, get(perf, 16, &n));
  for (int k = 0; k < n; ++k)
    if (perf[k].status == CUDNN_STATUS_SUCCESS &&
        perf[k].mathType != CUDNN_TENSOR_OP_MATH &&
        perf[k].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
      algo = static_cast<int>(perf[k].algo);
      std::lock_guard<std::mutex> lock(s.algoMu);
      s.algos[key] = algo;
      return COMET_RT_SUCCESS;
    }
  return fail(COMET_RT_ERROR_BACKEND,
              concat(op, ": cuDNN has no FP32 algorithm for ", key));
}

int32_t conv2d(comet_rt_context *ctx, comet_rt_memref *xm, comet_rt_memref *wm,
               comet_rt_memref *bm, comet_rt_memref *ym, int64_t sH, int64_t sW,
               int64_t pT, int64_t pL, int64_t pB, int64_t pR, int64_t dH,
               int64_t dW, int64_t group) {
  const char *op = "conv2d";
  Tensor x, w, b, y;
  COMET_RT_TRY(view(xm, 4, "conv X", x));
  COMET_RT_TRY(view(wm, 4, "conv W", w));
  COMET_RT_TRY(view(bm, 4, "conv B", b, true));
  COMET_RT_TRY(view(ym, 4, "conv Y", y));
  ConvDescs d;
  COMET_RT_TRY(convDescs(op, x.dims, w.dims, y.dims,
                         {sH, sW, pT, pL, pB, pR, dH, dW, group}, d));
  COMET_RT_CHECK(!b.present || b.numel() == w.dim(0), op, ": B needs ",
                 w.dim(0), " elements");
  State &s = state(ctx);
  int algo;
  COMET_RT_TRY(chooseAlgo<cudnnConvolutionFwdAlgoPerf_t>(
      s, op, "fwd" + d.key,
      [&](cudnnConvolutionFwdAlgoPerf_t *p, int cap, int *n) {
        return cudnnGetConvolutionForwardAlgorithm_v7(s.dnn, d.x, d.w, d.conv,
                                                      d.y, cap, n, p);
      },
      algo));
  size_t wsBytes = 0;
  DNN_TRY(op, cudnnGetConvolutionForwardWorkspaceSize(
                  s.dnn, d.x, d.w, d.conv, d.y,
                  static_cast<cudnnConvolutionFwdAlgo_t>(algo), &wsBytes));
  DevBuf ws(ctx, wsBytes);
  if (!ws.ok())
    return oom(op);
  const float one = 1.0f, zero = 0.0f;
  DNN_TRY(op,
          cudnnConvolutionForward(s.dnn, &one, d.x, x.data, d.w, w.data, d.conv,
                                  static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                  ws.get(), wsBytes, &zero, d.y, y.data));
  if (b.present)
    DNN_TRY(op, cudnnAddTensor(s.dnn, &one, d.b, b.data, &one, d.y, y.data));
  return ok();
}

int32_t convGrad2d(comet_rt_context *ctx, comet_rt_memref *dym,
                   comet_rt_memref *xm, comet_rt_memref *wm,
                   comet_rt_memref *dxm, comet_rt_memref *dwm,
                   comet_rt_memref *dbm, int64_t sH, int64_t sW, int64_t pT,
                   int64_t pL, int64_t pB, int64_t pR, int64_t dH, int64_t dW,
                   int64_t group) {
  const char *op = "conv_grad2d";
  Tensor dy, x, w, dx, dw, db;
  COMET_RT_TRY(view(dym, 4, "conv_grad dY", dy));
  COMET_RT_TRY(view(xm, 4, "conv_grad X", x));
  COMET_RT_TRY(view(wm, 4, "conv_grad W", w));
  COMET_RT_TRY(view(dxm, 4, "conv_grad dX", dx, true));
  COMET_RT_TRY(view(dwm, 4, "conv_grad dW", dw, true));
  COMET_RT_TRY(view(dbm, 4, "conv_grad dB", db, true));
  ConvDescs d;
  COMET_RT_TRY(convDescs(op, x.dims, w.dims, dy.dims,
                         {sH, sW, pT, pL, pB, pR, dH, dW, group}, d));
  COMET_RT_CHECK(!dx.present || dx.dims == x.dims, op,
                 ": dX must have X's shape");
  COMET_RT_CHECK(!dw.present || dw.dims == w.dims, op,
                 ": dW must have W's shape");
  COMET_RT_CHECK(!db.present || db.numel() == w.dim(0), op, ": dB needs ",
                 w.dim(0), " elements");
  State &s = state(ctx);
  const float one = 1.0f, zero = 0.0f;
  if (dx.present) {
    int algo;
    COMET_RT_TRY(chooseAlgo<cudnnConvolutionBwdDataAlgoPerf_t>(
        s, op, "bwd-data" + d.key,
        [&](cudnnConvolutionBwdDataAlgoPerf_t *p, int cap, int *n) {
          return cudnnGetConvolutionBackwardDataAlgorithm_v7(
              s.dnn, d.w, d.y, d.conv, d.x, cap, n, p);
        },
        algo));
    auto a = static_cast<cudnnConvolutionBwdDataAlgo_t>(algo);
    size_t wsBytes = 0;
    DNN_TRY(op, cudnnGetConvolutionBackwardDataWorkspaceSize(
                    s.dnn, d.w, d.y, d.conv, d.x, a, &wsBytes));
    DevBuf ws(ctx, wsBytes);
    if (!ws.ok())
      return oom(op);
    DNN_TRY(op, cudnnConvolutionBackwardData(s.dnn, &one, d.w, w.data, d.y,
                                             dy.data, d.conv, a, ws.get(),
                                             wsBytes, &zero, d.x, dx.data));
  }
  if (dw.present) {
    int algo;
    COMET_RT_TRY(chooseAlgo<cudnnConvolutionBwdFilterAlgoPerf_t>(
        s, op, "bwd-filter" + d.key,
        [&](cudnnConvolutionBwdFilterAlgoPerf_t *p, int cap, int *n) {
          return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
              s.dnn, d.x, d.y, d.conv, d.w, cap, n, p);
        },
        algo));
    auto a = static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo);
    size_t wsBytes = 0;
    DNN_TRY(op, cudnnGetConvolutionBackwardFilterWorkspaceSize(
                    s.dnn, d.x, d.y, d.conv, d.w, a, &wsBytes));
    DevBuf ws(ctx, wsBytes);
    if (!ws.ok())
      return oom(op);
    DNN_TRY(op, cudnnConvolutionBackwardFilter(s.dnn, &one, d.x, x.data, d.y,
                                               dy.data, d.conv, a, ws.get(),
                                               wsBytes, &zero, d.w, dw.data));
  }
  if (db.present)
    DNN_TRY(op, cudnnConvolutionBackwardBias(s.dnn, &one, d.y, dy.data, &zero,
                                             d.b, db.data));
  return ok();
}

//===----------------------------------------------------------------------===//
// Matrix products (cuBLAS)
//===----------------------------------------------------------------------===//

/// Row-major Y[M,N] = alpha * op(A) * op(B) + beta * Y as cuBLAS's
/// column-major Y^T = op(B)^T * op(A)^T, batched with element strides.
int32_t sgemmRowMajor(State &s, const char *op, bool ta, bool tb, int64_t m,
                      int64_t n, int64_t k, float alpha, const float *a,
                      int64_t strideA, const float *b, int64_t strideB,
                      float beta, float *y, int64_t batch) {
  if (m == 0 || n == 0)
    return COMET_RT_SUCCESS;
  int lda = static_cast<int>(ta ? m : k), ldb = static_cast<int>(tb ? k : n);
  int ldy = static_cast<int>(n);
  cublasOperation_t opA = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  BLAS_TRY(op, cublasSgemmStridedBatched(
                   s.blas, opB, opA, static_cast<int>(n), static_cast<int>(m),
                   static_cast<int>(k), &alpha, b, ldb, strideB, a, lda,
                   strideA, &beta, y, ldy, m * n, static_cast<int>(batch)));
  return COMET_RT_SUCCESS;
}

int32_t gemm(comet_rt_context *ctx, comet_rt_memref *am, comet_rt_memref *bm,
             comet_rt_memref *cm, comet_rt_memref *ym, float alpha, float beta,
             int64_t transA, int64_t transB) {
  const char *op = "gemm";
  Tensor a, b, c, y;
  COMET_RT_TRY(view(am, 4, "gemm A", a));
  COMET_RT_TRY(view(bm, 4, "gemm B", b));
  COMET_RT_TRY(view(cm, 4, "gemm C", c, true));
  COMET_RT_TRY(view(ym, 4, "gemm Y", y));
  COMET_RT_CHECK(a.rank() == 2 && b.rank() == 2 && y.rank() == 2, op,
                 ": A, B and Y must be 2-D");
  int64_t m = transA ? a.dim(1) : a.dim(0), k = transA ? a.dim(0) : a.dim(1);
  int64_t kb = transB ? b.dim(1) : b.dim(0), n = transB ? b.dim(0) : b.dim(1);
  COMET_RT_CHECK(k == kb && y.dim(0) == m && y.dim(1) == n, op, ": A ",
                 shapeStr(a.dims), ", B ", shapeStr(b.dims), " and Y ",
                 shapeStr(y.dims), " do not agree");
  State &s = state(ctx);
  float betaEff = 0.0f;
  if (c.present && beta != 0.0f) {
    Bcast d{2, {m, n}, {}, {}};
    COMET_RT_CHECK(bcastStrides(c.dims, y.dims, d.sa), op, ": C ",
                   shapeStr(c.dims), " does not broadcast to ",
                   shapeStr(y.dims));
    bcastCopyK<<<gridFor(m * n), kThreads, 0, s.stream>>>(c.f(), y.f(), m * n,
                                                          d);
    LAUNCHED(op);
    betaEff = beta;
  }
  COMET_RT_TRY(sgemmRowMajor(s, op, transA, transB, m, n, k, alpha, a.f(), 0,
                             b.f(), 0, betaEff, y.f(), 1));
  return ok();
}

int32_t matmul(comet_rt_context *ctx, comet_rt_memref *am, comet_rt_memref *bm,
               comet_rt_memref *ym) {
  const char *op = "matmul";
  Tensor a, b, y;
  COMET_RT_TRY(view(am, 4, "matmul A", a));
  COMET_RT_TRY(view(bm, 4, "matmul B", b));
  COMET_RT_TRY(view(ym, 4, "matmul Y", y));
  COMET_RT_CHECK(a.rank() >= 1 && b.rank() >= 1, op,
                 ": operands must have rank >= 1");
  std::vector<int64_t> ad = a.dims, bd = b.dims;
  bool aVec = ad.size() == 1, bVec = bd.size() == 1;
  if (aVec)
    ad.insert(ad.begin(), 1);
  if (bVec)
    bd.push_back(1);
  int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  COMET_RT_CHECK(bd[bd.size() - 2] == k, op, ": A ", shapeStr(a.dims),
                 " and B ", shapeStr(b.dims), " do not agree");
  std::vector<int64_t> aB(ad.begin(), ad.end() - 2),
      bB(bd.begin(), bd.end() - 2);
  size_t r = std::max(aB.size(), bB.size());
  std::vector<int64_t> outB(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i + aB.size() >= r ? aB[i + aB.size() - r] : 1;
    int64_t db = i + bB.size() >= r ? bB[i + bB.size() - r] : 1;
    COMET_RT_CHECK(da == db || da == 1 || db == 1, op, ": batch dims of ",
                   shapeStr(a.dims), " and ", shapeStr(b.dims),
                   " do not broadcast");
    outB[i] = std::max(da, db);
  }
  std::vector<int64_t> expect = outB;
  if (!aVec)
    expect.push_back(m);
  if (!bVec)
    expect.push_back(n);
  COMET_RT_CHECK(y.dims == expect, op, ": Y is ", shapeStr(y.dims),
                 ", expected ", shapeStr(expect));
  int64_t batch = 1, aCount = 1, bCount = 1;
  for (int64_t d : outB)
    batch *= d;
  for (int64_t d : aB)
    aCount *= d;
  for (int64_t d : bB)
    bCount *= d;
  State &s = state(ctx);
  // One strided-batched call when each operand is either whole or one
  // matrix; otherwise one call per output matrix.
  if ((aCount == batch || aCount == 1) && (bCount == batch || bCount == 1) &&
      (aCount == 1 || aB.size() == r) && (bCount == 1 || bB.size() == r)) {
    bool sameA = aCount == batch, sameB = bCount == batch;
    COMET_RT_TRY(sgemmRowMajor(s, op, false, false, m, n, k, 1.0f, a.f(),
                               sameA ? m * k : 0, b.f(), sameB ? k * n : 0,
                               0.0f, y.f(), batch));
    return ok();
  }
  std::vector<int64_t> idx(r, 0);
  for (int64_t t = 0; t < batch; ++t) {
    int64_t offA = 0, offB = 0;
    for (size_t i = 0; i < r; ++i) {
      if (i + aB.size() >= r) {
        int64_t dim = aB[i + aB.size() - r];
        offA = offA * dim + (dim == 1 ? 0 : idx[i]);
      }
      if (i + bB.size() >= r) {
        int64_t dim = bB[i + bB.size() - r];
        offB = offB * dim + (dim == 1 ? 0 : idx[i]);
      }
    }
    COMET_RT_TRY(sgemmRowMajor(s, op, false, false, m, n, k, 1.0f,
                               a.f() + offA * m * k, 0, b.f() + offB * k * n, 0,
                               0.0f, y.f() + t * m * n, 1));
    for (int64_t i = static_cast<int64_t>(r) - 1; i >= 0; --i) {
      if (++idx[i] < outB[i])
        break;
      idx[i] = 0;
    }
  }
  return ok();
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

/// One block per channel: the batch mean and biased variance (two passes,
/// double sums), and the outputs that depend on them alone.
__global__ void bnStatsK(const float *x, int64_t n, int64_t c, int64_t hw,
                         float *mean, float *var, const float *inMean,
                         const float *inVar, float *runMean, float *runVar,
                         float *savedMean, float *savedInvStd, float eps,
                         float momentum) {
  int64_t ch = blockIdx.x, m = n * hw;
  double s = 0;
  for (int64_t i = threadIdx.x; i < m; i += blockDim.x)
    s += x[((i / hw) * c + ch) * hw + i % hw];
  double mu = blockSum(s) / double(m);
  double q = 0;
  for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
    double d = x[((i / hw) * c + ch) * hw + i % hw] - mu;
    q += d * d;
  }
  double v = blockSum(q) / double(m);
  if (threadIdx.x == 0) {
    float fm = float(mu), fv = float(v);
    mean[ch] = fm;
    var[ch] = fv;
    if (runMean)
      runMean[ch] = inMean[ch] * momentum + fm * (1.0f - momentum);
    if (runVar)
      runVar[ch] = inVar[ch] * momentum + fv * (1.0f - momentum);
    if (savedMean)
      savedMean[ch] = fm;
    if (savedInvStd)
      savedInvStd[ch] = 1.0f / sqrtf(fv + eps);
  }
}

__global__ void bnApplyK(const float *x, const float *scale, const float *bias,
                         const float *mean, const float *var, float *y,
                         int64_t total, int64_t c, int64_t hw, float eps) {
  GRID_STRIDE(i, total) {
    int64_t ch = (i / hw) % c;
    float inv = 1.0f / sqrtf(var[ch] + eps);
    y[i] = (x[i] - mean[ch]) * inv * scale[ch] + bias[ch];
  }
}

/// One block per channel: dBias = sum dY, dScale = sum dY * xhat, then dX.
__global__ void bnGradK(const float *dy, const float *x, const float *scale,
                        const float *mean, const float *invStd, float *dx,
                        float *dscale, float *dbias, int64_t n, int64_t c,
                        int64_t hw) {
  int64_t ch = blockIdx.x, m = n * hw;
  float mu = mean[ch], inv = invStd[ch];
  double sdy = 0, sdyx = 0;
  for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
    int64_t at = ((i / hw) * c + ch) * hw + i % hw;
    double g = dy[at];
    sdy += g;
    sdyx += g * double((x[at] - mu) * inv);
  }
  double db = blockSum(sdy), ds = blockSum(sdyx);
  if (threadIdx.x == 0) {
    if (dbias)
      dbias[ch] = float(db);
    if (dscale)
      dscale[ch] = float(ds);
  }
  if (!dx)
    return;
  float k = scale[ch] * inv, mdb = float(db / double(m)),
        mds = float(ds / double(m));
  for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
    int64_t at = ((i / hw) * c + ch) * hw + i % hw;
    float xhat = (x[at] - mu) * inv;
    dx[at] = k * (dy[at] - mdb - xhat * mds);
  }
}

int32_t bnShape(const char *op, const Tensor &x, int64_t &n, int64_t &c,
                int64_t &hw) {
  COMET_RT_CHECK(x.rank() >= 2, op, ": X must have rank >= 2");
  n = x.dim(0);
  c = x.dim(1);
  hw = 1;
  for (int64_t i = 2; i < x.rank(); ++i)
    hw *= x.dim(i);
  return COMET_RT_SUCCESS;
}

int32_t batchNormInternal(comet_rt_context *ctx, comet_rt_memref *xm,
                          comet_rt_memref *scm, comet_rt_memref *bm,
                          comet_rt_memref *imm, comet_rt_memref *ivm,
                          comet_rt_memref *ym, comet_rt_memref *rmm,
                          comet_rt_memref *rvm, comet_rt_memref *smm,
                          comet_rt_memref *sim, float epsilon, float momentum,
                          int64_t trainingMode) {
  const char *op = "batch_norm_internal";
  Tensor x, sc, b, im, iv, y, rm, rv, sm, si;
  COMET_RT_TRY(view(xm, 4, "batch_norm X", x));
  COMET_RT_TRY(view(scm, 4, "batch_norm scale", sc));
  COMET_RT_TRY(view(bm, 4, "batch_norm B", b));
  COMET_RT_TRY(view(imm, 4, "batch_norm input_mean", im));
  COMET_RT_TRY(view(ivm, 4, "batch_norm input_var", iv));
  COMET_RT_TRY(view(ym, 4, "batch_norm Y", y));
  COMET_RT_TRY(view(rmm, 4, "batch_norm running_mean", rm, true));
  COMET_RT_TRY(view(rvm, 4, "batch_norm running_var", rv, true));
  COMET_RT_TRY(view(smm, 4, "batch_norm saved_mean", sm, true));
  COMET_RT_TRY(view(sim, 4, "batch_norm saved_inv_std", si, true));
  int64_t n, c, hw;
  COMET_RT_TRY(bnShape(op, x, n, c, hw));
  COMET_RT_CHECK(y.dims == x.dims, op, ": Y must have X's shape");
  for (const Tensor *t : {&sc, &b, &im, &iv})
    COMET_RT_CHECK(t->numel() == c, op, ": per-channel inputs need ", c,
                   " elements");
  for (const Tensor *t : {&rm, &rv, &sm, &si})
    COMET_RT_CHECK(!t->present || t->numel() == c, op,
                   ": per-channel outputs need ", c, " elements");
  COMET_RT_CHECK(trainingMode ||
                     (!rm.present && !rv.present && !sm.present && !si.present),
                 op, ": inference mode has only Y");
  State &s = state(ctx);
  const float *mean = im.f(), *var = iv.f();
  DevBuf stats(ctx, trainingMode ? 2 * c * sizeof(float) : 0);
  if (!stats.ok())
    return oom(op);
  if (trainingMode && n * hw > 0) {
    float *sm2 = stats.as<float>();
    bnStatsK<<<static_cast<unsigned>(c), kThreads, 0, s.stream>>>(
        x.f(), n, c, hw, sm2, sm2 + c, im.f(), iv.f(),
        rm.present ? rm.f() : nullptr, rv.present ? rv.f() : nullptr,
        sm.present ? sm.f() : nullptr, si.present ? si.f() : nullptr, epsilon,
        momentum);
    LAUNCHED(op);
    mean = sm2;
    var = sm2 + c;
  }
  if (x.numel() > 0) {
    bnApplyK<<<gridFor(x.numel()), kThreads, 0, s.stream>>>(
        x.f(), sc.f(), b.f(), mean, var, y.f(), x.numel(), c, hw, epsilon);
    LAUNCHED(op);
  }
  return ok();
}

int32_t batchNormGrad(comet_rt_context *ctx, comet_rt_memref *dym,
                      comet_rt_memref *xm, comet_rt_memref *scm,
                      comet_rt_memref *smm, comet_rt_memref *sim,
                      comet_rt_memref *dxm, comet_rt_memref *dscm,
                      comet_rt_memref *dbm, float epsilon) {
  const char *op = "batch_norm_grad";
  Tensor dy, x, sc, sm, si, dx, dsc, db;
  COMET_RT_TRY(view(dym, 4, "batch_norm_grad dY", dy));
  COMET_RT_TRY(view(xm, 4, "batch_norm_grad X", x));
  COMET_RT_TRY(view(scm, 4, "batch_norm_grad scale", sc));
  COMET_RT_TRY(view(smm, 4, "batch_norm_grad saved_mean", sm));
  COMET_RT_TRY(view(sim, 4, "batch_norm_grad saved_inv_std", si));
  COMET_RT_TRY(view(dxm, 4, "batch_norm_grad dX", dx, true));
  COMET_RT_TRY(view(dscm, 4, "batch_norm_grad dScale", dsc, true));
  COMET_RT_TRY(view(dbm, 4, "batch_norm_grad dBias", db, true));
  int64_t n, c, hw;
  COMET_RT_TRY(bnShape(op, x, n, c, hw));
  COMET_RT_CHECK(dy.dims == x.dims && (!dx.present || dx.dims == x.dims), op,
                 ": dY and dX must have X's shape");
  for (const Tensor *t : {&sc, &sm, &si})
    COMET_RT_CHECK(t->numel() == c, op, ": per-channel inputs need ", c,
                   " elements");
  for (const Tensor *t : {&dsc, &db})
    COMET_RT_CHECK(!t->present || t->numel() == c, op,
                   ": per-channel outputs need ", c, " elements");
  if (c == 0)
    return ok();
  State &s = state(ctx);
  bnGradK<<<static_cast<unsigned>(c), kThreads, 0, s.stream>>>(
      dy.f(), x.f(), sc.f(), sm.f(), si.f(), dx.present ? dx.f() : nullptr,
      dsc.present ? dsc.f() : nullptr, db.present ? db.f() : nullptr, n, c, hw);
  LAUNCHED(op);
  return ok();
}

//===----------------------------------------------------------------------===//
// Softmax and the loss
//===----------------------------------------------------------------------===//

/// One thread per (outer, inner) row of length len along the axis.
__global__ void softmaxK(const float *x, float *y, int64_t outer, int64_t len,
                         int64_t inner, int logMode) {
  GRID_STRIDE(r, outer * inner) {
    int64_t o = r / inner, in = r % inner;
    const float *px = x + o * len * inner + in;
    float *py = y + o * len * inner + in;
    float mx = -INFINITY;
    for (int64_t j = 0; j < len; ++j)
      mx = fmaxf(mx, px[j * inner]);
    double sum = 0;
    for (int64_t j = 0; j < len; ++j)
      sum += exp(double(px[j * inner] - mx));
    if (logMode) {
      float ls = float(log(sum));
      for (int64_t j = 0; j < len; ++j)
        py[j * inner] = px[j * inner] - mx - ls;
    } else {
      for (int64_t j = 0; j < len; ++j)
        py[j * inner] = float(exp(double(px[j * inner] - mx)) / sum);
    }
  }
}

int32_t softmaxImpl(comet_rt_context *ctx, const char *op, comet_rt_memref *xm,
                    comet_rt_memref *ym, int64_t axis, bool logMode) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "softmax X", x));
  COMET_RT_TRY(view(ym, 4, "softmax Y", y));
  COMET_RT_CHECK(x.dims == y.dims, op, ": Y must have X's shape");
  int64_t r = x.rank();
  if (axis < 0)
    axis += r;
  COMET_RT_CHECK(axis >= 0 && axis < r, op, ": bad axis");
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= x.dim(i);
  for (int64_t i = axis + 1; i < r; ++i)
    inner *= x.dim(i);
  if (x.numel() == 0)
    return ok();
  softmaxK<<<gridFor(outer * inner), kThreads, 0, state(ctx).stream>>>(
      x.f(), y.f(), outer, x.dim(axis), inner, logMode);
  LAUNCHED(op);
  return ok();
}

int32_t softmax(comet_rt_context *ctx, comet_rt_memref *xm, comet_rt_memref *ym,
                int64_t axis) {
  return softmaxImpl(ctx, "softmax", xm, ym, axis, false);
}
int32_t logSoftmax(comet_rt_context *ctx, comet_rt_memref *xm,
                   comet_rt_memref *ym, int64_t axis) {
  return softmaxImpl(ctx, "log_softmax", xm, ym, axis, true);
}

/// Sample i's weight: 0 when ignored, or when its label is out of range
/// (which the CPU backend reports and this one cannot without a sync).
__device__ float sampleWeight(const int64_t *lbl, const float *weights,
                              int64_t i, int64_t c, int64_t ignore,
                              int hasIgnore) {
  int64_t l = lbl[i];
  if ((hasIgnore && l == ignore) || l < 0 || l >= c)
    return 0.0f;
  return weights ? weights[l] : 1.0f;
}

/// Per sample (n, d): log-softmax over classes into lp, and -w * lp[label]
/// into v (and loss when reduction is none).
__global__ void sceRowsK(const float *scores, const int64_t *lbl,
                         const float *weights, float *lp, float *v, float *w,
                         float *lossNone, int64_t n, int64_t c, int64_t d,
                         int64_t ignore, int hasIgnore) {
  GRID_STRIDE(i, n * d) {
    int64_t s = i / d, k = i % d;
    const float *px = scores + s * c * d + k;
    float *pl = lp + s * c * d + k;
    float mx = -INFINITY;
    for (int64_t j = 0; j < c; ++j)
      mx = fmaxf(mx, px[j * d]);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j)
      sum += exp(double(px[j * d] - mx));
    float ls = float(log(sum));
    for (int64_t j = 0; j < c; ++j)
      pl[j * d] = px[j * d] - mx - ls;
    float wi = sampleWeight(lbl, weights, i, c, ignore, hasIgnore);
    float vi = wi == 0.0f ? 0.0f : -wi * pl[lbl[i] * d];
    w[i] = wi;
    v[i] = vi;
    if (lossNone)
      lossNone[i] = vi;
  }
}

/// One block: out[0] = sum v, or sum v / sum w for mean.
__global__ void sceReduceK(const float *v, const float *w, int64_t m,
                           float *out, int mean) {
  double sv = 0, sw = 0;
  for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
    sv += v[i];
    sw += w[i];
  }
  sv = blockSum(sv);
  sw = blockSum(sw);
  if (threadIdx.x == 0)
    out[0] = mean ? float(sv / sw) : float(sv);
}

/// One block: the sum of the sample weights, as float.
__global__ void sceWeightSumK(const int64_t *lbl, const float *weights,
                              int64_t m, int64_t c, int64_t ignore,
                              int hasIgnore, float *out) {
  double sw = 0;
  for (int64_t i = threadIdx.x; i < m; i += blockDim.x)
    sw += sampleWeight(lbl, weights, i, c, ignore, hasIgnore);
  sw = blockSum(sw);
  if (threadIdx.x == 0)
    out[0] = float(sw);
}

__global__ void sceGradK(const float *dy, const float *lp, const int64_t *lbl,
                         const float *weights, const float *sumW, float *dx,
                         int64_t n, int64_t c, int64_t d, int64_t ignore,
                         int hasIgnore, int reduction) {
  GRID_STRIDE(i, n * d) {
    int64_t s = i / d, k = i % d;
    float wi = sampleWeight(lbl, weights, i, c, ignore, hasIgnore);
    float g = reduction == COMET_RT_REDUCTION_NONE ? dy[i] : dy[0];
    float div = reduction == COMET_RT_REDUCTION_MEAN ? *sumW : 1.0f;
    float scale = wi * g / div;
    int64_t l = lbl[i];
    for (int64_t j = 0; j < c; ++j) {
      int64_t at = (s * c + j) * d + k;
      float p = expf(lp[at]);
      dx[at] = wi == 0.0f ? 0.0f : (p - (j == l ? 1.0f : 0.0f)) * scale;
    }
  }
}

int32_t lossShape(const char *op, const Tensor &scores, const Tensor &labels,
                  const Tensor &weights, int64_t &n, int64_t &c, int64_t &d) {
  COMET_RT_CHECK(scores.rank() >= 2, op, ": scores must have rank >= 2");
  n = scores.dim(0);
  c = scores.dim(1);
  d = 1;
  for (int64_t i = 2; i < scores.rank(); ++i)
    d *= scores.dim(i);
  std::vector<int64_t> ld = scores.dims;
  ld.erase(ld.begin() + 1);
  COMET_RT_CHECK(labels.dims == ld, op, ": labels are ", shapeStr(labels.dims),
                 ", expected ", shapeStr(ld));
  COMET_RT_CHECK(!weights.present || weights.numel() == c, op,
                 ": weights need ", c, " elements");
  return COMET_RT_SUCCESS;
}

int32_t sceLoss(comet_rt_context *ctx, comet_rt_memref *sm, comet_rt_memref *lm,
                comet_rt_memref *wm, comet_rt_memref *lossm,
                comet_rt_memref *lpm, int64_t reduction, int64_t ignoreIndex,
                int64_t hasIgnore) {
  const char *op = "softmax_cross_entropy_loss";
  Tensor scores, labels, weights, loss, lp;
  COMET_RT_TRY(view(sm, 4, "sce scores", scores));
  COMET_RT_TRY(view(lm, 8, "sce labels", labels));
  COMET_RT_TRY(view(wm, 4, "sce weights", weights, true));
  COMET_RT_TRY(view(lossm, 4, "sce loss", loss));
  COMET_RT_TRY(view(lpm, 4, "sce log_prob", lp, true));
  int64_t n, c, d;
  COMET_RT_TRY(lossShape(op, scores, labels, weights, n, c, d));
  COMET_RT_CHECK(reduction >= 0 && reduction <= 2, op, ": bad reduction");
  COMET_RT_CHECK(reduction == COMET_RT_REDUCTION_NONE ? loss.numel() == n * d
                                                      : loss.numel() == 1,
                 op, ": loss has ", loss.numel(), " elements");
  COMET_RT_CHECK(!lp.present || lp.dims == scores.dims, op,
                 ": log_prob must have the scores' shape");
  State &s = state(ctx);
  int64_t m = n * d;
  DevBuf lpTmp(ctx, lp.present ? 0 : sizeof(float) * scores.numel());
  DevBuf vw(ctx, 2 * sizeof(float) * m);
  if (!lpTmp.ok() || !vw.ok())
    return oom(op);
  float *lpd = lp.present ? lp.f() : lpTmp.as<float>();
  float *v = vw.as<float>(), *w = v + m;
  if (m > 0) {
    sceRowsK<<<gridFor(m), kThreads, 0, s.stream>>>(
        scores.f(), labels.i64(), weights.present ? weights.f() : nullptr, lpd,
        v, w, reduction == COMET_RT_REDUCTION_NONE ? loss.f() : nullptr, n, c,
        d, ignoreIndex, hasIgnore != 0);
    LAUNCHED(op);
  }
  if (reduction != COMET_RT_REDUCTION_NONE) {
    sceReduceK<<<1, kThreads, 0, s.stream>>>(
        v, w, m, loss.f(), reduction == COMET_RT_REDUCTION_MEAN);
    LAUNCHED(op);
  }
  return ok();
}

int32_t sceLossGrad(comet_rt_context *ctx, comet_rt_memref *dym,
                    comet_rt_memref *lpm, comet_rt_memref *lm,
                    comet_rt_memref *wm, comet_rt_memref *dxm,
                    int64_t reduction, int64_t ignoreIndex, int64_t hasIgnore) {
  const char *op = "softmax_cross_entropy_loss_grad";
  Tensor dy, lp, labels, weights, dx;
  COMET_RT_TRY(view(dym, 4, "sce_grad dY", dy));
  COMET_RT_TRY(view(lpm, 4, "sce_grad log_prob", lp));
  COMET_RT_TRY(view(lm, 8, "sce_grad labels", labels));
  COMET_RT_TRY(view(wm, 4, "sce_grad weights", weights, true));
  COMET_RT_TRY(view(dxm, 4, "sce_grad dX", dx));
  int64_t n, c, d;
  COMET_RT_TRY(lossShape(op, lp, labels, weights, n, c, d));
  COMET_RT_CHECK(reduction >= 0 && reduction <= 2, op, ": bad reduction");
  COMET_RT_CHECK(dx.dims == lp.dims, op, ": dX must have log_prob's shape");
  COMET_RT_CHECK(reduction == COMET_RT_REDUCTION_NONE ? dy.numel() == n * d
                                                      : dy.numel() == 1,
                 op, ": dY has ", dy.numel(), " elements");
  State &s = state(ctx);
  int64_t m = n * d;
  DevBuf sumW(ctx, sizeof(float));
  if (!sumW.ok())
    return oom(op);
  const float *wp = weights.present ? weights.f() : nullptr;
  sceWeightSumK<<<1, kThreads, 0, s.stream>>>(
      labels.i64(), wp, m, c, ignoreIndex, hasIgnore != 0, sumW.as<float>());
  LAUNCHED(op);
  if (m > 0) {
    sceGradK<<<gridFor(m), kThreads, 0, s.stream>>>(
        dy.f(), lp.f(), labels.i64(), wp, sumW.as<float>(), dx.f(), n, c, d,
        ignoreIndex, hasIgnore != 0, static_cast<int>(reduction));
    LAUNCHED(op);
  }
  return ok();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolGeom {
  int64_t h, w, oh, ow, kH, kW, sH, sW, pT, pL, dH, dW;
};

__global__ void maxpoolK(const float *x, float *y, int64_t *ind, int64_t total,
                         PoolGeom g, int storageOrder) {
  GRID_STRIDE(o, total) {
    int64_t j = o % g.ow, i = (o / g.ow) % g.oh, p = o / (g.ow * g.oh);
    const float *plane = x + p * g.h * g.w;
    float best = -INFINITY;
    int64_t bh = -1, bw = -1;
    for (int64_t a = 0; a < g.kH; ++a) {
      int64_t hh = i * g.sH - g.pT + a * g.dH;
      if (hh < 0 || hh >= g.h)
        continue;
      for (int64_t b = 0; b < g.kW; ++b) {
        int64_t ww = j * g.sW - g.pL + b * g.dW;
        if (ww < 0 || ww >= g.w)
          continue;
        float v = plane[hh * g.w + ww];
        if (bh < 0 || v > best) {
          best = v;
          bh = hh;
          bw = ww;
        }
      }
    }
    y[o] = best;
    if (ind)
      ind[o] = bh < 0              ? -1
               : storageOrder == 0 ? p * g.h * g.w + bh * g.w + bw
                                   : p * g.h * g.w + bw * g.h + bh;
  }
}

/// dX[Indices[i]] += dY[i]; indices outside dX are skipped (the CPU
/// backend reports them; this one cannot without a sync).
__global__ void maxpoolGradK(const float *dy, const int64_t *ind, float *dx,
                             int64_t n, int64_t nx) {
  GRID_STRIDE(i, n) {
    int64_t at = ind[i];
    if (at >= 0 && at < nx)
      atomicAdd(dx + at, dy[i]);
  }
}

/// One block per (n, c) plane.
__global__ void gapK(const float *x, float *y, int64_t hw) {
  const float *p = x + blockIdx.x * hw;
  double s = 0;
  for (int64_t i = threadIdx.x; i < hw; i += blockDim.x)
    s += p[i];
  s = blockSum(s);
  if (threadIdx.x == 0)
    y[blockIdx.x] = float(s / double(hw));
}

int32_t maxpool2d(comet_rt_context *ctx, comet_rt_memref *xm,
                  comet_rt_memref *ym, comet_rt_memref *im, int64_t kH,
                  int64_t kW, int64_t sH, int64_t sW, int64_t pT, int64_t pL,
                  int64_t pB, int64_t pR, int64_t dH, int64_t dW,
                  int64_t storageOrder) {
  const char *op = "maxpool2d";
  Tensor x, y, ind;
  COMET_RT_TRY(view(xm, 4, "maxpool X", x));
  COMET_RT_TRY(view(ym, 4, "maxpool Y", y));
  COMET_RT_TRY(view(im, 8, "maxpool Indices", ind, true));
  COMET_RT_CHECK(x.rank() == 4 && y.rank() == 4 && x.dim(0) == y.dim(0) &&
                     x.dim(1) == y.dim(1),
                 op, ": X and Y must be [N,C,H,W] of the same N and C");
  COMET_RT_CHECK(kH > 0 && kW > 0 && sH > 0 && sW > 0 && dH > 0 && dW > 0 &&
                     pT >= 0 && pL >= 0 && pB >= 0 && pR >= 0,
                 op, ": bad kernel, stride, pad or dilation");
  COMET_RT_CHECK(storageOrder == 0 || storageOrder == 1, op,
                 ": bad storage_order");
  int64_t h = x.dim(2), w = x.dim(3), oh = y.dim(2), ow = y.dim(3);
  int64_t floorH = (h + pT + pB - ((kH - 1) * dH + 1)) / sH + 1;
  int64_t floorW = (w + pL + pR - ((kW - 1) * dW + 1)) / sW + 1;
  COMET_RT_CHECK((oh == floorH || oh == floorH + 1) &&
                     (ow == floorW || ow == floorW + 1) &&
                     (oh - 1) * sH < h + pT && (ow - 1) * sW < w + pL,
                 op, ": Y spatial dims ", oh, "x", ow,
                 " do not fit the pooling (floor gives ", floorH, "x", floorW,
                 ")");
  COMET_RT_CHECK(!ind.present || ind.dims == y.dims, op,
                 ": Indices must have Y's shape");
  if (y.numel() == 0)
    return ok();
  PoolGeom g{h, w, oh, ow, kH, kW, sH, sW, pT, pL, dH, dW};
  maxpoolK<<<gridFor(y.numel()), kThreads, 0, state(ctx).stream>>>(
      x.f(), y.f(), ind.present ? ind.i64() : nullptr, y.numel(), g,
      static_cast<int>(storageOrder));
  LAUNCHED(op);
  return ok();
}

int32_t maxpoolGrad(comet_rt_context *ctx, comet_rt_memref *dym,
                    comet_rt_memref *im, comet_rt_memref *dxm) {
  const char *op = "maxpool_grad";
  Tensor dy, ind, dx;
  COMET_RT_TRY(view(dym, 4, "maxpool_grad dY", dy));
  COMET_RT_TRY(view(im, 8, "maxpool_grad Indices", ind));
  COMET_RT_TRY(view(dxm, 4, "maxpool_grad dX", dx));
  COMET_RT_CHECK(ind.numel() == dy.numel(), op,
                 ": Indices must have dY's size");
  State &s = state(ctx);
  CU_TRY(op, cudaMemsetAsync(dx.data, 0, dx.numel() * sizeof(float), s.stream));
  if (dy.numel() == 0)
    return ok();
  maxpoolGradK<<<gridFor(dy.numel()), kThreads, 0, s.stream>>>(
      dy.f(), ind.i64(), dx.f(), dy.numel(), dx.numel());
  LAUNCHED(op);
  return ok();
}

int32_t globalAveragePool(comet_rt_context *ctx, comet_rt_memref *xm,
                          comet_rt_memref *ym) {
  const char *op = "global_average_pool";
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "global_average_pool X", x));
  COMET_RT_TRY(view(ym, 4, "global_average_pool Y", y));
  COMET_RT_CHECK(x.rank() >= 3 && y.rank() == x.rank(), op,
                 ": X must have rank >= 3 and Y X's rank");
  int64_t planes = x.dim(0) * x.dim(1),
          hw = x.numel() / std::max<int64_t>(planes, 1);
  COMET_RT_CHECK(y.numel() == planes && y.dim(0) == x.dim(0) &&
                     y.dim(1) == x.dim(1),
                 op, ": Y must be [N,C,1,...]");
  if (planes == 0)
    return ok();
  COMET_RT_CHECK(planes <= 0x7fffffff, op, ": too many planes");
  gapK<<<static_cast<unsigned>(planes), kThreads, 0, state(ctx).stream>>>(
      x.f(), y.f(), hw);
  LAUNCHED(op);
  return ok();
}

//===----------------------------------------------------------------------===//
// Activations, copies, shapes, broadcasting, reductions
//===----------------------------------------------------------------------===//

int32_t relu(comet_rt_context *ctx, comet_rt_memref *xm, comet_rt_memref *ym) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "relu X", x));
  COMET_RT_TRY(view(ym, 4, "relu Y", y));
  COMET_RT_CHECK(x.numel() == y.numel(), "relu: X and Y differ in size");
  if (x.numel() == 0)
    return ok();
  reluK<<<gridFor(x.numel()), kThreads, 0, state(ctx).stream>>>(x.f(), y.f(),
                                                                x.numel());
  LAUNCHED("relu");
  return ok();
}

int32_t reluGrad(comet_rt_context *ctx, comet_rt_memref *dym,
                 comet_rt_memref *xm, comet_rt_memref *dxm) {
  Tensor dy, x, dx;
  COMET_RT_TRY(view(dym, 4, "relu_grad dY", dy));
  COMET_RT_TRY(view(xm, 4, "relu_grad X", x));
  COMET_RT_TRY(view(dxm, 4, "relu_grad dX", dx));
  COMET_RT_CHECK(dy.numel() == x.numel() && dx.numel() == x.numel(),
                 "relu_grad: dY, X and dX differ in size");
  if (x.numel() == 0)
    return ok();
  reluGradK<<<gridFor(x.numel()), kThreads, 0, state(ctx).stream>>>(
      dy.f(), x.f(), dx.f(), x.numel());
  LAUNCHED("relu_grad");
  return ok();
}

int32_t leakyRelu(comet_rt_context *ctx, comet_rt_memref *xm,
                  comet_rt_memref *ym, float alpha) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "leaky_relu X", x));
  COMET_RT_TRY(view(ym, 4, "leaky_relu Y", y));
  COMET_RT_CHECK(x.dims == y.dims, "leaky_relu: X ", shapeStr(x.dims),
                 " and Y ", shapeStr(y.dims), " must share a shape");
  if (x.numel() == 0)
    return ok();
  leakyReluK<<<gridFor(x.numel()), kThreads, 0, state(ctx).stream>>>(
      x.f(), y.f(), alpha, x.numel());
  LAUNCHED("leaky_relu");
  return ok();
}

int32_t leakyReluGrad(comet_rt_context *ctx, comet_rt_memref *dym,
                      comet_rt_memref *ym, comet_rt_memref *dxm, float alpha) {
  Tensor dy, y, dx;
  COMET_RT_TRY(view(dym, 4, "leaky_relu_grad dY", dy));
  COMET_RT_TRY(view(ym, 4, "leaky_relu_grad Y", y));
  COMET_RT_TRY(view(dxm, 4, "leaky_relu_grad dX", dx));
  COMET_RT_CHECK(dy.dims == y.dims && dx.dims == y.dims,
                 "leaky_relu_grad: dY ", shapeStr(dy.dims), ", Y ",
                 shapeStr(y.dims), " and dX ", shapeStr(dx.dims),
                 " must share a shape");
  if (y.numel() == 0)
    return ok();
  leakyReluGradK<<<gridFor(y.numel()), kThreads, 0, state(ctx).stream>>>(
      dy.f(), y.f(), dx.f(), alpha, y.numel());
  LAUNCHED("leaky_relu_grad");
  return ok();
}

int32_t quickGelu(comet_rt_context *ctx, comet_rt_memref *xm,
                  comet_rt_memref *ym, float alpha) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "quick_gelu X", x));
  COMET_RT_TRY(view(ym, 4, "quick_gelu Y", y));
  COMET_RT_CHECK(x.dims == y.dims, "quick_gelu: X ", shapeStr(x.dims),
                 " and Y ", shapeStr(y.dims), " must share a shape");
  COMET_RT_CHECK(std::isfinite(alpha), "quick_gelu: alpha must be finite, got ",
                 alpha);
  if (x.numel() == 0)
    return ok();
  quickGeluK<<<gridFor(x.numel()), kThreads, 0, state(ctx).stream>>>(
      x.f(), y.f(), alpha, x.numel());
  LAUNCHED("quick_gelu");
  return ok();
}

int32_t quickGeluGrad(comet_rt_context *ctx, comet_rt_memref *dym,
                      comet_rt_memref *xm, comet_rt_memref *dxm, float alpha) {
  Tensor dy, x, dx;
  COMET_RT_TRY(view(dym, 4, "quick_gelu_grad dY", dy));
  COMET_RT_TRY(view(xm, 4, "quick_gelu_grad X", x));
  COMET_RT_TRY(view(dxm, 4, "quick_gelu_grad dX", dx));
  COMET_RT_CHECK(dy.dims == x.dims && dx.dims == x.dims, "quick_gelu_grad: dY ",
                 shapeStr(dy.dims), ", X ", shapeStr(x.dims), " and dX ",
                 shapeStr(dx.dims), " must share a shape");
  COMET_RT_CHECK(std::isfinite(alpha),
                 "quick_gelu_grad: alpha must be finite, got ", alpha);
  if (x.numel() == 0)
    return ok();
  quickGeluGradK<<<gridFor(x.numel()), kThreads, 0, state(ctx).stream>>>(
      dy.f(), x.f(), dx.f(), alpha, x.numel());
  LAUNCHED("quick_gelu_grad");
  return ok();
}

/// Copies X into Y (same element count) on the stream; X may be host
/// memory (a constant of the compiled code).
int32_t copyImpl(comet_rt_context *ctx, const char *op, comet_rt_memref *xm,
                 comet_rt_memref *ym, size_t elem) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, elem, op, x));
  COMET_RT_TRY(view(ym, elem, op, y));
  COMET_RT_CHECK(x.numel() == y.numel(), op, ": X ", shapeStr(x.dims),
                 " and Y ", shapeStr(y.dims), " differ in size");
  if (x.data != y.data && x.numel() > 0)
    CU_TRY(op, cudaMemcpyAsync(y.data, x.data, elem * x.numel(),
                               cudaMemcpyDefault, state(ctx).stream));
  return ok();
}

int32_t identity(comet_rt_context *ctx, comet_rt_memref *xm,
                 comet_rt_memref *ym) {
  return copyImpl(ctx, "identity", xm, ym, 4);
}
int32_t identityI64(comet_rt_context *ctx, comet_rt_memref *xm,
                    comet_rt_memref *ym) {
  return copyImpl(ctx, "identity_i64", xm, ym, 8);
}
int32_t identityI1(comet_rt_context *ctx, comet_rt_memref *xm,
                   comet_rt_memref *ym) {
  return copyImpl(ctx, "identity_i1", xm, ym, 1);
}

/// Y's dims are the result; the shape operand is device memory and is not
/// read (the compiler specialized every shape).
int32_t reshape(comet_rt_context *ctx, comet_rt_memref *xm,
                comet_rt_memref *shm, comet_rt_memref *ym, int64_t) {
  Tensor shape;
  COMET_RT_TRY(view(shm, 8, "reshape shape", shape));
  COMET_RT_CHECK(shape.rank() == 1, "reshape: shape must be 1-D");
  return copyImpl(ctx, "reshape", xm, ym, 4);
}

int32_t flatten(comet_rt_context *ctx, comet_rt_memref *xm, comet_rt_memref *ym,
                int64_t axis) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "flatten X", x));
  COMET_RT_TRY(view(ym, 4, "flatten Y", y));
  int64_t r = x.rank();
  if (axis < 0)
    axis += r;
  COMET_RT_CHECK(axis >= 0 && axis <= r, "flatten: bad axis");
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= x.dim(i);
  int64_t inner = outer ? x.numel() / outer : 0;
  COMET_RT_CHECK(y.rank() == 2 && y.dim(0) == outer && y.dim(1) == inner,
                 "flatten: Y is ", shapeStr(y.dims), ", expected [", outer,
                 ", ", inner, "]");
  return copyImpl(ctx, "flatten", xm, ym, 4);
}

int32_t shape(comet_rt_context *ctx, comet_rt_memref *xm, comet_rt_memref *ym,
              int64_t start, int64_t end) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "shape X", x));
  COMET_RT_TRY(view(ym, 8, "shape Y", y));
  int64_t r = x.rank();
  if (start < 0)
    start += r;
  if (end < 0)
    end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  COMET_RT_CHECK(y.numel() == end - start, "shape: Y needs ", end - start,
                 " elements");
  if (end == start)
    return ok();
  Dims16 d{};
  for (int64_t i = start; i < end; ++i)
    d.v[i - start] = x.dim(i);
  writeDimsK<<<1, 16, 0, state(ctx).stream>>>(y.i64(), d,
                                              static_cast<int>(end - start));
  LAUNCHED("shape");
  return ok();
}

int32_t add(comet_rt_context *ctx, comet_rt_memref *am, comet_rt_memref *bm,
            comet_rt_memref *ym) {
  const char *op = "add";
  Tensor a, b, y;
  COMET_RT_TRY(view(am, 4, "add A", a));
  COMET_RT_TRY(view(bm, 4, "add B", b));
  COMET_RT_TRY(view(ym, 4, "add Y", y));
  COMET_RT_CHECK(y.rank() <= kMaxRank, op, ": rank above ", kMaxRank);
  Bcast d{static_cast<int>(y.rank()), {}, {}, {}};
  std::copy(y.dims.begin(), y.dims.end(), d.dims);
  // Y must be exactly the broadcast of A and B.
  size_t r = std::max(a.dims.size(), b.dims.size());
  bool same = r == y.dims.size();
  for (size_t i = 0; same && i < r; ++i) {
    int64_t da = i + a.dims.size() >= r ? a.dims[i + a.dims.size() - r] : 1;
    int64_t db = i + b.dims.size() >= r ? b.dims[i + b.dims.size() - r] : 1;
    same = (da == db || da == 1 || db == 1) && y.dims[i] == (da == 1 ? db : da);
  }
  COMET_RT_CHECK(same && bcastStrides(a.dims, y.dims, d.sa) &&
                     bcastStrides(b.dims, y.dims, d.sb),
                 op, ": A ", shapeStr(a.dims), " and B ", shapeStr(b.dims),
                 " do not broadcast to Y ", shapeStr(y.dims));
  if (y.numel() == 0)
    return ok();
  addK<<<gridFor(y.numel()), kThreads, 0, state(ctx).stream>>>(
      a.f(), b.f(), y.f(), y.numel(), d);
  LAUNCHED(op);
  return ok();
}

/// Y's dims are the result; X must broadcast to them. The shape operand is
/// device memory and is not read.
int32_t expand(comet_rt_context *ctx, comet_rt_memref *xm, comet_rt_memref *shm,
               comet_rt_memref *ym) {
  const char *op = "expand";
  Tensor x, shape, y;
  COMET_RT_TRY(view(xm, 4, "expand X", x));
  COMET_RT_TRY(view(shm, 8, "expand shape", shape));
  COMET_RT_TRY(view(ym, 4, "expand Y", y));
  COMET_RT_CHECK(y.rank() <= kMaxRank, op, ": rank above ", kMaxRank);
  Bcast d{static_cast<int>(y.rank()), {}, {}, {}};
  std::copy(y.dims.begin(), y.dims.end(), d.dims);
  COMET_RT_CHECK(bcastStrides(x.dims, y.dims, d.sa), op, ": X ",
                 shapeStr(x.dims), " does not broadcast to Y ",
                 shapeStr(y.dims));
  if (y.numel() == 0)
    return ok();
  bcastCopyK<<<gridFor(y.numel()), kThreads, 0, state(ctx).stream>>>(
      x.f(), y.f(), y.numel(), d);
  LAUNCHED(op);
  return ok();
}

/// Kept and reduced dims of X with their element strides.
struct Reduce {
  int nk, nr;
  int64_t kd[kMaxRank], ks[kMaxRank], rd[kMaxRank], rs[kMaxRank];
  int64_t rcount;
};

/// One block per output element.
__global__ void reduceSumK(const float *x, float *y, int64_t nOut, Reduce g) {
  for (int64_t o = blockIdx.x; o < nOut; o += gridDim.x) {
    int64_t base = 0, q = o;
    for (int k = g.nk - 1; k >= 0; --k) {
      base += (q % g.kd[k]) * g.ks[k];
      q /= g.kd[k];
    }
    double s = 0;
    for (int64_t r = threadIdx.x; r < g.rcount; r += blockDim.x) {
      int64_t off = base, t = r;
      for (int k = g.nr - 1; k >= 0; --k) {
        off += (t % g.rd[k]) * g.rs[k];
        t /= g.rd[k];
      }
      s += x[off];
    }
    s = blockSum(s);
    if (threadIdx.x == 0)
      y[o] = float(s);
  }
}

/// The reduced axes of X -> Y when the shapes alone say which: with
/// keepdims, the dims that differ; without, the one way (up to dims of size
/// 1, whose reduction changes nothing) to delete dims of X and get Y.
bool inferAxes(const std::vector<int64_t> &x, const std::vector<int64_t> &y,
               bool keepdims, std::vector<bool> &reduced) {
  size_t r = x.size();
  reduced.assign(r, false);
  if (keepdims) {
    if (y.size() != r)
      return false;
    for (size_t i = 0; i < r; ++i) {
      if (x[i] != y[i] && y[i] != 1)
        return false;
      reduced[i] = x[i] != y[i];
    }
    return true;
  }
  if (y.size() > r || r > kMaxRank)
    return false;
  uint32_t notOne = 0;
  for (size_t i = 0; i < r; ++i)
    notOne |= x[i] != 1 ? 1u << i : 0;
  std::vector<uint32_t> found; // distinct fits, as their non-1 dims
  uint32_t pick = 0;
  for (uint32_t mask = 0; mask < (1u << r); ++mask) {
    if (static_cast<size_t>(__builtin_popcount(mask)) != r - y.size())
      continue;
    std::vector<int64_t> kept;
    for (size_t i = 0; i < r; ++i)
      if (!(mask >> i & 1))
        kept.push_back(x[i]);
    if (kept != y)
      continue;
    if (std::find(found.begin(), found.end(), mask & notOne) == found.end())
      found.push_back(mask & notOne);
    pick = mask;
  }
  if (found.size() != 1)
    return false;
  for (size_t i = 0; i < r; ++i)
    reduced[i] = pick >> i & 1;
  return true;
}

int32_t reduceSum(comet_rt_context *ctx, comet_rt_memref *xm,
                  comet_rt_memref *axm, comet_rt_memref *ym, int64_t keepdims,
                  int64_t noopEmptyAxes) {
  const char *op = "reduce_sum";
  Tensor x, axes, y;
  COMET_RT_TRY(view(xm, 4, "reduce_sum X", x));
  COMET_RT_TRY(view(axm, 8, "reduce_sum axes", axes, true));
  COMET_RT_TRY(view(ym, 4, "reduce_sum Y", y));
  int64_t r = x.rank();
  COMET_RT_CHECK(r <= kMaxRank, op, ": rank above ", kMaxRank);
  if (!axes.present && noopEmptyAxes)
    return copyImpl(ctx, op, xm, ym, 4);
  std::vector<bool> red(r, !axes.present);
  if (axes.present && !inferAxes(x.dims, y.dims, keepdims != 0, red)) {
    // The shapes do not tell: read the axes (a few bytes) from the device.
    std::vector<int64_t> ax(axes.numel());
    CU_TRY(op, cudaMemcpyAsync(ax.data(), axes.data, ax.size() * 8,
                               cudaMemcpyDeviceToHost, state(ctx).stream));
    CU_TRY(op, cudaStreamSynchronize(state(ctx).stream));
    red.assign(r, false);
    for (int64_t a : ax) {
      int64_t k = a < 0 ? a + r : a;
      COMET_RT_CHECK(k >= 0 && k < r, op, ": axis ", a, " out of range");
      red[k] = true;
    }
  }
  std::vector<int64_t> expect;
  Reduce g{};
  g.rcount = 1;
  int64_t stride = 1;
  std::vector<int64_t> strides(r);
  for (int64_t i = r - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= x.dim(i);
  }
  for (int64_t i = 0; i < r; ++i) {
    if (red[i]) {
      g.rd[g.nr] = x.dim(i);
      g.rs[g.nr++] = strides[i];
      g.rcount *= x.dim(i);
      if (keepdims)
        expect.push_back(1);
    } else {
      g.kd[g.nk] = x.dim(i);
      g.ks[g.nk++] = strides[i];
      expect.push_back(x.dim(i));
    }
  }
  COMET_RT_CHECK(y.dims == expect, op, ": Y is ", shapeStr(y.dims),
                 ", expected ", shapeStr(expect));
  if (y.numel() == 0)
    return ok();
  reduceSumK<<<static_cast<unsigned>(std::min<int64_t>(y.numel(), 65535)),
               kThreads, 0, state(ctx).stream>>>(x.f(), y.f(), y.numel(), g);
  LAUNCHED(op);
  return ok();
}

int32_t scale(comet_rt_context *ctx, comet_rt_memref *xm, comet_rt_memref *sm,
              comet_rt_memref *ym, int64_t scaleDown) {
  Tensor x, s, y;
  COMET_RT_TRY(view(xm, 4, "scale X", x));
  COMET_RT_TRY(view(sm, 4, "scale factor", s));
  COMET_RT_TRY(view(ym, 4, "scale Y", y));
  COMET_RT_CHECK(s.numel() == 1, "scale: the factor must have one element");
  COMET_RT_CHECK(x.numel() == y.numel(), "scale: X and Y differ in size");
  if (x.numel() == 0)
    return ok();
  scaleK<<<gridFor(x.numel()), kThreads, 0, state(ctx).stream>>>(
      x.f(), s.f(), y.f(), x.numel(), scaleDown != 0);
  LAUNCHED("scale");
  return ok();
}

//===----------------------------------------------------------------------===//
// Accumulation and optimizers (flags and scalars stay on the device)
//===----------------------------------------------------------------------===//

__device__ bool flagOf(const uint8_t *f, bool dflt) {
  return f ? *f != 0 : dflt;
}

__global__ void accumulateK(float *buf, const float *v, const uint8_t *ow,
                            uint8_t *updated, float *out, int64_t n) {
  bool overwrite = flagOf(ow, false);
  GRID_STRIDE(i, n) {
    float o = overwrite ? v[i] : buf[i] + v[i];
    out[i] = o;
    if (out != buf)
      buf[i] = o;
  }
  if (updated && blockIdx.x == 0 && threadIdx.x == 0)
    *updated = 1;
}

__global__ void adamwK(const float *lr, const int64_t *step, float *w,
                       const float *g, float *m1, float *m2,
                       const uint8_t *signal, uint8_t *flag, int64_t n,
                       float alpha, float beta, float eps, float decay,
                       int mode, int correctBias) {
  bool go = flagOf(signal, true);
  if (flag && blockIdx.x == 0 && threadIdx.x == 0)
    *flag = go ? 1 : 0;
  if (!go)
    return;
  float l = *lr;
  float alphaCorr = 1.0f, betaCorr = 1.0f, lrCorr = l;
  if (correctBias) {
    // As ORT: pow in double, then float.
    alphaCorr = 1.0f - (float)pow((double)alpha, (double)*step);
    betaCorr = 1.0f - (float)pow((double)beta, (double)*step);
    lrCorr = l * (sqrtf(betaCorr) / alphaCorr);
  }
  GRID_STRIDE(i, n) {
    float gi = g[i];
    float a = alpha * m1[i] + (1.0f - alpha) * gi;
    float b = beta * m2[i] + (1.0f - beta) * gi * gi;
    m1[i] = a;
    m2[i] = b;
    if (mode == 0) {
      float wi = w[i] - w[i] * l * decay;
      float denom = sqrtf(b / betaCorr) + eps;
      w[i] = wi - (l * a) / (alphaCorr * denom);
    } else {
      float wi = w[i] - lrCorr * a / (sqrtf(b) + eps);
      w[i] = wi - l * decay * wi;
    }
  }
}

__global__ void sgdK(const float *lr, float *w, const float *g,
                     const uint8_t *signal, uint8_t *flag, int64_t n) {
  bool go = flagOf(signal, true);
  if (flag && blockIdx.x == 0 && threadIdx.x == 0)
    *flag = go ? 1 : 0;
  if (!go)
    return;
  float l = *lr;
  GRID_STRIDE(i, n) w[i] -= l * g[i];
}

__global__ void sgdMomentumK(const float *lr, float *w, const float *g,
                             float *v, int64_t n, float momentum, float decay,
                             int nesterov) {
  float l = *lr;
  GRID_STRIDE(i, n) {
    float gi = g[i] + decay * w[i];
    float vi = momentum * v[i] + gi;
    v[i] = vi;
    w[i] -= l * (nesterov ? gi + momentum * vi : vi);
  }
}

const uint8_t *flagPtr(const Tensor &t) {
  return t.present ? t.as<const uint8_t>() : nullptr;
}

int32_t inplaceAccumulator(comet_rt_context *ctx, comet_rt_memref *bm,
                           comet_rt_memref *vm, comet_rt_memref *om,
                           comet_rt_memref *um, comet_rt_memref *outm) {
  const char *op = "inplace_accumulator_v2";
  Tensor buf, val, ow, upd, out;
  COMET_RT_TRY(view(bm, 4, "accumulator buffer", buf));
  COMET_RT_TRY(view(vm, 4, "accumulator value", val));
  COMET_RT_TRY(view(om, 1, "accumulator overwrite", ow, true));
  COMET_RT_TRY(view(um, 1, "accumulator updated", upd, true));
  COMET_RT_TRY(view(outm, 4, "accumulator buffer_out", out, true));
  COMET_RT_CHECK(buf.numel() == val.numel(), op, ": buffer ",
                 shapeStr(buf.dims), " and value ", shapeStr(val.dims),
                 " differ in size");
  if (!out.present)
    out = buf;
  COMET_RT_CHECK(out.numel() == buf.numel(), op,
                 ": buffer_out must have the buffer's size");
  accumulateK<<<gridFor(buf.numel()), kThreads, 0, state(ctx).stream>>>(
      buf.f(), val.f(), flagPtr(ow), upd.present ? upd.as<uint8_t>() : nullptr,
      out.f(), buf.numel());
  LAUNCHED(op);
  return ok();
}

int32_t adamw(comet_rt_context *ctx, comet_rt_memref *lrm,
              comet_rt_memref *stepm, comet_rt_memref *wm, comet_rt_memref *gm,
              comet_rt_memref *m1m, comet_rt_memref *m2m, comet_rt_memref *sigm,
              comet_rt_memref *flagm, float alpha, float beta, float epsilon,
              float weightDecay, int64_t adamMode, int64_t correctBias) {
  const char *op = "adamw";
  Tensor lrT, stepT, w, g, m1, m2, sig, fl;
  COMET_RT_TRY(view(lrm, 4, "adamw lr", lrT));
  COMET_RT_TRY(view(stepm, 8, "adamw step", stepT));
  COMET_RT_TRY(view(wm, 4, "adamw weight", w));
  COMET_RT_TRY(view(gm, 4, "adamw grad", g));
  COMET_RT_TRY(view(m1m, 4, "adamw m1", m1));
  COMET_RT_TRY(view(m2m, 4, "adamw m2", m2));
  COMET_RT_TRY(view(sigm, 1, "adamw update_signal", sig, true));
  COMET_RT_TRY(view(flagm, 1, "adamw updated_flag", fl, true));
  COMET_RT_CHECK(w.dims == g.dims && w.dims == m1.dims && w.dims == m2.dims, op,
                 ": weight, grad and moments must share a shape");
  COMET_RT_CHECK(adamMode == 0 || adamMode == 1, op, ": bad adam_mode");
  COMET_RT_CHECK(correctBias == 0 || correctBias == 1, op,
                 ": bad correct_bias");
  COMET_RT_CHECK(stepT.numel() == 1, op, ": step must have one element");
  COMET_RT_CHECK(lrT.numel() == 1, op, ": lr must have one element");
  adamwK<<<gridFor(w.numel()), kThreads, 0, state(ctx).stream>>>(
      lrT.f(), stepT.i64(), w.f(), g.f(), m1.f(), m2.f(), flagPtr(sig),
      fl.present ? fl.as<uint8_t>() : nullptr, w.numel(), alpha, beta, epsilon,
      weightDecay, static_cast<int>(adamMode), static_cast<int>(correctBias));
  LAUNCHED(op);
  return ok();
}

int32_t sgdV2(comet_rt_context *ctx, comet_rt_memref *lrm, comet_rt_memref *wm,
              comet_rt_memref *gm, comet_rt_memref *sigm,
              comet_rt_memref *flagm) {
  Tensor lrT, w, g, sig, fl;
  COMET_RT_TRY(view(lrm, 4, "sgd lr", lrT));
  COMET_RT_TRY(view(wm, 4, "sgd weight", w));
  COMET_RT_TRY(view(gm, 4, "sgd grad", g));
  COMET_RT_TRY(view(sigm, 1, "sgd update_signal", sig, true));
  COMET_RT_TRY(view(flagm, 1, "sgd update_completed", fl, true));
  COMET_RT_CHECK(w.dims == g.dims, "sgd_v2: weight and grad shapes differ");
  COMET_RT_CHECK(lrT.numel() == 1, "sgd_v2: lr must have one element");
  sgdK<<<gridFor(w.numel()), kThreads, 0, state(ctx).stream>>>(
      lrT.f(), w.f(), g.f(), flagPtr(sig),
      fl.present ? fl.as<uint8_t>() : nullptr, w.numel());
  LAUNCHED("sgd_v2");
  return ok();
}

int32_t sgdMomentum(comet_rt_context *ctx, comet_rt_memref *lrm,
                    comet_rt_memref *wm, comet_rt_memref *gm,
                    comet_rt_memref *vm, float momentum, float weightDecay,
                    int64_t nesterov) {
  Tensor lrT, w, g, v;
  COMET_RT_TRY(view(lrm, 4, "sgd_momentum lr", lrT));
  COMET_RT_TRY(view(wm, 4, "sgd_momentum weight", w));
  COMET_RT_TRY(view(gm, 4, "sgd_momentum grad", g));
  COMET_RT_TRY(view(vm, 4, "sgd_momentum velocity", v));
  COMET_RT_CHECK(w.dims == g.dims && w.dims == v.dims,
                 "sgd_momentum: weight, grad and velocity shapes differ");
  COMET_RT_CHECK(lrT.numel() == 1, "sgd_momentum: lr must have one element");
  if (w.numel() == 0)
    return ok();
  sgdMomentumK<<<gridFor(w.numel()), kThreads, 0, state(ctx).stream>>>(
      lrT.f(), w.f(), g.f(), v.f(), w.numel(), momentum, weightDecay,
      nesterov != 0);
  LAUNCHED("sgd_momentum");
  return ok();
}

__global__ void absMeanDensityK(const float *x, int64_t n, float *out) {
  double s = 0, nz = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    s += fabsf(x[i]);
    nz += x[i] != 0.0f ? 1.0 : 0.0;
  }
  s = blockSum(s);
  nz = blockSum(nz);
  if (threadIdx.x == 0) {
    out[0] = n ? float(s / double(n)) : 0.0f;
    out[1] = n ? float(nz / double(n)) : 0.0f;
  }
}

int32_t absMeanAndDensity(comet_rt_context *ctx, comet_rt_memref *xm,
                          comet_rt_memref *om) {
  Tensor x, out;
  COMET_RT_TRY(view(xm, 4, "abs_mean_and_density X", x));
  COMET_RT_TRY(view(om, 4, "abs_mean_and_density out", out));
  COMET_RT_CHECK(out.numel() >= 2,
                 "abs_mean_and_density: out needs two elements");
  absMeanDensityK<<<1, kThreads, 0, state(ctx).stream>>>(x.f(), x.numel(),
                                                         out.f());
  LAUNCHED("abs_mean_and_density");
  return ok();
}

//===----------------------------------------------------------------------===//
// Compressed activations (the CUDA codec, format v1)
//===----------------------------------------------------------------------===//

/// A CUDA handle: host metadata, and the stream in one device block of
/// category compressed, counted as the CPU's (its header plus the stream).
struct DeviceHandle {
  uint64_t magic;
  int64_t streamBytes;
  int64_t numElements;
  int64_t site;
  int32_t codec;
  void *block;
  std::vector<int64_t> dims;
};
constexpr uint64_t kDeviceHandleMagic = 0x434f4d4554435544ull; // "COMETCUD"
/// The CPU handle header's size, so that both count the same bytes.
constexpr int64_t kHandleHeaderBytes = 32;

DeviceHandle *deviceHandle(int64_t h) {
  auto *p = reinterpret_cast<DeviceHandle *>(static_cast<intptr_t>(h));
  return p && p->magic == kDeviceHandleMagic ? p : nullptr;
}

int64_t compress(comet_rt_context *ctx, comet_rt_memref *xm, int32_t codec,
                 int64_t slot, double eb, int64_t site) {
  const char *op = "comet_rt_compress";
  handlesClearError();
  Tensor x;
  if (view(xm, 4, "compress X", x) != COMET_RT_SUCCESS) {
    handlesFail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat(op, ": input is not a contiguous f32 memref"));
    return 0;
  }
  int64_t prevOut = 0;
  if (siteBegin(ctx, op, codec, slot, site, eb, prevOut) != COMET_RT_SUCCESS)
    return 0;
  uint64_t n = static_cast<uint64_t>(x.numel());
  size_t worst =
      comet_rt_codec_cuda_max_compressed_size(codec, COMET_RT_DTYPE_F32, n);
  if (worst == 0) {
    handlesFail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat(op, ": unknown codec ", codec));
    return 0;
  }
  std::vector<uint64_t> dims(x.dims.begin(), x.dims.end());
  State &s = state(ctx);
  // The CUDA codec wants the worst case's capacity (unlike the CPU
  // backend, which tries a guess from the site's last stream first): a
  // scratch block of that size, then exactly the stream's bytes are kept.
  size_t outSize = 0;
  auto scratch = std::make_unique<DevBuf>(ctx, worst);
  if (!scratch->ok()) {
    handlesFail(COMET_RT_ERROR_OUT_OF_MEMORY, concat(op, ": out of memory"));
    return 0;
  }
  // Synchronous: it returns the stream's size, which sizes the block.
  comet_rt_status st = comet_rt_codec_cuda_compress(
      codec, COMET_RT_DTYPE_F32, x.data, dims.data(),
      static_cast<uint32_t>(dims.size()), eb, scratch->get(), worst, &outSize,
      s.stream);
  if (st != COMET_RT_OK) {
    handlesFail(static_cast<int32_t>(st),
                concat(op, ": ", comet_rt_status_string(st)));
    return 0;
  }
  int64_t total = kHandleHeaderBytes + static_cast<int64_t>(outSize);
  void *block = comet_rt_alloc(ctx, total, COMET_RT_MEM_COMPRESSED);
  if (!block) {
    handlesFail(COMET_RT_ERROR_OUT_OF_MEMORY, concat(op, ": out of memory"));
    return 0;
  }
  cudaError_t e = cudaMemcpyAsync(block, scratch->get(), outSize,
                                  cudaMemcpyDeviceToDevice, s.stream);
  scratch.reset();
  if (e != cudaSuccess) {
    comet_rt_free(block);
    handlesFail(COMET_RT_ERROR_BACKEND,
                concat(op, ": ", cudaGetErrorString(e)));
    return 0;
  }
  auto *h = new DeviceHandle{kDeviceHandleMagic,
                             static_cast<int64_t>(outSize),
                             x.numel(),
                             site,
                             codec,
                             block,
                             x.dims};
  siteRecord(ctx, site, codec, slot, eb, x.numel() * 4, total);
  resolve(ctx)->trackStepBlock(h, /*isHandle=*/true);
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(h));
}

int32_t decompress(comet_rt_context *ctx, int64_t handle, comet_rt_memref *ym) {
  const char *op = "comet_rt_decompress";
  handlesClearError();
  DeviceHandle *h = deviceHandle(handle);
  if (!h)
    return handlesFail(COMET_RT_ERROR_INVALID_ARGUMENT,
                       concat(op, ": not a live handle"));
  Tensor y;
  if (view(ym, 4, "decompress Y", y) != COMET_RT_SUCCESS)
    return handlesFail(COMET_RT_ERROR_INVALID_ARGUMENT,
                       concat(op, ": output is not a contiguous f32 memref"));
  if (y.numel() != h->numElements)
    return handlesFail(COMET_RT_ERROR_INVALID_ARGUMENT,
                       concat(op, ": output has ", y.numel(),
                              " elements, the handle ", h->numElements));
  State &s = state(ctx);
  // The status goes to a device word nobody reads: the stream is this
  // backend's own, and waiting for it would cost a sync per activation.
  DevBuf status(ctx, sizeof(int32_t));
  if (!status.ok())
    return handlesFail(COMET_RT_ERROR_OUT_OF_MEMORY,
                       concat(op, ": out of memory"));
  comet_rt_status st = comet_rt_codec_cuda_decompress_async(
      h->block, static_cast<size_t>(h->streamBytes), y.data,
      static_cast<size_t>(y.numel()) * sizeof(float), status.as<int32_t>(),
      s.stream);
  if (st != COMET_RT_OK)
    return handlesFail(static_cast<int32_t>(st),
                       concat(op, ": ", comet_rt_status_string(st)));
  return COMET_RT_SUCCESS;
}

__global__ void reluGradMaskK(const float *dy, const uint8_t *bits, float *dx,
                              int64_t n) {
  GRID_STRIDE(i, n) dx[i] = (bits[i >> 3] >> (i & 7)) & 1 ? dy[i] : 0.0f;
}

int32_t reluGradMask(comet_rt_context *ctx, comet_rt_memref *dym,
                     int64_t handle, comet_rt_memref *dxm) {
  const char *op = "comet_rt_relu_grad_mask";
  handlesClearError();
  DeviceHandle *h = deviceHandle(handle);
  if (!h)
    return handlesFail(COMET_RT_ERROR_INVALID_ARGUMENT,
                       concat(op, ": not a live handle"));
  Tensor dy, dx;
  if (view(dym, 4, "relu_grad_mask dY", dy) != COMET_RT_SUCCESS ||
      view(dxm, 4, "relu_grad_mask dX", dx) != COMET_RT_SUCCESS)
    return handlesFail(COMET_RT_ERROR_INVALID_ARGUMENT,
                       concat(op, ": dY and dX must be contiguous f32 "
                                  "memrefs"));
  int64_t n = h->numElements, payload = (n + 7) / 8;
  if (h->codec != COMET_RT_CODEC_MASK || payload > h->streamBytes)
    return handlesFail(COMET_RT_ERROR_INVALID_ARGUMENT,
                       concat(op, ": the handle is not a mask stream"));
  if (dy.dims != dx.dims || dy.dims != h->dims)
    return handlesFail(COMET_RT_ERROR_INVALID_ARGUMENT,
                       concat(op, ": dY, dX and the handle's shapes differ"));
  if (n == 0)
    return COMET_RT_SUCCESS;
  // The payload is the stream's last section.
  const uint8_t *bits =
      static_cast<const uint8_t *>(h->block) + (h->streamBytes - payload);
  reluGradMaskK<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(dy.f(), bits,
                                                                dx.f(), n);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return handlesFail(COMET_RT_ERROR_BACKEND,
                       concat(op, ": ", cudaGetErrorString(e)));
  return COMET_RT_SUCCESS;
}

void handleFree(comet_rt_context *ctx, int64_t handle) {
  if (DeviceHandle *h = deviceHandle(handle)) {
    resolve(ctx)->untrackStepBlock(h);
    h->magic = 0;
    comet_rt_free(h->block);
    delete h;
  }
}

//===----------------------------------------------------------------------===//
// Tuner statistics
//===----------------------------------------------------------------------===//

/// The observations read tensors on the host: a context that collects them
/// stays on the CPU (comet-run refuses adaptive steps; comet-train refuses
/// --compress adaptive with --device cuda). No-ops otherwise, as on the CPU.
int32_t observe(comet_rt_context *ctx, const char *op, int64_t slot,
                int64_t consumer) {
  if (slot < 0 || consumer < 0)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, concat(op, ": bad slot"));
  if (comet_rt_slot_stats_enabled(ctx))
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                concat(op, ": the bound tuner's statistics are not collected "
                           "on a CUDA device"));
  return ok();
}
int32_t observeAct(comet_rt_context *ctx, comet_rt_memref *, int64_t slot,
                   int64_t consumer) {
  return observe(ctx, "slot_observe_act", slot, consumer);
}
int32_t observeGrad(comet_rt_context *ctx, comet_rt_memref *, int64_t slot,
                    int64_t consumer) {
  return observe(ctx, "slot_observe_grad", slot, consumer);
}
int32_t observeMax(comet_rt_context *ctx, comet_rt_memref *, int64_t slot,
                   int64_t consumer) {
  return observe(ctx, "slot_observe_max", slot, consumer);
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

Backend makeBackend() {
  Backend b{};
  b.name = "cuda";
  // Allocation goes through comet_rt_alloc, which is device-aware.
  b.buffer_alloc = comet_rt_cpu_buffer_alloc;
  b.buffer_free = comet_rt_cpu_buffer_free;
  b.step_abort = comet_rt_cpu_step_abort;
  b.conv2d = conv2d;
  b.conv_grad2d = convGrad2d;
  b.gemm = gemm;
  b.matmul = matmul;
  b.batch_norm_internal = batchNormInternal;
  b.batch_norm_grad = batchNormGrad;
  b.softmax_cross_entropy_loss = sceLoss;
  b.softmax_cross_entropy_loss_grad = sceLossGrad;
  b.softmax = softmax;
  b.log_softmax = logSoftmax;
  b.relu = relu;
  b.relu_grad = reluGrad;
  b.leaky_relu = leakyRelu;
  b.leaky_relu_grad = leakyReluGrad;
  b.quick_gelu = quickGelu;
  b.quick_gelu_grad = quickGeluGrad;
  b.maxpool2d = maxpool2d;
  b.maxpool_grad = maxpoolGrad;
  b.global_average_pool = globalAveragePool;
  b.identity = identity;
  b.identity_i64 = identityI64;
  b.identity_i1 = identityI1;
  b.reshape = reshape;
  b.flatten = flatten;
  b.shape = shape;
  b.add = add;
  b.expand = expand;
  b.reduce_sum = reduceSum;
  b.scale = scale;
  b.inplace_accumulator_v2 = inplaceAccumulator;
  b.adamw = adamw;
  b.sgd_v2 = sgdV2;
  b.sgd_momentum = sgdMomentum;
  b.abs_mean_and_density = absMeanAndDensity;
  b.compress = compress;
  b.decompress = decompress;
  b.relu_grad_mask = reluGradMask;
  b.handle_free = handleFree;
  b.slot_observe_act = observeAct;
  b.slot_observe_grad = observeGrad;
  b.slot_observe_max = observeMax;
  return b;
}

const Backend cudaBackend = makeBackend();

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
  ctx->backend = &cudaBackend;
  ctx->deviceKind = COMET_RT_DEVICE_CUDA;
  return ok();
}

} // namespace comet::rt::cuda
