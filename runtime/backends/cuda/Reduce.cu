//===- Reduce.cu - ReduceSum, ReduceMean, abs mean and density ------------===//
//
// One block per output element; the reduced dims and their strides come
// from the axes the dispatcher staged on the host (PARAM).
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

/// Kept and reduced dims of X with their element strides.
struct Reduce {
  int nk = 0, nr = 0;
  int64_t kd[kMaxRank] = {}, ks[kMaxRank] = {}, rd[kMaxRank] = {},
          rs[kMaxRank] = {};
  int64_t rcount = 1;
};

/// One block per output element: the sum (or mean) of its reduced
/// elements, in double.
__global__ void reduceK(const float *x, float *y, int64_t nOut, Reduce g,
                        int mean) {
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
      y[o] = mean ? float(s / double(g.rcount)) : float(s);
  }
}

int32_t reduce(comet_rt_context *ctx, const char *op, const Tensor &x,
               const Tensor &axes, const Tensor &y, bool noopEmpty, bool mean) {
  if (!axes.present && noopEmpty) {
    COMET_RT_TRY(copyAsync(ctx, op, y.data, x.data, x.bytes()));
    return ok();
  }
  std::vector<bool> reduced;
  reducedAxes(x.rank(), axes, reduced);
  std::vector<int64_t> strides = plainStrides(x.dims);
  Reduce g;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (reduced[i]) {
      g.rd[g.nr] = x.dim(i);
      g.rs[g.nr++] = strides[i];
      g.rcount *= x.dim(i);
    } else {
      g.kd[g.nk] = x.dim(i);
      g.ks[g.nk++] = strides[i];
    }
  }
  if (y.numel() == 0)
    return ok();
  reduceK<<<blocksFor(y.numel()), kThreads, 0, streamOf(ctx)>>>(
      x.f(), y.f(), y.numel(), g, mean);
  LAUNCHED(op);
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

} // namespace

int32_t run(comet_rt_context *ctx, const reduce_sum_args &a) {
  return reduce(ctx, "reduce_sum", a.x, a.axes, a.y, a.noop_empty_axes != 0,
                false);
}

int32_t run(comet_rt_context *ctx, const reduce_mean_args &a) {
  // The mean of nothing is NaN (0 / 0), as numpy's and the CPU's.
  return reduce(ctx, "reduce_mean", a.x, a.axes, a.y, false, true);
}

int32_t run(comet_rt_context *ctx, const abs_mean_and_density_args &a) {
  absMeanDensityK<<<1, kThreads, 0, streamOf(ctx)>>>(a.x.f(), a.x.numel(),
                                                     a.out.f());
  LAUNCHED("abs_mean_and_density");
  return ok();
}

} // namespace comet::rt::cuda
