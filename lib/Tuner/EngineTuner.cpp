//===- EngineTuner.cpp - Re-tune a comet::Engine's slots while training ---===//
#include "comet/Tuner/EngineTuner.h"
#include "comet/Analysis/ErrorBounds.h"
#include "comet/runtime/context.h"
#include "comet/runtime/handles.h"
#include "comet/runtime/slot_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace comet;
using namespace comet::tuner;
using llvm::Error;
using llvm::Expected;

static Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The lossy slots of an engine, with the site each is compressed at.
static std::vector<SlotInfo> slotsOf(const EngineStats &st,
                                     std::map<int64_t, int64_t> *siteOfSlot) {
  std::vector<SlotInfo> out;
  for (auto [i, s] : llvm::enumerate(st.sites)) {
    if (s.slot < 0 || s.codec != "sz" || s.consumers.empty())
      continue;
    SlotInfo info;
    info.slot = s.slot;
    info.value = s.value;
    info.staticEb = s.eb;
    for (const SlotConsumer &c : s.consumers) {
      ConsumerInfo ci;
      ci.kind = c.kind == "batchnorm" ? ConsumerKind::BatchNorm
                : c.kind == "gemm"    ? ConsumerKind::Gemm
                                      : ConsumerKind::Conv;
      ci.numTerms = c.numTerms;
      ci.reuse = c.reuse;
      ci.activationElements = c.activationElements;
      ci.param = c.param;
      info.consumers.push_back(std::move(ci));
    }
    if (siteOfSlot)
      (*siteOfSlot)[s.slot] = static_cast<int64_t>(i);
    out.push_back(std::move(info));
  }
  return out;
}

/// The slots' statistics come from the training graph's slot_observe_*
/// calls, which an engine compiles with CompressMode::Adaptive or
/// EngineOptions::tunerStatistics only.
static Error needStatistics(Engine &engine, const std::vector<SlotInfo> &slots,
                            const char *who) {
  const std::vector<std::string> &entries =
      engine.trainer().trainEntry().runtimeEntries;
  // Both read each step's weight gradients.
  if (!slots.empty() && engine.trainer().optimizerFused())
    return err(llvm::Twine(who) +
               ": the engine's step applies the optimizer and keeps no "
               "gradient; compile it without EngineOptions::fuseOptimizer");
  if (slots.empty() || llvm::is_contained(entries, "slot_observe_act"))
    return Error::success();
  return err(llvm::Twine(who) +
             ": the engine's training graph does not gather the bound "
             "tuner's statistics; compile it with CompressMode::Adaptive or "
             "EngineOptions::tunerStatistics");
}

/// Only the masked COMET rule reads a BatchNorm consumer's M and K: a slot
/// that only BatchNorm reads skips their per-element work on stats steps
/// under the other rules.
static bool needsMoments(const SlotInfo &s, const TunerOptions &o) {
  if (o.rule == Rule::Comet && o.gradMagnitude == GradMagnitude::Masked)
    return true;
  return llvm::any_of(s.consumers, [](const ConsumerInfo &c) {
    return c.kind != ConsumerKind::BatchNorm;
  });
}

/// BatchNorm's scale gradient pairs each X channel with its own dY channel:
/// the runtime's K for it sums the (c, c) pairs.
static void setDiagonal(comet_rt_context *ctx, const SlotInfo &s) {
  for (auto [i, c] : llvm::enumerate(s.consumers))
    comet_rt_slot_set_diagonal(ctx, s.slot, static_cast<int64_t>(i),
                               c.kind == ConsumerKind::BatchNorm);
}

Expected<std::unique_ptr<EngineTuner>>
EngineTuner::create(Engine &engine, const TunerOptions &options) {
  std::string why = validate(options);
  if (!why.empty())
    return err(why);
  std::map<int64_t, int64_t> sites;
  std::vector<SlotInfo> slots = slotsOf(engine.stats(), &sites);
  if (Error e = needStatistics(engine, slots, "the bound tuner"))
    return std::move(e);
  for (const SlotInfo &s : slots) {
    if (s.staticEb > 0 &&
        comet_rt_slot_set_eb(engine.runtimeContext(), s.slot, s.staticEb) != 0)
      return err("cannot set the bound of slot " + llvm::Twine(s.slot));
    comet_rt_slot_set_moments(engine.runtimeContext(), s.slot,
                              needsMoments(s, options));
    setDiagonal(engine.runtimeContext(), s);
  }
  std::unique_ptr<EngineTuner> t(
      new EngineTuner(engine, BoundTuner(options, std::move(slots))));
  t->siteOfSlot = std::move(sites);
  return std::move(t);
}

