//===- Pool.cpp - Max, average and global average pooling -----------------===//
//
// MaxPool with ORT's flat Indices or with each argmax's position in its
// window (oneDNN's pooling workspace is an opaque in-window offset, so one
// direct pass computes values and indices); MaxPoolGrad as an index
// scatter, from either; GlobalAveragePool; AveragePool and its
// gradient on oneDNN's pooling (avg_include_padding /
// avg_exclude_padding).
//
//===----------------------------------------------------------------------===//
#include "Dnnl.h"

#include <algorithm>
#include <cstring>
#include <limits>

using dnnl::memory;

namespace comet::rt::cpu {

namespace {

/// A 2-D pooling window over planes of h x w giving planes of oh x ow.
struct MaxWindow {
  int64_t h, w, oh, ow, kH, kW, sH, sW, pT, pL, dH, dW;

  template <typename A>
  static MaxWindow of(const A &a, const Tensor &in, const Tensor &out) {
    return {in.dim(2),  in.dim(3),  out.dim(2),   out.dim(3),
            a.kernel_h, a.kernel_w, a.stride_h,   a.stride_w,
            a.pad_top,  a.pad_left, a.dilation_h, a.dilation_w};
  }
  /// The flat index into the input (N and C offsets included) of window
  /// element (ka, kb) of output (p, i, j), as ORT's Indices give it.
  int64_t flatIndex(int64_t p, int64_t i, int64_t j, int64_t ka, int64_t kb,
                    int64_t storageOrder) const {
    int64_t hh = i * sH - pT + ka * dH, ww = j * sW - pL + kb * dW;
    return storageOrder == 0 ? p * h * w + hh * w + ww
                             : p * h * w + ww * h + hh;
  }
};

/// Max pooling over `planes` planes; store(o, p, i, j, ka, kb) records the
/// argmax of output o, the window element (ka, kb), or ka < 0 when the
/// window holds no input element. Ties keep the first in scan order.
template <typename Store>
void maxPool(const MaxWindow &g, int64_t planes, const float *x, float *y,
             Store store) {
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    const float *plane = x + p * g.h * g.w;
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t ba = -1, bb = -1;
        for (int64_t ka = 0; ka < g.kH; ++ka) {
          int64_t hh = i * g.sH - g.pT + ka * g.dH;
          if (hh < 0 || hh >= g.h)
            continue;
          for (int64_t kb = 0; kb < g.kW; ++kb) {
            int64_t ww = j * g.sW - g.pL + kb * g.dW;
            if (ww < 0 || ww >= g.w)
              continue;
            float v = plane[hh * g.w + ww];
            if (ba < 0 || v > best) {
              best = v;
              ba = ka;
              bb = kb;
            }
          }
        }
        int64_t o = (p * g.oh + i) * g.ow + j;
        y[o] = best;
        store(o, p, i, j, ba, bb);
      }
  }
}

/// dX = 0, then dX[index(i)] += dY[i] in the order of i. Planes of dY
/// scatter into disjoint planes of dX when every index stays in its plane;
/// otherwise serially.
template <typename Index>
void scatterGrad(const Tensor &dy, const Tensor &dx, Index index) {
  int64_t total = dx.numel();
  std::memset(dx.data, 0, sizeof(float) * total);
  const float *g = dy.f();
  float *out = dx.f();
  int64_t planes = dx.rank() >= 2 ? dx.dim(0) * dx.dim(1) : 0;
  bool byPlane = planes > 0 && dy.rank() == dx.rank() && dy.rank() >= 2 &&
                 dy.dim(0) * dy.dim(1) == planes;
  if (byPlane) {
    int64_t inPlane = total / planes, outPlane = dy.numel() / planes;
    for (int64_t i = 0; i < dy.numel() && byPlane; ++i)
      byPlane = index(i) / std::max<int64_t>(inPlane, 1) == i / outPlane;
    if (byPlane) {
#pragma omp parallel for schedule(static)
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t i = p * outPlane; i < (p + 1) * outPlane; ++i)
          out[index(i)] += g[i];
      return;
    }
  }
  for (int64_t i = 0; i < dy.numel(); ++i)
    out[index(i)] += g[i];
}

} // namespace

int32_t run(comet_rt_context *, const maxpool2d_args &a) {
  MaxWindow g = MaxWindow::of(a, a.x, a.y);
  int64_t *id = a.indices.present ? a.indices.i64() : nullptr;
  int64_t order = a.storage_order;
  maxPool(
      g, a.x.dim(0) * a.x.dim(1), a.x.f(), a.y.f(),
      [&](int64_t o, int64_t p, int64_t i, int64_t j, int64_t ka, int64_t kb) {
        if (id)
          id[o] = ka < 0 ? -1 : g.flatIndex(p, i, j, ka, kb, order);
      });
  return ok();
}

int32_t run(comet_rt_context *, const maxpool_grad_args &a) {
  const int64_t *id = a.indices.i64();
  scatterGrad(a.dy, a.dx, [id](int64_t i) { return id[i]; });
  return ok();
}

