//===- comet/driver/Training.h - The training loop and report ---*- C++ -*-===//
//
// What comet-train and comet-run share around a comet::Trainer: the data
// (Fashion-MNIST, the user's .npy/.npz arrays or synthetic, through the
// runtime's loader), the training
// loop with its progress line and bound history, the evaluation on the test
// split, the summary and the JSON report (docs/execution.md). No MLIR or
// LLVM. Errors are returned as a message; an empty string is success.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_DRIVER_TRAINING_H
#define COMET_DRIVER_TRAINING_H

#include "comet/driver/Trainer.h"
#include "comet/runtime/data.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace comet {

/// The arrays of one split (source "arrays", docs/execution.md).
struct ArrayFiles {
  /// The samples: an .npy file or an .npz archive; empty: none.
  std::string data;
  /// The labels; empty: in data's archive.
  std::string labels;
  /// The members of an .npz; empty: x and y.
  std::string dataKey, labelsKey;
};

struct DataOptions {
  /// fashion-mnist | synthetic | arrays.
  std::string source = "fashion-mnist";
  std::string dataDir;
  /// CxHxW of synthetic samples; empty: 1x28x28.
  std::string syntheticShape;
  int64_t syntheticSize = 6400;
  uint64_t seed = 0;
  /// Open the test split too.
  bool wantEval = true;
  /// source arrays: the training arrays and the test arrays (none when
  /// testArrays.data is empty).
  ArrayFiles trainArrays, testArrays;
  /// Holds out the last round(F * N) training samples as the test set
  /// (0: none), whatever the source.
  double validationSplit = 0;
};

/// The training and test sets and the training loader.
class TrainingData {
public:
  TrainingData() = default;
  TrainingData(const TrainingData &) = delete;
  ~TrainingData();

  /// Opens the datasets (in the default runtime context, so that a
  /// trainer's memory figures leave them out). Arrays wait for
  /// makeLoader(), which knows the element type the model takes.
  std::string open(const DataOptions &options);
  /// Checks the samples against the trainer's input and creates the
  /// shuffling loader (last partial batch dropped). A model whose data are
  /// int64 token ids takes token arrays, or synthetic token sequences
  /// (comet_rt_dataset_synthetic_tokens) of its sequence length, ids in
  /// [0, Trainer::dataRange()) and labelsPerSample() labels in
  /// [0, Trainer::numClasses()); the image datasets do not fit it. Arrays
  /// are read as float32 or int64 (the data input's type), their samples
  /// must have the model's sample shape and labels per sample, and their
  /// ids and labels the model's ranges where it has them.
  std::string makeLoader(const Trainer &trainer);
  /// What was read, for the report's `data`: the source, the arrays'
  /// files, types and shapes, the validation split.
  std::string description() const;
  /// Fills a batch (samplesPerBatch() samples of sampleElements() elements
  /// of sampleBytes() each, and labelsPerSample() labels per sample);
  /// returns the samples written, 0 at the end of the epoch.
  int64_t next(void *data, int64_t *labels);
  /// The next batch, starting the next epoch when this one is done.
  bool nextBatch(void *data, int64_t *labels, int64_t epoch);
  /// Bytes the datasets hold.
  int64_t datasetBytes() const { return bytes; }
  int64_t samplesPerBatch() const { return batch; }
  int64_t sampleElements() const { return perSample; }
  /// 4 (float32 pixels) or 8 (int64 token ids).
  size_t sampleBytes() const { return tokens ? 8 : 4; }
  int64_t labelsPerSample() const { return perSampleLabels; }
  int64_t batchesPerEpoch() const;

  struct TestSamples {
    /// images (float data) or tokens (int64 data), and labelsPerSample()
    /// labels per sample.
    std::vector<float> images;
    std::vector<int64_t> tokens;
    std::vector<int64_t> labels;
    int64_t count = 0;
    const void *data() const {
      return tokens.empty() ? static_cast<const void *>(images.data())
                            : static_cast<const void *>(tokens.data());
    }
  };
  /// The first `limit` test samples (0: all), read once: the run may
  /// evaluate many times.
  const TestSamples &testSamples(int64_t limit);

