//===- ONNXTypeInference.cpp - Result types of onnx ops -------------------===//
//
// Training graphs written by ONNX Runtime leave many values without
// value_info (gradients of parameters, saved BatchNorm statistics, pooling
// indices, shapes). The importer asks these functions for the types it does
// not find in the file. Each one follows the op's ONNX definition; what
// depends on run-time values is `?` or unranked. The ops of a family
// (ONNXTraits.h) have theirs from the family's trait.
//
//===----------------------------------------------------------------------===//
#include "ShapeHelpers.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace comet::onnx;
using namespace comet::onnx::shape;
using namespace comet::onnx::infer;

LogicalResult
comet::onnx::inferVerifiedResultTypes(Operation *op,
                                      SmallVectorImpl<Type> &types) {
  types.clear();
  auto infer = dyn_cast<TypeInferenceOpInterface>(op);
  if (!infer || failed(mlir::verify(op, /*verifyRecursively=*/false)))
    return failure();
  return infer.inferResultTypes(types);
}

static Type flagType(MLIRContext *ctx) {
  return RankedTensorType::get({1}, IntegerType::get(ctx, 1));
}

LogicalResult ConstantOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Builder b(getContext());
  if (auto v = getValueAttr())
    types[0] = v.getType();
  else if (getValueFloatAttr())
    types[0] = RankedTensorType::get({}, b.getF32Type());
  else if (auto v = getValueFloatsAttr())
    types[0] = RankedTensorType::get({int64_t(v.size())}, b.getF32Type());
  else if (getValueIntAttr())
    types[0] = RankedTensorType::get({}, b.getI64Type());
  else if (auto v = getValueIntsAttr())
    types[0] = RankedTensorType::get({int64_t(v.size())}, b.getI64Type());
  return success();
}

LogicalResult ConvOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getX());
  auto xs = shapeOf(getX()), ws = shapeOf(getW());
  if (!xs || !ws || xs->size() != ws->size() || xs->size() < 3) {
    types[0] = tensorOf(std::nullopt, elt);
    return success();
  }
  SmallVector<int64_t> kernel(ws->drop_front(2));
  if (auto k = getKernelShape())
    kernel.assign(k->begin(), k->end());
  if (kernel.size() != xs->size() - 2 || llvm::any_of(kernel, isDyn)) {
    types[0] = tensorOf(std::nullopt, elt);
    return success();
  }
  types[0] = tensorOf(ArrayRef<int64_t>(windowOutputShape(
                          *xs, (*ws)[0], kernel, getPads(), getStrides(),
                          getDilations(), getAutoPad(), false)),
                      elt);
  return success();
}

LogicalResult MaxPoolOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getX());
  auto xs = shapeOf(getX());
  std::optional<SmallVector<int64_t>> shape;
  if (xs && xs->size() == getKernelShape().size() + 2)
    shape = windowOutputShape(*xs, (*xs)[1], getKernelShape(), getPads(),
                              getStrides(), getDilations(), getAutoPad(),
                              getCeilMode() != 0);
  std::optional<ArrayRef<int64_t>> ref;
  if (shape)
    ref = ArrayRef<int64_t>(*shape);
  types[0] = tensorOf(ref, elt);
  // Window positions (comet-compact-pool-indices) stay positions.
  Type indices = elementTypeOf(getIndices());
  types[1] = tensorOf(ref, indices && indices.isUnsignedInteger(8)
                               ? indices
                               : IntegerType::get(getContext(), 64));
  return success();
}

/// dX of a pooling gradient: it has the forward input's shape. Pooling
/// keeps the batch and channel dims, so those are dY's; the spatial dims
/// are not told by dY (floor and ceil_mode map several input sizes to one
/// output size).
static Type poolGradType(Value dY) {
  Type elt = elementTypeOf(dY);
  auto s = shapeOf(dY);
  if (!s || s->size() < 2)
    return tensorOf(std::nullopt, elt);
  SmallVector<int64_t> out(s->size(), kDyn);
  out[0] = (*s)[0];
  out[1] = (*s)[1];
  return RankedTensorType::get(out, elt);
}

LogicalResult MaxPoolGradOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] = poolGradType(getDY());
  return success();
}

