//===- comet/driver/Trainer.h - A compiled step's state ---------*- C++ -*-===//
//
// comet::Trainer holds what training a compiled graph needs at run time: the
// runtime context, the argument buffers bound by name (parameters with their
// initial values, gradients, input, labels, the loss), the optimizer and its
// state, the eval graph's binding, and the statistics (allocator, compress
// sites, the memory prediction). It calls compiled code only through its
// packed entry point (void(void **)), so the same Trainer runs a step that
// comet::Engine JIT-compiled and one that comet-compile wrote ahead of time
// (comet-run). No MLIR or LLVM: the C++ standard library and the runtime.
//
// Errors are returned as a message; an empty string is success.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_DRIVER_TRAINER_H
#define COMET_DRIVER_TRAINER_H

#include "comet/runtime/alloc.h"
#include "comet/runtime/context.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace comet {

/// A tensor buffer from a runtime context's allocator and its ranked memref
/// descriptor.
struct Buffer {
  std::string name;
  std::vector<int64_t> shape;
  size_t elemBytes = 4;
  int64_t numel = 1;
  int32_t category = COMET_RT_MEM_OTHER;
  /// The context's memory: the device's on a CUDA context, so the host
  /// reaches it through Trainer::copy (f32() is for CPU contexts).
  void *data = nullptr;
  /// {allocated, aligned, offset, sizes[rank], strides[rank]}.
  std::vector<int64_t> desc;
  comet_rt_memref unranked{0, nullptr};

  Buffer() = default;
  Buffer(const Buffer &) = delete;
  ~Buffer() { comet_rt_free(data); }

  bool allocate(comet_rt_context *ctx);
  /// Points the descriptor at `p` (host memory of bytes() bytes that the
  /// caller keeps alive), or back at `data` when null.
  void borrow(const void *p);
  float *f32() const { return static_cast<float *>(data); }
  size_t bytes() const { return numel * elemBytes; }
};

/// One argument of a lowered function (after the runtime context).
struct ArgInfo {
  std::string name;
  std::vector<int64_t> shape;
  size_t elemBytes = 4;
  bool isResult = false;
  /// The input a loss reads as labels (the lowering's `comet.labels`).
  bool isLabels = false;
  /// The values the input takes, [0, valueRange): the classes of the
  /// labels, or the ids of int64 data that Gathers read as indices (the
  /// lowering's `comet.index_range`); 0 when not known.
  int64_t valueRange = 0;
  /// The element type as ONNX's TensorProto.DataType (1 float, 7 int64,
  /// 9 bool, ...); 0 when the compiler did not record it.
  int32_t onnxType = 0;
  /// In a step that applies the optimizer (Entry::fusedOptimizer), the
  /// argument's part in the updates (the lowering's `comet.optimizer`):
  /// weight (a trainable parameter), state0, state1 (its optimizer states,
  /// of the parameter optimizerParam), lr or step; empty otherwise.
  std::string optimizerRole;
  std::string optimizerParam;
};

/// A compiled function: its signature and its packed entry point, which
/// takes {&ctx, &desc_1, ..., &desc_n, &status} (MLIR's packed interface).
struct Entry {
  std::string funcName;
  std::vector<ArgInfo> args;
  void (*packed)(void **) = nullptr;
  /// The runtime entries (abi.def names) the function calls: what a device
  /// must implement to run it (comet/driver/Coverage.h).
  std::vector<std::string> runtimeEntries;
  /// The optimizer kernel (adamw, sgd_v2, sgd_momentum) whose update of
  /// each parameter the function applies itself (comet-fuse-optimizer);
  /// empty: the optimizer runs after it.
  std::string fusedOptimizer;

  /// Runs the function on ctx and the buffers of its arguments.
  std::string invoke(comet_rt_context *ctx,
                     const std::vector<Buffer *> &buffers) const;
};

/// The optimizer run after each training step.
struct OptimizerConfig {
  /// builtin-sgd-momentum | AdamWOptimizer | SGDOptimizerV2.
  std::string kind = "builtin-sgd-momentum";
  /// <= 0: the optimizer's default (defaultLearningRate).
  float learningRate = 0.0f;
  float momentum = 0.9f; // built-in SGD only
  float weightDecay = 0.0f;
  // AdamWOptimizer's attributes.
  float adamAlpha = 0.9f, adamBeta = 0.999f, adamEps = 1e-8f,
        adamWeightDecay = 0.0f;
  int64_t adamMode = 0, adamCorrectBias = 1;
};

