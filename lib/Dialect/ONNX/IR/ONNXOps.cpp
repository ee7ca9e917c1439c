//===- ONNXOps.cpp - onnx op verifiers ------------------------------------===//
//
// Verifiers check what ODS cannot: ranks, attribute lengths against the
// operands' ranks, and static dims that must agree. Dynamic (`?`) dims and
// unranked tensors pass; the importer keeps what the file says. A result
// the importer has not typed yet (`isPending`) passes too: the importer runs
// the whole verifier before type inference, which may then rely on it.
//
// What an op family shares (elementwise, broadcasting, gradients whose
// results take their inputs' types, reductions) its trait checks
// (ONNXTraits.cpp) before the op's verify() here, which checks the rest.
//
//===----------------------------------------------------------------------===//
#include "comet/Dialect/ONNX/IR/ONNXOps.h"
#include "ShapeHelpers.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/InterleavedRange.h"

using namespace mlir;
using namespace comet::onnx;
using namespace comet::onnx::shape;
using namespace comet::onnx::checks;

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

/// Window attributes of Conv/ConvGrad/MaxPool/MaxPoolGrad against the
/// number of spatial dims.
static LogicalResult
checkWindowAttrs(Operation *op, int64_t spatial, StringRef autoPad,
                 std::optional<ArrayRef<int64_t>> kernel,
                 std::optional<ArrayRef<int64_t>> pads,
                 std::optional<ArrayRef<int64_t>> strides,
                 std::optional<ArrayRef<int64_t>> dilations) {
  if (!llvm::is_contained({"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"},
                          autoPad))
    return op->emitOpError() << "unknown auto_pad '" << autoPad << "'";
  auto checkLen = [&](std::optional<ArrayRef<int64_t>> a, StringRef name,
                      int64_t len, int64_t min) -> LogicalResult {
    if (!a)
      return success();
    if (spatial >= 0 && int64_t(a->size()) != len)
      return op->emitOpError()
             << name << " has " << a->size() << " values but the input has "
             << spatial << " spatial dims (expected " << len << ")";
    for (int64_t x : *a)
      if (x < min)
        return op->emitOpError()
               << name << " values must be >= " << min << ", got " << x;
    return success();
  };
  return success(succeeded(checkLen(kernel, "kernel_shape", spatial, 1)) &&
                 succeeded(checkLen(pads, "pads", 2 * spatial, 0)) &&
                 succeeded(checkLen(strides, "strides", spatial, 1)) &&
                 succeeded(checkLen(dilations, "dilations", spatial, 1)));
}

/// Conv and ConvGrad: X is N x C x spatial, W is M x C/group x kernel.
static LogicalResult
verifyConvLike(Operation *op, Value x, Value w, StringRef autoPad,
               int64_t group, std::optional<ArrayRef<int64_t>> kernel,
               std::optional<ArrayRef<int64_t>> pads,
               std::optional<ArrayRef<int64_t>> strides,
               std::optional<ArrayRef<int64_t>> dilations) {
  if (failed(checkRankAtLeast(op, x, "X", 3)) ||
      failed(checkRankAtLeast(op, w, "W", 3)) ||
      failed(checkSameElementType(op, {{x, "X"}, {w, "W"}})) ||
      failed(checkFloat(op, x, "X")))
    return failure();
  if (group < 1)
    return op->emitOpError() << "group must be >= 1, got " << group;
  auto xs = shapeOf(x), ws = shapeOf(w);
  if (xs && ws && xs->size() != ws->size())
    return op->emitOpError()
           << "X has rank " << xs->size() << " but W has rank " << ws->size();
  int64_t spatial = xs   ? int64_t(xs->size()) - 2
                    : ws ? int64_t(ws->size()) - 2
                         : -1;
  if (failed(checkWindowAttrs(op, spatial, autoPad, kernel, pads, strides,
                              dilations)))
    return failure();
  if (ws && kernel) {
    for (int64_t i = 0; i < spatial; ++i)
      if (!isDyn((*ws)[2 + i]) && (*ws)[2 + i] != (*kernel)[i])
        return op->emitOpError()
               << "kernel_shape [" << llvm::interleaved(*kernel)
               << "] does not match the spatial dims of W " << w.getType();
  }
  if (xs && ws && !isDyn((*xs)[1]) && !isDyn((*ws)[1]) &&
      __int128((*xs)[1]) != __int128((*ws)[1]) * group)
    return op->emitOpError()
           << "X has " << (*xs)[1] << " channels but W " << w.getType()
           << " with group " << group << " expects "
           << int64_t(__int128((*ws)[1]) * group);
  if (ws && !isDyn((*ws)[0]) && (*ws)[0] % group != 0)
    return op->emitOpError()
           << "W's " << (*ws)[0]
           << " output channels are not divisible by group " << group;
  return success();
}

/// BatchNormalization-like per-channel vectors: rank 1 with C elements.
static LogicalResult
checkChannelVectors(Operation *op, Value x,
                    ArrayRef<std::pair<Value, StringRef>> vs) {
  if (failed(checkRankAtLeast(op, x, "X", 2)))
    return failure();
  auto xs = shapeOf(x);
  int64_t c = xs ? (*xs)[1] : ShapedType::kDynamic;
  for (auto [v, name] : vs) {
    if (failed(checkRank(op, v, name, 1)))
      return failure();
    auto s = shapeOf(v);
    if (s && !isDyn(c) && !isDyn((*s)[0]) && (*s)[0] != c)
      return op->emitOpError() << name << " has " << (*s)[0]
                               << " elements but X has " << c << " channels";
  }
  return success();
}

static LogicalResult checkReduction(Operation *op, StringRef reduction) {
  if (!llvm::is_contained({"none", "sum", "mean"}, reduction))
    return op->emitOpError()
           << "reduction must be none, sum or mean, got '" << reduction << "'";
  return success();
}

//===----------------------------------------------------------------------===//
// Op verifiers
//===----------------------------------------------------------------------===//

