//===- HoistMasks.cpp - Keep masks instead of values the backward compares ===//
//
// ONNX Runtime's Clip gradient compares the forward's input against min and
// max in the backward, so the input (a float) stays live across the whole
// step. The comparisons read only forward values: computed in the forward,
// they leave a bool mask alive instead (a byte per element, a bit once
// compress-activations stores it), and the float dies at its last forward
// use. The mask is then applied by DropoutGrad with ratio 0, which reads it
// as a mask (ReluMask), not by Mul(dY, Cast(mask)). Both steps are exact.
//
//===----------------------------------------------------------------------===//
#include "comet/Analysis/ActivationLiveness.h"
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace comet {
#define GEN_PASS_DEF_COMETHOISTMASKS
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"
} // namespace comet

using namespace mlir;
using namespace comet;

namespace {

bool isBoolTensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && rt.getElementType().isInteger(1);
}

/// An operand that can move with the op that reads it: a constant.
bool isMovableConstant(Operation *def) {
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         def->getNumResults() == 1 && isPure(def);
}

struct HoistMasksPass
    : public comet::impl::CometHoistMasksBase<HoistMasksPass> {
  using Base::Base;

  void runOnOperation() override;
  void runOnFunction(FunctionOpInterface func);
};

class Hoister {
public:
  Hoister(Block &entry, const ActivationLiveness &la) : entry(entry), la(la) {}

  /// A pure op of the entry block that gives one bool tensor from values
  /// outside the gradient flow.
  bool isForwardBoolOp(Operation *op) const {
    if (op->getBlock() != &entry || op->getNumResults() != 1 ||
        op->getNumRegions() != 0 || !isPure(op) ||
        !isBoolTensor(op->getResult(0).getType()) || isMovableConstant(op))
      return false;
    int id = la.getId(op->getResult(0));
    return id >= 0 && !la.getValue(id).gradientFlow;
  }

  /// The latest op of the entry block, but constants, that defines an
  /// operand of `op`; null when all are arguments or constants.
  Operation *latestOperandDef(Operation *op) const {
    Operation *after = nullptr;
    for (Value o : op->getOperands()) {
      Operation *def = o.getDefiningOp();
      if (!def || def->getBlock() != &entry || isMovableConstant(def))
        continue;
      if (!after || after->isBeforeInBlock(def))
        after = def;
    }
    return after;
  }

  /// Moves `op` to just after the definitions of its operands; constants it
  /// reads that come later move before it.
  void moveUp(Operation *op) {
    if (Operation *after = latestOperandDef(op))
      op->moveAfter(after);
    else
      op->moveBefore(&entry.front());
    for (Value o : op->getOperands())
      if (Operation *def = o.getDefiningOp();
          def && def->getBlock() == &entry && op->isBeforeInBlock(def))
        def->moveBefore(op);
    moved.insert(op);
  }

  llvm::SetVector<Operation *> moved;

private:
  Block &entry;
  const ActivationLiveness &la;
};

} // namespace

void HoistMasksPass::runOnOperation() {
  if (minBytes < 0 || minDistance < 1) {
    getOperation().emitError("comet-hoist-masks: min-bytes must be "
                             "non-negative and min-distance at least 1");
    return signalPassFailure();
  }
  for (Operation &op : getOperation().getBody()->getOperations())
    if (auto func = dyn_cast<FunctionOpInterface>(op))
      if (!func.isExternal() && func.getFunctionBody().hasOneBlock())
        runOnFunction(func);
}

void HoistMasksPass::runOnFunction(FunctionOpInterface func) {
  Block &entry = func.getFunctionBody().front();
  ActivationLiveness la(func);
  Hoister h(entry, la);

  // 1. Values that the backward reads only through bool ops: move those
  // ops next to them.
  for (const Candidate &c : la.getCandidates(minBytes, minDistance)) {
    const ValueInfo &vi = la.getValue(c.valueId);
    if (isBoolTensor(vi.value.getType()))
      continue;
    llvm::SetVector<Operation *> ops;
    bool ok = true;
    for (unsigned ui : c.farUses) {
      const ValueUse &u = vi.uses[ui];
      ok = ok && u.user == u.directUser && h.isForwardBoolOp(u.user);
      ops.insert(u.user);
    }
    if (!ok)
      continue;
    int64_t maskBytes = 0;
    for (Operation *op : ops)
      maskBytes += la.getValue(la.getId(op->getResult(0))).tensorBytes;
    if (maskBytes >= vi.tensorBytes)
      continue;
    for (Operation *op : ops)
      h.moveUp(op);
    ++numFreed;
  }

  // 2. Bool ops whose operands all moved follow them (the And of the two
  // comparisons): one mask lives instead of two.
  for (size_t i = 0; i < h.moved.size(); ++i)
    for (Operation *user : h.moved[i]->getUsers()) {
      if (h.moved.contains(user) || !h.isForwardBoolOp(user))
        continue;
      bool allMoved = llvm::all_of(user->getOperands(), [&](Value o) {
        Operation *def = o.getDefiningOp();
        return def && (h.moved.contains(def) || isMovableConstant(def));
      });
      if (allMoved)
        h.moveUp(user);
    }
  numMoved += h.moved.size();

  // 3. Mul(g, Cast(m)) in the gradient flow -> DropoutGrad(g, m, 0, true).
  Value zero, yes;
  SmallVector<onnx::MulOp> muls;
  for (Operation &op : entry)
    if (auto mul = dyn_cast<onnx::MulOp>(op))
      muls.push_back(mul);
  for (onnx::MulOp mul : muls) {
    int id = la.getId(mul.getResult());
    if (id < 0 || !la.getValue(id).gradientFlow)
      continue;
    for (unsigned i = 0; i < 2; ++i) {
      auto toFloat = mul->getOperand(i).getDefiningOp<onnx::CastOp>();
      Value g = mul->getOperand(1 - i);
      Type t = mul.getResult().getType();
      if (!toFloat || !toFloat->hasOneUse() ||
          !isBoolTensor(toFloat.getInput().getType()) ||
          toFloat.getResult().getType() != t || g.getType() != t ||
          !cast<RankedTensorType>(t).getElementType().isF32())
        continue;
      OpBuilder b(&entry, entry.begin());
      if (!zero) {
        auto f32 = RankedTensorType::get({}, b.getF32Type());
        auto i1 = RankedTensorType::get({}, b.getI1Type());
        zero = onnx::ConstantOp::create(
            b, func.getLoc(), TypeRange{f32}, ValueRange{},
            {b.getNamedAttr("value", DenseElementsAttr::get(f32, 0.0f))});
        yes = onnx::ConstantOp::create(
            b, func.getLoc(), TypeRange{i1}, ValueRange{},
            {b.getNamedAttr("value", DenseElementsAttr::get(i1, true))});
      }
      b.setInsertionPoint(mul);
      auto grad = onnx::DropoutGradOp::create(b, mul.getLoc(), t, g,
                                              toFloat.getInput(), zero, yes);
      mul.getResult().replaceAllUsesWith(grad.getResult());
      mul.erase();
      toFloat.erase();
      ++numMaskGrads;
      break;
    }
  }
}
