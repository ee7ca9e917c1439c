//===- NormalizationLowering.cpp - Batch and layer normalization ----------===//
//
// BatchNormInternal (the training form, with saved statistics),
// BatchNormalization (eval graphs) and LayerNormalization. Their gradients
// are one call each, declared in ODS (`runtimeCall`). comet.batch_norm_apply
// (a BatchNorm output recomputed in the backward) is batch_norm_apply.
//
//===----------------------------------------------------------------------===//
#include "RuntimeLowering.h"

#include "comet/Dialect/Comet/IR/CometOps.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"
#include "comet/runtime/abi.h"

using namespace mlir;
using namespace comet;
using namespace comet::onnx;
using rtabi::Fn;

namespace {

struct BatchNormInternalLowering
    : OpRuntimeLoweringPattern<BatchNormInternalOp> {
  LogicalResult lowerOp(BatchNormInternalOp o,
                        RuntimeLowering &rt) const override {
    // ORT's training artifacts do not return the updated running
    // statistics, so they would be dropped and evaluation would normalise
    // with the initial 0 and 1 forever. As the frameworks do, update them
    // in place when they come from an argument and the new values are used
    // nowhere else (the kernel is elementwise, so the aliasing is safe).
    for (unsigned i : {1u, 2u}) {
      Value result = o->getResult(i), input = o->getOperand(i + 2);
      if (result.use_empty() && !isa<NoneType>(result.getType()) &&
          isa<BlockArgument>(input) && !rt.hasBuffer(result))
        rt.bind(result, rt.operand(input));
    }
    SmallVector<Value> args;
    for (unsigned i = 0; i < 5; ++i)
      args.push_back(rt.operand(o, i));
    for (unsigned i = 0; i < 5; ++i)
      args.push_back(rt.result(o, i));
    args.append({rt.f32(o.getEpsilon().convertToFloat()),
                 rt.f32(o.getMomentum().convertToFloat()),
                 rt.i64(o.getTrainingMode())});
    return rt.call(Fn::batch_norm_internal, args);
  }
};

/// Eval graphs: batch_norm_internal without the saved statistics.
struct BatchNormalizationLowering
    : OpRuntimeLoweringPattern<BatchNormalizationOp> {
  LogicalResult lowerOp(BatchNormalizationOp o,
                        RuntimeLowering &rt) const override {
    SmallVector<Value> args;
    for (unsigned i = 0; i < 5; ++i)
      args.push_back(rt.operand(o, i));
    for (unsigned i = 0; i < 3; ++i)
      args.push_back(rt.result(o, i));
    args.append({Value(), Value(), rt.f32(o.getEpsilon().convertToFloat()),
                 rt.f32(o.getMomentum().convertToFloat()),
                 rt.i64(o.getTrainingMode())});
    return rt.call(Fn::batch_norm_internal, args);
  }
};

struct BatchNormApplyLowering : OpRuntimeLoweringPattern<BatchNormApplyOp> {
  LogicalResult lowerOp(BatchNormApplyOp o,
                        RuntimeLowering &rt) const override {
    int64_t act = llvm::StringSwitch<int64_t>(o.getActivation())
                      .Case("relu", COMET_RT_BN_ACT_RELU)
                      .Case("clip", COMET_RT_BN_ACT_CLIP)
                      .Default(COMET_RT_BN_ACT_NONE);
    SmallVector<Value> args;
    for (unsigned i = 0; i < 5; ++i)
      args.push_back(rt.operand(o, i));
    args.append({rt.result(o, 0), rt.i64(act),
                 rt.f32(o.getLo().convertToFloat()),
                 rt.f32(o.getHi().convertToFloat())});
    return rt.call(Fn::batch_norm_apply, args);
  }
};

struct LayerNormalizationLowering
    : OpRuntimeLoweringPattern<LayerNormalizationOp> {
  LogicalResult lowerOp(LayerNormalizationOp o,
                        RuntimeLowering &rt) const override {
    if (o.getStashType() != 1)
      return o.emitError("comet-lower-to-runtime: LayerNormalization "
                         "with stash_type ")
             << o.getStashType() << " is not supported (only 1, float)";
    return rt.call(Fn::layer_norm,
                   {rt.operand(o, 0), rt.operand(o, 1), rt.operand(o, 2),
                    rt.result(o, 0), rt.result(o, 1), rt.result(o, 2),
                    rt.i64(o.getAxis()),
                    rt.f32(o.getEpsilon().convertToFloat())});
  }
};

} // namespace

void comet::populateNormalizationLoweringPatterns(
    RuntimeLoweringPatternSet &patterns) {
  patterns.add<BatchNormInternalLowering, BatchNormalizationLowering,
               BatchNormApplyLowering, LayerNormalizationLowering>();
}
