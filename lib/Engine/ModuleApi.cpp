//===- ModuleApi.cpp - ONNX Runtime's Module and Optimizer semantics ------===//
//
// What comet.training.api (ONNX Runtime's Module, Optimizer and
// LinearLRScheduler over comet::Engine) needs beyond a training step:
// gradients that accumulate until a lazy reset, the optimizer as a step of
// its own, the graphs' user inputs and outputs, one eval batch, and the
// training state handed between engines of two batch sizes.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

using llvm::Error;

namespace comet {

// ---- ONNX Runtime's Module and Optimizer ----

void Engine::lazyResetGrad() { impl->trainer.lazyResetGrad(); }

Error Engine::optimizerStep() {
  if (!impl->compiled)
    return err("Engine::compile has not run");
  return toError(impl->trainer.optimizerStep());
}

Error Engine::setLearningRate(float lr) {
  if (!impl->compiled)
    return err("Engine::compile has not run");
  return toError(impl->trainer.setLearningRate(lr));
}

int64_t Engine::optimizerSteps() const {
  return impl->trainer.optimizerSteps();
}

Error Engine::setOptimizer(llvm::StringRef optimizerPath) {
  Impl &I = *impl;
  if (!I.compiled)
    return err("Engine::compile has not run");
  std::string path = I.resolveOptimizerPath(optimizerPath);
  auto config = I.readOptimizerConfig(path);
  if (!config)
    return config.takeError();
  if (Error e = toError(I.trainer.setupOptimizer(*config)))
    return e;
  I.paths.optimizer = path;
  return Error::success();
}

Engine::UserArgs Engine::userArgs(bool eval) const {
  UserArgs u;
  const Trainer &t = impl->trainer;
  if (eval) {
    if (!t.hasEval())
      return u;
    const std::vector<ArgInfo> &args = t.evalEntry().args;
    // The last result is the logits setupEval added.
    size_t last = args.size() - 1;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].isResult && i != last)
        u.outputs.push_back(i);
      else if (i == t.evalDataArg() || i == t.evalLabelsArg())
        u.inputs.push_back(i);
    }
    return u;
  }
  const std::vector<ArgInfo> &args = t.trainEntry().args;
  static const llvm::StringRef accSuffix = "_grad.accumulation.out";
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgInfo &a = args[i];
    if (a.isResult) {
      if (!llvm::StringRef(a.name).ends_with(accSuffix) &&
          !llvm::is_contained(impl->maskNames, a.name))
        u.outputs.push_back(i);
    } else if ((t.dataInput() && a.name == t.dataInput()->name) ||
               (t.labelsInput() && a.name == t.labelsInput()->name)) {
      u.inputs.push_back(i);
    }
  }
  return u;
}

Error Engine::trainStep(const void *data, const int64_t *labels,
                        llvm::ArrayRef<void *> outputs) {
  if (!impl->compiled)
    return err("Engine::compile has not run");
  Trainer &t = impl->trainer;
  UserArgs u = userArgs(false);
  if (outputs.size() != u.outputs.size())
    return err("trainStep: " + llvm::Twine(u.outputs.size()) +
               " output pointers expected, got " + llvm::Twine(outputs.size()));
  float loss = 0;
  if (Error e = toError(t.computeGradients(data, labels, loss)))
    return e;
  for (size_t k = 0; k < u.outputs.size(); ++k) {
    if (!outputs[k])
      continue;
    // The trainer names result buffers by position.
    const Buffer *b = t.buffer("result:" + std::to_string(u.outputs[k]));
    if (!b)
      return err("trainStep: no buffer for output " + llvm::Twine(k));
    if (Error e = toError(t.copy(outputs[k], b->data, b->bytes())))
      return e;
  }
  return Error::success();
}

Error Engine::evalStep(const void *data, const int64_t *labels,
                       llvm::ArrayRef<void *> outputs) {
  if (!impl->compiled)
    return err("Engine::compile has not run");
  Trainer &t = impl->trainer;
  if (!t.hasEval())
    return err("no eval graph was compiled");
  UserArgs u = userArgs(true);
  if (outputs.size() != u.outputs.size())
    return err("evalStep: " + llvm::Twine(u.outputs.size()) +
               " output pointers expected, got " + llvm::Twine(outputs.size()));
  std::vector<void *> all(t.evalEntry().args.size(), nullptr);
  for (size_t k = 0; k < u.outputs.size(); ++k)
    all[u.outputs[k]] = outputs[k];
  return toError(t.evalBatch(data, labels, all));
}

Error Engine::copyStateFrom(const Engine &other) {
  if (!impl->compiled || !other.impl->compiled)
    return err("Engine::compile has not run");
  return toError(impl->trainer.copyStateFrom(other.impl->trainer));
}

} // namespace comet