int32_t run(comet_rt_context *, const maxpool2d_window_args &a) {
  MaxWindow g = MaxWindow::of(a, a.x, a.y);
  uint8_t *pos = a.positions.u8();
  // Every window holds an input element (checked), so ka >= 0.
  maxPool(g, a.x.dim(0) * a.x.dim(1), a.x.f(), a.y.f(),
          [&](int64_t o, int64_t, int64_t, int64_t, int64_t ka, int64_t kb) {
            pos[o] = uint8_t(ka * g.kW + kb);
          });
  return ok();
}

int32_t run(comet_rt_context *, const maxpool_grad_window_args &a) {
  MaxWindow g = MaxWindow::of(a, a.dx, a.dy);
  const uint8_t *pos = a.positions.u8();
  int64_t order = a.storage_order;
  scatterGrad(a.dy, a.dx, [&](int64_t o) {
    int64_t j = o % g.ow, i = (o / g.ow) % g.oh, p = o / (g.ow * g.oh);
    return g.flatIndex(p, i, j, pos[o] / g.kW, pos[o] % g.kW, order);
  });
  return ok();
}

int32_t run(comet_rt_context *, const global_average_pool_args &a) {
  const Tensor &x = a.x;
  int64_t planes = x.dim(0) * x.dim(1), size = planes ? x.numel() / planes : 0;
  const float *xd = x.f();
  float *yd = a.y.f();
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    double s = 0;
    for (int64_t i = 0; i < size; ++i)
      s += xd[p * size + i];
    yd[p] = (float)(s / (double)size);
  }
  return ok();
}

namespace {

/// The window of avgpool2d / avgpool_grad2d.
struct Window {
  int64_t kH, kW, sH, sW, pT, pL, pB, pR;
  bool includePad;
};

template <typename A> Window windowOf(const A &a) {
  return {a.kernel_h,   a.kernel_w,  a.stride_h,
          a.stride_w,   a.pad_top,   a.pad_left,
          a.pad_bottom, a.pad_right, a.count_include_pad != 0};
}

std::string windowKey(const char *op, const Tensor &x, const Window &w) {
  return key(
      op,
      {w.kH, w.kW, w.sH, w.sW, w.pT, w.pL, w.pB, w.pR, int64_t(w.includePad)},
      x.dims);
}

dnnl::pooling_forward::desc poolDesc(const memory::desc &src,
                                     const memory::desc &dst, const Window &w) {
  return dnnl::pooling_forward::desc(
      dnnl::prop_kind::forward_training,
      w.includePad ? dnnl::algorithm::pooling_avg_include_padding
                   : dnnl::algorithm::pooling_avg_exclude_padding,
      src, dst, {w.sH, w.sW}, {w.kH, w.kW}, {w.pT, w.pL}, {w.pB, w.pR});
}

} // namespace

int32_t run(comet_rt_context *ctx, const avgpool2d_args &a) {
  const char *op = "avgpool2d";
  const Tensor &x = a.x, &y = a.y;
  Window w = windowOf(a);
  if (y.numel() == 0)
    return ok();
  return guard(op, [&] {
    memory::desc src = plainMd(x.dims), dst = plainMd(y.dims);
    Primitive p = getPrimitive(windowKey(op, x, w), [&] {
      dnnl::pooling_forward::primitive_desc pd(poolDesc(src, dst, w),
                                               userScratchpadAttr(), engine());
      return Primitive{dnnl::pooling_forward(pd), pd.scratchpad_desc()};
    });
    execute(
        ctx, p,
        {{DNNL_ARG_SRC, mem(src, x.data)}, {DNNL_ARG_DST, mem(dst, y.data)}});
    return ok();
  });
}

int32_t run(comet_rt_context *ctx, const avgpool_grad2d_args &a) {
  const char *op = "avgpool_grad2d";
  const Tensor &dy = a.dy, &dx = a.dx;
  Window w = windowOf(a);
  if (dx.numel() == 0)
    return ok();
  if (dy.numel() == 0) {
    std::memset(dx.data, 0, sizeof(float) * dx.numel());
    return ok();
  }
  return guard(op, [&] {
    memory::desc src = plainMd(dx.dims), dst = plainMd(dy.dims);
    Primitive p = getPrimitive(windowKey(op, dx, w), [&] {
      dnnl::pooling_forward::primitive_desc fpd(poolDesc(src, dst, w),
                                                engine());
      dnnl::pooling_backward::desc d(
          w.includePad ? dnnl::algorithm::pooling_avg_include_padding
                       : dnnl::algorithm::pooling_avg_exclude_padding,
          src, dst, {w.sH, w.sW}, {w.kH, w.kW}, {w.pT, w.pL}, {w.pB, w.pR});
      dnnl::pooling_backward::primitive_desc pd(d, userScratchpadAttr(),
                                                engine(), fpd);
      return Primitive{dnnl::pooling_backward(pd), pd.scratchpad_desc()};
    });
    execute(ctx, p,
            {{DNNL_ARG_DIFF_DST, mem(dst, dy.data)},
             {DNNL_ARG_DIFF_SRC, mem(src, dx.data)}});
    return ok();
  });
}

} // namespace comet::rt::cpu
