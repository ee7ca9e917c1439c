//===- Activations.cpp - Sigmoid, tanh, QuickGelu, average pooling, Pad ---===//
//
// Sigmoid and Tanh with their gradients on oneDNN's eltwise primitives (the
// *_use_dst_for_bwd algorithms: ORT's SigmoidGrad and TanhGrad read the
// forward output Y, not X); QuickGelu and its gradient on eltwise swish
// (x * sigmoid(alpha x), from X); AveragePool and its gradient on oneDNN's
// pooling (avg_include_padding / avg_exclude_padding); constant-mode Pad
// (which also crops, for the gradient of a Pad) as glue.
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

namespace {

constexpr auto f32 = memory::data_type::f32;

/// The window of avgpool2d / avgpool_grad2d.
struct Window {
  int64_t kH, kW, sH, sW, pT, pL, pB, pR;
  bool includePad;
};

/// Checks that x [N,C,H,W] pools to y [N,C,oH,oW] under w (floor mode).
int32_t checkWindow(const char *op, const Tensor &x, const Tensor &y,
                    const Window &w) {
  COMET_RT_CHECK(x.rank() == 4 && y.rank() == 4, op,
                 ": the input and output must be 4-D (NCHW), got ",
                 shapeStr(x.dims), " and ", shapeStr(y.dims));
  COMET_RT_CHECK(w.kH > 0 && w.kW > 0 && w.sH > 0 && w.sW > 0, op,
                 ": kernel and strides must be positive");
  COMET_RT_CHECK(w.pT >= 0 && w.pL >= 0 && w.pB >= 0 && w.pR >= 0 &&
                     w.pT < w.kH && w.pB < w.kH && w.pL < w.kW && w.pR < w.kW,
                 op, ": pads must lie in [0, kernel)");
  COMET_RT_CHECK(y.dim(0) == x.dim(0) && y.dim(1) == x.dim(1), op,
                 ": the output ", shapeStr(y.dims), " does not fit the input ",
                 shapeStr(x.dims));
  int64_t spanH = x.dim(2) + w.pT + w.pB - w.kH,
          spanW = x.dim(3) + w.pL + w.pR - w.kW;
  COMET_RT_CHECK(spanH >= 0 && spanW >= 0 && y.dim(2) == spanH / w.sH + 1 &&
                     y.dim(3) == spanW / w.sW + 1,
                 op, ": the output spatial dims ", y.dim(2), "x", y.dim(3),
                 " are not the pooling's (floor mode) of the input ",
                 shapeStr(x.dims));
  return COMET_RT_SUCCESS;
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

extern "C" {

int32_t comet_rt_cpu_sigmoid(comet_rt_context *ctx, comet_rt_memref *xm,
                             comet_rt_memref *ym) {
  return eltwiseForward(ctx, "sigmoid",
                        dnnl::algorithm::eltwise_logistic_use_dst_for_bwd, xm,
                        ym);
}

int32_t comet_rt_cpu_tanh(comet_rt_context *ctx, comet_rt_memref *xm,
                          comet_rt_memref *ym) {
  return eltwiseForward(ctx, "tanh",
                        dnnl::algorithm::eltwise_tanh_use_dst_for_bwd, xm, ym);
}

int32_t comet_rt_cpu_sigmoid_grad(comet_rt_context *ctx, comet_rt_memref *dym,
                                  comet_rt_memref *ym, comet_rt_memref *dxm) {
  return eltwiseBackward(ctx, "sigmoid_grad",
                         dnnl::algorithm::eltwise_logistic_use_dst_for_bwd,
                         /*fromDst=*/true, dym, ym, dxm);
}

int32_t comet_rt_cpu_tanh_grad(comet_rt_context *ctx, comet_rt_memref *dym,
                               comet_rt_memref *ym, comet_rt_memref *dxm) {
  return eltwiseBackward(ctx, "tanh_grad",
                         dnnl::algorithm::eltwise_tanh_use_dst_for_bwd,
                         /*fromDst=*/true, dym, ym, dxm);
}

/// QuickGelu's alpha must be finite: oneDNN's swish takes any finite one.
static int32_t checkAlpha(const char *op, float alpha) {
  COMET_RT_CHECK(std::isfinite(alpha), op, ": alpha must be finite, got ",
                 alpha);
  return COMET_RT_SUCCESS;
}

int32_t comet_rt_cpu_quick_gelu(comet_rt_context *ctx, comet_rt_memref *xm,
                                comet_rt_memref *ym, float alpha) {
  COMET_RT_TRY(checkAlpha("quick_gelu", alpha));
  return eltwiseForward(ctx, "quick_gelu", dnnl::algorithm::eltwise_swish, xm,
                        ym, alpha);
}

int32_t comet_rt_cpu_quick_gelu_grad(comet_rt_context *ctx,
                                     comet_rt_memref *dym, comet_rt_memref *xm,
                                     comet_rt_memref *dxm, float alpha) {
  COMET_RT_TRY(checkAlpha("quick_gelu_grad", alpha));
  return eltwiseBackward(ctx, "quick_gelu_grad", dnnl::algorithm::eltwise_swish,
                         /*fromDst=*/false, dym, xm, dxm, alpha);
}

int32_t comet_rt_cpu_avgpool2d(comet_rt_context *ctx, comet_rt_memref *xm,
                               comet_rt_memref *ym, int64_t kH, int64_t kW,
                               int64_t sH, int64_t sW, int64_t pT, int64_t pL,
                               int64_t pB, int64_t pR,
                               int64_t countIncludePad) {
  const char *op = "avgpool2d";
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "avgpool X", x));
  COMET_RT_TRY(view(ym, 4, "avgpool Y", y));
  Window w{kH, kW, sH, sW, pT, pL, pB, pR, countIncludePad != 0};
  COMET_RT_TRY(checkWindow(op, x, y, w));
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

int32_t comet_rt_cpu_avgpool_grad2d(comet_rt_context *ctx, comet_rt_memref *dym,
                                    comet_rt_memref *dxm, int64_t kH,
                                    int64_t kW, int64_t sH, int64_t sW,
                                    int64_t pT, int64_t pL, int64_t pB,
                                    int64_t pR, int64_t countIncludePad) {
  const char *op = "avgpool_grad2d";
  Tensor dy, dx;
  COMET_RT_TRY(view(dym, 4, "avgpool_grad dY", dy));
  COMET_RT_TRY(view(dxm, 4, "avgpool_grad dX", dx));
  Window w{kH, kW, sH, sW, pT, pL, pB, pR, countIncludePad != 0};
  COMET_RT_TRY(checkWindow(op, dx, dy, w));
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

int32_t comet_rt_cpu_pad(comet_rt_context *, comet_rt_memref *xm,
                         comet_rt_memref *pm, comet_rt_memref *vm,
                         comet_rt_memref *ym) {
  const char *op = "pad";
  Tensor x, pads, value, y;
  COMET_RT_TRY(view(xm, 4, "pad X", x));
  COMET_RT_TRY(view(pm, 8, "pad pads", pads));
  COMET_RT_TRY(view(vm, 4, "pad value", value, /*optional=*/true));
  COMET_RT_TRY(view(ym, 4, "pad Y", y));
  int64_t r = x.rank();
  COMET_RT_CHECK(r >= 1 && y.rank() == r && pads.numel() == 2 * r, op, ": X ",
                 shapeStr(x.dims), " and Y ", shapeStr(y.dims),
                 " need one rank and ", 2 * r, " pads, got ", pads.numel());
  COMET_RT_CHECK(!value.present || value.numel() == 1, op,
                 ": value must hold one element");
  const int64_t *p = pads.i64();
  for (int64_t i = 0; i < r; ++i) {
    // In 128 bits: pads are data.
    __int128 want = __int128(x.dim(i)) + p[i] + p[r + i];
    COMET_RT_CHECK(want == y.dim(i), op, ": Y ", shapeStr(y.dims), " is not X ",
                   shapeStr(x.dims), " padded by pads ",
                   shapeStr(std::vector<int64_t>(p, p + 2 * r)));
  }
  float fill = value.present ? value.f()[0] : 0.0f;
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

} // extern "C"