void EngineTuner::beforeStep(int64_t step) {
  collecting = bt.isStatsStep(step) && !bt.slots().empty();
  if (collecting) {
    comet_rt_slot_observations_clear(engine.runtimeContext());
    comet_rt_slot_stats_enable(engine.runtimeContext(), 1);
  }
}

/// R of an observation's activation (NaN if none was observed).
static double nonZeroOf(const comet_rt_slot_observation &o) {
  return o.act_elements > 0 ? double(o.act_nonzero) / double(o.act_elements)
                            : NAN;
}

/// The dY statistics of one observation (NaN where nothing was observed).
static ConsumerStats gradStatsOf(const comet_rt_slot_observation &o) {
  ConsumerStats cs;
  if (o.grad_elements > 0) {
    cs.meanAbsGrad = o.grad_abs_sum / double(o.grad_elements);
    cs.rmsGrad = std::sqrt(o.grad_sq_sum / double(o.grad_elements));
    cs.gradNormSq = o.grad_sq_sum;
  }
  if (o.grad_masked_elements > 0) {
    cs.maskedMoment = o.grad_masked_sq_sum / double(o.grad_masked_elements);
    cs.coherentExcess = o.grad_coherent_pairs > 0
                            ? o.grad_coherent_sum / o.grad_coherent_pairs
                            : 0;
  }
  if (std::isfinite(o.aux_max))
    cs.invStd = o.aux_max;
  return cs;
}

static double orZero(double v) { return std::isfinite(v) ? v : 0; }

SlotStats EngineTuner::collect(const SlotInfo &info, int64_t step) const {
  SlotStats s;
  s.step = step;
  comet_rt_slot_observation o;
  for (size_t c = 0; c < info.consumers.size(); ++c) {
    comet_rt_slot_get_observation(engine.runtimeContext(), info.slot,
                                  static_cast<int64_t>(c), &o);
    if (c == 0)
      s.nonZero = nonZeroOf(o);
    ConsumerStats cs = gradStatsOf(o);
    const std::string &p = info.consumers[c].param;
    if (!p.empty()) {
      llvm::ArrayRef<float> g = engine.gradient(p);
      // The minibatch noise: this step's gradient against the previous
      // step's, two batches at nearly the same weights.
      if (const std::vector<double> *prev =
              bt.gradientSketch(info.slot, static_cast<int64_t>(c), step - 1);
          prev && !g.empty()) {
        cs.gradNoiseVar = sketchedNoiseVariance(
            gradientSketch(g.data(), g.size()), *prev, g.size());
      }
      if (!g.empty()) {
        double sq = 0, abs = 0;
        for (float v : g) {
          sq += double(v) * v;
          abs += std::fabs(v);
        }
        cs.weightGradNormSq = sq;
        // Without optimizer state (plain SGD) the update direction is the
        // gradient itself.
        cs.meanAbsMomentum = abs / g.size();
      }
      llvm::ArrayRef<float> m = engine.optimizerState(p);
      if (!m.empty()) {
        double abs = 0;
        for (float v : m)
          abs += std::fabs(v);
        cs.meanAbsMomentum = abs / m.size();
      }
    }
    s.consumers.push_back(cs);
  }
  auto it = siteOfSlot.find(info.slot);
  comet_rt_site_stats rs;
  if (it != siteOfSlot.end() &&
      comet_rt_site_get_stats(engine.runtimeContext(), it->second, &rs) == 0 &&
      rs.last_bytes_out > 0)
    s.ratio = double(rs.last_bytes_in) / double(rs.last_bytes_out);
  return s;
}

