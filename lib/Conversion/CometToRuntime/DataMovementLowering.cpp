//===- DataMovementLowering.cpp - Layout, gathers, joins and splits -------===//
//
// Transpose, Squeeze, Unsqueeze, Pad, Gather, GatherGrad, Concat,
// ConcatTraining, Split and SplitTraining: copies that move elements, with
// their attributes as constant i64 memrefs or offsets. An i64 result that
// is a constant once shapes are static (a shape entry, a shape built by
// Concat) folds to one.
//
//===----------------------------------------------------------------------===//
#include "RuntimeLowering.h"

#include "comet/Dialect/ONNX/IR/ONNXOps.h"

using namespace mlir;
using namespace comet;
using namespace comet::onnx;
using rtabi::Fn;

namespace {

struct TransposeLowering : OpRuntimeLoweringPattern<TransposeOp> {
  LogicalResult lowerOp(TransposeOp o, RuntimeLowering &rt) const override {
    int64_t r = cast<RankedTensorType>(o.getData().getType()).getRank();
    SmallVector<int64_t> perm;
    if (auto p = o.getPerm())
      perm.assign(p->begin(), p->end());
    else
      for (int64_t i = r - 1; i >= 0; --i)
        perm.push_back(i);
    return rt.call(Fn::transpose,
                   {rt.operand(o.getData()), rt.result(o.getTransposed()),
                    rt.constMemref(perm)});
  }
};

/// Squeeze and Unsqueeze: same elements, new dims, so a copy.
template <typename OpTy>
struct ReshapeCopyLowering : OpRuntimeLoweringPattern<OpTy> {
  LogicalResult lowerOp(OpTy o, RuntimeLowering &rt) const override {
    auto t = cast<RankedTensorType>(o->getOperand(0).getType());
    if (t.getElementType().isF32())
      return rt.call(Fn::identity, {rt.operand(o, 0), rt.result(o, 0)});
    if (t.getElementType().isInteger(64))
      return rt.call(Fn::identity_i64, {rt.operand(o, 0), rt.result(o, 0)});
    return o.emitError("comet-lower-to-runtime: ")
           << o->getName() << " of " << t << " is not supported";
  }
};

struct PadLowering : OpRuntimeLoweringPattern<PadOp> {
  LogicalResult lowerOp(PadOp o, RuntimeLowering &rt) const override {
    if (o.getMode() != "constant")
      return o.emitError("comet-lower-to-runtime: Pad mode '")
             << o.getMode() << "' is not supported (only 'constant')";
    auto pads = getConstantInts(o.getPads());
    if (!pads)
      return o.emitError("comet-lower-to-runtime: Pad needs constant "
                         "pads");
    // pads of `axes` only: spread over all dims.
    int64_t r = cast<RankedTensorType>(o.getData().getType()).getRank();
    SmallVector<int64_t> full(2 * r, 0);
    if (isa<NoneType>(o.getAxes().getType())) {
      if (int64_t(pads->size()) != 2 * r)
        return o.emitError("comet-lower-to-runtime: Pad has ")
               << pads->size() << " pads for rank " << r;
      full = *pads;
    } else {
      auto axes = getConstantInts(o.getAxes());
      if (!axes || pads->size() != 2 * axes->size())
        return o.emitError("comet-lower-to-runtime: Pad needs constant "
                           "axes, two pads each");
      for (auto [i, x] : llvm::enumerate(*axes)) {
        if (x < -r || x >= r)
          return o.emitError("comet-lower-to-runtime: Pad axis ")
                 << x << " is out of range for rank " << r;
        int64_t ax = x < 0 ? x + r : x;
        full[ax] = (*pads)[i];
        full[r + ax] = (*pads)[i + axes->size()];
      }
    }
    return rt.call(Fn::pad, {rt.operand(o.getData()), rt.constMemref(full),
                             rt.operand(o.getConstantValue()),
                             rt.result(o.getOutput())});
  }
};

struct GatherLowering : OpRuntimeLoweringPattern<GatherOp> {
  LogicalResult lowerOp(GatherOp o, RuntimeLowering &rt) const override {
    Type elt = getElementTypeOrSelf(o.getOutput().getType());
    // An entry of a static shape: a constant.
    if (elt.isInteger(64) && getConstantInts(o.getOutput()))
      return rt.foldI64(o);
    if (!getElementTypeOrSelf(o.getIndices().getType()).isInteger(64))
      return o.emitError("comet-lower-to-runtime: Gather indices of ")
             << o.getIndices().getType() << " are not supported (i64)";
    if (elt.isF32() || elt.isInteger(64))
      return rt.call(elt.isF32() ? Fn::gather : Fn::gather_i64,
                     {rt.operand(o.getData()), rt.operand(o.getIndices()),
                      rt.result(o.getOutput()), rt.i64(o.getAxis())});
    return o.emitError("comet-lower-to-runtime: Gather of ")
           << o.getData().getType() << " is not supported";
  }
};

/// GatherGrad: dY added into zeros of the result at the indices; the shape
/// operand is the result's type.
struct GatherGradLowering : OpRuntimeLoweringPattern<GatherGradOp> {
  LogicalResult lowerOp(GatherGradOp o, RuntimeLowering &rt) const override {
    if (!getElementTypeOrSelf(o.getIndices().getType()).isInteger(64))
      return o.emitError("comet-lower-to-runtime: GatherGrad indices of ")
             << o.getIndices().getType() << " are not supported (i64)";
    return rt.call(Fn::gather_grad,
                   {rt.operand(o.getIndices()), rt.operand(o.getDY()),
                    rt.result(o.getDX()), rt.i64(o.getAxis())});
  }
};

/// Concat and ConcatTraining: one copy per input at its offset along the
/// axis; ConcatTraining also gives the lengths, a constant.
template <typename OpTy>
struct ConcatLowering : OpRuntimeLoweringPattern<OpTy> {
  static constexpr bool kTraining = std::is_same_v<OpTy, ConcatTrainingOp>;

