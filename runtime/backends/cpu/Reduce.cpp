//===- Reduce.cpp - ReduceSum, ReduceMean, abs mean and density -----------===//
#include "Dnnl.h"

#include <cmath>
#include <cstring>

using dnnl::memory;

namespace comet::rt::cpu {

namespace {

/// ReduceSum / ReduceMean on oneDNN reduction.
int32_t reduce(comet_rt_context *ctx, const char *op, const Tensor &x,
               const Tensor &axes, const Tensor &y, bool noopEmpty, bool mean) {
  if (!axes.present && noopEmpty) {
    std::memcpy(y.data, x.data, sizeof(float) * x.numel());
    return ok();
  }
  std::vector<bool> reduced;
  reducedAxes(x.rank(), axes, reduced);
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < x.rank(); ++i)
    kept.push_back(reduced[i] ? 1 : x.dim(i));
  if (y.numel() == 0)
    return ok();
  if (x.numel() == 0) {
    // The mean of nothing is NaN, as numpy's.
    std::fill(y.f(), y.f() + y.numel(), mean ? NAN : 0.0f);
    return ok();
  }
  if (kept == x.dims) {
    std::memcpy(y.data, x.data, sizeof(float) * x.numel());
    return ok();
  }
  // oneDNN reduction needs rank >= 1; a rank-0 X has nothing to reduce.
  return guard(op, [&] {
    memory::desc xMd = plainMd(x.dims), yMd = plainMd(kept);
    std::vector<int64_t> k = x.dims;
    k.insert(k.end(), kept.begin(), kept.end());
    Primitive p = getPrimitive(key(op, {x.rank()}, k), [&] {
      dnnl::reduction::desc d(mean ? dnnl::algorithm::reduction_mean
                                   : dnnl::algorithm::reduction_sum,
                              xMd, yMd, 0.f, 0.f);
      dnnl::reduction::primitive_desc pd(d, userScratchpadAttr(), engine());
      return Primitive{dnnl::reduction(pd), pd.scratchpad_desc()};
    });
    execute(
        ctx, p,
        {{DNNL_ARG_SRC, mem(xMd, x.data)}, {DNNL_ARG_DST, mem(yMd, y.data)}});
    return ok();
  });
}

} // namespace

int32_t run(comet_rt_context *ctx, const reduce_sum_args &a) {
  return reduce(ctx, "reduce_sum", a.x, a.axes, a.y, a.noop_empty_axes != 0,
                /*mean=*/false);
}

int32_t run(comet_rt_context *ctx, const reduce_mean_args &a) {
  return reduce(ctx, "reduce_mean", a.x, a.axes, a.y, /*noopEmpty=*/false,
                /*mean=*/true);
}

int32_t run(comet_rt_context *, const abs_mean_and_density_args &a) {
  const float *p = a.x.f();
  int64_t n = a.x.numel();
  double s = 0;
  int64_t nz = 0;
#pragma omp parallel for reduction(+ : s, nz) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    s += std::fabs(p[i]);
    nz += p[i] != 0.0f;
  }
  a.out.f()[0] = n ? (float)(s / n) : 0.0f;
  a.out.f()[1] = n ? (float)((double)nz / n) : 0.0f;
  return ok();
}

} // namespace comet::rt::cpu
