//===- comet-run.cpp - Train a step that comet-compile wrote ahead of time ===//
//
//   comet-run STEP.so --data fashion-mnist|synthetic [--epochs E]
//       [--max-steps N] [--eval-samples N] [--eval-interval N] [--lr X]
//       [--seed S] [--report OUT.json]
//
// Loads the shared library (dlopen), binds its weights and the data as
// comet-train does, trains, evaluates and writes the same JSON report. It
// links the runtime and the C++ standard library only, no MLIR or LLVM, so
// it builds from the source tree where no compiler toolchain is installed
// (COMET_RUNTIME_ONLY, docs/aot.md).
//
//===----------------------------------------------------------------------===//
#include "comet/driver/CompiledStep.h"
#include "comet/driver/Coverage.h"
#include "comet/driver/Training.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <getopt.h>
#include <string>

namespace {

int fail(const std::string &msg) {
  fprintf(stderr, "comet-run: error: %s\n", msg.c_str());
  return 1;
}

const char *usage =
    "USAGE: comet-run [options] <step.so>\n"
    "\n"
    "Trains a training step compiled by comet-compile.\n"
    "\n"
    "OPTIONS:\n"
    "  --data=<fashion-mnist|synthetic>  training data (fashion-mnist)\n"
    "  --data-dir=<dir>          directory of the Fashion-MNIST IDX files\n"
    "  --synthetic-shape=<CxHxW> synthetic samples' shape (1x28x28)\n"
    "  --synthetic-size=<n>      synthetic training samples (6400)\n"
    "  --epochs=<n>              epochs (1)\n"
    "  --max-steps=<n>           stop after n steps (0: no limit)\n"
    "  --eval-samples=<n>        test samples to evaluate (0: all, -1: none)\n"
    "  --eval-interval=<n>       also evaluate every n steps (0: only after\n"
    "                            training; the report's eval_history)\n"
    "  --lr=<x>                  learning rate (0.001 for AdamW, 0.05 for "
    "SGD)\n"
    "  --momentum=<x>            momentum of the built-in SGD (0.9)\n"
    "  --seed=<n>                shuffle/synthetic and Dropout seed (0)\n"
    "  --device=<cpu|cuda>       execution device (cpu)\n"
    "  --report=<file>           write the JSON report here\n"
    "  --quiet                   no progress output\n"
    "  --print-runtime-coverage  print which device implements which runtime\n"
    "                            entry as Markdown (docs/runtime-coverage.md)\n"
    "                            and exit\n";

/// A whole-string integer or number; false on anything else.
bool parseInt(const char *s, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end)
    return false;
  out = v;
  return true;
}

