//===- Engine.h - Compile and train a training graph in process -*- C++ -*-===//
//
// comet::Engine loads an ONNX Runtime training graph (.onnx, or .mlir in the
// onnx dialect), compiles it through COMET's pipeline (optionally
// compress-activations, then comet-lower-to-runtime and the LLVM dialect),
// JIT-compiles it with mlir::ExecutionEngine against the runtime
// (CometRuntime, CometExecSupport), and runs training steps:
//
//   auto engine = comet::Engine::load("lenet/training_model.onnx");
//   comet::EngineOptions opts;
//   opts.batchSize = 64;
//   opts.compress = comet::CompressMode::Static;
//   if (auto err = (*engine)->compile(opts)) ...
//   llvm::Expected<float> loss = (*engine)->step(images, labels);
//   comet::EngineStats s = (*engine)->stats();
//
// docs/execution.md describes the choices (shapes, weights, optimizer,
// accounting). Errors are llvm::Error (LLVM is built without exceptions).
//
//===----------------------------------------------------------------------===//
#ifndef COMET_ENGINE_ENGINE_H
#define COMET_ENGINE_ENGINE_H

#include "comet/Import/Checkpoint.h"
#include "comet/driver/Trainer.h"
#include "comet/runtime/alloc.h"
#include "comet/runtime/context.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace comet {

/// Adaptive compiles like Static; a bound tuner (comet/Tuner/EngineTuner.h)
/// then re-tunes the slots while training.
enum class CompressMode { None, Static, Adaptive };