LogicalResult InitializerOp::verify() {
  if (getName().empty())
    return emitOpError("needs a name");
  return success();
}

LogicalResult ConstantOp::verify() {
  int n = bool(getValueAttr()) + bool(getValueFloatAttr()) +
          bool(getValueFloatsAttr()) + bool(getValueIntAttr()) +
          bool(getValueIntsAttr());
  if (n != 1)
    return emitOpError() << "needs exactly one value attribute, got " << n;
  if (getValueAttr() && !isPending(getOutput()) &&
      getValueAttr().getType() != getOutput().getType())
    return emitOpError() << "value has type " << getValueAttr().getType()
                         << " but the result is " << getOutput().getType();
  return success();
}

LogicalResult ConvOp::verify() {
  if (failed(verifyConvLike(*this, getX(), getW(), getAutoPad(), getGroup(),
                            getKernelShape(), getPads(), getStrides(),
                            getDilations())))
    return failure();
  if (isa<NoneType>(getB().getType()))
    return success();
  if (failed(checkRank(*this, getB(), "B", 1)) ||
      failed(checkSameElementType(*this, {{getX(), "X"}, {getB(), "B"}})))
    return failure();
  auto ws = shapeOf(getW()), bs = shapeOf(getB());
  if (ws && bs && !isDyn((*ws)[0]) && !isDyn((*bs)[0]) && (*ws)[0] != (*bs)[0])
    return emitOpError() << "B has " << (*bs)[0] << " elements but W has "
                         << (*ws)[0] << " output channels";
  return success();
}

LogicalResult ConvGradOp::verify() {
  if (failed(verifyConvLike(*this, getX(), getW(), getAutoPad(), getGroup(),
                            getKernelShape(), getPads(), getStrides(),
                            getDilations())) ||
      failed(checkRankAtLeast(*this, getDY(), "dY", 3)) ||
      failed(checkSameElementType(*this, {{getX(), "X"}, {getDY(), "dY"}})))
    return failure();
  if (!isa<NoneType>(getDX().getType()) &&
      failed(checkCompatibleShapes(*this, getDX(), "dX", getX(), "X")))
    return failure();
  if (!isa<NoneType>(getDW().getType()) &&
      failed(checkCompatibleShapes(*this, getDW(), "dW", getW(), "W")))
    return failure();
  return success();
}

static LogicalResult verifyPool(Operation *op, Value x, StringRef autoPad,
                                ArrayRef<int64_t> kernel,
                                std::optional<ArrayRef<int64_t>> pads,
                                std::optional<ArrayRef<int64_t>> strides,
                                std::optional<ArrayRef<int64_t>> dilations,
                                int64_t storageOrder) {
  if (failed(checkRankAtLeast(op, x, "X", 3)))
    return failure();
  auto xs = shapeOf(x);
  int64_t spatial = xs ? int64_t(xs->size()) - 2 : int64_t(kernel.size());
  if (storageOrder != 0 && storageOrder != 1)
    return op->emitOpError()
           << "storage_order must be 0 or 1, got " << storageOrder;
  return checkWindowAttrs(op, spatial, autoPad, kernel, pads, strides,
                          dilations);
}

/// MaxPool's Indices: ORT's flat indices (i64), or each argmax's position
/// in its window (ui8, comet-compact-pool-indices) where a byte holds every
/// position of the window.
static LogicalResult checkPoolIndices(Operation *op, Value indices,
                                      ArrayRef<int64_t> kernel) {
  Type t = elementTypeOf(indices);
  if (!t || t.isSignlessInteger(64))
    return success();
  if (t.isUnsignedInteger(8)) {
    int64_t positions = 1;
    for (int64_t k : kernel)
      if ((positions *= k) > kMaxPoolWindowPositions) // before an overflow
        return op->emitOpError()
               << "window positions (ui8 Indices) need a window of at most "
               << kMaxPoolWindowPositions << " elements, kernel_shape ["
               << llvm::interleaved(kernel) << "] has more";
    return success();
  }
  return op->emitOpError()
         << "Indices must be a tensor of i64 (flat indices) or ui8 (window "
            "positions), got "
         << t;
}

LogicalResult MaxPoolOp::verify() {
  if (failed(verifyPool(*this, getX(), getAutoPad(), getKernelShape(),
                        getPads(), getStrides(), getDilations(),
                        getStorageOrder())))
    return failure();
  return checkPoolIndices(*this, getIndices(), getKernelShape());
}

LogicalResult MaxPoolGradOp::verify() {
  if (failed(verifyPool(*this, getDY(), getAutoPad(), getKernelShape(),
                        getPads(), getStrides(), getDilations(),
                        getStorageOrder())))
    return failure();
  if (failed(checkPoolIndices(*this, getIndices(), getKernelShape())))
    return failure();
  return checkCompatibleShapes(*this, getDY(), "dY", getIndices(), "Indices");
}

LogicalResult GlobalAveragePoolOp::verify() {
  return checkRankAtLeast(*this, getX(), "X", 3);
}

/// Gemm's and FusedMatMul's contraction: the inner dims k1 of op(A) and k2
/// of op(B) must agree when both are known.
static LogicalResult checkInnerDims(Operation *op, Value a, Value b,
                                    bool transA, bool transB, int64_t k1,
                                    int64_t k2) {
  if (isDyn(k1) || isDyn(k2) || k1 == k2)
    return success();
  return op->emitOpError() << "inner dims differ: A " << a.getType()
                           << (transA ? " (transposed)" : "") << " and B "
                           << b.getType() << (transB ? " (transposed)" : "");
}

