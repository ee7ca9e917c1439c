//===- LossLowering.cpp - Softmax cross-entropy and its gradient ----------===//
#include "RuntimeLowering.h"

#include "comet/Dialect/ONNX/IR/ONNXOps.h"

using namespace mlir;
using namespace comet;
using namespace comet::onnx;
using rtabi::Fn;

namespace {

/// The runtime's reduction code: none 0, sum 1, mean 2.
int64_t reductionOf(StringRef r) {
  if (r == "none")
    return 0;
  if (r == "sum")
    return 1;
  return 2;
}

struct SoftmaxCrossEntropyLossLowering
    : OpRuntimeLoweringPattern<SoftmaxCrossEntropyLossOp> {
  LogicalResult lowerOp(SoftmaxCrossEntropyLossOp o,
                        RuntimeLowering &rt) const override {
    auto ii = o.getIgnoreIndex();
    return rt.call(Fn::softmax_cross_entropy_loss,
                   {rt.operand(o, 0), rt.operand(o, 1), rt.operand(o, 2),
                    rt.result(o, 0), rt.result(o, 1),
                    rt.i64(reductionOf(o.getReduction())), rt.i64(ii ? *ii : 0),
                    rt.i64(ii ? 1 : 0)});
  }
};

struct SoftmaxCrossEntropyLossGradLowering
    : OpRuntimeLoweringPattern<SoftmaxCrossEntropyLossGradOp> {
  LogicalResult lowerOp(SoftmaxCrossEntropyLossGradOp o,
                        RuntimeLowering &rt) const override {
    if (rt.operand(o.getBias()))
      return o.emitError("comet-lower-to-runtime: "
                         "SoftmaxCrossEntropyLossGrad with a bias "
                         "input is not supported");
    auto ii = o.getIgnoreIndex();
    return rt.call(Fn::softmax_cross_entropy_loss_grad,
                   {rt.operand(o, 0), rt.operand(o, 1), rt.operand(o, 2),
                    rt.operand(o, 3), rt.result(o, 0),
                    rt.i64(reductionOf(o.getReduction())), rt.i64(ii ? *ii : 0),
                    rt.i64(ii ? 1 : 0)});
  }
};

} // namespace

void comet::populateLossLoweringPatterns(RuntimeLoweringPatternSet &patterns) {
  patterns.add<SoftmaxCrossEntropyLossLowering,
               SoftmaxCrossEntropyLossGradLowering>();
}
