//===- OptimizerLowering.cpp - A parameter's update inside the step -------===//
//
// comet.optimizer_update becomes the call of the runtime's optimizer kernel
// of its kind (adamw, sgd_v2, sgd_momentum): the same entry, with the same
// operands, that the trainer calls per parameter after an unfused step.
//
//===----------------------------------------------------------------------===//
#include "RuntimeLowering.h"

#include "comet/Dialect/Comet/IR/CometOps.h"

using namespace mlir;
using namespace comet;
using rtabi::Fn;

namespace {

struct OptimizerUpdateLowering : OpRuntimeLoweringPattern<OptimizerUpdateOp> {
  LogicalResult lowerOp(OptimizerUpdateOp o,
                        RuntimeLowering &rt) const override {
    Value lr = rt.operand(o.getLr()), w = rt.operand(o.getWeight()),
          g = rt.operand(o.getGrad());
    SmallVector<Value> states;
    for (Value s : o.getStates())
      states.push_back(rt.operand(s));
    StringRef kind = o.getKind();
    // No update_signal (always update) and no flag out.
    if (kind == "adamw")
      return rt.call(Fn::adamw,
                     {lr, rt.operand(o.getStep()), w, g, states[0], states[1],
                      Value(), Value(), rt.f32(o.getAlpha().convertToFloat()),
                      rt.f32(o.getBeta().convertToFloat()),
                      rt.f32(o.getEpsilon().convertToFloat()),
                      rt.f32(o.getWeightDecay().convertToFloat()),
                      rt.i64(o.getAdamMode()), rt.i64(o.getCorrectBias())});
    if (kind == "sgd_v2")
      return rt.call(Fn::sgd_v2, {lr, w, g, Value(), Value()});
    return rt.call(Fn::sgd_momentum,
                   {lr, w, g, states[0],
                    rt.f32(o.getMomentum().convertToFloat()),
                    rt.f32(o.getWeightDecay().convertToFloat()), rt.i64(0)});
  }
};

} // namespace

void comet::populateOptimizerLoweringPatterns(
    RuntimeLoweringPatternSet &patterns) {
  patterns.add<OptimizerUpdateLowering>();
}
