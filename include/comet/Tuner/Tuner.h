//===- Tuner.h - Re-tune error bounds from training statistics -*- C++ -*-===//
//
// BoundTuner keeps, for every lossy slot, the last `window` observations of
// the statistics COMET's and AC-GC's rules need, and turns their average
// into a new bound every `retuneInterval` steps. The rules themselves are
// comet::cometErrorBound / comet::acgcErrorBound (Analysis/ErrorBounds.h);
// this class only feeds them, takes the tightest consumer, and clamps.
// It knows nothing of the Engine: EngineTuner.h connects the two.
// docs/tuning.md describes the choices.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_TUNER_TUNER_H
#define COMET_TUNER_TUNER_H

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace comet {
namespace tuner {

/// Comet: sigma = k * mean|momentum|. Acgc: AC-GC's energy bound. Noise:
/// sigma = f * the std of the gradient's minibatch noise (COMET's error
/// model, the noise as the yardstick; docs/tuning.md).
enum class Rule { Comet, Acgc, Noise };

/// "comet" / "acgc" / "noise"; nullopt for anything else.
std::optional<Rule> parseRule(const std::string &name);
const char *ruleName(Rule r);

enum class ConsumerKind { Conv, Gemm, BatchNorm };

/// One op that forms a weight gradient from a slot's activation, as
/// compress-activations records it (the comet.tune attribute).
struct ConsumerInfo {
  ConsumerKind kind = ConsumerKind::Conv;
  /// N: products summed per weight-gradient element.
  double numTerms = 1;
  /// u: kernel area / product of strides (1 for Gemm and BatchNorm).
  double reuse = 1;
  /// Elements of the activation (N*C*H*W).
  double activationElements = 1;
  /// The parameter whose gradient this consumer forms ("" if unknown).
  std::string param;
};

struct SlotInfo {
  int64_t slot = -1;
  std::string value;
  /// The bound compiled in (kept until statistics arrive).
  double staticEb = 0;
  std::vector<ConsumerInfo> consumers;
};

/// What one stats step measured for one consumer. NaN: not measured.
struct ConsumerStats {
  double meanAbsGrad = NAN;      ///< Lbar = mean |dY|
  double rmsGrad = NAN;          ///< sqrt(mean dY^2)
  double gradNormSq = NAN;       ///< ||dY||^2
  double weightGradNormSq = NAN; ///< ||dW||^2 of the consumer's parameter
  double meanAbsMomentum = NAN;  ///< mean |optimizer first moment|
  double invStd = NAN;           ///< max_c inv_std (BatchNorm only)
  /// M = mean over the dW-sum terms of dY^2 * 1[X != 0] (estimated,
  /// comet/runtime/slot_stats.h).
  double maskedMoment = NAN;
  /// K: the coherent excess per dW element (equal X values share one codec
  /// error; comet/runtime/slot_stats.h). 0 when X has no groups.
  double coherentExcess = NAN;
  /// The minibatch noise of the parameter's gradient: the mean over its
  /// elements of (g_t - g_{t-1})^2 / 2, g_t and g_{t-1} the gradients of a
  /// stats step and of the step before it (two batches at nearly the same
  /// weights: E = the variance over batches, plus the drift of one step).
  double gradNoiseVar = NAN;
};

/// One stats step of one slot.
struct SlotStats {
  int64_t step = 0;
  double nonZero = NAN; ///< R of the activation
  double ratio = NAN;   ///< achieved compression ratio of the slot
  std::vector<ConsumerStats> consumers;
};

/// The gradient magnitude in COMET's sigma = a * eb * G * sqrt(N * R).
/// The error of a weight-gradient element is a sum of e_i * dY_i over the
/// N * R non-zero positions, so its std is a * eb * RMS(dY) * sqrt(N * R):
/// G is the RMS of dY. The paper uses Lbar = mean |dY|, which under-predicts
/// the error wherever dY is sparse (measured 2.4-12.6x on the fixtures,
/// docs/error-bounds.md). RMS still assumes X's non-zeros are independent
/// of where dY is large; `masked` (the default) replaces N * G^2 * R by
/// N * M + K (cometErrorBoundMasked): the measured masked second moment M
/// drops that assumption, and the coherent excess K the one that errors are
/// independent (equal X values share one). BatchNorm consumers (dense X)
/// use RMS under `masked`.
enum class GradMagnitude { Rms, MeanAbs, Masked };
/// "rms" / "lbar" / "masked"; nullopt for anything else.
std::optional<GradMagnitude> parseGradMagnitude(const std::string &name);
const char *gradMagnitudeName(GradMagnitude g);

struct TunerOptions {
  Rule rule = Rule::Comet;
  /// COMET: which statistic of dY stands for the gradient magnitude.
  GradMagnitude gradMagnitude = GradMagnitude::Masked;
  /// COMET: sigma = k * mean|momentum|.
  double sigmaFactor = 0.01;
  /// AC-GC: e.
  double acgcEnergy = 0.01;
  /// Noise: sigma = noiseFraction * the std of the gradient's minibatch
  /// noise.
  double noiseFraction = 0.1;
  /// Re-tune after every `retuneInterval` steps (-1: the rule's default,
  /// COMET 1000, AC-GC and noise 100).
  int64_t retuneInterval = -1;
  /// Collect statistics every `statsInterval` steps (-1: retuneInterval /
  /// window, at least 1, so a window spans one retune interval).
  int64_t statsInterval = -1;
  /// Observations averaged per retune (AC-GC: the last 10).
  int64_t window = 10;
  /// Absolute clamp of every bound.
  double minEb = 1e-7, maxEb = 1e-1;
  /// When > 0, also clamp to [static / f, static * f].
  double relativeRange = 0;
  /// One bound per channel for slots that only BatchNorm reads: channel c
  /// at eb * max(inv_std) / inv_std_c, the same error in every channel's
  /// xhat (the CPU codec's per-channel streams; CUDA keeps one bound).
  bool channelBounds = false;
};

/// "" or what is wrong with `o` (a sentence naming the option flag).
std::string validate(const TunerOptions &o);
/// Fills retuneInterval and statsInterval defaults.
TunerOptions withDefaults(TunerOptions o);

/// The statistics averaged over a window (NaN where none was measured).
struct AveragedStats {
  double nonZero = NAN, ratio = NAN;
  std::vector<ConsumerStats> consumers;
  int64_t count = 0;
};

/// Whether the masked rule (sigma / (a sqrt(N M + K))) can use `s` for
/// consumer `c`: always for Conv and Gemm; for BatchNorm only with M and K
/// measured (else its rule falls back to RMS(dY) with R = 1).
bool maskedStatsUsable(const ConsumerInfo &c, const ConsumerStats &s);

/// The bound the rule gives one consumer from averaged statistics, before
/// clamping; 0 when a statistic it needs is missing. nonZero is the slot's.
double consumerBound(const TunerOptions &o, const ConsumerInfo &c,
                     const ConsumerStats &s, double nonZero);

/// The weight-gradient error std that COMET's error model (the one
/// consumerBound uses for `o.gradMagnitude`) predicts at bound `eb`; 0 when
/// a statistic it needs is missing.
double predictedErrorStd(const TunerOptions &o, const ConsumerInfo &c,
                         const ConsumerStats &s, double nonZero, double eb);

/// The most values a gradient sketch holds.
constexpr int64_t kMaxSketchSize = 1024;

/// A count sketch of a gradient of n elements: bucket b holds the sum of
/// +-g_i over the elements a fixed hash sends to it (with a fixed sign per
/// element), so that for two gradients of one parameter
/// ||S(g) - S(h)||^2 is an unbiased estimate of ||g - h||^2 with a relative
/// error of about sqrt(2 / kMaxSketchSize) when no few elements dominate.
/// A gradient of at most kMaxSketchSize elements is kept as it is (exact).
std::vector<double> gradientSketch(const float *g, size_t n);
/// The minibatch noise from the sketches of two batches' gradients of n
/// elements: ||S(g) - S(h)||^2 / (2 n), an estimate of the mean over the
/// elements of the gradient's variance over batches. NaN when the sketches
/// differ in size or n is 0.
double sketchedNoiseVariance(const std::vector<double> &a,
                             const std::vector<double> &b, size_t n);

struct HistoryPoint {
  int64_t step; ///< steps completed when the value took effect / was seen
  double value;
};

class BoundTuner {
public:
  BoundTuner(TunerOptions options, std::vector<SlotInfo> slots);

  const TunerOptions &options() const { return opts; }
  const std::vector<SlotInfo> &slots() const { return infos; }

  /// Whether statistics are collected during step `step` (0-based).
  bool isStatsStep(int64_t step) const;
  /// Whether to re-tune after step `step` (0-based) has run.
  bool isRetuneStep(int64_t step) const;

  /// Adds an observation of `slot` (unknown slots are ignored).
  void observe(int64_t slot, SlotStats s);

  /// The mean of the last `window` observations of a slot.
  AveragedStats averaged(int64_t slot) const;

  /// Computes every slot's bound from its window. A slot without usable
  /// statistics keeps its current bound. Records the history with
  /// `stepsDone`, and returns the bounds that changed.
  std::map<int64_t, double> retune(int64_t stepsDone);

  /// The bound now in force (the static one until the first retune).
  double currentEb(int64_t slot) const;
  /// The rule's unclamped bound from the averaged window (0 if none).
  double ruleEb(int64_t slot) const;
  const std::vector<HistoryPoint> &ebHistory(int64_t slot) const;
  const std::vector<HistoryPoint> &ratioHistory(int64_t slot) const;
  int64_t numRetunes() const { return retunes; }

  /// Sketches of the consumers' weight gradients (EngineTuner::afterStep
  /// takes them after the step before a stats step), keyed by (slot,
  /// consumer), with the steps completed when they were taken: the first
  /// batch of the next stats step's noise estimate. Part of the saved
  /// state, so that a run resumed between the two steps measures the same.
  using SketchKey = std::pair<int64_t, int64_t>;
  void setGradientSketches(int64_t stepsDone,
                           std::map<SketchKey, std::vector<double>> sketches);
  /// The sketch of (slot, consumer) taken after `stepsDone` steps, or null.
  const std::vector<double> *gradientSketch(int64_t slot, int64_t consumer,
                                            int64_t stepsDone) const;

  // ---- checkpoints ----
  /// The tuner's state as text, for a checkpoint: every slot's bound in
  /// force, its statistics window and histories, the retune count and the
  /// gradient sketches, doubles as hexadecimal floats (exact).
  std::string saveState() const;
  /// Takes back saveState()'s text. The slots (ids, consumers) must be
  /// this tuner's. Returns "" or what is wrong (nothing changes then).
  std::string restoreState(const std::string &text);

private:
  struct State {
    SlotInfo info;
    std::vector<SlotStats> window;
    double eb;
    std::vector<HistoryPoint> ebHist, ratioHist;
  };
  double clamp(const State &s, double eb) const;
  const State *find(int64_t slot) const;

  TunerOptions opts;
  std::vector<SlotInfo> infos;
  std::map<int64_t, State> states;
  int64_t retunes = 0;
  int64_t sketchStep = -1;
  std::map<SketchKey, std::vector<double>> sketches;
};

} // namespace tuner
} // namespace comet

#endif // COMET_TUNER_TUNER_H
