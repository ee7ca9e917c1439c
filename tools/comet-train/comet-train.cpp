//===- comet-train.cpp - Train an ONNX Runtime training graph with COMET --===//
//
//   comet-train MODEL.onnx [--optimizer OPT.onnx] --data
//   fashion-mnist|synthetic
//       --epochs E --batch B --compress none|static|adaptive --device cpu|cuda
//       --report OUT.json [--max-steps N]
//
// Compiles the training graph with comet::Engine, trains, evaluates the eval
// graph on the test split and writes a JSON report (docs/execution.md).
// --dump-grads runs one training-graph step on given inputs and writes the
// loss, gradients and Dropout masks, for the check against ONNX Runtime.
//
//===----------------------------------------------------------------------===//
#include "comet/Engine/Engine.h"
#include "comet/Tuner/EngineTuner.h"
#include "comet/runtime/alloc.h"
#include "comet/runtime/data.h"
#include "comet/runtime/handles.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <unistd.h>
#include <vector>

using namespace llvm;

static cl::OptionCategory cat("comet-train options");
enum class DataSource { FashionMnist, Synthetic };
enum class Device { Cpu, Cuda };
static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<training_model.onnx|.mlir>"),
                                      cl::cat(cat));
static cl::opt<std::string> optimizerPath(
    "optimizer",
    cl::desc("ORT optimizer graph (AdamWOptimizer or SGDOptimizerV2); "
             "default: built-in SGD with momentum"),
    cl::init(""), cl::cat(cat));
static cl::opt<DataSource>
    data("data", cl::desc("Training data"),
         cl::values(clEnumValN(DataSource::FashionMnist, "fashion-mnist",
                               "Fashion-MNIST from --data-dir"),
                    clEnumValN(DataSource::Synthetic, "synthetic",
                               "seeded synthetic samples")),
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
static cl::opt<int64_t> epochs("epochs", cl::desc("Epochs"), cl::init(1),
                               cl::cat(cat));
static cl::opt<int64_t> batch("batch", cl::desc("Batch size"), cl::init(64),
                              cl::cat(cat));
static cl::opt<comet::CompressMode>
    compress("compress", cl::desc("Activation compression"),
             cl::values(clEnumValN(comet::CompressMode::None, "none", "none"),
                        clEnumValN(comet::CompressMode::Static, "static",
                                   "static bounds"),
                        clEnumValN(comet::CompressMode::Adaptive, "adaptive",
                                   "bounds re-tuned while training")),
             cl::init(comet::CompressMode::None), cl::cat(cat));
static cl::opt<std::string> compressOptions(
    "compress-options",
    cl::desc("Options for --comet-compress-activations, e.g. 'min-bytes=4096'"),
    cl::init(""), cl::cat(cat));
static cl::opt<Device>
    device("device", cl::desc("Execution device"),
           cl::values(clEnumValN(Device::Cpu, "cpu", "CPU"),
                      clEnumValN(Device::Cuda, "cuda", "CUDA GPU")),
           cl::init(Device::Cpu), cl::cat(cat));
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
static cl::opt<float> lr("lr", cl::desc("Learning rate"), cl::init(0.05f),
                         cl::cat(cat));
static cl::opt<float> momentum("momentum",
                               cl::desc("Momentum of the built-in SGD"),
                               cl::init(0.9f), cl::cat(cat));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("Shuffle/synthetic seed and the seed "
                                       "of the engine's Dropout stream"),
                              cl::init(0), cl::cat(cat));
static cl::opt<std::string>
    weightsPath("weights",
                cl::desc("Initial weights (.onnx initializers); default: "
                         "model.onnx next to the model"),
                cl::init(""), cl::cat(cat));
static cl::opt<std::string> dumpIR("dump-ir",
                                   cl::desc("Write the lowered IR here"),
                                   cl::init(""), cl::cat(cat));
