//===- Tuner.cpp - Re-tune error bounds from training statistics ----------===//
#include "comet/Tuner/Tuner.h"
#include "comet/Analysis/ErrorBounds.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace comet;
using namespace comet::tuner;

std::optional<GradMagnitude>
tuner::parseGradMagnitude(const std::string &name) {
  if (name == "rms")
    return GradMagnitude::Rms;
  if (name == "lbar")
    return GradMagnitude::MeanAbs;
  if (name == "masked")
    return GradMagnitude::Masked;
  return std::nullopt;
}

const char *tuner::gradMagnitudeName(GradMagnitude g) {
  switch (g) {
  case GradMagnitude::Rms:
    return "rms";
  case GradMagnitude::MeanAbs:
    return "lbar";
  case GradMagnitude::Masked:
    return "masked";
  }
  return "masked";
}

std::optional<Rule> tuner::parseRule(const std::string &name) {
  if (name == "comet")
    return Rule::Comet;
  if (name == "acgc")
    return Rule::Acgc;
  if (name == "noise")
    return Rule::Noise;
  return std::nullopt;
}

const char *tuner::ruleName(Rule r) {
  switch (r) {
  case Rule::Comet:
    return "comet";
  case Rule::Acgc:
    return "acgc";
  case Rule::Noise:
    return "noise";
  }
  return "comet";
}

static bool positiveFinite(double x) { return std::isfinite(x) && x > 0; }

std::string tuner::validate(const TunerOptions &o) {
  if (!positiveFinite(o.sigmaFactor))
    return "--bound-k must be positive and finite, got " +
           std::to_string(o.sigmaFactor);
  if (!positiveFinite(o.acgcEnergy))
    return "--acgc-e must be positive and finite, got " +
           std::to_string(o.acgcEnergy);
  if (!positiveFinite(o.noiseFraction))
    return "--noise-fraction must be positive and finite, got " +
           std::to_string(o.noiseFraction);
  if (o.retuneInterval == 0 || o.retuneInterval < -1)
    return "--retune-interval must be a positive number of steps, got " +
           std::to_string(o.retuneInterval);
  if (o.statsInterval == 0 || o.statsInterval < -1)
    return "--stats-interval must be positive, got " +
           std::to_string(o.statsInterval);
  if (o.window < 1)
    return "--stats-window must be at least 1, got " + std::to_string(o.window);
  if (!positiveFinite(o.minEb) || !positiveFinite(o.maxEb) || o.minEb > o.maxEb)
    return "--eb-min and --eb-max must be positive with eb-min <= eb-max";
  if (o.relativeRange < 0 || (o.relativeRange > 0 && o.relativeRange < 1) ||
      !std::isfinite(o.relativeRange))
    return "--eb-relative-range must be 0 (off) or at least 1, got " +
           std::to_string(o.relativeRange);
  return "";
}

TunerOptions tuner::withDefaults(TunerOptions o) {
  if (o.retuneInterval <= 0)
    o.retuneInterval = o.rule == Rule::Comet ? 1000 : 100;
  if (o.statsInterval <= 0)
    o.statsInterval = std::max<int64_t>(1, o.retuneInterval / o.window);
  return o;
}

// For BatchNorm, M and K are what the runtime measures for its scale
// gradient (dense X: M is nearly the mean dY^2; K over the (c, c) pairs).
bool tuner::maskedStatsUsable(const ConsumerInfo &c, const ConsumerStats &s) {
  return c.kind != ConsumerKind::BatchNorm ||
         (positiveFinite(s.maskedMoment) && std::isfinite(s.coherentExcess));
}

