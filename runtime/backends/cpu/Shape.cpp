//===- Shape.cpp - Copies, reshapes, Pad, Transpose, Slice, Concat, Split -===//
//
// Data movement: copies (Identity and the lowering's copies of constants,
// Reshape, Flatten), Shape, constant-mode Pad (which also crops, for the
// gradient of a Pad), Transpose (oneDNN reorder), Slice and SliceGrad by
// ONNX's rules, and Concat / Split one part at a time.
//
//===----------------------------------------------------------------------===//
#include "Dnnl.h"

#include <algorithm>
#include <cstring>

using dnnl::memory;

namespace comet::rt::cpu {

namespace {

/// Copies X's bytes into Y (one element count); they may be one buffer.
int32_t copy(const Tensor &x, const Tensor &y) {
  if (x.data != y.data)
    std::memmove(y.data, x.data, static_cast<size_t>(x.bytes()));
  return ok();
}

/// Calls f(sliceIndex, fullIndex) for every element of the slice.
template <typename F>
void forEachSliced(const std::vector<int64_t> &dims, const SliceSpec &s, F f) {
  int64_t r = dims.size(), n = product(s.count, 0, r);
  std::vector<int64_t> strides = plainStrides(dims);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, off = 0;
    for (int64_t d = r - 1; d >= 0; --d) {
      int64_t q = rest / s.count[d];
      off += (s.start[d] + (rest - q * s.count[d]) * s.step[d]) * strides[d];
      rest = q;
    }
    f(i, off);
  }
}

/// Copies X into Y's [offset, offset + len) along axis (toY), or that
/// range of X into Y (!toY); len is the axis length of the smaller one.
template <typename T>
int32_t part(const Tensor &x, const Tensor &y, int64_t axis, int64_t offset,
             bool toY) {
  int64_t a = normAxis(axis, x.rank());
  const Tensor &whole = toY ? y : x, &piece = toY ? x : y;
  int64_t len = piece.dim(a), total = whole.dim(a);
  int64_t outer = product(x.dims, 0, a),
          inner = product(x.dims, a + 1, x.dims.size());
  const T *src = x.as<T>();
  T *dst = y.as<T>();
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    int64_t w = (o * total + offset) * inner, p = o * len * inner;
    if (toY)
      std::memcpy(dst + w, src + p, sizeof(T) * len * inner);
    else
      std::memcpy(dst + p, src + w, sizeof(T) * len * inner);
  }
  return ok();
}

} // namespace

int32_t run(comet_rt_context *, const identity_args &a) {
  return copy(a.x, a.y);
}
int32_t run(comet_rt_context *, const identity_i64_args &a) {
  return copy(a.x, a.y);
}
int32_t run(comet_rt_context *, const identity_i1_args &a) {
  return copy(a.x, a.y);
}
int32_t run(comet_rt_context *, const reshape_args &a) {
  return copy(a.x, a.y);
}
int32_t run(comet_rt_context *, const flatten_args &a) {
  return copy(a.x, a.y);
}

int32_t run(comet_rt_context *, const shape_args &a) {
  int64_t r = a.x.rank();
  auto clampDim = [r](int64_t v) {
    return std::clamp<int64_t>(normAxis(v, r), 0, r);
  };
  int64_t start = clampDim(a.start);
  for (int64_t i = 0; i < a.y.numel(); ++i)
    a.y.i64()[i] = a.x.dim(start + i);
  return ok();
}