LogicalResult GemmOp::verify() {
  if (failed(checkRank(*this, getA(), "A", 2)) ||
      failed(checkRank(*this, getB(), "B", 2)) ||
      failed(checkSameElementType(
          *this, {{getA(), "A"}, {getB(), "B"}, {getC(), "C"}, {getY(), "Y"}})))
    return failure();
  if (getTransA() > 1 || getTransA() < 0 || getTransB() > 1 || getTransB() < 0)
    return emitOpError("transA and transB must be 0 or 1");
  auto as = shapeOf(getA()), bs = shapeOf(getB());
  if (as && bs)
    return checkInnerDims(*this, getA(), getB(), getTransA(), getTransB(),
                          (*as)[getTransA() ? 0 : 1],
                          (*bs)[getTransB() ? 1 : 0]);
  return success();
}

LogicalResult MatMulOp::verify() {
  if (failed(checkRankAtLeast(*this, getA(), "A", 1)) ||
      failed(checkRankAtLeast(*this, getB(), "B", 1)))
    return failure();
  return checkSameElementType(*this, {{getA(), "A"}, {getB(), "B"}});
}

LogicalResult FlattenOp::verify() {
  if (auto s = shapeOf(getInput())) {
    int64_t r = s->size();
    if (getAxis() < -r || getAxis() > r)
      return emitOpError() << "axis " << getAxis()
                           << " is out of range for rank " << r;
  }
  return checkSameElementType(*this,
                              {{getInput(), "input"}, {getOutput(), "output"}});
}

LogicalResult ReshapeOp::verify() {
  if (failed(checkShapeTensor(*this, getShape(), "shape")))
    return failure();
  if (auto target = getConstantInts(getShape())) {
    if (llvm::count(*target, -1) > 1)
      return emitOpError("shape has more than one -1");
    for (int64_t d : *target)
      if (d < -1)
        return emitOpError() << "shape has an invalid dim " << d;
  }
  return checkSameElementType(
      *this, {{getData(), "data"}, {getReshaped(), "reshaped"}});
}

LogicalResult ConstantOfShapeOp::verify() {
  if (failed(checkShapeTensor(*this, getInput(), "input")))
    return failure();
  Type elt = Float32Type::get(getContext());
  if (auto v = getValue()) {
    auto t = cast<ShapedType>(v->getType());
    if (!t.hasStaticShape() || t.getNumElements() != 1)
      return emitOpError() << "value must hold one element, got " << t;
    elt = t.getElementType();
  }
  if (Type out = elementTypeOf(getOutput()); out && out != elt)
    return emitOpError() << "the result has element type " << out
                         << " but value gives " << elt;
  auto target = getConstantInts(getInput());
  if (target)
    for (int64_t d : *target)
      if (d < 0)
        return emitOpError() << "input has a negative dim " << d;
  auto len = shapeOf(getInput());
  auto out = shapeOf(getOutput());
  if (!out || !len || isDyn((*len)[0]))
    return success();
  if (int64_t(out->size()) != (*len)[0])
    return emitOpError() << "the result " << getOutput().getType()
                         << " must have rank " << (*len)[0]
                         << ", the length of input";
  if (target)
    for (auto [d, want] : llvm::zip(*out, *target))
      if (!isDyn(d) && d != want)
        return emitOpError() << "the result " << getOutput().getType()
                             << " does not have the shape ["
                             << llvm::interleaved(*target) << "] of input";
  return success();
}

LogicalResult ExpandOp::verify() {
  if (failed(checkShapeTensor(*this, getShape(), "shape")))
    return failure();
  return checkSameElementType(*this,
                              {{getInput(), "input"}, {getOutput(), "output"}});
}

template <typename BN> static LogicalResult verifyBatchNorm(BN op) {
  if (failed(checkFloat(op, op.getX(), "X")) ||
      failed(checkSameElementType(
          op, {{op.getX(), "X"}, {op.getScale(), "scale"}, {op.getB(), "B"}})))
    return failure();
  if (op.getTrainingMode() != 0 && op.getTrainingMode() != 1)
    return op.emitOpError("training_mode must be 0 or 1");
  if (op.getEpsilon().isNegative())
    return op.emitOpError("epsilon must be >= 0");
  return checkChannelVectors(op, op.getX(),
                             {{op.getScale(), "scale"},
                              {op.getB(), "B"},
                              {op.getInputMean(), "input_mean"},
                              {op.getInputVar(), "input_var"}});
}

LogicalResult BatchNormalizationOp::verify() { return verifyBatchNorm(*this); }
LogicalResult BatchNormInternalOp::verify() { return verifyBatchNorm(*this); }

LogicalResult BatchNormalizationGradOp::verify() {
  if (failed(checkSameElementType(*this, {{getDY(), "dY"}, {getX(), "X"}})) ||
      failed(checkCompatibleShapes(*this, getDY(), "dY", getX(), "X")))
    return failure();
  return checkChannelVectors(*this, getX(),
                             {{getScale(), "scale"},
                              {getMean(), "mean"},
                              {getVariance(), "variance"}});
}

LogicalResult IdentityOp::verify() {
  if (!isPending(getOutput()) &&
      isa<SeqType>(getInput().getType()) != isa<SeqType>(getOutput().getType()))
    return emitOpError(
        "input and output must both be tensors or both sequences");
  return success();
}

LogicalResult ShapeOp::verify() {
  return checkShapeTensor(*this, getShape(), "the result");
}

LogicalResult CastOp::verify() {
  Type to = getElementType(getContext(), getTo());
  if (!to)
    return emitOpError() << "unsupported target data type " << getTo();
  if (Type t = elementTypeOf(getOutput()); t && t != to)
    return emitOpError() << "result element type " << t << " is not 'to' ("
                         << to << ")";
  return success();
}

template <typename Loss>
static LogicalResult verifyLoss(Loss op, Value scores, Value labels) {
  if (failed(checkReduction(op, op.getReduction())) ||
      failed(checkRankAtLeast(op, scores, "scores", 2)) ||
      failed(checkInteger(op, labels, "labels")) ||
      failed(checkFloat(op, scores, "scores")))
    return failure();
  auto ss = shapeOf(scores), ls = shapeOf(labels);
  if (ss && ls && ls->size() + 1 != ss->size())
    return op.emitOpError()
           << "labels " << labels.getType()
           << " must have one dim less than scores " << scores.getType();
  return success();
}

