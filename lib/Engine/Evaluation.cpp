//===- Evaluation.cpp - Evaluation of comet::Engine -----------------------===//
//
// Compiles eval_model.onnx with the logits exposed as an extra result and
// runs it over a test set in batches, sharing the training parameters.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

#include <cmath>
#include <cstring>

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
  evalBatch = opts.batchSize;
  if (Error e = lowerAndJit(**m, evalBatch, eval, ""))
    return e;
  haveEval = true;
  return Error::success();
}

Error Engine::evaluate(const float *images, const int64_t *labels, int64_t n,
                       double &meanLoss, int64_t &numCorrect) {
  Impl &I = *impl;
  if (!I.haveEval)
    return err("no eval graph was compiled");
  // The eval graph's last out argument is the logits (setupEval). Eval
  // buffers live only during the evaluation, so that they do not
  // count in the training step's memory.
  std::vector<std::unique_ptr<Buffer>> own;
  std::vector<Buffer *> args;
  Buffer *in = nullptr, *lab = nullptr, *logits = nullptr;
  for (auto [i, a] : llvm::enumerate(I.eval.args)) {
    auto it = a.isResult ? I.buffers.end() : I.buffers.find(a.name);
    bool shared =
        it != I.buffers.end() && a.name != "input" && a.name != "labels";
    if (shared) {
      args.push_back(it->second.get());
      continue;
    }
    if (!a.isResult && a.name != "input" && a.name != "labels")
      return err("eval graph input '" + a.name +
                 "' is not a parameter of the training graph");
    auto b = std::make_unique<Buffer>();
    b->name = a.name;
    b->shape = a.shape;
    b->elemBytes = a.elemBytes;
    b->category = COMET_RT_MEM_OTHER;
    if (!b->allocate(I.rt.get()))
      return err("out of memory");
    if (a.name == "input")
      in = b.get();
    else if (a.name == "labels")
      lab = b.get();
    args.push_back(b.get());
    own.push_back(std::move(b));
  }
  logits = args.back();
  if (!in || !lab || logits->shape.size() != 2)
    return err("the eval graph needs input, labels and 2-D logits");
  int64_t B = I.evalBatch, classes = logits->shape[1];
  int64_t per = in->numel / B;
  double lossSum = 0;
  numCorrect = 0;
  for (int64_t start = 0; start < n; start += B) {
    int64_t m = std::min(B, n - start);
    std::memset(in->data, 0, in->bytes());
    std::memset(lab->data, 0, lab->bytes());
    std::memcpy(in->data, images + start * per, m * per * sizeof(float));
    std::memcpy(lab->data, labels + start, m * sizeof(int64_t));
    if (Error e = I.eval.invoke(I.rt.get(), args))
      return e;
    const float *z = logits->f32();
    for (int64_t r = 0; r < m; ++r) {
      const float *row = z + r * classes;
      int64_t best = 0;
      float mx = row[0];
      for (int64_t c = 1; c < classes; ++c)
        if (row[c] > mx) {
          mx = row[c];
          best = c;
        }
      double s = 0;
      for (int64_t c = 0; c < classes; ++c)
        s += std::exp(double(row[c]) - mx);
      int64_t y = labels[start + r];
      if (y >= 0 && y < classes)
        lossSum += std::log(s) + mx - row[y];
      numCorrect += best == y;
    }
  }
  meanLoss = n > 0 ? lossSum / n : 0;
  return Error::success();
}

} // namespace comet
