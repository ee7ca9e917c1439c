//===- EngineFlags.h - The flags that shape a compiled graph ----*- C++ -*-===//
//
// comet-train (JIT) and comet-compile (ahead of time) compile a training
// graph, or an artifact folder, from the same flags, so they are declared
// once here: a tool holds one static EngineFlags in its option category.
// The defaults are the folder's: its checkpoint, its optimizer_model.onnx,
// activations compressed with static bounds.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_TOOLS_ENGINEFLAGS_H
#define COMET_TOOLS_ENGINEFLAGS_H

#include "comet/Engine/Engine.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

namespace comet {

/// The word that names the value of an enum option (for messages and the
/// report).
template <typename T> std::string wordOf(llvm::cl::opt<T> &o) {
  const llvm::cl::parser<T> &p = o.getParser();
  for (unsigned i = 0, e = p.getNumOptions(); i < e; ++i)
    if (static_cast<const llvm::cl::OptionValue<T> &>(p.getOptionValue(i))
            .getValue() == o.getValue())
      return p.getOption(i).str();
  return "";
}

struct EngineFlags {
  explicit EngineFlags(llvm::cl::OptionCategory &cat)
      : optimizerPath(
            "optimizer",
            llvm::cl::desc("ORT optimizer graph (AdamWOptimizer or "
                           "SGDOptimizerV2), or 'builtin' for SGD with "
                           "momentum; default: optimizer_model.onnx next to "
                           "the training graph, else 'builtin'"),
            llvm::cl::init(""), llvm::cl::cat(cat)),
        batch("batch", llvm::cl::desc("Batch size"), llvm::cl::init(64),
              llvm::cl::cat(cat)),
        compress(
            "compress", llvm::cl::desc("Activation compression"),
            llvm::cl::values(
                clEnumValN(CompressMode::None, "none", "none"),
                clEnumValN(CompressMode::Static, "static", "static bounds"),
                clEnumValN(CompressMode::Adaptive, "adaptive",
                           "bounds re-tuned while training")),
            llvm::cl::init(CompressMode::Static), llvm::cl::cat(cat)),
        compressOptions("compress-options",
                        llvm::cl::desc("Options for "
                                       "--comet-compress-activations, e.g. "
                                       "'min-bytes=4096'"),
                        llvm::cl::init(""), llvm::cl::cat(cat)),
        compressOnly("compress-only",
                     llvm::cl::desc("Compress only these values (names as in "
                                    "the report's sites; the pass option "
                                    "only=)"),
                     llvm::cl::CommaSeparated, llvm::cl::cat(cat)),
        compressExcept("compress-except",
                       llvm::cl::desc("Compress every candidate but these "
                                      "values (the pass option except=)"),
                       llvm::cl::CommaSeparated, llvm::cl::cat(cat)),
        memoryBudget(
            "memory-budget",
            llvm::cl::desc("Whole-step peak to fit: compress the fewest "
                           "activations that bring the predicted peak to it "
                           "(bytes, or with a KiB, MiB or GiB suffix)"),
            llvm::cl::init(""), llvm::cl::cat(cat)),
        assumedSzRatio("assumed-sz-ratio",
                       llvm::cl::desc("The sz compression ratio a memory "
                                      "budget assumes"),
                       llvm::cl::init(3.0), llvm::cl::cat(cat)),
        workspaceLimit(
            "workspace-limit",
            llvm::cl::desc("The kernel workspace one call may take: a "
                           "convolution's weight gradient beyond it runs "
                           "over groups of output channels (bytes, or with "
                           "a KiB, MiB or GiB suffix; 0: no limit; default: "
                           "the runtime's, 16 MiB)"),
            llvm::cl::init(""), llvm::cl::cat(cat)),
        flatPoolIndices(
            "flat-pool-indices",
            llvm::cl::desc("Keep MaxPool's Indices as ONNX's flat int64 "
                           "indices instead of each argmax's position in "
                           "its window, a byte (comet-compact-pool-indices; "
                           "the same gradients, 8x the bytes)"),
            llvm::cl::init(false), llvm::cl::cat(cat)),
        recompute(
            "recompute",
            llvm::cl::desc("Recompute each BatchNorm (+ ReLU or Clip) output "
                           "in the backward from the BatchNorm's input "
                           "instead of keeping it (comet-recompute-"
                           "activations; exact under --compress none; off "
                           "under --compress adaptive)"),
            llvm::cl::init(true), llvm::cl::cat(cat)),
        weightsPath("weights",
                    llvm::cl::desc("Initial weights: an ORT checkpoint, or "
                                   "an .onnx file's initializers; default: "
                                   "the checkpoint next to the training "
                                   "graph, else model.onnx there"),
                    llvm::cl::init(""), llvm::cl::cat(cat)),
        dumpIR("dump-ir", llvm::cl::desc("Write the lowered IR here"),
               llvm::cl::init(""), llvm::cl::cat(cat)),
        fuseOptimizer(
            "fuse-optimizer",
            llvm::cl::desc("Apply each parameter's optimizer update inside "
                           "the step, where its gradient is final, so no "
                           "gradient buffer exists (bit-identical to the "
                           "update after the step; off where gradients "
                           "are read: --compress adaptive)"),
            llvm::cl::init(true), llvm::cl::cat(cat)) {}

