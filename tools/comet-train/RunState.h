//===- RunState.h - comet-train's resume fields in a checkpoint -*- C++ -*-===//
//
// What comet-train keeps in a checkpoint's property bag, besides the
// engine's parameters and optimizer state, to continue a run exactly
// (docs/checkpoint-format.md, "comet-train's properties"): the settings
// that shape the run, checked on resume; where the loop stands; the random
// stream's counter; the history the report shows; the bound tuner's state.
// Every name starts with "comet.", so the file stays an ONNX Runtime
// checkpoint.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_TOOLS_COMET_TRAIN_RUNSTATE_H
#define COMET_TOOLS_COMET_TRAIN_RUNSTATE_H

#include "comet/Import/Checkpoint.h"
#include "comet/driver/Training.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace comet {

/// One setting that shapes a run's trajectory: a resumed run must have the
/// same value.
struct RunSetting {
  /// The property ("comet.batch") and the flag that sets it ("--batch").
  std::string property, flag;
  enum Kind { Int, Float, String } kind = String;
  int64_t i = 0;
  float f = 0;
  std::string s;
  /// For a text setting added after checkpoints without it were written:
  /// the value such a checkpoint stands for (so that it still resumes, and
  /// only with that value); empty: the property must be there.
  std::optional<std::string> whenAbsent;

  static RunSetting integer(std::string property, std::string flag, int64_t v);
  static RunSetting real(std::string property, std::string flag, float v);
  static RunSetting text(std::string property, std::string flag, std::string v);
  /// The value as a message shows it.
  std::string shown() const;
};

/// What a checkpoint records beyond the engine's state.
struct RunState {
  LoopPosition position;
  /// The seed and counter of the engine's random stream (Dropout).
  uint64_t randomSeed = 0, randomCounter = 0;
  /// Steps, losses, evaluations and bound history so far (RunResult's).
  RunResult history;
  /// EngineTuner::saveState(); empty without the bound tuner.
  std::string tuner;
};

/// The version of the layout below, written as comet.version.
constexpr int64_t kRunStateVersion = 1;

/// The comet.* properties for `settings` and `state`.
checkpoint::PropertyBag runProperties(const std::vector<RunSetting> &settings,
                                      const RunState &state);

/// Reads `bag` back into `state`, after checking that it was written by
/// comet-train with the same `settings` (the message names the first one
/// that differs, or what is missing or malformed). Returns "" on success.
std::string readRunProperties(const checkpoint::PropertyBag &bag,
                              const std::vector<RunSetting> &settings,
                              RunState &state);

/// A digest of a file's bytes (16 hex digits), for settings that are
/// files; "" when it cannot be read.
std::string fileDigest(const std::string &path);

} // namespace comet

#endif // COMET_TOOLS_COMET_TRAIN_RUNSTATE_H