/// 0.001 for AdamW, 0.05 for the SGDs.
float defaultLearningRate(const std::string &kind);

/// The files a training run read, after the defaults were applied (for
/// messages and the report).
struct ArtifactPaths {
  std::string training;
  std::string weights;   ///< an ORT checkpoint or an .onnx file
  std::string evalModel; ///< empty: no eval graph
  std::string optimizer; ///< empty: the built-in SGD
};

/// Bytes of one allocator category (comet_rt_alloc_category order).
struct CategoryBytes {
  std::string name;
  int64_t current = 0;
  int64_t peak = 0;
  /// At the instant of the global peak.
  int64_t atPeak = 0;
};

/// An op that forms a weight gradient from a lossy slot's activation, as
/// compress-activations records it (comet.tune), for the bound tuner.
struct SlotConsumer {
  std::string kind; ///< conv | gemm | batchnorm
  double numTerms = 1, reuse = 1, activationElements = 1;
  std::string param; ///< the parameter whose gradient it forms
};

/// One comet.compress of the training graph (a "site").
struct SiteStats {
  std::string value; ///< ONNX name of the compressed tensor
  std::string codec; ///< sz | mask | raw
  int64_t slot = -1; ///< tuning slot of a lossy bound, -1 if none
  double eb = 0;     ///< bound of the latest compression (0 for lossless)
  int64_t bytesIn = 0, bytesOut = 0; ///< of the latest compression
  double ratio = 0;
  int64_t calls = 0;
  std::vector<SlotConsumer> consumers; ///< lossy slots only
};

/// Optimizer state buffers per trainable parameter: AdamW's two moments,
/// the built-in SGD's velocity, none for SGDOptimizerV2.
int optimizerStatesPerParameter(const std::string &kind);

/// What a memory budget chose when the graph was compiled: the
/// comet.budget record of compress-activations, in whole-step terms.
struct BudgetChoice {
  /// The whole-step budget; 0: none was given.
  int64_t bytes = 0;
  /// Of it, what the training graph's tensors may use: the budget less the
  /// optimizer state, which the graph does not see.
  int64_t graphBytes = 0;
  /// The whole-step peak predicted when compiling, at the assumed sz ratio.
  int64_t predictedPeakBytes = 0;
  double assumedSzRatio = 0;
  /// Values compressed, and the candidates left raw (by name).
  int64_t compressed = 0;
  std::vector<std::string> notSelected;
  /// Values recomputed in the backward, of those that could be
  /// (MemoryPrediction::recomputed names them).
  int64_t recomputed = 0, recomputeCandidates = 0;
};

/// What a memory budget chose to recompute: the names, of `candidates`.
struct RecomputeChoice {
  std::vector<std::string> names;
  int64_t candidates = 0;
};

struct EngineStats {
  std::vector<CategoryBytes> categories;
  /// The allocator's peak over all categories since the last resetPeaks().
  int64_t peakBytes = 0;
  /// The peak of the graph's tensors alone (the Engine's buffers, the JIT
  /// code's allocations and the compressed handles, sized by the
  /// allocator), without kernel scratchpads: what the prediction models.
  /// Process-wide, like the allocator's counters.
  int64_t tensorPeakBytes = 0;
  /// The ActivationLiveness peak of the lowered training graph plus the
  /// buffers the graph does not see (optimizer state).
  int64_t predictedPeakBytes = 0;
  /// The activations that compress-activations keeps compressed (with
  /// compression off: the candidates it would compress), raw bytes.
  int64_t activationBytesUncompressed = 0;
  /// The same activations as stored: handle bytes of the latest step.
  int64_t activationBytesCompressed = 0;
  /// Activation (+ compressed) bytes the analysis predicts at its peak.
  int64_t predictedActivationBytesAtPeak = 0;
  /// Of predictedPeakBytes, the kernel workspace counted at its step
  /// (MemoryPrediction::workspace).
  int64_t predictedWorkspaceBytesAtPeak = 0;
  /// The predicted peak of the tensors alone (no workspace), what
  /// tensorPeakBytes measures.
  int64_t predictedTensorPeakBytes = 0;
  std::vector<SiteStats> sites;
  BudgetChoice budget;
  /// MemoryPrediction::recomputed.
  std::vector<std::string> recomputed;
  /// The sz sites that Trainer::chooseSiteEntropy gave the fixed-width
  /// codec: their handles are not live at the predicted peak.
  int64_t fixedWidthSites = 0;
  int64_t steps = 0;
  /// Tensor bytes after each op of the training graph, as predicted (each
  /// sz handle sized by its slot's largest stream since resetPeaks()).
  std::vector<int64_t> predictedTimeline;
  /// Tensor bytes after each allocation/free of the recorded step (see
  /// recordTimelineOfNextStep), as measured; empty if none was recorded.
  std::vector<int64_t> measuredTimeline;
};

