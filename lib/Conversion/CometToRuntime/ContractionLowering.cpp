//===- ContractionLowering.cpp - FusedMatMul and ReduceMean ---------------===//
//
// The contractions and reductions that take more than their ODS operands:
// FusedMatMul (only untransposed batch dims lower) and ReduceMean (its axes
// attribute as a constant i64 memref). Gemm, MatMul and ReduceSum are one
// call each, declared in ODS (`runtimeCall`).
//
//===----------------------------------------------------------------------===//
#include "RuntimeLowering.h"

#include "comet/Dialect/ONNX/IR/ONNXOps.h"

using namespace mlir;
using namespace comet;
using namespace comet::onnx;
using rtabi::Fn;

namespace {

struct FusedMatMulLowering : OpRuntimeLoweringPattern<FusedMatMulOp> {
  LogicalResult lowerOp(FusedMatMulOp o, RuntimeLowering &rt) const override {
    if (o.getTransBatchA() || o.getTransBatchB())
      return o.emitError("comet-lower-to-runtime: FusedMatMul with "
                         "transBatchA or transBatchB is not supported");
    return rt.call(Fn::fused_matmul,
                   {rt.operand(o.getA()), rt.operand(o.getB()),
                    rt.result(o.getY()), rt.f32(o.getAlpha().convertToFloat()),
                    rt.i64(o.getTransA()), rt.i64(o.getTransB())});
  }
};

struct ReduceMeanLowering : OpRuntimeLoweringPattern<ReduceMeanOp> {
  LogicalResult lowerOp(ReduceMeanOp o, RuntimeLowering &rt) const override {
    Value axes;
    if (auto a = o.getAxes(); a && !a->empty())
      axes = rt.constMemref(*a);
    return rt.call(Fn::reduce_mean,
                   {rt.operand(o.getData()), axes, rt.result(o.getReduced()),
                    rt.i64(o.getKeepdims())});
  }
};

} // namespace

void comet::populateContractionLoweringPatterns(
    RuntimeLoweringPatternSet &patterns) {
  patterns.add<FusedMatMulLowering, ReduceMeanLowering>();
}
