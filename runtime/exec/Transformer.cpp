//===- Transformer.cpp - Kernels of transformer training graphs -----------===//
//
// Transpose (oneDNN reorder), FusedMatMul (oneDNN matmul with strided
// transposes), layer normalization forward and backward, softmax backward,
// BiasGelu and its gradient (oneDNN binary, eltwise gelu_erf), and the glue
// loops of Slice and SliceGrad, all as ONNX Runtime's CPU kernels define
// them.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Dnnl.h"
#include "comet/runtime/exec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace comet::rt;
using dnnl::memory;
static constexpr auto f32 = dnnl::memory::data_type::f32;

namespace {

/// Rows (dims before axis) and row length (dims from axis) of x.
int32_t rowsOf(const char *op, const Tensor &x, int64_t &axis, int64_t &rows,
               int64_t &cols) {
  if (axis < 0)
    axis += x.rank();
  COMET_RT_CHECK(axis >= 0 && axis < x.rank(), op, ": axis out of range for ",
                 shapeStr(x.dims));
  rows = product(x.dims, 0, axis);
  cols = product(x.dims, axis, x.dims.size());
  return ok();
}

/// The per-dim start, step and count of a Slice over dims `dims`, by ONNX's
/// rules (negative values count from the back; starts and ends clamp).
struct SliceSpec {
  std::vector<int64_t> start, step, count;
};

int32_t sliceSpec(const char *op, const std::vector<int64_t> &dims,
                  const Tensor &starts, const Tensor &ends, const Tensor &axes,
                  const Tensor &steps, SliceSpec &s) {
  int64_t r = dims.size(), n = starts.numel();
  COMET_RT_CHECK(starts.rank() == 1 && ends.rank() == 1 && ends.numel() == n,
                 op, ": starts and ends must be 1-D of one length");
  COMET_RT_CHECK(!axes.present || axes.numel() == n, op,
                 ": axes must have starts' length");
  COMET_RT_CHECK(!steps.present || steps.numel() == n, op,
                 ": steps must have starts' length");
  s.start.assign(r, 0);
  s.step.assign(r, 1);
  s.count = dims;
  std::vector<bool> seen(r, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t a = axes.present ? axes.i64()[i] : i;
    if (a < 0)
      a += r;
    COMET_RT_CHECK(a >= 0 && a < r && !seen[a], op, ": bad or repeated axis ",
                   axes.present ? axes.i64()[i] : i);
    seen[a] = true;
    int64_t d = dims[a], st = steps.present ? steps.i64()[i] : 1;
    COMET_RT_CHECK(st != 0, op, ": step 0");
    int64_t b = starts.i64()[i], e = ends.i64()[i];
    if (b < 0)
      b += d;
    if (e < 0)
      e += d;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      s.count[a] = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      s.count[a] = b > e ? (b - e - st - 1) / -st : 0;
    }
    s.start[a] = b;
    s.step[a] = st;
  }
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

} // namespace

