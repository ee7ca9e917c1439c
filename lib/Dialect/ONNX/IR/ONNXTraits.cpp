//===- ONNXTraits.cpp - Verification and inference of the op families ----===//
#include "comet/Dialect/ONNX/IR/ONNXTraits.h"
#include "ShapeHelpers.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace comet::onnx;
using namespace comet::onnx::shape;
using namespace comet::onnx::checks;
using namespace comet::onnx::infer;

LogicalResult family::verifyUnaryElementwise(Operation *op, ElementKind kind) {
  Value x = op->getOperand(0), y = op->getResult(0);
  std::string xName = getOperandName(op, 0), yName = getResultName(op, 0);
  switch (kind) {
  case ElementKind::Any:
    break;
  case ElementKind::Float:
    if (failed(checkFloat(op, x, xName)))
      return failure();
    break;
  case ElementKind::FloatOrSignedInt:
    if (Type t = elementTypeOf(x);
        t && !isa<FloatType>(t) && (!t.isSignlessInteger() || t.isInteger(1)))
      return op->emitOpError()
             << xName << " must have a float or signed integer element type, "
             << "got " << t;
    break;
  }
  if (failed(checkSameElementType(op, {{x, xName}, {y, yName}})))
    return failure();
  return checkCompatibleShapes(op, x, xName, y, yName);
}

LogicalResult family::verifyElementwiseGradient(Operation *op) {
  Value dy = op->getOperand(0), saved = op->getOperand(1),
        dx = op->getResult(0);
  std::string dyName = getOperandName(op, 0), savedName = getOperandName(op, 1),
              dxName = getResultName(op, 0);
  if (failed(checkFloat(op, saved, savedName)) ||
      failed(checkSameElementType(
          op, {{dy, dyName}, {saved, savedName}, {dx, dxName}})) ||
      failed(checkCompatibleShapes(op, dy, dyName, saved, savedName)))
    return failure();
  return checkCompatibleShapes(op, dx, dxName, saved, savedName);
}

LogicalResult family::verifyBroadcast(Operation *op, BroadcastResult r) {
  if (op->getNumOperands() == 0)
    return op->emitOpError("needs at least one input");
  SmallVector<std::string> names;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    names.push_back(getOperandName(op, i));
  names.push_back(getResultName(op, 0));
  SmallVector<std::pair<Value, StringRef>> typed;
  for (auto [v, name] : llvm::zip(op->getOperands(), names))
    typed.push_back({v, name});
  if (r == BroadcastResult::Same)
    typed.push_back({op->getResult(0), names.back()});
  if (failed(checkSameElementType(op, typed)))
    return failure();
  if (Type t = elementTypeOf(op->getResult(0));
      r == BroadcastResult::Bool && t && !t.isInteger(1))
    return op->emitOpError() << "result must be a bool (i1) tensor, got " << t;
  // A binary op names both operands; a variadic one (Sum) the one that
  // does not fit the broadcast of those before it.
  const OpInfo *info = lookupOpInfo(op->getName().stripDialect());
  bool binary = op->getNumOperands() == 2 && info && info->maxInputs == 2;
  SmallVector<int64_t> shape, next;
  bool first = true;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    auto s = shapeOf(v);
    if (!s)
      continue;
    if (first) {
      shape.assign(s->begin(), s->end());
      first = false;
      continue;
    }
    if (!broadcastShapes(shape, *s, next)) {
      if (binary)
        return op->emitOpError()
               << "operands " << op->getOperand(0).getType() << " and "
               << op->getOperand(1).getType() << " do not broadcast";
      return op->emitOpError() << "operand #" << i << " of type " << v.getType()
                               << " does not broadcast with the others";
    }
    shape = next;
  }
  return success();
}

LogicalResult family::inferBroadcast(Operation *op, BroadcastResult r,
                                     SmallVectorImpl<Type> &types) {
  init(op, types);
  if (op->getNumOperands() == 0)
    return success();
  Type elt = r == BroadcastResult::Bool ? IntegerType::get(op->getContext(), 1)
                                        : elementTypeOf(op->getOperand(0));
  types[0] = broadcastType(op->getOperands(), elt);
  return success();
}

