//===- CompressionLowering.cpp - Compressed activations and mask readers --===//
//
// comet.compress becomes a handle owned by the runtime, comet.decompress a
// buffer, or nothing where ActivationLiveness fuses it into its readers:
// ReluGrad and DropoutGrad then read the mask's bits from the handle
// (relu_grad_mask, dropout_grad_mask).
//
//===----------------------------------------------------------------------===//
#include "RuntimeLowering.h"

#include "comet/Dialect/Comet/IR/CometOps.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace comet;
using rtabi::Fn;

namespace {

struct CompressLowering : OpRuntimeLoweringPattern<CompressOp> {
  LogicalResult lowerOp(CompressOp o, RuntimeLowering &rt) const override {
    Value input = rt.operand(o.getInput());
    auto mt = cast<MemRefType>(input.getType());
    bool isBool = mt.getElementType().isInteger(1);
    if (isBool && o.getCodec() != Codec::mask)
      return o.emitError("comet-lower-to-runtime: a bool tensor can "
                         "only be compressed as a mask");
    if (!isBool && !mt.getElementType().isF32())
      return o.emitError("comet-lower-to-runtime: only f32 and bool "
                         "tensors can be compressed");
    int64_t slot = -1;
    double eb = 0;
    if (auto bound = o.getBound()) {
      eb = bound->getAbsValue();
      if (auto s = bound->getSlot())
        slot = *s;
    }
    if (slot >= 0 && o->hasAttr(CometDialect::kTuneAttrName) &&
        rt.callsTunerStatistics() &&
        failed(rt.call(Fn::slot_observe_act, {input, rt.i64(slot), rt.i64(0)})))
      return failure();
    int64_t site = rt.nextCompressSite();
    func::CallOp c =
        isBool ? rt.emitCall(Fn::compress_i1, {input, rt.i64(site)})
               : rt.emitCall(Fn::compress,
                             {input, rt.i32(static_cast<int32_t>(o.getCodec())),
                              rt.i64(slot), rt.f64(eb), rt.i64(site)});
    if (!c)
      return failure();
    Value h = c.getResult(0);
    if (rt.checksErrors()) {
      // A null handle is a failure; its message is in
      // comet_rt_handles_last_error().
      OpBuilder &b = rt.builder();
      Value ok = arith::CmpIOp::create(b, rt.loc(), arith::CmpIPredicate::ne, h,
                                       rt.i64(0));
      Value rc = arith::SelectOp::create(b, rt.loc(), ok, rt.i32(0), rt.i32(1));
      rt.check(rc);
    }
    rt.bind(o.getResult(), h, /*owned=*/true);
    return success();
  }
};

struct DecompressLowering : OpRuntimeLoweringPattern<DecompressOp> {
  LogicalResult lowerOp(DecompressOp o, RuntimeLowering &rt) const override {
    Value h = rt.operand(o.getInput());
    if (!h)
      return o.emitError("comet-lower-to-runtime: decompress of an "
                         "unknown handle");
    // Fused into its mask readers: no tensor, no call here; the analysis
    // keeps the handle live until the last of them.
    if (rt.liveness().isFusedMaskDecompress(o.getResult())) {
      rt.setFusedMaskHandle(o.getResult(), h);
      return success();
    }
    if (!cast<ShapedType>(o.getResult().getType()).getElementType().isF32())
      return o.emitError("comet-lower-to-runtime: only f32 tensors can "
                         "be decompressed into a buffer (a bool mask "
                         "must be read by DropoutGrad alone)");
    return rt.call(Fn::decompress, {h, rt.result(o.getResult())});
  }
};

struct ReluGradLowering : OpRuntimeLoweringPattern<onnx::ReluGradOp> {
  LogicalResult lowerOp(onnx::ReluGradOp o,
                        RuntimeLowering &rt) const override {
    // X from a fused mask decompress: read the bits from the handle.
    if (Value h = rt.fusedMaskHandle(o.getX()))
      return rt.call(Fn::relu_grad_mask,
                     {rt.operand(o.getDY()), h, rt.result(o.getDX())});
    return rt.call(Fn::relu_grad, {rt.operand(o.getDY()), rt.operand(o.getX()),
                                   rt.result(o.getDX())});
  }
};

struct DropoutGradLowering : OpRuntimeLoweringPattern<onnx::DropoutGradOp> {
  LogicalResult lowerOp(onnx::DropoutGradOp o,
                        RuntimeLowering &rt) const override {
    // The mask from a fused mask decompress: read its bits.
    Value mask = rt.fusedMaskHandle(o.getMask());
    return rt.call(mask ? Fn::dropout_grad_mask : Fn::dropout_grad,
                   {rt.operand(o.getDY()),
                    mask ? mask : rt.operand(o.getMask()),
                    rt.operand(o.getRatio()), rt.operand(o.getTrainingMode()),
                    rt.result(o.getDX())});
  }
};

} // namespace

void comet::populateCompressionLoweringPatterns(
    RuntimeLoweringPatternSet &patterns) {
  patterns.add<CompressLowering, DecompressLowering, ReluGradLowering,
               DropoutGradLowering>();
}
