//===- Eltwise.cpp - Elementwise activations and math ---------------------===//
//
// oneDNN eltwise primitives where oneDNN has the function (sigmoid and tanh
// with their *_use_dst_for_bwd gradients, as ORT's SigmoidGrad and
// TanhGrad read the forward output; GELU; QuickGelu as swish; Sqrt, Exp;
// BiasGelu as a binary add with an eltwise post-op), OpenMP loops for the
// rest (ReLU, LeakyReLU, Erf, Reciprocal, Clip, Scale, casts).
//
//===----------------------------------------------------------------------===//
#include "Dnnl.h"

#include <cmath>

using dnnl::memory;
using alg = dnnl::algorithm;

namespace comet::rt::cpu {

namespace {

/// Y = f(X) elementwise, for the functions oneDNN's eltwise lacks.
template <typename Fn>
int32_t unaryLoop(const Tensor &x, const Tensor &y, Fn f) {
  const float *px = x.f();
  float *py = y.f();
  int64_t n = x.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    py[i] = f(px[i]);
  return ok();
}

} // namespace

int32_t run(comet_rt_context *, const relu_args &a) {
  const float *x = a.x.f();
  float *y = a.y.f();
  int64_t n = a.x.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  return ok();
}

int32_t run(comet_rt_context *, const relu_grad_args &a) {
  const float *g = a.dy.f(), *x = a.x.f();
  float *o = a.dx.f();
  int64_t n = a.x.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    o[i] = x[i] > 0.0f ? g[i] : 0.0f;
  return ok();
}

int32_t run(comet_rt_context *, const leaky_relu_args &a) {
  const float *x = a.x.f();
  float *y = a.y.f();
  float alpha = a.alpha;
  int64_t n = a.x.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
  return ok();
}

int32_t run(comet_rt_context *, const leaky_relu_grad_args &a) {
  // Each dY element is read before its dX is written: dX may alias dY.
  const float *g = a.dy.f(), *y = a.y.f();
  float *o = a.dx.f();
  float alpha = a.alpha;
  int64_t n = a.y.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    o[i] = y[i] > 0.0f ? g[i] : alpha * g[i];
  return ok();
}

int32_t run(comet_rt_context *ctx, const sigmoid_args &a) {
  return eltwiseImpl(ctx, "sigmoid", alg::eltwise_logistic_use_dst_for_bwd, 0.f,
                     0.f, a.x.data, a.y.data, a.x.numel());
}

int32_t run(comet_rt_context *ctx, const tanh_args &a) {
  return eltwiseImpl(ctx, "tanh", alg::eltwise_tanh_use_dst_for_bwd, 0.f, 0.f,
                     a.x.data, a.y.data, a.x.numel());
}

int32_t run(comet_rt_context *ctx, const sigmoid_grad_args &a) {
  return eltwiseBackwardImpl(
      ctx, "sigmoid_grad", alg::eltwise_logistic_use_dst_for_bwd,
      /*fromDst=*/true, a.y.data, a.dy.data, a.dx.data, a.y.numel());
}

int32_t run(comet_rt_context *ctx, const tanh_grad_args &a) {
  return eltwiseBackwardImpl(
      ctx, "tanh_grad", alg::eltwise_tanh_use_dst_for_bwd,
      /*fromDst=*/true, a.y.data, a.dy.data, a.dx.data, a.y.numel());
}

int32_t run(comet_rt_context *ctx, const gelu_args &a) {
  return eltwiseImpl(ctx, "gelu", alg::eltwise_gelu_erf, 0.f, 0.f, a.x.data,
                     a.y.data, a.x.numel());
}

int32_t run(comet_rt_context *ctx, const gelu_grad_args &a) {
  return eltwiseBackwardImpl(ctx, "gelu_grad", alg::eltwise_gelu_erf,
                             /*fromDst=*/false, a.x.data, a.dy.data, a.dx.data,
                             a.x.numel());
}

int32_t run(comet_rt_context *ctx, const quick_gelu_args &a) {
  return eltwiseImpl(ctx, "quick_gelu", alg::eltwise_swish, a.alpha, 0.f,
                     a.x.data, a.y.data, a.x.numel());
}

int32_t run(comet_rt_context *ctx, const quick_gelu_grad_args &a) {
  return eltwiseBackwardImpl(ctx, "quick_gelu_grad", alg::eltwise_swish,
                             /*fromDst=*/false, a.x.data, a.dy.data, a.dx.data,
                             a.x.numel(), a.alpha);
}

int32_t run(comet_rt_context *ctx, const bias_gelu_args &a) {
  const char *op = "bias_gelu";
  const Tensor &x = a.x;
  int64_t cols = x.dim(x.rank() - 1),
          rows = x.numel() / std::max<int64_t>(cols, 1);
  if (x.numel() == 0)
    return ok();
  return guard(op, [&] {
    memory::desc dMd({rows, cols}, memory::data_type::f32,
                     memory::format_tag::ab);
    memory::desc bMd({1, cols}, memory::data_type::f32, memory::format_tag::ab);
    Primitive p = getPrimitive(key(op, {rows, cols}), [&] {
      dnnl::post_ops po;
      po.append_eltwise(1.0f, alg::eltwise_gelu_erf, 0.f, 0.f);
      dnnl::primitive_attr attr = userScratchpadAttr();
      attr.set_post_ops(po);
      dnnl::binary::desc d(alg::binary_add, dMd, bMd, dMd);
      dnnl::binary::primitive_desc pd(d, attr, engine());
      return Primitive{dnnl::binary(pd), pd.scratchpad_desc()};
    });
    execute(ctx, p,
            {{DNNL_ARG_SRC_0, mem(dMd, x.data)},
             {DNNL_ARG_SRC_1, mem(bMd, a.bias.data)},
             {DNNL_ARG_DST, mem(dMd, a.y.data)}});
    return ok();
  });
}

int32_t run(comet_rt_context *ctx, const bias_gelu_grad_dx_args &a) {
  const char *op = "bias_gelu_grad_dx";
  const Tensor &x = a.x;
  int64_t cols = x.dim(x.rank() - 1), n = x.numel();
  if (n == 0)
    return ok();
  return guard(op, [&] {
    Scratch tmp(ctx, sizeof(float) * n);
    float *s = tmp.f();
    const float *px = x.f(), *pb = a.bias.f();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      s[i] = px[i] + pb[i % cols];
    return eltwiseBackwardImpl(ctx, op, alg::eltwise_gelu_erf,
                               /*fromDst=*/false, s, a.dy.data, a.dx.data, n);
  });
}

int32_t run(comet_rt_context *ctx, const sqrt_args &a) {
  return eltwiseImpl(ctx, "sqrt", alg::eltwise_sqrt, 0.f, 0.f, a.x.data,
                     a.y.data, a.x.numel());
}

int32_t run(comet_rt_context *ctx, const exp_args &a) {
  return eltwiseImpl(ctx, "exp", alg::eltwise_exp, 0.f, 0.f, a.x.data, a.y.data,
                     a.x.numel());
}

int32_t run(comet_rt_context *, const erf_args &a) {
  // oneDNN has erf only inside gelu_erf: a loop.
  return unaryLoop(a.x, a.y, [](float v) { return std::erf(v); });
}

int32_t run(comet_rt_context *, const reciprocal_args &a) {
  return unaryLoop(a.x, a.y, [](float v) { return 1.0f / v; });
}

int32_t run(comet_rt_context *, const clip_args &a) {
  float lo = a.min.present ? a.min.f()[0] : -INFINITY;
  float hi = a.max.present ? a.max.f()[0] : INFINITY;
  const float *px = a.x.f();
  float *py = a.y.f();
  int64_t n = a.y.numel();
  // ONNX: min(max(x, min), max), so max wins when min > max; NaN stays.
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float v = px[i];
    v = v < lo ? lo : v;
    py[i] = v > hi ? hi : v;
  }
  return ok();
}

int32_t run(comet_rt_context *, const scale_args &a) {
  float f = a.scale.f()[0];
  const float *x = a.x.f();
  float *y = a.y.f();
  int64_t n = a.x.numel();
  if (a.scale_down) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] / f;
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] * f;
  }
  return ok();
}

int32_t run(comet_rt_context *, const cast_i1_f32_args &a) {
  const uint8_t *px = a.x.as<uint8_t>();
  float *py = a.y.f();
  int64_t n = a.y.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    py[i] = px[i] ? 1.0f : 0.0f;
  return ok();
}

int32_t run(comet_rt_context *, const cast_f32_i64_args &a) {
  const float *px = a.x.f();
  int64_t *py = a.y.i64();
  int64_t n = a.x.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    py[i] = static_cast<int64_t>(px[i]);
  return ok();
}

} // namespace comet::rt::cpu
