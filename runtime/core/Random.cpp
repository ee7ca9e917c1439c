//===- Random.cpp - The context's random stream ---------------------------===//
//
// Each context has its own stream (comet_rt_context_set_seed), so two
// engines never share one; a checkpoint saves and restores its seed and
// counter (comet_rt_context_get/set_random_state). Random.h has the
// numbers themselves.
//
//===----------------------------------------------------------------------===//
#include "Random.h"
#include "Context.h"

#include <mutex>

using namespace comet::rt;

namespace {

struct RandomStream {
  std::mutex mu;
  uint64_t seed = 0;
  uint64_t next = 0;
};

} // namespace

void comet::rt::reserveRandom(comet_rt_context *ctx, uint64_t n, uint64_t &seed,
                              uint64_t &base) {
  RandomStream &s = resolve(ctx)->state<RandomStream>();
  std::lock_guard<std::mutex> lock(s.mu);
  seed = s.seed;
  base = s.next;
  s.next += n;
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

} // extern "C"
