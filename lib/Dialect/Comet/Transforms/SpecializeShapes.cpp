//===- SpecializeShapes.cpp - Give every dynamic dimension its size -------===//
//
// Training graphs exported with a dynamic batch have `?` dims. Before the
// liveness analysis sizes values (for the compression policy, the bounds'
// term counts and the memory prediction) and before the lowering allocates
// buffers, every dim must be a number. A `?` is not always the batch: in
// attention it is heads x batch or tokens x batch. So the arguments take
// the batch, and each op then takes the static type that its type
// inference gives from its already specialized operands; only where
// inference gives none does `?` fall back to the batch. An argument that a
// loss reads as labels holds one label per row of the scores (batch x
// tokens for a language model), so it takes the scores' dims without the
// class dim instead, when the walk reaches the loss.
//
//===----------------------------------------------------------------------===//
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace comet {
#define GEN_PASS_DEF_COMETSPECIALIZESHAPES
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"
} // namespace comet

using namespace mlir;
using namespace comet;

namespace {

/// Replaces every dynamic dim by `batch`.
Type withBatch(Type t, int64_t batch) {
  auto fix = [&](RankedTensorType rt) {
    if (rt.hasStaticShape())
      return rt;
    SmallVector<int64_t> shape(rt.getShape());
    for (int64_t &d : shape)
      if (ShapedType::isDynamic(d))
        d = batch;
    return RankedTensorType::get(shape, rt.getElementType(), rt.getEncoding());
  };
  if (auto rt = dyn_cast<RankedTensorType>(t))
    return fix(rt);
  if (auto ct = dyn_cast<CompressedType>(t))
    return CompressedType::get(t.getContext(), fix(ct.getTensorType()),
                               ct.getCodec());
  return t;
}

/// The type of the labels of a loss whose scores have type `scores`: the
/// scores' dims without the class dim (dim 1). Null when the scores are not
/// static or the labels' own rank or static dims disagree.
RankedTensorType labelsTypeFor(Type scores, Type labels) {
  auto st = dyn_cast<RankedTensorType>(scores);
  auto lt = dyn_cast<RankedTensorType>(labels);
  if (!st || !lt || !st.hasStaticShape() || st.getRank() < 2 ||
      lt.getRank() != st.getRank() - 1)
    return {};
  SmallVector<int64_t> dims(st.getShape());
  dims.erase(dims.begin() + 1);
  for (auto [want, have] : llvm::zip(dims, lt.getShape()))
    if (!ShapedType::isDynamic(have) && have != want)
      return {};
  return RankedTensorType::get(dims, lt.getElementType(), lt.getEncoding());
}

/// The static type `op`'s inference gives result `i`, if any; compress and
/// decompress carry their operand's shape.
SmallVector<Type> inferredTypes(Operation *op) {
  SmallVector<Type> out(op->getNumResults());
  if (auto c = dyn_cast<CompressOp>(op)) {
    if (auto t = dyn_cast<RankedTensorType>(c.getInput().getType());
        t && t.hasStaticShape())
      out[0] = CompressedType::get(op->getContext(), t, c.getCodec());
    return out;
  }
  if (auto d = dyn_cast<DecompressOp>(op)) {
    if (auto ct = dyn_cast<CompressedType>(d.getInput().getType());
        ct && ct.getTensorType().hasStaticShape())
      out[0] = ct.getTensorType();
    return out;
  }
  // Inference relies on the verifier, which has not seen the specialized
  // operands. An op that no longer verifies keeps `?` here, and the
  // verifier after the pass reports it once.
  SmallVector<Type> inferred;
  {
    ScopedDiagnosticHandler quiet(op->getContext(),
                                  [](Diagnostic &) { return success(); });
    if (failed(onnx::inferVerifiedResultTypes(op, inferred)) ||
        inferred.size() != op->getNumResults())
      return out;
  }
  for (auto [i, t] : llvm::enumerate(inferred))
    if (auto rt = dyn_cast_or_null<RankedTensorType>(t);
        rt && rt.hasStaticShape())
      out[i] = rt;
  return out;
}

struct SpecializeShapesPass
    : public comet::impl::CometSpecializeShapesBase<SpecializeShapesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (batchSize <= 0) {
      getOperation().emitError("comet-specialize-shapes: batch-size must be "
                               "positive, got ")
          << static_cast<int64_t>(batchSize);
      return signalPassFailure();
    }
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      ShapeSpecialization s = specializeShapes(f, batchSize);
      numInferred += s.inferred;
      numBatch += s.batch;
    }
  }
};

} // namespace

bool comet::hasDynamicDim(Type t) {
  if (auto rt = dyn_cast<RankedTensorType>(t))
    return !rt.hasStaticShape();
  if (auto ct = dyn_cast<CompressedType>(t))
    return !ct.getTensorType().hasStaticShape();
  return isa<UnrankedTensorType>(t);
}

ShapeSpecialization comet::specializeShapes(func::FuncOp f, int64_t batch) {
  ShapeSpecialization s;
  auto fallback = [&](Value v) {
    if (!hasDynamicDim(v.getType()))
      return;
    v.setType(withBatch(v.getType(), batch));
    ++s.batch;
  };
  // Arguments read as labels wait for their loss's scores.
  llvm::SmallPtrSet<Value, 2> labels;
  f.walk([&](Operation *op) {
    if (auto sl = onnx::getLossScoresAndLabels(op);
        sl && isa<BlockArgument>(sl->second) &&
        sl->second.getParentRegion() == &f.getBody())
      labels.insert(sl->second);
  });
  for (BlockArgument a : f.getArguments())
    if (!labels.contains(a))
      fallback(a);
  // In program order, so each op sees its operands' specialized types.
  f.walk([&](Operation *op) {
    if (auto sl = onnx::getLossScoresAndLabels(op);
        sl && labels.contains(sl->second) &&
        hasDynamicDim(sl->second.getType()))
      if (RankedTensorType t =
              labelsTypeFor(sl->first.getType(), sl->second.getType())) {
        sl->second.setType(t);
        ++s.inferred;
      }
    if (llvm::none_of(op->getResultTypes(), hasDynamicDim))
      return;
    for (auto [r, t] : llvm::zip(op->getResults(), inferredTypes(op))) {
      if (!hasDynamicDim(r.getType()))
        continue;
      if (t) {
        r.setType(t);
        ++s.inferred;
      } else {
        fallback(r);
      }
    }
  });
  // Labels whose loss gave them no type take the batch.
  for (Value a : labels)
    fallback(a);
  // A result takes its returned value's type (an attention mask's rows are
  // heads x batch), else the batch.
  SmallVector<Type> ins(f.getBody().getArgumentTypes()), outs;
  Operation *ret = f.getBody().front().getTerminator();
  for (auto [i, t] : llvm::enumerate(f.getResultTypes())) {
    Type rt = ret->getOperand(i).getType();
    outs.push_back(hasDynamicDim(rt) ? withBatch(t, batch) : rt);
  }
  f.setFunctionType(FunctionType::get(f.getContext(), ins, outs));
  return s;
}