int32_t run(comet_rt_context *, const pad_args &a) {
  const Tensor &x = a.x, &y = a.y;
  int64_t r = x.rank();
  const int64_t *p = a.pads.hostAs<int64_t>();
  float fill = a.value.present ? a.value.hostAs<float>()[0] : 0.0f;
  int64_t cols = y.dim(r - 1), rows = cols ? y.numel() / cols : 0;
  int64_t xCols = x.dim(r - 1), begin = p[r - 1];
  // The columns of a Y row that come from X: [lo, hi).
  int64_t lo = std::clamp<int64_t>(begin, 0, cols),
          hi = std::clamp<int64_t>(begin + xCols, lo, cols);
  const float *px = x.f();
  float *py = y.f();
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    float *out = py + row * cols;
    // The X row of this Y row, or -1 when it lies in the padding.
    int64_t xRow = 0, rest = row;
    bool inside = true;
    for (int64_t i = r - 2, stride = 1; i >= 0; --i) {
      int64_t yi = rest % y.dim(i), xi = yi - p[i];
      rest /= y.dim(i);
      if (xi < 0 || xi >= x.dim(i)) {
        inside = false;
        break;
      }
      xRow += xi * stride;
      stride *= x.dim(i);
    }
    if (!inside || lo == hi) {
      std::fill(out, out + cols, fill);
      continue;
    }
    std::fill(out, out + lo, fill);
    std::memcpy(out + lo, px + xRow * xCols + (lo - begin),
                sizeof(float) * (hi - lo));
    std::fill(out + hi, out + cols, fill);
  }
  return ok();
}

int32_t run(comet_rt_context *ctx, const transpose_args &a) {
  const char *op = "transpose";
  const Tensor &x = a.x, &y = a.y;
  int64_t r = x.rank();
  std::vector<int64_t> p(a.perm.hostAs<int64_t>(),
                         a.perm.hostAs<int64_t>() + r);
  if (y.numel() == 0)
    return ok();
  if (r == 0) {
    y.f()[0] = x.f()[0];
    return ok();
  }
  // Reading X through permuted strides in Y's index space is the transpose.
  std::vector<int64_t> xs = plainStrides(x.dims), srcStrides(r);
  for (int64_t i = 0; i < r; ++i)
    srcStrides[i] = xs[p[i]];
  return guard(op, [&] {
    memory::desc srcMd(memory::dims(y.dims.begin(), y.dims.end()),
                       memory::data_type::f32,
                       memory::dims(srcStrides.begin(), srcStrides.end()));
    memory::desc dstMd = plainMd(y.dims);
    std::vector<int64_t> k = y.dims;
    k.insert(k.end(), p.begin(), p.end());
    Primitive prim = getPrimitive(key(op, {r}, k), [&] {
      dnnl::reorder::primitive_desc pd(engine(), srcMd, engine(), dstMd,
                                       userScratchpadAttr());
      return Primitive{dnnl::reorder(pd), pd.scratchpad_desc()};
    });
    execute(ctx, prim,
            {{DNNL_ARG_FROM, mem(srcMd, x.data)},
             {DNNL_ARG_TO, mem(dstMd, y.data)}});
    return ok();
  });
}

int32_t run(comet_rt_context *, const slice_args &a) {
  SliceSpec s;
  sliceSpec(a.x.dims, a.starts, a.ends, a.axes, a.steps, s);
  const float *px = a.x.f();
  float *py = a.y.f();
  forEachSliced(a.x.dims, s, [&](int64_t i, int64_t off) { py[i] = px[off]; });
  return ok();
}

int32_t run(comet_rt_context *, const slice_grad_args &a) {
  SliceSpec s;
  sliceSpec(a.dx.dims, a.starts, a.ends, a.axes, a.steps, s);
  std::memset(a.dx.data, 0, sizeof(float) * a.dx.numel());
  const float *pdy = a.dy.f();
  float *pdx = a.dx.f();
  forEachSliced(a.dx.dims, s,
                [&](int64_t i, int64_t off) { pdx[off] = pdy[i]; });
  return ok();
}

int32_t run(comet_rt_context *, const concat_part_args &a) {
  return part<float>(a.x, a.y, a.axis, a.offset, true);
}

int32_t run(comet_rt_context *, const concat_part_i64_args &a) {
  return part<int64_t>(a.x, a.y, a.axis, a.offset, true);
}

int32_t run(comet_rt_context *, const split_part_args &a) {
  return part<float>(a.x, a.y, a.axis, a.offset, false);
}

} // namespace comet::rt::cpu
