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
  // Inputs by role, as in the training graph: the training graph's
  // parameters are shared, and what is left must be one float data batch
  // and one int64 labels.
  std::vector<size_t> data, lab;
  for (auto [i, a] : llvm::enumerate(eval.args)) {
    if (a.isResult)
      continue;
    auto it = buffers.find(a.name);
    if (it != buffers.end() && it->second->category == COMET_RT_MEM_PARAMS)
      continue;
    if (a.elemBytes == 4)
      data.push_back(i);
    else if (a.elemBytes == 8)
      lab.push_back(i);
    else
      return err(evalPath + ": input '" + a.name +
                 "' is neither a parameter of the training graph, float "
                 "data nor int64 labels");
  }
  auto names = [&](ArrayRef<size_t> idx) {
    std::string r;
    for (size_t i : idx)
      r += (r.empty() ? "'" : ", '") + eval.args[i].name + "'";
    return r;
  };
  if (data.size() != 1)
    return err(evalPath +
               ": expected exactly one float input that is not a "
               "parameter of the training graph (the data), got " +
               llvm::Twine(data.size()) +
               (data.empty() ? "" : ": " + names(data)));
  if (lab.size() != 1)
    return err(evalPath +
               ": expected exactly one int64 input (the labels), "
               "got " +
               llvm::Twine(lab.size()) +
               (lab.empty() ? "" : ": " + names(lab)));
  evalData = data[0];
  evalLabels = lab[0];
  ArrayRef<int64_t> shape = eval.args[evalData].shape;
  if (shape.empty() || shape[0] != evalBatch ||
      shape.drop_front() != ArrayRef<int64_t>(sampleShape))
    return err(evalPath + ": the data input '" + eval.args[evalData].name +
               "' must be a batch of the training graph's samples");
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
    if (!a.isResult && i != I.evalData && i != I.evalLabels) {
      args.push_back(I.buffers[a.name].get()); // a parameter (setupEval)
      continue;
    }
    auto b = std::make_unique<Buffer>();
    b->name = a.name;
    b->shape = a.shape;
    b->elemBytes = a.elemBytes;
    b->category = COMET_RT_MEM_OTHER;
    if (!b->allocate(I.rt.get()))
      return err("out of memory");
    if (i == I.evalData)
      in = b.get();
    else if (i == I.evalLabels)
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
