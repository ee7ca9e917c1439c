//===- Conv.cu - Convolution forward and backward on cuDNN ----------------===//
//
// cuDNN 9's legacy convolution API: forward, backward data, backward
// filter, backward bias. The algorithm is the first of
// cudnnGet*Algorithm_v7's ranking that runs in FP32 FMA math within the
// context's workspace limit, cached per problem; its workspace comes from
// the context's pool. cuDNN pads
// symmetrically: other pads are applied by copying X into a zero-padded
// workspace (and dX is cropped out of one).
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

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

/// The convolution as cuDNN runs it: X's dims (padded when the pads are
/// not symmetric) and the symmetric pads left to cuDNN.
struct Geometry {
  int64_t n, c, h, w;     ///< X as cuDNN sees it
  int64_t padH, padW;     ///< symmetric pads for cuDNN
  int64_t pT, pL, pB, pR; ///< explicit pads applied to a copy of X
  bool explicitPad;
};

Geometry geometryOf(const Tensor &x, int64_t pT, int64_t pL, int64_t pB,
                    int64_t pR) {
  Geometry g{x.dim(0), x.dim(1), x.dim(2), x.dim(3), pT, pL, 0, 0, 0, 0, false};
  if (pT != pB || pL != pR) {
    g.explicitPad = true;
    g.pT = pT;
    g.pL = pL;
    g.pB = pB;
    g.pR = pR;
    g.h += pT + pB;
    g.w += pL + pR;
    g.padH = g.padW = 0;
  }
  return g;
}