LogicalResult
GlobalAveragePoolOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getX());
  if (auto xs = shapeOf(getX()); xs && xs->size() >= 2) {
    SmallVector<int64_t> shape(xs->take_front(2));
    shape.resize(xs->size(), 1);
    types[0] = tensorOf(ArrayRef<int64_t>(shape), elt);
  } else {
    types[0] = tensorOf(std::nullopt, elt);
  }
  return success();
}

LogicalResult GemmOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getA());
  auto as = shapeOf(getA()), bs = shapeOf(getB());
  int64_t m = as && as->size() == 2 ? (*as)[getTransA() ? 1 : 0] : kDyn;
  int64_t n = bs && bs->size() == 2 ? (*bs)[getTransB() ? 0 : 1] : kDyn;
  types[0] = RankedTensorType::get({m, n}, elt);
  return success();
}

LogicalResult MatMulOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getA());
  auto as = shapeOf(getA()), bs = shapeOf(getB());
  if (!as || !bs || as->empty() || bs->empty()) {
    types[0] = tensorOf(std::nullopt, elt);
    return success();
  }
  SmallVector<int64_t> a(*as), b(*bs);
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA)
    a.insert(a.begin(), 1);
  if (vecB)
    b.push_back(1);
  SmallVector<int64_t> batch;
  if (!broadcastShapes(ArrayRef(a).drop_back(2), ArrayRef(b).drop_back(2),
                       batch)) {
    types[0] = tensorOf(std::nullopt, elt);
    return success();
  }
  if (!vecA)
    batch.push_back(a[a.size() - 2]);
  if (!vecB)
    batch.push_back(b.back());
  types[0] = tensorOf(ArrayRef<int64_t>(batch), elt);
  return success();
}

LogicalResult FlattenOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getInput());
  auto s = shapeOf(getInput());
  int64_t axis = getAxis();
  if (s && axis < 0)
    axis += s->size();
  if (!s || axis < 0 || axis > int64_t(s->size())) {
    types[0] = RankedTensorType::get({kDyn, kDyn}, elt);
    return success();
  }
  types[0] = RankedTensorType::get(
      {product(s->take_front(axis)), product(s->drop_front(axis))}, elt);
  return success();
}

LogicalResult ReshapeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getData());
  auto in = shapeOf(getData());
  if (auto target = getConstantInts(getShape())) {
    SmallVector<int64_t> out;
    int64_t minus = -1;
    for (auto [i, d] : llvm::enumerate(*target)) {
      if (d == 0 && getAllowzero() == 0)
        out.push_back(in && i < in->size() ? (*in)[i] : kDyn);
      else if (d == -1 && minus < 0)
        minus = i, out.push_back(kDyn);
      else
        out.push_back(d < 0 ? kDyn : d); // The verifier rejects d < -1.
    }
    if (minus >= 0 && in) {
      int64_t total = product(*in), known = 1;
      for (auto [i, d] : llvm::enumerate(out))
        if (int64_t(i) != minus)
          known = isDyn(known) ? kDyn : product({known, d});
      if (!isDyn(total) && !isDyn(known) && known > 0 && total % known == 0)
        out[minus] = total / known;
    }
    types[0] = RankedTensorType::get(out, elt);
    return success();
  }
  types[0] = typeOfUnknownShape(getShape(), elt);
  return success();
}

LogicalResult ShapeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type i64 = IntegerType::get(getContext(), 64);
  auto s = shapeOf(getData());
  if (!s) {
    types[0] = RankedTensorType::get({kDyn}, i64);
    return success();
  }
  int64_t r = s->size();
  auto clamp = [&](int64_t x) {
    if (x < 0)
      x += r;
    return std::clamp<int64_t>(x, 0, r);
  };
  int64_t start = clamp(getStart()), end = getEnd() ? clamp(*getEnd()) : r;
  types[0] = RankedTensorType::get({std::max<int64_t>(0, end - start)}, i64);
  return success();
}