/// The liveness analysis's live intervals of the lowered training graph,
/// as the caller owns the buffers (arguments and results live the whole
/// step). Sizes of sz handles follow the measured ratio, so they are kept
/// as the tensor's bytes.
struct MemoryPrediction {
  struct Interval {
    int64_t start = 0, end = 0;
    /// Bytes it occupies (for an sz handle: at the ratio assumed when
    /// compiled).
    int64_t bytes = 0;
    /// For an sz handle: the bytes of the tensor it stores; 0 otherwise.
    int64_t szTensorBytes = 0;
    bool activation = false;
    /// For an sz handle: its slot, whose site's measured size it takes
    /// once a step has compressed it; -1 otherwise.
    int64_t slot = -1;
  };
  bool valid = false;
  int64_t numSteps = 0;
  std::vector<Interval> intervals;
  /// Per step (empty: none), the kernel workspace the step may take beside
  /// the intervals' tensors: counted in the predicted peak, not in the
  /// predicted timeline (which the allocator's tensor timeline matches).
  std::vector<int64_t> workspace;
  /// The ratio sz handles are sized by until a step measures one.
  double szRatio = 8.0;
  /// With compression off: the bytes compress-activations would store
  /// compressed (the baseline's side of the activation comparison).
  int64_t candidateBytes = 0;
  BudgetChoice budget;
  /// The values the backward computes again instead of keeping them
  /// (comet-recompute-activations), by ONNX name.
  std::vector<std::string> recomputed;
};

/// A parameter's initial value as a weights source holds it.
struct InitialWeight {
  const void *data = nullptr;
  size_t bytes = 0;
  /// Its shape, where the source records one (checked against the graph's).
  const std::vector<int64_t> *dims = nullptr;
};

/// Finds an initial parameter value by name; false if there is none.
using WeightLookup =
    std::function<bool(const std::string &name, InitialWeight &out)>;

class Trainer {
public:
  Trainer();
  ~Trainer();
  Trainer(const Trainer &) = delete;

  /// Allocates the training graph's argument buffers and fills the
  /// parameters from `weights` (named `weightsName` in messages). Inputs are
  /// bound by role: gradient buffers and lazy_reset_grad by ORT's names,
  /// parameters by the weights; of the rest, the input the loss reads as
  /// labels (ArgInfo::isLabels) is the labels and the one other input the
  /// data batch (float, or int64 token ids). Without a marked labels input,
  /// exactly one float input is the data and one int64 input the labels.
  /// The first result is the loss. Fails first when the device lacks a
  /// runtime entry the graph calls (Entry::runtimeEntries).
  std::string bindTrain(Entry train, const WeightLookup &weights,
                        const std::string &weightsName);
  /// Runs the step on device ("cpu" or "cuda"); before bindTrain. Fails
  /// when the runtime has no CUDA backend or the machine no device. A
  /// driver checks first that the device implements what the graphs call
  /// (checkDeviceCoverage), so that it refuses them on any machine.
  std::string useDevice(const std::string &device);
  /// "cpu" or "cuda": the device of the trainer's context.
  std::string deviceName() const;
  /// Allocates the optimizer's state for the trainable parameters (after
  /// checking that the device implements the optimizer's entries). A step
  /// that applies the optimizer takes the state, the learning rate and the
  /// step count as arguments: they are bound here, and `config` must name
  /// the optimizer it was compiled with (its hyperparameters are compiled
  /// in).
  std::string setupOptimizer(const OptimizerConfig &config);
  /// The eval graph (`evalName` in messages): its parameters are the
  /// training graph's buffers; the rest are bound as in bindTrain: the data
  /// (a batch of the training graph's samples, of its element type) and the
  /// labels (as many per sample as in training); its last result is the
  /// logits, one row per label. Fails first when the device lacks a
  /// runtime entry the graph calls.
  std::string bindEval(Entry eval, const std::string &evalName);
  void setSites(std::vector<SiteStats> sites) { siteInfo = std::move(sites); }
  void setPrediction(MemoryPrediction p) {
    szRatio = p.szRatio;
    prediction = std::move(p);
  }
  /// After the first step, give every sz site whose handle is not live at
  /// the predicted peak the fixed-width codec (no entropy stage, which
  /// costs the codec's time), as long as the larger streams predict no
  /// higher peak (chooseSiteEntropy). On by default.
  void setEntropyByPeak(bool on);