/// Describes X [N,C,H,W] * W [M,C/g,kH,kW] -> Y [N,M,oH,oW].
int32_t convDescs(const char *op, const Geometry &g, const Tensor &w,
                  const Tensor &y, int64_t sH, int64_t sW, int64_t dH,
                  int64_t dW, int64_t group, bool tf32, ConvDescs &d) {
  auto i = [](int64_t v) { return static_cast<int>(v); };
  DNN_TRY(op, cudnnCreateTensorDescriptor(&d.x));
  DNN_TRY(op, cudnnCreateTensorDescriptor(&d.y));
  DNN_TRY(op, cudnnCreateTensorDescriptor(&d.b));
  DNN_TRY(op, cudnnCreateFilterDescriptor(&d.w));
  DNN_TRY(op, cudnnCreateConvolutionDescriptor(&d.conv));
  DNN_TRY(op,
          cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                     i(g.n), i(g.c), i(g.h), i(g.w)));
  DNN_TRY(op, cudnnSetTensor4dDescriptor(
                  d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(y.dim(0)),
                  i(y.dim(1)), i(y.dim(2)), i(y.dim(3))));
  DNN_TRY(op,
          cudnnSetTensor4dDescriptor(d.b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                     1, i(y.dim(1)), 1, 1));
  DNN_TRY(op, cudnnSetFilter4dDescriptor(
                  d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, i(w.dim(0)),
                  i(w.dim(1)), i(w.dim(2)), i(w.dim(3))));
  DNN_TRY(op, cudnnSetConvolution2dDescriptor(
                  d.conv, i(g.padH), i(g.padW), i(sH), i(sW), i(dH), i(dW),
                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DNN_TRY(op, cudnnSetConvolutionGroupCount(d.conv, i(group)));
  // FP32 FMA kernels only, unless TF32 is allowed: CUDNN_DEFAULT_MATH lets
  // cuDNN pick TF32 tensor-core kernels on sm_80 and later.
  DNN_TRY(op, cudnnSetConvolutionMathType(d.conv, tf32 ? CUDNN_DEFAULT_MATH
                                                       : CUDNN_FMA_MATH));
  d.key =
      concat("[", g.n, "x", g.c, "x", g.h, "x", g.w, "]", shapeStr(w.dims), sH,
             ",", sW, ",", g.padH, ",", g.padW, ",", dH, ",", dW, ",", group);
  return COMET_RT_SUCCESS;
}

/// The first algorithm cuDNN's heuristics rank that runs in FP32 FMA math
/// (or TF32, where the context allows it) and whose workspace fits the
/// context's workspace limit (the limit the CPU's convolutions keep: the step's
/// peak includes every workspace); when none fits, the FMA one that needs the
/// least. Cached per problem and limit.
template <typename Perf, typename GetFn>
int32_t chooseAlgo(comet_rt_context *ctx, State &s, const char *op,
                   const std::string &problem, GetFn get, int &algo) {
  const int64_t limit = resolve(ctx)->workspaceLimit.load();
  const std::string key = concat(problem, "/", limit);
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
  int chosen = -1, smallest = -1;
  for (int k = 0; k < n && chosen < 0; ++k) {
    if (perf[k].status != CUDNN_STATUS_SUCCESS ||
        (perf[k].mathType == CUDNN_TENSOR_OP_MATH && !s.convTf32) ||
        perf[k].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      continue;
    if (limit <= 0 || perf[k].memory <= static_cast<size_t>(limit))
      chosen = k;
    else if (smallest < 0 || perf[k].memory < perf[smallest].memory)
      smallest = k;
  }
  if (chosen < 0)
    chosen = smallest;
  if (chosen < 0)
    return fail(COMET_RT_ERROR_BACKEND,
                concat(op, ": cuDNN has no FP32 algorithm for ", problem));
  algo = static_cast<int>(perf[chosen].algo);
  std::lock_guard<std::mutex> lock(s.algoMu);
  s.algos[key] = algo;
  return COMET_RT_SUCCESS;
}

/// Between X [planes, h, w] and its padded copy [planes, h + pT + pB,
/// w + pL + pR]: pad (zeros around X) or crop (the inner part back).
__global__ void padPlanesK(const float *src, float *dst, int64_t total,
                           int64_t h, int64_t w, int64_t ph, int64_t pw,
                           int64_t pT, int64_t pL, int crop) {
  // Indexes the padded tensor.
  GRID_STRIDE(i, total) {
    int64_t col = i % pw, row = (i / pw) % ph, plane = i / (pw * ph);
    int64_t r = row - pT, c = col - pL;
    bool inside = r >= 0 && r < h && c >= 0 && c < w;
    int64_t at = (plane * h + r) * w + c;
    if (crop) {
      if (inside)
        dst[at] = src[i];
    } else {
      dst[i] = inside ? src[at] : 0.0f;
    }
  }
}

int32_t padPlanes(comet_rt_context *ctx, const char *op, const Geometry &g,
                  const Tensor &x, const float *src, float *dst, bool crop) {
  int64_t total = g.n * g.c * g.h * g.w;
  if (total == 0)
    return COMET_RT_SUCCESS;
  padPlanesK<<<gridFor(total), kThreads, 0, streamOf(ctx)>>>(
      src, dst, total, x.dim(2), x.dim(3), g.h, g.w, g.pT, g.pL, crop);
  LAUNCHED(op);
  return COMET_RT_SUCCESS;
}

} // namespace

int32_t run(comet_rt_context *ctx, const conv2d_args &a) {
  const char *op = "conv2d";
  Geometry g =
      geometryOf(a.x, a.pad_top, a.pad_left, a.pad_bottom, a.pad_right);
  ConvDescs d;
  COMET_RT_TRY(convDescs(op, g, a.w, a.y, a.stride_h, a.stride_w, a.dilation_h,
                         a.dilation_w, a.group, state(ctx).convTf32, d));
  State &s = state(ctx);
  Workspace padded(ctx,
                   g.explicitPad ? sizeof(float) * g.n * g.c * g.h * g.w : 0);
  if (!padded.ok())
    return oom(op);
  const float *x = a.x.f();
  if (g.explicitPad) {
    COMET_RT_TRY(padPlanes(ctx, op, g, a.x, x, padded.f(), false));
    x = padded.f();
  }
  int algo;
  COMET_RT_TRY(chooseAlgo<cudnnConvolutionFwdAlgoPerf_t>(
      ctx, s, op, "fwd" + d.key,
      [&](cudnnConvolutionFwdAlgoPerf_t *p, int cap, int *n) {
        return cudnnGetConvolutionForwardAlgorithm_v7(s.dnn, d.x, d.w, d.conv,
                                                      d.y, cap, n, p);
      },
      algo));
  size_t wsBytes = 0;
  DNN_TRY(op, cudnnGetConvolutionForwardWorkspaceSize(
                  s.dnn, d.x, d.w, d.conv, d.y,
                  static_cast<cudnnConvolutionFwdAlgo_t>(algo), &wsBytes));
  Workspace ws(ctx, wsBytes);
  if (!ws.ok())
    return oom(op);
  const float one = 1.0f, zero = 0.0f;
  DNN_TRY(op,
          cudnnConvolutionForward(s.dnn, &one, d.x, x, d.w, a.w.data, d.conv,
                                  static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                  ws.get(), wsBytes, &zero, d.y, a.y.data));
  if (a.b.present)
    DNN_TRY(op,
            cudnnAddTensor(s.dnn, &one, d.b, a.b.data, &one, d.y, a.y.data));
  return ok();
}

int32_t run(comet_rt_context *ctx, const conv_grad2d_args &a) {
  const char *op = "conv_grad2d";
  Geometry g =
      geometryOf(a.x, a.pad_top, a.pad_left, a.pad_bottom, a.pad_right);
  ConvDescs d;
  COMET_RT_TRY(convDescs(op, g, a.w, a.dy, a.stride_h, a.stride_w, a.dilation_h,
                         a.dilation_w, a.group, state(ctx).convTf32, d));
  State &s = state(ctx);
  const float one = 1.0f, zero = 0.0f;
  size_t paddedBytes = sizeof(float) * g.n * g.c * g.h * g.w;
  if (a.dx.present) {
    int algo;
    COMET_RT_TRY(chooseAlgo<cudnnConvolutionBwdDataAlgoPerf_t>(
        ctx, s, op, "bwd-data" + d.key,
        [&](cudnnConvolutionBwdDataAlgoPerf_t *p, int cap, int *n) {
          return cudnnGetConvolutionBackwardDataAlgorithm_v7(
              s.dnn, d.w, d.y, d.conv, d.x, cap, n, p);
        },
        algo));
    auto al = static_cast<cudnnConvolutionBwdDataAlgo_t>(algo);
    size_t wsBytes = 0;
    DNN_TRY(op, cudnnGetConvolutionBackwardDataWorkspaceSize(
                    s.dnn, d.w, d.y, d.conv, d.x, al, &wsBytes));
    Workspace ws(ctx, wsBytes);
    Workspace padded(ctx, g.explicitPad ? paddedBytes : 0);
    if (!ws.ok() || !padded.ok())
      return oom(op);
    float *dx = g.explicitPad ? padded.f() : a.dx.f();
    DNN_TRY(op, cudnnConvolutionBackwardData(s.dnn, &one, d.w, a.w.data, d.y,
                                             a.dy.data, d.conv, al, ws.get(),
                                             wsBytes, &zero, d.x, dx));
    if (g.explicitPad)
      COMET_RT_TRY(padPlanes(ctx, op, g, a.x, dx, a.dx.f(), true));
  }
  if (a.dw.present) {
    Workspace padded(ctx, g.explicitPad ? paddedBytes : 0);
    if (!padded.ok())
      return oom(op);
    const float *x = a.x.f();
    if (g.explicitPad) {
      COMET_RT_TRY(padPlanes(ctx, op, g, a.x, x, padded.f(), false));
      x = padded.f();
    }
    int algo;
    COMET_RT_TRY(chooseAlgo<cudnnConvolutionBwdFilterAlgoPerf_t>(
        ctx, s, op, "bwd-filter" + d.key,
        [&](cudnnConvolutionBwdFilterAlgoPerf_t *p, int cap, int *n) {
          return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
              s.dnn, d.x, d.y, d.conv, d.w, cap, n, p);
        },
        algo));
    auto al = static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo);
    size_t wsBytes = 0;
    DNN_TRY(op, cudnnGetConvolutionBackwardFilterWorkspaceSize(
                    s.dnn, d.x, d.y, d.conv, d.w, al, &wsBytes));
    Workspace ws(ctx, wsBytes);
    if (!ws.ok())
      return oom(op);
    DNN_TRY(op, cudnnConvolutionBackwardFilter(s.dnn, &one, d.x, x, d.y,
                                               a.dy.data, d.conv, al, ws.get(),
                                               wsBytes, &zero, d.w, a.dw.data));
  }
  if (a.db.present)
    DNN_TRY(op, cudnnConvolutionBackwardBias(s.dnn, &one, d.y, a.dy.data, &zero,
                                             d.b, a.db.data));
  return ok();
}

} // namespace comet::rt::cuda