void EngineTuner::setChannelScales(const SlotInfo &info) const {
  if (!bt.options().channelBounds || info.consumers.empty() ||
      !llvm::all_of(info.consumers, [](const ConsumerInfo &c) {
        return c.kind == ConsumerKind::BatchNorm;
      }))
    return;
  // Each channel's largest 1/std over the slot's BatchNorm readers.
  comet_rt_context *ctx = engine.runtimeContext();
  std::vector<double> inv;
  for (size_t c = 0; c < info.consumers.size(); ++c) {
    int64_t n = comet_rt_slot_get_aux_channels(
        ctx, info.slot, static_cast<int64_t>(c), nullptr, 0);
    if (n <= 0 || (!inv.empty() && n != int64_t(inv.size())))
      return;
    std::vector<double> v(n);
    comet_rt_slot_get_aux_channels(ctx, info.slot, static_cast<int64_t>(c),
                                   v.data(), n);
    if (inv.empty())
      inv = std::move(v);
    else
      for (int64_t i = 0; i < n; ++i)
        inv[i] = std::max(inv[i], v[i]);
  }
  double mx = 0;
  for (double v : inv)
    if (std::isfinite(v))
      mx = std::max(mx, v);
  if (!(mx > 0))
    return;
  // Channel c's xhat error at its bound eb * mx / inv_c is the slot's
  // bound times mx, as the tightest channel's is; a channel without a
  // finite positive 1/std keeps the slot's bound, and none goes past the
  // tuner's largest bound.
  const double eb = bt.currentEb(info.slot);
  const double most =
      eb > 0 ? std::max(1.0, bt.options().maxEb / eb) : double(1 << 20);
  std::vector<double> scale(inv.size(), 1.0);
  for (size_t i = 0; i < inv.size(); ++i)
    if (std::isfinite(inv[i]) && inv[i] > 0)
      scale[i] = std::clamp(mx / inv[i], 1.0, std::min(most, double(1 << 20)));
  comet_rt_slot_set_channel_scale(ctx, info.slot, scale.data(),
                                  static_cast<int64_t>(scale.size()));
}

std::map<int64_t, double> EngineTuner::afterStep(int64_t step) {
  if (collecting) {
    comet_rt_slot_stats_enable(engine.runtimeContext(), 0);
    collecting = false;
    for (const SlotInfo &info : bt.slots()) {
      bt.observe(info.slot, collect(info, step + 1));
      setChannelScales(info);
    }
  }
  // Before a stats step: this step's gradients, the first of the two
  // batches whose difference measures the minibatch noise.
  if (bt.isStatsStep(step + 1)) {
    std::map<BoundTuner::SketchKey, std::vector<double>> sketches;
    for (const SlotInfo &info : bt.slots())
      for (auto [c, ci] : llvm::enumerate(info.consumers)) {
        if (ci.param.empty())
          continue;
        llvm::ArrayRef<float> g = engine.gradient(ci.param);
        if (!g.empty())
          sketches[{info.slot, static_cast<int64_t>(c)}] =
              gradientSketch(g.data(), g.size());
      }
    bt.setGradientSketches(step + 1, std::move(sketches));
  }
  std::map<int64_t, double> changed;
  if (bt.isRetuneStep(step)) {
    changed = bt.retune(step + 1);
    for (auto [slot, eb] : changed)
      comet_rt_slot_set_eb(engine.runtimeContext(), slot, eb);
    // The largest bound caps the channels' at the new slot bound.
    for (const SlotInfo &info : bt.slots())
      if (changed.count(info.slot))
        setChannelScales(info);
  }
  return changed;
}

// The section after the bound tuner's state that holds the channel scales
// (--channel-bounds): "<slot> <n> <scale>..." per slot that has them.
static constexpr llvm::StringLiteral kChannelSection = "\ncomet-channel-scales";

