//===- FuseOptimizer.cpp - Each parameter's update inside the step --------===//
//
// A step that overwrites its gradient buffers and is followed by the
// optimizer needs the buffers only to carry each gradient to the optimizer.
// Updating the parameter where the gradient is final, and the parameter has
// no later reader, lets the gradient die there: no buffer, and never the
// full set of gradients at once. Passes.td has the contract.
//
//===----------------------------------------------------------------------===//
#include "comet/Analysis/ActivationLiveness.h"
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "llvm/ADT/BitVector.h"

namespace comet {
#define GEN_PASS_DEF_COMETFUSEOPTIMIZER
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"
} // namespace comet

using namespace mlir;
using namespace comet;

namespace {

constexpr llvm::StringLiteral kGradSuffix = "_grad.accumulation.buffer";

StringRef argName(func::FuncOp f, unsigned i) {
  auto n = f.getArgAttrOfType<StringAttr>(i, "onnx.name");
  return n ? n.getValue() : StringRef();
}

/// One accumulator that becomes an update.
struct Fusion {
  onnx::InPlaceAccumulatorV2Op acc;
  BlockArgument buffer, param;
};

struct FuseOptimizerPass
    : public comet::impl::CometFuseOptimizerBase<FuseOptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    int n = OptimizerUpdateOp::numStates(kind);
    if (n < 0) {
      getOperation().emitError("comet-fuse-optimizer: kind '")
          << kind << "' is not adamw, sgd_v2 or sgd_momentum";
      return signalPassFailure();
    }
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (!f.isExternal() && f.getBody().hasOneBlock())
        runOnFunction(f, n);
  }

  /// Why `acc` cannot become an update (empty when it can); fills `out`.
  std::string check(func::FuncOp f, onnx::InPlaceAccumulatorV2Op acc,
                    BlockArgument reset, Fusion &out) {
    Block &entry = f.getBody().front();
    auto buffer = dyn_cast<BlockArgument>(acc.getAccumulationBuffer());
    if (!buffer || buffer.getOwner() != &entry)
      return "its buffer is not an argument";
    StringRef name = argName(f, buffer.getArgNumber());
    if (!name.ends_with(kGradSuffix))
      return "its buffer is not named <param>" + kGradSuffix.str();
    if (!buffer.hasOneUse())
      return "its buffer '" + name.str() +
             "' is read elsewhere: the gradient is wanted after the step";
    if (!reset || acc.getOverwriteFlag() != reset)
      return "its overwrite flag is not the lazy_reset_grad argument";
    for (OpResult r : acc->getResults())
      for (Operation *user : r.getUsers())
        if (!isa<func::ReturnOp>(user))
          return "its result is read by " +
                 user->getName().getStringRef().str();
    if (!isa<NoneType>(acc->getResult(1).getType()) &&
        !acc->getResult(1).use_empty())
      return "its buffer_out is returned";
    StringRef base = name.drop_back(kGradSuffix.size());
    BlockArgument param;
    for (BlockArgument a : entry.getArguments())
      if (argName(f, a.getArgNumber()) == base)
        param = a;
    if (!param)
      return "no argument is its parameter '" + base.str() + "'";
    if (param.getType() != buffer.getType() ||
        acc.getValue().getType() != buffer.getType())
      return "the parameter '" + base.str() +
             "', its gradient and its buffer differ in type";
    for (Operation *user : param.getUsers())
      if (isa<func::ReturnOp>(user) || isa<onnx::InPlaceAccumulatorV2Op>(user))
        return "the parameter '" + base.str() +
               "' is returned or accumulated into";
    out = {acc, buffer, param};
    return "";
  }

  void runOnFunction(func::FuncOp f, int numStates) {
    Block &entry = f.getBody().front();
    SmallVector<onnx::InPlaceAccumulatorV2Op> accs;
    for (Operation &op : entry)
      if (auto acc = dyn_cast<onnx::InPlaceAccumulatorV2Op>(op))
        accs.push_back(acc);
    if (accs.empty())
      return;
    BlockArgument reset;
    for (BlockArgument a : entry.getArguments())
      if (argName(f, a.getArgNumber()) == "lazy_reset_grad")
        reset = a;
    SmallVector<Fusion> fusions;
    for (onnx::InPlaceAccumulatorV2Op acc : accs) {
      Fusion fu;
      if (std::string why = check(f, acc, reset, fu); !why.empty()) {
        acc.emitRemark("comet-fuse-optimizer: @")
            << f.getName() << " keeps its optimizer after the step: " << why;
        return;
      }
      fusions.push_back(fu);
    }

    // Where each update goes, from the graph as ORT and the earlier passes
    // left it: after the gradient is final and the weight's last reader.
    SmallVector<Operation *> after(fusions.size(), nullptr);
    {
      ActivationLiveness la(f);
      for (auto [i, fu] : llvm::enumerate(fusions)) {
        int64_t gradDef = -1, lastRead = -1;
        if (int id = la.getId(fu.acc.getValue()); id >= 0)
          gradDef = la.getValue(id).def;
        if (int id = la.getId(fu.param); id >= 0)
          for (const ValueUse &u : la.getValue(id).uses)
            lastRead = std::max(lastRead, u.index);
        int64_t at = std::max(gradDef, lastRead);
        if (lastRead > gradDef)
          ++numDelayed;
        after[i] = at >= 0 ? la.getSchedule()[at] : nullptr;
      }
    }

    // The new arguments: the states per parameter, the learning rate and
    // the step count.
    OpBuilder b(f.getContext());
    Location loc = f.getLoc();
    auto role = [&](StringRef r, StringRef name, StringRef param = "") {
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr("onnx.name", b.getStringAttr(name)),
          b.getNamedAttr(CometDialect::kOptimizerRoleAttrName,
                         b.getStringAttr(r))};
      if (!param.empty())
        attrs.push_back(b.getNamedAttr(CometDialect::kOptimizerParamAttrName,
                                       b.getStringAttr(param)));
      return b.getDictionaryAttr(attrs);
    };
    auto addArg = [&](Type t, DictionaryAttr attrs) -> BlockArgument {
      unsigned i = f.getNumArguments();
      if (failed(f.insertArgument(i, t, attrs, loc)))
        return {};
      return entry.getArgument(i);
    };
    SmallVector<SmallVector<Value, 2>> states(fusions.size());
    for (auto [i, fu] : llvm::enumerate(fusions)) {
      StringRef p = argName(f, fu.param.getArgNumber());
      f.setArgAttr(fu.param.getArgNumber(),
                   CometDialect::kOptimizerRoleAttrName,
                   b.getStringAttr("weight"));
      for (int k = 0; k < numStates; ++k)
        states[i].push_back(addArg(
            fu.param.getType(),
            role(k == 0 ? "state0" : "state1",
                 (p + (k == 0 ? ".momentum1" : ".momentum2")).str(), p)));
    }
    BlockArgument lr = addArg(RankedTensorType::get({1}, b.getF32Type()),
                              role("lr", "comet.learning_rate"));
    BlockArgument step = addArg(RankedTensorType::get({1}, b.getI64Type()),
                                role("step", "comet.optimizer_step"));

    // The updates, then the accumulators, their flags and buffers go.
    llvm::BitVector deadResults(f.getNumResults());
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    for (auto [i, fu] : llvm::enumerate(fusions)) {
      if (after[i])
        b.setInsertionPointAfter(after[i]);
      else
        b.setInsertionPointToStart(&entry);
      OptimizerUpdateOp::create(
          b, fu.acc.getLoc(), b.getStringAttr(kind), fu.param,
          fu.acc.getValue(), states[i], lr, step, b.getF32FloatAttr(alpha),
          b.getF32FloatAttr(beta), b.getF32FloatAttr(epsilon),
          b.getF32FloatAttr(weightDecay), b.getF32FloatAttr(momentum),
          b.getI64IntegerAttr(adamMode), b.getI64IntegerAttr(correctBias));
      for (OpOperand &use : ret->getOpOperands())
        if (use.get().getDefiningOp() == fu.acc.getOperation())
          deadResults.set(use.getOperandNumber());
      ++numFused;
    }
    for (int i = deadResults.size() - 1; i >= 0; --i)
      if (deadResults[i])
        ret->eraseOperand(i);
    if (failed(f.eraseResults(deadResults)))
      return signalPassFailure();
    llvm::BitVector deadArgs(f.getNumArguments());
    for (const Fusion &fu : fusions) {
      fu.acc->erase();
      deadArgs.set(fu.buffer.getArgNumber());
    }
    // The flag stays an argument: the driver sets it either way.
    if (failed(f.eraseArguments(deadArgs)))
      return signalPassFailure();
    f->setAttr(CometDialect::kFusedOptimizerAttrName, b.getStringAttr(kind));
  }
};

} // namespace
