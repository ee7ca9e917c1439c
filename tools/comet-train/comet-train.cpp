//===- comet-train.cpp - Train an ONNX Runtime training graph with COMET --===//
//
//   comet-train ARTIFACT_DIR|training_model.onnx [--optimizer OPT.onnx]
//       [--data fashion-mnist|synthetic|arrays] [--epochs E] [--batch B]
//       [--train-data X.npy|D.npz [--train-labels Y.npy] [--test-data ...]]
//       [--compress none|static|adaptive] [--device cpu|cuda]
//       [--report OUT.json] [--max-steps N]
//       [--save-checkpoint CKPT [--checkpoint-every N]] [--resume CKPT]
//       [--export-model OUT.onnx [--export-outputs NAMES]]
//
// Compiles the training graph of an ONNX Runtime artifact folder with
// comet::Engine (weights from its checkpoint, its optimizer_model.onnx),
// trains, evaluates its eval_model.onnx on the test split, prints a summary
// and writes a JSON report (docs/execution.md). The loop, evaluation and
// report are comet/driver/Training.h's, which comet-run shares for steps
// compiled ahead of time.
// --dump-grads runs one training-graph step on given inputs and writes the
// loss, gradients and Dropout masks, for the check against ONNX Runtime.
// --save-checkpoint writes the run's state as an ONNX Runtime checkpoint
// (RunState.h adds comet-train's resume fields), --resume continues it
// exactly, --export-model writes the trained model for inference
// (docs/execution.md).
//
//===----------------------------------------------------------------------===//
#include "EngineFlags.h"
#include "RunState.h"
#include "comet/Engine/Engine.h"
#include "comet/Import/ONNXModel.h"
#include "comet/Tuner/EngineTuner.h"
#include "comet/driver/Training.h"
#include "comet/runtime/codec.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

using namespace llvm;

static cl::OptionCategory cat("comet-train options");
static comet::EngineFlags engineFlags(cat);
static cl::opt<comet::CompressMode> &compress = engineFlags.compress;
static cl::opt<int64_t> &batch = engineFlags.batch;
enum class DataSource { FashionMnist, Synthetic, Arrays };
enum class Device { Cpu, Cuda };
static cl::opt<std::string>
    modelPath(cl::Positional, cl::Required,
              cl::desc("<artifact folder|training_model.onnx|.mlir>"),
              cl::cat(cat));
static cl::opt<DataSource>
    dataSource("data", cl::desc("Training data"),
               cl::values(clEnumValN(DataSource::FashionMnist, "fashion-mnist",
                                     "Fashion-MNIST from --data-dir"),
                          clEnumValN(DataSource::Synthetic, "synthetic",
                                     "seeded synthetic samples"),
                          clEnumValN(DataSource::Arrays, "arrays",
                                     "the --train-data arrays (implied by "
                                     "--train-data)")),
               cl::init(DataSource::FashionMnist), cl::cat(cat));
static cl::opt<std::string>
    dataDir("data-dir", cl::desc("Directory of the Fashion-MNIST IDX files"),
            cl::init(COMET_RT_FASHION_MNIST_DIR), cl::cat(cat));
static cl::opt<std::string> syntheticShape(
    "synthetic-shape",
    cl::desc("CxHxW of synthetic samples (default: the model's input)"),
    cl::init(""), cl::cat(cat));
static cl::opt<int64_t> syntheticSize("synthetic-size",
                                      cl::desc("Synthetic training samples"),
                                      cl::init(6400), cl::cat(cat));
// The user's arrays (docs/execution.md, "Training on your own arrays").
static cl::opt<std::string> trainData(
    "train-data",
    cl::desc("Training samples: an .npy file (labels in --train-labels) or "
             "an .npz archive (samples in member --data-key, labels in "
             "--labels-key unless --train-labels)"),
    cl::value_desc("X.npy|D.npz"), cl::init(""), cl::cat(cat));
static cl::opt<std::string>
    trainLabels("train-labels", cl::desc("Training labels (.npy or .npz)"),
                cl::value_desc("Y.npy|L.npz"), cl::init(""), cl::cat(cat));
static cl::opt<std::string> testData(
    "test-data",
    cl::desc("Evaluation samples, as --train-data (default: no evaluation "
             "for arrays)"),
    cl::value_desc("X.npy|D.npz"), cl::init(""), cl::cat(cat));
static cl::opt<std::string>
    testLabels("test-labels", cl::desc("Evaluation labels (.npy or .npz)"),
               cl::value_desc("Y.npy|L.npz"), cl::init(""), cl::cat(cat));
static cl::opt<std::string>
    dataKey("data-key",
            cl::desc("The training samples' member of an .npz (default x)"),
            cl::init(""), cl::cat(cat));
static cl::opt<std::string>
    labelsKey("labels-key",
              cl::desc("The training labels' member of an .npz (default y)"),
              cl::init(""), cl::cat(cat));
static cl::opt<std::string> testDataKey(
    "test-data-key",
    cl::desc("The evaluation samples' member of an .npz (default x)"),
    cl::init(""), cl::cat(cat));
static cl::opt<std::string> testLabelsKey(
    "test-labels-key",
    cl::desc("The evaluation labels' member of an .npz (default y)"),
    cl::init(""), cl::cat(cat));
static cl::opt<double> validationSplit(
    "validation-split",
    cl::desc("Hold out the last fraction F of the training samples and "
             "evaluate on them instead of a test set"),
    cl::value_desc("F"), cl::init(0), cl::cat(cat));
static cl::opt<int64_t> epochs("epochs", cl::desc("Epochs"), cl::init(1),
                               cl::cat(cat));
static cl::opt<Device>
    device("device", cl::desc("Execution device"),
           cl::values(clEnumValN(Device::Cpu, "cpu", "CPU"),
                      clEnumValN(Device::Cuda, "cuda", "CUDA GPU")),
           cl::init(Device::Cpu), cl::cat(cat));