static cl::opt<std::string> dumpGrads(
    "dump-grads",
    cl::desc("Run one training-graph step on --inputs/--labels and write "
             "loss.bin, <param>.grad.bin and, for frozen parameters (BatchNorm "
             "running statistics), <param>.param.bin (raw f32) to this "
             "directory, "
             "and each Dropout mask as mask<i>.bin (a byte per element; "
             "masks.json maps '<Dropout node>:1' to its file)"),
    cl::init(""), cl::cat(cat));
static cl::opt<std::string>
    inputsFile("inputs", cl::desc("Raw f32 batch for --dump-grads"),
               cl::init(""), cl::cat(cat));
static cl::opt<std::string>
    labelsFile("labels", cl::desc("Raw i64 labels for --dump-grads"),
               cl::init(""), cl::cat(cat));
// Bound tuner (--compress adaptive), docs/tuning.md.
static cl::opt<comet::tuner::Rule> boundRule(
    "bound-rule", cl::desc("Bound rule (adaptive)"),
    cl::values(clEnumValN(comet::tuner::Rule::Comet, "comet", "COMET"),
               clEnumValN(comet::tuner::Rule::Acgc, "acgc", "AC-GC")),
    cl::init(comet::tuner::Rule::Comet), cl::cat(cat));
static cl::opt<double> boundK("bound-k",
                              cl::desc("COMET: sigma = k * mean|momentum|"),
                              cl::init(0.01), cl::cat(cat));
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
    cl::init(comet::tuner::GradMagnitude::Masked), cl::cat(cat));
static cl::opt<double> acgcE("acgc-e", cl::desc("AC-GC: error energy e"),
                             cl::init(0.01), cl::cat(cat));
static cl::opt<int64_t> retuneInterval(
    "retune-interval",
    cl::desc("Re-tune every N steps (default: comet 1000, acgc 100)"),
    cl::init(-1), cl::cat(cat));
static cl::opt<int64_t> statsInterval(
    "stats-interval",
    cl::desc("Collect statistics every N steps (default: retune-interval / "
             "stats-window)"),
    cl::init(-1), cl::cat(cat));
static cl::opt<int64_t> statsWindow("stats-window",
                                    cl::desc("Observations averaged"),
                                    cl::init(10), cl::cat(cat));
static cl::opt<double> ebMin("eb-min", cl::desc("Smallest tuned bound"),
                             cl::init(1e-7), cl::cat(cat));
static cl::opt<double> ebMax("eb-max", cl::desc("Largest tuned bound"),
                             cl::init(1e-1), cl::cat(cat));
static cl::opt<double>
    ebRelRange("eb-relative-range",
               cl::desc("Also clamp to [static/F, static*F] (0: off)"),
               cl::init(0), cl::cat(cat));
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

/// The word that names the value of an enum option (for messages and the
/// report).
template <typename T> static std::string wordOf(cl::opt<T> &o) {
  const cl::parser<T> &p = o.getParser();
  for (unsigned i = 0, e = p.getNumOptions(); i < e; ++i)
    if (static_cast<const cl::OptionValue<T> &>(p.getOptionValue(i))
            .getValue() == o.getValue())
      return p.getOption(i).str();
  return "";
}

static int fail(const Twine &msg) {
  errs() << "comet-train: error: " << msg << "\n";
  return 1;
}