LogicalResult family::verifyResultsLike(Operation *op,
                                        ArrayRef<unsigned> operands) {
  if (operands.size() != op->getNumResults() ||
      llvm::any_of(operands,
                   [&](unsigned k) { return k >= op->getNumOperands(); }))
    return op->emitOpError("ResultsLike names ")
           << operands.size() << " operands for " << op->getNumResults()
           << " results";
  for (auto [i, k] : llvm::enumerate(operands)) {
    Value r = op->getResult(i), o = op->getOperand(k);
    if (isNone(r) || isNone(o))
      continue;
    std::string rName = getResultName(op, i), oName = getOperandName(op, k);
    if (failed(checkSameElementType(op, {{r, rName}, {o, oName}})) ||
        failed(checkCompatibleShapes(op, r, rName, o, oName)))
      return failure();
  }
  return success();
}

LogicalResult family::inferResultsLike(Operation *op,
                                       ArrayRef<unsigned> operands,
                                       SmallVectorImpl<Type> &types) {
  init(op, types);
  for (auto [i, k] : llvm::enumerate(operands))
    types[i] = sameAs(op->getOperand(k));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

family::ReductionAxes family::reductionAxes(Value axesOperand,
                                            bool noopWithEmptyAxes) {
  ReductionAxes::Kind empty =
      noopWithEmptyAxes ? ReductionAxes::Identity : ReductionAxes::All;
  if (isNone(axesOperand))
    return {empty, {}, Value()};
  auto axes = getConstantInts(axesOperand);
  if (!axes)
    return {ReductionAxes::Unknown, {}, axesOperand};
  if (axes->empty())
    return {empty, {}, axesOperand};
  return {ReductionAxes::Listed, *axes, axesOperand};
}

family::ReductionAxes
family::reductionAxes(std::optional<ArrayRef<int64_t>> axesAttr) {
  if (!axesAttr || axesAttr->empty())
    return {ReductionAxes::All, {}, Value()};
  return {ReductionAxes::Listed, SmallVector<int64_t>(*axesAttr), Value()};
}

LogicalResult family::verifyReduction(Operation *op,
                                      const ReductionAxes &axes) {
  if (axes.operand && failed(checkShapeTensor(op, axes.operand, "axes")))
    return failure();
  Value data = op->getOperand(0), reduced = op->getResult(0);
  if (auto s = shapeOf(data); s && axes.kind == ReductionAxes::Listed &&
                              failed(checkAxesList(op, axes.axes, s->size())))
    return failure();
  return checkSameElementType(
      op, {{data, getOperandName(op, 0)}, {reduced, getResultName(op, 0)}});
}

LogicalResult family::inferReduction(Operation *op, const ReductionAxes &axes,
                                     bool keepdims,
                                     SmallVectorImpl<Type> &types) {
  init(op, types);
  Value data = op->getOperand(0);
  Type elt = elementTypeOf(data);
  auto s = shapeOf(data);
  if (!s) {
    types[0] = tensorOf(std::nullopt, elt);
    return success();
  }
  int64_t r = s->size();
  SmallVector<bool> reduced(r, axes.kind == ReductionAxes::All);
  switch (axes.kind) {
  case ReductionAxes::Identity:
    types[0] = sameAs(data);
    return success();
  case ReductionAxes::Unknown:
    // With keepdims the rank stays; without it, it is unknown.
    types[0] = keepdims
                   ? RankedTensorType::get(SmallVector<int64_t>(r, kDyn), elt)
                   : tensorOf(std::nullopt, elt);
    return success();
  case ReductionAxes::All:
    break;
  case ReductionAxes::Listed:
    // The verifier has checked the axes against the rank.
    for (int64_t a : axes.axes)
      reduced[a < 0 ? a + r : a] = true;
    break;
  }
  // Reduced dims become 1 with keepdims and vanish without.
  SmallVector<int64_t> out;
  for (auto [d, isReduced] : llvm::zip_equal(*s, reduced)) {
    if (!isReduced)
      out.push_back(d);
    else if (keepdims)
      out.push_back(1);
  }
  types[0] = RankedTensorType::get(out, elt);
  return success();
}
