//===- CometOps.cpp - comet op verifiers ----------------------------------===//
#include "comet/Dialect/Comet/IR/CometOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace comet;

/// Checks that `tensor` is the type that `compressed` stores, naming the part
/// that differs so the message says what to fix.
static LogicalResult verifySameTensor(Operation *op, RankedTensorType tensor,
                                      CompressedType compressed) {
  RankedTensorType stored = compressed.getTensorType();
  if (tensor.getShape() != stored.getShape())
    return op->emitOpError("shape mismatch: tensor is ")
           << tensor << " but the compressed type stores " << stored;
  if (tensor.getElementType() != stored.getElementType())
    return op->emitOpError("element type mismatch: tensor has ")
           << tensor.getElementType() << " but the compressed type stores "
           << stored.getElementType();
  return success();
}

LogicalResult CompressOp::verify() {
  auto resultType = getResult().getType();
  if (failed(verifySameTensor(*this, getInput().getType(), resultType)))
    return failure();
  Codec codec = resultType.getCodec();
  if (isLossy(codec) && !getBound())
    return emitOpError("lossy codec '")
           << stringifyCodec(codec) << "' needs an error bound";
  if (!isLossy(codec) && getBound())
    return emitOpError("lossless codec '")
           << stringifyCodec(codec) << "' takes no error bound";

  return verifyUniqueSlots(*this);
}

static std::optional<int64_t> getSlot(CompressOp op) {
  return op.getBound() ? op.getBound()->getSlot() : std::nullopt;
}

/// Slots name run-time cells, so two compressions in one function must not
/// share one. Checking every op against the whole function would be
/// quadratic, so one op per function checks all of them in a single walk:
/// the first slotted compress in walk order. Each op first looks back in its
/// own block; only the first slotted op of a block walks further, so the
/// backward scans add up to the block's length.
LogicalResult comet::verifyUniqueSlots(CompressOp op) {
  if (!getSlot(op))
    return success();
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
    if (auto other = dyn_cast<CompressOp>(prev); other && getSlot(other))
      return success();
  auto func = op->getParentOfType<FunctionOpInterface>();
  if (!func)
    return success();

  llvm::DenseMap<int64_t, CompressOp> firstUse;
  bool isChecker = false, ok = true;
  func->walk([&](CompressOp other) {
    std::optional<int64_t> slot = getSlot(other);
    if (!slot)
      return WalkResult::advance();
    if (firstUse.empty() && other != op)
      return WalkResult::interrupt(); // Another op is the checker.
    isChecker = true;
    auto [it, inserted] = firstUse.try_emplace(*slot, other);
    if (!inserted) {
      other.emitOpError("slot ")
              .append(*slot, " is already used in this function")
              .attachNote(it->second.getLoc())
          << "first used here";
      ok = false;
    }
    return WalkResult::advance();
  });
  return success(!isChecker || ok);
}

LogicalResult DecompressOp::verify() {
  return verifySameTensor(*this, getResult().getType(), getInput().getType());
}

LogicalResult OptimizerUpdateOp::verify() {
  int n = numStates(getKind());
  if (n < 0)
    return emitOpError("kind '")
           << getKind() << "' is not adamw, sgd_v2 or sgd_momentum";
  if (static_cast<int>(getStates().size()) != n)
    return emitOpError("kind '")
           << getKind() << "' keeps " << n << " state(s) per parameter, got "
           << getStates().size();
  auto w = cast<RankedTensorType>(getWeight().getType());
  if (!w.getElementType().isF32())
    return emitOpError("expects an f32 weight, got ") << w;
  if (getGrad().getType() != w)
    return emitOpError("expects the gradient of the weight's type ")
           << w << ", got " << getGrad().getType();
  for (Value s : getStates())
    if (s.getType() != w)
      return emitOpError("expects states of the weight's type ")
             << w << ", got " << s.getType();
  auto scalar = [](Value v, Type elt) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getElementType() == elt && t.hasStaticShape() &&
           t.getNumElements() == 1;
  };
  Builder b(getContext());
  if (!scalar(getLr(), b.getF32Type()))
    return emitOpError("expects a one-element f32 learning rate, got ")
           << getLr().getType();
  if (!scalar(getStep(), b.getI64Type()))
    return emitOpError("expects a one-element i64 step count, got ")
           << getStep().getType();
  if (getAdamMode() != 0 && getAdamMode() != 1)
    return emitOpError("adam_mode must be 0 or 1, got ") << getAdamMode();
  if (getCorrectBias() != 0 && getCorrectBias() != 1)
    return emitOpError("correct_bias must be 0 or 1, got ") << getCorrectBias();
  return success();
}

LogicalResult BatchNormApplyOp::verify() {
  auto x = cast<RankedTensorType>(getX().getType());
  if (!x.getElementType().isF32() || x.getRank() < 2 || x.getRank() > 5)
    return emitOpError("expects an f32 input of rank 2 to 5, got ") << x;
  if (getY().getType() != x)
    return emitOpError("expects a result of the input's type ")
           << x << ", got " << getY().getType();
  int64_t c = x.getDimSize(1);
  for (auto [v, what] :
       {std::pair{getScale(), "scale"}, std::pair{getBias(), "bias"},
        std::pair{getSavedMean(), "saved_mean"},
        std::pair{getSavedInvStd(), "saved_inv_std"}}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (!t.getElementType().isF32() || t.getRank() != 1 ||
        (c != ShapedType::kDynamic && !t.isDynamicDim(0) &&
         t.getDimSize(0) != c))
      return emitOpError("expects ")
             << what << " to be an f32 vector of the input's " << c
             << " channels, got " << t;
  }
  StringRef act = getActivation();
  if (act != "none" && act != "relu" && act != "clip")
    return emitOpError("activation must be none, relu or clip, got '")
           << act << "'";
  return success();
}

#define GET_OP_CLASSES
#include "comet/Dialect/Comet/IR/CometOps.cpp.inc"
