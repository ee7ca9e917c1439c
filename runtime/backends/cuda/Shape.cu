//===- Shape.cu - Copies, Shape, Pad, Transpose, Slice, Concat, Split -----===//
//
// Copies run on the stream (cudaMemcpyAsync: a constant of the compiled
// code may be host memory). Pad, Transpose and Slice read their PARAM
// operands (pads, perm, starts...) on the host, as the dispatcher staged
// them, and pass the geometry to one kernel by value. Concat and Split
// parts are 2-D copies.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

/// A small array of int64_t passed to a kernel by value.
struct Dims {
  int rank = 0;
  int64_t v[kMaxRank] = {};
};

Dims dimsOf(const std::vector<int64_t> &d) {
  Dims r;
  r.rank = static_cast<int>(d.size());
  std::copy(d.begin(), d.end(), r.v);
  return r;
}

int32_t copy(comet_rt_context *ctx, const char *op, const Tensor &x,
             const Tensor &y) {
  COMET_RT_TRY(
      copyAsync(ctx, op, y.data, x.data, static_cast<size_t>(x.bytes())));
  return ok();
}

__global__ void writeDimsK(int64_t *y, Dims d, int64_t start, int64_t n) {
  if (threadIdx.x < n)
    y[threadIdx.x] = d.v[start + threadIdx.x];
}

/// Y element i: X's at the index shifted by the leading pads, or `fill`.
__global__ void padK(const float *x, float *y, int64_t n, Dims xd, Dims yd,
                     Dims before, float fill) {
  GRID_STRIDE(i, n) {
    int64_t rest = i, off = 0, stride = 1;
    bool inside = true;
    for (int k = yd.rank - 1; k >= 0; --k) {
      int64_t yi = rest % yd.v[k], xi = yi - before.v[k];
      rest /= yd.v[k];
      inside = inside && xi >= 0 && xi < xd.v[k];
      off += xi * stride;
      stride *= xd.v[k];
    }
    y[i] = inside ? x[off] : fill;
  }
}

/// Y element i reads X at sum(index[k] * strides[k]) with strides in Y's
/// index space (Transpose: X's strides permuted; Slice: steps folded in,
/// offset the start).
__global__ void gatherStridedK(const float *x, float *y, int64_t n, Dims yd,
                               Dims strides, int64_t base) {
  GRID_STRIDE(i, n) {
    int64_t rest = i, off = base;
    for (int k = yd.rank - 1; k >= 0; --k) {
      off += (rest % yd.v[k]) * strides.v[k];
      rest /= yd.v[k];
    }
    y[i] = x[off];
  }
}

/// The inverse: dX at the strided offset of dY element i (distinct
/// offsets: no races).
__global__ void scatterStridedK(const float *dy, float *dx, int64_t n, Dims yd,
                                Dims strides, int64_t base) {
  GRID_STRIDE(i, n) {
    int64_t rest = i, off = base;
    for (int k = yd.rank - 1; k >= 0; --k) {
      off += (rest % yd.v[k]) * strides.v[k];
      rest /= yd.v[k];
    }
    dx[off] = dy[i];
  }
}

/// A Slice as a strided gather: per-dim strides step * stride and the
/// start's offset.
void sliceGeometry(const std::vector<int64_t> &dims, const SliceSpec &s,
                   Dims &strides, int64_t &base) {
  std::vector<int64_t> st = plainStrides(dims), folded(dims.size());
  base = 0;
  for (size_t k = 0; k < dims.size(); ++k) {
    folded[k] = st[k] * s.step[k];
    base += s.start[k] * st[k];
  }
  strides = dimsOf(folded);
}

/// X into Y's [offset, offset + len) along axis (toY), or back.
int32_t part(comet_rt_context *ctx, const char *op, const Tensor &x,
             const Tensor &y, int64_t axis, int64_t offset, bool toY) {
  int64_t a = normAxis(axis, x.rank());
  const Tensor &whole = toY ? y : x, &piece = toY ? x : y;
  size_t elem = static_cast<size_t>(x.elemBytes);
  int64_t len = piece.dim(a), total = whole.dim(a);
  int64_t outer = product(x.dims, 0, a),
          inner = product(x.dims, a + 1, x.dims.size());
  size_t width = elem * len * inner, wholePitch = elem * total * inner;
  if (width == 0 || outer == 0)
    return ok();
  char *wholeAt = static_cast<char *>(whole.data) + elem * offset * inner;
  if (toY)
    CU_TRY(op, cudaMemcpy2DAsync(wholeAt, wholePitch, x.data, width, width,
                                 outer, cudaMemcpyDefault, streamOf(ctx)));
  else
    CU_TRY(op, cudaMemcpy2DAsync(y.data, width, wholeAt, wholePitch, width,
                                 outer, cudaMemcpyDefault, streamOf(ctx)));
  return ok();
}

} // namespace