LogicalResult SoftmaxCrossEntropyLossOp::verify() {
  return verifyLoss(*this, getScores(), getLabels());
}
LogicalResult SoftmaxCrossEntropyLossInternalOp::verify() {
  return verifyLoss(*this, getScores(), getLabels());
}
LogicalResult SoftmaxCrossEntropyLossGradOp::verify() {
  return verifyLoss(*this, getLogProb(), getLabel());
}
LogicalResult SoftmaxCrossEntropyLossInternalGradOp::verify() {
  return verifyLoss(*this, getLogProb(), getLabel());
}

LogicalResult ScaleOp::verify() {
  if (getScaleDown() != 0 && getScaleDown() != 1)
    return emitOpError("scale_down must be 0 or 1");
  return checkOneElement(*this, getScale(), "scale");
}

LogicalResult InPlaceAccumulatorV2Op::verify() {
  if (failed(checkSameElementType(
          *this, {{getAccumulationBuffer(), "accumulation_buffer"},
                  {getValue(), "value"}})) ||
      failed(checkCompatibleShapes(*this, getAccumulationBuffer(),
                                   "accumulation_buffer", getValue(),
                                   "value")) ||
      failed(checkFlag(*this, getUpdatedFlag(), "updated_flag")))
    return failure();
  if (!isa<NoneType>(getOverwriteFlag().getType()))
    return checkFlag(*this, getOverwriteFlag(), "overwrite_flag");
  return success();
}

/// Optimizer params, gradients and moments: all sequences or all tensors.
static LogicalResult checkSameKind(Operation *op, ArrayRef<Value> vs) {
  std::optional<bool> seq;
  for (Value v : vs) {
    if (isa<NoneType>(v.getType()))
      continue;
    bool s = isa<SeqType>(v.getType());
    if (seq && *seq != s)
      return op->emitOpError("weights, gradients and moments must all be "
                             "sequences or all tensors");
    seq = s;
  }
  return success();
}

LogicalResult AdamWOptimizerOp::verify() {
  if (failed(checkOneElement(*this, getLr(), "lr")) ||
      failed(checkOneElement(*this, getStep(), "step")) ||
      failed(checkFlag(*this, getUpdatedFlag(), "updated_flag")))
    return failure();
  if (getAdamMode() != 0 && getAdamMode() != 1)
    return emitOpError("adam_mode must be 0 or 1");
  return checkSameKind(*this, {getWeights(), getGradients(), getMomentums_1(),
                               getMomentums_2()});
}

LogicalResult SGDOptimizerV2Op::verify() {
  if (failed(checkOneElement(*this, getLr(), "lr")) ||
      failed(checkFlag(*this, getUpdateCompleted(), "update_completed")))
    return failure();
  return checkSameKind(*this, {getWeights(), getGradients(), getMomentums()});
}

#define GET_OP_CLASSES
#include "comet/Dialect/ONNX/IR/ONNXOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Transformer ops
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::verify() {
  if (auto perm = getPerm()) {
    SmallVector<bool> seen(perm->size(), false);
    for (int64_t p : *perm)
      if (p < 0 || p >= int64_t(perm->size()) || std::exchange(seen[p], true))
        return emitOpError() << "perm [" << llvm::interleaved(*perm)
                             << "] is not a permutation";
    if (failed(checkRank(*this, getData(), "data", perm->size())))
      return failure();
  }
  return checkSameElementType(
      *this, {{getData(), "data"}, {getTransposed(), "transposed"}});
}

LogicalResult SoftmaxOp::verify() {
  return checkAxis(*this, getInput(), getAxis());
}

/// Scale-like vectors of layer normalization: as many elements as the
/// normalized dims [axis, rank) of x hold.
static LogicalResult
checkNormalizedVectors(Operation *op, Value x, int64_t axis,
                       ArrayRef<std::pair<Value, StringRef>> vs) {
  auto xs = shapeOf(x);
  if (!xs)
    return success();
  int64_t r = xs->size(), n = 1;
  for (int64_t i = axis < 0 ? axis + r : axis; i < r; ++i)
    n = isDyn((*xs)[i]) || isDyn(n) ? ShapedType::kDynamic : n * (*xs)[i];
  for (auto [v, name] : vs) {
    auto s = shapeOf(v);
    if (!s || isDyn(n) || llvm::any_of(*s, isDyn))
      continue;
    int64_t m = 1;
    for (int64_t d : *s)
      m *= d;
    if (m != n)
      return op->emitOpError()
             << name << " has " << m
             << " elements but the normalized dims of X hold " << n;
  }
  return success();
}

LogicalResult LayerNormalizationOp::verify() {
  if (failed(checkFloat(*this, getX(), "X")) ||
      failed(checkAxis(*this, getX(), getAxis())) ||
      failed(checkSameElementType(
          *this, {{getX(), "X"}, {getScale(), "Scale"}, {getB(), "B"}})))
    return failure();
  if (getEpsilon().isNegative())
    return emitOpError("epsilon must be >= 0");
  return checkNormalizedVectors(*this, getX(), getAxis(),
                                {{getScale(), "Scale"}, {getB(), "B"}});
}

LogicalResult LayerNormalizationGradOp::verify() {
  if (failed(checkFloat(*this, getX(), "X")) ||
      failed(checkAxis(*this, getX(), getAxis())) ||
      failed(checkCompatibleShapes(*this, getYGrad(), "Y_grad", getX(), "X")))
    return failure();
  return checkNormalizedVectors(*this, getX(), getAxis(),
                                {{getScale(), "scale"}});
}

