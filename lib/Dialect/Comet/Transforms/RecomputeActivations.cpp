//===- RecomputeActivations.cpp - Recompute BatchNorm outputs backward ----===//
//
// A training-mode BatchNorm's output, or the ReLU / Clip of it, is read in
// the backward by the next layer's weight gradient, while the BatchNorm's
// input is kept for BatchNormalizationGrad anyway. Both would live from the
// forward to the backward; this pass keeps only the input and recomputes
// the output from it and the saved statistics just before its first far
// reader (comet.batch_norm_apply, bit for bit the forward's). The same
// holds for a Dropout's output (its input and mask are kept for SoftmaxGrad
// and DropoutGrad), a GELU's (its input is kept for its gradient) and a
// cheap stem Conv's. Candidates and far readers come from the
// ActivationLiveness analysis, so the report, the compression and the frees
// see the rewritten graph.
//
//===----------------------------------------------------------------------===//
#include "comet/Analysis/ActivationLiveness.h"
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/StringSet.h"

#include <limits>

namespace comet {
#define GEN_PASS_DEF_COMETRECOMPUTEACTIVATIONS
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"
} // namespace comet

using namespace mlir;
using namespace comet;

namespace {

/// The value of a one-element f32 constant (onnx.Constant, onnx.Initializer).
std::optional<float> constantFloat(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  ElementsAttr attr;
  if (auto c = dyn_cast<onnx::ConstantOp>(def)) {
    if (auto f = c.getValueFloat())
      return f->convertToFloat();
    if (auto e = c.getValue())
      attr = *e;
  } else if (auto init = dyn_cast<onnx::InitializerOp>(def)) {
    attr = init.getValue();
  }
  // The importer keeps initializers as resources.
  if (auto res = dyn_cast_or_null<DenseF32ResourceElementsAttr>(attr)) {
    std::optional<ArrayRef<float>> vals = res.tryGetAsArrayRef();
    if (vals && vals->size() == 1)
      return (*vals)[0];
    return std::nullopt;
  }
  auto dense = dyn_cast_or_null<DenseFPElementsAttr>(attr);
  if (!dense || dense.getNumElements() != 1 || !dense.getElementType().isF32())
    return std::nullopt;
  return (*dense.getValues<APFloat>().begin()).convertToFloat();
}

/// `r`'s recipe: the BatchNorm it is computed from and the activation.
struct Recipe {
  onnx::BatchNormInternalOp bn;
  StringRef activation = "none";
  float lo = 0, hi = 0;
};

std::optional<Recipe> recipeOf(Value r) {
  Recipe rc;
  Value y = r;
  Operation *def = r.getDefiningOp();
  if (auto relu = dyn_cast_or_null<onnx::ReluOp>(def)) {
    y = relu.getX();
    rc.activation = "relu";
  } else if (auto clip = dyn_cast_or_null<onnx::ClipOp>(def)) {
    y = clip.getInput();
    rc.activation = "clip";
    rc.lo = -std::numeric_limits<float>::infinity();
    rc.hi = std::numeric_limits<float>::infinity();
    auto bound = [](Value b, float &out) {
      if (!b || isa<NoneType>(b.getType()))
        return true;
      std::optional<float> f = constantFloat(b);
      if (f)
        out = *f;
      return f.has_value();
    };
    if (!bound(clip.getMin(), rc.lo) || !bound(clip.getMax(), rc.hi))
      return std::nullopt;
  }
  auto res = dyn_cast<OpResult>(y);
  rc.bn = y.getDefiningOp<onnx::BatchNormInternalOp>();
  if (!rc.bn || !res || res.getResultNumber() != 0 ||
      rc.bn.getTrainingMode() == 0 ||
      isa<NoneType>(rc.bn.getSavedMean().getType()) ||
      isa<NoneType>(rc.bn.getSavedInvStd().getType()) ||
      y.getType() != r.getType())
    return std::nullopt;
  return rc;
}

/// The op a Dropout output (result 0, with its mask) or a GELU output is
/// computed again from: the ones whose gradient keeps their input (and
/// mask), so only the output's own storage is saved.
Operation *sourceOf(Value r) {
  auto res = dyn_cast<OpResult>(r);
  if (!res || res.getResultNumber() != 0)
    return nullptr;
  Operation *def = res.getOwner();
  if (auto drop = dyn_cast<onnx::DropoutOp>(def))
    return drop.getMask() && !isa<NoneType>(drop.getMask().getType()) &&
                   drop.getData().getType() == r.getType()
               ? def
               : nullptr;
  if (isa<onnx::BiasGeluOp, onnx::GeluOp>(def))
    return def;
  return nullptr;
}

/// `value`, computed again from `source` before `before`, read by `moved`.
struct SourceRewrite {
  Operation *source;
  Value value;
  Operation *before;
  SmallVector<OpOperand *> moved;
};

/// Whether `v` is there at step `index` anyway: absent, a constant, a
/// parameter, or a value something reads after `index`.
bool livesPast(const ActivationLiveness &la, Value v, int64_t index) {
  if (!v || isa<NoneType>(v.getType()))
    return true;
  int id = la.getId(v);
  if (id < 0)
    return v.getDefiningOp() &&
           v.getDefiningOp()->hasTrait<OpTrait::ConstantLike>();
  const ValueInfo &o = la.getValue(id);
  return o.persistent || o.end > index;
}

/// A Conv whose output `c` is cheaper to compute again than to keep: at
/// most `maxMacs` multiply-adds per output element (a stem on few input
/// channels), with an input that lives past the output's first far reader
/// anyway (the weight gradient reads it) and weights that are parameters.
/// The clone computes the same bits, so every far reader may read it.
/// With `exactMasks` (the values are compressed), a value that only masks
/// and shapes are read from costs a bit per element: not worth a conv.
struct ConvRewrite {
  Operation *conv;
  Operation *before;
  SmallVector<OpOperand *> moved;
};

std::optional<ConvRewrite> cheapConv(const ActivationLiveness &la,
                                     const Candidate &c, int64_t maxMacs,
                                     bool exactMasks) {
  const ValueInfo &v = la.getValue(c.valueId);
  auto conv = v.value.getDefiningOp<onnx::ConvOp>();
  if (!conv || maxMacs <= 0)
    return std::nullopt;
  if (exactMasks && llvm::all_of(c.farUses, [&](unsigned ui) {
        ConsumerKind k = v.uses[ui].kind;
        return k == ConsumerKind::ReluMask || k == ConsumerKind::ShapeOnly;
      }))
    return std::nullopt;
  auto w = dyn_cast<RankedTensorType>(conv.getW().getType());
  if (!w || !w.hasStaticShape() || w.getRank() < 3)
    return std::nullopt;
  int64_t macs = 1;
  for (int64_t d : w.getShape().drop_front())
    macs *= d;
  if (macs > maxMacs)
    return std::nullopt;
  int64_t firstFar = c.firstFar;
  if (!livesPast(la, conv.getX(), firstFar) ||
      !livesPast(la, conv.getW(), firstFar) ||
      !livesPast(la, conv.getB(), firstFar))
    return std::nullopt;
  ConvRewrite cr{conv, nullptr, {}};
  for (unsigned ui : c.farUses) {
    const ValueUse &u = v.uses[ui];
    if (u.user != u.directUser)
      return std::nullopt;
    cr.moved.push_back(&u.directUser->getOpOperand(u.operandNumber));
    if (u.index == firstFar)
      cr.before = u.user;
  }
  if (!cr.before || cr.moved.empty())
    return std::nullopt;
  return cr;
}

struct RecomputeActivationsPass
    : public comet::impl::CometRecomputeActivationsBase<
          RecomputeActivationsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minBytes < 0 || minDistance < 1) {
      getOperation().emitError("comet-recompute-activations: min-bytes must "
                               "be non-negative and min-distance at least 1");
      return signalPassFailure();
    }
    matched.clear();
    for (Operation &op : getOperation().getBody()->getOperations())
      if (auto func = dyn_cast<FunctionOpInterface>(op))
        if (!func.isExternal())
          runOnFunction(func);
    // A misspelt name would silently recompute nothing.
    for (const std::string &n : onlyNames)
      if (!matched.contains(n)) {
        getOperation().emitError("comet-recompute-activations: '")
            << n << "' is not a recomputable value";
        return signalPassFailure();
      }
  }

  /// Whether only= (when given) lists `name`; notes the match.
  bool selected(StringRef name) {
    if (onlyNames.empty())
      return true;
    if (!llvm::is_contained(onlyNames, name))
      return false;
    matched.insert(name);
    return true;
  }
  llvm::StringSet<> matched;

  void runOnFunction(FunctionOpInterface func) {
    const auto &la = getChildAnalysis<ActivationLiveness>(func);
    struct Rewrite {
      Recipe recipe;
      Value value;
      Operation *before;
      SmallVector<OpOperand *> moved;
    };
    SmallVector<Rewrite> rewrites;
    SmallVector<ConvRewrite> convRewrites;
    SmallVector<SourceRewrite> sourceRewrites;
    // The far readers that may read a recomputed value: weight gradients
    // and shape reads always; ReLU masks only when asked, since from a
    // lossy input the recomputed sign near 0 may differ (the original then
    // stays, as a 1-bit mask). Returns the first one's step, or -1.
    auto movable = [&](const Candidate &c, SmallVector<OpOperand *> &moved,
                       Operation *&before) {
      const ValueInfo &v = la.getValue(c.valueId);
      int64_t firstMoved = -1;
      for (unsigned ui : c.farUses) {
        const ValueUse &u = v.uses[ui];
        bool ok = u.kind == ConsumerKind::WeightGradInput ||
                  u.kind == ConsumerKind::ShapeOnly ||
                  (u.kind == ConsumerKind::ReluMask && !exactMasks);
        if (!ok || u.user != u.directUser)
          continue;
        moved.push_back(&u.directUser->getOpOperand(u.operandNumber));
        if (firstMoved < 0 || u.index < firstMoved) {
          firstMoved = u.index;
          before = u.user;
        }
      }
      return firstMoved;
    };
    for (const Candidate &c : la.getCandidates(minBytes, minDistance)) {
      const ValueInfo &v = la.getValue(c.valueId);
      std::optional<Recipe> rc = recipeOf(v.value);
      if (!rc || !selected(v.name))
        continue;
      Rewrite rw{*rc, v.value, nullptr, {}};
      int64_t firstMoved = movable(c, rw.moved, rw.before);
      if (rw.moved.empty())
        continue;
      // Only where the BatchNorm's input outlives the recompute anyway
      // (its gradient reads it later): otherwise the input would be kept
      // instead of the output, which saves nothing.
      int xid = la.getId(rc->bn.getX());
      if (xid < 0 ||
          llvm::none_of(la.getValue(xid).uses, [&](const ValueUse &u) {
            return u.kind == ConsumerKind::BatchNorm && u.index > firstMoved;
          }))
        continue;
      rewrites.push_back(std::move(rw));
    }

    // Then the Dropout and GELU outputs, and the cheap convs, where no
    // recompute already relies on the value being kept (it is another
    // recompute's input) or frees an input of theirs (it is a recomputed
    // output): either would keep alive what the other frees.
    llvm::SmallPtrSet<Value, 8> keptInputs, recomputedValues;
    for (Rewrite &rw : rewrites) {
      keptInputs.insert(rw.recipe.bn.getX());
      recomputedValues.insert(rw.value);
    }
    for (const Candidate &c : la.getCandidates(minBytes, minDistance)) {
      const ValueInfo &v = la.getValue(c.valueId);
      Operation *src = sourceOf(v.value);
      if (!src || keptInputs.contains(v.value) ||
          llvm::any_of(src->getOperands(),
                       [&](Value o) { return recomputedValues.contains(o); }))
        continue;
      SourceRewrite sr{src, v.value, nullptr, {}};
      int64_t firstMoved = movable(c, sr.moved, sr.before);
      // Its input (and mask) must be there anyway after the first reader
      // moved: otherwise they would be kept instead of the output.
      if (sr.moved.empty() ||
          !llvm::all_of(
              src->getOperands(),
              [&](Value o) { return livesPast(la, o, firstMoved); }) ||
          (isa<onnx::DropoutOp>(src) &&
           !livesPast(la, src->getResult(1), firstMoved)) ||
          !selected(v.name))
        continue;
      for (Value o : src->getOperands())
        keptInputs.insert(o);
      recomputedValues.insert(v.value);
      sourceRewrites.push_back(std::move(sr));
    }
    for (const Candidate &c : la.getCandidates(minBytes, minDistance)) {
      std::optional<ConvRewrite> cr = cheapConv(la, c, maxConvMacs, exactMasks);
      if (!cr || keptInputs.contains(la.getValue(c.valueId).value) ||
          recomputedValues.contains(cr->conv->getOperand(0)) ||
          !selected(la.getValue(c.valueId).name))
        continue;
      convRewrites.push_back(std::move(*cr));
    }

    OpBuilder b(func->getContext());
    for (ConvRewrite &cr : convRewrites) {
      b.setInsertionPoint(cr.before);
      Operation *clone = b.clone(*cr.conv);
      clone->setLoc(
          recomputeLoc(la.getValue(la.getId(cr.conv->getResult(0))).name,
                       cr.conv->getLoc()));
      for (OpOperand *o : cr.moved)
        o->set(clone->getResult(0));
      ++numConvs;
      numReadersMoved += cr.moved.size();
    }
    for (SourceRewrite &sr : sourceRewrites) {
      b.setInsertionPoint(sr.before);
      Location loc =
          recomputeLoc(la.getValue(la.getId(sr.value)).name, sr.value.getLoc());
      Value again;
      if (auto drop = dyn_cast<onnx::DropoutOp>(sr.source)) {
        // DropoutGrad with the input in dY's place computes the forward's
        // expression, mask ? x / (1 - ratio) : 0, from the kept mask.
        again = onnx::DropoutGradOp::create(
                    b, loc, sr.value.getType(), drop.getData(), drop.getMask(),
                    drop.getRatio(), drop.getTrainingMode())
                    .getResult();
      } else {
        Operation *clone = b.clone(*sr.source);
        clone->setLoc(loc);
        again = clone->getResult(0);
      }
      for (OpOperand *o : sr.moved)
        o->set(again);
      ++numRecomputed;
      numReadersMoved += sr.moved.size();
    }
    for (Rewrite &rw : rewrites) {
      onnx::BatchNormInternalOp bn = rw.recipe.bn;
      b.setInsertionPoint(rw.before);
      Location loc =
          recomputeLoc(la.getValue(la.getId(rw.value)).name, rw.value.getLoc());
      auto apply = BatchNormApplyOp::create(
          b, loc, rw.value.getType(), bn.getX(), bn.getScale(), bn.getB(),
          bn.getSavedMean(), bn.getSavedInvStd(),
          b.getStringAttr(rw.recipe.activation),
          b.getF32FloatAttr(rw.recipe.lo), b.getF32FloatAttr(rw.recipe.hi));
      for (OpOperand *o : rw.moved)
        o->set(apply.getResult());
      ++numRecomputed;
      numReadersMoved += rw.moved.size();
    }
  }
};

} // namespace

std::optional<double> comet::recomputeGain(Operation *op) {
  if (!isRecomputeFromInput(op) || isa<BatchNormApplyOp>(op))
    return std::nullopt;
  // GELU's slope peaks at x = sqrt(2): Phi(sqrt 2) + sqrt(2) phi(sqrt 2).
  if (isa<onnx::BiasGeluOp, onnx::GeluOp>(op))
    return 1.1289;
  auto grad = cast<onnx::DropoutGradOp>(op);
  auto isNone = [](Value v) { return !v || isa<NoneType>(v.getType()); };
  // Without training mode Y = X (its default is false).
  if (isNone(grad.getTrainingMode()))
    return 1.0;
  float ratio = 0.5f; // Dropout's default
  if (!isNone(grad.getRatio())) {
    std::optional<float> r = constantFloat(grad.getRatio());
    if (!r || !(*r >= 0.0f && *r < 1.0f))
      return std::nullopt;
    ratio = *r;
  }
  return 1.0 / (1.0 - double(ratio));
}
