//===- Norm.cpp - Batch and layer normalization on oneDNN -----------------===//
//
// ONNX Runtime's training forms: BatchNormInternal (batch statistics,
// running averages, the saved mean and inverse standard deviation) and
// BatchNormalizationGrad; LayerNormalization and its gradient over the dims
// from `axis`.
//
//===----------------------------------------------------------------------===//
#include "Dnnl.h"

#include <cmath>
#include <cstring>

using dnnl::memory;
using tag = dnnl::memory::format_tag;

namespace comet::rt::cpu {

namespace {
constexpr auto f32 = memory::data_type::f32;

int64_t bitsOf(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return bits;
}
} // namespace

/// y = act(bn_affine(x)) over [n, c, hw], a channel's rows at a time.
static void applyChannels(const float *x, const float *scale, const float *bias,
                          const float *mean, const float *inv, float *y,
                          int64_t n, int64_t c, int64_t hw, int64_t act,
                          float lo, float hi) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      float mu = mean[ch], is = inv[ch], sc = scale[ch], sv = bias[ch];
      const float *src = x + (i * c + ch) * hw;
      float *dst = y + (i * c + ch) * hw;
#pragma omp simd
      for (int64_t k = 0; k < hw; ++k)
        dst[k] = comet_rt_bn_activation(
            comet_rt_bn_affine(src[k], mu, is, sc, sv), act, lo, hi);
    }
}

int32_t run(comet_rt_context *ctx, const batch_norm_internal_args &a) {
  const char *op = "batch_norm_internal";
  const Tensor &x = a.x;
  int64_t c = x.dim(1);
  if (x.numel() == 0)
    return ok();
  if (a.training_mode == 0) {
    // Inference: oneDNN with the given statistics.
    auto flags = dnnl::normalization_flags::use_scale |
                 dnnl::normalization_flags::use_shift |
                 dnnl::normalization_flags::use_global_stats;
    return guard(op, [&] {
      memory::desc xMd = plainMd(x.dims), cMd({c}, f32, tag::x);
      Primitive p = getPrimitive(key(op, {0, bitsOf(a.epsilon)}, x.dims), [&] {
        using bf = dnnl::batch_normalization_forward;
        bf::desc d(dnnl::prop_kind::forward_inference, xMd, a.epsilon, flags);
        bf::primitive_desc pd(d, userScratchpadAttr(), engine());
        return Primitive{bf(pd), pd.scratchpad_desc()};
      });
      execute(ctx, p,
              {{DNNL_ARG_SRC, mem(xMd, x.data)},
               {DNNL_ARG_DST, mem(xMd, a.y.data)},
               {DNNL_ARG_SCALE, mem(cMd, a.scale.data)},
               {DNNL_ARG_SHIFT, mem(cMd, a.bias.data)},
               {DNNL_ARG_MEAN, mem(cMd, a.input_mean.data)},
               {DNNL_ARG_VARIANCE, mem(cMd, a.input_var.data)}});
      return ok();
    });
  }
  // Training: the batch statistics (in float, as ONNX Runtime and oneDNN
  // accumulate them: double sums round differently), then the output
  // through comet_rt_bn_affine from the saved mean and 1/std, the very
  // arithmetic batch_norm_apply repeats when the backward recomputes it.
  int64_t n = x.dim(0), hw = x.numel() / (n * c);
  Workspace statsBuf(ctx, 2 * c * sizeof(float));
  if (!statsBuf.ok())
    return fail(COMET_RT_ERROR_OUT_OF_MEMORY, concat(op, ": out of memory"));
  float *mean = statsBuf.f(), *inv = mean + c;
  const float *px = x.f();
  float momentum = a.momentum;
#pragma omp parallel for schedule(static)
  for (int64_t ch = 0; ch < c; ++ch) {
    float s = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float *row = px + (i * c + ch) * hw;
#pragma omp simd reduction(+ : s)
      for (int64_t k = 0; k < hw; ++k)
        s += row[k];
    }
    float fm = s / float(n * hw), q = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float *row = px + (i * c + ch) * hw;
#pragma omp simd reduction(+ : q)
      for (int64_t k = 0; k < hw; ++k) {
        float d = row[k] - fm;
        q += d * d;
      }
    }
    float fv = q / float(n * hw);
    // running_* may be input_*'s buffers (in place): read before writing.
    float inMean = a.input_mean.f()[ch], inVar = a.input_var.f()[ch];
    if (a.running_mean.present)
      a.running_mean.f()[ch] = inMean * momentum + fm * (1.0f - momentum);
    if (a.running_var.present)
      a.running_var.f()[ch] = inVar * momentum + fv * (1.0f - momentum);
    mean[ch] = fm;
    inv[ch] = 1.0f / std::sqrt(fv + a.epsilon);
    if (a.saved_mean.present)
      a.saved_mean.f()[ch] = mean[ch];
    if (a.saved_inv_std.present)
      a.saved_inv_std.f()[ch] = inv[ch];
  }
  applyChannels(px, a.scale.f(), a.bias.f(), mean, inv, a.y.f(), n, c, hw,
                COMET_RT_BN_ACT_NONE, 0.0f, 0.0f);
  return ok();
}