/// Slice's and SliceGrad's starts, ends, axes? and steps?: 1-d integer
/// tensors; constant steps are non-zero.
static LogicalResult checkSliceOperands(Operation *op, Value starts, Value ends,
                                        Value axes, Value steps, Value data) {
  for (auto [v, name] : {std::pair{starts, "starts"}, std::pair{ends, "ends"},
                         std::pair{axes, "axes"}, std::pair{steps, "steps"}}) {
    if (isa<NoneType>(v.getType()))
      continue;
    if (failed(checkInteger(op, v, name)) || failed(checkRank(op, v, name, 1)))
      return failure();
  }
  if (auto st = getConstantInts(steps); st && llvm::is_contained(*st, 0))
    return op->emitOpError("steps must not be 0");
  auto s = shapeOf(data);
  auto ax = getConstantInts(axes);
  if (s && ax && failed(checkAxesList(op, *ax, s->size())))
    return failure();
  return success();
}

LogicalResult SliceOp::verify() {
  if (failed(checkSliceOperands(*this, getStarts(), getEnds(), getAxes(),
                                getSteps(), getData())))
    return failure();
  return checkSameElementType(*this,
                              {{getData(), "data"}, {getOutput(), "output"}});
}

LogicalResult SliceGradOp::verify() {
  if (failed(checkShapeTensor(*this, getShape(), "shape")) ||
      failed(checkSliceOperands(*this, getStarts(), getEnds(), getAxes(),
                                getSteps(), getDX())))
    return failure();
  return checkSameElementType(*this, {{getDY(), "dY"}, {getDX(), "dX"}});
}

LogicalResult SqueezeOp::verify() {
  if (!isa<NoneType>(getAxes().getType()) &&
      failed(checkShapeTensor(*this, getAxes(), "axes")))
    return failure();
  auto s = shapeOf(getData());
  if (auto axes = getConstantInts(getAxes()); s && axes) {
    if (failed(checkAxesList(*this, *axes, s->size())))
      return failure();
    for (int64_t a : *axes) {
      int64_t d = (*s)[a < 0 ? a + s->size() : a];
      if (!isDyn(d) && d != 1)
        return emitOpError() << "axis " << a << " has size " << d << ", not 1";
    }
  }
  return checkSameElementType(
      *this, {{getData(), "data"}, {getSqueezed(), "squeezed"}});
}

LogicalResult UnsqueezeOp::verify() {
  if (failed(checkShapeTensor(*this, getAxes(), "axes")))
    return failure();
  auto s = shapeOf(getData());
  if (auto axes = getConstantInts(getAxes());
      s && axes &&
      failed(checkAxesList(*this, *axes, s->size() + axes->size())))
    return failure();
  return checkSameElementType(
      *this, {{getData(), "data"}, {getExpanded(), "expanded"}});
}

LogicalResult ReduceMeanOp::verify() {
  return checkFloat(*this, getData(), "data");
}

LogicalResult SizeOp::verify() {
  if (Type t = elementTypeOf(getSize()); t && !t.isSignlessInteger(64))
    return emitOpError() << "the result must be a tensor of i64, got " << t;
  return checkRank(*this, getSize(), "the result", 0);
}

LogicalResult FusedMatMulOp::verify() {
  if (failed(checkRankAtLeast(*this, getA(), "A", 2)) ||
      failed(checkRankAtLeast(*this, getB(), "B", 2)) ||
      failed(checkSameElementType(*this, {{getA(), "A"}, {getB(), "B"}})))
    return failure();
  for (int64_t t :
       {getTransA(), getTransB(), getTransBatchA(), getTransBatchB()})
    if (t != 0 && t != 1)
      return emitOpError("transA, transB, transBatchA and transBatchB must be "
                         "0 or 1");
  auto as = shapeOf(getA()), bs = shapeOf(getB());
  if (as && bs && !getTransBatchA() && !getTransBatchB())
    return checkInnerDims(*this, getA(), getB(), getTransA(), getTransB(),
                          (*as)[as->size() - (getTransA() ? 2 : 1)],
                          (*bs)[bs->size() - (getTransB() ? 1 : 2)]);
  return success();
}

LogicalResult BiasGeluOp::verify() {
  if (failed(checkFloat(*this, getA(), "A")) ||
      failed(checkRankAtLeast(*this, getA(), "A", 1)) ||
      failed(checkRank(*this, getB(), "B", 1)) ||
      failed(checkSameElementType(*this, {{getA(), "A"}, {getB(), "B"}})))
    return failure();
  auto as = shapeOf(getA()), bs = shapeOf(getB());
  if (as && bs && !isDyn(as->back()) && !isDyn((*bs)[0]) &&
      as->back() != (*bs)[0])
    return emitOpError() << "B has " << (*bs)[0]
                         << " elements but A's last dim is " << as->back();
  return success();
}

LogicalResult BiasGeluGrad_dXOp::verify() {
  if (failed(checkRank(*this, getB(), "B", 1)))
    return failure();
  auto xs = shapeOf(getX()), bs = shapeOf(getB());
  if (xs && bs && !xs->empty() && !isDyn(xs->back()) && !isDyn((*bs)[0]) &&
      xs->back() != (*bs)[0])
    return emitOpError() << "B has " << (*bs)[0]
                         << " elements but X's last dim is " << xs->back();
  return success();
}

LogicalResult SoftmaxGrad_13Op::verify() {
  return checkAxis(*this, getY(), getAxis());
}

/// Dropout's optional ratio (one f32 element) and training_mode (one bool).
static LogicalResult checkDropoutInputs(Operation *op, Value ratio,
                                        Value trainingMode) {
  if (!isa<NoneType>(ratio.getType()) &&
      (failed(checkFloat(op, ratio, "ratio")) ||
       failed(checkOneElement(op, ratio, "ratio"))))
    return failure();
  if (isa<NoneType>(trainingMode.getType()))
    return success();
  return checkFlag(op, trainingMode, "training_mode");
}

LogicalResult DropoutOp::verify() {
  if (failed(checkFloat(*this, getData(), "data")) ||
      failed(checkSameElementType(
          *this, {{getData(), "data"}, {getOutput(), "output"}})) ||
      failed(checkDropoutInputs(*this, getRatio(), getTrainingMode())))
    return failure();
  if (isa<NoneType>(getMask().getType()))
    return success();
  if (Type t = elementTypeOf(getMask()); t && !t.isInteger(1))
    return emitOpError() << "mask must be a bool (i1) tensor, got " << t;
  return checkCompatibleShapes(*this, getData(), "data", getMask(), "mask");
}

