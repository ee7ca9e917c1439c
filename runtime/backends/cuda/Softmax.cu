//===- Softmax.cu - Softmax, LogSoftmax and SoftmaxGrad_13 ----------------===//
//
// One thread per (outer, inner) row along the axis; sums in double.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

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
      sum += ::exp(double(px[j * inner] - mx));
    if (logMode) {
      float ls = float(::log(sum));
      for (int64_t j = 0; j < len; ++j)
        py[j * inner] = px[j * inner] - mx - ls;
    } else {
      for (int64_t j = 0; j < len; ++j)
        py[j * inner] = float(::exp(double(px[j * inner] - mx)) / sum);
    }
  }
}

/// dX = Y * (dY - sum(dY * Y)) along the axis.
__global__ void softmaxGradK(const float *dy, const float *y, float *dx,
                             int64_t outer, int64_t len, int64_t inner) {
  GRID_STRIDE(r, outer * inner) {
    int64_t base = (r / inner) * len * inner + r % inner;
    double dot = 0;
    for (int64_t j = 0; j < len; ++j)
      dot += double(dy[base + j * inner]) * y[base + j * inner];
    float d = float(dot);
    for (int64_t j = 0; j < len; ++j) {
      int64_t at = base + j * inner;
      dx[at] = y[at] * (dy[at] - d);
    }
  }
}

struct Rows {
  int64_t outer, len, inner;
};

Rows rowsOf(const Tensor &t, int64_t axis) {
  axis = normAxis(axis, t.rank());
  return {product(t.dims, 0, axis), t.dim(axis),
          product(t.dims, axis + 1, t.dims.size())};
}

int32_t softmax(comet_rt_context *ctx, const char *op, const Tensor &x,
                const Tensor &y, int64_t axis, bool logMode) {
  Rows r = rowsOf(x, axis);
  if (x.numel() == 0)
    return ok();
  softmaxK<<<gridFor(r.outer * r.inner), kThreads, 0, streamOf(ctx)>>>(
      x.f(), y.f(), r.outer, r.len, r.inner, logMode);
  LAUNCHED(op);
  return ok();
}

} // namespace

int32_t run(comet_rt_context *ctx, const softmax_args &a) {
  return softmax(ctx, "softmax", a.x, a.y, a.axis, false);
}

int32_t run(comet_rt_context *ctx, const log_softmax_args &a) {
  return softmax(ctx, "log_softmax", a.x, a.y, a.axis, true);
}

int32_t run(comet_rt_context *ctx, const softmax_grad_args &a) {
  Rows r = rowsOf(a.y, a.axis);
  if (a.y.numel() == 0)
    return ok();
  softmaxGradK<<<gridFor(r.outer * r.inner), kThreads, 0, streamOf(ctx)>>>(
      a.dy.f(), a.y.f(), a.dx.f(), r.outer, r.len, r.inner);
  LAUNCHED("softmax_grad");
  return ok();
}

} // namespace comet::rt::cuda