std::string EngineTuner::saveState() const {
  std::string out = bt.saveState();
  if (!bt.options().channelBounds)
    return out;
  out += kChannelSection;
  comet_rt_context *ctx = engine.runtimeContext();
  for (const SlotInfo &info : bt.slots()) {
    int64_t n = comet_rt_slot_get_channel_scale(ctx, info.slot, nullptr, 0);
    if (n <= 0)
      continue;
    std::vector<double> scale(n);
    comet_rt_slot_get_channel_scale(ctx, info.slot, scale.data(), n);
    out += "\n" + std::to_string(info.slot) + " " + std::to_string(n);
    char buf[32];
    for (double v : scale) {
      std::snprintf(buf, sizeof(buf), " %.17g", v); // round-trips exactly
      out += buf;
    }
  }
  return out;
}

Error EngineTuner::restoreState(const std::string &text) {
  llvm::StringRef all(text), channels;
  if (size_t at = all.find(kChannelSection); at != llvm::StringRef::npos) {
    channels = all.substr(at + kChannelSection.size());
    all = all.take_front(at);
  }
  std::string why = bt.restoreState(all.str());
  if (!why.empty())
    return err(why);
  comet_rt_context *ctx = engine.runtimeContext();
  for (const SlotInfo &info : bt.slots())
    if (comet_rt_slot_set_eb(ctx, info.slot, bt.currentEb(info.slot)) != 0)
      return err("cannot set the bound of slot " + llvm::Twine(info.slot));
  // The channel scales the run had, so that it goes on exactly.
  llvm::SmallVector<llvm::StringRef> lines;
  channels.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef> words;
    line.split(words, ' ', -1, /*KeepEmpty=*/false);
    int64_t slot = -1, n = -1;
    if (words.size() < 2 || words[0].getAsInteger(10, slot) ||
        words[1].getAsInteger(10, n) ||
        n != static_cast<int64_t>(words.size()) - 2)
      return err("the bound tuner's saved channel scales are malformed");
    std::vector<double> scale(n);
    for (int64_t i = 0; i < n; ++i)
      if (words[2 + i].getAsDouble(scale[i]))
        return err("the bound tuner's saved channel scales are malformed");
    if (comet_rt_slot_set_channel_scale(ctx, slot, scale.data(), n) != 0)
      return err("cannot set the channel scales of slot " + llvm::Twine(slot));
  }
  return Error::success();
}

static void putPositive(llvm::json::Object &o, llvm::StringRef key, double v) {
  if (std::isfinite(v) && v > 0)
    o[key] = v;
}

llvm::json::Object EngineTuner::profile() const {
  llvm::json::Object slots, values;
  const TunerOptions &o = bt.options();
  for (const SlotInfo &info : bt.slots()) {
    AveragedStats a = bt.averaged(info.slot);
    if (a.count == 0)
      continue;
    // One entry per slot: the consumer whose bound is the tightest.
    size_t best = 0;
    double bestEb = 0;
    for (size_t c = 0; c < info.consumers.size(); ++c) {
      double e = consumerBound(o, info.consumers[c], a.consumers[c], a.nonZero);
      if (e > 0 && (bestEb == 0 || e < bestEb)) {
        bestEb = e;
        best = c;
      }
    }
    const ConsumerStats &cs = a.consumers[best];
    llvm::json::Object e;
    putPositive(e, "R", a.nonZero);
    // The pass's formula reads the gradient magnitude as "Lbar": give it the
    // statistic the rule used, so a second compile starts at the same bound.
    // The masked rule's N * M + K equals the pass's N * R * Lbar^2 with
    // Lbar = sqrt((M + K / N) / R).
    // BatchNorm's rule takes R = 1 (its inputs are dense), in the pass too.
    double g = cs.rmsGrad;
    bool bn = info.consumers[best].kind == ConsumerKind::BatchNorm;
    if (o.gradMagnitude == GradMagnitude::MeanAbs)
      g = cs.meanAbsGrad;
    else if (o.gradMagnitude == GradMagnitude::Masked &&
             maskedStatsUsable(info.consumers[best], cs))
      g = std::sqrt((cs.maskedMoment +
                     (std::isfinite(cs.coherentExcess)
                          ? cs.coherentExcess / info.consumers[best].numTerms
                          : 0)) /
                    (bn ? 1.0 : a.nonZero));
    putPositive(e, "Lbar", g);
    putPositive(e, "momentum", cs.meanAbsMomentum);
    putPositive(e, "gw_norm2", cs.weightGradNormSq);
    putPositive(e, "gy_norm2", cs.gradNormSq);
    putPositive(e, "noise", cs.gradNoiseVar);
    slots[std::to_string(info.slot)] = std::move(e);
    // The pass reads inv_std by value name.
    if (std::isfinite(cs.invStd) && cs.invStd > 0)
      values[info.value] = llvm::json::Object{{"inv_std", cs.invStd}};
  }
  llvm::json::Object root{{"slots", std::move(slots)}};
  if (!values.empty())
    root["values"] = std::move(values);
  return root;
}

