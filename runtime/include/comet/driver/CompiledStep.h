//===- comet/driver/CompiledStep.h - A step compiled ahead of time -*- C++ -*-//
//
// Loads a shared library that comet-compile wrote (dlopen) and binds its
// graphs, weights, optimizer, sites and memory prediction to a Trainer, as
// comet::Engine binds the ones it JIT-compiles. No MLIR or LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_DRIVER_COMPILEDSTEP_H
#define COMET_DRIVER_COMPILEDSTEP_H

#include "comet/driver/Trainer.h"
#include "comet/driver/aot.h"

#include <memory>
#include <string>

namespace comet {

class CompiledStep {
public:
  ~CompiledStep();
  CompiledStep(const CompiledStep &) = delete;

  /// Opens `path` and checks its data section; a message on failure.
  static std::string load(const std::string &path,
                          std::unique_ptr<CompiledStep> &out);

  const comet_aot_program &program() const { return *prog; }

  /// The files comet-compile read.
  ArtifactPaths artifacts() const;
  /// The runtime entries the training step, the eval graph and the
  /// optimizer call (what the device must implement).
  std::vector<std::string> runtimeEntries() const;

  /// Binds the training graph with its initial weights, the optimizer
  /// (learning rate, momentum and weight decay are the run's; a learning
  /// rate <= 0 is the optimizer's default), the eval graph, the sites and
  /// the prediction.
  std::string bind(Trainer &trainer, float learningRate, float momentum,
                   float weightDecay) const;

private:
  CompiledStep() = default;
  void *handle = nullptr;
  const comet_aot_program *prog = nullptr;
};

} // namespace comet

#endif // COMET_DRIVER_COMPILEDSTEP_H
