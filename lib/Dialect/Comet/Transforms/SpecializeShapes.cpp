//===- SpecializeShapes.cpp - Give every dynamic dimension its size -------===//
//
// Training graphs exported with a dynamic batch have `?` dims. Before the
// liveness analysis sizes values (for the compression policy, the bounds'
// term counts and the memory prediction) and before the lowering allocates
// buffers, every dim must be a number. A `?` is not always the batch: in
// attention it is heads x batch or tokens x batch, and after a shape that
// torch computes at run time (Shape, Gather, Concat, Div feeding a Reshape
// or a Slice) the exporter often leaves every dim `?`, channels and spatial
// sizes included. So only the arguments' leading dim takes the batch; each
// op's results then take the static dims that its type inference gives
// from its already specialized operands (the shape subgraphs fold, see
// onnx::getConstantInts) together with those the graph's own type states.
// A dim that neither gives is an error, not a guess. An argument that a
// loss reads as labels holds one label per row of the scores (batch x
// tokens for a language model), so it takes the scores' dims without the
// class dim instead, when the walk reaches the loss.
//
//===----------------------------------------------------------------------===//
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"

namespace comet {
#define GEN_PASS_DEF_COMETSPECIALIZESHAPES
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"
} // namespace comet

using namespace mlir;
using namespace comet;