llvm::json::Object EngineTuner::slotReport(int64_t slot) const {
  llvm::json::Object r;
  llvm::json::Array ratios, ebs;
  for (const HistoryPoint &h : bt.ratioHistory(slot))
    ratios.push_back(llvm::json::Object{{"step", h.step}, {"ratio", h.value}});
  for (const HistoryPoint &h : bt.ebHistory(slot))
    ebs.push_back(llvm::json::Object{{"step", h.step}, {"eb", h.value}});
  r["ratio_history"] = std::move(ratios);
  r["tuned_eb_history"] = std::move(ebs);
  // The latest channel scales (one bound per channel): their count, median
  // and largest.
  std::vector<double> scale(static_cast<size_t>(
      std::max<int64_t>(0, comet_rt_slot_get_channel_scale(
                               engine.runtimeContext(), slot, nullptr, 0))));
  if (!scale.empty()) {
    comet_rt_slot_get_channel_scale(engine.runtimeContext(), slot, scale.data(),
                                    int64_t(scale.size()));
    std::sort(scale.begin(), scale.end());
    r["channel_scales"] = int64_t(scale.size());
    r["channel_scale_median"] = scale[scale.size() / 2];
    r["channel_scale_max"] = scale.back();
  }
  AveragedStats a = bt.averaged(slot);
  auto num = [](double v) -> llvm::json::Value {
    return std::isfinite(v) ? llvm::json::Value(v) : llvm::json::Value(nullptr);
  };
  llvm::json::Array cons;
  const SlotInfo *info = nullptr;
  for (const SlotInfo &i : bt.slots())
    if (i.slot == slot)
      info = &i;
  for (auto [k, c] : llvm::enumerate(a.consumers)) {
    // The minibatch noise against the error COMET's model predicts at the
    // bound in force: how many times the noise's variance is the error's.
    double predicted = info
                           ? predictedErrorStd(bt.options(), info->consumers[k],
                                               c, a.nonZero, bt.currentEb(slot))
                           : 0;
    double noiseToError = predicted > 0 && std::isfinite(c.gradNoiseVar)
                              ? c.gradNoiseVar / (predicted * predicted)
                              : NAN;
    cons.push_back(llvm::json::Object{
        {"Lbar", num(c.meanAbsGrad)},
        {"rms_grad", num(c.rmsGrad)},
        {"masked_moment", num(c.maskedMoment)},
        {"coherent_excess", num(c.coherentExcess)},
        {"gy_norm2", num(c.gradNormSq)},
        {"gw_norm2", num(c.weightGradNormSq)},
        {"momentum", num(c.meanAbsMomentum)},
        {"inv_std", num(c.invStd)},
        {"grad_noise_var", num(c.gradNoiseVar)},
        {"predicted_error_std", num(predicted > 0 ? predicted : NAN)},
        {"noise_to_error", num(noiseToError)}});
  }
  r["stats"] = llvm::json::Object{{"observations", a.count},
                                  {"R", num(a.nonZero)},
                                  {"ratio", num(a.ratio)},
                                  {"consumers", std::move(cons)}};
  r["rule_eb"] = num(bt.ruleEb(slot));
  r["static_eb"] = bt.currentEb(slot) > 0 && !bt.ebHistory(slot).empty()
                       ? llvm::json::Value(bt.ebHistory(slot).front().value)
                       : llvm::json::Value(nullptr);
  return r;
}

