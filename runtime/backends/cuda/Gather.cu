//===- Gather.cu - Gather and GatherGrad ----------------------------------===//
//
// Gather: one thread per output element. GatherGrad: one thread per column
// (outer, inner) of dX, adding dY's rows in index order, as the CPU
// backend does: the same sums in the same order, no atomics.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

template <typename T>
__global__ void gatherK(const T *data, const int64_t *idx, T *y, int64_t n,
                        int64_t k, int64_t len, int64_t inner) {
  GRID_STRIDE(i, n) {
    int64_t c = i % inner, j = (i / inner) % k, o = i / (inner * k);
    int64_t at = idx[j] < 0 ? idx[j] + len : idx[j];
    y[i] = data[(o * len + at) * inner + c];
  }
}

__global__ void gatherGradK(const int64_t *idx, const float *dy, float *dx,
                            int64_t columns, int64_t k, int64_t len,
                            int64_t inner) {
  GRID_STRIDE(col, columns) {
    int64_t c = col % inner, o = col / inner;
    for (int64_t j = 0; j < k; ++j) {
      int64_t at = idx[j] < 0 ? idx[j] + len : idx[j];
      dx[(o * len + at) * inner + c] += dy[(o * k + j) * inner + c];
    }
  }
}

template <typename T>
int32_t gather(comet_rt_context *ctx, const char *op, const Tensor &data,
               const Tensor &indices, const Tensor &y, int64_t axis) {
  int64_t n = y.numel();
  if (n == 0)
    return ok();
  int64_t a = normAxis(axis, data.rank());
  gatherK<T><<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      data.as<T>(), indices.i64(), y.as<T>(), n, indices.numel(), data.dim(a),
      product(data.dims, a + 1, data.dims.size()));
  LAUNCHED(op);
  return ok();
}

} // namespace

int32_t run(comet_rt_context *ctx, const gather_args &a) {
  return gather<float>(ctx, "gather", a.data, a.indices, a.y, a.axis);
}

int32_t run(comet_rt_context *ctx, const gather_i64_args &a) {
  return gather<int64_t>(ctx, "gather_i64", a.data, a.indices, a.y, a.axis);
}

int32_t run(comet_rt_context *ctx, const gather_grad_args &a) {
  const char *op = "gather_grad";
  COMET_RT_TRY(zeroAsync(ctx, op, a.dx.data, a.dx.bytes()));
  int64_t ax = normAxis(a.axis, a.dx.rank());
  int64_t inner = product(a.dx.dims, ax + 1, a.dx.dims.size()),
          columns = product(a.dx.dims, 0, ax) * inner;
  if (columns == 0 || a.indices.numel() == 0)
    return ok();
  gatherGradK<<<gridFor(columns), kThreads, 0, streamOf(ctx)>>>(
      a.indices.i64(), a.dy.f(), a.dx.f(), columns, a.indices.numel(),
      a.dx.dim(ax), inner);
  LAUNCHED(op);
  return ok();
}

} // namespace comet::rt::cuda
