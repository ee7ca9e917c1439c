//===- Loss.cu - SoftmaxCrossEntropyLoss and its gradient -----------------===//
//
// Per sample: the log-softmax over classes and -w * log_prob[label]; the
// reductions in one block, sums in double. The labels are in range (the
// contract checked them on a host copy).
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

/// Sample i's weight: 0 when ignored.
__device__ float sampleWeight(const int64_t *lbl, const float *weights,
                              int64_t i, int64_t ignore, int hasIgnore) {
  int64_t l = lbl[i];
  if (hasIgnore && l == ignore)
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
      sum += ::exp(double(px[j * d] - mx));
    float ls = float(::log(sum));
    for (int64_t j = 0; j < c; ++j)
      pl[j * d] = px[j * d] - mx - ls;
    float wi = sampleWeight(lbl, weights, i, ignore, hasIgnore);
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
                              int64_t m, int64_t ignore, int hasIgnore,
                              float *out) {
  double sw = 0;
  for (int64_t i = threadIdx.x; i < m; i += blockDim.x)
    sw += sampleWeight(lbl, weights, i, ignore, hasIgnore);
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
    float wi = sampleWeight(lbl, weights, i, ignore, hasIgnore);
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

} // namespace

int32_t run(comet_rt_context *ctx, const softmax_cross_entropy_loss_args &a) {
  const char *op = "softmax_cross_entropy_loss";
  const Tensor &scores = a.scores;
  int64_t n = scores.dim(0), c = scores.dim(1),
          d = product(scores.dims, 2, scores.dims.size()), m = n * d;
  cudaStream_t st = streamOf(ctx);
  Workspace lpTmp(ctx, a.log_prob.present ? 0 : sizeof(float) * scores.numel());
  Workspace vw(ctx, 2 * sizeof(float) * m);
  if (!lpTmp.ok() || !vw.ok())
    return oom(op);
  float *lp = a.log_prob.present ? a.log_prob.f() : lpTmp.f();
  float *v = vw.f(), *w = v + m;
  bool none = a.reduction == COMET_RT_REDUCTION_NONE;
  if (m > 0) {
    sceRowsK<<<gridFor(m), kThreads, 0, st>>>(
        scores.f(), a.labels.i64(), a.weights.present ? a.weights.f() : nullptr,
        lp, v, w, none ? a.loss.f() : nullptr, n, c, d, a.ignore_index,
        a.has_ignore_index != 0);
    LAUNCHED(op);
  }
  if (!none) {
    sceReduceK<<<1, kThreads, 0, st>>>(v, w, m, a.loss.f(),
                                       a.reduction == COMET_RT_REDUCTION_MEAN);
    LAUNCHED(op);
  }
  return ok();
}

int32_t run(comet_rt_context *ctx,
            const softmax_cross_entropy_loss_grad_args &a) {
  const char *op = "softmax_cross_entropy_loss_grad";
  const Tensor &lp = a.log_prob;
  int64_t n = lp.dim(0), c = lp.dim(1), d = product(lp.dims, 2, lp.dims.size()),
          m = n * d;
  cudaStream_t st = streamOf(ctx);
  Workspace sumW(ctx, sizeof(float));
  if (!sumW.ok())
    return oom(op);
  const float *wp = a.weights.present ? a.weights.f() : nullptr;
  sceWeightSumK<<<1, kThreads, 0, st>>>(a.labels.i64(), wp, m, a.ignore_index,
                                        a.has_ignore_index != 0, sumW.f());
  LAUNCHED(op);
  if (m > 0) {
    sceGradK<<<gridFor(m), kThreads, 0, st>>>(
        a.dy.f(), lp.f(), a.labels.i64(), wp, sumW.f(), a.dx.f(), n, c, d,
        a.ignore_index, a.has_ignore_index != 0, static_cast<int>(a.reduction));
    LAUNCHED(op);
  }
  return ok();
}

} // namespace comet::rt::cuda