namespace {
/// What one run of the training graph and one optimizer step from the
/// saved state left in a parameter: its gradient and its update.
struct StepResult {
  std::vector<float> grad, update;
};

/// Where a runtime context's random stream (Dropout's masks) stands.
struct RandomState {
  uint64_t seed = 0, counter = 0;
};

/// The gradients of `params` on (images, labels) and the update of one
/// optimizer step from `state`, which `engine` holds again afterwards; its
/// Dropout masks are drawn from `random`.
Expected<std::map<std::string, StepResult>>
stepFrom(Engine &engine, const checkpoint::Checkpoint &state,
         const std::vector<std::string> &params, const void *images,
         const int64_t *labels, RandomState random) {
  if (Error e = engine.loadCheckpointState(state))
    return std::move(e);
  comet_rt_context_set_random_state(engine.runtimeContext(), random.seed,
                                    random.counter);
  // One batch's gradient: overwrite the buffers rather than add to what
  // the engine accumulated (lazyResetGrad).
  engine.lazyResetGrad();
  auto loss = engine.computeGradients(images, labels);
  if (!loss)
    return loss.takeError();
  std::map<std::string, StepResult> out;
  std::map<std::string, std::vector<float>> before;
  for (const std::string &p : params) {
    out[p].grad = engine.gradient(p).vec();
    before[p] = engine.parameter(p).vec();
  }
  if (Error e = engine.optimizerStep())
    return std::move(e);
  for (const std::string &p : params) {
    llvm::ArrayRef<float> w = engine.parameter(p);
    std::vector<float> &u = out[p].update;
    u.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i)
      u[i] = w[i] - before[p][i];
  }
  if (Error e = engine.loadCheckpointState(state))
    return std::move(e);
  return out;
}

/// The mean over elements of the unbiased variance of `field` over the
/// results (at least two).
double meanVariance(llvm::ArrayRef<const StepResult *> rs,
                    std::vector<float> StepResult::*field) {
  const size_t n = (rs.front()->*field).size(), k = rs.size();
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    double mean = 0, sq = 0;
    for (const StepResult *r : rs)
      mean += (r->*field)[i];
    mean /= k;
    for (const StepResult *r : rs)
      sq += ((r->*field)[i] - mean) * ((r->*field)[i] - mean);
    sum += sq / (k - 1);
  }
  return n ? sum / n : 0;
}

/// RMS over elements of a - b (of a when b is empty).
double rmsDiff(llvm::ArrayRef<float> a, llvm::ArrayRef<float> b = {}) {
  double sq = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = double(a[i]) - (b.empty() ? 0.0 : double(b[i]));
    sq += d * d;
  }
  return a.empty() ? 0 : std::sqrt(sq / a.size());
}
} // namespace

