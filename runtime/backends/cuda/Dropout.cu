//===- Dropout.cu - Dropout and DropoutGrad -------------------------------===//
//
// The mask comes from the context's counter-based stream (core/Random.h),
// evaluated per element on the device: element i keeps its value when
// randomUniform(seed, base + i) >= ratio, the counters reserved on the
// host exactly as the CPU backend reserves them, so both devices draw the
// same mask bit for bit. The ratio and training mode are PARAM operands:
// read on the host.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"
#include "Random.h"

namespace comet::rt::cuda {
namespace {

__global__ void dropoutK(const float *x, float *y, uint8_t *mask, int64_t n,
                         uint64_t seed, uint64_t base, float ratio,
                         float scale) {
  GRID_STRIDE(i, n) {
    bool keep = randomUniform(seed, base + i) >= ratio;
    y[i] = keep ? x[i] * scale : 0.0f;
    if (mask)
      mask[i] = keep;
  }
}

__global__ void dropoutGradK(const float *dy, const uint8_t *mask, float *dx,
                             int64_t n, float scale) {
  GRID_STRIDE(i, n) dx[i] = mask[i] ? dy[i] * scale : 0.0f;
}

} // namespace

int32_t run(comet_rt_context *ctx, const dropout_args &a) {
  const char *op = "dropout";
  float ratio = dropoutRatio(a.ratio);
  bool training = dropoutTraining(a.training_mode);
  int64_t n = a.x.numel();
  uint8_t *mask = a.mask.present ? a.mask.as<uint8_t>() : nullptr;
  if (!training || ratio == 0.0f) {
    COMET_RT_TRY(copyAsync(ctx, op, a.y.data, a.x.data, a.x.bytes()));
    if (mask && n)
      CU_TRY(op, cudaMemsetAsync(mask, 1, n, streamOf(ctx)));
    return ok();
  }
  uint64_t seed, base;
  reserveRandom(ctx, n, seed, base);
  if (n == 0)
    return ok();
  dropoutK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.x.f(), a.y.f(), mask, n, seed, base, ratio, 1.0f / (1.0f - ratio));
  LAUNCHED(op);
  return ok();
}

int32_t run(comet_rt_context *ctx, const dropout_grad_args &a) {
  const char *op = "dropout_grad";
  int64_t n = a.dy.numel();
  if (!dropoutTraining(a.training_mode)) {
    COMET_RT_TRY(copyAsync(ctx, op, a.dx.data, a.dy.data, a.dy.bytes()));
    return ok();
  }
  if (n == 0)
    return ok();
  dropoutGradK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.dy.f(), a.mask.as<uint8_t>(), a.dx.f(), n,
      1.0f / (1.0f - dropoutRatio(a.ratio)));
  LAUNCHED(op);
  return ok();
}

} // namespace comet::rt::cuda
