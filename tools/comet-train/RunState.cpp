//===- RunState.cpp - comet-train's resume fields in a checkpoint ---------===//
//
// The history travels as text: losses (floats) with 9 significant digits
// and the evaluations' and bounds' doubles with 17, both of which read back
// to the same bits; the Python side of ONNX Runtime decodes string
// properties as UTF-8, so the text stays ASCII.
//
//===----------------------------------------------------------------------===//
#include "RunState.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace comet {

namespace {

constexpr const char *kVersion = "comet.version", *kStep = "comet.step",
                     *kEpoch = "comet.epoch", *kSamples = "comet.epoch_samples",
                     *kRandomSeed = "comet.random_seed",
                     *kRandomCounter = "comet.random_counter",
                     *kLosses = "comet.loss_history",
                     *kEvals = "comet.eval_history",
                     *kBounds = "comet.eb_history", *kTuner = "comet.tuner";

std::string printed(const char *fmt, double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

/// Parses a whole token as a double (strtod: decimal, hex, nan, inf).
bool parseDouble(llvm::StringRef token, double &v) {
  std::string s = token.trim().str();
  if (s.empty())
    return false;
  char *end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

bool parseInt(llvm::StringRef token, int64_t &v) {
  return !token.trim().getAsInteger(10, v);
}

/// Losses as "l0,l1,...".
std::string lossesText(const std::vector<double> &losses) {
  std::string out;
  for (double l : losses)
    out += (out.empty() ? "" : ",") + printed("%.9g", static_cast<float>(l));
  return out;
}

/// Evaluations as "step epoch accuracy loss;...".
std::string evalsText(const std::vector<RunResult::Evaluation> &evals) {
  std::string out;
  for (const RunResult::Evaluation &e : evals)
    out += (out.empty() ? "" : ";") + std::to_string(e.step) + " " +
           printed("%.17g", e.epoch) + " " + printed("%.17g", e.accuracy) +
           " " + printed("%.17g", e.loss);
  return out;
}

/// Bound changes as "site step eb;...".
std::string boundsText(
    const std::map<int64_t, std::vector<std::pair<int64_t, double>>> &h) {
  std::string out;
  for (const auto &[site, points] : h)
    for (auto [step, eb] : points)
      out += (out.empty() ? "" : ";") + std::to_string(site) + " " +
             std::to_string(step) + " " + printed("%.17g", eb);
  return out;
}

} // namespace

RunSetting RunSetting::integer(std::string property, std::string flag,
                               int64_t v) {
  RunSetting r;
  r.property = std::move(property);
  r.flag = std::move(flag);
  r.kind = Int;
  r.i = v;
  return r;
}

RunSetting RunSetting::real(std::string property, std::string flag, float v) {
  RunSetting r;
  r.property = std::move(property);
  r.flag = std::move(flag);
  r.kind = Float;
  r.f = v;
  return r;
}

RunSetting RunSetting::text(std::string property, std::string flag,
                            std::string v) {
  RunSetting r;
  r.property = std::move(property);
  r.flag = std::move(flag);
  r.s = std::move(v);
  return r;
}

std::string RunSetting::shown() const {
  switch (kind) {
  case Int:
    return std::to_string(i);
  case Float:
    // The shortest text that reads back as the same float.
    for (int digits = 1; digits < 9; ++digits) {
      char fmt[8];
      snprintf(fmt, sizeof(fmt), "%%.%dg", digits);
      std::string t = printed(fmt, f);
      if (std::strtof(t.c_str(), nullptr) == f)
        return t;
    }
    return printed("%.9g", f);
  case String:
    return s.empty() ? "(none)" : "'" + s + "'";
  }
  return "";
}

checkpoint::PropertyBag runProperties(const std::vector<RunSetting> &settings,
                                      const RunState &state) {
  checkpoint::PropertyBag bag;
  bag.ints.push_back({kVersion, kRunStateVersion});
  for (const RunSetting &s : settings) {
    if (s.kind == RunSetting::Int)
      bag.ints.push_back({s.property, s.i});
    else if (s.kind == RunSetting::Float)
      bag.floats.push_back({s.property, s.f});
    else
      bag.strings.push_back({s.property, s.s});
  }
  const LoopPosition &at = state.position;
  bag.ints.push_back({kStep, at.steps});
  bag.ints.push_back({kEpoch, at.epoch});
  bag.ints.push_back({kSamples, at.samples});
  // uint64 counters as int64 bit patterns.
  bag.ints.push_back({kRandomSeed, static_cast<int64_t>(state.randomSeed)});
  bag.ints.push_back(
      {kRandomCounter, static_cast<int64_t>(state.randomCounter)});
  bag.strings.push_back({kLosses, lossesText(state.history.losses)});
  bag.strings.push_back({kEvals, evalsText(state.history.evalHistory)});
  bag.strings.push_back({kBounds, boundsText(state.history.ebHistory)});
  if (!state.tuner.empty())
    bag.strings.push_back({kTuner, state.tuner});
  return bag;
}

std::string readRunProperties(const checkpoint::PropertyBag &bag,
                              const std::vector<RunSetting> &settings,
                              RunState &state) {
  const int64_t *version = bag.findInt(kVersion);
  if (!version)
    return "it has no comet.version property: it was not saved by "
           "comet-train --save-checkpoint (--weights starts from a "
           "checkpoint's parameters)";
  if (*version != kRunStateVersion)
    return "its comet-train fields have version " + std::to_string(*version) +
           "; this comet-train reads version " +
           std::to_string(kRunStateVersion);
  for (const RunSetting &s : settings) {
    RunSetting saved = s;
    bool found = false;
    if (s.kind == RunSetting::Int) {
      if (const int64_t *v = bag.findInt(s.property))
        found = true, saved.i = *v;
    } else if (s.kind == RunSetting::Float) {
      if (const float *v = bag.findFloat(s.property))
        found = true, saved.f = *v;
    } else if (const std::string *v = bag.findString(s.property)) {
      found = true, saved.s = *v;
    } else if (s.whenAbsent) {
      found = true, saved.s = *s.whenAbsent;
    }
    if (!found)
      return "it has no " + s.property + " property (" + s.flag + ")";
    bool same = s.kind == RunSetting::Int     ? saved.i == s.i
                : s.kind == RunSetting::Float ? saved.f == s.f
                                              : saved.s == s.s;
    if (!same)
      return "it was saved by a run with " + s.flag + " " + saved.shown() +
             ", this run has " + s.shown() + "; resuming would change the run";
  }
  auto needInt = [&](const char *name, int64_t &out) {
    const int64_t *v = bag.findInt(name);
    if (v)
      out = *v;
    return v != nullptr;
  };
  LoopPosition &at = state.position;
  int64_t seed = 0, counter = 0;
  for (auto [name, out] :
       {std::pair{kStep, &at.steps}, std::pair{kEpoch, &at.epoch},
        std::pair{kSamples, &at.samples}, std::pair{kRandomSeed, &seed},
        std::pair{kRandomCounter, &counter}})
    if (!needInt(name, *out))
      return std::string("it has no ") + name + " property";
  if (at.steps < 0 || at.epoch < 0 || at.samples < 0)
    return "its position (step " + std::to_string(at.steps) + ", epoch " +
           std::to_string(at.epoch) + ", sample " + std::to_string(at.samples) +
           ") is negative";
  state.randomSeed = static_cast<uint64_t>(seed);
  state.randomCounter = static_cast<uint64_t>(counter);

  RunResult &r = state.history;
  r = RunResult();
  const std::string *losses = bag.findString(kLosses);
  const std::string *evals = bag.findString(kEvals);
  const std::string *bounds = bag.findString(kBounds);
  if (!losses || !evals || !bounds)
    return "it lacks the run's history (comet.loss_history, "
           "comet.eval_history, comet.eb_history)";
  llvm::SmallVector<llvm::StringRef> items, fields;
  if (!losses->empty()) {
    llvm::StringRef(*losses).split(items, ',');
    for (llvm::StringRef item : items) {
      double v;
      if (!parseDouble(item, v))
        return "its comet.loss_history is malformed";
      r.losses.push_back(static_cast<float>(v));
    }
  }
  if (static_cast<int64_t>(r.losses.size()) != at.steps)
    return "its comet.loss_history holds " + std::to_string(r.losses.size()) +
           " losses for " + std::to_string(at.steps) + " steps";
  items.clear();
  if (!evals->empty()) {
    llvm::StringRef(*evals).split(items, ';');
    for (llvm::StringRef item : items) {
      fields.clear();
      item.split(fields, ' ');
      RunResult::Evaluation e;
      if (fields.size() != 4 || !parseInt(fields[0], e.step) ||
          !parseDouble(fields[1], e.epoch) ||
          !parseDouble(fields[2], e.accuracy) ||
          !parseDouble(fields[3], e.loss))
        return "its comet.eval_history is malformed";
      r.evalHistory.push_back(e);
    }
  }
  items.clear();
  if (!bounds->empty()) {
    llvm::StringRef(*bounds).split(items, ';');
    for (llvm::StringRef item : items) {
      fields.clear();
      item.split(fields, ' ');
      int64_t site, step;
      double eb;
      if (fields.size() != 3 || !parseInt(fields[0], site) ||
          !parseInt(fields[1], step) || !parseDouble(fields[2], eb))
        return "its comet.eb_history is malformed";
      r.ebHistory[site].push_back({step, eb});
    }
  }
  r.steps = at.steps;
  r.lastLoss = r.losses.empty() ? NAN : r.losses.back();
  const std::string *tuner = bag.findString(kTuner);
  state.tuner = tuner ? *tuner : "";
  return "";
}

std::string fileDigest(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return "";
  uint64_t h =
      llvm::xxh3_64bits(llvm::arrayRefFromStringRef((*buf)->getBuffer()));
  char out[17];
  snprintf(out, sizeof(out), "%016" PRIx64, h);
  return out;
}

} // namespace comet