Expected<std::vector<GradErrorMeasurement>>
comet::measureGradError(Engine &compressed, Engine &reference,
                        const void *images, const int64_t *labels,
                        llvm::ArrayRef<NoiseBatch> noiseBatches) {
  std::vector<SlotInfo> slots = slotsOf(compressed.stats(), nullptr);
  if (Error e = needStatistics(compressed, slots, "measureGradError"))
    return std::move(e);
  // Every run starts from the compressed engine's weights and optimizer
  // state, and leaves them as they were.
  auto state = compressed.checkpointState(true);
  if (!state)
    return state.takeError();
  std::vector<std::string> params;
  for (const SlotInfo &s : slots)
    if (!s.consumers.front().param.empty())
      params.push_back(s.consumers.front().param);
  // The lossy and the exact runs of the measured batch draw the same
  // Dropout masks; each noise batch draws its own, as training does.
  RandomState random;
  comet_rt_context_get_random_state(compressed.runtimeContext(), &random.seed,
                                    &random.counter);
  auto exactA = stepFrom(reference, *state, params, images, labels, random);
  if (!exactA)
    return exactA.takeError();
  // The exact gradients and updates of more batches from the same state:
  // with batch A's, samples of the minibatch noise.
  std::vector<std::map<std::string, StepResult>> others;
  for (const NoiseBatch &b : noiseBatches) {
    RandomState fresh = random;
    fresh.counter += (others.size() + 1) << 40; // far past what a step draws
    auto r = stepFrom(reference, *state, params, b.images, b.labels, fresh);
    if (!r)
      return r.takeError();
    others.push_back(std::move(*r));
  }
  // Each parameter's minibatch noise (variance), gradient and update.
  std::map<std::string, std::pair<double, double>> noiseVar;
  if (!others.empty())
    for (const std::string &p : params) {
      std::vector<const StepResult *> all = {&exactA->at(p)};
      for (const auto &o : others)
        all.push_back(&o.at(p));
      noiseVar[p] = {meanVariance(all, &StepResult::grad),
                     meanVariance(all, &StepResult::update)};
    }
  std::map<int64_t, double> saved;
  for (const SlotInfo &s : slots)
    saved[s.slot] =
        comet_rt_slot_get_eb(compressed.runtimeContext(), s.slot) > 0
            ? comet_rt_slot_get_eb(compressed.runtimeContext(), s.slot)
            : s.staticEb;
  // Small enough that every value is stored verbatim or exactly quantized.
  const double exact = 1e-30;
  comet_rt_context *ctx = compressed.runtimeContext();
  // The check measures M and K for every consumer kind, whatever rule the
  // engine's tuner (if any) runs; K over BatchNorm's (c, c) pairs.
  for (const SlotInfo &s : slots) {
    comet_rt_slot_set_moments(ctx, s.slot, 1);
    setDiagonal(ctx, s);
  }
  // The engine as the check found it, also when a run fails midway.
  auto restore = [&] {
    for (auto [slot, eb] : saved)
      comet_rt_slot_set_eb(ctx, slot, eb);
    comet_rt_context_set_random_state(ctx, random.seed, random.counter);
    llvm::consumeError(compressed.loadCheckpointState(*state));
  };
  std::vector<GradErrorMeasurement> out;
  for (const SlotInfo &s : slots) {
    const ConsumerInfo &c = s.consumers.front();
    if (c.param.empty())
      continue;
    bool bn = c.kind == ConsumerKind::BatchNorm;
    for (const SlotInfo &o : slots)
      comet_rt_slot_set_eb(ctx, o.slot,
                           o.slot == s.slot ? saved[o.slot] : exact);
    comet_rt_slot_observations_clear(ctx);
    comet_rt_slot_stats_enable(ctx, 1);
    comet_rt_slot_stats_diagnostics(ctx, 1);
    auto lossy = stepFrom(compressed, *state, params, images, labels, random);
    comet_rt_slot_stats_diagnostics(ctx, 0);
    comet_rt_slot_stats_enable(ctx, 0);
    if (!lossy) {
      restore();
      return lossy.takeError();
    }
    comet_rt_slot_observation ob;
    comet_rt_slot_get_observation(ctx, s.slot, 0, &ob);
    GradErrorMeasurement m;
    m.slot = s.slot;
    m.value = s.value;
    m.param = c.param;
    m.kind = bn ? "batchnorm" : c.kind == ConsumerKind::Gemm ? "gemm" : "conv";
    m.eb = saved[s.slot];
    m.numTerms = c.numTerms;
    ConsumerStats cs = gradStatsOf(ob);
    m.nonZero = orZero(nonZeroOf(ob));
    m.meanAbsGrad = orZero(cs.meanAbsGrad);
    m.rmsGrad = orZero(cs.rmsGrad);
    m.maskedMoment = orZero(cs.maskedMoment);
    m.coherentExcess = orZero(cs.coherentExcess);
    CometBoundParams p;
    p.numTerms = m.numTerms;
    p.nonZeroFraction = m.nonZero;
    p.meanAbsGrad = m.meanAbsGrad;
    // BatchNorm reads E as inv_std * E in xhat, with a dense X: every
    // prediction of the scale gradient's error takes the largest channel's
    // inv_std as the error's gain (tuner::consumerBound).
    double ebSeen = m.eb;
    if (bn) {
      m.invStd = orZero(cs.invStd);
      ebSeen = m.eb * m.invStd;
      p.nonZeroFraction = 1;
    }
    m.predictedStd = cometPredictedGradStd(ebSeen, p);
    p.meanAbsGrad = m.rmsGrad;
    m.predictedStdRms = cometPredictedGradStd(ebSeen, p);
    m.predictedStdMasked = cometPredictedGradStdMasked(
        ebSeen, kUniformStdFactor, m.numTerms, m.maskedMoment);
    m.predictedStdCoherent =
        cometPredictedGradStdMasked(ebSeen, kUniformStdFactor, m.numTerms,
                                    m.maskedMoment, m.coherentExcess);
    // At a bound large against the values, most fall in the zero bin and
    // the codec's error is narrower than the uniform +-eb: the same model
    // with the error the codec made.
    if (bn && ob.aux_weight_sum > 0) {
      m.invStdWeighted = std::sqrt(ob.aux_weighted_sq_sum / ob.aux_weight_sum);
      m.predictedStdChannels = cometPredictedGradStdMasked(
          m.eb * m.invStdWeighted, kUniformStdFactor, m.numTerms,
          m.maskedMoment, m.coherentExcess);
    }
    if (ob.act_err_elements > 0 && m.eb > 0) {
      m.codecErrorStd =
          std::sqrt(ob.act_err_sq_sum / double(ob.act_err_elements));
      m.codecFactor = m.codecErrorStd / m.eb;
      m.predictedStdCodec = cometPredictedGradStdMasked(
          ebSeen, m.codecFactor, m.numTerms, m.maskedMoment, m.coherentExcess);
    }
    const StepResult &lc = (*lossy)[c.param], &ea = (*exactA)[c.param];
    llvm::ArrayRef<float> gc = lc.grad, gr = ea.grad;
    if (gc.size() != gr.size() || gc.empty()) {
      restore();
      return err("the gradient of " + c.param + " differs in size");
    }
    double sum = 0, sq = 0, dot = 0, gsq = 0;
    for (size_t i = 0; i < gc.size(); ++i) {
      double d = double(gc[i]) - double(gr[i]);
      sum += d;
      sq += d * d;
      dot += d * double(gr[i]);
      gsq += double(gr[i]) * double(gr[i]);
    }
    m.weightElements = static_cast<int64_t>(gc.size());
    m.measuredMean = sum / gc.size();
    m.measuredStd = std::sqrt(sq / gc.size());
    m.gradRms = std::sqrt(gsq / gc.size());
    if (gsq > 0)
      m.errorProjection = dot / gsq;
    if (gsq > 0 && sq > 0)
      m.errorCosine = dot / std::sqrt(gsq * sq);
    // The updates are differences of the weights in float, as the
    // optimizer applied them: below about 1e-7 of the weights they are
    // rounding.
    m.updateRms = rmsDiff(ea.update);
    m.updateErrorRms = rmsDiff(lc.update, ea.update);
    if (!others.empty()) {
      m.gradNoiseStd = std::sqrt(noiseVar.at(c.param).first);
      m.updateNoiseStd = std::sqrt(noiseVar.at(c.param).second);
      if (sq > 0)
        m.gradNoiseToError = m.gradNoiseStd * m.gradNoiseStd / (sq / gc.size());
      if (m.updateErrorRms > 0)
        m.updateNoiseToError = m.updateNoiseStd * m.updateNoiseStd /
                               (m.updateErrorRms * m.updateErrorRms);
    }
    for (const auto &[p, nv] : noiseVar) {
      if (p == c.param)
        continue;
      const StepResult &l = (*lossy)[p], &e = (*exactA)[p];
      double g = rmsDiff(l.grad, e.grad), u = rmsDiff(l.update, e.update);
      if (!(g > 0))
        continue;
      ++m.propagatedParams;
      double gr = nv.first / (g * g);
      if (m.propagatedParam.empty() || gr < m.propagatedGradNoiseToError) {
        m.propagatedGradNoiseToError = gr;
        m.propagatedParam = p;
      }
      if (u > 0 && (m.propagatedUpdateNoiseToError == 0 ||
                    nv.second / (u * u) < m.propagatedUpdateNoiseToError))
        m.propagatedUpdateNoiseToError = nv.second / (u * u);
    }
    out.push_back(std::move(m));
  }
  restore();
  return out;
}