int32_t run(comet_rt_context *ctx, const identity_args &a) {
  return copy(ctx, "identity", a.x, a.y);
}
int32_t run(comet_rt_context *ctx, const identity_i64_args &a) {
  return copy(ctx, "identity_i64", a.x, a.y);
}
int32_t run(comet_rt_context *ctx, const identity_i1_args &a) {
  return copy(ctx, "identity_i1", a.x, a.y);
}
int32_t run(comet_rt_context *ctx, const reshape_args &a) {
  return copy(ctx, "reshape", a.x, a.y);
}
int32_t run(comet_rt_context *ctx, const flatten_args &a) {
  return copy(ctx, "flatten", a.x, a.y);
}

int32_t run(comet_rt_context *ctx, const shape_args &a) {
  int64_t r = a.x.rank(), n = a.y.numel();
  if (n == 0)
    return ok();
  int64_t start = std::clamp<int64_t>(normAxis(a.start, r), 0, r);
  writeDimsK<<<1, kMaxRank, 0, streamOf(ctx)>>>(a.y.i64(), dimsOf(a.x.dims),
                                                start, n);
  LAUNCHED("shape");
  return ok();
}

int32_t run(comet_rt_context *ctx, const pad_args &a) {
  int64_t n = a.y.numel(), r = a.x.rank();
  if (n == 0)
    return ok();
  const int64_t *p = a.pads.hostAs<int64_t>();
  float fill = a.value.present ? a.value.hostAs<float>()[0] : 0.0f;
  padK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.x.f(), a.y.f(), n, dimsOf(a.x.dims), dimsOf(a.y.dims),
      dimsOf(std::vector<int64_t>(p, p + r)), fill);
  LAUNCHED("pad");
  return ok();
}

int32_t run(comet_rt_context *ctx, const transpose_args &a) {
  int64_t n = a.y.numel(), r = a.x.rank();
  if (n == 0)
    return ok();
  const int64_t *p = a.perm.hostAs<int64_t>();
  std::vector<int64_t> xs = plainStrides(a.x.dims), strides(r);
  for (int64_t i = 0; i < r; ++i)
    strides[i] = xs[p[i]];
  gatherStridedK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.x.f(), a.y.f(), n, dimsOf(a.y.dims), dimsOf(strides), 0);
  LAUNCHED("transpose");
  return ok();
}

int32_t run(comet_rt_context *ctx, const slice_args &a) {
  int64_t n = a.y.numel();
  if (n == 0)
    return ok();
  SliceSpec s;
  sliceSpec(a.x.dims, a.starts, a.ends, a.axes, a.steps, s);
  Dims strides;
  int64_t base;
  sliceGeometry(a.x.dims, s, strides, base);
  gatherStridedK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.x.f(), a.y.f(), n, dimsOf(s.count), strides, base);
  LAUNCHED("slice");
  return ok();
}

int32_t run(comet_rt_context *ctx, const slice_grad_args &a) {
  const char *op = "slice_grad";
  COMET_RT_TRY(zeroAsync(ctx, op, a.dx.data, a.dx.bytes()));
  int64_t n = a.dy.numel();
  if (n == 0)
    return ok();
  SliceSpec s;
  sliceSpec(a.dx.dims, a.starts, a.ends, a.axes, a.steps, s);
  Dims strides;
  int64_t base;
  sliceGeometry(a.dx.dims, s, strides, base);
  scatterStridedK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.dy.f(), a.dx.f(), n, dimsOf(s.count), strides, base);
  LAUNCHED(op);
  return ok();
}

int32_t run(comet_rt_context *ctx, const concat_part_args &a) {
  return part(ctx, "concat_part", a.x, a.y, a.axis, a.offset, true);
}
int32_t run(comet_rt_context *ctx, const concat_part_i64_args &a) {
  return part(ctx, "concat_part_i64", a.x, a.y, a.axis, a.offset, true);
}
int32_t run(comet_rt_context *ctx, const split_part_args &a) {
  return part(ctx, "split_part", a.x, a.y, a.axis, a.offset, false);
}

} // namespace comet::rt::cuda