LogicalResult ExpandOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getInput());
  auto in = shapeOf(getInput());
  SmallVector<int64_t> out;
  if (auto target = getConstantInts(getShape());
      target && in && llvm::all_of(*target, [](int64_t d) { return d >= 0; }) &&
      broadcastShapes(*in, *target, out)) {
    types[0] = RankedTensorType::get(out, elt);
    return success();
  }
  auto ss = shapeOf(getShape());
  if (in && ss && ss->size() == 1 && !isDyn((*ss)[0]) &&
      (*ss)[0] <= kMaxInferredRank)
    types[0] = RankedTensorType::get(
        SmallVector<int64_t>(std::max<int64_t>((*ss)[0], in->size()), kDyn),
        elt);
  else
    types[0] = tensorOf(std::nullopt, elt);
  return success();
}

/// The entries of a 1-d i64 shape operand, `?` where they are not constant:
/// all of them when it folds, else piece by piece through a Concat (or
/// ConcatTraining) of 1-d pieces, as torch builds `[x.shape[0], 1, 1, 1]`.
static std::optional<SmallVector<int64_t>> partialConstantInts(Value v) {
  if (auto all = getConstantInts(v))
    return all;
  std::optional<ValueRange> pieces;
  if (auto cat = v.getDefiningOp<ConcatOp>())
    pieces = cat.getInputs();
  else if (auto cat = v.getDefiningOp<ConcatTrainingOp>();
           cat && v == cat.getConcatResult())
    pieces = cat.getInputs();
  if (!pieces)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (Value piece : *pieces) {
    if (auto part = getConstantInts(piece)) {
      out.append(*part);
      continue;
    }
    auto s = shapeOf(piece);
    if (!s || s->size() != 1 || isDyn((*s)[0]) || (*s)[0] > kMaxInferredRank)
      return std::nullopt;
    out.append((*s)[0], kDyn);
  }
  return out;
}

LogicalResult
ConstantOfShapeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = Float32Type::get(getContext());
  if (auto v = getValue())
    elt = cast<ShapedType>(v->getType()).getElementType();
  if (auto dims = partialConstantInts(getInput());
      dims && dims->size() <= size_t(kMaxInferredRank)) {
    types[0] = RankedTensorType::get(*dims, elt);
    return success();
  }
  types[0] = typeOfUnknownShape(getInput(), elt);
  return success();
}

LogicalResult CastOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] =
      tensorOf(shapeOf(getInput()), getElementType(getContext(), getTo()));
  return success();
}

template <typename Loss>
static void inferLoss(Loss op, Value scores, Value labels,
                      SmallVectorImpl<Type> &types) {
  init(op, types);
  Type elt = elementTypeOf(scores);
  if (op.getReduction() == "none")
    types[0] = tensorOf(shapeOf(labels), elt);
  else
    types[0] = RankedTensorType::get({}, elt);
  types[1] = sameAs(scores);
}

LogicalResult
SoftmaxCrossEntropyLossOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  inferLoss(*this, getScores(), getLabels(), types);
  return success();
}

LogicalResult SoftmaxCrossEntropyLossInternalOp::inferResultTypes(
    SmallVectorImpl<Type> &types) {
  inferLoss(*this, getScores(), getLabels(), types);
  return success();
}

LogicalResult ConvGradOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] = sameAs(getX());
  types[1] = sameAs(getW());
  Type elt = elementTypeOf(getW());
  auto ws = shapeOf(getW());
  types[2] = ws && !ws->empty() ? RankedTensorType::get({(*ws)[0]}, elt)
                                : tensorOf(std::nullopt, elt);
  return success();
}

LogicalResult
InPlaceAccumulatorV2Op::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] = flagType(getContext());
  types[1] = sameAs(getAccumulationBuffer());
  return success();
}

LogicalResult AdamWOptimizerOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] = flagType(getContext());
  types[1] = sameAs(getWeights());
  types[2] = sameAs(getMomentums_1());
  types[3] = sameAs(getMomentums_2());
  return success();
}

LogicalResult SGDOptimizerV2Op::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] = flagType(getContext());
  types[1] = sameAs(getWeights());
  types[2] = sameAs(getMomentums());
  return success();
}

//===----------------------------------------------------------------------===//
// Transformer ops
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getData());
  auto s = shapeOf(getData());
  if (!s) {
    types[0] = tensorOf(std::nullopt, elt);
    return success();
  }
  SmallVector<int64_t> out(s->rbegin(), s->rend());
  if (auto perm = getPerm())
    for (auto [i, p] : llvm::enumerate(*perm))
      out[i] = (*s)[p]; // The verifier has checked perm.
  types[0] = RankedTensorType::get(out, elt);
  return success();
}