  /// The training graph only (gradients into the gradient buffers). `data`
  /// is a batch of samples of the data input's element type (float32, or
  /// int64 token ids: dataElemBytes()), `labels` labelsPerSample() per
  /// sample. Refused by a step that applies the optimizer, which keeps no
  /// gradient.
  std::string computeGradients(const void *data, const int64_t *labels,
                               float &loss);
  /// The training graph, then the optimizer (or the step that applies it);
  /// a NaN/Inf loss is an error. A fused step has updated the parameters
  /// by the time it sees the loss.
  std::string step(const void *data, const int64_t *labels, float &loss);
  /// Whether the training step applies the optimizer itself
  /// (Entry::fusedOptimizer): no gradient buffers, no optimizerStep().
  bool optimizerFused() const { return !train.fusedOptimizer.empty(); }
  /// Runs the eval graph on n samples in batches (the last one padded).
  /// Each label is one prediction (a language model's: one per token):
  /// meanLoss is the mean over the n * labelsPerSample() labels and
  /// numCorrect counts the labels that are their row's argmax.
  std::string evaluate(const void *data, const int64_t *labels, int64_t n,
                       double &meanLoss, int64_t &numCorrect);
  bool hasEval() const { return static_cast<bool>(eval.packed); }

  EngineStats stats() const;
  void recordTimelineOfNextStep() { recordNext = true; }
  void resetPeaks();

  comet_rt_context *context() const { return rt.get(); }
  /// Copies between host memory and a buffer's (comet_rt_memcpy).
  std::string copy(void *dst, const void *src, size_t bytes) const;
  int64_t batchSize() const;
  const std::vector<int64_t> &sampleShape() const { return sample; }
  /// 4 for float32 data, 8 for int64 token ids.
  size_t dataElemBytes() const { return input ? input->elemBytes : 4; }
  /// The valid ids of int64 data, [0, dataRange()); 0 when unknown.
  int64_t dataRange() const { return dataValues; }
  /// Labels per sample: 1 for a classifier, the tokens for a language
  /// model whose loss takes one label per token.
  int64_t labelsPerSample() const { return perSampleLabels; }
  /// The labels' classes, [0, numClasses()); 0 when unknown.
  int64_t numClasses() const { return labelClasses; }
  const std::vector<std::string> &trainableParameters() const {
    return trainable;
  }
  /// Every parameter, trainable and frozen, in graph order.
  std::vector<std::string> parameters() const;
  /// Parameters without a gradient (BatchNorm running statistics), which
  /// the step updates in place.
  const std::vector<std::string> &frozenParameters() const { return frozen; }
  /// A buffer by name (parameters, gradients, input, labels), or null.
  Buffer *buffer(const std::string &name) const;
  /// The gradient buffer of a parameter, or null.
  Buffer *gradient(const std::string &param) const;
  /// A parameter's first optimizer state, or null.
  Buffer *optimizerState(const std::string &param) const;
  const OptimizerConfig &optimizerConfig() const { return optimizer; }
  // ---- checkpoints ----
  /// A parameter's optimizer state `k`: 0 is AdamW's first moment or the
  /// built-in SGD's velocity, 1 AdamW's second moment; null if there is
  /// none.
  Buffer *optimizerState(const std::string &param, int k) const;
  /// Optimizer steps taken: AdamW's step count, and stats().steps.
  int64_t optimizerSteps() const { return steps; }
  /// Sets the steps taken, for a run that continues from a checkpoint.
  void setOptimizerSteps(int64_t n) { steps = n; }
  const Entry &trainEntry() const { return train; }
  const Entry &evalEntry() const { return eval; }
  const std::vector<SiteStats> &sites() const { return siteInfo; }
  const MemoryPrediction &memoryPrediction() const { return prediction; }
  int64_t optimizerStateBytes() const { return stateBytes; }