  llvm::cl::opt<std::string> optimizerPath;
  llvm::cl::opt<int64_t> batch;
  llvm::cl::opt<CompressMode> compress;
  llvm::cl::opt<std::string> compressOptions;
  llvm::cl::list<std::string> compressOnly, compressExcept;
  llvm::cl::opt<std::string> memoryBudget;
  llvm::cl::opt<double> assumedSzRatio;
  llvm::cl::opt<std::string> workspaceLimit;
  llvm::cl::opt<bool> flatPoolIndices;
  llvm::cl::opt<bool> recompute;
  llvm::cl::opt<std::string> weightsPath;
  llvm::cl::opt<std::string> dumpIR;
  llvm::cl::opt<bool> fuseOptimizer;

  /// Why the compression flags do not go together; empty when they do.
  std::string validate() const {
    if (!compressOnly.empty() && !compressExcept.empty())
      return "--compress-only and --compress-except exclude each other";
    if ((!compressOnly.empty() || !compressExcept.empty()) &&
        compress == CompressMode::None)
      return "--compress-only and --compress-except need --compress static "
             "or adaptive";
    if (!memoryBudget.empty() && budgetBytes() <= 0)
      return "--memory-budget: '" + memoryBudget +
             "' is not a positive size (e.g. 900MiB or 943718400)";
    if (!memoryBudget.empty() && compress == CompressMode::None)
      return "--memory-budget needs --compress static or adaptive";
    if (!memoryBudget.empty() && !(assumedSzRatio >= 1.0))
      return "--assumed-sz-ratio must be at least 1";
    if (!workspaceLimit.empty() && bytesOf(workspaceLimit) < 0)
      return "--workspace-limit: '" + workspaceLimit +
             "' is not a size (e.g. 16MiB, 0 for none)";
    return "";
  }

  /// --memory-budget in bytes: 0 when absent, -1 when malformed.
  int64_t budgetBytes() const {
    if (llvm::StringRef(memoryBudget).trim().empty())
      return 0;
    int64_t n = bytesOf(memoryBudget);
    return n <= 0 ? -1 : n;
  }

  /// A size in bytes, or with a KiB, MiB or GiB suffix: 0 when empty, -1
  /// when malformed.
  static int64_t bytesOf(llvm::StringRef text) {
    llvm::StringRef s = text.trim();
    if (s.empty())
      return 0;
    int64_t unit = 1;
    for (auto [suffix, u] : {std::pair{"KiB", int64_t(1) << 10},
                             std::pair{"MiB", int64_t(1) << 20},
                             std::pair{"GiB", int64_t(1) << 30}})
      if (s.consume_back(suffix)) {
        unit = u;
        break;
      }
    uint64_t n = 0;
    if (s.trim().getAsInteger(10, n) || n > uint64_t(INT64_MAX) / unit)
      return -1;
    return static_cast<int64_t>(n) * unit;
  }

  /// The EngineOptions these flags give (the rest at their defaults).
  EngineOptions options() const {
    EngineOptions o;
    o.batchSize = batch;
    o.compress = compress;
    o.compressOptions = compressOptions;
    // The site lists become the pass options only= / except=.
    for (auto [list, key] : {std::pair{&compressOnly, "only="},
                             std::pair{&compressExcept, "except="}})
      if (!list->empty())
        o.compressOptions += (o.compressOptions.empty() ? "" : " ") +
                             std::string(key) + llvm::join(*list, ",");
    o.memoryBudget = std::max<int64_t>(budgetBytes(), 0);
    o.assumedSzRatio = assumedSzRatio;
    if (!workspaceLimit.empty())
      o.workspaceLimit = std::max<int64_t>(bytesOf(workspaceLimit), 0);
    o.compactPoolIndices = !flatPoolIndices;
    o.recompute = recompute;
    o.optimizerPath = optimizerPath;
    o.weightsPath = weightsPath;
    o.dumpLoweredIRPath = dumpIR;
    // The bound tuner reads each step's gradients.
    o.fuseOptimizer = fuseOptimizer && compress != CompressMode::Adaptive;
    return o;
  }
};

} // namespace comet

#endif // COMET_TOOLS_ENGINEFLAGS_H