int32_t run(comet_rt_context *ctx, const batch_norm_grad_args &a) {
  const char *op = "batch_norm_grad";
  const Tensor &x = a.x;
  int64_t c = x.dim(1);
  if (x.numel() == 0)
    return ok();
  return guard(op, [&] {
    auto flags = dnnl::normalization_flags::use_scale |
                 dnnl::normalization_flags::use_shift;
    memory::desc xMd = plainMd(x.dims), cMd({c}, f32, tag::x);
    Primitive p = getPrimitive(key(op, {bitsOf(a.epsilon)}, x.dims), [&] {
      using bf = dnnl::batch_normalization_forward;
      using bb = dnnl::batch_normalization_backward;
      bf::primitive_desc fwd(
          bf::desc(dnnl::prop_kind::forward_training, xMd, a.epsilon, flags),
          userScratchpadAttr(), engine());
      bb::primitive_desc pd(
          bb::desc(dnnl::prop_kind::backward, xMd, xMd, a.epsilon, flags),
          userScratchpadAttr(), engine(), fwd);
      return Primitive{bb(pd), pd.scratchpad_desc()};
    });
    // oneDNN wants the variance; ORT saves 1/sqrt(var + eps).
    Scratch varBuf(ctx, c * sizeof(float));
    float *var = varBuf.f();
    for (int64_t i = 0; i < c; ++i) {
      double s = a.saved_inv_std.f()[i];
      var[i] = (float)(1.0 / (s * s) - (double)a.epsilon);
    }
    execute(ctx, p,
            {{DNNL_ARG_SRC, mem(xMd, x.data)},
             {DNNL_ARG_DIFF_DST, mem(xMd, a.dy.data)},
             {DNNL_ARG_MEAN, mem(cMd, a.saved_mean.data)},
             {DNNL_ARG_VARIANCE, mem(cMd, var)},
             {DNNL_ARG_SCALE, mem(cMd, a.scale.data)},
             // oneDNN 2.6 lists the shift as an input of the backward
             // pass with use_shift although dX does not depend on it.
             {DNNL_ARG_SHIFT, mem(cMd, a.scale.data)},
             {DNNL_ARG_DIFF_SRC, mem(xMd, a.dx.data)},
             {DNNL_ARG_DIFF_SCALE, mem(cMd, a.dscale.data)},
             {DNNL_ARG_DIFF_SHIFT, mem(cMd, a.dbias.data)}});
    return ok();
  });
}

int32_t run(comet_rt_context *, const batch_norm_apply_args &a) {
  const Tensor &x = a.x;
  int64_t n = x.dim(0), c = x.dim(1);
  if (x.numel() == 0)
    return ok();
  applyChannels(x.f(), a.scale.f(), a.bias.f(), a.saved_mean.f(),
                a.saved_inv_std.f(), a.y.f(), n, c, x.numel() / (n * c),
                a.activation, a.lo, a.hi);
  return ok();
}

