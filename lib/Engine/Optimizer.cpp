//===- Optimizer.cpp - The optimizer step of comet::Engine ----------------===//
//
// ONNX Runtime's optimizer graph (AdamWOptimizer, SGDOptimizerV2) read from
// optimizer_model.onnx, or the built-in SGD with momentum, run on the
// engine's parameter and gradient buffers through the runtime's kernels.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

#include "comet/runtime/exec.h"

using namespace mlir;
using llvm::Error;

namespace comet {

Error Engine::Impl::setupOptimizer(StringRef optimizerPath) {
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
    optimizer = node->opType;
    for (const auto &a : node->attributes) {
      if (a.name == "alpha")
        adamAlpha = a.f;
      else if (a.name == "beta")
        adamBeta = a.f;
      else if (a.name == "epsilon")
        adamEps = a.f;
      else if (a.name == "weight_decay")
        adamWeightDecay = a.f;
      else if (a.name == "adam_mode")
        adamMode = a.i;
      else if (a.name == "correct_bias")
        adamCorrectBias = a.i;
    }
  }
  if (opts.learningRate <= 0)
    opts.learningRate = optimizer == "AdamWOptimizer" ? 1e-3f : 0.05f;
  lrBuf = std::make_unique<Buffer>();
  lrBuf->shape = {1};
  lrBuf->category = COMET_RT_MEM_OTHER;
  stepBuf = std::make_unique<Buffer>();
  stepBuf->shape = {1};
  stepBuf->elemBytes = 8;
  if (!lrBuf->allocate(rt.get()) || !stepBuf->allocate(rt.get()))
    return err("out of memory");
  lrBuf->f32()[0] = opts.learningRate;
  optimizerStateBytes += lrBuf->bytes() + stepBuf->bytes();
  int nState = optimizer == "AdamWOptimizer"         ? 2
               : optimizer == "builtin-sgd-momentum" ? 1
                                                     : 0;
  for (const std::string &p : trainable) {
    Buffer *w = buffers[p].get();
    for (int k = 0; k < nState; ++k) {
      auto s = std::make_unique<Buffer>();
      s->name = p + (k == 0 ? ".momentum1" : ".momentum2");
      s->shape = w->shape;
      s->category = COMET_RT_MEM_OPTIMIZER_STATE;
      if (!s->allocate(rt.get()))
        return err("out of memory");
      optimizerStateBytes += s->bytes();
      (k == 0 ? state1 : state2).push_back(std::move(s));
    }
  }
  return Error::success();
}

Error Engine::Impl::runOptimizer() {
  ++steps;
  reinterpret_cast<int64_t *>(stepBuf->data)[0] = steps;
  for (auto [i, p] : llvm::enumerate(trainable)) {
    Buffer *w = buffers[p].get();
    Buffer *g = buffers[gradOf[p]].get();
    int32_t rc;
    if (optimizer == "AdamWOptimizer") {
      rc = _mlir_ciface_comet_rt_adamw(
          rt.get(), &lrBuf->unranked, &stepBuf->unranked, &w->unranked,
          &g->unranked, &state1[i]->unranked, &state2[i]->unranked, nullptr,
          nullptr, adamAlpha, adamBeta, adamEps, adamWeightDecay, adamMode,
          adamCorrectBias);
    } else if (optimizer == "SGDOptimizerV2") {
      rc =
          _mlir_ciface_comet_rt_sgd_v2(rt.get(), &lrBuf->unranked, &w->unranked,
                                       &g->unranked, nullptr, nullptr);
    } else {
      rc = _mlir_ciface_comet_rt_sgd_momentum(
          rt.get(), &lrBuf->unranked, &w->unranked, &g->unranked,
          &state1[i]->unranked, opts.momentum, opts.weightDecay, 0);
    }
    if (rc != 0)
      return err("optimizer " + optimizer + " failed on " + p + ": " +
                 comet_rt_last_error());
  }
  return Error::success();
}

} // namespace comet