  comet_rt_dataset *train = nullptr, *test = nullptr;
  comet_rt_loader *loader = nullptr;

private:
  std::string openTokens(const Trainer &trainer);
  std::string openArrays(const Trainer &trainer);
  std::string splitValidation();

  DataOptions opts;
  int64_t bytes = 0, batch = 0, perSample = 0, perSampleLabels = 1;
  bool tokens = false;
  /// With a validation split: the training samples before it, those held
  /// out, and what they were read from.
  int64_t splitFrom = 0, heldOut = 0;
  std::string trainFiles, testFiles;
  TestSamples testCache;
  bool testRead = false;
};

/// Where a run stands between two steps: with the trainer's state, what a
/// checkpoint records to continue it exactly.
struct LoopPosition {
  /// Steps done.
  int64_t steps = 0;
  /// The epoch (0-based) the loader is in, and the samples of it already
  /// read: the next step reads on from there (or from the next epoch when
  /// fewer than a batch are left).
  int64_t epoch = 0, samples = 0;
};

struct RunResult;

struct RunOptions {
  int64_t epochs = 1;
  /// Stop after this many steps (0: no limit).
  int64_t maxSteps = 0;
  /// Test samples to evaluate (0: all, -1: none).
  int64_t evalSamples = 0;
  /// Also evaluate every N steps during training (0: only after it).
  int64_t evalInterval = 0;
  bool quiet = false;
  /// Called around every step (the bound tuner).
  std::function<void(int64_t step)> beforeStep, afterStep;
  /// Continue a run from here (a checkpoint's position). The RunResult
  /// given to trainLoop then holds the run's history up to it.
  LoopPosition start;
  /// Called after every step with the position reached (checkpoints); a
  /// message stops the run with that error.
  std::function<std::string(const LoopPosition &, const RunResult &)>
      afterPosition;
};

struct RunResult {
  int64_t steps = 0;
  float lastLoss = 0;
  std::vector<double> losses, stepMs;
  /// The process's CPU time of each step, all threads: unlike stepMs it
  /// leaves out the time spent waiting for a core on a loaded machine.
  std::vector<double> stepCpuMs;
  /// Per site: (step, bound) whenever a slot's bound changed.
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> ebHistory;
  /// The trainer's statistics right after the last step.
  EngineStats stats;
  /// -1 when not evaluated.
  double accuracy = -1, testLoss = 0;
  struct Evaluation {
    int64_t step;
    double epoch, accuracy, loss;
  };
  /// Every evaluation in order, the final one last.
  std::vector<Evaluation> evalHistory;
};

/// Trains for the epochs (or maxSteps) from options.start; the memory
/// timeline of the second step it runs is recorded. Fills everything but
/// the final evaluation, appending to the history `result` holds when
/// resuming (steps, losses, evaluations, bounds; step times are this
/// run's); evaluates every evalInterval steps before the last (the
/// allocator's peaks reset after each, so the memory figures stay the
/// training step's).
std::string trainLoop(Trainer &trainer, TrainingData &data,
                      const RunOptions &options, RunResult &result);

/// Evaluates the eval graph on the test split, if both exist, and appends
/// the result to the evaluation history.
std::string evaluateTestSet(Trainer &trainer, TrainingData &data,
                            const RunOptions &options, RunResult &result);

/// The lines printed after training (steps, loss, accuracy, memory).
void printSummary(const RunResult &result);

/// What the report says besides the run's figures.
struct ReportInfo {
  std::string model, device, compress, optimizer, data;
  /// The CPU sz encoder's entropy setting (comet-train --codec-entropy;
  /// "peak", the Trainer's default, for comet-run).
  std::string codecEntropy = "peak";
  double learningRate = 0;
  /// Whether the step applied the optimizer itself (Trainer::optimizerFused).
  bool optimizerFused = false;
  /// The files read; empty eval model and optimizer are written as null.
  ArtifactPaths artifacts;
  int64_t epochs = 1, batch = 0, datasetBytes = 0;
};

/// The JSON report, indented by two spaces.
std::string reportJson(const ReportInfo &info, const RunResult &result);

/// Writes `text` to `path` through a temporary file renamed on success, so
/// a failed write leaves no half-written file.
std::string writeFileAtomically(const std::string &path,
                                const std::string &text);

} // namespace comet

#endif // COMET_DRIVER_TRAINING_H