LogicalResult DropoutGradOp::verify() {
  if (failed(checkFloat(*this, getDY(), "dY")) ||
      failed(checkDropoutInputs(*this, getRatio(), getTrainingMode())))
    return failure();
  if (Type t = elementTypeOf(getMask()); t && !t.isInteger(1))
    return emitOpError() << "mask must be a bool (i1) tensor, got " << t;
  return checkCompatibleShapes(*this, getDY(), "dY", getMask(), "mask");
}

LogicalResult ClipOp::verify() {
  if (failed(checkSameElementType(
          *this,
          {{getInput(), "input"}, {getMin(), "min"}, {getMax(), "max"}})))
    return failure();
  std::pair<Value, StringRef> bounds[] = {{getMin(), "min"}, {getMax(), "max"}};
  for (auto [v, name] : bounds)
    if (!isa<NoneType>(v.getType()) && failed(checkOneElement(*this, v, name)))
      return failure();
  return success();
}

LogicalResult WhereOp::verify() {
  if (Type t = elementTypeOf(getCondition()); t && !t.isInteger(1))
    return emitOpError() << "condition must be a bool (i1) tensor, got " << t;
  if (failed(checkSameElementType(
          *this, {{getX(), "X"}, {getY(), "Y"}, {getOutput(), "output"}})))
    return failure();
  // condition, X and Y broadcast together; the result is their broadcast.
  SmallVector<int64_t> shape, next;
  bool known = true;
  for (Value v : {getCondition(), getX(), getY()}) {
    auto s = shapeOf(v);
    if (!s) {
      known = false;
      continue;
    }
    if (!broadcastShapes(shape, *s, next))
      return emitOpError() << "condition " << getCondition().getType()
                           << ", X " << getX().getType() << " and Y "
                           << getY().getType() << " do not broadcast";
    shape = next;
  }
  auto out = shapeOf(getOutput());
  if (!known || !out)
    return success();
  bool ok = out->size() == shape.size();
  for (size_t i = 0; ok && i < shape.size(); ++i)
    ok = isDyn((*out)[i]) || isDyn(shape[i]) || (*out)[i] == shape[i];
  if (!ok)
    return emitOpError() << "output " << getOutput().getType()
                         << " is not the broadcast of condition, X and Y";
  return success();
}
LogicalResult AndOp::verify() {
  if (Type t = elementTypeOf(getA()); t && !t.isInteger(1))
    return emitOpError() << "A must be a bool (i1) tensor, got " << t;
  return success();
}

//===----------------------------------------------------------------------===//
// QuickGelu, AveragePool, Pad and their gradients
//===----------------------------------------------------------------------===//

// QuickGelu(X) and QuickGeluGrad(dY, X): ORT's fusion of X * Sigmoid(alpha X).
static LogicalResult checkFiniteAlpha(Operation *op, APFloat alpha) {
  if (!alpha.isFinite())
    return op->emitOpError("alpha must be finite");
  return success();
}
LogicalResult QuickGeluOp::verify() {
  return checkFiniteAlpha(*this, getAlpha());
}
LogicalResult QuickGeluGradOp::verify() {
  return checkFiniteAlpha(*this, getAlpha());
}

/// AveragePool and AveragePoolGrad: `x` is the tensor of the window's
/// rank (X or dY).
template <typename Pool> static LogicalResult verifyAveragePool(Pool op) {
  Value x = op->getOperand(0);
  if (failed(checkFloat(op, x, "X")) ||
      failed(verifyPool(op, x, op.getAutoPad(), op.getKernelShape(),
                        op.getPads(), op.getStrides(), op.getDilations(),
                        /*storageOrder=*/0)) ||
      failed(checkSameElementType(
          op, {{x, "input"}, {op->getResult(0), "result"}})))
    return failure();
  for (auto [v, name] :
       {std::pair{op.getCeilMode(), "ceil_mode"},
        std::pair{op.getCountIncludePad(), "count_include_pad"}})
    if (v != 0 && v != 1)
      return op.emitOpError() << name << " must be 0 or 1, got " << v;
  // ONNX: a window never lies wholly in the padding.
  ArrayRef<int64_t> k = op.getKernelShape();
  if (auto pads = op.getPads(); pads && pads->size() == 2 * k.size())
    for (auto [i, p] : llvm::enumerate(*pads))
      if (p >= k[i % k.size()])
        return op.emitOpError() << "pads [" << llvm::interleaved(*pads)
                                << "] must be smaller than kernel_shape ["
                                << llvm::interleaved(k) << "]";
  return checkRankAtLeast(op, op->getResult(0), "result", 3);
}

LogicalResult AveragePoolOp::verify() { return verifyAveragePool(*this); }
LogicalResult AveragePoolGradOp::verify() { return verifyAveragePool(*this); }

