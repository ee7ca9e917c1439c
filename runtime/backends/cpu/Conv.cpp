//===- Conv.cpp - Convolution forward and backward on oneDNN --------------===//
//
// Forward, backward data, backward weights (with the bias gradient when dW
// is wanted too; over groups of output channels when its scratchpad would
// pass the context's workspace limit); a bias gradient alone is a sum over
// N, H and W.
//
//===----------------------------------------------------------------------===//
#include "Dnnl.h"
#include "comet/runtime/alloc.h"

#include <algorithm>
#include <cstring>

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

/// s with m output channels (the weights' and dY's first m).
ConvShape withOutChannels(const ConvShape &s, int64_t m) {
  ConvShape r = s;
  r.m = m;
  r.dst = memory::desc({s.n, m, s.oh, s.ow}, f32, tag::nchw);
  r.wei = memory::desc({m, s.c, s.kh, s.kw}, f32, tag::oihw);
  r.bias = memory::desc({m}, f32, tag::x);
  return r;
}

Primitive bwdDataPrimitive(const ConvShape &s) {
  return getPrimitive(convKey("conv_bwd_data", s, false), [&] {
    auto fwd = convFwdPd(s, false);
    using cb = dnnl::convolution_backward_data;
    cb::desc d(dnnl::algorithm::convolution_direct, s.src, s.wei, s.dst,
               s.strides, s.dilates, s.padL, s.padR);
    cb::primitive_desc pd(d, userScratchpadAttr(), engine(), fwd);
    return Primitive{cb(pd), pd.scratchpad_desc()};
  });
}

Primitive bwdWeightsPrimitive(const ConvShape &s, bool bias) {
  return getPrimitive(convKey("conv_bwd_weights", s, bias), [&] {
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
}

/// The workspace of dW (and dB) over groups of mk output channels (0: all
/// at once): a group's scratchpad and its copy of dY.
size_t weightGradWorkspace(const ConvShape &s, bool bias, int64_t mk) {
  if (mk == 0)
    return bwdWeightsPrimitive(s, bias).scratchpad.get_size();
  return bwdWeightsPrimitive(withOutChannels(s, mk), bias)
             .scratchpad.get_size() +
         sizeof(float) * size_t(s.n * mk * s.oh * s.ow);
}

/// dW (and dB) over groups of mk output channels, each from a dense copy of
/// its channels of dY, which oneDNN's gemm convolution needs (a strided
/// view of them falls to its reference kernel). oneDNN's weight-gradient
/// scratchpad grows with the output channels and the threads, not with the
/// batch (ResNet-18's 512-channel 3x3 takes 77.3 MB at 2 threads, for any
/// batch of 8 or more), so the channels are what is split. Halves mk until
/// a group's scratchpad and copy fit `limit`; when none does, the group
/// that takes least, if it takes less than the whole (a small group can
/// take more: its im2col does not shrink, and oneDNN may parallelize it
/// otherwise). 0: the whole convolution at once.
int64_t outChannelGroup(const ConvShape &s, bool bias, int64_t limit) {
  size_t whole = weightGradWorkspace(s, bias, 0);
  if (limit <= 0 || s.group != 1 || whole <= size_t(limit))
    return 0;
  int64_t best = 0;
  size_t least = whole;
  for (int64_t mk = s.m; mk > 1;) {
    mk = (mk + 1) / 2;
    size_t bytes = weightGradWorkspace(s, bias, mk);
    if (bytes < least) {
      best = mk;
      least = bytes;
    }
    if (bytes <= size_t(limit))
      break;
  }
  return best;
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

int64_t convGrad2dWorkspace(comet_rt_context *ctx, const conv_grad2d_args &a) {
  ConvShape s =
      convShape(a.x, a.w, a.dy, a.stride_h, a.stride_w, a.pad_top, a.pad_left,
                a.pad_bottom, a.pad_right, a.dilation_h, a.dilation_w, a.group);
  int64_t bytes = -1;
  guard("conv_grad2d", [&] {
    size_t most = 0;
    if (a.dx.present)
      most = bwdDataPrimitive(s).scratchpad.get_size();
    if (a.dw.present) {
      bool bias = a.db.present;
      int64_t mk =
          outChannelGroup(s, bias, comet_rt_context_workspace_limit(ctx));
      size_t w = weightGradWorkspace(s, bias, mk);
      most = std::max(most, w);
    }
    bytes = int64_t(most);
    return ok();
  });
  return bytes;
}

int32_t run(comet_rt_context *ctx, const conv_grad2d_args &a) {
  const char *op = "conv_grad2d";
  ConvShape s =
      convShape(a.x, a.w, a.dy, a.stride_h, a.stride_w, a.pad_top, a.pad_left,
                a.pad_bottom, a.pad_right, a.dilation_h, a.dilation_w, a.group);
  return guard(op, [&] {
    if (a.dx.present) {
      Primitive p = bwdDataPrimitive(s);
      execute(ctx, p,
              {{DNNL_ARG_DIFF_DST, mem(s.dst, a.dy.data)},
               {DNNL_ARG_WEIGHTS, mem(s.wei, a.w.data)},
               {DNNL_ARG_DIFF_SRC, mem(s.src, a.dx.data)}});
    }
    if (a.dw.present) {
      bool bias = a.db.present;
      int64_t mk =
          outChannelGroup(s, bias, comet_rt_context_workspace_limit(ctx));
      if (mk == 0) {
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, mem(s.src, a.x.data)},
            {DNNL_ARG_DIFF_DST, mem(s.dst, a.dy.data)},
            {DNNL_ARG_DIFF_WEIGHTS, mem(s.wei, a.dw.data)}};
        if (bias)
          args[DNNL_ARG_DIFF_BIAS] = mem(s.bias, a.db.data);
        execute(ctx, bwdWeightsPrimitive(s, bias), args);
      } else {
        int64_t plane = s.oh * s.ow, filter = s.c * s.kh * s.kw;
        Scratch dyPart(ctx, sizeof(float) * size_t(s.n * mk * plane));
        for (int64_t m0 = 0; m0 < s.m; m0 += mk) {
          int64_t mc = std::min(mk, s.m - m0);
          ConvShape part = withOutChannels(s, mc);
          // Image n's channels m0..m0+mc of dY are contiguous.
          const float *dy = a.dy.f();
          float *to = dyPart.f();
#pragma omp parallel for schedule(static)
          for (int64_t n = 0; n < s.n; ++n)
            std::memcpy(to + n * mc * plane, dy + (n * s.m + m0) * plane,
                        sizeof(float) * size_t(mc * plane));
          std::unordered_map<int, memory> args{
              {DNNL_ARG_SRC, mem(part.src, a.x.data)},
              {DNNL_ARG_DIFF_DST, mem(part.dst, to)},
              {DNNL_ARG_DIFF_WEIGHTS, mem(part.wei, a.dw.f() + m0 * filter)}};
          if (bias)
            args[DNNL_ARG_DIFF_BIAS] = mem(part.bias, a.db.f() + m0);
          execute(ctx, bwdWeightsPrimitive(part, bias), args);
        }
      }
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
