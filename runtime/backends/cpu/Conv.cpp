//===- Conv.cpp - Convolution forward and backward on oneDNN --------------===//
//
// Forward, backward data, backward weights (with the bias gradient when dW
// is wanted too); a bias gradient alone is a sum over N, H and W.
//
//===----------------------------------------------------------------------===//
#include "Dnnl.h"

using dnnl::memory;
using tag = dnnl::memory::format_tag;

namespace comet::rt::cpu {

namespace {

constexpr auto f32 = memory::data_type::f32;

struct ConvShape {
  int64_t n, c, h, w, m, kh, kw, oh, ow, group;
  memory::dims strides, dilates, padL, padR;
  memory::desc src, wei, dst, bias;
};

/// The geometry of X * W -> Y (the contract has checked that it fits).
ConvShape convShape(const Tensor &x, const Tensor &w, const Tensor &y,
                    int64_t sH, int64_t sW, int64_t pT, int64_t pL, int64_t pB,
                    int64_t pR, int64_t dH, int64_t dW, int64_t group) {
  ConvShape s{x.dim(0), x.dim(1), x.dim(2), x.dim(3), w.dim(0),
              w.dim(2), w.dim(3), y.dim(2), y.dim(3), group};
  s.strides = {sH, sW};
  s.dilates = {dH - 1, dW - 1};
  s.padL = {pT, pL};
  s.padR = {pB, pR};
  s.src = memory::desc({s.n, s.c, s.h, s.w}, f32, tag::nchw);
  s.dst = memory::desc({s.n, s.m, s.oh, s.ow}, f32, tag::nchw);
  s.wei = group == 1
              ? memory::desc({s.m, s.c, s.kh, s.kw}, f32, tag::oihw)
              : memory::desc({group, s.m / group, s.c / group, s.kh, s.kw}, f32,
                             tag::goihw);
  s.bias = memory::desc({s.m}, f32, tag::x);
  return s;
}

std::string convKey(const char *op, const ConvShape &s, bool bias) {
  return key(op, {s.n, s.c, s.h, s.w, s.m, s.kh, s.kw, s.oh, s.ow, s.group,
                  s.strides[0], s.strides[1], s.dilates[0], s.dilates[1],
                  s.padL[0], s.padL[1], s.padR[0], s.padR[1], (int64_t)bias});
}

dnnl::convolution_forward::primitive_desc convFwdPd(const ConvShape &s,
                                                    bool bias) {
  using cf = dnnl::convolution_forward;
  cf::desc d =
      bias ? cf::desc(dnnl::prop_kind::forward_training,
                      dnnl::algorithm::convolution_direct, s.src, s.wei, s.bias,
                      s.dst, s.strides, s.dilates, s.padL, s.padR)
           : cf::desc(dnnl::prop_kind::forward_training,
                      dnnl::algorithm::convolution_direct, s.src, s.wei, s.dst,
                      s.strides, s.dilates, s.padL, s.padR);
  return cf::primitive_desc(d, userScratchpadAttr(), engine());
}

} // namespace

int32_t run(comet_rt_context *ctx, const conv2d_args &a) {
  const char *op = "conv2d";
  ConvShape s =
      convShape(a.x, a.w, a.y, a.stride_h, a.stride_w, a.pad_top, a.pad_left,
                a.pad_bottom, a.pad_right, a.dilation_h, a.dilation_w, a.group);
  bool bias = a.b.present;
  return guard(op, [&] {
    Primitive p = getPrimitive(convKey(op, s, bias), [&] {
      auto pd = convFwdPd(s, bias);
      return Primitive{dnnl::convolution_forward(pd), pd.scratchpad_desc()};
    });
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, mem(s.src, a.x.data)},
        {DNNL_ARG_WEIGHTS, mem(s.wei, a.w.data)},
        {DNNL_ARG_DST, mem(s.dst, a.y.data)}};
    if (bias)
      args[DNNL_ARG_BIAS] = mem(s.bias, a.b.data);
    execute(ctx, p, args);
    return ok();
  });
}

int32_t run(comet_rt_context *ctx, const conv_grad2d_args &a) {
  const char *op = "conv_grad2d";
  ConvShape s =
      convShape(a.x, a.w, a.dy, a.stride_h, a.stride_w, a.pad_top, a.pad_left,
                a.pad_bottom, a.pad_right, a.dilation_h, a.dilation_w, a.group);
  return guard(op, [&] {
    if (a.dx.present) {
      Primitive p = getPrimitive(convKey("conv_bwd_data", s, false), [&] {
        auto fwd = convFwdPd(s, false);
        using cb = dnnl::convolution_backward_data;
        cb::desc d(dnnl::algorithm::convolution_direct, s.src, s.wei, s.dst,
                   s.strides, s.dilates, s.padL, s.padR);
        cb::primitive_desc pd(d, userScratchpadAttr(), engine(), fwd);
        return Primitive{cb(pd), pd.scratchpad_desc()};
      });
      execute(ctx, p,
              {{DNNL_ARG_DIFF_DST, mem(s.dst, a.dy.data)},
               {DNNL_ARG_WEIGHTS, mem(s.wei, a.w.data)},
               {DNNL_ARG_DIFF_SRC, mem(s.src, a.dx.data)}});
    }
    if (a.dw.present) {
      bool bias = a.db.present;
      Primitive p = getPrimitive(convKey("conv_bwd_weights", s, bias), [&] {
        auto fwd = convFwdPd(s, bias);
        using cb = dnnl::convolution_backward_weights;
        cb::desc d =
            bias ? cb::desc(dnnl::algorithm::convolution_direct, s.src, s.wei,
                            s.bias, s.dst, s.strides, s.dilates, s.padL, s.padR)
                 : cb::desc(dnnl::algorithm::convolution_direct, s.src, s.wei,
                            s.dst, s.strides, s.dilates, s.padL, s.padR);
        cb::primitive_desc pd(d, userScratchpadAttr(), engine(), fwd);
        return Primitive{cb(pd), pd.scratchpad_desc()};
      });
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, mem(s.src, a.x.data)},
          {DNNL_ARG_DIFF_DST, mem(s.dst, a.dy.data)},
          {DNNL_ARG_DIFF_WEIGHTS, mem(s.wei, a.dw.data)}};
      if (bias)
        args[DNNL_ARG_DIFF_BIAS] = mem(s.bias, a.db.data);
      execute(ctx, p, args);
    } else if (a.db.present) {
      // dB alone: the sum of dY over N, oH and oW per output channel.
      const float *g = a.dy.f();
      float *db = a.db.f();
      int64_t plane = s.oh * s.ow;
#pragma omp parallel for schedule(static)
      for (int64_t m = 0; m < s.m; ++m) {
        double sum = 0;
        for (int64_t n = 0; n < s.n; ++n)
          for (int64_t i = 0; i < plane; ++i)
            sum += g[(n * s.m + m) * plane + i];
        db[m] = static_cast<float>(sum);
      }
    }
    return ok();
  });
}

} // namespace comet::rt::cpu