LogicalResult PadOp::verify() {
  if (!llvm::is_contained({"constant", "reflect", "edge", "wrap"}, getMode()))
    return emitOpError() << "unknown mode '" << getMode() << "'";
  if (failed(checkShapeTensor(*this, getPads(), "pads")) ||
      failed(checkSameElementType(
          *this, {{getData(), "data"}, {getOutput(), "output"}})))
    return failure();
  if (!isa<NoneType>(getConstantValue().getType()) &&
      (failed(checkOneElement(*this, getConstantValue(), "constant_value")) ||
       failed(checkSameElementType(
           *this,
           {{getData(), "data"}, {getConstantValue(), "constant_value"}}))))
    return failure();
  bool hasAxes = !isa<NoneType>(getAxes().getType());
  if (hasAxes && (failed(checkInteger(*this, getAxes(), "axes")) ||
                  failed(checkRank(*this, getAxes(), "axes", 1))))
    return failure();
  auto ds = shapeOf(getData()), os = shapeOf(getOutput());
  if (ds && os && ds->size() != os->size())
    return emitOpError() << "output has rank " << os->size()
                         << " but data has rank " << ds->size();
  auto ps = shapeOf(getPads());
  if (ds && ps && !hasAxes && !isDyn((*ps)[0]) &&
      (*ps)[0] != 2 * int64_t(ds->size()))
    return emitOpError() << "pads has " << (*ps)[0] << " values but data has "
                         << "rank " << ds->size() << " (expected "
                         << 2 * ds->size() << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// Exported eval graphs and embedding models
//===----------------------------------------------------------------------===//

LogicalResult PowOp::verify() {
  if (failed(checkFloat(*this, getX(), "X")) ||
      failed(checkFloat(*this, getY(), "Y")))
    return failure();
  auto a = shapeOf(getX()), b = shapeOf(getY());
  SmallVector<int64_t> out;
  if (a && b && !broadcastShapes(*a, *b, out))
    return emitOpError() << "operands " << getX().getType() << " and "
                         << getY().getType() << " do not broadcast";
  return checkSameElementType(*this, {{getX(), "X"}, {getZ(), "Z"}});
}

LogicalResult ModOp::verify() {
  // The Broadcast family has checked the element types and shapes.
  if (getFmod() != 0 && getFmod() != 1)
    return emitOpError() << "fmod must be 0 or 1, got " << getFmod();
  Type t = elementTypeOf(getA());
  if (!t)
    return success();
  if (t.isInteger(1) || !(isa<FloatType>(t) || t.isInteger()))
    return emitOpError() << "A must have an integer or float element type, "
                         << "got " << t;
  if (isa<FloatType>(t) && getFmod() != 1)
    return emitOpError() << "fmod must be 1 for " << t
                         << " operands (ONNX defines float Mod as fmod)";
  return success();
}

LogicalResult RangeOp::verify() {
  std::pair<Value, StringRef> operands[] = {
      {getStart(), "start"}, {getLimit(), "limit"}, {getDelta(), "delta"}};
  for (auto [v, name] : operands)
    if (auto s = shapeOf(v); s && !s->empty())
      return emitOpError() << name << " must be a scalar, got " << v.getType();
  if (failed(checkRank(*this, getOutput(), "the result", 1)) ||
      failed(checkSameElementType(*this, {{getStart(), "start"},
                                          {getLimit(), "limit"},
                                          {getDelta(), "delta"},
                                          {getOutput(), "the result"}})))
    return failure();
  if (auto d = getConstantInts(getDelta()); d && d->size() == 1 && (*d)[0] == 0)
    return emitOpError("delta must not be 0");
  return success();
}

static LogicalResult checkIndices(Operation *op, Value indices) {
  if (Type t = elementTypeOf(indices);
      t && !t.isSignlessInteger(64) && !t.isSignlessInteger(32))
    return op->emitOpError() << "indices must be i32 or i64, got " << t;
  return success();
}

LogicalResult GatherOp::verify() {
  if (failed(checkRankAtLeast(*this, getData(), "data", 1)) ||
      failed(checkAxis(*this, getData(), getAxis())) ||
      failed(checkIndices(*this, getIndices())) ||
      failed(checkSameElementType(
          *this, {{getData(), "data"}, {getOutput(), "output"}})))
    return failure();
  auto d = shapeOf(getData()), i = shapeOf(getIndices()),
       o = shapeOf(getOutput());
  if (d && i && o && o->size() != d->size() + i->size() - 1)
    return emitOpError() << "output must have rank "
                         << d->size() + i->size() - 1
                         << " (data rank + indices rank - 1), got "
                         << o->size();
  return success();
}

LogicalResult GatherGradOp::verify() {
  if (failed(checkShapeTensor(*this, getShape(), "shape")) ||
      failed(checkIndices(*this, getIndices())) ||
      failed(checkFloat(*this, getDY(), "dY")) ||
      failed(checkSameElementType(*this, {{getDY(), "dY"}, {getDX(), "dX"}})) ||
      failed(checkAxis(*this, getDX(), getAxis())))
    return failure();
  auto x = shapeOf(getDX()), i = shapeOf(getIndices()), dy = shapeOf(getDY());
  if (x && i && dy && dy->size() != x->size() + i->size() - 1)
    return emitOpError() << "dY must have rank " << x->size() + i->size() - 1
                         << " (dX rank + indices rank - 1), got " << dy->size();
  return success();
}

/// Concat and ConcatTraining: inputs of one element type and rank that
/// agree on every dim but `axis`.
static LogicalResult verifyConcat(Operation *op, ValueRange inputs,
                                  Value result, int64_t axis) {
  if (inputs.empty())
    return op->emitOpError() << "needs at least one input";
  SmallVector<std::pair<Value, StringRef>> named;
  for (Value v : inputs)
    named.push_back({v, "an input"});
  named.push_back({result, "the result"});
  if (failed(checkSameElementType(op, named)))
    return failure();
  std::optional<ArrayRef<int64_t>> first;
  for (Value v : inputs) {
    auto s = shapeOf(v);
    if (!s)
      continue;
    if (failed(checkAxis(op, v, axis)))
      return failure();
    if (!first) {
      first = s;
      continue;
    }
    if (s->size() != first->size())
      return op->emitOpError() << "inputs differ in rank: " << first->size()
                               << " and " << s->size();
    int64_t a = axis < 0 ? axis + int64_t(s->size()) : axis;
    for (int64_t d = 0; d < int64_t(s->size()); ++d)
      if (d != a && !isDyn((*s)[d]) && !isDyn((*first)[d]) &&
          (*s)[d] != (*first)[d])
        return op->emitOpError()
               << "inputs differ in dim " << d
               << " (not the axis): " << (*first)[d] << " and " << (*s)[d];
  }
  return success();
}

LogicalResult ConcatOp::verify() {
  return verifyConcat(*this, getInputs(), getConcatResult(), getAxis());
}

LogicalResult ConcatTrainingOp::verify() {
  if (failed(verifyConcat(*this, getInputs(), getConcatResult(), getAxis())))
    return failure();
  Value len = getPerInputLength();
  if (isa<NoneType>(len.getType()))
    return success();
  if (failed(checkShapeTensor(*this, len, "per_input_length")))
    return failure();
  if (auto s = shapeOf(len);
      s && !isDyn((*s)[0]) && (*s)[0] != int64_t(getInputs().size()))
    return emitOpError() << "per_input_length must have " << getInputs().size()
                         << " elements, got " << (*s)[0];
  return success();
}

LogicalResult SplitTrainingOp::verify() {
  if (getOutputs().empty())
    return emitOpError() << "needs at least one output";
  if (failed(checkShapeTensor(*this, getSplit(), "split")) ||
      failed(checkAxis(*this, getInput(), getAxis())))
    return failure();
  SmallVector<std::pair<Value, StringRef>> named = {{getInput(), "input"}};
  for (Value v : getOutputs())
    named.push_back({v, "an output"});
  return checkSameElementType(*this, named);
}

/// Equal parts of `dim` for `n` results: num_outputs' ceil-sized pieces
/// with a smaller last one, or (no num_outputs) an even division. Empty
/// when they do not exist.
static SmallVector<int64_t> equalSplit(int64_t dim, int64_t n,
                                       bool numOutputs) {
  if (n <= 0 || dim < 0)
    return {};
  if (!numOutputs) {
    if (dim % n != 0)
      return {};
    return SmallVector<int64_t>(n, dim / n);
  }
  int64_t chunk = dim / n + (dim % n != 0);
  SmallVector<int64_t> out(n, chunk);
  out.back() = dim - chunk * (n - 1);
  if (out.back() < 0)
    return {};
  return out;
}

std::optional<SmallVector<int64_t>> SplitOp::getSplitLengths() {
  int64_t n = getNumResults();
  if (!isa<NoneType>(getSplit().getType())) {
    auto split = getConstantInts(getSplit());
    if (!split || int64_t(split->size()) != n ||
        llvm::any_of(*split, [](int64_t l) { return l < 0; }))
      return std::nullopt;
    return split;
  }
  auto s = shapeOf(getInput());
  if (!s)
    return std::nullopt;
  int64_t r = s->size(), a = getAxis() < 0 ? getAxis() + r : getAxis();
  if (a < 0 || a >= r || isDyn((*s)[a]))
    return std::nullopt;
  SmallVector<int64_t> out =
      equalSplit((*s)[a], n, getNumOutputs().has_value());
  if (out.empty())
    return std::nullopt;
  return out;
}

LogicalResult SplitOp::verify() {
  int64_t n = getNumResults();
  if (n == 0)
    return emitOpError() << "needs at least one output";
  if (failed(checkAxis(*this, getInput(), getAxis())))
    return failure();
  SmallVector<std::pair<Value, StringRef>> named = {{getInput(), "input"}};
  for (Value v : getOutputs())
    named.push_back({v, "an output"});
  if (failed(checkSameElementType(*this, named)))
    return failure();
  bool hasSplit = !isa<NoneType>(getSplit().getType());
  if (auto k = getNumOutputs()) {
    if (hasSplit)
      return emitOpError("takes either the split input or num_outputs, not "
                         "both");
    if (*k != n)
      return emitOpError() << "num_outputs is " << *k << " but the op has " << n
                           << " results";
  }
  auto s = shapeOf(getInput());
  int64_t r = s ? int64_t(s->size()) : 0;
  int64_t a = getAxis() < 0 ? getAxis() + r : getAxis();
  int64_t dim = s ? (*s)[a] : ShapedType::kDynamic;
  SmallVector<int64_t> lengths;
  if (hasSplit) {
    if (failed(checkShapeTensor(*this, getSplit(), "split")))
      return failure();
    if (auto ss = shapeOf(getSplit()); ss && !isDyn((*ss)[0]) && (*ss)[0] != n)
      return emitOpError() << "split must have " << n
                           << " elements (one per output), got " << (*ss)[0];
    if (auto split = getConstantInts(getSplit())) {
      if (int64_t(split->size()) != n)
        return emitOpError() << "split must have " << n
                             << " elements (one per output), got "
                             << split->size();
      __int128 sum = 0;
      for (int64_t l : *split) {
        if (l < 0)
          return emitOpError() << "split lengths must not be negative, got "
                               << l;
        sum += l;
      }
      if (!isDyn(dim) && sum != dim)
        return emitOpError() << "split lengths sum to " << int64_t(sum)
                             << " but the input's dim " << a << " is " << dim;
      lengths = *split;
    }
  } else if (!isDyn(dim)) {
    lengths = equalSplit(dim, n, getNumOutputs().has_value());
    if (lengths.empty())
      return emitOpError() << "dim " << a << " of size " << dim
                           << " does not split into " << n
                           << (getNumOutputs() ? " pieces of ceil(" +
                                                     std::to_string(dim) +
                                                     " / " + std::to_string(n) +
                                                     ")"
                                               : std::string(" equal pieces"));
  }
  // Each output is the input with its piece's length along the axis.
  if (!s)
    return success();
  for (auto [i, v] : llvm::enumerate(getOutputs())) {
    auto o = shapeOf(v);
    if (!o)
      continue;
    bool ok = int64_t(o->size()) == r;
    for (int64_t d = 0; ok && d < r; ++d) {
      int64_t want = d == a ? (lengths.empty() ? ShapedType::kDynamic
                                                : lengths[i])
                            : (*s)[d];
      ok = isDyn(want) || isDyn((*o)[d]) || (*o)[d] == want;
    }
    if (!ok)
      return emitOpError() << "output #" << i << " " << v.getType()
                           << " is not a piece of the input "
                           << getInput().getType() << " along axis " << a;
  }
  return success();
}