  // ---- ONNX Runtime's Module and Optimizer ----
  /// The next computeGradients() overwrites the gradient buffers; until
  /// then each call adds to them (ORT's lazy_reset_grad). A new trainer
  /// starts with a reset pending; step() always resets.
  void lazyResetGrad() { resetGrad = true; }
  /// Runs the optimizer once on the gradient buffers as they are.
  std::string optimizerStep() { return runOptimizer(); }
  std::string setLearningRate(float lr);
  /// The data and labels inputs of the training graph (null before
  /// bindTrain), and the indices of the eval graph's in evalEntry().args.
  const Buffer *dataInput() const { return input; }
  const Buffer *labelsInput() const { return labels; }
  size_t evalDataArg() const { return evalData; }
  size_t evalLabelsArg() const { return evalLabels; }
  /// Runs the eval graph on one batch (batchSize() samples) and copies
  /// each result into `outputs` (host memory, one pointer per result of
  /// evalEntry(), null to skip it).
  std::string evalBatch(const void *data, const int64_t *labels,
                        const std::vector<void *> &outputs);
  /// Copies another trainer's parameters, gradients, optimizer state,
  /// learning rate, step count and pending reset: a trainer of the same
  /// graph compiled for another batch size.
  std::string copyStateFrom(const Trainer &other);

private:
  std::string runOptimizer();
  /// Runs the training graph on a batch (lazy_reset_grad as resetGrad).
  std::string runTrain(const void *data, const int64_t *labels, float &loss);
  Buffer *newBuffer(const std::string &name, const std::vector<int64_t> &shape,
                    size_t elemBytes, int32_t category);

  /// This trainer's runtime state; every buffer below counts in it.
  std::unique_ptr<comet_rt_context, void (*)(comet_rt_context *)> rt;
  Entry train, eval;
  /// The eval graph's data and labels arguments (indices into eval.args).
  size_t evalData = 0, evalLabels = 0;
  std::map<std::string, std::unique_ptr<Buffer>> buffers;
  std::vector<Buffer *> trainArgs;
  /// The arguments of a fused step that setupOptimizer binds (indices into
  /// trainArgs, null until then).
  std::vector<size_t> optimizerArgs;
  std::vector<std::string> trainable;        // parameters with a gradient
  std::vector<std::string> frozen;           // parameters without one
  std::map<std::string, std::string> gradOf; // parameter -> its gradient
  Buffer *input = nullptr, *labels = nullptr, *lazyReset = nullptr,
         *loss = nullptr;
  std::vector<int64_t> sample;
  int64_t dataValues = 0, perSampleLabels = 1, labelClasses = 0;

  OptimizerConfig optimizer;
  std::vector<std::unique_ptr<Buffer>> state1, state2;
  std::unique_ptr<Buffer> lrBuf, stepBuf;
  int64_t stateBytes = 0;
  int64_t steps = 0;
  bool resetGrad = true;

  std::vector<SiteStats> siteInfo;
  MemoryPrediction prediction;
  /// The sz ratio of the latest stats() that measured one.
  mutable double szRatio = 8.0;

  bool recordNext = false;
  std::vector<int64_t> timeline;
  /// Per slot, the largest stream a step has stored since resetPeaks()
  /// (its tensor's bytes and the stream's): the measured peak is the worst
  /// step's, so the prediction sizes each handle by its worst step too
  /// (the tuner loosens bounds after the first steps).
  std::map<int64_t, std::pair<int64_t, int64_t>> slotLargest;
  void noteStreams();
  bool entropyByPeak = true, entropyChosen = false;
  int64_t fixedWidthSites = 0;
  void chooseSiteEntropy();
  /// The predicted timeline of the graph's tensors and its peak (with the
  /// workspace term) at step `at`: each sz handle sized by its slot's
  /// largest stream, or by its fixed-width block for the slots in
  /// `fixedWidth`, or at the overall ratio before its slot is measured.
  struct Sweep {
    std::vector<int64_t> timeline;
    int64_t peak = 0, at = 0, tensorPeak = 0, actAtPeak = 0, wsAtPeak = 0;
  };
  Sweep sweep(const std::map<int64_t, int64_t> &fixedWidth) const;
};

} // namespace comet

#endif // COMET_DRIVER_TRAINER_H
