//===- EngineImpl.h - comet::Engine's state (not installed) -----*- C++ -*-===//
//
// Engine::Impl, shared by the files that implement comet::Engine by concern:
// Engine.cpp (load, compile, statistics), Symbols.cpp (the runtime symbols
// the JIT binds), Optimizer.cpp and Evaluation.cpp. The buffers, optimizer
// and statistics are a comet::Trainer (no MLIR), which comet-run shares;
// all runtime state lives in the trainer's runtime context, so two engines
// never share it.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_LIB_ENGINE_ENGINEIMPL_H
#define COMET_LIB_ENGINE_ENGINEIMPL_H

#include "comet/Analysis/ActivationLiveness.h"
#include "comet/Engine/Engine.h"
#include "comet/Import/ONNXModel.h"
#include "comet/driver/Trainer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"

#include <memory>
#include <string>
#include <vector>

namespace comet {

inline llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The runtime symbols JIT-compiled code calls, by address (Symbols.cpp).
llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner mangle);

/// Reads an ONNX model (weights, optimizer graph).
llvm::Expected<onnx_import::Model> readModel(llvm::StringRef path);

/// A parameter's initial float32 values.
struct InitialValue {
  std::vector<int64_t> dims;
  std::vector<float> values;
};

/// Initial parameter values by name: from an ONNX Runtime checkpoint, or
/// from the float initializers of an .onnx file (a name ending in .onnx).
llvm::Expected<llvm::StringMap<InitialValue>>
readInitialWeights(llvm::StringRef path);

struct Engine::Impl {
  std::string path;
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> source;
  EngineOptions opts;
  bool compiled = false;
  /// The files the engine read (Engine::artifacts).
  ArtifactPaths paths;
  /// The runtime state: buffers, optimizer, statistics (no MLIR).
  Trainer trainer;

  /// The lowered graphs (LLVM dialect) and, with opts.jit, their JITs.
  mlir::OwningOpRef<mlir::ModuleOp> trainLowered, evalLowered;
  std::unique_ptr<mlir::ExecutionEngine> trainJit, evalJit;
  /// The names of the Dropout masks returnDropoutMasks() made results.
  std::vector<std::string> maskNames;

  Impl();

  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  loadModule(llvm::StringRef file);
  llvm::Error runPipeline(mlir::ModuleOp m, llvm::StringRef pipeline);
  static mlir::func::FuncOp mainFunc(mlir::ModuleOp m);
  /// Appends each Dropout mask to the main function's results.
  void returnDropoutMasks(mlir::ModuleOp m);
  /// Lowers `m` (batch size `batch`) to the LLVM dialect and, with
  /// opts.jit, JIT-compiles it; fills the entry's signature and entry
  /// point. `sites` receives the compress sites when non-null;
  /// `tunerStatistics` keeps the bound tuner's statistics calls.
  llvm::Error lower(mlir::ModuleOp m, int64_t batch, Entry &out,
                    std::unique_ptr<mlir::ExecutionEngine> &jit,
                    std::vector<SiteStats> *sites, llvm::StringRef dumpPath,
                    bool tunerStatistics = false);
  /// The optimizer graph's node and attributes (empty path: the built-in
  /// SGD) with the options' learning rate, momentum and weight decay.
  llvm::Expected<OptimizerConfig>
  readOptimizerConfig(llvm::StringRef optimizerPath);
  /// The optimizer graph EngineOptions::optimizerPath names: empty for
  /// the built-in SGD; "" guesses optimizer_model.onnx next to the
  /// training graph.
  std::string resolveOptimizerPath(llvm::StringRef optimizerPath) const;
  /// The extra compress-activations options for opts.memoryBudget, given
  /// the optimizer's state bytes, and the part of the budget left to the
  /// graph; checks the options.
  /// The values to recompute under a memory budget (Engine.cpp); `fuse`
  /// is the optimizer-fusing stage, or empty.
  llvm::Expected<RecomputeChoice>
  chooseRecompute(mlir::ModuleOp specialized, llvm::StringRef fuse,
                  const OptimizerConfig &optimizer, llvm::StringRef batch);
  /// comet-recompute-activations for opts.compress, limited to `only` when
  /// given; comet-compress-activations at `batch` with opts' and a
  /// budget's options.
  std::string recomputeStage(llvm::ArrayRef<std::string> only) const;
  std::string compressStage(llvm::StringRef batch,
                            llvm::StringRef budgetOptions) const;
  llvm::Expected<std::string> budgetOptions(mlir::ModuleOp specialized,
                                            const OptimizerConfig &optimizer);
  llvm::Error setupEval(llvm::StringRef evalPath);
  // ---- checkpoints and export ----
  /// Engine::loadCheckpointState without the compiled() check
  /// (Checkpoints.cpp).
  llvm::Error loadState(const checkpoint::Checkpoint &c);
};

/// A Trainer's message as an llvm::Error (empty: success).
inline llvm::Error toError(const std::string &msg) {
  if (msg.empty())
    return llvm::Error::success();
  return err(msg);
}

} // namespace comet

#endif // COMET_LIB_ENGINE_ENGINEIMPL_H