/// X's shape with the normalized dims [axis, rank) set to 1: the shape of
/// layer normalization's saved statistics.
static Type statsType(Value x, int64_t axis) {
  Type elt = elementTypeOf(x);
  auto s = shapeOf(x);
  if (!s)
    return tensorOf(std::nullopt, elt);
  SmallVector<int64_t> out(*s);
  int64_t r = out.size();
  for (int64_t i = axis < 0 ? axis + r : axis; i >= 0 && i < r; ++i)
    out[i] = 1;
  return RankedTensorType::get(out, elt);
}

LogicalResult
LayerNormalizationOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] = sameAs(getX());
  types[1] = types[2] = statsType(getX(), getAxis());
  return success();
}

/// The result shape of a Slice of `dims`; dims stay `?` where the constant
/// operands do not tell.
static SmallVector<int64_t> slicedShape(ArrayRef<int64_t> dims, Value starts,
                                        Value ends, Value axes, Value steps) {
  int64_t r = dims.size();
  auto st = getConstantInts(starts), en = getConstantInts(ends);
  auto ax = getConstantInts(axes), sp = getConstantInts(steps);
  bool noAxes = isa<NoneType>(axes.getType()),
       noSteps = isa<NoneType>(steps.getType());
  SmallVector<int64_t> out(dims);
  if (!(ax || noAxes)) {
    out.assign(r, kDyn);
    return out;
  }
  size_t n = ax ? ax->size() : st ? st->size() : en ? en->size() : 0;
  if (!ax && !st && !en) {
    out.assign(r, kDyn);
    return out;
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t a = ax ? (*ax)[i] : int64_t(i);
    if (a < 0)
      a += r;
    if (a < 0 || a >= r)
      continue;
    int64_t d = dims[a];
    if (isDyn(d) || !st || !en || i >= st->size() || i >= en->size() ||
        (!noSteps && (!sp || i >= sp->size()))) {
      out[a] = kDyn;
      continue;
    }
    int64_t step = noSteps ? 1 : (*sp)[i];
    auto w = sliceAxis(d, (*st)[i], (*en)[i], step);
    out[a] = w ? w->second : kDyn;
  }
  return out;
}

LogicalResult SliceOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getData());
  auto s = shapeOf(getData());
  if (!s) {
    types[0] = tensorOf(std::nullopt, elt);
    return success();
  }
  types[0] = RankedTensorType::get(
      slicedShape(*s, getStarts(), getEnds(), getAxes(), getSteps()), elt);
  return success();
}

LogicalResult SliceGradOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getDY());
  if (auto target = getConstantInts(getShape());
      target && llvm::all_of(*target, [](int64_t d) { return d >= 0; })) {
    types[0] = RankedTensorType::get(*target, elt);
    return success();
  }
  types[0] = typeOfUnknownShape(getShape(), elt);
  return success();
}

LogicalResult SqueezeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getData());
  auto s = shapeOf(getData());
  types[0] = tensorOf(std::nullopt, elt);
  if (!s)
    return success();
  int64_t r = s->size();
  SmallVector<bool> drop(r, false);
  if (isa<NoneType>(getAxes().getType())) {
    if (llvm::any_of(*s, isDyn))
      return success(); // Which dims are 1 is not known.
    for (int64_t i = 0; i < r; ++i)
      drop[i] = (*s)[i] == 1;
  } else if (auto axes = getConstantInts(getAxes())) {
    for (int64_t a : *axes) {
      if (a < 0)
        a += r;
      if (a < 0 || a >= r)
        return success();
      drop[a] = true;
    }
  } else {
    return success();
  }
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < r; ++i)
    if (!drop[i])
      out.push_back((*s)[i]);
  types[0] = RankedTensorType::get(out, elt);
  return success();
}

LogicalResult UnsqueezeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getData());
  auto s = shapeOf(getData());
  auto axes = getConstantInts(getAxes());
  types[0] = tensorOf(std::nullopt, elt);
  if (!s || !axes)
    return success();
  int64_t r = s->size() + axes->size();
  SmallVector<bool> one(r, false);
  for (int64_t a : *axes) {
    if (a < 0)
      a += r;
    if (a < 0 || a >= r)
      return success();
    one[a] = true;
  }
  SmallVector<int64_t> out;
  size_t next = 0;
  for (int64_t i = 0; i < r; ++i)
    out.push_back(one[i] ? 1 : next < s->size() ? (*s)[next++] : kDyn);
  types[0] = RankedTensorType::get(out, elt);
  return success();
}