/// --codec-entropy: peak (the default) gives the entropy stage only to the
/// handles live at the predicted peak (Trainer::chooseSiteEntropy); the
/// others are the codec's process-wide comet_rt_codec_entropy settings.
enum class EntropyFlag { Peak, Auto, Off, Always, None };
static cl::opt<EntropyFlag> codecEntropy(
    "codec-entropy",
    cl::desc("The CPU sz encoder's entropy stage: the ratio against the "
             "codec's time (docs/codec-format.md)"),
    cl::values(
        clEnumValN(EntropyFlag::Peak, "peak",
                   "auto for the handles live at the predicted peak, none "
                   "for the rest, chosen after the first step (default)"),
        clEnumValN(EntropyFlag::Auto, "auto",
                   "Rice- or range-coded chunks where they pay"),
        clEnumValN(EntropyFlag::Off, "off", "block chunks only"),
        clEnumValN(EntropyFlag::Always, "always",
                   "both coders on every chunk, the smallest kept"),
        clEnumValN(EntropyFlag::None, "none",
                   "fixed-width block modes only, as the CUDA encoder "
                   "writes")),
    cl::init(EntropyFlag::Peak), cl::cat(cat));
static cl::opt<std::string> reportPath("report",
                                       cl::desc("Write the JSON report here"),
                                       cl::init(""), cl::cat(cat));
static cl::opt<int64_t> maxSteps("max-steps",
                                 cl::desc("Stop after N steps (0: no limit)"),
                                 cl::init(0), cl::cat(cat));
static cl::opt<int64_t>
    evalSamples("eval-samples",
                cl::desc("Test samples to evaluate (0: all, -1: none)"),
                cl::init(0), cl::cat(cat));
static cl::opt<float>
    lr("lr", cl::desc("Learning rate (default: 0.001 for AdamW, 0.05 for SGD)"),
       cl::init(0.0f), cl::cat(cat));
static cl::opt<int64_t> evalInterval(
    "eval-interval",
    cl::desc("Also evaluate every N steps (0: only after training); the "
             "report's eval_history lists each evaluation"),
    cl::init(0), cl::cat(cat));
static cl::opt<float> momentum("momentum",
                               cl::desc("Momentum of the built-in SGD"),
                               cl::init(0.9f), cl::cat(cat));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("Shuffle/synthetic seed and the seed "
                                       "of the engine's Dropout stream"),
                              cl::init(0), cl::cat(cat));
static cl::opt<std::string> dumpGrads(
    "dump-grads",
    cl::desc("Run one training-graph step on --inputs/--labels and write "
             "loss.bin, <param>.grad.bin, <param>.param.bin (the weights "
             "it started from; raw f32), for frozen parameters (BatchNorm "
             "running statistics) their values after the step as "
             "<param>.after.bin, and each Dropout "
             "mask as mask<i>.bin (a byte per element; "
             "masks.json maps '<Dropout node>:1' to its file) to this "
             "directory"),
    cl::init(""), cl::cat(cat));
static cl::opt<std::string> inputsFile(
    "inputs",
    cl::desc("Raw batch for --dump-grads (f32, or i64 token ids for a model "
             "whose data input is int64)"),
    cl::init(""), cl::cat(cat));
static cl::opt<std::string>
    labelsFile("labels",
               cl::desc("Raw i64 labels for --dump-grads (as many per sample "
                        "as the model's labels input holds)"),
               cl::init(""), cl::cat(cat));
// Bound tuner (--compress adaptive), docs/tuning.md. The defaults are the
// tuner's own.
static const comet::tuner::TunerOptions tunerDefaults;
static cl::opt<comet::tuner::Rule> boundRule(
    "bound-rule", cl::desc("Bound rule (adaptive; default comet)"),
    cl::values(clEnumValN(comet::tuner::Rule::Comet, "comet", "COMET"),
               clEnumValN(comet::tuner::Rule::Acgc, "acgc", "AC-GC"),
               clEnumValN(comet::tuner::Rule::Noise, "noise",
                          "COMET's error model aimed at a fraction of the "
                          "gradient's minibatch noise")),
    cl::init(tunerDefaults.rule), cl::cat(cat));
static cl::opt<double> boundK("bound-k",
                              cl::desc("COMET: sigma = k * mean|momentum|"),
                              cl::init(tunerDefaults.sigmaFactor),
                              cl::cat(cat));
static cl::opt<comet::tuner::GradMagnitude> gradMagnitude(
    "grad-magnitude",
    cl::desc("COMET: the dY statistic in sigma = a*eb*G*sqrt(N*R): masked "
             "(default; N*G^2*R replaced by N*M + K, M the mean dY^2 over "
             "the terms with non-zero X and K the excess of equal X values "
             "sharing one error), rms (the std of a sum of products) or "
             "lbar (mean |dY|, the paper's choice)"),
    cl::values(
        clEnumValN(comet::tuner::GradMagnitude::Masked, "masked", "masked"),
        clEnumValN(comet::tuner::GradMagnitude::Rms, "rms", "rms"),
        clEnumValN(comet::tuner::GradMagnitude::MeanAbs, "lbar", "lbar")),
    cl::init(tunerDefaults.gradMagnitude), cl::cat(cat));
static cl::opt<double> acgcE("acgc-e", cl::desc("AC-GC: error energy e"),
                             cl::init(tunerDefaults.acgcEnergy), cl::cat(cat));
static cl::opt<double> noiseFraction(
    "noise-fraction",
    cl::desc("noise: sigma = F * the std of the gradient's minibatch noise "
             "(the error adds F^2 to the noise's variance)"),
    cl::value_desc("F"), cl::init(tunerDefaults.noiseFraction), cl::cat(cat));
static cl::opt<int64_t> retuneInterval(
    "retune-interval",
    cl::desc("Re-tune every N steps (default: comet 1000, acgc and noise "
             "100)"),
    cl::init(tunerDefaults.retuneInterval), cl::cat(cat));
static cl::opt<int64_t> statsInterval(
    "stats-interval",
    cl::desc("Collect statistics every N steps (default: retune-interval / "
             "stats-window)"),
    cl::init(tunerDefaults.statsInterval), cl::cat(cat));