extern "C" {

int32_t comet_rt_cpu_transpose(comet_rt_context *ctx,
                                        comet_rt_memref *xm,
                                        comet_rt_memref *ym,
                                        comet_rt_memref *pm) {
  const char *op = "transpose";
  Tensor x, y, perm;
  COMET_RT_TRY(view(xm, 4, "transpose X", x));
  COMET_RT_TRY(view(ym, 4, "transpose Y", y));
  COMET_RT_TRY(view(pm, 8, "transpose perm", perm));
  int64_t r = x.rank();
  COMET_RT_CHECK(perm.numel() == r && y.rank() == r, op, ": perm ",
                 perm.numel(), " entries for ranks ", r, " and ", y.rank());
  std::vector<bool> used(r, false);
  std::vector<int64_t> p(r), want(r);
  for (int64_t i = 0; i < r; ++i) {
    p[i] = perm.i64()[i];
    COMET_RT_CHECK(p[i] >= 0 && p[i] < r && !used[p[i]], op,
                   ": perm is not a permutation");
    used[p[i]] = true;
    want[i] = x.dim(p[i]);
  }
  COMET_RT_CHECK(want == y.dims, op, ": Y ", shapeStr(y.dims), ", expected ",
                 shapeStr(want));
  if (y.numel() == 0)
    return ok();
  if (r == 0) {
    y.f()[0] = x.f()[0];
    return ok();
  }
  COMET_RT_CHECK(r <= DNNL_MAX_NDIMS, op, ": rank above ", DNNL_MAX_NDIMS);
  // Reading X through permuted strides in Y's index space is the transpose.
  std::vector<int64_t> xs = plainStrides(x.dims), srcStrides(r);
  for (int64_t i = 0; i < r; ++i)
    srcStrides[i] = xs[p[i]];
  return guard(op, [&] {
    memory::desc srcMd(memory::dims(y.dims.begin(), y.dims.end()), f32,
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

int32_t comet_rt_cpu_fused_matmul(comet_rt_context *ctx, comet_rt_memref *am,
                                  comet_rt_memref *bm, comet_rt_memref *ym,
                                  float alpha, int64_t transA, int64_t transB) {
  const char *op = "fused_matmul";
  Tensor a, b, y;
  COMET_RT_TRY(view(am, 4, "fused_matmul A", a));
  COMET_RT_TRY(view(bm, 4, "fused_matmul B", b));
  COMET_RT_TRY(view(ym, 4, "fused_matmul Y", y));
  COMET_RT_CHECK(a.rank() >= 2 && b.rank() >= 2, op,
                 ": A and B must have rank >= 2");
  size_t r = std::max(a.rank(), b.rank());
  // Stored dims padded to rank r, and the strides that read op(A), op(B).
  auto logical = [&](const Tensor &t, bool trans, std::vector<int64_t> &dims,
                     std::vector<int64_t> &strides) {
    dims = t.dims;
    dims.insert(dims.begin(), r - dims.size(), 1);
    strides = plainStrides(dims);
    if (trans) {
      std::swap(dims[r - 1], dims[r - 2]);
      std::swap(strides[r - 1], strides[r - 2]);
    }
  };
  std::vector<int64_t> ad, as, bd, bs;
  logical(a, transA != 0, ad, as);
  logical(b, transB != 0, bd, bs);
  return matmulImpl(ctx, op, a, b, y, ad, as, bd, bs, alpha,
                    /*keepsLastTwo=*/true,
                    concat(" transA=", transA, " transB=", transB));
}

int32_t comet_rt_cpu_layer_norm(
    comet_rt_context *ctx, comet_rt_memref *xm, comet_rt_memref *scm,
    comet_rt_memref *bm, comet_rt_memref *ym, comet_rt_memref *mm,
    comet_rt_memref *im, int64_t axis, float epsilon) {
  const char *op = "layer_norm";
  Tensor x, sc, b, y, mean, inv;
  COMET_RT_TRY(view(xm, 4, "layer_norm X", x));
  COMET_RT_TRY(view(scm, 4, "layer_norm scale", sc));
  COMET_RT_TRY(view(bm, 4, "layer_norm B", b, true));
  COMET_RT_TRY(view(ym, 4, "layer_norm Y", y));
  COMET_RT_TRY(view(mm, 4, "layer_norm mean", mean, true));
  COMET_RT_TRY(view(im, 4, "layer_norm inv_std_var", inv, true));
  int64_t rows, cols;
  COMET_RT_TRY(rowsOf(op, x, axis, rows, cols));
  COMET_RT_CHECK(y.dims == x.dims, op, ": X and Y shapes differ");
  COMET_RT_CHECK(sc.numel() == cols && (!b.present || b.numel() == cols), op,
                 ": scale and B must have ", cols, " elements");
  COMET_RT_CHECK((!mean.present || mean.numel() == rows) &&
                     (!inv.present || inv.numel() == rows),
                 op, ": mean and inv_std_var must have ", rows, " elements");
  if (x.numel() == 0)
    return ok();
  return guard(op, [&] {
    // Absent statistics go to a temporary: oneDNN training mode writes them.
    Workspace tmp(ctx, sizeof(float) * 2 * rows);
    float *meanP = mean.present ? mean.f() : tmp.f();
    float *var = tmp.f() + rows;
    memory::desc dMd({rows, cols}, f32, memory::format_tag::ab);
    memory::desc sMd({rows}, f32, memory::format_tag::a);
    memory::desc wMd({cols}, f32, memory::format_tag::a);
    bool shift = b.present;
    // epsilon is fixed in a oneDNN 2.6 descriptor, so it is in the key.
    uint32_t epsBits;
    std::memcpy(&epsBits, &epsilon, 4);
    Primitive p =
        getPrimitive(key(op, {rows, cols, shift, (int64_t)epsBits}), [&] {
          auto flags = dnnl::normalization_flags::use_scale;
          if (shift)
            flags |= dnnl::normalization_flags::use_shift;
          dnnl::layer_normalization_forward::desc d(
              dnnl::prop_kind::forward_training, dMd, sMd, epsilon, flags);
          dnnl::layer_normalization_forward::primitive_desc pd(
              d, userScratchpadAttr(), engine());
          return Primitive{dnnl::layer_normalization_forward(pd),
                           pd.scratchpad_desc()};
        });
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, mem(dMd, x.data)},
        {DNNL_ARG_DST, mem(dMd, y.data)},
        {DNNL_ARG_MEAN, mem(sMd, meanP)},
        {DNNL_ARG_VARIANCE, mem(sMd, var)},
        {DNNL_ARG_SCALE, mem(wMd, sc.data)}};
    if (shift)
      args[DNNL_ARG_SHIFT] = mem(wMd, b.data);
    execute(ctx, p, args);
    if (inv.present)
      for (int64_t i = 0; i < rows; ++i)
        inv.f()[i] = 1.0f / std::sqrt(var[i] + epsilon);
    return ok();
  });
}

int32_t comet_rt_cpu_layer_norm_grad(
    comet_rt_context *ctx, comet_rt_memref *dym, comet_rt_memref *xm,
    comet_rt_memref *scm, comet_rt_memref *mm, comet_rt_memref *im,
    comet_rt_memref *dxm, comet_rt_memref *dscm, comet_rt_memref *dbm,
    int64_t axis, float epsilon) {
  const char *op = "layer_norm_grad";
  Tensor dy, x, sc, mean, inv, dx, dsc, db;
  COMET_RT_TRY(view(dym, 4, "layer_norm_grad dY", dy));
  COMET_RT_TRY(view(xm, 4, "layer_norm_grad X", x));
  COMET_RT_TRY(view(scm, 4, "layer_norm_grad scale", sc));
  COMET_RT_TRY(view(mm, 4, "layer_norm_grad mean", mean));
  COMET_RT_TRY(view(im, 4, "layer_norm_grad inv_std_var", inv));
  COMET_RT_TRY(view(dxm, 4, "layer_norm_grad dX", dx));
  COMET_RT_TRY(view(dscm, 4, "layer_norm_grad dscale", dsc, true));
  COMET_RT_TRY(view(dbm, 4, "layer_norm_grad dB", db, true));
  int64_t rows, cols;
  COMET_RT_TRY(rowsOf(op, x, axis, rows, cols));
  COMET_RT_CHECK(dy.dims == x.dims && dx.dims == x.dims, op,
                 ": dY, X and dX shapes differ");
  COMET_RT_CHECK(sc.numel() == cols && (!dsc.present || dsc.numel() == cols) &&
                     (!db.present || db.numel() == cols),
                 op, ": scale, dscale and dB must have ", cols, " elements");
  COMET_RT_CHECK(mean.numel() == rows && inv.numel() == rows, op,
                 ": mean and inv_std_var must have ", rows, " elements");
  if (x.numel() == 0) {
    for (const Tensor *t : {&dsc, &db})
      if (t->present)
        std::fill(t->f(), t->f() + cols, 0.0f);
    return ok();
  }
  return guard(op, [&] {
    // oneDNN takes the variance: var = 1 / inv^2 - epsilon, which it turns
    // back into the same 1 / sqrt(var + epsilon) up to rounding.
    // oneDNN's backward with use_shift also reads a shift, which dX does not
    // depend on: zeros.
    Workspace tmp(ctx, sizeof(float) * (rows + 3 * cols));
    float *var = tmp.f(), *dscP = var + rows, *dbP = dscP + cols,
          *shift = dbP + cols;
    std::fill(shift, shift + cols, 0.0f);
    for (int64_t i = 0; i < rows; ++i)
      var[i] = 1.0f / (inv.f()[i] * inv.f()[i]) - epsilon;
    memory::desc dMd({rows, cols}, f32, memory::format_tag::ab);
    memory::desc sMd({rows}, f32, memory::format_tag::a);
    memory::desc wMd({cols}, f32, memory::format_tag::a);
    uint32_t epsBits;
    std::memcpy(&epsBits, &epsilon, 4);
    Primitive p = getPrimitive(key(op, {rows, cols, (int64_t)epsBits}), [&] {
      auto flags = dnnl::normalization_flags::use_scale |
                   dnnl::normalization_flags::use_shift;
      dnnl::layer_normalization_forward::desc fd(
          dnnl::prop_kind::forward_training, dMd, sMd, epsilon, flags);
      dnnl::layer_normalization_forward::primitive_desc fpd(fd, engine());
      dnnl::layer_normalization_backward::desc d(dnnl::prop_kind::backward, dMd,
                                                 dMd, sMd, epsilon, flags);
      dnnl::layer_normalization_backward::primitive_desc pd(
          d, userScratchpadAttr(), engine(), fpd);
      return Primitive{dnnl::layer_normalization_backward(pd),
                       pd.scratchpad_desc()};
    });
    execute(ctx, p,
            {{DNNL_ARG_SRC, mem(dMd, x.data)},
             {DNNL_ARG_MEAN, mem(sMd, mean.data)},
             {DNNL_ARG_VARIANCE, mem(sMd, var)},
             {DNNL_ARG_DIFF_DST, mem(dMd, dy.data)},
             {DNNL_ARG_SCALE, mem(wMd, sc.data)},
             {DNNL_ARG_SHIFT, mem(wMd, shift)},
             {DNNL_ARG_DIFF_SRC, mem(dMd, dx.data)},
             {DNNL_ARG_DIFF_SCALE, mem(wMd, dscP)},
             {DNNL_ARG_DIFF_SHIFT, mem(wMd, dbP)}});
    if (dsc.present)
      std::memcpy(dsc.data, dscP, sizeof(float) * cols);
    if (db.present)
      std::memcpy(db.data, dbP, sizeof(float) * cols);
    return ok();
  });
}

int32_t comet_rt_cpu_softmax_grad(comet_rt_context *ctx,
                                           comet_rt_memref *dym,
                                           comet_rt_memref *ym,
                                           comet_rt_memref *dxm, int64_t axis) {
  const char *op = "softmax_grad";
  Tensor dy, y, dx;
  COMET_RT_TRY(view(dym, 4, "softmax_grad dY", dy));
  COMET_RT_TRY(view(ym, 4, "softmax_grad Y", y));
  COMET_RT_TRY(view(dxm, 4, "softmax_grad dX", dx));
  COMET_RT_CHECK(dy.dims == y.dims && dx.dims == y.dims && y.rank() >= 1, op,
                 ": dY, Y and dX must share a shape of rank >= 1");
  if (axis < 0)
    axis += y.rank();
  COMET_RT_CHECK(axis >= 0 && axis < y.rank(), op, ": bad axis");
  int64_t outer = product(y.dims, 0, axis), mid = y.dim(axis),
          inner = product(y.dims, axis + 1, y.dims.size());
  if (y.numel() == 0)
    return ok();
  return guard(op, [&] {
    memory::desc md({outer, mid, inner}, f32, memory::format_tag::abc);
    Primitive p = getPrimitive(key(op, {outer, mid, inner}), [&] {
      using sf = dnnl::softmax_v2_forward;
      using sb = dnnl::softmax_v2_backward;
      sf::desc fd(dnnl::prop_kind::forward_training,
                  dnnl::algorithm::softmax_accurate, md, md, 1);
      sf::primitive_desc fpd(fd, engine());
      sb::desc d(dnnl::algorithm::softmax_accurate, md, md, md, 1);
      sb::primitive_desc pd(d, userScratchpadAttr(), engine(), fpd);
      return Primitive{sb(pd), pd.scratchpad_desc()};
    });
    execute(ctx, p,
            {{DNNL_ARG_DST, mem(md, y.data)},
             {DNNL_ARG_DIFF_DST, mem(md, dy.data)},
             {DNNL_ARG_DIFF_SRC, mem(md, dx.data)}});
    return ok();
  });
}

int32_t comet_rt_cpu_bias_gelu(comet_rt_context *ctx,
                                        comet_rt_memref *xm,
                                        comet_rt_memref *bm,
                                        comet_rt_memref *ym) {
  const char *op = "bias_gelu";
  Tensor x, b, y;
  COMET_RT_TRY(view(xm, 4, "bias_gelu X", x));
  COMET_RT_TRY(view(bm, 4, "bias_gelu B", b));
  COMET_RT_TRY(view(ym, 4, "bias_gelu Y", y));
  COMET_RT_CHECK(x.rank() >= 1 && y.dims == x.dims, op,
                 ": X and Y must share a shape of rank >= 1");
  int64_t cols = x.dim(x.rank() - 1),
          rows = x.numel() / std::max<int64_t>(cols, 1);
  COMET_RT_CHECK(b.rank() == 1 && b.numel() == cols, op, ": B must be [", cols,
                 "], got ", shapeStr(b.dims));
  if (x.numel() == 0)
    return ok();
  return guard(op, [&] {
    memory::desc dMd({rows, cols}, f32, memory::format_tag::ab);
    memory::desc bMd({1, cols}, f32, memory::format_tag::ab);
    Primitive p = getPrimitive(key(op, {rows, cols}), [&] {
      dnnl::post_ops po;
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
      dnnl::primitive_attr attr = userScratchpadAttr();
      attr.set_post_ops(po);
      dnnl::binary::desc d(dnnl::algorithm::binary_add, dMd, bMd, dMd);
      dnnl::binary::primitive_desc pd(d, attr, engine());
      return Primitive{dnnl::binary(pd), pd.scratchpad_desc()};
    });
    execute(ctx, p,
            {{DNNL_ARG_SRC_0, mem(dMd, x.data)},
             {DNNL_ARG_SRC_1, mem(bMd, b.data)},
             {DNNL_ARG_DST, mem(dMd, y.data)}});
    return ok();
  });
}

int32_t comet_rt_cpu_bias_gelu_grad_dx(comet_rt_context *ctx,
                                                comet_rt_memref *dym,
                                                comet_rt_memref *xm,
                                                comet_rt_memref *bm,
                                                comet_rt_memref *dxm) {
  const char *op = "bias_gelu_grad_dx";
  Tensor dy, x, b, dx;
  COMET_RT_TRY(view(dym, 4, "bias_gelu_grad_dx dY", dy));
  COMET_RT_TRY(view(xm, 4, "bias_gelu_grad_dx X", x));
  COMET_RT_TRY(view(bm, 4, "bias_gelu_grad_dx B", b));
  COMET_RT_TRY(view(dxm, 4, "bias_gelu_grad_dx dX", dx));
  COMET_RT_CHECK(x.rank() >= 1 && dy.dims == x.dims && dx.dims == x.dims, op,
                 ": dY, X and dX must share a shape of rank >= 1");
  int64_t cols = x.dim(x.rank() - 1), n = x.numel();
  COMET_RT_CHECK(b.rank() == 1 && b.numel() == cols, op, ": B must be [", cols,
                 "], got ", shapeStr(b.dims));
  if (n == 0)
    return ok();
  return guard(op, [&] {
    Workspace tmp(ctx, sizeof(float) * n);
    float *s = tmp.f();
    const float *px = x.f(), *pb = b.f();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      s[i] = px[i] + pb[i % cols];
    return eltwiseBackwardImpl(ctx, op, dnnl::algorithm::eltwise_gelu_erf,
                               /*fromDst=*/false, s, dy, dx, n);
  });
}

int32_t comet_rt_cpu_gelu(comet_rt_context *ctx, comet_rt_memref *xm,
                          comet_rt_memref *ym) {
  return eltwiseForward(ctx, "gelu", dnnl::algorithm::eltwise_gelu_erf, xm, ym);
}

int32_t comet_rt_cpu_gelu_grad(comet_rt_context *ctx, comet_rt_memref *dym,
                               comet_rt_memref *xm, comet_rt_memref *dxm) {
  return eltwiseBackward(ctx, "gelu_grad", dnnl::algorithm::eltwise_gelu_erf,
                         /*fromDst=*/false, dym, xm, dxm);
}

int32_t comet_rt_cpu_slice(comet_rt_context *ctx, comet_rt_memref *xm,
                                    comet_rt_memref *sm, comet_rt_memref *em,
                                    comet_rt_memref *am, comet_rt_memref *stm,
                                    comet_rt_memref *ym) {
  const char *op = "slice";
  Tensor x, starts, ends, axes, steps, y;
  COMET_RT_TRY(view(xm, 4, "slice X", x));
  COMET_RT_TRY(view(sm, 8, "slice starts", starts));
  COMET_RT_TRY(view(em, 8, "slice ends", ends));
  COMET_RT_TRY(view(am, 8, "slice axes", axes, true));
  COMET_RT_TRY(view(stm, 8, "slice steps", steps, true));
  COMET_RT_TRY(view(ym, 4, "slice Y", y));
  SliceSpec s;
  COMET_RT_TRY(sliceSpec(op, x.dims, starts, ends, axes, steps, s));
  COMET_RT_CHECK(s.count == y.dims, op, ": Y ", shapeStr(y.dims),
                 ", the slice is ", shapeStr(s.count));
  const float *px = x.f();
  float *py = y.f();
  forEachSliced(x.dims, s, [&](int64_t i, int64_t off) { py[i] = px[off]; });
  return ok();
}

int32_t
comet_rt_cpu_slice_grad(comet_rt_context *ctx, comet_rt_memref *dym,
                                 comet_rt_memref *shm, comet_rt_memref *sm,
                                 comet_rt_memref *em, comet_rt_memref *am,
                                 comet_rt_memref *stm, comet_rt_memref *dxm) {
  const char *op = "slice_grad";
  Tensor dy, shape, starts, ends, axes, steps, dx;
  COMET_RT_TRY(view(dym, 4, "slice_grad dY", dy));
  COMET_RT_TRY(view(shm, 8, "slice_grad shape", shape));
  COMET_RT_TRY(view(sm, 8, "slice_grad starts", starts));
  COMET_RT_TRY(view(em, 8, "slice_grad ends", ends));
  COMET_RT_TRY(view(am, 8, "slice_grad axes", axes, true));
  COMET_RT_TRY(view(stm, 8, "slice_grad steps", steps, true));
  COMET_RT_TRY(view(dxm, 4, "slice_grad dX", dx));
  COMET_RT_CHECK(
      std::vector<int64_t>(shape.i64(), shape.i64() + shape.numel()) == dx.dims,
      op, ": dX ", shapeStr(dx.dims), " is not of the shape input");
  SliceSpec s;
  COMET_RT_TRY(sliceSpec(op, dx.dims, starts, ends, axes, steps, s));
  COMET_RT_CHECK(s.count == dy.dims, op, ": dY ", shapeStr(dy.dims),
                 ", the slice is ", shapeStr(s.count));
  std::memset(dx.data, 0, sizeof(float) * dx.numel());
  const float *pdy = dy.f();
  float *pdx = dx.f();
  forEachSliced(dx.dims, s, [&](int64_t i, int64_t off) { pdx[off] = pdy[i]; });
  return ok();
}

} // extern "C"
