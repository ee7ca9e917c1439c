//===- AccumulateEarly.cpp - Accumulate each gradient as soon as it exists ===//
//
// ONNX Runtime's training graph accumulates every parameter gradient into
// its buffer at the very end of the backward, so each weight gradient lives
// from the op that forms it to the end of the step: at the stem's backward,
// almost a second copy of the parameters. Each InPlaceAccumulatorV2 writes
// only its own buffer, so it can run right after its operands exist; then
// every gradient dies at once and the buffers hold the only copy.
//
//===----------------------------------------------------------------------===//
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

namespace comet {
#define GEN_PASS_DEF_COMETACCUMULATEEARLY
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"
} // namespace comet

using namespace mlir;
using namespace comet;

namespace {

struct AccumulateEarlyPass
    : public comet::impl::CometAccumulateEarlyBase<AccumulateEarlyPass> {
  using Base::Base;

  void runOnOperation() override {
    for (Operation &op : getOperation().getBody()->getOperations())
      if (auto func = dyn_cast<FunctionOpInterface>(op))
        if (!func.isExternal() && func.getFunctionBody().hasOneBlock())
          runOnBlock(func.getFunctionBody().front());
  }

  void runOnBlock(Block &entry) {
    SmallVector<onnx::InPlaceAccumulatorV2Op> accs;
    for (Operation &op : entry)
      if (auto acc = dyn_cast<onnx::InPlaceAccumulatorV2Op>(op))
        accs.push_back(acc);
    for (onnx::InPlaceAccumulatorV2Op acc : accs) {
      // The buffer is written in place: nothing else may read it, or the
      // move would change what that reader sees.
      auto buffer = dyn_cast<BlockArgument>(acc.getAccumulationBuffer());
      if (!buffer || buffer.getOwner() != &entry || !buffer.hasOneUse())
        continue;
      Operation *after = nullptr;
      for (Value o : acc->getOperands())
        if (Operation *def = o.getDefiningOp();
            def && def->getBlock() == &entry &&
            (!after || after->isBeforeInBlock(def)))
          after = def;
      Operation *target = after ? after->getNextNode() : &entry.front();
      if (target == acc.getOperation())
        continue;
      if (after)
        acc->moveAfter(after);
      else
        acc->moveBefore(&entry.front());
      ++numMoved;
    }
  }
};

} // namespace
