//===- EngineImpl.h - comet::Engine's state (not installed) -----*- C++ -*-===//
//
// Engine::Impl, shared by the files that implement comet::Engine by concern:
// Engine.cpp (load, compile, step, statistics), Symbols.cpp (the runtime
// symbols the JIT binds), Optimizer.cpp and Evaluation.cpp. All runtime
// state (memory accounting, slots, sites, tuner statistics) lives in the
// engine's runtime context, so two engines never share it.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_LIB_ENGINE_ENGINEIMPL_H
#define COMET_LIB_ENGINE_ENGINEIMPL_H

#include "comet/Analysis/ActivationLiveness.h"
#include "comet/Engine/Engine.h"
#include "comet/Import/ONNXModel.h"
#include "comet/runtime/alloc.h"
#include "comet/runtime/context.h"

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

/// A tensor buffer from the engine context's allocator and its ranked memref
/// descriptor.
struct Buffer {
  std::string name;
  std::vector<int64_t> shape;
  size_t elemBytes = 4;
  int64_t numel = 1;
  int32_t category = COMET_RT_MEM_OTHER;
  void *data = nullptr;
  /// {allocated, aligned, offset, sizes[rank], strides[rank]}.
  std::vector<int64_t> desc;
  comet_rt_memref unranked{0, nullptr};

  Buffer() = default;
  Buffer(const Buffer &) = delete;
  ~Buffer() { comet_rt_free(data); }

  bool allocate(comet_rt_context *ctx);
  float *f32() const { return static_cast<float *>(data); }
  size_t bytes() const { return numel * elemBytes; }
};

/// One argument of a lowered function (after the runtime context).
struct ArgInfo {
  std::string name;
  std::vector<int64_t> shape;
  size_t elemBytes = 4;
  bool isResult = false;
};

/// A JIT-compiled lowered function and its signature.
struct Compiled {
  std::unique_ptr<mlir::ExecutionEngine> jit;
  std::string funcName;
  std::vector<ArgInfo> args;

  /// Runs the function on ctx and the buffers of its arguments.
  llvm::Error invoke(comet_rt_context *ctx, llvm::ArrayRef<Buffer *> buffers);
};

struct Engine::Impl {
  std::string path;
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> source;
  EngineOptions opts;
  bool compiled = false;
  /// This engine's runtime state; every buffer below counts in it.
  std::unique_ptr<comet_rt_context, void (*)(comet_rt_context *)> rt{
      comet_rt_context_create(), comet_rt_context_destroy};

  Compiled train, eval;
  bool haveEval = false;
  int64_t evalBatch = 0;
  /// The graph as compress-activations left it, for the analysis.
  mlir::OwningOpRef<mlir::ModuleOp> analysisModule;
  std::unique_ptr<ActivationLiveness> liveness;
  int64_t candidateBytes = 0;
  std::vector<SiteStats> siteInfo;

  /// Buffers by name: parameters, gradient buffers, inputs, outputs.
  llvm::StringMap<std::unique_ptr<Buffer>> buffers;
  std::vector<Buffer *> trainArgs;
  std::vector<std::string> trainable;  // parameters with a gradient buffer
  std::vector<std::string> frozen;     // parameters without one (BN stats)
  llvm::StringMap<std::string> gradOf; // parameter -> its gradient buffer
  Buffer *input = nullptr, *labels = nullptr, *lazyReset = nullptr,
         *loss = nullptr;
  /// Dropout masks returned by the training graph (returnDropoutMasks).
  std::vector<std::string> maskNames;
  std::vector<std::pair<std::string, Buffer *>> masks;
  std::vector<int64_t> sampleShape;

  // Optimizer (Optimizer.cpp).
  std::string optimizer = "builtin-sgd-momentum";
  float adamAlpha = 0.9f, adamBeta = 0.999f, adamEps = 1e-8f,
        adamWeightDecay = 0.0f;
  int64_t adamMode = 0, adamCorrectBias = 1;
  std::vector<std::unique_ptr<Buffer>> state1, state2;
  std::unique_ptr<Buffer> lrBuf, stepBuf;
  int64_t optimizerStateBytes = 0;
  int64_t steps = 0;

  bool recordNext = false;
  std::vector<int64_t> timeline;

  Impl();

  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  loadModule(llvm::StringRef file);
  llvm::Error runPipeline(mlir::ModuleOp m, llvm::StringRef pipeline);
  /// Appends each Dropout mask to the main function's results.
  void returnDropoutMasks(mlir::ModuleOp m);
  static mlir::func::FuncOp mainFunc(mlir::ModuleOp m);
  /// Lowers `m` (batch size `batch`) and JIT-compiles it into `out`.
  llvm::Error lowerAndJit(mlir::ModuleOp m, int64_t batch, Compiled &out,
                          llvm::StringRef dumpPath);
  Buffer *newBuffer(const std::string &name, llvm::ArrayRef<int64_t> shape,
                    size_t elemBytes, int32_t category);
  llvm::Error setupTrainBuffers(const onnx_import::Model &weights);
  llvm::Error setupOptimizer();
  llvm::Error runOptimizer();
  llvm::Error setupEval(llvm::StringRef evalPath);
  llvm::Expected<float> runTrain(const float *images, const int64_t *lab);
};

} // namespace comet

#endif // COMET_LIB_ENGINE_ENGINEIMPL_H
