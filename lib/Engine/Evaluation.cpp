//===- Evaluation.cpp - Evaluation of comet::Engine -----------------------===//
//
// Compiles eval_model.onnx with the logits exposed as an extra result; the
// trainer runs it over a test set in batches, sharing the training
// parameters.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

using namespace mlir;
using llvm::Error;

namespace comet {

Error Engine::Impl::setupEval(StringRef evalPath) {
  auto m = loadModule(evalPath);
  if (!m)
    return m.takeError();
  func::FuncOp f = mainFunc(**m);
  if (!f)
    return err(evalPath + ": no function");
  // Expose the scores of the loss as an extra result: the logits.
  Value logits;
  f.walk([&](Operation *op) {
    if (op->getName().getStringRef() == "onnx.SoftmaxCrossEntropyLoss")
      logits = op->getOperand(0);
  });
  if (!logits)
    return err(evalPath + ": no SoftmaxCrossEntropyLoss to take logits from");
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  ret->insertOperands(ret->getNumOperands(), ValueRange{logits});
  SmallVector<Type> results(f.getResultTypes());
  results.push_back(logits.getType());
  SmallVector<DictionaryAttr> resAttrs;
  for (unsigned i = 0; i + 1 < results.size(); ++i)
    resAttrs.push_back(f.getResultAttrDict(i));
  resAttrs.push_back(DictionaryAttr::get(
      &ctx, {NamedAttribute(StringAttr::get(&ctx, "onnx.name"),
                            StringAttr::get(&ctx, "logits"))}));
  f.setFunctionType(FunctionType::get(&ctx, f.getArgumentTypes(), results));
  f.setAllResultAttrs(resAttrs);
  Entry eval;
  evalLowered = std::move(*m);
  if (Error e = lower(*evalLowered, opts.batchSize, eval, evalJit, nullptr, ""))
    return e;
  return toError(trainer.bindEval(std::move(eval), evalPath.str()));
}

} // namespace comet