int32_t run(comet_rt_context *ctx, const layer_norm_args &a) {
  const char *op = "layer_norm";
  const Tensor &x = a.x;
  int64_t axis = normAxis(a.axis, x.rank());
  int64_t rows = product(x.dims, 0, axis),
          cols = product(x.dims, axis, x.dims.size());
  if (x.numel() == 0)
    return ok();
  float epsilon = a.epsilon;
  return guard(op, [&] {
    // Absent statistics go to a temporary: oneDNN training mode writes them.
    Scratch tmp(ctx, sizeof(float) * 2 * rows);
    float *meanP = a.mean.present ? a.mean.f() : tmp.f();
    float *var = tmp.f() + rows;
    memory::desc dMd({rows, cols}, f32, tag::ab);
    memory::desc sMd({rows}, f32, tag::a);
    memory::desc wMd({cols}, f32, tag::a);
    bool shift = a.bias.present;
    // epsilon is fixed in a oneDNN 2.6 descriptor, so it is in the key.
    Primitive p =
        getPrimitive(key(op, {rows, cols, shift, bitsOf(epsilon)}), [&] {
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
        {DNNL_ARG_DST, mem(dMd, a.y.data)},
        {DNNL_ARG_MEAN, mem(sMd, meanP)},
        {DNNL_ARG_VARIANCE, mem(sMd, var)},
        {DNNL_ARG_SCALE, mem(wMd, a.scale.data)}};
    if (shift)
      args[DNNL_ARG_SHIFT] = mem(wMd, a.bias.data);
    execute(ctx, p, args);
    if (a.inv_std_var.present)
      for (int64_t i = 0; i < rows; ++i)
        a.inv_std_var.f()[i] = 1.0f / std::sqrt(var[i] + epsilon);
    return ok();
  });
}

int32_t run(comet_rt_context *ctx, const layer_norm_grad_args &a) {
  const char *op = "layer_norm_grad";
  const Tensor &x = a.x;
  int64_t axis = normAxis(a.axis, x.rank());
  int64_t rows = product(x.dims, 0, axis),
          cols = product(x.dims, axis, x.dims.size());
  if (x.numel() == 0) {
    for (const Tensor *t : {&a.dscale, &a.dbias})
      if (t->present)
        std::fill(t->f(), t->f() + cols, 0.0f);
    return ok();
  }
  float epsilon = a.epsilon;
  return guard(op, [&] {
    // oneDNN takes the variance: var = 1 / inv^2 - epsilon, which it turns
    // back into the same 1 / sqrt(var + epsilon) up to rounding.
    // oneDNN's backward with use_shift also reads a shift, which dX does not
    // depend on: zeros.
    Scratch tmp(ctx, sizeof(float) * (rows + 3 * cols));
    float *var = tmp.f(), *dscP = var + rows, *dbP = dscP + cols,
          *shift = dbP + cols;
    std::fill(shift, shift + cols, 0.0f);
    const float *inv = a.inv_std_var.f();
    for (int64_t i = 0; i < rows; ++i)
      var[i] = 1.0f / (inv[i] * inv[i]) - epsilon;
    memory::desc dMd({rows, cols}, f32, tag::ab);
    memory::desc sMd({rows}, f32, tag::a);
    memory::desc wMd({cols}, f32, tag::a);
    Primitive p = getPrimitive(key(op, {rows, cols, bitsOf(epsilon)}), [&] {
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
             {DNNL_ARG_MEAN, mem(sMd, a.mean.data)},
             {DNNL_ARG_VARIANCE, mem(sMd, var)},
             {DNNL_ARG_DIFF_DST, mem(dMd, a.dy.data)},
             {DNNL_ARG_SCALE, mem(wMd, a.scale.data)},
             {DNNL_ARG_SHIFT, mem(wMd, shift)},
             {DNNL_ARG_DIFF_SRC, mem(dMd, a.dx.data)},
             {DNNL_ARG_DIFF_SCALE, mem(wMd, dscP)},
             {DNNL_ARG_DIFF_SHIFT, mem(wMd, dbP)}});
    if (a.dscale.present)
      std::memcpy(a.dscale.data, dscP, sizeof(float) * cols);
    if (a.dbias.present)
      std::memcpy(a.dbias.data, dbP, sizeof(float) * cols);
    return ok();
  });
}

} // namespace comet::rt::cpu