struct EngineOptions {
  /// The size of the symbolic batch dimension; shapes are specialized to it.
  int64_t batchSize = 64;
  CompressMode compress = CompressMode::None;
  /// Extra options for --comet-compress-activations, e.g. "min-bytes=4096".
  std::string compressOptions;
  /// A whole-step peak to fit, in bytes (0: none). With compression on,
  /// compress-activations compresses the fewest activations that bring the
  /// predicted peak (the training graph's tensors plus the optimizer
  /// state) to it; EngineStats::budget records the choice.
  int64_t memoryBudget = 0;
  /// The sz ratio a budget assumes (stored bytes = bytes / ratio). Static
  /// bounds measured 2.8-3.0x on ResNet-18 and MobileNetV2, 5.8x on a GPT
  /// decoder: too high an assumption overshoots the budget.
  double assumedSzRatio = 3.0;
  /// An ORT optimizer graph (optimizer_model.onnx: AdamWOptimizer, or
  /// sgd_optimizer_model.onnx: SGDOptimizerV2) whose node and attributes the
  /// Engine runs on the runtime's kernels. Empty: optimizer_model.onnx next
  /// to the training graph when it exists, else the built-in SGD with
  /// momentum. kBuiltinOptimizer: the built-in SGD in any case.
  std::string optimizerPath;
  static constexpr const char *kBuiltinOptimizer = "builtin";
  /// Applies each parameter's optimizer update inside the training step
  /// (comet-fuse-optimizer), where its gradient is final and the parameter
  /// has no later reader, so no gradient buffer exists: step() only.
  /// Bit-identical to the update after the step, but computeGradients(),
  /// gradient() and optimizerStep() need it off (ONNX Runtime's Module and
  /// Optimizer, gradient accumulation, the bound tuner). A graph that
  /// cannot fuse (a gradient buffer read elsewhere) runs unfused.
  bool fuseOptimizer = false;
  /// <= 0: the optimizer's default, 0.001 for AdamW and 0.05 for the SGDs.
  float learningRate = 0.0f;
  float momentum = 0.9f; // built-in SGD only
  float weightDecay = 0.0f;
  /// The initial weights, by name: an ONNX Runtime checkpoint, or an .onnx
  /// file's initializers (a path ending in .onnx). Empty: `checkpoint` next
  /// to the training graph, else model.onnx there.
  std::string weightsPath;
  /// The eval graph used by evaluate(). Empty: eval_model.onnx next to the
  /// training graph, when it exists; kNoEvalModel: none.
  std::string evalModelPath;
  static constexpr const char *kNoEvalModel = "none";
  /// LLVM code generation level (0-3).
  unsigned optLevel = 2;
  /// When set, the lowered IR (after comet-lower-to-runtime) is written here.
  std::string dumpLoweredIRPath;
  /// The training graph calls the bound tuner's statistics entries
  /// (comet_rt_slot_observe_*) with CompressMode::Adaptive, and with
  /// Static only when this is set (comet-train --measure-error-model reads
  /// them); a static graph without them runs on a device that does not
  /// gather them (CUDA, docs/runtime-coverage.md).
  bool tunerStatistics = false;
  /// JIT-compile the lowered graphs. Off (comet-compile, which emits them
  /// ahead of time): compile() lowers them and binds the buffers, but
  /// step() and evaluate() fail.
  bool jit = true;
  /// Where the step runs: "cpu" or "cuda" (comet/runtime/device.h). On
  /// "cuda", parameter(), gradient() and optimizerState() are empty (the
  /// values are device memory).
  std::string device = "cpu";
  /// Seed of the engine's random stream (Dropout masks).
  uint64_t seed = 0;
  /// The workspace one kernel call may take, in bytes (the engine's
  /// context's comet_rt_context_set_workspace_limit; 0: none): a
  /// convolution's weight gradient whose scratchpad would pass it runs over
  /// groups of output channels. The predicted peak counts each ConvGrad's
  /// workspace as the backend reports it under this limit.
  int64_t workspaceLimit = COMET_RT_DEFAULT_WORKSPACE_LIMIT;
  /// Keep MaxPool's Indices that only MaxPoolGrad reads as each argmax's
  /// position in its window, a byte (comet-compact-pool-indices), instead
  /// of flat int64 indices. Exact: the gradients are the same bit for bit.
  bool compactPoolIndices = true;
  /// Recompute a BatchNorm (+ ReLU or Clip) output in the backward from the
  /// BatchNorm's input, which its gradient keeps anyway, instead of keeping
  /// the output (comet-recompute-activations). Exact under
  /// CompressMode::None (the same bits); compressed, the input's bound
  /// covers what the recomputed value's readers tolerate. Off under
  /// CompressMode::Adaptive, whose tuner re-bounds from direct readers only.
  bool recompute = true;
  /// After the first step, the CPU sz sites whose handles are not live at
  /// the predicted peak compress without an entropy stage (faster; larger
  /// streams where they cost no peak), as long as the prediction with
  /// their fixed-width sizes, measured at the first step, is no higher
  /// (Trainer::chooseSiteEntropy). Off, and under CompressMode::Adaptive:
  /// every site follows the codec's process-wide comet_rt_codec_set_entropy.
  bool entropyByPeak = true;
  /// Makes every Dropout mask of the training graph an extra result, for
  /// dropoutMasks() (a debugging aid: returned masks are not compressed).
  bool returnDropoutMasks = false;
  // ---- checkpoints and export ----
  /// When set, compile() takes the parameters (and, when the checkpoint
  /// has an optimizer group, the optimizer state) from it instead of
  /// weightsPath, with loadCheckpointState's checks; weightsPath then only
  /// names the source in messages and artifacts().
  std::shared_ptr<const checkpoint::Checkpoint> initialState;
};

class Engine {
public:
  ~Engine();

  /// Reads a training graph: *.onnx is imported, anything else is parsed as
  /// MLIR (onnx dialect). A directory is an artifact folder: its
  /// training_model.onnx is read, and compile() finds the checkpoint, eval
  /// and optimizer graphs next to it.
  static llvm::Expected<std::unique_ptr<Engine>> load(llvm::StringRef path);

  /// Compiles the graph (and the eval graph, if any) and allocates the
  /// parameters, gradients and optimizer state. Call once.
  llvm::Error compile(const EngineOptions &options);