double tuner::consumerBound(const TunerOptions &o, const ConsumerInfo &c,
                            const ConsumerStats &s, double nonZero) {
  // An error in a BatchNorm input reaches xhat scaled by inv_std, and BN
  // inputs are dense (docs/error-bounds.md); the tightest channel decides.
  double gain = 1;
  if (c.kind == ConsumerKind::BatchNorm) {
    if (!positiveFinite(s.invStd))
      return 0;
    gain = s.invStd;
    nonZero = 1;
  }
  // COMET's and the noise rule share the error model and differ in the
  // target sigma of the weight-gradient error.
  double sigma = o.rule == Rule::Noise
                     ? noiseTargetSigma(o.noiseFraction, s.gradNoiseVar)
                     : o.sigmaFactor * s.meanAbsMomentum;
  double eb;
  if (o.rule != Rule::Acgc && o.gradMagnitude == GradMagnitude::Masked &&
      maskedStatsUsable(c, s)) {
    eb = cometErrorBoundMasked(
        sigma, kUniformStdFactor, c.numTerms, s.maskedMoment,
        std::isfinite(s.coherentExcess) ? s.coherentExcess : 0);
  } else if (o.rule != Rule::Acgc) {
    CometBoundParams p;
    p.numTerms = c.numTerms;
    p.nonZeroFraction = std::min(1.0, nonZero);
    p.meanAbsGrad =
        o.gradMagnitude == GradMagnitude::MeanAbs ? s.meanAbsGrad : s.rmsGrad;
    p.meanAbsMomentum = sigma; // sigma itself: k = 1
    p.sigmaFactor = 1;
    eb = cometErrorBound(p); // 0 when a statistic is missing (NaN)
  } else {
    AcgcBoundParams p;
    p.energyFraction = o.acgcEnergy;
    p.weightGradNormSq = s.weightGradNormSq;
    p.outputGradNormSq = s.gradNormSq;
    p.activationElements = c.activationElements;
    p.reuse = c.reuse > 0 ? c.reuse : 1;
    eb = acgcErrorBound(p);
  }
  return eb > 0 ? eb / gain : 0;
}

double tuner::predictedErrorStd(const TunerOptions &o, const ConsumerInfo &c,
                                const ConsumerStats &s, double nonZero,
                                double eb) {
  if (c.kind == ConsumerKind::BatchNorm) {
    if (!positiveFinite(s.invStd))
      return 0;
    eb *= s.invStd;
    nonZero = 1;
  }
  double sd;
  if (o.gradMagnitude == GradMagnitude::Masked && maskedStatsUsable(c, s)) {
    sd = cometPredictedGradStdMasked(
        eb, kUniformStdFactor, c.numTerms, s.maskedMoment,
        std::isfinite(s.coherentExcess) ? s.coherentExcess : 0);
  } else {
    CometBoundParams p;
    p.numTerms = c.numTerms;
    p.nonZeroFraction = std::min(1.0, nonZero);
    p.meanAbsGrad =
        o.gradMagnitude == GradMagnitude::MeanAbs ? s.meanAbsGrad : s.rmsGrad;
    sd = cometPredictedGradStd(eb, p);
  }
  return positiveFinite(sd) ? sd : 0;
}

