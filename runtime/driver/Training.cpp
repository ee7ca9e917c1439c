//===- Training.cpp - The training loop and report of the drivers ---------===//
//
// comet-train (JIT) and comet-run (ahead of time) train through these, so
// that the two give the same losses and write the same report.
//
//===----------------------------------------------------------------------===//
#include "comet/driver/Training.h"

#include "comet/runtime/handles.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <unistd.h>

namespace comet {

TrainingData::~TrainingData() {
  comet_rt_loader_free(loader);
  comet_rt_dataset_free(test);
  comet_rt_dataset_free(train);
}

/// A double as %g writes it.
static std::string numberStr(double v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string TrainingData::open(const DataOptions &options) {
  opts = options;
  double split = opts.validationSplit;
  if (!(split >= 0 && split < 1))
    return "--validation-split must be in [0, 1), not " + numberStr(split);
  if (split > 0 && !opts.testArrays.data.empty())
    return "--validation-split and --test-data both give the evaluation "
           "samples: use one";
  // The split's held-out samples are the test set: no test split is read.
  bool testSplit = opts.wantEval && split == 0;
  int32_t rc = 0;
  if (opts.source == "arrays") {
    // Read in makeLoader(), which knows the element type; a file that is
    // not there is worth knowing before the model compiles.
    if (opts.trainArrays.data.empty())
      return "--data arrays needs --train-data";
    for (const std::string *f :
         {&opts.trainArrays.data, &opts.trainArrays.labels,
          &opts.testArrays.data, &opts.testArrays.labels})
      if (!f->empty() && access(f->c_str(), R_OK) != 0)
        return "cannot read " + *f + ": " + std::strerror(errno);
  } else if (opts.source == "fashion-mnist") {
    rc = comet_rt_dataset_open_fashion_mnist(opts.dataDir.c_str(), 1, &train);
    if (rc == 0 && testSplit)
      rc = comet_rt_dataset_open_fashion_mnist(opts.dataDir.c_str(), 0, &test);
  } else if (opts.source == "synthetic") {
    int64_t c = 1, h = 28, w = 28;
    if (!opts.syntheticShape.empty() &&
        sscanf(opts.syntheticShape.c_str(), "%" SCNd64 "x%" SCNd64 "x%" SCNd64,
               &c, &h, &w) != 3)
      return "--synthetic-shape must be CxHxW";
    rc = comet_rt_dataset_synthetic(opts.syntheticSize, c, h, w, 10, opts.seed,
                                    &train);
    if (rc == 0 && testSplit)
      rc = comet_rt_dataset_synthetic(1000, c, h, w, 10, opts.seed + 1, &test);
  } else {
    return "unknown data source '" + opts.source + "'";
  }
  if (rc != 0)
    return "cannot load the " + opts.source + " data: " + comet_rt_last_error();
  comet_rt_alloc_stats st;
  comet_rt_alloc_get_stats(nullptr, &st);
  bytes = st.current_total;
  return "";
}

static std::string shapeStr(const int64_t *s, size_t n) {
  std::string r;
  for (size_t i = 0; i < n; ++i)
    r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

/// Synthetic token sequences for a model whose data are int64 token ids.
std::string TrainingData::openTokens(const Trainer &trainer) {
  const std::vector<int64_t> &sample = trainer.sampleShape();
  if (opts.source != "synthetic")
    return "the model's data input takes int64 token ids [" +
           shapeStr(sample.data(), sample.size()) + " per sample]; the " +
           opts.source +
           " data are images: use --data synthetic or token arrays "
           "(--train-data)";
  if (!opts.syntheticShape.empty())
    return "--synthetic-shape gives image samples; the model's data are "
           "int64 token ids, sequences of its own length";
  if (sample.size() != 1)
    return "the model's token input takes " +
           shapeStr(sample.data(), sample.size()) +
           " per sample; synthetic token data are one sequence per sample";
  if (trainer.dataRange() <= 0)
    return "the model's int64 data input is not read by a Gather of a "
           "static table, so the range of its token ids is unknown";
  if (trainer.numClasses() <= 0)
    return "the number of classes of the model's labels is unknown";
  comet_rt_dataset_free(train);
  comet_rt_dataset_free(test);
  train = test = nullptr;
  int32_t rc = comet_rt_dataset_synthetic_tokens(
      opts.syntheticSize, sample[0], trainer.dataRange(), perSampleLabels,
      trainer.numClasses(), opts.seed, &train);
  if (rc == 0 && opts.wantEval && opts.validationSplit == 0)
    rc = comet_rt_dataset_synthetic_tokens(
        1000, sample[0], trainer.dataRange(), perSampleLabels,
        trainer.numClasses(), opts.seed + 1, &test);
  if (rc != 0)
    return std::string("cannot make the synthetic token data: ") +
           comet_rt_last_error();
  tokens = true;
  perSample = sample[0];
  return "";
}

/// Checks that the samples of a dataset from arrays have the model's
/// sample shape, and its labels the model's count per sample.
static std::string checkArrays(const Trainer &trainer,
                               const comet_rt_dataset *ds) {
  const std::vector<int64_t> &want = trainer.sampleShape();
  std::vector<int64_t> got(comet_rt_dataset_sample_rank(ds));
  comet_rt_dataset_sample_dims(ds, got.data());
  std::string name = comet_rt_dataset_array_name(ds, 0);
  std::string array = std::to_string(comet_rt_dataset_size(ds));
  for (int64_t d : got)
    array += "x" + std::to_string(d);
  std::string head = name + ": samples of " + shapeStr(got.data(), got.size()) +
                     " (the array is " + array +
                     ") but the model's input takes " +
                     shapeStr(want.data(), want.size()) + " per sample";
  if (got.size() != want.size()) {
    std::string e =
        head + ": the array must be N x " + shapeStr(want.data(), want.size());
    int64_t n = 1, m = 1;
    for (int64_t d : got)
      n *= d;
    for (int64_t d : want)
      m *= d;
    if (n == m) {
      e += " (numpy: x.reshape(-1";
      for (int64_t d : want)
        e += ", " + std::to_string(d);
      e += "))";
    }
    return e;
  }
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return head + ": dim " + std::to_string(i + 1) + " of the array is " +
             std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
  int64_t labels = comet_rt_dataset_labels_per_sample(ds);
  if (labels != trainer.labelsPerSample())
    return std::string(comet_rt_dataset_array_name(ds, 1)) + ": " +
           std::to_string(labels) + " label" + (labels == 1 ? "" : "s") +
           " per sample but the model takes " +
           std::to_string(trainer.labelsPerSample()) +
           " per sample: the array must be " +
           (trainer.labelsPerSample() == 1
                ? std::string("N")
                : "N x " + std::to_string(trainer.labelsPerSample()));
  return "";
}

/// The user's arrays, read as the model's element type.
std::string TrainingData::openArrays(const Trainer &trainer) {
  tokens = trainer.dataElemBytes() == 8;
  comet_rt_alloc_stats before, after;
  comet_rt_alloc_get_stats(nullptr, &before);
  for (auto [files, ds] : {std::pair{&opts.trainArrays, &train},
                           std::pair{&opts.testArrays, &test}}) {
    if (files->data.empty() || (ds == &test && !opts.wantEval))
      continue;
    auto key = [](const std::string &k) {
      return k.empty() ? nullptr : k.c_str();
    };
    if (comet_rt_dataset_open_arrays(
            files->data.c_str(), key(files->dataKey),
            files->labels.empty() ? nullptr : files->labels.c_str(),
            key(files->labelsKey), tokens, trainer.numClasses(),
            tokens ? trainer.dataRange() : 0, ds) != 0)
      return std::string("cannot load the ") +
             (ds == &train ? "training" : "test") +
             " arrays: " + comet_rt_last_error();
    if (std::string e = checkArrays(trainer, *ds); !e.empty())
      return e;
  }
  comet_rt_alloc_get_stats(nullptr, &after);
  bytes += after.current_total - before.current_total;
  trainFiles = comet_rt_dataset_description(train);
  if (test)
    testFiles = comet_rt_dataset_description(test);
  return "";
}

/// The last round(F * N) training samples become the test set.
std::string TrainingData::splitValidation() {
  double f = opts.validationSplit;
  if (f == 0)
    return "";
  int64_t n = comet_rt_dataset_size(train);
  int64_t held = std::llround(f * double(n));
  if (held < 1 || held >= n)
    return "--validation-split " + numberStr(f) + " of " + std::to_string(n) +
           " training samples holds out " + std::to_string(held) +
           ": both the training and the held-out part need a sample";
  comet_rt_dataset *kept = nullptr, *out = nullptr;
  if (comet_rt_dataset_slice(train, 0, n - held, &kept) != 0 ||
      comet_rt_dataset_slice(train, n - held, held, &out) != 0) {
    comet_rt_dataset_free(kept);
    return std::string("cannot split the training set: ") +
           comet_rt_last_error();
  }
  comet_rt_dataset_free(train);
  comet_rt_dataset_free(test);
  train = kept;
  test = out;
  splitFrom = n;
  heldOut = held;
  return "";
}

std::string TrainingData::description() const {
  std::string d = opts.source;
  if (opts.source == "arrays") {
    d += ": train " + trainFiles;
    if (!testFiles.empty() && heldOut == 0)
      d += "; test " + testFiles;
  }
  if (heldOut > 0)
    d += "; validation: the last " + std::to_string(heldOut) + " of " +
         std::to_string(splitFrom) + " training samples";
  return d;
}

std::string TrainingData::makeLoader(const Trainer &trainer) {
  const std::vector<int64_t> &sample = trainer.sampleShape();
  perSampleLabels = trainer.labelsPerSample();
  if (opts.source == "arrays") {
    if (std::string e = openArrays(trainer); !e.empty())
      return e;
    perSample = 1;
    for (int64_t d : sample)
      perSample *= d;
  } else if (trainer.dataElemBytes() == 8) {
    if (std::string e = openTokens(trainer); !e.empty())
      return e;
  } else {
    int64_t ds[3];
    comet_rt_dataset_sample_shape(train, ds);
    if (sample.size() != 3 || sample[0] != ds[0] || sample[1] != ds[1] ||
        sample[2] != ds[2])
      return "the " + opts.source + " samples are " + shapeStr(ds, 3) +
             " but the model's input takes " +
             shapeStr(sample.data(), sample.size()) + " per sample";
    if (perSampleLabels != 1)
      return "the model takes " + std::to_string(perSampleLabels) +
             " labels per sample; the " + opts.source +
             " data have one per image";
    perSample = ds[0] * ds[1] * ds[2];
  }
  if (std::string e = splitValidation(); !e.empty())
    return e;
  batch = trainer.batchSize();
  if (comet_rt_loader_create(train, batch, /*shuffle=*/1, opts.seed,
                             /*drop_last=*/1, &loader) != 0)
    return std::string("cannot create the loader: ") + comet_rt_last_error();
  if (comet_rt_loader_num_batches(loader) == 0)
    return "the training set has fewer samples than one batch";
  return "";
}

int64_t TrainingData::next(void *data, int64_t *labels) {
  return tokens
             ? comet_rt_loader_next_tokens(loader, static_cast<int64_t *>(data),
                                           labels)
             : comet_rt_loader_next(loader, static_cast<float *>(data), labels);
}

bool TrainingData::nextBatch(void *data, int64_t *labels, int64_t epoch) {
  if (next(data, labels) == batch)
    return true;
  comet_rt_loader_start_epoch(loader, epoch);
  return next(data, labels) == batch;
}

int64_t TrainingData::batchesPerEpoch() const {
  return comet_rt_loader_num_batches(loader);
}

const TrainingData::TestSamples &TrainingData::testSamples(int64_t limit) {
  if (testRead)
    return testCache;
  testRead = true;
  int64_t n = comet_rt_dataset_size(test);
  if (limit > 0)
    n = std::min<int64_t>(n, limit);
  testCache.count = n;
  testCache.labels.resize(n * perSampleLabels);
  if (tokens) {
    testCache.tokens.resize(n * perSample);
    for (int64_t i = 0; i < n; ++i)
      comet_rt_dataset_get_tokens(
          test, i, testCache.tokens.data() + i * perSample,
          testCache.labels.data() + i * perSampleLabels);
    return testCache;
  }
  testCache.images.resize(n * perSample);
  for (int64_t i = 0; i < n; ++i)
    comet_rt_dataset_get(test, i, testCache.images.data() + i * perSample,
                         testCache.labels.data() + i * perSampleLabels);
  return testCache;
}

static bool canEvaluate(const Trainer &trainer, const TrainingData &data,
                        const RunOptions &options) {
  return options.evalSamples >= 0 && data.test && trainer.hasEval();
}

/// Evaluates after r.steps steps and records it in the history.
static std::string evaluateNow(Trainer &trainer, TrainingData &data,
                               const RunOptions &options, RunResult &r,
                               double &accuracy, double &loss) {
  const TrainingData::TestSamples &t = data.testSamples(options.evalSamples);
  int64_t n = t.count, correct = 0;
  std::string e = trainer.evaluate(t.data(), t.labels.data(), n, loss, correct);
  if (!e.empty())
    return e;
  // Each label is one prediction: per token for a language model.
  int64_t predictions = n * trainer.labelsPerSample();
  accuracy = predictions ? double(correct) / predictions : 0;
  r.evalHistory.push_back(
      {r.steps, double(r.steps) / data.batchesPerEpoch(), accuracy, loss});
  return "";
}

std::string trainLoop(Trainer &trainer, TrainingData &data,
                      const RunOptions &options, RunResult &r) {
  int64_t batch = data.samplesPerBatch();
  int64_t total = comet_rt_loader_num_batches(data.loader) * options.epochs;
  if (options.maxSteps > 0)
    total = std::min<int64_t>(total, options.maxSteps);
  // A batch of float pixels or int64 token ids, 8-byte aligned either way.
  std::vector<int64_t> batchData(
      (batch * data.sampleElements() * data.sampleBytes() + 7) / 8);
  std::vector<int64_t> labels(batch * data.labelsPerSample());
  bool tty = !options.quiet && isatty(STDOUT_FILENO);
  comet_rt_context *rt = trainer.context();
  const LoopPosition &start = options.start;
  r.steps = start.steps;
  r.lastLoss = r.losses.empty() ? NAN : r.losses.back();
  for (int64_t ep = start.epoch; ep < options.epochs && r.steps < total; ++ep) {
    comet_rt_loader_start_epoch(data.loader, ep);
    if (ep == start.epoch && start.samples > 0 &&
        comet_rt_loader_seek(data.loader, start.samples) != 0)
      return std::string("cannot resume at sample ") +
             std::to_string(start.samples) + " of epoch " +
             std::to_string(ep + 1) + ": " + comet_rt_last_error();
    while (r.steps < total &&
           data.next(batchData.data(), labels.data()) == batch) {
      // The second step run here: caches warm, handles in use.
      if (r.steps == start.steps + 1)
        trainer.recordTimelineOfNextStep();
      auto t0 = std::chrono::steady_clock::now();
      std::clock_t c0 = std::clock();
      if (options.beforeStep)
        options.beforeStep(r.steps);
      float loss = 0;
      std::string e = trainer.step(batchData.data(), labels.data(), loss);
      if (e.empty() && options.afterStep)
        options.afterStep(r.steps);
      auto t1 = std::chrono::steady_clock::now();
      std::clock_t c1 = std::clock();
      if (!e.empty()) {
        if (tty)
          printf("\n");
        return e;
      }
      ++r.steps;
      r.lastLoss = loss;
      r.losses.push_back(loss);
      r.stepMs.push_back(
          std::chrono::duration<double, std::milli>(t1 - t0).count());
      r.stepCpuMs.push_back(1000.0 * static_cast<double>(c1 - c0) /
                            CLOCKS_PER_SEC);
      // The bound of every slot, recorded when it changes.
      for (int64_t s = 0, n = comet_rt_num_sites(rt); s < n; ++s) {
        comet_rt_site_stats st;
        if (comet_rt_site_get_stats(rt, s, &st) == 0 && st.slot >= 0) {
          auto &h = r.ebHistory[s];
          if (h.empty() || h.back().second != st.last_eb)
            h.push_back({r.steps, st.last_eb});
        }
      }
      // Intermediate evaluations (the last one is evaluateTestSet's). The
      // eval graph's buffers would count in the peaks, so they are reset:
      // every training step reaches its peak again.
      if (options.evalInterval > 0 && r.steps % options.evalInterval == 0 &&
          r.steps < total && canEvaluate(trainer, data, options)) {
        double accuracy, loss;
        e = evaluateNow(trainer, data, options, r, accuracy, loss);
        if (!e.empty()) {
          if (tty)
            printf("\n");
          return e;
        }
        trainer.resetPeaks();
      }
      if (options.afterPosition) {
        LoopPosition at{r.steps, ep, comet_rt_loader_position(data.loader)};
        e = options.afterPosition(at, r);
        if (!e.empty()) {
          if (tty)
            printf("\n");
          return e;
        }
      }
      if (tty && (r.steps % 10 == 0 || r.steps == total)) {
        int width = 30, done = static_cast<int>(width * r.steps / total);
        printf("\r[%s%s] epoch %" PRId64 "/%" PRId64 " step %" PRId64
               "/%" PRId64 " loss %.4f",
               std::string(done, '=').c_str(),
               std::string(width - done, ' ').c_str(), ep + 1, options.epochs,
               r.steps, total, loss);
        fflush(stdout);
      }
    }
  }
  if (tty)
    printf("\n");
  r.stats = trainer.stats();
  return "";
}

std::string evaluateTestSet(Trainer &trainer, TrainingData &data,
                            const RunOptions &options, RunResult &r) {
  if (!canEvaluate(trainer, data, options))
    return "";
  return evaluateNow(trainer, data, options, r, r.accuracy, r.testLoss);
}

static double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

static double ratioOf(const EngineStats &s) {
  return s.activationBytesCompressed > 0
             ? double(s.activationBytesUncompressed) /
                   s.activationBytesCompressed
             : 0;
}

void printSummary(const RunResult &r) {
  const EngineStats &st = r.stats;
  printf("steps %" PRId64 "  final loss %.4f  median step %.2f ms\n", r.steps,
         r.lastLoss, medianOf(r.stepMs));
  if (r.accuracy >= 0)
    printf("test accuracy %.4f  test loss %.4f\n", r.accuracy, r.testLoss);
  printf("peak %" PRId64 " B (tensors %" PRId64 " B, predicted %" PRId64
         " B)  activations %" PRId64 " -> %" PRId64 " B (%.2fx)\n",
         st.peakBytes, st.tensorPeakBytes, st.predictedPeakBytes,
         st.activationBytesUncompressed, st.activationBytesCompressed,
         ratioOf(st));
  if (!st.recomputed.empty())
    printf("recomputed in the backward instead of kept: %zu values\n",
           st.recomputed.size());
  if (st.fixedWidthSites > 0)
    printf("fixed-width codec (no entropy stage) at %" PRId64
           " sites, whose handles are not live at the predicted peak\n",
           st.fixedWidthSites);
  if (const BudgetChoice &bc = st.budget; bc.bytes > 0)
    printf("memory budget %" PRId64 " B: %s (%" PRId64
           " compressed, %zu left raw, %" PRId64 " of %" PRId64
           " recomputable recomputed; predicted %" PRId64
           " B at sz %.1fx when compiled, %" PRId64
           " B at the measured ratio)\n",
           bc.bytes, st.peakBytes <= bc.bytes ? "met" : "MISSED", bc.compressed,
           bc.notSelected.size(), bc.recomputed, bc.recomputeCandidates,
           bc.predictedPeakBytes, bc.assumedSzRatio, st.predictedPeakBytes);
  fflush(stdout);
}

namespace {

/// Writes JSON text indented by two spaces. The drivers link no LLVM, so
/// llvm::json is not at hand; the report needs only this much of it.
class JsonWriter {
public:
  explicit JsonWriter(std::string &out) : out(out) {}

  void objectBegin() { open('{'); }
  void objectEnd() { close('}'); }
  void arrayBegin() { open('['); }
  void arrayEnd() { close(']'); }
  void key(const std::string &k) {
    separate();
    string(k);
    out += ": ";
    afterKey = true;
  }
  void value(int64_t v) {
    separate();
    out += std::to_string(v);
  }
  void value(bool v) {
    separate();
    out += v ? "true" : "false";
  }
  void value(double v) {
    separate();
    if (!std::isfinite(v)) {
      out += "null";
      return;
    }
    char buf[32];
    snprintf(buf, sizeof(buf), "%.17g", v);
    out += buf;
  }
  void value(const std::string &v) {
    separate();
    string(v);
  }
  void null() {
    separate();
    out += "null";
  }
  template <typename T> void member(const std::string &k, const T &v) {
    key(k);
    value(v);
  }
  void array(const std::string &k, const std::vector<int64_t> &v) {
    key(k);
    arrayBegin();
    for (int64_t x : v)
      value(x);
    arrayEnd();
  }

private:
  void open(char c) {
    separate();
    out += c;
    first.push_back(true);
  }
  void close(char c) {
    bool empty = first.back();
    first.pop_back();
    if (!empty)
      newline();
    out += c;
  }
  void separate() {
    if (afterKey) {
      afterKey = false;
      return;
    }
    if (first.empty())
      return;
    if (!first.back())
      out += ',';
    first.back() = false;
    newline();
  }
  void newline() {
    out += '\n';
    out.append(2 * first.size(), ' ');
  }
  void string(const std::string &s) {
    out += '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (c < 0x20) {
        char buf[8];
        snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
    out += '"';
  }

  std::string &out;
  std::vector<bool> first;
  bool afterKey = false;
};

} // namespace

std::string reportJson(const ReportInfo &info, const RunResult &r) {
  const EngineStats &st = r.stats;
  std::string out;
  JsonWriter j(out);
  j.objectBegin();
  j.member("model", info.model);
  j.member("device", info.device);
  j.member("compress", info.compress);
  j.member("codec_entropy", info.codecEntropy);
  j.member("optimizer", info.optimizer);
  j.member("optimizer_fused", info.optimizerFused);
  j.member("learning_rate", info.learningRate);
  j.key("artifacts");
  j.objectBegin();
  j.member("training", info.artifacts.training);
  j.member("weights", info.artifacts.weights);
  for (auto [key, path] : {std::pair{"eval_model", &info.artifacts.evalModel},
                           std::pair{"optimizer", &info.artifacts.optimizer}}) {
    j.key(key);
    path->empty() ? j.null() : j.value(*path);
  }
  j.objectEnd();
  j.member("data", info.data);
  j.member("epochs", info.epochs);
  j.member("batch", info.batch);
  j.member("steps", r.steps);
  j.member("final_loss", double(r.lastLoss));
  j.key("test_accuracy");
  r.accuracy >= 0 ? j.value(r.accuracy) : j.null();
  j.key("test_loss");
  r.accuracy >= 0 ? j.value(r.testLoss) : j.null();
  j.member("peak_bytes", st.peakBytes);
  j.member("predicted_peak_bytes", st.predictedPeakBytes);
  j.member("predicted_tensor_peak_bytes", st.predictedTensorPeakBytes);
  j.member("predicted_workspace_bytes", st.predictedWorkspaceBytesAtPeak);
  j.member("codec_fixed_width_sites", st.fixedWidthSites);
  j.key("recomputed");
  j.arrayBegin();
  for (const std::string &n : st.recomputed)
    j.value(n);
  j.arrayEnd();
  j.key("memory_budget");
  if (st.budget.bytes > 0) {
    // The choice made when compiling, and how it turned out.
    const BudgetChoice &bc = st.budget;
    j.objectBegin();
    j.member("budget_bytes", bc.bytes);
    j.member("graph_budget_bytes", bc.graphBytes);
    j.member("assumed_sz_ratio", bc.assumedSzRatio);
    j.member("predicted_peak_bytes_at_compile", bc.predictedPeakBytes);
    j.member("predicted_peak_bytes", st.predictedPeakBytes);
    j.member("measured_peak_bytes", st.peakBytes);
    j.member("compressed", bc.compressed);
    j.member("recomputed", bc.recomputed);
    j.member("recompute_candidates", bc.recomputeCandidates);
    j.key("not_selected");
    j.arrayBegin();
    for (const std::string &n : bc.notSelected)
      j.value(n);
    j.arrayEnd();
    j.objectEnd();
  } else {
    j.null();
  }
  j.member("tensor_peak_bytes", st.tensorPeakBytes);
  j.member("workspace_peak_bytes", st.categories[COMET_RT_MEM_WORKSPACE].peak);
  j.member("dataset_bytes", info.datasetBytes);
  j.member("activation_bytes_uncompressed", st.activationBytesUncompressed);
  j.member("activation_bytes_compressed", st.activationBytesCompressed);
  j.member("compression_ratio", ratioOf(st));
  j.member("step_time_ms_median", medianOf(r.stepMs));
  j.member("step_cpu_ms_median", medianOf(r.stepCpuMs));
  j.key("categories");
  j.objectBegin();
  for (const CategoryBytes &c : st.categories) {
    j.key(c.name);
    j.objectBegin();
    j.member("peak", c.peak);
    j.member("at_peak", c.atPeak);
    j.member("current", c.current);
    j.objectEnd();
  }
  j.objectEnd();
  j.key("loss_history");
  j.arrayBegin();
  for (double l : r.losses)
    j.value(l);
  j.arrayEnd();
  j.key("eval_history");
  j.arrayBegin();
  for (const RunResult::Evaluation &ev : r.evalHistory) {
    j.objectBegin();
    j.member("step", ev.step);
    j.member("epoch", ev.epoch);
    j.member("test_accuracy", ev.accuracy);
    j.member("test_loss", ev.loss);
    j.objectEnd();
  }
  j.arrayEnd();
  j.array("memory_timeline", st.measuredTimeline);
  j.array("predicted_timeline", st.predictedTimeline);
  j.key("slots");
  j.arrayBegin();
  for (size_t i = 0; i < st.sites.size(); ++i) {
    const SiteStats &s = st.sites[i];
    j.objectBegin();
    j.member("site", int64_t(i));
    j.member("value", s.value);
    j.member("codec", s.codec);
    j.member("bytes_uncompressed", s.bytesIn);
    j.member("bytes_compressed", s.bytesOut);
    j.member("ratio", s.ratio);
    j.key("eb_history");
    j.arrayBegin();
    auto it = r.ebHistory.find(i);
    if (it != r.ebHistory.end())
      for (auto [at, eb] : it->second) {
        j.objectBegin();
        j.member("step", at);
        j.member("eb", eb);
        j.objectEnd();
      }
    j.arrayEnd();
    j.key("slot");
    s.slot >= 0 ? j.value(s.slot) : j.null();
    j.objectEnd();
  }
  j.arrayEnd();
  j.objectEnd();
  out += '\n';
  return out;
}

std::string writeFileAtomically(const std::string &path,
                                const std::string &text) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  FILE *f = fopen(tmp.c_str(), "wb");
  if (!f)
    return "cannot write " + path;
  bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    remove(tmp.c_str());
    return "cannot write " + path;
  }
  return "";
}

} // namespace comet
