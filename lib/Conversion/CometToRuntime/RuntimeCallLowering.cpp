//===- RuntimeCallLowering.cpp - The ops that name their runtime call -----===//
//
// An op whose lowering is one runtime call in abi.def's order (its inputs,
// its outputs, then its attributes as scalars) names that call in its ODS
// definition: `let runtimeCall = "sigmoid";`. comet-tblgen
// -gen-onnx-runtime-calls writes one lowerRuntimeCall per such op, which
// checks its arguments against abi.def at compile time, and the list of
// those ops; one pattern template lowers them all. Adding such an op needs
// no C++ here.
//
//===----------------------------------------------------------------------===//
#include "RuntimeLowering.h"

#include "comet/Dialect/ONNX/IR/ONNXOps.h"

using namespace mlir;
using namespace comet;

namespace {

#define GEN_ONNX_RUNTIME_CALLS
#include "ONNXRuntimeCalls.inc"

template <typename OpTy>
struct RuntimeCallLowering : OpRuntimeLoweringPattern<OpTy> {
  LogicalResult lowerOp(OpTy op, RuntimeLowering &rt) const override {
    return lowerRuntimeCall(op, rt);
  }
};

template <typename... Ops>
void addRuntimeCalls(RuntimeLoweringPatternSet &patterns) {
  patterns.add<RuntimeCallLowering<Ops>...>();
}

} // namespace

void comet::populateRuntimeCallLoweringPatterns(
    RuntimeLoweringPatternSet &patterns) {
  addRuntimeCalls<
#define GEN_ONNX_RUNTIME_CALL_OPS
#include "ONNXRuntimeCalls.inc"
      >(patterns);
}
