//===- Optim.cu - Gradient accumulation and optimizer updates -------------===//
//
// InPlaceAccumulatorV2, AdamWOptimizer, SGDOptimizerV2 and the built-in SGD
// with momentum, in place. The learning rate, the step and the flags stay
// on the device: the kernels read them there.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

__device__ bool flagOf(const uint8_t *f, bool dflt) {
  return f ? *f != 0 : dflt;
}

__global__ void accumulateK(float *buf, const float *v, const uint8_t *ow,
                            uint8_t *updated, float *out, int64_t n) {
  bool overwrite = flagOf(ow, false);
  GRID_STRIDE(i, n) {
    float o = overwrite ? v[i] : buf[i] + v[i];
    out[i] = o;
    if (out != buf)
      buf[i] = o;
  }
  if (updated && blockIdx.x == 0 && threadIdx.x == 0)
    *updated = 1;
}

__global__ void adamwK(const float *lr, const int64_t *step, float *w,
                       const float *g, float *m1, float *m2,
                       const uint8_t *signal, uint8_t *flag, int64_t n,
                       float alpha, float beta, float eps, float decay,
                       int mode, int correctBias) {
  bool go = flagOf(signal, true);
  if (flag && blockIdx.x == 0 && threadIdx.x == 0)
    *flag = go ? 1 : 0;
  if (!go)
    return;
  float l = *lr;
  float alphaCorr = 1.0f, betaCorr = 1.0f, lrCorr = l;
  if (correctBias) {
    // As ORT: pow in double, then float.
    alphaCorr = 1.0f - (float)pow((double)alpha, (double)*step);
    betaCorr = 1.0f - (float)pow((double)beta, (double)*step);
    lrCorr = l * (sqrtf(betaCorr) / alphaCorr);
  }
  GRID_STRIDE(i, n) {
    float gi = g[i];
    float a = alpha * m1[i] + (1.0f - alpha) * gi;
    float b = beta * m2[i] + (1.0f - beta) * gi * gi;
    m1[i] = a;
    m2[i] = b;
    if (mode == 0) {
      float wi = w[i] - w[i] * l * decay;
      float denom = sqrtf(b / betaCorr) + eps;
      w[i] = wi - (l * a) / (alphaCorr * denom);
    } else {
      float wi = w[i] - lrCorr * a / (sqrtf(b) + eps);
      w[i] = wi - l * decay * wi;
    }
  }
}

__global__ void sgdK(const float *lr, float *w, const float *g,
                     const uint8_t *signal, uint8_t *flag, int64_t n) {
  bool go = flagOf(signal, true);
  if (flag && blockIdx.x == 0 && threadIdx.x == 0)
    *flag = go ? 1 : 0;
  if (!go)
    return;
  float l = *lr;
  GRID_STRIDE(i, n) w[i] -= l * g[i];
}

__global__ void sgdMomentumK(const float *lr, float *w, const float *g,
                             float *v, int64_t n, float momentum, float decay,
                             int nesterov) {
  float l = *lr;
  GRID_STRIDE(i, n) {
    float gi = g[i] + decay * w[i];
    float vi = momentum * v[i] + gi;
    v[i] = vi;
    w[i] -= l * (nesterov ? gi + momentum * vi : vi);
  }
}

template <typename T> T *opt(const Tensor &t) {
  return t.present ? t.as<T>() : nullptr;
}

} // namespace

int32_t run(comet_rt_context *ctx, const inplace_accumulator_v2_args &a) {
  const Tensor &out = a.buffer_out.present ? a.buffer_out : a.buffer;
  accumulateK<<<gridFor(a.buffer.numel()), kThreads, 0, streamOf(ctx)>>>(
      a.buffer.f(), a.value.f(), opt<const uint8_t>(a.overwrite),
      opt<uint8_t>(a.updated), out.f(), a.buffer.numel());
  LAUNCHED("inplace_accumulator_v2");
  return ok();
}

int32_t run(comet_rt_context *ctx, const adamw_args &a) {
  adamwK<<<gridFor(a.weight.numel()), kThreads, 0, streamOf(ctx)>>>(
      a.lr.f(), a.step.i64(), a.weight.f(), a.grad.f(), a.m1.f(), a.m2.f(),
      opt<const uint8_t>(a.update_signal), opt<uint8_t>(a.updated_flag),
      a.weight.numel(), a.alpha, a.beta, a.epsilon, a.weight_decay,
      static_cast<int>(a.adam_mode), static_cast<int>(a.correct_bias));
  LAUNCHED("adamw");
  return ok();
}

int32_t run(comet_rt_context *ctx, const sgd_v2_args &a) {
  sgdK<<<gridFor(a.weight.numel()), kThreads, 0, streamOf(ctx)>>>(
      a.lr.f(), a.weight.f(), a.grad.f(), opt<const uint8_t>(a.update_signal),
      opt<uint8_t>(a.update_completed), a.weight.numel());
  LAUNCHED("sgd_v2");
  return ok();
}

int32_t run(comet_rt_context *ctx, const sgd_momentum_args &a) {
  if (a.weight.numel() == 0)
    return ok();
  sgdMomentumK<<<gridFor(a.weight.numel()), kThreads, 0, streamOf(ctx)>>>(
      a.lr.f(), a.weight.f(), a.grad.f(), a.velocity.f(), a.weight.numel(),
      a.momentum, a.weight_decay, a.nesterov != 0);
  LAUNCHED("sgd_momentum");
  return ok();
}

} // namespace comet::rt::cuda