  /// One training step on a batch: data [batch, sample...] of the data
  /// input's element type (float32 images, or int64 token ids), labels
  /// [batch * labels per sample] int64 (Trainer::labelsPerSample(): 1 for a
  /// classifier, the tokens of a language model). Runs the training graph,
  /// then the optimizer. Returns the loss; a NaN/Inf loss is an error
  /// naming the step.
  llvm::Expected<float> step(const void *data, const int64_t *labels);

  /// The training graph only (gradients into the gradient buffers, weights
  /// unchanged). Returns the loss.
  llvm::Expected<float> computeGradients(const void *data,
                                         const int64_t *labels);

  /// Runs the eval graph on n samples (any n; batches of the eval batch
  /// size, the last one padded and its padding ignored). Sets the mean
  /// loss and the number of correct argmax predictions, both over the
  /// n * labels-per-sample labels.
  llvm::Error evaluate(const void *data, const int64_t *labels, int64_t n,
                       double &meanLoss, int64_t &numCorrect);
  bool hasEval() const;

  EngineStats stats() const;
  /// Samples the tensor bytes at every allocation and free of the next
  /// training step, for EngineStats::measuredTimeline.
  void recordTimelineOfNextStep();
  /// Restarts the allocator's peaks from the current values.
  void resetPeaks();

  int64_t batchSize() const;
  /// The dims of one input sample (C, H, W of an image, the length of a
  /// token sequence).
  std::vector<int64_t> sampleShape() const;
  /// Trainable parameters (those with a gradient buffer), in graph order.
  std::vector<std::string> trainableParameters() const;
  /// Every parameter, trainable and frozen, in graph order.
  std::vector<std::string> parameters() const;
  /// Parameters without a gradient buffer, in graph order: BatchNorm
  /// running statistics, which the training step updates in place.
  std::vector<std::string> frozenParameters() const;
  /// A parameter's or gradient buffer's data (empty if unknown).
  llvm::ArrayRef<float> parameter(llvm::StringRef name) const;
  llvm::ArrayRef<float> gradient(llvm::StringRef name) const;
  /// The Dropout masks of the latest training step, named `<node>:1` after
  /// their Dropout node (one byte per element, 0 or 1), in graph order;
  /// empty unless compiled with returnDropoutMasks, and on "cuda".
  std::vector<std::pair<std::string, llvm::ArrayRef<uint8_t>>>
  dropoutMasks() const;
  /// A parameter's first optimizer state: AdamW's first moment, or the
  /// built-in SGD's velocity (empty without one, e.g. SGDOptimizerV2).
  llvm::ArrayRef<float> optimizerState(llvm::StringRef name) const;
  /// Overwrites a parameter's values (same size).
  llvm::Error setParameter(llvm::StringRef name, llvm::ArrayRef<float> values);
  /// Which optimizer runs: "builtin-sgd-momentum", "AdamWOptimizer" or
  /// "SGDOptimizerV2".
  std::string optimizerName() const;
  /// The learning rate in use (after compile()).
  float learningRate() const;
  /// The files read so far (all of them after compile()), as
  /// comet/driver/Trainer.h's ArtifactPaths.
  const ArtifactPaths &artifacts() const;

  /// The engine's runtime context (comet/runtime/context.h): its slots,
  /// sites, tuner statistics and memory accounting, for the bound tuner and
  /// for reports. Owned by the engine.
  comet_rt_context *runtimeContext() const;

  /// The buffers, optimizer and statistics of the compiled graph
  /// (comet/driver/Trainer.h), which the training loop drives.
  Trainer &trainer() const;