namespace {

/// The tensor type of a tensor or of a compressed handle, else null.
TensorType tensorPart(Type t) {
  if (auto ct = dyn_cast<CompressedType>(t))
    return ct.getTensorType();
  return dyn_cast<TensorType>(t);
}

/// `like` (a tensor or a handle) with its tensor type replaced by `t`.
Type withTensor(Type like, RankedTensorType t) {
  if (auto ct = dyn_cast<CompressedType>(like))
    return CompressedType::get(like.getContext(), t, ct.getCodec());
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

/// The types the op's inference gives its results from the specialized
/// operands (null where it gives none); compress and decompress carry their
/// operand's shape. Fails, with an error at the op, when the op does not
/// verify with its specialized operands: inference relies on the verifier.
FailureOr<SmallVector<Type>> inferredTypes(Operation *op, int64_t batch) {
  SmallVector<Type> out(op->getNumResults());
  if (auto c = dyn_cast<CompressOp>(op)) {
    if (auto t = dyn_cast<RankedTensorType>(c.getInput().getType()))
      out[0] = CompressedType::get(op->getContext(), t, c.getCodec());
    return out;
  }
  if (auto d = dyn_cast<DecompressOp>(op)) {
    if (auto ct = dyn_cast<CompressedType>(d.getInput().getType()))
      out[0] = ct.getTensorType();
    return out;
  }
  if (!isa<onnx::TypeInferenceOpInterface>(op))
    return out;
  SmallVector<Type> inferred;
  std::string message;
  LogicalResult ok = success();
  {
    ScopedDiagnosticHandler keep(op->getContext(), [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && message.empty())
        message = d.str();
      return success();
    });
    ok = onnx::inferVerifiedResultTypes(op, inferred);
  }
  if (!message.empty()) {
    op->emitError("comet-specialize-shapes: with the operands specialized "
                  "at batch size ")
        << batch << ", " << message;
    return failure();
  }
  if (succeeded(ok) && inferred.size() == out.size())
    out.assign(inferred.begin(), inferred.end());
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
      FailureOr<ShapeSpecialization> s = specializeShapes(f, batchSize);
      if (failed(s))
        return signalPassFailure();
      numInferred += s->inferred;
      numBatch += s->batch;
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

FailureOr<ShapeSpecialization> comet::specializeShapes(func::FuncOp f,
                                                       int64_t batch) {
  ShapeSpecialization s;
  // The arguments: the batch is their leading dim.
  auto takeBatch = [&](BlockArgument a) -> LogicalResult {
    if (!hasDynamicDim(a.getType()))
      return success();
    auto fail = [&](auto &&...what) {
      InFlightDiagnostic d =
          emitError(a.getLoc(), "comet-specialize-shapes: argument #")
          << a.getArgNumber();
      if (auto name = f.getArgAttrOfType<StringAttr>(a.getArgNumber(),
                                                     "onnx.name"))
        d << " ('" << name.getValue() << "')";
      d << " of @" << f.getName() << ": ";
      (d << ... << what);
      return failure();
    };
    auto rt = dyn_cast_or_null<RankedTensorType>(tensorPart(a.getType()));
    if (!rt)
      return fail(a.getType(), " has no rank");
    SmallVector<int64_t> shape(rt.getShape());
    for (auto [i, d] : llvm::enumerate(shape)) {
      if (!ShapedType::isDynamic(d))
        continue;
      if (i != 0)
        return fail("dim ", int64_t(i), " of ", a.getType(),
                    " is dynamic; only an argument's leading dim takes the "
                    "batch");
      d = batch;
    }
    a.setType(withTensor(a.getType(), RankedTensorType::get(
                                          shape, rt.getElementType(),
                                          rt.getEncoding())));
    ++s.batch;
    return success();
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
    if (!labels.contains(a) && failed(takeBatch(a)))
      return failure();

  // In program order, so each op sees its operands' specialized types.
  WalkResult walk = f.walk([&](Operation *op) -> WalkResult {
    if (auto sl = onnx::getLossScoresAndLabels(op);
        sl && labels.contains(sl->second) &&
        hasDynamicDim(sl->second.getType())) {
      if (RankedTensorType t =
              labelsTypeFor(sl->first.getType(), sl->second.getType())) {
        sl->second.setType(t);
        ++s.inferred;
      } else if (failed(takeBatch(cast<BlockArgument>(sl->second)))) {
        return WalkResult::interrupt();
      }
    }
    if (llvm::none_of(op->getResultTypes(), hasDynamicDim))
      return WalkResult::advance();
    FailureOr<SmallVector<Type>> inferred = inferredTypes(op, batch);
    if (failed(inferred))
      return WalkResult::interrupt();
    for (auto [i, r] : llvm::enumerate(op->getResults())) {
      Type have = r.getType();
      if (!hasDynamicDim(have))
        continue;
      Type inf = (*inferred)[i];
      auto fail = [&](auto &&...what) {
        InFlightDiagnostic d =
            op->emitError("comet-specialize-shapes: at batch size ")
            << batch << ", ";
        (d << ... << what);
        d << " (the graph's type is " << have
          << "; type inference from the specialized operands gives ";
        if (inf)
          d << inf << ")";
        else
          d << "nothing)";
        return WalkResult::interrupt();
      };
      // The static dims of both: those inference gives from the operands,
      // and those the graph states (an exporter may know a dim that the
      // op's inference cannot, like a pooling gradient's spatial dims).
      TensorType haveT = tensorPart(have);
      auto infT = dyn_cast_or_null<RankedTensorType>(inf ? tensorPart(inf)
                                                          : TensorType());
      if (!haveT || (!haveT.hasRank() && !infT))
        return fail("result #", int64_t(i), " has no rank");
      SmallVector<int64_t> shape;
      if (haveT.hasRank())
        shape.assign(haveT.getShape().begin(), haveT.getShape().end());
      else
        shape.assign(infT.getRank(), ShapedType::kDynamic);
      if (infT) {
        if (infT.getRank() != int64_t(shape.size()))
          return fail("result #", int64_t(i),
                      ": inference contradicts the graph's rank");
        for (auto [k, d] : llvm::enumerate(shape)) {
          int64_t x = infT.getDimSize(k);
          if (ShapedType::isDynamic(x))
            continue;
          if (!ShapedType::isDynamic(d) && d != x)
            return fail("dim ", int64_t(k), " of result #", int64_t(i),
                        ": inference contradicts the graph's size");
          d = x;
        }
      }
      for (auto [k, d] : llvm::enumerate(shape))
        if (ShapedType::isDynamic(d))
          return fail("dim ", int64_t(k), " of result #", int64_t(i),
                      " is unknown; only an argument's leading dim takes "
                      "the batch");
      Attribute encoding;
      if (auto rt = dyn_cast<RankedTensorType>(haveT))
        encoding = rt.getEncoding();
      r.setType(withTensor(have, RankedTensorType::get(
                                     shape, haveT.getElementType(), encoding)));
      ++s.inferred;
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  // Labels whose loss the walk did not reach take the batch.
  for (Value a : labels)
    if (failed(takeBatch(cast<BlockArgument>(a))))
      return failure();

  // The function's results take their returned values' types (an attention
  // mask's rows are heads x batch).
  SmallVector<Type> ins(f.getBody().getArgumentTypes()), outs;
  Operation *ret = f.getBody().front().getTerminator();
  for (Value v : ret->getOperands())
    outs.push_back(v.getType());
  f.setFunctionType(FunctionType::get(f.getContext(), ins, outs));
  return s;
}
