//===- Random.cpp - The context's random stream and Dropout ---------------===//
//
// Dropout draws from a counter-based stream: element i of a call that
// reserved counters [base, base + n) gets splitmix64(seed, base + i). A
// call's numbers do not depend on the thread count, and two engines (two
// contexts) never share a stream.
//
//===----------------------------------------------------------------------===//
#include "Backend.h"
#include "Context.h"
#include "Internal.h"
#include "comet/runtime/abi.h"
#include "comet/runtime/codec.h"

#include <cstring>
#include <mutex>
#include <vector>

using namespace comet::rt;

namespace {

struct RandomStream {
  std::mutex mu;
  uint64_t seed = 0;
  uint64_t next = 0;
};

/// splitmix64 of the counter, keyed by the seed.
inline uint64_t mix(uint64_t seed, uint64_t counter) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + counter + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1) with 24 random bits, exact in f32.
inline float uniform(uint64_t seed, uint64_t counter) {
  return static_cast<float>(mix(seed, counter) >> 40) * 0x1p-24f;
}

} // namespace

void comet::rt::reserveRandom(comet_rt_context *ctx, uint64_t n, uint64_t &seed,
                              uint64_t &base) {
  RandomStream &s = resolve(ctx)->state<RandomStream>();
  std::lock_guard<std::mutex> lock(s.mu);
  seed = s.seed;
  base = s.next;
  s.next += n;
}

int32_t comet::rt::dropoutParams(const char *op, comet_rt_memref *ratiom,
                                 comet_rt_memref *trainm, float &ratio,
                                 bool &training) {
  Tensor r, t;
  COMET_RT_TRY(view(ratiom, 4, "dropout ratio", r, /*optional=*/true));
  COMET_RT_TRY(view(trainm, 1, "dropout training_mode", t, true));
  ratio = 0.5f;
  if (r.present) {
    COMET_RT_CHECK(r.numel() == 1, op, ": ratio must hold one element");
    ratio = r.f()[0];
  }
  training = false;
  if (t.present) {
    COMET_RT_CHECK(t.numel() == 1, op, ": training_mode must hold one element");
    training = *t.as<uint8_t>() != 0;
  }
  COMET_RT_CHECK(ratio >= 0.0f && ratio < 1.0f, op,
                 ": ratio must lie in [0, 1), got ", std::to_string(ratio));
  return COMET_RT_SUCCESS;
}

extern "C" {

void comet_rt_context_set_seed(comet_rt_context *ctx, uint64_t seed) {
  RandomStream &s = resolve(ctx)->state<RandomStream>();
  std::lock_guard<std::mutex> lock(s.mu);
  s.seed = seed;
  s.next = 0;
}

void comet_rt_context_get_random_state(comet_rt_context *ctx, uint64_t *seed,
                                       uint64_t *counter) {
  RandomStream &s = resolve(ctx)->state<RandomStream>();
  std::lock_guard<std::mutex> lock(s.mu);
  if (seed)
    *seed = s.seed;
  if (counter)
    *counter = s.next;
}

void comet_rt_context_set_random_state(comet_rt_context *ctx, uint64_t seed,
                                       uint64_t counter) {
  RandomStream &s = resolve(ctx)->state<RandomStream>();
  std::lock_guard<std::mutex> lock(s.mu);
  s.seed = seed;
  s.next = counter;
}

int32_t comet_rt_cpu_dropout(comet_rt_context *ctx, comet_rt_memref *xm,
                             comet_rt_memref *ratiom, comet_rt_memref *trainm,
                             comet_rt_memref *ym, comet_rt_memref *maskm) {
  Tensor x, y, mask;
  COMET_RT_TRY(view(xm, 4, "dropout X", x));
  COMET_RT_TRY(view(ym, 4, "dropout Y", y));
  COMET_RT_TRY(view(maskm, 1, "dropout mask", mask, /*optional=*/true));
  float ratio;
  bool training;
  COMET_RT_TRY(dropoutParams("dropout", ratiom, trainm, ratio, training));
  COMET_RT_CHECK(x.dims == y.dims, "dropout: X ", shapeStr(x.dims), " and Y ",
                 shapeStr(y.dims), " differ");
  COMET_RT_CHECK(!mask.present || mask.dims == x.dims, "dropout: mask ",
                 shapeStr(mask.dims), " is not X's shape ", shapeStr(x.dims));
  int64_t n = x.numel();
  const float *px = x.f();
  float *py = y.f();
  uint8_t *pm = mask.present ? mask.as<uint8_t>() : nullptr;
  if (!training || ratio == 0.0f) {
    std::memmove(py, px, n * sizeof(float));
    if (pm)
      std::memset(pm, 1, n);
    return COMET_RT_SUCCESS;
  }
  uint64_t seed, base;
  reserveRandom(ctx, n, seed, base);
  float scale = 1.0f / (1.0f - ratio);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    bool keep = uniform(seed, base + i) >= ratio;
    py[i] = keep ? px[i] * scale : 0.0f;
    if (pm)
      pm[i] = keep;
  }
  return COMET_RT_SUCCESS;
}

int32_t comet_rt_cpu_dropout_grad(comet_rt_context *, comet_rt_memref *dym,
                                  comet_rt_memref *maskm,
                                  comet_rt_memref *ratiom,
                                  comet_rt_memref *trainm,
                                  comet_rt_memref *dxm) {
  Tensor dy, mask, dx;
  COMET_RT_TRY(view(dym, 4, "dropout_grad dY", dy));
  COMET_RT_TRY(view(maskm, 1, "dropout_grad mask", mask));
  COMET_RT_TRY(view(dxm, 4, "dropout_grad dX", dx));
  float ratio;
  bool training;
  COMET_RT_TRY(dropoutParams("dropout_grad", ratiom, trainm, ratio, training));
  COMET_RT_CHECK(dy.dims == dx.dims && mask.dims == dy.dims,
                 "dropout_grad: dY ", shapeStr(dy.dims), ", mask ",
                 shapeStr(mask.dims), " and dX ", shapeStr(dx.dims),
                 " must have one shape");
  int64_t n = dy.numel();
  const float *g = dy.f();
  const uint8_t *m = mask.as<uint8_t>();
  float *o = dx.f();
  if (!training) {
    std::memmove(o, g, n * sizeof(float));
    return COMET_RT_SUCCESS;
  }
  float scale = 1.0f / (1.0f - ratio);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    o[i] = m[i] ? g[i] * scale : 0.0f;
  return COMET_RT_SUCCESS;
}

} // extern "C"
