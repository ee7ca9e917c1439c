/*===- comet/runtime/context.h - Per-engine runtime state -----------------===*
 *
 * A runtime context holds everything the runtime keeps between calls for
 * one training engine: the allocator's accounting and timeline, the bound of
 * every slot, the statistics of every compress site, the bound tuner's
 * observations and the random stream of Dropout. Every function of comet/runtime/abi.def takes the context as
 * its first argument, so two engines in one process never see each other's
 * bounds, statistics, memory figures or random numbers.
 *
 * NULL stands for the process's default context, for callers outside an
 * engine (a kernel called on its own, the data loader, tests).
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_CONTEXT_H
#define COMET_RUNTIME_CONTEXT_H

#include "comet/runtime/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct comet_rt_context comet_rt_context;

/* A new, empty context; NULL when out of memory. */
COMET_RT_API comet_rt_context *comet_rt_context_create(void);

/* Releases the caller's reference. Blocks still allocated from the context
 * keep it alive until they are freed, so freeing them later stays valid. */
COMET_RT_API void comet_rt_context_destroy(comet_rt_context *ctx);

/* The process's default context (what NULL stands for). */
COMET_RT_API comet_rt_context *comet_rt_default_context(void);

/* Restarts the context's random stream (Dropout) at `seed`. A new context
 * starts at seed 0. The stream is counter-based: the same seed and the same
 * sequence of calls give the same numbers on any thread count. */
COMET_RT_API void comet_rt_context_set_seed(comet_rt_context *ctx,
                                            uint64_t seed);

/* The random stream's seed and counter: the numbers drawn since the seed
 * was set. */
COMET_RT_API void comet_rt_context_get_random_state(comet_rt_context *ctx,
                                                    uint64_t *seed,
                                                    uint64_t *counter);

/* Continues the stream of `seed` at `counter`, so that a run resumed from
 * a checkpoint draws the numbers it would have drawn. */
COMET_RT_API void comet_rt_context_set_random_state(comet_rt_context *ctx,
                                                    uint64_t seed,
                                                    uint64_t counter);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_CONTEXT_H */