static cl::opt<int64_t> statsWindow("stats-window",
                                    cl::desc("Observations averaged"),
                                    cl::init(tunerDefaults.window),
                                    cl::cat(cat));
static cl::opt<double> ebMin("eb-min", cl::desc("Smallest tuned bound"),
                             cl::init(tunerDefaults.minEb), cl::cat(cat));
static cl::opt<double> ebMax("eb-max", cl::desc("Largest tuned bound"),
                             cl::init(tunerDefaults.maxEb), cl::cat(cat));
static cl::opt<double>
    ebRelRange("eb-relative-range",
               cl::desc("Also clamp to [static/F, static*F] (0: off)"),
               cl::init(tunerDefaults.relativeRange), cl::cat(cat));
static cl::opt<bool> channelBounds(
    "channel-bounds",
    cl::desc("Adaptive: store an activation that only BatchNorm reads with "
             "one bound per channel, eb * max(1/std) / (1/std of the "
             "channel), so that every channel's normalized value has the "
             "tightest channel's error (CPU; CUDA keeps one bound)"),
    cl::init(tunerDefaults.channelBounds), cl::cat(cat));
static cl::opt<std::string> profileOut(
    "profile-out",
    cl::desc("Write the measured statistics as a compress-activations "
             "profile (adaptive)"),
    cl::init(""), cl::cat(cat));
static cl::opt<std::string> measureErrorModel(
    "measure-error-model",
    cl::desc("After training, compare each lossy slot's weight-gradient "
             "error with COMET's prediction on the next batch; write JSON"),
    cl::init(""), cl::cat(cat));
static cl::opt<bool> quiet("quiet", cl::desc("No progress output"),
                           cl::init(false), cl::cat(cat));
static cl::opt<std::string> exportModelPath(
    "export-model",
    cl::desc("At the end, write the trained model for inference here: the "
             "eval graph (else the training graph's forward part) cut to "
             "--export-outputs, the parameters as initializers"),
    cl::init(""), cl::cat(cat));
static cl::list<std::string> exportOutputs(
    "export-outputs",
    cl::desc("The outputs of --export-model (default: the scores the loss "
             "reads, the logits)"),
    cl::CommaSeparated, cl::cat(cat));
// Checkpoints (docs/execution.md, "Checkpoints and resuming").
static cl::opt<std::string> saveCheckpointPath(
    "save-checkpoint",
    cl::desc("At the end, write the run's state here: an ONNX Runtime "
             "checkpoint (parameters, optimizer state) with comet-train's "
             "resume fields as properties; replaced atomically"),
    cl::init(""), cl::cat(cat));
static cl::opt<int64_t> checkpointEvery(
    "checkpoint-every",
    cl::desc("Also write --save-checkpoint every N steps (0: only at the "
             "end)"),
    cl::init(0), cl::cat(cat));
static cl::opt<std::string> resumePath(
    "resume",
    cl::desc("Continue the run saved in this checkpoint by "
             "--save-checkpoint, exactly: its parameters, optimizer state, "
             "data position, Dropout stream, bounds and history. The "
             "settings that shape the run must be the saved run's"),
    cl::init(""), cl::cat(cat));

static int fail(const Twine &msg) {
  errs() << "comet-train: error: " << msg << "\n";
  return 1;
}

static int fail(Error e) {
  std::string s = toString(std::move(e));
  return fail(s);
}

/// The array flags into opts; an error for flags that conflict or lack
/// what they apply to.
static std::string arrayOptions(comet::DataOptions &opts) {
  bool arrays = !trainData.empty();
  if (arrays && dataSource.getNumOccurrences() &&
      dataSource != DataSource::Arrays)
    return "--data " + comet::wordOf(dataSource) +
           " conflicts with --train-data: the training samples are the "
           "arrays (leave --data out)";
  if (!arrays && dataSource == DataSource::Arrays)
    return "--data arrays needs --train-data";
  for (cl::Option *o : std::initializer_list<cl::Option *>{
           &trainLabels, &testData, &testLabels, &dataKey, &labelsKey})
    if (!arrays && o->getNumOccurrences())
      return "--" + o->ArgStr.str() + " needs --train-data";
  for (cl::Option *o : std::initializer_list<cl::Option *>{
           &dataDir, &syntheticShape, &syntheticSize})
    if (arrays && o->getNumOccurrences())
      return "--" + o->ArgStr.str() +
             " does not apply to --train-data: it is for --data " +
             (o == &dataDir ? "fashion-mnist" : "synthetic");
  for (cl::Option *o : std::initializer_list<cl::Option *>{
           &testLabels, &testDataKey, &testLabelsKey})
    if (o->getNumOccurrences() && testData.empty())
      return "--" + o->ArgStr.str() + " needs --test-data";
  if (!arrays)
    return "";
  dataSource = DataSource::Arrays;
  opts.trainArrays = {trainData, trainLabels, dataKey, labelsKey};
  opts.testArrays = {testData, testLabels, testDataKey, testLabelsKey};
  return "";
}

static bool readRaw(StringRef path, void *dst, size_t bytes, std::string &err) {
  auto buf = MemoryBuffer::getFile(path);
  if (!buf) {
    err = "cannot read " + path.str() + ": " + buf.getError().message();
    return false;
  }
  if ((*buf)->getBufferSize() != bytes) {
    err = path.str() + " has " + std::to_string((*buf)->getBufferSize()) +
          " bytes, expected " + std::to_string(bytes);
    return false;
  }
  std::memcpy(dst, (*buf)->getBufferStart(), bytes);
  return true;
}

static bool writeRaw(StringRef path, const void *src, size_t bytes) {
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (ec)
    return false;
  os.write(static_cast<const char *>(src), bytes);
  return true;
}

