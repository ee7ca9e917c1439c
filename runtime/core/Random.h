//===- Random.h - The context's random stream (not installed) -------------===//
//===//
//
// Dropout draws from a counter-based stream: element i of a call that
// reserved counters [base, base + n) gets uniform(seed, base + i). A
// call's numbers depend neither on the thread count nor on the device: the
// CPU and CUDA backends evaluate the same functions (this header compiles
// as host and device code), so their masks match bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_CORE_RANDOM_H
#define COMET_RUNTIME_CORE_RANDOM_H

#include "comet/runtime/context.h"

#include <cstdint>

#ifdef __CUDACC__
#define COMET_RT_HOST_DEVICE __host__ __device__
#else
#define COMET_RT_HOST_DEVICE
#endif

namespace comet::rt {

/// splitmix64 of the counter, keyed by the seed.
COMET_RT_HOST_DEVICE inline uint64_t randomBits(uint64_t seed,
                                                uint64_t counter) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + counter + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1) with 24 random bits, exact in f32.
COMET_RT_HOST_DEVICE inline float randomUniform(uint64_t seed,
                                                uint64_t counter) {
  return static_cast<float>(randomBits(seed, counter) >> 40) *
         (1.0f / 16777216.0f);
}

/// Reserves n numbers of ctx's stream: its seed and the first counter of
/// the reservation.
void reserveRandom(comet_rt_context *ctx, uint64_t n, uint64_t &seed,
                   uint64_t &base);

} // namespace comet::rt

#endif // COMET_RUNTIME_CORE_RANDOM_H