  /// ConcatTraining's per_input_length, a constant (none for Concat).
  static Value lengthsOf(OpTy o) {
    if constexpr (kTraining)
      return o.getPerInputLength();
    return {};
  }

  LogicalResult lowerOp(OpTy o, RuntimeLowering &rt) const override {
    Value out = o->getResult(0), lengthsOut = lengthsOf(o);
    bool hasLengths = lengthsOut && !isa<NoneType>(lengthsOut.getType());
    auto t = cast<RankedTensorType>(out.getType());
    if (t.getElementType().isInteger(64) && getConstantInts(out)) {
      // A shape built from constants (ConcatTraining stands for every
      // Concat of a training graph); its lengths are constants too.
      if (failed(rt.foldI64(o)))
        return failure();
      if (!hasLengths)
        return success();
      auto lengths = getConstantInts(lengthsOut);
      if (!lengths)
        return o.emitError("comet-lower-to-runtime: ConcatTraining's "
                           "per_input_length is not known");
      return rt.materializeConstant(
          lengthsOut,
          DenseElementsAttr::get(cast<ShapedType>(lengthsOut.getType()),
                                 ArrayRef(*lengths)));
    }
    if (!t.getElementType().isF32() && !t.getElementType().isInteger(64))
      return o.emitError("comet-lower-to-runtime: Concat of ")
             << t << " is not supported";
    int64_t axis = o.getAxis();
    if (axis < 0)
      axis += t.getRank();
    SmallVector<int64_t> lengths;
    for (Value v : o->getOperands())
      lengths.push_back(cast<RankedTensorType>(v.getType()).getDimSize(axis));
    // One copy per input, each at its offset along the axis.
    Fn fn = t.getElementType().isF32() ? Fn::concat_part : Fn::concat_part_i64;
    int64_t offset = 0;
    for (unsigned i = 0; i < o->getNumOperands(); ++i) {
      if (failed(rt.call(fn, {rt.operand(o, i), rt.result(out), rt.i64(axis),
                              rt.i64(offset)})))
        return failure();
      offset += lengths[i];
    }
    if (!hasLengths)
      return success();
    return rt.materializeConstant(
        lengthsOut,
        DenseElementsAttr::get(cast<ShapedType>(lengthsOut.getType()),
                               ArrayRef(lengths)));
  }
};

/// Split and SplitTraining: one copy per output, at its offset on `axis`.
LogicalResult splitParts(RuntimeLowering &rt, Operation *op, int64_t axis,
                         ArrayRef<int64_t> lengths) {
  int64_t offset = 0;
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    if (failed(rt.call(Fn::split_part, {rt.operand(op, 0), rt.result(op, i),
                                        rt.i64(axis), rt.i64(offset)})))
      return failure();
    offset += lengths[i];
  }
  return success();
}

struct SplitLowering : OpRuntimeLoweringPattern<SplitOp> {
  LogicalResult lowerOp(SplitOp o, RuntimeLowering &rt) const override {
    auto lengths = o.getSplitLengths();
    if (!lengths)
      return o.emitError("comet-lower-to-runtime: Split needs a constant "
                         "split or a static dim to divide");
    auto t = cast<RankedTensorType>(o.getInput().getType());
    if (!t.getElementType().isF32())
      return o.emitError("comet-lower-to-runtime: Split of ")
             << t << " is not supported (f32)";
    return splitParts(rt, o,
                      o.getAxis() < 0 ? o.getAxis() + t.getRank() : o.getAxis(),
                      *lengths);
  }
};

struct SplitTrainingLowering : OpRuntimeLoweringPattern<SplitTrainingOp> {
  LogicalResult lowerOp(SplitTrainingOp o, RuntimeLowering &rt) const override {
    auto split = getConstantInts(o.getSplit());
    if (!split || split->size() != o.getNumResults())
      return o.emitError("comet-lower-to-runtime: SplitTraining needs a "
                         "constant split with one length per output");
    int64_t r = cast<RankedTensorType>(o.getInput().getType()).getRank();
    return splitParts(rt, o, o.getAxis() < 0 ? o.getAxis() + r : o.getAxis(),
                      *split);
  }
};

} // namespace

void comet::populateDataMovementLoweringPatterns(
    RuntimeLoweringPatternSet &patterns) {
  patterns.add<TransposeLowering, ReshapeCopyLowering<SqueezeOp>,
               ReshapeCopyLowering<UnsqueezeOp>, PadLowering, GatherLowering,
               GatherGradLowering, ConcatLowering<ConcatOp>,
               ConcatLowering<ConcatTrainingOp>, SplitLowering,
               SplitTrainingLowering>();
}
