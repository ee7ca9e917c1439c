//===- Optim.cpp - Gradient accumulation and optimizer updates ------------===//
//
// InPlaceAccumulatorV2, AdamWOptimizer (PyTorch and Hugging Face modes),
// SGDOptimizerV2 and the built-in SGD with momentum; all in place.
//
//===----------------------------------------------------------------------===//
#include "Cpu.h"

#include <cmath>
#include <cstring>

namespace comet::rt::cpu {

namespace {

bool flag(const Tensor &t, bool dflt) {
  return t.present ? *t.as<const uint8_t>() != 0 : dflt;
}

void setFlag(const Tensor &t, bool v) {
  if (t.present)
    *t.as<uint8_t>() = v ? 1 : 0;
}

} // namespace

int32_t run(comet_rt_context *, const inplace_accumulator_v2_args &a) {
  const Tensor &buf = a.buffer,
               &out = a.buffer_out.present ? a.buffer_out : a.buffer;
  bool overwrite = flag(a.overwrite, false);
  const float *b = buf.f(), *v = a.value.f();
  float *o = out.f();
  int64_t n = buf.numel();
  if (overwrite) {
    if (o != v)
      std::memmove(o, v, sizeof(float) * n);
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i)
      o[i] = b[i] + v[i];
  }
  // Keep the buffer itself updated too when a separate output is given,
  // as ORT aliases buffer_out to buffer.
  if (o != b)
    std::memcpy(buf.f(), o, sizeof(float) * n);
  setFlag(a.updated, true);
  return ok();
}

int32_t run(comet_rt_context *, const adamw_args &a) {
  float lr = a.lr.f()[0];
  if (!flag(a.update_signal, true)) {
    setFlag(a.updated_flag, false);
    return ok();
  }
  int64_t step = a.step.i64()[0];
  float alpha = a.alpha, beta = a.beta, epsilon = a.epsilon,
        weightDecay = a.weight_decay;
  float alphaCorr = 1.0f, betaCorr = 1.0f, lrCorr = lr;
  if (a.correct_bias) {
    // As ORT: pow in double, then float.
    alphaCorr = 1.0f - (float)std::pow((double)alpha, (double)step);
    betaCorr = 1.0f - (float)std::pow((double)beta, (double)step);
    lrCorr = lr * (std::sqrt(betaCorr) / alphaCorr);
  }
  float *pw = a.weight.f(), *p1 = a.m1.f(), *p2 = a.m2.f();
  const float *pg = a.grad.f();
  int64_t n = a.weight.numel();
  if (a.adam_mode == 0) {
    // PyTorch AdamW: decay first, bias correction on m and v.
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      float wi = pw[i] - pw[i] * lr * weightDecay;
      float m = alpha * p1[i] + (1.0f - alpha) * pg[i];
      float v = beta * p2[i] + (1.0f - beta) * pg[i] * pg[i];
      p1[i] = m;
      p2[i] = v;
      float denom = std::sqrt(v / betaCorr) + epsilon;
      pw[i] = wi - (lr * m) / (alphaCorr * denom);
    }
  } else {
    // Hugging Face AdamW: corrected lr, decay after the update.
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      float m = alpha * p1[i] + (1.0f - alpha) * pg[i];
      float v = beta * p2[i] + (1.0f - beta) * pg[i] * pg[i];
      p1[i] = m;
      p2[i] = v;
      float wi = pw[i] - lrCorr * m / (std::sqrt(v) + epsilon);
      pw[i] = wi - lr * weightDecay * wi;
    }
  }
  setFlag(a.updated_flag, true);
  return ok();
}

int32_t run(comet_rt_context *, const sgd_v2_args &a) {
  float lr = a.lr.f()[0];
  if (!flag(a.update_signal, true)) {
    setFlag(a.update_completed, false);
    return ok();
  }
  float *pw = a.weight.f();
  const float *pg = a.grad.f();
  int64_t n = a.weight.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    pw[i] -= lr * pg[i];
  setFlag(a.update_completed, true);
  return ok();
}

int32_t run(comet_rt_context *, const sgd_momentum_args &a) {
  float lr = a.lr.f()[0], momentum = a.momentum, weightDecay = a.weight_decay;
  bool nesterov = a.nesterov != 0;
  float *pw = a.weight.f(), *pv = a.velocity.f();
  const float *pg = a.grad.f();
  int64_t n = a.weight.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float gi = pg[i] + weightDecay * pw[i];
    float vi = momentum * pv[i] + gi;
    pv[i] = vi;
    pw[i] -= lr * (nesterov ? gi + momentum * vi : vi);
  }
  return ok();
}

} // namespace comet::rt::cpu