bool parseFloat(const char *s, float &out) {
  char *end = nullptr;
  errno = 0;
  float v = strtof(s, &end);
  if (errno || end == s || *end)
    return false;
  out = v;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  comet::DataOptions dataOpts;
  dataOpts.dataDir = COMET_RT_FASHION_MNIST_DIR;
  comet::RunOptions run;
  float lr = 0.0f, momentum = 0.9f; // lr 0: the optimizer's default
  int64_t seed = 0;
  std::string reportPath, device = "cpu";
  enum {
    Data = 256,
    DataDir,
    SyntheticShape,
    SyntheticSize,
    Epochs,
    MaxSteps,
    EvalSamples,
    EvalInterval,
    Lr,
    Momentum,
    Seed,
    Device,
    Report,
    Quiet,
    PrintCoverage,
    Help
  };
  static const option longOpts[] = {
      {"data", required_argument, nullptr, Data},
      {"data-dir", required_argument, nullptr, DataDir},
      {"synthetic-shape", required_argument, nullptr, SyntheticShape},
      {"synthetic-size", required_argument, nullptr, SyntheticSize},
      {"epochs", required_argument, nullptr, Epochs},
      {"max-steps", required_argument, nullptr, MaxSteps},
      {"eval-samples", required_argument, nullptr, EvalSamples},
      {"eval-interval", required_argument, nullptr, EvalInterval},
      {"lr", required_argument, nullptr, Lr},
      {"momentum", required_argument, nullptr, Momentum},
      {"seed", required_argument, nullptr, Seed},
      {"device", required_argument, nullptr, Device},
      {"report", required_argument, nullptr, Report},
      {"quiet", no_argument, nullptr, Quiet},
      {"print-runtime-coverage", no_argument, nullptr, PrintCoverage},
      {"help", no_argument, nullptr, Help},
      {nullptr, 0, nullptr, 0}};
  opterr = 0;
  int c, index = 0;
  while ((c = getopt_long_only(argc, argv, "", longOpts, &index)) != -1) {
    bool ok = true;
    switch (c) {
    case Data:
      dataOpts.source = optarg;
      ok = dataOpts.source == "fashion-mnist" || dataOpts.source == "synthetic";
      break;
    case DataDir:
      dataOpts.dataDir = optarg;
      break;
    case SyntheticShape:
      dataOpts.syntheticShape = optarg;
      break;
    case SyntheticSize:
      ok = parseInt(optarg, dataOpts.syntheticSize);
      break;
    case Epochs:
      ok = parseInt(optarg, run.epochs);
      break;
    case MaxSteps:
      ok = parseInt(optarg, run.maxSteps);
      break;
    case EvalSamples:
      ok = parseInt(optarg, run.evalSamples);
      break;
    case EvalInterval:
      ok = parseInt(optarg, run.evalInterval);
      break;
    case Lr:
      ok = parseFloat(optarg, lr) && lr > 0;
      break;
    case Momentum:
      ok = parseFloat(optarg, momentum);
      break;
    case Seed:
      ok = parseInt(optarg, seed);
      break;
    case Device:
      device = optarg;
      ok = device == "cpu" || device == "cuda";
      break;
    case Report:
      reportPath = optarg;
      break;
    case Quiet:
      run.quiet = true;
      break;
    case PrintCoverage:
      fputs(comet::runtimeCoverageMarkdown().c_str(), stdout);
      return 0;
    case Help:
      fputs(usage, stdout);
      return 0;
    default:
      return fail(std::string("unknown option '") + argv[optind - 1] +
                  "' (see --help)");
    }
    if (!ok)
      return fail(std::string("bad value '") + optarg + "' for --" +
                  longOpts[index].name);
  }
  if (optind + 1 != argc)
    return fail("expected one compiled step (see --help)");
  std::string stepPath = argv[optind];
  if (run.epochs <= 0)
    return fail("--epochs must be positive");
  if (run.evalInterval < 0)
    return fail("--eval-interval must be non-negative");

  std::unique_ptr<comet::CompiledStep> step;
  if (std::string e = comet::CompiledStep::load(stepPath, step); !e.empty())
    return fail(e);
  const comet_aot_program &prog = step->program();
  // Before any device work: a device that lacks an entry the step calls
  // refuses it, naming each such entry.
  if (std::string e = comet::checkDeviceCoverage(device, step->runtimeEntries());
      !e.empty())
    return fail(e);
  if (std::string(prog.compress) == "adaptive")
    return fail(stepPath +
                " was compiled with --compress adaptive, whose bound tuner "
                "runs in comet-train only; compile it with --compress static");

  // Datasets first, as comet-train opens them: they live in the default
  // runtime context, so the trainer's memory figures leave them out.
  comet::TrainingData data;
  dataOpts.seed = seed;
  dataOpts.wantEval = run.evalSamples >= 0;
  if (std::string e = data.open(dataOpts); !e.empty())
    return fail(e);

  comet::Trainer trainer;
  if (std::string e = trainer.useDevice(device); !e.empty())
    return fail(e);
  // The Dropout stream, seeded as comet-train seeds its engine's.
  comet_rt_context_set_seed(trainer.context(), static_cast<uint64_t>(seed));
  if (std::string e = step->bind(trainer, lr, momentum, /*weightDecay=*/0.0f);
      !e.empty())
    return fail(e);
  if (std::string e = data.makeLoader(trainer); !e.empty())
    return fail(e);
  comet::RunResult result;
  if (std::string e = comet::trainLoop(trainer, data, run, result); !e.empty())
    return fail(e);
  if (std::string e = comet::evaluateTestSet(trainer, data, run, result);
      !e.empty())
    return fail(e);
  if (!run.quiet)
    comet::printSummary(result);

  if (!reportPath.empty()) {
    comet::ReportInfo info;
    info.model = prog.model;
    info.device = device;
    info.compress = prog.compress;
    info.optimizer = trainer.optimizerConfig().kind;
    info.optimizerFused = trainer.optimizerFused();
    info.learningRate = trainer.optimizerConfig().learningRate;
    info.artifacts = step->artifacts();
    info.data = dataOpts.source;
    info.epochs = run.epochs;
    info.batch = prog.batch;
    info.datasetBytes = data.datasetBytes();
    if (std::string e = comet::writeFileAtomically(
            reportPath, comet::reportJson(info, result));
        !e.empty())
      return fail(e);
  }
  return 0;
}