  // ---- checkpoints and export ----
  /// The engine's state in ONNX Runtime's layout (docs/checkpoint-format.md):
  /// every parameter (trainable ones marked, first), and with
  /// includeOptimizerState the optimizer group "group0": its step, the
  /// learning rate as initial_learning_rate, and per trainable parameter
  /// "momentum0" (AdamW's first moment, the built-in SGD's velocity, zeros
  /// for SGDOptimizerV2 as ONNX Runtime writes them) and, for AdamW,
  /// "momentum1" (the second moment). No properties.
  llvm::Expected<checkpoint::Checkpoint>
  checkpointState(bool includeOptimizerState) const;
  /// checkpointState() plus `properties`, written atomically
  /// (checkpoint::writeCheckpointFile).
  llvm::Error
  saveCheckpoint(llvm::StringRef path, bool includeOptimizerState,
                 const checkpoint::PropertyBag &properties = {}) const;
  /// Overwrites parameters by name (shapes checked; parameters the
  /// checkpoint leaves out keep their values) and, when the checkpoint has
  /// an optimizer group, the optimizer state and step: every trainable
  /// parameter's momentums that this engine's optimizer keeps. An unknown
  /// or missized entry, a missing state, or momentums of another optimizer
  /// are an error that names it and changes nothing. The learning rate
  /// stays (as in ONNX Runtime, initial_learning_rate is not applied).
  llvm::Error loadCheckpointState(const checkpoint::Checkpoint &c);
  /// Writes an ONNX inference model: the eval graph (or the training
  /// graph's forward part when there is none) with the current parameters
  /// as initializers, cut to the nodes that `outputNames` need, as ONNX
  /// Runtime's Module.export_model_for_inferencing does
  /// (comet/Import/ONNXExport.h). Written atomically.
  llvm::Error
  exportInferenceModel(llvm::StringRef path,
                       llvm::ArrayRef<std::string> outputNames) const;

  /// The training graph (or the eval graph) lowered to the LLVM dialect
  /// by compile(); null before compile() or without an eval graph.
  mlir::ModuleOp loweredModule(bool eval = false) const;

  // ---- ONNX Runtime's Module and Optimizer ----
  /// Gradients accumulate across computeGradients() calls (ORT's
  /// InPlaceAccumulator) until lazyResetGrad(): the next call then
  /// overwrites them. A new engine starts with a reset pending; step()
  /// always resets (comet-train's behaviour is unchanged).
  void lazyResetGrad();
  /// Runs the optimizer once on the current gradients (ORT's
  /// Optimizer.step).
  llvm::Error optimizerStep();
  llvm::Error setLearningRate(float lr);
  /// Optimizer steps taken so far.
  int64_t optimizerSteps() const;
  /// Replaces the optimizer by the one `optimizerPath` names (as
  /// EngineOptions::optimizerPath) with its state zeroed, at the options'
  /// learning rate.
  llvm::Error setOptimizer(llvm::StringRef optimizerPath);
  /// What ONNX Runtime's Module shows of the training (or eval) graph, as
  /// indices into trainer().trainEntry().args (evalEntry().args): the
  /// inputs that are no parameter, gradient buffer or lazy_reset_grad (the
  /// data and the labels), and the outputs but the gradient accumulators'
  /// flags and what the engine adds (Dropout masks, the eval logits), each
  /// in graph order.
  struct UserArgs {
    std::vector<size_t> inputs, outputs;
  };
  UserArgs userArgs(bool eval) const;
  /// computeGradients() that copies the outputs of userArgs(false) to
  /// `outputs` (host memory, one pointer per output, null to skip one).
  llvm::Error trainStep(const void *data, const int64_t *labels,
                        llvm::ArrayRef<void *> outputs);
  /// One batch (batchSize() samples) through the eval graph; copies the
  /// outputs of userArgs(true) to `outputs`.
  llvm::Error evalStep(const void *data, const int64_t *labels,
                       llvm::ArrayRef<void *> outputs);
  /// Takes over the training state of `other`, an engine of the same
  /// graph compiled for another batch size: parameters, gradients,
  /// optimizer state and step, learning rate, the pending reset.
  llvm::Error copyStateFrom(const Engine &other);

  struct Impl;

private:
  Engine();
  std::unique_ptr<Impl> impl;
};

} // namespace comet

#endif // COMET_ENGINE_ENGINE_H