/// splitmix64's finalizer: the bucket and sign of an element's index.
static uint64_t mixIndex(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::vector<double> tuner::gradientSketch(const float *g, size_t n) {
  const size_t buckets = kMaxSketchSize;
  if (n <= buckets)
    return std::vector<double>(g, g + n);
  std::vector<double> s(buckets, 0.0);
  for (size_t i = 0; i < n; ++i) {
    uint64_t h = mixIndex(i);
    s[h % buckets] += (h >> 63) ? -double(g[i]) : double(g[i]);
  }
  return s;
}

double tuner::sketchedNoiseVariance(const std::vector<double> &a,
                                    const std::vector<double> &b, size_t n) {
  if (a.size() != b.size() || n == 0)
    return NAN;
  double sq = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sq += (a[i] - b[i]) * (a[i] - b[i]);
  // E[(g_A - g_B)^2] = 2 Var[g] for two independent batches.
  return sq / (2.0 * double(n));
}

BoundTuner::BoundTuner(TunerOptions options, std::vector<SlotInfo> slots)
    : opts(withDefaults(options)), infos(std::move(slots)) {
  for (const SlotInfo &i : infos) {
    State s{i, {}, i.staticEb, {}, {}};
    s.ebHist.push_back({0, i.staticEb});
    states.emplace(i.slot, std::move(s));
  }
}

bool BoundTuner::isStatsStep(int64_t step) const {
  return step >= 0 && step % opts.statsInterval == 0;
}

bool BoundTuner::isRetuneStep(int64_t step) const {
  return step >= 0 && (step + 1) % opts.retuneInterval == 0;
}

const BoundTuner::State *BoundTuner::find(int64_t slot) const {
  auto it = states.find(slot);
  return it == states.end() ? nullptr : &it->second;
}

void BoundTuner::observe(int64_t slot, SlotStats s) {
  auto it = states.find(slot);
  if (it == states.end())
    return;
  State &st = it->second;
  if (std::isfinite(s.ratio))
    st.ratioHist.push_back({s.step, s.ratio});
  st.window.push_back(std::move(s));
  if (static_cast<int64_t>(st.window.size()) > opts.window)
    st.window.erase(st.window.begin());
}

namespace {
/// Running mean of the finite values.
struct Mean {
  double sum = 0;
  int64_t n = 0;
  void add(double v) {
    if (std::isfinite(v)) {
      sum += v;
      ++n;
    }
  }
  double get() const { return n ? sum / n : NAN; }
};
} // namespace

AveragedStats BoundTuner::averaged(int64_t slot) const {
  AveragedStats a;
  const State *st = find(slot);
  if (!st)
    return a;
  size_t nc = st->info.consumers.size();
  Mean r, ratio;
  std::vector<Mean> lbar(nc), rms(nc), gy(nc), gw(nc), mom(nc), inv(nc),
      masked(nc), coherent(nc), noise(nc);
  for (const SlotStats &s : st->window) {
    r.add(s.nonZero);
    ratio.add(s.ratio);
    for (size_t c = 0; c < nc && c < s.consumers.size(); ++c) {
      const ConsumerStats &cs = s.consumers[c];
      lbar[c].add(cs.meanAbsGrad);
      rms[c].add(cs.rmsGrad);
      gy[c].add(cs.gradNormSq);
      gw[c].add(cs.weightGradNormSq);
      mom[c].add(cs.meanAbsMomentum);
      inv[c].add(cs.invStd);
      masked[c].add(cs.maskedMoment);
      coherent[c].add(cs.coherentExcess);
      noise[c].add(cs.gradNoiseVar);
    }
  }
  a.count = static_cast<int64_t>(st->window.size());
  a.nonZero = r.get();
  a.ratio = ratio.get();
  for (size_t c = 0; c < nc; ++c)
    a.consumers.push_back({lbar[c].get(), rms[c].get(), gy[c].get(),
                           gw[c].get(), mom[c].get(), inv[c].get(),
                           masked[c].get(), coherent[c].get(), noise[c].get()});
  return a;
}

double BoundTuner::ruleEb(int64_t slot) const {
  const State *st = find(slot);
  if (!st || st->window.empty())
    return 0;
  AveragedStats a = averaged(slot);
  double eb = 0;
  for (size_t c = 0; c < st->info.consumers.size(); ++c) {
    double e =
        consumerBound(opts, st->info.consumers[c], a.consumers[c], a.nonZero);
    if (e > 0 && (eb == 0 || e < eb))
      eb = e; // the tightest consumer decides, as in the static pass
  }
  return eb;
}

double BoundTuner::clamp(const State &s, double eb) const {
  double lo = opts.minEb, hi = opts.maxEb;
  if (opts.relativeRange > 0 && s.info.staticEb > 0) {
    lo = std::max(lo, s.info.staticEb / opts.relativeRange);
    hi = std::min(hi, s.info.staticEb * opts.relativeRange);
  }
  if (lo > hi) // the two ranges do not meet: the absolute one wins
    lo = opts.minEb, hi = opts.maxEb;
  return std::clamp(eb, lo, hi);
}

std::map<int64_t, double> BoundTuner::retune(int64_t stepsDone) {
  std::map<int64_t, double> changed;
  ++retunes;
  for (auto &[slot, st] : states) {
    double eb = ruleEb(slot);
    if (!(eb > 0))
      continue; // no statistics yet: keep the bound in force
    eb = clamp(st, eb);
    if (eb != st.eb) {
      st.eb = eb;
      st.ebHist.push_back({stepsDone, eb});
      changed[slot] = eb;
    }
  }
  return changed;
}

double BoundTuner::currentEb(int64_t slot) const {
  const State *st = find(slot);
  return st ? st->eb : 0;
}

void BoundTuner::setGradientSketches(
    int64_t stepsDone, std::map<SketchKey, std::vector<double>> s) {
  sketchStep = stepsDone;
  sketches = std::move(s);
}

const std::vector<double> *BoundTuner::gradientSketch(int64_t slot,
                                                      int64_t consumer,
                                                      int64_t stepsDone) const {
  if (stepsDone != sketchStep)
    return nullptr;
  auto it = sketches.find({slot, consumer});
  return it == sketches.end() ? nullptr : &it->second;
}

const std::vector<HistoryPoint> &BoundTuner::ebHistory(int64_t slot) const {
  static const std::vector<HistoryPoint> none;
  const State *st = find(slot);
  return st ? st->ebHist : none;
}

const std::vector<HistoryPoint> &BoundTuner::ratioHistory(int64_t slot) const {
  static const std::vector<HistoryPoint> none;
  const State *st = find(slot);
  return st ? st->ratioHist : none;
}

// ---- checkpoints ----
//
// The text: "comet-tuner 2 <retunes> <slots>", then per slot
// "slot <id> <consumers> <eb> <window> <eb history> <ratio history>",
// each window entry "<step> <nonZero> <ratio>" and 9 numbers per consumer
// (version 1, written before the gradient noise was measured: 8, the noise
// NaN), each history point "<step> <value>"; then (version 2)
// "sketches <step> <count>" and per sketch "<slot> <consumer> <size>" and
// its values. Whitespace separates the tokens.

namespace {

void putDouble(std::string &out, double v) {
  char buf[40];
  snprintf(buf, sizeof(buf), " %a", v);
  out += buf;
}

void putInt(std::string &out, int64_t v) { out += " " + std::to_string(v); }

/// Tokens of saveState()'s text, read in order.
class Reader {
public:
  explicit Reader(const std::string &text) : text(text) {}
  bool word(std::string &w) {
    while (pos < text.size() && std::isspace((unsigned char)text[pos]))
      ++pos;
    size_t start = pos;
    while (pos < text.size() && !std::isspace((unsigned char)text[pos]))
      ++pos;
    w = text.substr(start, pos - start);
    return !w.empty();
  }
  bool integer(int64_t &v) {
    std::string w;
    if (!word(w))
      return false;
    char *end = nullptr;
    errno = 0;
    v = std::strtoll(w.c_str(), &end, 10);
    return errno == 0 && end && *end == '\0';
  }
  bool real(double &v) {
    std::string w;
    if (!word(w))
      return false;
    char *end = nullptr;
    v = std::strtod(w.c_str(), &end);
    return end && *end == '\0';
  }
  bool atEnd() {
    std::string w;
    return !word(w);
  }

private:
  const std::string &text;
  size_t pos = 0;
};

} // namespace

std::string BoundTuner::saveState() const {
  std::string out = "comet-tuner 2";
  putInt(out, retunes);
  putInt(out, static_cast<int64_t>(states.size()));
  for (const auto &[slot, st] : states) {
    out += "\nslot";
    putInt(out, slot);
    putInt(out, static_cast<int64_t>(st.info.consumers.size()));
    putDouble(out, st.eb);
    putInt(out, static_cast<int64_t>(st.window.size()));
    putInt(out, static_cast<int64_t>(st.ebHist.size()));
    putInt(out, static_cast<int64_t>(st.ratioHist.size()));
    for (const SlotStats &s : st.window) {
      out += "\n";
      putInt(out, s.step);
      putDouble(out, s.nonZero);
      putDouble(out, s.ratio);
      putInt(out, static_cast<int64_t>(s.consumers.size()));
      for (const ConsumerStats &c : s.consumers)
        for (double v : {c.meanAbsGrad, c.rmsGrad, c.gradNormSq,
                         c.weightGradNormSq, c.meanAbsMomentum, c.invStd,
                         c.maskedMoment, c.coherentExcess, c.gradNoiseVar})
          putDouble(out, v);
    }
    for (const auto *hist : {&st.ebHist, &st.ratioHist}) {
      out += "\n";
      for (const HistoryPoint &h : *hist) {
        putInt(out, h.step);
        putDouble(out, h.value);
      }
    }
  }
  out += "\nsketches";
  putInt(out, sketchStep);
  putInt(out, static_cast<int64_t>(sketches.size()));
  for (const auto &[key, values] : sketches) {
    out += "\n";
    putInt(out, key.first);
    putInt(out, key.second);
    putInt(out, static_cast<int64_t>(values.size()));
    for (double v : values)
      putDouble(out, v);
  }
  return out + "\n";
}

std::string BoundTuner::restoreState(const std::string &text) {
  Reader in(text);
  std::string w;
  int64_t version = 0, numRetunes = 0, numSlots = 0;
  const std::string bad = "the bound tuner's saved state is malformed";
  if (!in.word(w) || w != "comet-tuner" || !in.integer(version))
    return bad;
  if (version != 1 && version != 2)
    return "the bound tuner's saved state has version " +
           std::to_string(version) + "; this build reads versions 1 and 2";
  if (!in.integer(numRetunes) || !in.integer(numSlots) || numRetunes < 0)
    return bad;
  if (numSlots != static_cast<int64_t>(states.size()))
    return "the bound tuner's saved state has " + std::to_string(numSlots) +
           " slots, this run " + std::to_string(states.size());
  std::map<int64_t, State> restored;
  for (int64_t i = 0; i < numSlots; ++i) {
    int64_t slot, consumers, window, ebs, ratios;
    double eb;
    if (!in.word(w) || w != "slot" || !in.integer(slot) ||
        !in.integer(consumers) || !in.real(eb) || !in.integer(window) ||
        !in.integer(ebs) || !in.integer(ratios) || window < 0 || ebs < 0 ||
        ratios < 0)
      return bad;
    auto it = states.find(slot);
    if (it == states.end() ||
        consumers != static_cast<int64_t>(it->second.info.consumers.size()))
      return "the bound tuner's saved slot " + std::to_string(slot) +
             " is not one of this run's (or has other consumers)";
    State st = it->second;
    st.eb = eb;
    st.window.clear();
    st.ebHist.clear();
    st.ratioHist.clear();
    for (int64_t k = 0; k < window; ++k) {
      SlotStats s;
      int64_t nc;
      if (!in.integer(s.step) || !in.real(s.nonZero) || !in.real(s.ratio) ||
          !in.integer(nc) || nc < 0 || nc > consumers)
        return bad;
      for (int64_t c = 0; c < nc; ++c) {
        ConsumerStats cs;
        for (double *v : {&cs.meanAbsGrad, &cs.rmsGrad, &cs.gradNormSq,
                          &cs.weightGradNormSq, &cs.meanAbsMomentum, &cs.invStd,
                          &cs.maskedMoment, &cs.coherentExcess})
          if (!in.real(*v))
            return bad;
        if (version >= 2 && !in.real(cs.gradNoiseVar))
          return bad;
        s.consumers.push_back(cs);
      }
      st.window.push_back(std::move(s));
    }
    for (auto [hist, n] :
         {std::pair{&st.ebHist, ebs}, std::pair{&st.ratioHist, ratios}})
      for (int64_t k = 0; k < n; ++k) {
        HistoryPoint h;
        if (!in.integer(h.step) || !in.real(h.value))
          return bad;
        hist->push_back(h);
      }
    if (!restored.emplace(slot, std::move(st)).second)
      return "the bound tuner's saved state lists slot " +
             std::to_string(slot) + " twice";
  }
  int64_t newSketchStep = -1;
  std::map<SketchKey, std::vector<double>> newSketches;
  if (version >= 2) {
    int64_t count;
    if (!in.word(w) || w != "sketches" || !in.integer(newSketchStep) ||
        !in.integer(count) || count < 0)
      return bad;
    for (int64_t k = 0; k < count; ++k) {
      int64_t slot, consumer, size;
      if (!in.integer(slot) || !in.integer(consumer) || !in.integer(size) ||
          size < 0 || size > kMaxSketchSize || !restored.count(slot))
        return bad;
      std::vector<double> values(static_cast<size_t>(size));
      for (double &v : values)
        if (!in.real(v))
          return bad;
      newSketches[{slot, consumer}] = std::move(values);
    }
  }
  if (!in.atEnd())
    return bad;
  states = std::move(restored);
  retunes = numRetunes;
  sketchStep = newSketchStep;
  sketches = std::move(newSketches);
  return "";
}