static int runDumpGrads(comet::Engine &engine) {
  const comet::Trainer &trainer = engine.trainer();
  int64_t B = engine.batchSize();
  int64_t per = 1;
  for (int64_t d : engine.sampleShape())
    per *= d;
  // float32 pixels or int64 token ids, 8-byte aligned either way.
  size_t dataBytes = B * per * trainer.dataElemBytes();
  std::vector<int64_t> data((dataBytes + 7) / 8);
  std::vector<int64_t> labels(B * trainer.labelsPerSample());
  std::string e;
  if (!readRaw(inputsFile, data.data(), dataBytes, e) ||
      !readRaw(labelsFile, labels.data(), labels.size() * 8, e))
    return fail(e);
  // The weights the step starts from (a training-mode batch norm updates
  // its running statistics during the step).
  std::vector<std::pair<std::string, std::vector<float>>> start;
  for (const std::string &p : engine.parameters())
    start.push_back({p, engine.parameter(p).vec()});
  auto loss = engine.computeGradients(data.data(), labels.data());
  if (!loss)
    return fail(loss.takeError());
  sys::fs::create_directories(dumpGrads);
  float l = *loss;
  writeRaw(dumpGrads + "/loss.bin", &l, 4);
  for (const std::string &p : engine.trainableParameters()) {
    ArrayRef<float> g = engine.gradient(p);
    if (!writeRaw(dumpGrads + "/" + p + ".grad.bin", g.data(), g.size() * 4))
      return fail("cannot write to " + dumpGrads);
  }
  for (const auto &[p, w] : start)
    if (!writeRaw(dumpGrads + "/" + p + ".param.bin", w.data(), w.size() * 4))
      return fail("cannot write to " + dumpGrads);
  // Frozen parameters (BatchNorm running statistics) after the step.
  for (const std::string &p : engine.frozenParameters()) {
    ArrayRef<float> v = engine.parameter(p);
    if (!writeRaw(dumpGrads + "/" + p + ".after.bin", v.data(), v.size() * 4))
      return fail("cannot write to " + dumpGrads);
  }
  json::Object index;
  for (auto [i, m] : llvm::enumerate(engine.dropoutMasks())) {
    std::string file = "mask" + std::to_string(i) + ".bin";
    if (!writeRaw(dumpGrads + "/" + file, m.second.data(), m.second.size()))
      return fail("cannot write to " + dumpGrads);
    index[m.first] = file;
  }
  std::error_code ec;
  raw_fd_ostream js(dumpGrads + "/masks.json", ec);
  if (ec)
    return fail("cannot write to " + dumpGrads);
  js << json::Value(std::move(index)) << "\n";
  outs() << "loss " << l << "\n";
  return 0;
}

/// The value the loss of the eval graph (else the training graph) reads as
/// scores: the logits, which --export-model outputs by default.
static Expected<std::string> lossScores(const comet::Engine &engine) {
  const comet::ArtifactPaths &files = engine.artifacts();
  std::string graph =
      files.evalModel.empty() ? files.training : files.evalModel;
  auto buf = MemoryBuffer::getFile(graph);
  if (!buf)
    return createStringError(inconvertibleErrorCode(), "cannot read " + graph);
  comet::onnx_import::Model model;
  std::string e;
  if (!comet::onnx_import::readONNXModel((*buf)->getBufferStart(),
                                         (*buf)->getBufferSize(), model, e))
    return createStringError(inconvertibleErrorCode(), graph + ": " + e);
  for (const comet::onnx_import::Node &n : model.graph.nodes)
    if (n.opType == "SoftmaxCrossEntropyLoss" && !n.inputs.empty())
      return n.inputs[0];
  return createStringError(inconvertibleErrorCode(),
                           graph + " has no SoftmaxCrossEntropyLoss whose "
                                   "scores to export: name the outputs with "
                                   "--export-outputs");
}

/// The training graph a resumed run must train: its file's digest.
static comet::RunSetting trainingGraphSetting(const comet::Engine &engine) {
  return comet::RunSetting::text(
      "comet.training_graph", "the training graph of digest",
      comet::fileDigest(engine.artifacts().training));
}

