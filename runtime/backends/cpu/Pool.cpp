//===- Pool.cpp - Max, average and global average pooling -----------------===//
//
// MaxPool with ORT's flat Indices (oneDNN's pooling workspace is an opaque
// in-window offset, so one direct pass computes values and indices);
// MaxPoolGrad as an index scatter; GlobalAveragePool; AveragePool and its
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

int32_t run(comet_rt_context *, const maxpool2d_args &a) {
  const Tensor &x = a.x, &y = a.y;
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  int64_t oh = y.dim(2), ow = y.dim(3);
  int64_t kH = a.kernel_h, kW = a.kernel_w, sH = a.stride_h, sW = a.stride_w,
          pT = a.pad_top, pL = a.pad_left, dH = a.dilation_h, dW = a.dilation_w,
          storageOrder = a.storage_order;
  const float *xd = x.f();
  float *yd = y.f();
  int64_t *id = a.indices.present ? a.indices.i64() : nullptr;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < n * c; ++p) {
    const float *plane = xd + p * h * w;
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t bh = -1, bw = -1;
        for (int64_t ka = 0; ka < kH; ++ka) {
          int64_t hh = i * sH - pT + ka * dH;
          if (hh < 0 || hh >= h)
            continue;
          for (int64_t kb = 0; kb < kW; ++kb) {
            int64_t ww = j * sW - pL + kb * dW;
            if (ww < 0 || ww >= w)
              continue;
            float v = plane[hh * w + ww];
            if (bh < 0 || v > best) {
              best = v;
              bh = hh;
              bw = ww;
            }
          }
        }
        int64_t o = (p * oh + i) * ow + j;
        yd[o] = best;
        if (id)
          id[o] = bh < 0              ? -1
                  : storageOrder == 0 ? p * h * w + bh * w + bw
                                      : p * h * w + bw * h + bh;
      }
  }
  return ok();
}

int32_t run(comet_rt_context *, const maxpool_grad_args &a) {
  const Tensor &dy = a.dy, &dx = a.dx;
  int64_t total = dx.numel();
  const int64_t *id = a.indices.i64();
  std::memset(dx.data, 0, sizeof(float) * total);
  // Planes of dY scatter into disjoint planes of dX when dX and dY share
  // N*C; otherwise scatter serially.
  const float *g = dy.f();
  float *out = dx.f();
  int64_t planes = dx.rank() >= 2 ? dx.dim(0) * dx.dim(1) : 0;
  bool byPlane = planes > 0 && dy.rank() == dx.rank() && dy.rank() >= 2 &&
                 dy.dim(0) * dy.dim(1) == planes;
  if (byPlane) {
    int64_t inPlane = total / planes, outPlane = dy.numel() / planes;
    for (int64_t i = 0; i < dy.numel() && byPlane; ++i)
      byPlane = id[i] / std::max<int64_t>(inPlane, 1) == i / outPlane;
    if (byPlane) {
#pragma omp parallel for schedule(static)
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t i = p * outPlane; i < (p + 1) * outPlane; ++i)
          out[id[i]] += g[i];
      return ok();
    }
  }
  for (int64_t i = 0; i < dy.numel(); ++i)
    out[id[i]] += g[i];
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