LogicalResult SizeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] = RankedTensorType::get({}, IntegerType::get(getContext(), 64));
  return success();
}

LogicalResult FusedMatMulOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getA());
  auto as = shapeOf(getA()), bs = shapeOf(getB());
  if (!as || !bs || as->size() < 2 || bs->size() < 2 || getTransBatchA() ||
      getTransBatchB()) {
    types[0] = tensorOf(std::nullopt, elt);
    return success();
  }
  SmallVector<int64_t> batch;
  if (!broadcastShapes(as->drop_back(2), bs->drop_back(2), batch)) {
    types[0] = tensorOf(std::nullopt, elt);
    return success();
  }
  batch.push_back((*as)[as->size() - (getTransA() ? 1 : 2)]);
  batch.push_back((*bs)[bs->size() - (getTransB() ? 2 : 1)]);
  types[0] = RankedTensorType::get(batch, elt);
  return success();
}

LogicalResult DropoutOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] = sameAs(getData());
  types[1] = tensorOf(shapeOf(getData()), IntegerType::get(getContext(), 1));
  return success();
}

LogicalResult AveragePoolOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getX());
  auto xs = shapeOf(getX());
  if (xs && xs->size() == getKernelShape().size() + 2)
    types[0] =
        tensorOf(ArrayRef<int64_t>(windowOutputShape(
                     *xs, (*xs)[1], getKernelShape(), getPads(), getStrides(),
                     getDilations(), getAutoPad(), getCeilMode() != 0)),
                 elt);
  else
    types[0] = tensorOf(std::nullopt, elt);
  return success();
}

LogicalResult
AveragePoolGradOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] = poolGradType(getDY());
  return success();
}

/// The largest dim Pad infers; beyond it the result dim stays unknown.
static constexpr int64_t kMaxDim = INT64_MAX / 2;

LogicalResult PadOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getData());
  auto ds = shapeOf(getData());
  if (!ds) {
    types[0] = tensorOf(std::nullopt, elt);
    return success();
  }
  int64_t r = ds->size();
  SmallVector<int64_t> out(r, kDyn);
  types[0] = RankedTensorType::get(out, elt);
  auto pads = getConstantInts(getPads());
  // The padded dims: all, or `axes` (negative counts from the end).
  SmallVector<int64_t> axes;
  if (isa<NoneType>(getAxes().getType())) {
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  } else if (auto a = getConstantInts(getAxes())) {
    for (int64_t x : *a) {
      if (x < -r || x >= r)
        return success();
      axes.push_back(x < 0 ? x + r : x);
    }
  } else {
    return success();
  }
  if (!pads || pads->size() != 2 * axes.size())
    return success();
  out.assign(ds->begin(), ds->end());
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (isDyn(out[a]))
      continue;
    // In 128 bits: pads come from untrusted files.
    __int128 d = __int128(out[a]) + (*pads)[i] + (*pads)[i + axes.size()];
    if (d < 0 || d > kMaxDim)
      return success();
    out[a] = int64_t(d);
  }
  types[0] = RankedTensorType::get(out, elt);
  return success();
}

//===----------------------------------------------------------------------===//
// Exported eval graphs and embedding models
//===----------------------------------------------------------------------===//

LogicalResult PowOp::inferResultTypes(SmallVectorImpl<Type> &t) {
  return family::inferBroadcast(*this, BroadcastResult::Same, t);
}

/// data's dims with dim `axis` replaced by the indices' dims.
static std::optional<SmallVector<int64_t>>
gatheredShape(std::optional<ArrayRef<int64_t>> data,
              std::optional<ArrayRef<int64_t>> indices, int64_t axis) {
  if (!data || !indices)
    return std::nullopt;
  int64_t r = data->size();
  if (axis < 0)
    axis += r;
  if (axis < 0 || axis >= r)
    return std::nullopt;
  SmallVector<int64_t> out(data->begin(), data->begin() + axis);
  out.append(indices->begin(), indices->end());
  out.append(data->begin() + axis + 1, data->end());
  return out;
}