/// The settings a resumed run must share with the saved one: what decides
/// the parameters, the data order and the random stream.
static std::vector<comet::RunSetting>
runSettings(const comet::Engine &engine, const comet::EngineOptions &opts,
            const comet::tuner::TunerOptions &tunerOpts) {
  using comet::RunSetting;
  auto shown = [](double v) { return formatv("{0}", v).str(); };
  const comet::ArtifactPaths &files = engine.artifacts();
  std::vector<RunSetting> out = {
      trainingGraphSetting(engine),
      RunSetting::text("comet.optimizer_graph", "--optimizer",
                       files.optimizer.empty()
                           ? engine.optimizerName()
                           : comet::fileDigest(files.optimizer)),
      RunSetting::real("comet.lr", "--lr", engine.learningRate()),
      RunSetting::integer("comet.batch", "--batch", engine.batchSize()),
      RunSetting::integer("comet.seed", "--seed",
                          static_cast<int64_t>(seed.getValue())),
      RunSetting::text("comet.data", "--data", comet::wordOf(dataSource)),
      RunSetting::text("comet.device", "--device", comet::wordOf(device)),
      RunSetting::text("comet.compress", "--compress", comet::wordOf(compress)),
      RunSetting::text("comet.compress_options",
                       "--compress-options (with --compress-only and "
                       "--compress-except)",
                       opts.compressOptions),
      RunSetting::integer("comet.memory_budget", "--memory-budget",
                          opts.memoryBudget)};
  if (engine.optimizerName() == "builtin-sgd-momentum")
    out.push_back(RunSetting::real("comet.momentum", "--momentum", momentum));
  if (opts.memoryBudget > 0)
    out.push_back(RunSetting::text("comet.assumed_sz_ratio",
                                   "--assumed-sz-ratio",
                                   shown(opts.assumedSzRatio)));
  // Which samples train, and so the data order: the held-out part, and the
  // arrays' files (by digest) and members.
  if (validationSplit > 0)
    out.push_back(RunSetting::real("comet.validation_split",
                                   "--validation-split", validationSplit));
  if (dataSource == DataSource::Arrays) {
    auto member = [](const std::string &file, const std::string &key) {
      return comet::fileDigest(file) + (key.empty() ? "" : "[" + key + "]");
    };
    out.push_back(RunSetting::text("comet.train_data", "--train-data",
                                   member(trainData, dataKey)));
    if (!trainLabels.empty())
      out.push_back(RunSetting::text("comet.train_labels", "--train-labels",
                                     member(trainLabels, labelsKey)));
  }
  if (dataSource == DataSource::Synthetic) {
    out.push_back(RunSetting::integer("comet.synthetic_size",
                                      "--synthetic-size", syntheticSize));
    out.push_back(RunSetting::text("comet.synthetic_shape", "--synthetic-shape",
                                   syntheticShape));
  }
  if (opts.compress == comet::CompressMode::Adaptive) {
    // The bounds follow the tuner's rule and schedule.
    const comet::tuner::TunerOptions t = comet::tuner::withDefaults(tunerOpts);
    out.push_back(RunSetting::text("comet.bound_rule", "--bound-rule",
                                   comet::tuner::ruleName(t.rule)));
    out.push_back(
        RunSetting::text("comet.bound_k", "--bound-k", shown(t.sigmaFactor)));
    out.push_back(
        RunSetting::text("comet.grad_magnitude", "--grad-magnitude",
                         comet::tuner::gradMagnitudeName(t.gradMagnitude)));
    out.push_back(
        RunSetting::text("comet.acgc_e", "--acgc-e", shown(t.acgcEnergy)));
    // Only the noise rule reads it (checkpoints of the other rules lack it).
    if (t.rule == comet::tuner::Rule::Noise)
      out.push_back(RunSetting::text("comet.noise_fraction", "--noise-fraction",
                                     shown(t.noiseFraction)));
    out.push_back(RunSetting::integer("comet.retune_interval",
                                      "--retune-interval", t.retuneInterval));
    out.push_back(RunSetting::integer("comet.stats_interval",
                                      "--stats-interval", t.statsInterval));
    out.push_back(
        RunSetting::integer("comet.stats_window", "--stats-window", t.window));
    out.push_back(RunSetting::text("comet.eb_min", "--eb-min", shown(t.minEb)));
    out.push_back(RunSetting::text("comet.eb_max", "--eb-max", shown(t.maxEb)));
    out.push_back(RunSetting::text("comet.eb_relative_range",
                                   "--eb-relative-range",
                                   shown(t.relativeRange)));
    // Checkpoints from before the flag lack it: they ran without it.
    RunSetting channels =
        RunSetting::text("comet.channel_bounds", "--channel-bounds",
                         t.channelBounds ? "true" : "false");
    channels.whenAbsent = "false";
    out.push_back(std::move(channels));
  }
  return out;
}

/// Each --codec-entropy value's report word and its process-wide setting.
static const struct {
  EntropyFlag flag;
  const char *word;
  comet_rt_codec_entropy setting;
} kEntropyFlags[] = {
    {EntropyFlag::Peak, "peak", COMET_RT_CODEC_ENTROPY_AUTO},
    {EntropyFlag::Auto, "auto", COMET_RT_CODEC_ENTROPY_AUTO},
    {EntropyFlag::Off, "off", COMET_RT_CODEC_ENTROPY_OFF},
    {EntropyFlag::Always, "always", COMET_RT_CODEC_ENTROPY_ALWAYS},
    {EntropyFlag::None, "none", COMET_RT_CODEC_ENTROPY_NONE}};

