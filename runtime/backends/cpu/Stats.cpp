//===- Stats.cpp - The bound tuner's statistics on the CPU ----------------===//
#include "Cpu.h"
#include "SlotStats.h"

namespace comet::rt::cpu {

int32_t run(comet_rt_context *ctx, const slot_observe_act_args &a) {
  return observeAct(ctx, a);
}
int32_t run(comet_rt_context *ctx, const slot_observe_grad_args &a) {
  return observeGrad(ctx, a);
}
int32_t run(comet_rt_context *ctx, const slot_observe_max_args &a) {
  return observeMax(ctx, a);
}

} // namespace comet::rt::cpu