LogicalResult GatherOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  auto s = gatheredShape(shapeOf(getData()), shapeOf(getIndices()), getAxis());
  types[0] = tensorOf(s ? std::optional<ArrayRef<int64_t>>(*s) : std::nullopt,
                      elementTypeOf(getData()));
  return success();
}

LogicalResult GatherGradOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getDY());
  if (auto target = getConstantInts(getShape())) {
    SmallVector<int64_t> dims(*target);
    for (int64_t &d : dims)
      if (d < 0)
        d = kDyn;
    types[0] = tensorOf(ArrayRef<int64_t>(dims), elt);
  } else {
    types[0] = typeOfUnknownShape(getShape(), elt);
  }
  return success();
}

/// The inputs' common shape with their lengths along `axis` summed.
static Type concatType(ValueRange inputs, int64_t axis) {
  Type elt = inputs.empty() ? Type() : elementTypeOf(inputs.front());
  SmallVector<int64_t> out;
  for (auto [i, v] : llvm::enumerate(inputs)) {
    auto s = shapeOf(v);
    if (!s)
      return tensorOf(std::nullopt, elt);
    int64_t r = s->size(), a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r || (i > 0 && int64_t(out.size()) != r))
      return tensorOf(std::nullopt, elt);
    if (i == 0) {
      out.assign(s->begin(), s->end());
      continue;
    }
    for (int64_t d = 0; d < r; ++d) {
      int64_t x = (*s)[d];
      int64_t sum;
      if (d == a) // Dims come from the file: a sum may overflow.
        out[d] =
            isDyn(out[d]) || isDyn(x) || __builtin_add_overflow(out[d], x, &sum)
                ? kDyn
                : sum;
      else if (isDyn(out[d]))
        out[d] = x;
    }
  }
  return tensorOf(ArrayRef<int64_t>(out), elt);
}

LogicalResult ConcatOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] = concatType(getInputs(), getAxis());
  return success();
}

LogicalResult ConcatTrainingOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  types[0] = concatType(getInputs(), getAxis());
  types[1] = RankedTensorType::get({int64_t(getInputs().size())},
                                   IntegerType::get(getContext(), 64));
  return success();
}

LogicalResult SplitTrainingOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getInput());
  auto s = shapeOf(getInput());
  auto split = getConstantInts(getSplit());
  for (unsigned i = 0; i < getNumResults(); ++i) {
    if (!s) {
      types[i] = tensorOf(std::nullopt, elt);
      continue;
    }
    SmallVector<int64_t> dims(*s);
    int64_t r = dims.size(), a = getAxis() < 0 ? getAxis() + r : getAxis();
    if (a < 0 || a >= r) {
      types[i] = tensorOf(std::nullopt, elt);
      continue;
    }
    dims[a] = split && split->size() == getNumResults() && (*split)[i] >= 0
                  ? (*split)[i]
                  : kDyn;
    types[i] = tensorOf(ArrayRef<int64_t>(dims), elt);
  }
  return success();
}

LogicalResult WhereOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  // The broadcast of condition, X and Y, with X's element type.
  init(*this, types);
  types[0] = broadcastType(getOperands(), elementTypeOf(getX()));
  return success();
}

LogicalResult RangeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getStart());
  SmallVector<int64_t> shape{kDyn};
  if (auto c = getConstantInts(getOutput()))
    shape[0] = c->size();
  types[0] = tensorOf(ArrayRef<int64_t>(shape), elt);
  return success();
}

LogicalResult SplitOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  init(*this, types);
  Type elt = elementTypeOf(getInput());
  auto s = shapeOf(getInput());
  auto lengths = getSplitLengths();
  for (unsigned i = 0; i < getNumResults(); ++i) {
    if (!s) {
      types[i] = tensorOf(std::nullopt, elt);
      continue;
    }
    // The verifier has checked the axis.
    SmallVector<int64_t> dims(*s);
    int64_t a = getAxis() < 0 ? getAxis() + int64_t(dims.size()) : getAxis();
    dims[a] = lengths ? (*lengths)[i] : kDyn;
    types[i] = tensorOf(ArrayRef<int64_t>(dims), elt);
  }
  return success();
}
