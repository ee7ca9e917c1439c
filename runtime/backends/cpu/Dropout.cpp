//===- Dropout.cpp - Dropout and DropoutGrad ------------------------------===//
//
// The mask comes from the context's counter-based stream (core/Random.h):
// element i keeps its value when randomUniform(seed, base + i) >= ratio.
//
//===----------------------------------------------------------------------===//
#include "Cpu.h"
#include "Random.h"
#include "Shapes.h"

#include <cstring>

namespace comet::rt::cpu {

int32_t run(comet_rt_context *ctx, const dropout_args &a) {
  float ratio = dropoutRatio(a.ratio);
  bool training = dropoutTraining(a.training_mode);
  int64_t n = a.x.numel();
  const float *px = a.x.f();
  float *py = a.y.f();
  uint8_t *pm = a.mask.present ? a.mask.as<uint8_t>() : nullptr;
  if (!training || ratio == 0.0f) {
    std::memmove(py, px, n * sizeof(float));
    if (pm)
      std::memset(pm, 1, n);
    return ok();
  }
  uint64_t seed, base;
  reserveRandom(ctx, n, seed, base);
  float scale = 1.0f / (1.0f - ratio);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    bool keep = randomUniform(seed, base + i) >= ratio;
    py[i] = keep ? px[i] * scale : 0.0f;
    if (pm)
      pm[i] = keep;
  }
  return ok();
}

int32_t run(comet_rt_context *, const dropout_grad_args &a) {
  float ratio = dropoutRatio(a.ratio);
  int64_t n = a.dy.numel();
  const float *g = a.dy.f();
  const uint8_t *m = a.mask.as<uint8_t>();
  float *o = a.dx.f();
  if (!dropoutTraining(a.training_mode)) {
    std::memmove(o, g, n * sizeof(float));
    return ok();
  }
  float scale = 1.0f / (1.0f - ratio);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    o[i] = m[i] ? g[i] * scale : 0.0f;
  return ok();
}

} // namespace comet::rt::cpu