static const auto &entropyOf(EntropyFlag f) {
  for (const auto &e : kEntropyFlags)
    if (e.flag == f)
      return e;
  return kEntropyFlags[0];
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(cat);
  cl::ParseCommandLineOptions(
      argc, argv,
      "comet-train: train an ONNX Runtime training graph with COMET\n");

  comet::EngineOptions opts = engineFlags.options();
  if (device == Device::Cuda) {
    // What reads tensors on the host stays on the CPU (docs/cuda.md). The
    // bound tuner's statistics are runtime entries the CUDA backend lacks:
    // the Engine refuses an adaptive graph on it (docs/runtime-coverage.md).
    if (!dumpGrads.empty() || !measureErrorModel.empty())
      return fail("--dump-grads and --measure-error-model read tensors on "
                  "the host: use --device cpu");
    opts.device = "cuda";
    if (codecEntropy.getNumOccurrences())
      return fail("--codec-entropy selects the CPU encoder's stage; the CUDA "
                  "encoder writes fixed-width chunks only");
  }
  // One setting for every site: process-wide in the codec library
  // (comet-train runs one engine).
  opts.entropyByPeak = codecEntropy == EntropyFlag::Peak;
  if (comet_rt_codec_set_entropy(entropyOf(codecEntropy).setting) !=
      COMET_RT_SUCCESS)
    return fail("cannot select --codec-entropy");
  // The error-model check reads the tuner's statistics of a static graph
  // too.
  opts.tunerStatistics = !measureErrorModel.empty();
  // Both read gradients, which a step that applies the optimizer keeps not.
  if (!dumpGrads.empty() || !measureErrorModel.empty())
    opts.fuseOptimizer = false;
  // The error model predicts each slot from its direct readers (as the
  // tuner does): a recomputed value's readers are not among them.
  if (!measureErrorModel.empty())
    opts.recompute = false;
  comet::tuner::TunerOptions tunerOpts;
  {
    tunerOpts.rule = boundRule;
    tunerOpts.sigmaFactor = boundK;
    tunerOpts.gradMagnitude = gradMagnitude;
    tunerOpts.acgcEnergy = acgcE;
    tunerOpts.noiseFraction = noiseFraction;
    tunerOpts.retuneInterval = retuneInterval;
    tunerOpts.statsInterval = statsInterval;
    tunerOpts.window = statsWindow;
    tunerOpts.minEb = ebMin;
    tunerOpts.maxEb = ebMax;
    tunerOpts.relativeRange = ebRelRange;
    tunerOpts.channelBounds = channelBounds;
    std::string why = comet::tuner::validate(tunerOpts);
    if (!why.empty())
      return fail(why);
    if (!profileOut.empty() && compress != comet::CompressMode::Adaptive)
      return fail("--profile-out needs --compress adaptive");
    if (channelBounds && compress != comet::CompressMode::Adaptive)
      return fail("--channel-bounds needs --compress adaptive (the tuner "
                  "sets the bounds per channel)");
    if (!measureErrorModel.empty() && compress == comet::CompressMode::None)
      return fail("--measure-error-model needs --compress static or adaptive");
  }
  if (batch <= 0 || epochs <= 0)
    return fail("--batch and --epochs must be positive");
  if (lr.getNumOccurrences() && lr <= 0)
    return fail("--lr must be positive");
  if (std::string why = engineFlags.validate(); !why.empty())
    return fail(why);
  if (evalInterval < 0)
    return fail("--eval-interval must be non-negative");
  if (checkpointEvery < 0)
    return fail("--checkpoint-every must be non-negative");
  if (checkpointEvery > 0 && saveCheckpointPath.empty())
    return fail("--checkpoint-every needs --save-checkpoint PATH");
  if (!dumpGrads.empty() &&
      (!saveCheckpointPath.empty() || !resumePath.empty()))
    return fail("--dump-grads runs no training to save or resume");
  if (!exportOutputs.empty() && exportModelPath.empty())
    return fail("--export-outputs needs --export-model PATH");
  if (!dumpGrads.empty() && !exportModelPath.empty())
    return fail("--dump-grads runs no training to export");
  if (!resumePath.empty() && !opts.weightsPath.empty())
    return fail("--resume takes the parameters from the checkpoint: "
                "leave out --weights");

  opts.learningRate = lr;
  opts.momentum = momentum;
  opts.seed = seed;
  opts.returnDropoutMasks = !dumpGrads.empty();
  // A resumed run starts from the checkpoint's parameters and optimizer
  // state; its comet-train fields are checked once the engine is compiled.
  std::shared_ptr<comet::checkpoint::Checkpoint> resumed;
  if (!resumePath.empty()) {
    resumed = std::make_shared<comet::checkpoint::Checkpoint>();
    std::string e;
    if (!comet::checkpoint::readCheckpointFile(resumePath, *resumed, e))
      return fail("--resume: " + e);
    opts.initialState = resumed;
    opts.weightsPath = resumePath;
  }

  auto engineOr = comet::Engine::load(modelPath);
  if (!engineOr)
    return fail(engineOr.takeError());
  comet::Engine &engine = **engineOr;
  // Another model's checkpoint is told apart before anything compiles.
  if (resumed) {
    comet::RunState unused;
    if (std::string e = comet::readRunProperties(
            resumed->properties, {trainingGraphSetting(engine)}, unused);
        !e.empty())
      return fail("--resume " + resumePath + ": " + e);
  }

  // Datasets first (they stay in memory, category other): the memory
  // figures below leave them out, since they live in the default runtime
  // context and the engine counts its memory in its own.
  comet::TrainingData data;
  comet::DataOptions dataOpts;
  if (std::string why = arrayOptions(dataOpts); !why.empty())
    return fail(why);
  dataOpts.source = comet::wordOf(dataSource);
  dataOpts.dataDir = dataDir;
  dataOpts.syntheticShape = syntheticShape;
  dataOpts.syntheticSize = syntheticSize;
  dataOpts.seed = seed;
  dataOpts.wantEval = dumpGrads.empty() && evalSamples >= 0;
  dataOpts.validationSplit = validationSplit;
  if (dumpGrads.empty())
    if (std::string e = data.open(dataOpts); !e.empty())
      return fail(e);

  if (Error e = engine.compile(opts))
    return fail(std::move(e));
  const comet::ArtifactPaths &files = engine.artifacts();
  if (!quiet)
    outs() << "training " << files.training << "\n  weights " << files.weights
           << "\n  eval "
           << (files.evalModel.empty() ? "(none)" : files.evalModel)
           << "\n  optimizer " << engine.optimizerName()
           << (files.optimizer.empty() ? "" : " (" + files.optimizer + ")")
           << format(", lr %g", engine.learningRate())
           << (engine.trainer().optimizerFused() ? ", fused into the step" : "")
           << "\n  compress " << comet::wordOf(compress)
           << format(", batch %ld, epochs %ld\n", batch.getValue(),
                     epochs.getValue());
  // A budget that compression cannot reach is worth knowing before the run.
  if (const comet::BudgetChoice bc = engine.stats().budget; bc.bytes > 0) {
    if (!quiet)
      outs() << format("  memory budget %ld B: %ld values compressed, %zu "
                       "left raw, %ld of %ld recomputable recomputed, "
                       "predicted peak %ld B at sz %.1fx\n",
                       bc.bytes, bc.compressed, bc.notSelected.size(),
                       bc.recomputed, bc.recomputeCandidates,
                       bc.predictedPeakBytes, bc.assumedSzRatio);
    if (bc.predictedPeakBytes > bc.bytes)
      errs() << format("comet-train: warning: the memory budget of %ld B is "
                       "not reachable by compression: the predicted peak "
                       "with every candidate compressed (and every "
                       "recomputable value recomputed) is %ld B\n",
                       bc.bytes, bc.predictedPeakBytes);
  }
  if (!dumpGrads.empty())
    return runDumpGrads(engine);
  comet::Trainer &trainer = engine.trainer();
  if (std::string e = data.makeLoader(trainer); !e.empty())
    return fail(e);

  std::unique_ptr<comet::EngineTuner> tuner;
  if (opts.compress == comet::CompressMode::Adaptive) {
    auto t = comet::EngineTuner::create(engine, tunerOpts);
    if (!t)
      return fail(t.takeError());
    tuner = std::move(*t);
  }
  // The run's settings, and where a resumed run stands.
  std::vector<comet::RunSetting> settings =
      runSettings(engine, opts, tunerOpts);
  comet::RunState resumeState;
  if (resumed) {
    if (std::string e = comet::readRunProperties(resumed->properties, settings,
                                                 resumeState);
        !e.empty())
      return fail("--resume " + resumePath + ": " + e);
    if (resumed->optimizerGroups.empty())
      return fail("--resume " + resumePath +
                  ": it holds no optimizer state, so the run cannot "
                  "continue exactly");
    if (resumeState.position.steps != resumed->optimizerGroups[0].step)
      return fail("--resume " + resumePath + ": its comet.step (" +
                  Twine(resumeState.position.steps) +
                  ") is not its optimizer's step (" +
                  Twine(resumed->optimizerGroups[0].step) + ")");
    comet_rt_context_set_random_state(engine.runtimeContext(),
                                      resumeState.randomSeed,
                                      resumeState.randomCounter);
    if (tuner) {
      if (Error e = tuner->restoreState(resumeState.tuner))
        return fail("--resume " + resumePath + ": " + toString(std::move(e)));
    }
    if (!quiet)
      outs() << format("  resuming at step %ld (epoch %ld, sample %ld) from ",
                       resumeState.position.steps,
                       resumeState.position.epoch + 1,
                       resumeState.position.samples)
             << resumePath << "\n";
  }
  // The checkpoint after `at`: the engine's state and the run's.
  int64_t savedAt = -1;
  auto saveCheckpoint = [&](const comet::LoopPosition &at,
                            const comet::RunResult &r) -> std::string {
    comet::RunState st;
    st.position = at;
    comet_rt_context_get_random_state(engine.runtimeContext(), &st.randomSeed,
                                      &st.randomCounter);
    st.history = r;
    if (tuner)
      st.tuner = tuner->saveState();
    if (Error e = engine.saveCheckpoint(saveCheckpointPath, true,
                                        comet::runProperties(settings, st)))
      return "--save-checkpoint: " + toString(std::move(e));
    savedAt = at.steps;
    return "";
  };
  comet::LoopPosition lastPosition = resumeState.position;

  comet::RunOptions run;
  run.epochs = epochs;
  run.maxSteps = maxSteps;
  run.evalSamples = evalSamples;
  run.evalInterval = evalInterval;
  run.quiet = quiet;
  if (tuner) {
    run.beforeStep = [&](int64_t step) { tuner->beforeStep(step); };
    run.afterStep = [&](int64_t step) { tuner->afterStep(step); };
  }
  run.start = resumeState.position;
  run.afterPosition = [&](const comet::LoopPosition &at,
                          const comet::RunResult &r) -> std::string {
    lastPosition = at;
    if (checkpointEvery > 0 && at.steps % checkpointEvery == 0)
      return saveCheckpoint(at, r);
    return "";
  };
  comet::RunResult result = std::move(resumeState.history);
  if (std::string e = comet::trainLoop(trainer, data, run, result); !e.empty())
    return fail(e);
  // The final state, before the error-model check's extra steps.
  if (!saveCheckpointPath.empty() && savedAt != lastPosition.steps)
    if (std::string e = saveCheckpoint(lastPosition, result); !e.empty())
      return fail(e);
  if (!exportModelPath.empty()) {
    std::vector<std::string> outputs(exportOutputs.begin(),
                                     exportOutputs.end());
    if (outputs.empty()) {
      auto scores = lossScores(engine);
      if (!scores)
        return fail(scores.takeError());
      outputs.push_back(*scores);
    }
    if (Error e = engine.exportInferenceModel(exportModelPath, outputs))
      return fail("--export-model: " + toString(std::move(e)));
  }

  // trainLoop took the training run's figures before the error-model check
  // below runs measurement steps on the engine (they would overwrite the
  // sites' sizes).
  // The error-model check: the next batch, exact against compressed.
  json::Array errorModel;
  if (!measureErrorModel.empty()) {
    std::vector<int64_t> batchData(
        (batch * data.sampleElements() * data.sampleBytes() + 7) / 8);
    std::vector<int64_t> labels(batch * data.labelsPerSample());
    data.nextBatch(batchData.data(), labels.data(), epochs);
    // Four more batches: with the first, five samples of the minibatch
    // noise the error is compared with (its per-batch energy is heavy
    // tailed: one pair is a rough estimate).
    const int kNoiseBatches = 4;
    std::vector<std::vector<int64_t>> noiseData(kNoiseBatches),
        noiseLabels(kNoiseBatches);
    std::vector<comet::NoiseBatch> noise;
    for (int k = 0; k < kNoiseBatches; ++k) {
      noiseData[k].resize(batchData.size());
      noiseLabels[k].resize(labels.size());
      data.nextBatch(noiseData[k].data(), noiseLabels[k].data(), epochs);
      noise.push_back({noiseData[k].data(), noiseLabels[k].data()});
    }
    auto ref = comet::Engine::load(modelPath);
    if (!ref)
      return fail(ref.takeError());
    comet::EngineOptions ro = opts;
    ro.compress = comet::CompressMode::None;
    ro.dumpLoweredIRPath.clear();
    if (Error e = (*ref)->compile(ro))
      return fail(std::move(e));
    auto ms = comet::measureGradError(engine, **ref, batchData.data(),
                                      labels.data(), noise);
    if (!ms)
      return fail(ms.takeError());
    for (const comet::GradErrorMeasurement &m : *ms) {
      // measured / predicted, 0 where there is no prediction.
      auto over = [&](double predicted) {
        return predicted > 0 ? m.measuredStd / predicted : 0.0;
      };
      errorModel.push_back(json::Object{
          {"slot", m.slot},
          {"value", m.value},
          {"param", m.param},
          {"kind", m.kind},
          {"eb", m.eb},
          {"N", m.numTerms},
          {"R", m.nonZero},
          {"Lbar", m.meanAbsGrad},
          {"rms_grad", m.rmsGrad},
          {"weight_elements", m.weightElements},
          {"predicted_std", m.predictedStd},
          {"predicted_std_rms", m.predictedStdRms},
          {"masked_moment", m.maskedMoment},
          {"predicted_std_masked", m.predictedStdMasked},
          {"coherent_excess", m.coherentExcess},
          {"predicted_std_coherent", m.predictedStdCoherent},
          {"measured_std", m.measuredStd},
          {"measured_mean", m.measuredMean},
          {"grad_rms", m.gradRms},
          {"error_projection", m.errorProjection},
          {"error_cosine", m.errorCosine},
          {"ratio", over(m.predictedStd)},
          {"ratio_rms", over(m.predictedStdRms)},
          {"ratio_masked", over(m.predictedStdMasked)},
          {"ratio_coherent", over(m.predictedStdCoherent)},
          {"codec_error_std", m.codecErrorStd},
          {"codec_factor", m.codecFactor},
          {"predicted_std_codec", m.predictedStdCodec},
          {"ratio_codec", over(m.predictedStdCodec)},
          {"inv_std_weighted", m.invStdWeighted},
          {"predicted_std_channels", m.predictedStdChannels},
          {"ratio_channels", over(m.predictedStdChannels)},
          {"inv_std", m.invStd},
          {"update_rms", m.updateRms},
          {"update_error_rms", m.updateErrorRms},
          {"grad_noise_std", m.gradNoiseStd},
          {"update_noise_std", m.updateNoiseStd},
          {"grad_noise_to_error", m.gradNoiseToError},
          {"update_noise_to_error", m.updateNoiseToError},
          {"propagated_params", m.propagatedParams},
          {"propagated_param", m.propagatedParam},
          {"propagated_grad_noise_to_error", m.propagatedGradNoiseToError},
          {"propagated_update_noise_to_error",
           m.propagatedUpdateNoiseToError}});
      if (!quiet)
        outs() << format(
            "error model: slot %ld (%s -> %s, %s) eb %.3g measured %.4g, "
            "the rule's model %.4g; measured / predicted with Lbar %.3f, RMS "
            "dY %.3f, masked %.3f, masked + coherent %.3f; cosine with the "
            "gradient %+.4f (noise ~%.4f); minibatch noise / error, "
            "variance: gradient %.3g, update %.3g\n",
            m.slot, m.value.c_str(), m.param.c_str(), m.kind.c_str(), m.eb,
            m.measuredStd, m.predictedStdCoherent, over(m.predictedStd),
            over(m.predictedStdRms), over(m.predictedStdMasked),
            over(m.predictedStdCoherent), m.errorCosine,
            m.weightElements > 0 ? 1.0 / std::sqrt(double(m.weightElements))
                                 : 0.0,
            m.gradNoiseToError, m.updateNoiseToError);
    }
    std::error_code ec;
    raw_fd_ostream os(measureErrorModel, ec);
    if (ec)
      return fail("cannot write " + measureErrorModel + ": " + ec.message());
    os << formatv("{0:2}",
                  json::Value(json::Object{{"model", modelPath.getValue()},
                                           {"steps", result.steps},
                                           {"slots", json::Array(errorModel)}}))
       << "\n";
  }
  if (tuner && !profileOut.empty()) {
    std::error_code ec;
    raw_fd_ostream os(profileOut, ec);
    if (ec)
      return fail("cannot write " + profileOut + ": " + ec.message());
    os << formatv("{0:2}", json::Value(tuner->profile())) << "\n";
  }

  outs().flush();
  if (std::string e = comet::evaluateTestSet(trainer, data, run, result);
      !e.empty())
    return fail(e);
  if (!quiet)
    comet::printSummary(result);

  if (!reportPath.empty()) {
    comet::ReportInfo info;
    info.model = modelPath;
    info.device = comet::wordOf(device);
    info.compress = comet::wordOf(compress);
    // Peak falls back to the process-wide auto under adaptive (Engine).
    info.codecEntropy = codecEntropy == EntropyFlag::Peak &&
                                compress == comet::CompressMode::Adaptive
                            ? "auto"
                            : entropyOf(codecEntropy).word;
    info.optimizer = engine.optimizerName();
    info.optimizerFused = engine.trainer().optimizerFused();
    info.learningRate = engine.learningRate();
    info.artifacts = files;
    info.data = data.description();
    info.epochs = epochs;
    info.batch = batch;
    info.datasetBytes = data.datasetBytes();
    std::string text = comet::reportJson(info, result);
    if (tuner || !measureErrorModel.empty() || resumed) {
      // The shared report, with what only comet-train knows added.
      Expected<json::Value> v = json::parse(text);
      if (!v)
        return fail(v.takeError());
      json::Object &report = *v->getAsObject();
      if (tuner) {
        json::Array &slots = *report.getArray("slots");
        for (auto [i, s] : llvm::enumerate(result.stats.sites))
          if (s.slot >= 0)
            for (auto &kv : tuner->slotReport(s.slot))
              (*slots[i].getAsObject())[kv.first] = std::move(kv.second);
        const comet::tuner::TunerOptions &to = tuner->tuner().options();
        report["tuner"] =
            json::Object{{"rule", comet::tuner::ruleName(to.rule)},
                         {"k", to.sigmaFactor},
                         {"grad_magnitude",
                          comet::tuner::gradMagnitudeName(to.gradMagnitude)},
                         {"acgc_e", to.acgcEnergy},
                         {"noise_fraction", to.noiseFraction},
                         {"retune_interval", to.retuneInterval},
                         {"stats_interval", to.statsInterval},
                         {"window", to.window},
                         {"eb_min", to.minEb},
                         {"eb_max", to.maxEb},
                         {"relative_range", to.relativeRange},
                         {"channel_bounds", to.channelBounds},
                         {"retunes", tuner->tuner().numRetunes()}};
      }
      if (!measureErrorModel.empty())
        report["error_model"] = std::move(errorModel);
      if (resumed)
        report["resumed_from"] = json::Object{
            {"checkpoint", resumePath.getValue()}, {"step", run.start.steps}};
      text = formatv("{0:2}", *v).str() + "\n";
    }
    if (std::string e = comet::writeFileAtomically(reportPath, text);
        !e.empty())
      return fail(e);
  }
  return 0;
}