static int fail(Error e) {
  std::string s = toString(std::move(e));
  return fail(s);
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
  int64_t B = engine.batchSize();
  int64_t per = 1;
  for (int64_t d : engine.sampleShape())
    per *= d;
  std::vector<float> images(B * per);
  std::vector<int64_t> labels(B);
  std::string e;
  if (!readRaw(inputsFile, images.data(), images.size() * 4, e) ||
      !readRaw(labelsFile, labels.data(), labels.size() * 8, e))
    return fail(e);
  auto loss = engine.computeGradients(images.data(), labels.data());
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
  // Frozen parameters (BatchNorm running statistics) after the step.
  for (const std::string &p : engine.frozenParameters()) {
    ArrayRef<float> v = engine.parameter(p);
    if (!writeRaw(dumpGrads + "/" + p + ".param.bin", v.data(), v.size() * 4))
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

/// A dataset and a loader over it.
struct Data {
  comet_rt_dataset *ds = nullptr;
  comet_rt_loader *loader = nullptr;
  ~Data() {
    comet_rt_loader_free(loader);
    comet_rt_dataset_free(ds);
  }
};

static json::Array toJson(ArrayRef<int64_t> v) {
  json::Array a;
  for (int64_t x : v)
    a.push_back(x);
  return a;
}

static std::string shapeStr(ArrayRef<int64_t> s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(cat);
  cl::ParseCommandLineOptions(
      argc, argv,
      "comet-train: train an ONNX Runtime training graph with COMET\n");

  if (device == Device::Cuda)
    return fail("--device cuda is not available: this build has no CUDA "
                "execution backend (only the CPU runtime)");
  comet::EngineOptions opts;
  opts.compress = compress;
  comet::tuner::TunerOptions tunerOpts;
  {
    tunerOpts.rule = boundRule;
    tunerOpts.sigmaFactor = boundK;
    tunerOpts.gradMagnitude = gradMagnitude;
    tunerOpts.acgcEnergy = acgcE;
    tunerOpts.retuneInterval = retuneInterval;
    tunerOpts.statsInterval = statsInterval;
    tunerOpts.window = statsWindow;
    tunerOpts.minEb = ebMin;
    tunerOpts.maxEb = ebMax;
    tunerOpts.relativeRange = ebRelRange;
    std::string why = comet::tuner::validate(tunerOpts);
    if (!why.empty())
      return fail(why);
    if (!profileOut.empty() && compress != comet::CompressMode::Adaptive)
      return fail("--profile-out needs --compress adaptive");
    if (!measureErrorModel.empty() && compress == comet::CompressMode::None)
      return fail("--measure-error-model needs --compress static or adaptive");
  }
  if (batch <= 0 || epochs <= 0)
    return fail("--batch and --epochs must be positive");

  opts.batchSize = batch;
  opts.compressOptions = compressOptions;
  opts.optimizerPath = optimizerPath;
  opts.learningRate = lr;
  opts.momentum = momentum;
  opts.weightsPath = weightsPath;
  opts.dumpLoweredIRPath = dumpIR;
  opts.seed = seed;
  opts.returnDropoutMasks = !dumpGrads.empty();

  auto engineOr = comet::Engine::load(modelPath);
  if (!engineOr)
    return fail(engineOr.takeError());
  comet::Engine &engine = **engineOr;

  // Datasets first (they stay in memory, category other): the memory
  // figures below leave them out.
  Data train, test;
  bool wantEval = !dumpGrads.empty() ? false : evalSamples >= 0;
  if (dumpGrads.empty()) {
    int32_t rc;
    if (data == DataSource::FashionMnist) {
      rc = comet_rt_dataset_open_fashion_mnist(dataDir.c_str(), 1, &train.ds);
      if (rc == 0 && wantEval)
        rc = comet_rt_dataset_open_fashion_mnist(dataDir.c_str(), 0, &test.ds);
    } else {
      int64_t c = 1, h = 28, w = 28;
      if (!syntheticShape.empty() &&
          sscanf(syntheticShape.c_str(), "%ldx%ldx%ld", &c, &h, &w) != 3)
        return fail("--synthetic-shape must be CxHxW");
      rc = comet_rt_dataset_synthetic(syntheticSize, c, h, w, 10, seed,
                                      &train.ds);
      if (rc == 0 && wantEval)
        rc = comet_rt_dataset_synthetic(1000, c, h, w, 10, seed + 1, &test.ds);
    }
    if (rc != 0)
      return fail(Twine("cannot load the ") + wordOf(data) +
                  " data: " + comet_rt_last_error());
  }
  // The datasets live in the default runtime context; the engine counts its
  // memory in its own, so the figures below leave them out.
  comet_rt_alloc_stats before;
  comet_rt_alloc_get_stats(nullptr, &before);
  int64_t datasetBytes = before.current_total;

  if (Error e = engine.compile(opts))
    return fail(std::move(e));
  if (!dumpGrads.empty())
    return runDumpGrads(engine);

  std::vector<int64_t> sample = engine.sampleShape();
  int64_t dsShape[3];
  comet_rt_dataset_sample_shape(train.ds, dsShape);
  if (sample.size() != 3 || sample[0] != dsShape[0] ||
      sample[1] != dsShape[1] || sample[2] != dsShape[2])
    return fail("the " + wordOf(data) + " samples are " + shapeStr(dsShape) +
                " but the model's input takes " + shapeStr(sample) +
                " per sample");
  int64_t per = dsShape[0] * dsShape[1] * dsShape[2];

  if (comet_rt_loader_create(train.ds, batch, /*shuffle=*/1, seed,
                             /*drop_last=*/1, &train.loader) != 0)
    return fail(Twine("cannot create the loader: ") + comet_rt_last_error());
  int64_t perEpoch = comet_rt_loader_num_batches(train.loader);
  if (perEpoch == 0)
    return fail("the training set has fewer samples than one batch");
  int64_t total = perEpoch * epochs;
  if (maxSteps > 0)
    total = std::min<int64_t>(total, maxSteps);

  std::unique_ptr<comet::EngineTuner> tuner;
  if (opts.compress == comet::CompressMode::Adaptive) {
    auto t = comet::EngineTuner::create(engine, tunerOpts);
    if (!t)
      return fail(t.takeError());
    tuner = std::move(*t);
  }

  std::vector<float> images(batch * per);
  std::vector<int64_t> labels(batch);
  std::vector<double> losses, stepMs;
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> ebHistory;
  bool tty = !quiet && isatty(STDOUT_FILENO);
  int64_t step = 0;
  float lastLoss = NAN;
  for (int64_t ep = 0; ep < epochs && step < total; ++ep) {
    comet_rt_loader_start_epoch(train.loader, ep);
    while (step < total && comet_rt_loader_next(train.loader, images.data(),
                                                labels.data()) == batch) {
      if (step == 1) // the second step: caches warm, handles in use
        engine.recordTimelineOfNextStep();
      auto t0 = std::chrono::steady_clock::now();
      if (tuner)
        tuner->beforeStep(step);
      auto loss = engine.step(images.data(), labels.data());
      if (tuner && loss)
        tuner->afterStep(step);
      auto t1 = std::chrono::steady_clock::now();
      if (!loss) {
        if (tty)
          outs() << "\n";
        return fail(loss.takeError());
      }
      ++step;
      lastLoss = *loss;
      losses.push_back(*loss);
      stepMs.push_back(
          std::chrono::duration<double, std::milli>(t1 - t0).count());
      // The bound of every slot, recorded when it changes.
      comet_rt_context *rt = engine.runtimeContext();
      for (int64_t s = 0, n = comet_rt_num_sites(rt); s < n; ++s) {
        comet_rt_site_stats st;
        if (comet_rt_site_get_stats(rt, s, &st) == 0 && st.slot >= 0) {
          auto &h = ebHistory[s];
          if (h.empty() || h.back().second != st.last_eb)
            h.push_back({step, st.last_eb});
        }
      }
      if (tty && (step % 10 == 0 || step == total)) {
        int width = 30, done = static_cast<int>(width * step / total);
        outs() << "\r[" << std::string(done, '=')
               << std::string(width - done, ' ') << "] epoch " << ep + 1 << "/"
               << epochs << " step " << step << "/" << total << " loss "
               << format("%.4f", *loss);
        outs().flush();
      }
    }
  }
  if (tty)
    outs() << "\n";

  // The training run's figures, before the error-model check below runs
  // measurement steps on the engine (they would overwrite the sites' sizes).
  comet::EngineStats st = engine.stats();

  // The error-model check: the next batch, exact against compressed.
  json::Array errorModel;
  if (!measureErrorModel.empty()) {
    if (comet_rt_loader_next(train.loader, images.data(), labels.data()) !=
        batch) {
      comet_rt_loader_start_epoch(train.loader, epochs);
      comet_rt_loader_next(train.loader, images.data(), labels.data());
    }
    auto ref = comet::Engine::load(modelPath);
    if (!ref)
      return fail(ref.takeError());
    comet::EngineOptions ro = opts;
    ro.compress = comet::CompressMode::None;
    ro.dumpLoweredIRPath.clear();
    if (Error e = (*ref)->compile(ro))
      return fail(std::move(e));
    auto ms =
        comet::measureGradError(engine, **ref, images.data(), labels.data());
    if (!ms)
      return fail(ms.takeError());
    for (const comet::GradErrorMeasurement &m : *ms) {
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
          {"ratio", m.predictedStd > 0 ? m.measuredStd / m.predictedStd : 0},
          {"ratio_rms",
           m.predictedStdRms > 0 ? m.measuredStd / m.predictedStdRms : 0},
          {"ratio_masked",
           m.predictedStdMasked > 0 ? m.measuredStd / m.predictedStdMasked : 0},
          {"ratio_coherent", m.predictedStdCoherent > 0
                                 ? m.measuredStd / m.predictedStdCoherent
                                 : 0}});
      if (!quiet)
        outs() << format(
            "error model: slot %ld (%s -> %s) eb %.3g measured "
            "%.4g predicted %.4g (ratio %.3f; with RMS dY %.3f; masked "
            "%.3f; masked + coherent %.3f)\n",
            m.slot, m.value.c_str(), m.param.c_str(), m.eb, m.measuredStd,
            m.predictedStd,
            m.predictedStd > 0 ? m.measuredStd / m.predictedStd : 0.0,
            m.predictedStdRms > 0 ? m.measuredStd / m.predictedStdRms : 0.0,
            m.predictedStdMasked > 0 ? m.measuredStd / m.predictedStdMasked
                                     : 0.0,
            m.predictedStdCoherent > 0 ? m.measuredStd / m.predictedStdCoherent
                                       : 0.0);
    }
    std::error_code ec;
    raw_fd_ostream os(measureErrorModel, ec);
    if (ec)
      return fail("cannot write " + measureErrorModel + ": " + ec.message());
    os << formatv("{0:2}",
                  json::Value(json::Object{{"model", modelPath.getValue()},
                                           {"steps", step},
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

  double accuracy = -1, testLoss = 0;
  if (wantEval && engine.hasEval()) {
    int64_t n = comet_rt_dataset_size(test.ds);
    if (evalSamples > 0)
      n = std::min<int64_t>(n, evalSamples);
    std::vector<float> ti(n * per);
    std::vector<int64_t> tl(n);
    for (int64_t i = 0; i < n; ++i)
      comet_rt_dataset_get(test.ds, i, ti.data() + i * per, tl.data() + i);
    int64_t correct = 0;
    if (Error e = engine.evaluate(ti.data(), tl.data(), n, testLoss, correct))
      return fail(std::move(e));
    accuracy = n ? double(correct) / n : 0;
  }

  std::vector<double> sorted = stepMs;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  int64_t peak = st.peakBytes;
  double ratio = st.activationBytesCompressed > 0
                     ? double(st.activationBytesUncompressed) /
                           st.activationBytesCompressed
                     : 0;

  if (!quiet) {
    outs() << format("steps %ld  final loss %.4f  median step %.2f ms\n", step,
                     lastLoss, median);
    if (accuracy >= 0)
      outs() << format("test accuracy %.4f  test loss %.4f\n", accuracy,
                       testLoss);
    outs() << format("peak %ld B (tensors %ld B, predicted %ld B)  "
                     "activations %ld -> %ld B (%.2fx)\n",
                     peak, st.tensorPeakBytes, st.predictedPeakBytes,
                     st.activationBytesUncompressed,
                     st.activationBytesCompressed, ratio);
  }

  if (!reportPath.empty()) {
    json::Array slots;
    for (auto [i, s] : llvm::enumerate(st.sites)) {
      json::Array hist;
      for (auto [at, eb] : ebHistory[i])
        hist.push_back(json::Object{{"step", at}, {"eb", eb}});
      json::Object o{{"site", int64_t(i)},
                     {"value", s.value},
                     {"codec", s.codec},
                     {"bytes_uncompressed", s.bytesIn},
                     {"bytes_compressed", s.bytesOut},
                     {"ratio", s.ratio},
                     {"eb_history", std::move(hist)}};
      if (s.slot >= 0)
        o["slot"] = s.slot;
      else
        o["slot"] = nullptr;
      if (tuner && s.slot >= 0)
        for (auto &kv : tuner->slotReport(s.slot))
          o[kv.first] = std::move(kv.second);
      slots.push_back(std::move(o));
    }
    json::Object categories;
    for (const comet::CategoryBytes &c : st.categories)
      categories[c.name] = json::Object{
          {"peak", c.peak}, {"at_peak", c.atPeak}, {"current", c.current}};
    json::Array lossHist;
    for (double l : losses)
      lossHist.push_back(l);
    json::Object report{
        {"model", modelPath.getValue()},
        {"device", wordOf(device)},
        {"compress", wordOf(compress)},
        {"optimizer", engine.optimizerName()},
        {"data", wordOf(data)},
        {"epochs", epochs.getValue()},
        {"batch", batch.getValue()},
        {"steps", step},
        {"final_loss", lastLoss},
        {"test_accuracy", accuracy >= 0 ? json::Value(accuracy) : nullptr},
        {"test_loss", accuracy >= 0 ? json::Value(testLoss) : nullptr},
        {"peak_bytes", peak},
        {"predicted_peak_bytes", st.predictedPeakBytes},
        {"tensor_peak_bytes", st.tensorPeakBytes},
        {"workspace_peak_bytes", st.categories[COMET_RT_MEM_WORKSPACE].peak},
        {"dataset_bytes", datasetBytes},
        {"activation_bytes_uncompressed", st.activationBytesUncompressed},
        {"activation_bytes_compressed", st.activationBytesCompressed},
        {"compression_ratio", ratio},
        {"step_time_ms_median", median},
        {"categories", std::move(categories)},
        {"loss_history", std::move(lossHist)},
        {"memory_timeline", toJson(st.measuredTimeline)},
        {"predicted_timeline", toJson(st.predictedTimeline)},
        {"slots", std::move(slots)},
    };
    if (tuner) {
      const comet::tuner::TunerOptions &to = tuner->tuner().options();
      report["tuner"] = json::Object{
          {"rule", comet::tuner::ruleName(to.rule)},
          {"k", to.sigmaFactor},
          {"grad_magnitude", comet::tuner::gradMagnitudeName(to.gradMagnitude)},
          {"acgc_e", to.acgcEnergy},
          {"retune_interval", to.retuneInterval},
          {"stats_interval", to.statsInterval},
          {"window", to.window},
          {"eb_min", to.minEb},
          {"eb_max", to.maxEb},
          {"relative_range", to.relativeRange},
          {"retunes", tuner->tuner().numRetunes()}};
    }
    if (!measureErrorModel.empty())
      report["error_model"] = std::move(errorModel);
    // writeToOutput goes through a temporary file that it renames on
    // success, so a failed write leaves no half-written report.
    json::Value v(std::move(report));
    if (Error e = writeToOutput(reportPath, [&](raw_ostream &os) {
          os << formatv("{0:2}", v) << "\n";
          return Error::success();
        }))
      return fail("cannot write " + reportPath + ": " + toString(std::move(e)));
  }
  return 0;
}
