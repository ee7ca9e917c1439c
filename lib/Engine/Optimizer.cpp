//===- Optimizer.cpp - The optimizer of comet::Engine ---------------------===//
//
// ONNX Runtime's optimizer graph (AdamWOptimizer, SGDOptimizerV2) read from
// optimizer_model.onnx, or the built-in SGD with momentum: the node and its
// attributes become the trainer's OptimizerConfig, which it runs on the
// parameter and gradient buffers through the runtime's kernels.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

using namespace mlir;
using llvm::Error;
using llvm::Expected;

namespace comet {

Expected<OptimizerConfig>
Engine::Impl::readOptimizerConfig(StringRef optimizerPath) {
  OptimizerConfig c;
  c.learningRate = opts.learningRate;
  c.momentum = opts.momentum;
  c.weightDecay = opts.weightDecay;
  if (!optimizerPath.empty()) {
    auto model = readModel(optimizerPath);
    if (!model)
      return model.takeError();
    const onnx_import::Node *node = nullptr;
    for (const auto &n : model->graph.nodes)
      if (n.opType == "AdamWOptimizer" || n.opType == "SGDOptimizerV2")
        node = &n;
    if (!node)
      return err(optimizerPath + ": no AdamWOptimizer or SGDOptimizerV2 node");
    c.kind = node->opType;
    for (const auto &a : node->attributes) {
      if (a.name == "alpha")
        c.adamAlpha = a.f;
      else if (a.name == "beta")
        c.adamBeta = a.f;
      else if (a.name == "epsilon")
        c.adamEps = a.f;
      else if (a.name == "weight_decay")
        c.adamWeightDecay = a.f;
      else if (a.name == "adam_mode")
        c.adamMode = a.i;
      else if (a.name == "correct_bias")
        c.adamCorrectBias = a.i;
    }
  }
  return c;
}

} // namespace comet
