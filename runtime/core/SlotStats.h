//===- SlotStats.h - The tuner's observations (not installed) -------------===//
//
// What a backend's slot_observe_* entries call (comet/runtime/slot_stats.h):
// the reductions run on the host over the tensor, copied from a device
// when the context is on one, and only while collection is on.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_CORE_SLOTSTATS_H
#define COMET_RUNTIME_CORE_SLOTSTATS_H

#include "Contract.h"

namespace comet::rt {

int32_t observeAct(comet_rt_context *ctx, const slot_observe_act_args &a);
int32_t observeGrad(comet_rt_context *ctx, const slot_observe_grad_args &a);
int32_t observeMax(comet_rt_context *ctx, const slot_observe_max_args &a);

} // namespace comet::rt

#endif // COMET_RUNTIME_CORE_SLOTSTATS_H
