//===- TunerTest.cpp - BoundTuner: rules, windows, schedule, clamps -------===//
#include "comet/Tuner/Tuner.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>

using namespace comet::tuner;

namespace {

SlotInfo convSlot(double staticEb = 1e-3) {
  SlotInfo s;
  s.slot = 3;
  s.value = "relu1";
  s.staticEb = staticEb;
  ConsumerInfo c;
  c.kind = ConsumerKind::Conv;
  c.numTerms = 400; // batch 4 * 10 x 10
  c.reuse = 9;      // 3x3, stride 1
  c.activationElements = 4 * 8 * 12 * 12;
  c.param = "conv2.weight";
  s.consumers.push_back(c);
  return s;
}

/// One slot read by a BatchNorm over N = 64 terms.
SlotInfo batchNormSlot() {
  SlotInfo s;
  s.slot = 0;
  s.staticEb = 1e-3;
  ConsumerInfo c;
  c.kind = ConsumerKind::BatchNorm;
  c.numTerms = 64;
  s.consumers.push_back(c);
  return s;
}

SlotStats stats(int64_t step, double r, double lbar, double mom,
                double gw2 = NAN, double gy2 = NAN) {
  SlotStats s;
  s.step = step;
  s.nonZero = r;
  s.ratio = 10;
  ConsumerStats c;
  c.meanAbsGrad = lbar;
  c.rmsGrad = lbar;
  c.meanAbsMomentum = mom;
  c.weightGradNormSq = gw2;
  c.gradNormSq = gy2;
  s.consumers.push_back(c);
  return s;
}

TunerOptions opts(Rule r, int64_t interval = 10) {
  TunerOptions o;
  o.rule = r;
  o.gradMagnitude = GradMagnitude::MeanAbs; // the hand-computed cases use Lbar
  o.retuneInterval = interval;
  o.minEb = 1e-12;
  o.maxEb = 1;
  return o;
}

} // namespace

// COMET by hand: N = 400, R = 0.25, Lbar = 1e-3, momentum = 2e-3, k = 0.01:
// sigma = 2e-5, sqrt(N R) = 10, eb = 2e-5 * sqrt(3) / (1e-3 * 10)
// = 3.4641016e-3.
TEST(BoundTuner, CometRuleByHand) {
  BoundTuner t(opts(Rule::Comet), {convSlot()});
  t.observe(3, stats(1, 0.25, 1e-3, 2e-3));
  EXPECT_NEAR(t.ruleEb(3), 3.4641016151377544e-3, 1e-12);
  auto changed = t.retune(10);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_NEAR(changed[3], 3.4641016151377544e-3, 1e-12);
  EXPECT_NEAR(t.currentEb(3), 3.4641016151377544e-3, 1e-12);
}

// AC-GC by hand: e = 0.01, ||gW||^2 = 8, ||gY||^2 = 2, N*C*H*W = 4608,
// u = 9: eb^2 = 0.01 * 8 / (2 * 4608 * 9 * 2) = 4.8225309e-7,
// eb = 6.9444444e-4.
TEST(BoundTuner, AcgcRuleByHand) {
  BoundTuner t(opts(Rule::Acgc), {convSlot()});
  t.observe(3, stats(1, 0.25, 1e-3, 2e-3, 8, 2));
  EXPECT_NEAR(t.ruleEb(3), 6.944444444444444e-4, 1e-12);
}

// BatchNorm: R is taken as 1 and the bound is divided by max inv_std.
// N = 64, Lbar = 1e-3, momentum = 1e-3, inv_std = 4:
// eb = 1e-5 * sqrt(3) / (1e-3 * 8) / 4 = 5.4126588e-4.
TEST(BoundTuner, BatchNormUsesInvStdAndDenseInput) {
  SlotInfo s = batchNormSlot();
  BoundTuner t(opts(Rule::Comet), {s});
  SlotStats st = stats(1, 0.3 /* ignored */, 1e-3, 1e-3);
  st.consumers[0].invStd = 4;
  t.observe(0, st);
  EXPECT_NEAR(t.ruleEb(0), 5.412658773652741e-4, 1e-12);
  // Without inv_std there is no bound: the static one stays.
  BoundTuner t2(opts(Rule::Comet), {s});
  t2.observe(0, stats(1, 0.3, 1e-3, 1e-3));
  EXPECT_EQ(t2.ruleEb(0), 0);
  EXPECT_TRUE(t2.retune(10).empty());
  EXPECT_EQ(t2.currentEb(0), 1e-3);
}

// BatchNorm under the default (masked) rule, from the measured M and K of
// its scale gradient: N = 64, M = 1e-6, K = 192e-6 (equal values share an
// error: N M + K = 4 N M), momentum = 1e-3, inv_std = 4:
// eb = 1e-5 * sqrt(3) / sqrt(256e-6) / 4 = 2.7063294e-4, half the bound
// without K. Without M it falls back to RMS(dY) with R = 1.
TEST(BoundTuner, BatchNormMaskedRuleReadsCoherentExcess) {
  SlotInfo s = batchNormSlot();
  TunerOptions o = opts(Rule::Comet);
  o.gradMagnitude = GradMagnitude::Masked;
  BoundTuner t(o, {s});
  SlotStats st = stats(1, 0.3 /* ignored */, 1e-3, 1e-3);
  st.consumers[0].invStd = 4;
  st.consumers[0].maskedMoment = 1e-6;
  st.consumers[0].coherentExcess = 192e-6;
  t.observe(0, st);
  EXPECT_NEAR(t.ruleEb(0), 2.7063293868263705e-4, 1e-12);
  BoundTuner t2(o, {s});
  st.consumers[0].maskedMoment = NAN;
  t2.observe(0, st);
  EXPECT_NEAR(t2.ruleEb(0), 5.412658773652741e-4, 1e-12);
}

// Two consumers: the tightest decides.
TEST(BoundTuner, TightestConsumerWins) {
  SlotInfo s = convSlot();
  ConsumerInfo g;
  g.kind = ConsumerKind::Gemm;
  g.numTerms = 4;
  g.param = "fc.weight";
  s.consumers.push_back(g);
  BoundTuner t(opts(Rule::Comet), {s});
  SlotStats st = stats(1, 0.25, 1e-3, 2e-3);
  ConsumerStats c2;
  c2.meanAbsGrad = 1e-1; // much larger gradient: a much tighter bound
  c2.meanAbsMomentum = 2e-3;
  st.consumers.push_back(c2);
  t.observe(3, st);
  // Consumer 2: 2e-5 * sqrt(3) / (0.1 * sqrt(4 * 0.25)) = 3.4641016e-4.
  EXPECT_NEAR(t.ruleEb(3), 3.4641016151377544e-4, 1e-12);
}

// The default COMET rule takes the RMS of dY, not its mean magnitude: with
// a sparse dY (RMS = 4 x Lbar) the bound is 4x tighter.
TEST(BoundTuner, CometRuleUsesRmsByDefault) {
  TunerOptions o = opts(Rule::Comet);
  o.gradMagnitude = GradMagnitude::Rms;
  BoundTuner rms(o, {convSlot()});
  BoundTuner lbar(opts(Rule::Comet), {convSlot()});
  SlotStats st = stats(1, 0.25, 1e-3, 2e-3);
  st.consumers[0].rmsGrad = 4e-3;
  rms.observe(3, st);
  lbar.observe(3, st);
  EXPECT_NEAR(lbar.ruleEb(3), 3.4641016151377544e-3, 1e-12);
  EXPECT_NEAR(rms.ruleEb(3), 3.4641016151377544e-3 / 4, 1e-12);
  EXPECT_EQ(parseGradMagnitude("rms"), GradMagnitude::Rms);
  EXPECT_EQ(parseGradMagnitude("lbar"), GradMagnitude::MeanAbs);
  EXPECT_FALSE(parseGradMagnitude("mean"));
}

// The default COMET rule uses the masked second moment M in place of
// R * G^2. By hand: N = 400, M = 4e-6, sigma = 0.01 * 2e-3 = 2e-5:
// eb = 2e-5 * sqrt(3) / sqrt(400 * 4e-6) = 8.660254037844386e-4.
TEST(BoundTuner, CometRuleUsesMaskedMomentByDefault) {
  EXPECT_EQ(TunerOptions().gradMagnitude, GradMagnitude::Masked);
  EXPECT_EQ(parseGradMagnitude("masked"), GradMagnitude::Masked);
  EXPECT_STREQ(gradMagnitudeName(GradMagnitude::Masked), "masked");
  TunerOptions o = opts(Rule::Comet);
  o.gradMagnitude = GradMagnitude::Masked;
  BoundTuner t(o, {convSlot()});
  SlotStats st = stats(1, 0.25, 1e-3, 2e-3);
  // Without M the rule has no bound and the slot keeps its static one.
  t.observe(3, st);
  EXPECT_EQ(t.ruleEb(3), 0);
  BoundTuner t2(o, {convSlot()});
  st.consumers[0].maskedMoment = 4e-6;
  t2.observe(3, st);
  EXPECT_NEAR(t2.ruleEb(3), 8.660254037844386e-4, 1e-15);
}

// The coherent excess K adds to N M: with N = 400, M = 4e-6 (N M = 1.6e-3)
// and K = 3 N M = 4.8e-3 the variance quadruples and the bound halves.
// The rms rule ignores K.
TEST(BoundTuner, CometMaskedRuleAddsCoherentExcess) {
  TunerOptions o = opts(Rule::Comet);
  o.gradMagnitude = GradMagnitude::Masked;
  SlotStats st = stats(1, 0.25, 1e-3, 2e-3);
  st.consumers[0].maskedMoment = 4e-6;
  st.consumers[0].coherentExcess = 4.8e-3;
  BoundTuner t(o, {convSlot()});
  t.observe(3, st);
  EXPECT_NEAR(t.ruleEb(3), 4.330127018922193e-4, 1e-15);
  EXPECT_NEAR(t.averaged(3).consumers[0].coherentExcess, 4.8e-3, 1e-18);
  o.gradMagnitude = GradMagnitude::Rms;
  BoundTuner rms(o, {convSlot()});
  rms.observe(3, st);
  BoundTuner rmsNoK(o, {convSlot()});
  st.consumers[0].coherentExcess = NAN;
  rmsNoK.observe(3, st);
  EXPECT_EQ(rms.ruleEb(3), rmsNoK.ruleEb(3));
}

// The window averages the last `window` observations, field by field.
TEST(BoundTuner, WindowAveragesLastObservations) {
  TunerOptions o = opts(Rule::Comet);
  o.window = 2;
  BoundTuner t(o, {convSlot()});
  t.observe(3, stats(1, 0.25, 100, 2e-3)); // falls out of the window
  t.observe(3, stats(2, 0.25, 1e-3, 2e-3));
  t.observe(3, stats(3, 0.25, 3e-3, 2e-3));
  AveragedStats a = t.averaged(3);
  EXPECT_EQ(a.count, 2);
  EXPECT_NEAR(a.consumers[0].meanAbsGrad, 2e-3, 1e-15);
  EXPECT_NEAR(t.ruleEb(3), 3.4641016151377544e-3 / 2, 1e-12);
}

// No statistics yet: the static bound stays, nothing changes.
TEST(BoundTuner, SlotWithoutStatsKeepsStaticBound) {
  BoundTuner t(opts(Rule::Comet), {convSlot(7e-4)});
  EXPECT_TRUE(t.retune(10).empty());
  EXPECT_EQ(t.currentEb(3), 7e-4);
  ASSERT_EQ(t.ebHistory(3).size(), 1u);
  EXPECT_EQ(t.ebHistory(3)[0].value, 7e-4);
}

TEST(BoundTuner, ClampsAbsoluteAndRelative) {
  TunerOptions o = opts(Rule::Comet);
  o.minEb = 1e-7;
  o.maxEb = 1e-3;
  BoundTuner t(o, {convSlot()});
  t.observe(3, stats(1, 0.25, 1e-3, 2e-3)); // rule: 3.46e-3
  t.retune(10);
  EXPECT_EQ(t.currentEb(3), 1e-3);

  TunerOptions r = opts(Rule::Comet);
  r.relativeRange = 2; // static 1e-3: [5e-4, 2e-3]
  BoundTuner t2(r, {convSlot(1e-3)});
  t2.observe(3, stats(1, 0.25, 1e-3, 2e-3));
  t2.retune(10);
  EXPECT_EQ(t2.currentEb(3), 2e-3);
}

TEST(BoundTuner, Schedule) {
  TunerOptions o;
  o.rule = Rule::Acgc;
  BoundTuner a(o, {});
  EXPECT_EQ(a.options().retuneInterval, 100); // AC-GC's default
  EXPECT_EQ(a.options().statsInterval, 10);   // 10 observations per retune
  EXPECT_TRUE(a.isStatsStep(0));
  EXPECT_FALSE(a.isStatsStep(5));
  EXPECT_TRUE(a.isStatsStep(90));
  EXPECT_FALSE(a.isRetuneStep(0));
  EXPECT_TRUE(a.isRetuneStep(99));
  EXPECT_FALSE(a.isRetuneStep(100));
  o.rule = Rule::Comet;
  BoundTuner c(o, {});
  EXPECT_EQ(c.options().retuneInterval, 1000); // COMET's default
  o.retuneInterval = 3;
  BoundTuner s(o, {});
  EXPECT_EQ(s.options().statsInterval, 1);
}

// A synthetic stream whose gradient scale grows 10x mid-run: COMET's bound
// falls 10x (larger gradients -> smaller eb), AC-GC's follows ||gW||/||gY||.
TEST(BoundTuner, FollowsGradientScaleChange) {
  TunerOptions o = opts(Rule::Comet, 10);
  o.window = 5;
  BoundTuner t(o, {convSlot()});
  std::vector<double> ebs;
  for (int64_t step = 0; step < 60; ++step) {
    double scale = step < 35 ? 1 : 10;
    if (t.isStatsStep(step))
      t.observe(3, stats(step + 1, 0.25, 1e-3 * scale, 2e-3));
    if (t.isRetuneStep(step)) {
      t.retune(step + 1);
      ebs.push_back(t.currentEb(3));
    }
  }
  ASSERT_EQ(ebs.size(), 6u);
  EXPECT_NEAR(ebs[2], 3.4641016151377544e-3, 1e-12);
  // Retune after step 39 averages 3 observations at 1x and 2 at 10x.
  EXPECT_LT(ebs[3], ebs[2]);
  EXPECT_GT(ebs[3], 3.4641016151377544e-4);
  EXPECT_NEAR(ebs[4], 3.4641016151377544e-4, 1e-12); // 10x smaller
  EXPECT_EQ(ebs[5], ebs[4]);
  for (size_t i = 1; i < ebs.size(); ++i)
    EXPECT_LE(ebs[i], ebs[i - 1]);
  // History: the static bound, then every change with its step.
  const auto &h = t.ebHistory(3);
  EXPECT_EQ(h.front().step, 0);
  EXPECT_EQ(h.back().step, 50); // unchanged at 60: not recorded
  EXPECT_EQ(h.back().value, ebs.back());

  // AC-GC: gY grows 10x in norm (100x in energy) with gW fixed: eb / 10.
  TunerOptions a = opts(Rule::Acgc, 10);
  a.window = 1;
  BoundTuner ta(a, {convSlot()});
  ta.observe(3, stats(1, 0.25, 1e-3, 2e-3, 8, 2));
  ta.retune(10);
  double before = ta.currentEb(3);
  ta.observe(3, stats(11, 0.25, 1e-2, 2e-3, 8, 200));
  ta.retune(20);
  EXPECT_NEAR(ta.currentEb(3), before / 10, 1e-15);
}

TEST(BoundTuner, ValidateRejectsBadOptions) {
  TunerOptions o;
  EXPECT_EQ(validate(o), "");
  o.sigmaFactor = -0.01;
  EXPECT_NE(validate(o).find("--bound-k"), std::string::npos);
  o = TunerOptions();
  o.retuneInterval = 0;
  EXPECT_NE(validate(o).find("--retune-interval"), std::string::npos);
  o = TunerOptions();
  o.minEb = 1;
  o.maxEb = 0.5;
  EXPECT_NE(validate(o).find("--eb-min"), std::string::npos);
  o = TunerOptions();
  o.acgcEnergy = 0;
  EXPECT_NE(validate(o).find("--acgc-e"), std::string::npos);
  o = TunerOptions();
  o.relativeRange = 0.5;
  EXPECT_NE(validate(o).find("--eb-relative-range"), std::string::npos);
  o = TunerOptions();
  o.noiseFraction = 0;
  EXPECT_NE(validate(o).find("--noise-fraction"), std::string::npos);
  o.noiseFraction = NAN;
  EXPECT_NE(validate(o).find("--noise-fraction"), std::string::npos);
  EXPECT_FALSE(parseRule("sz").has_value());
  EXPECT_EQ(*parseRule("acgc"), Rule::Acgc);
  EXPECT_EQ(*parseRule("noise"), Rule::Noise);
  EXPECT_STREQ(ruleName(Rule::Noise), "noise");
}

// A tuner restored from another's saved state behaves as that one: the same
// bounds, windows and histories, and the same bounds after more
// observations (the state of a resumed comet-train run).
TEST(BoundTuner, SavedStateContinuesExactly) {
  TunerOptions o = opts(Rule::Comet, 3);
  o.window = 2;
  BoundTuner a(o, {convSlot(), batchNormSlot()});
  for (int64_t s = 0; s < 7; ++s) {
    a.observe(3, stats(s, 0.25 + 0.01 * s, 1e-3 * (s + 1), 2e-3));
    SlotStats bn = stats(s, 1, 2e-3, 1e-3);
    bn.consumers[0].invStd = 1.0 / 3;
    bn.ratio = NAN; // an unmeasured field travels as NaN
    a.observe(0, bn);
    if (a.isRetuneStep(s))
      a.retune(s + 1);
  }
  std::string text = a.saveState();
  BoundTuner b(o, {convSlot(), batchNormSlot()});
  ASSERT_EQ(b.restoreState(text), "");
  EXPECT_EQ(b.saveState(), text);
  EXPECT_EQ(b.numRetunes(), a.numRetunes());
  for (int64_t slot : {0, 3}) {
    EXPECT_EQ(b.currentEb(slot), a.currentEb(slot));
    EXPECT_EQ(b.ebHistory(slot).size(), a.ebHistory(slot).size());
    EXPECT_EQ(b.ratioHistory(slot).size(), a.ratioHistory(slot).size());
  }
  for (BoundTuner *t : {&a, &b}) {
    t->observe(3, stats(7, 0.3, 5e-3, 4e-3));
    t->retune(8);
  }
  EXPECT_EQ(b.saveState(), a.saveState());
  EXPECT_EQ(b.currentEb(3), a.currentEb(3));

  // Another run's slots, or a damaged text, change nothing.
  BoundTuner c(o, {convSlot()});
  std::string before = c.saveState();
  EXPECT_EQ(c.restoreState(text),
            "the bound tuner's saved state has 2 slots, this run 1");
  EXPECT_EQ(c.saveState(), before);
  BoundTuner d(o, {convSlot(), batchNormSlot()});
  before = d.saveState();
  EXPECT_EQ(d.restoreState(text.substr(0, text.size() / 2)),
            "the bound tuner's saved state is malformed");
  EXPECT_EQ(d.restoreState("comet-tuner 3 0 0"),
            "the bound tuner's saved state has version 3; this build reads "
            "versions 1 and 2");
  EXPECT_EQ(d.saveState(), before);
}

// The noise rule by hand: the masked model with N = 400, M = 1e-6
// (N M = 4e-4), the minibatch noise's variance 4e-4 (std 0.02) and
// f = 0.1: sigma = 2e-3, eb = 2e-3 * sqrt(3) / sqrt(4e-4) = 0.17320508.
// The momentum plays no part; without a noise measurement the slot keeps
// its static bound. The model's prediction at that bound is sigma.
TEST(BoundTuner, NoiseRuleByHand) {
  TunerOptions o = opts(Rule::Noise);
  o.gradMagnitude = GradMagnitude::Masked;
  o.noiseFraction = 0.1;
  SlotStats st = stats(1, 0.25, 1e-3, 2e-3);
  st.consumers[0].maskedMoment = 1e-6;
  BoundTuner none(o, {convSlot()});
  none.observe(3, st);
  EXPECT_EQ(none.ruleEb(3), 0);
  EXPECT_TRUE(none.retune(10).empty());
  st.consumers[0].gradNoiseVar = 4e-4;
  BoundTuner t(o, {convSlot()});
  t.observe(3, st);
  EXPECT_NEAR(t.ruleEb(3), 0.17320508075688773, 1e-12);
  st.consumers[0].meanAbsMomentum = 1; // not read
  BoundTuner t2(o, {convSlot()});
  t2.observe(3, st);
  EXPECT_EQ(t2.ruleEb(3), t.ruleEb(3));
  AveragedStats a = t.averaged(3);
  EXPECT_NEAR(predictedErrorStd(o, convSlot().consumers[0], a.consumers[0],
                                a.nonZero, t.ruleEb(3)),
              2e-3, 1e-15);
  // Twice the fraction, twice the bound; the Lbar model: N R = 100,
  // eb = 2e-3 * sqrt(3) / (1e-3 * 10) = 0.34641016.
  o.noiseFraction = 0.2;
  BoundTuner t3(o, {convSlot()});
  t3.observe(3, st);
  EXPECT_NEAR(t3.ruleEb(3), 2 * 0.17320508075688773, 1e-12);
  o.noiseFraction = 0.1;
  o.gradMagnitude = GradMagnitude::MeanAbs;
  BoundTuner t4(o, {convSlot()});
  t4.observe(3, st);
  EXPECT_NEAR(t4.ruleEb(3), 0.34641016151377546, 1e-12);
  // AC-GC's schedule: retune every 100 steps.
  TunerOptions d;
  d.rule = Rule::Noise;
  EXPECT_EQ(withDefaults(d).retuneInterval, 100);
  EXPECT_EQ(TunerOptions().noiseFraction, 0.1);
}

// The noise rule on a BatchNorm consumer: the bound of the error in xhat
// divided by inv_std (N = 64, RMS(dY) = 1e-3 with R = 1: sqrt(N) G = 8e-3;
// noise variance 1e-6, f = 0.1: sigma = 1e-4, eb = 1e-4 sqrt(3) / 8e-3 / 4
// = 5.4126588e-3).
TEST(BoundTuner, NoiseRuleBatchNorm) {
  TunerOptions o = opts(Rule::Noise);
  o.gradMagnitude = GradMagnitude::Rms;
  BoundTuner t(o, {batchNormSlot()});
  SlotStats st = stats(1, 0.3 /* ignored */, 1e-3, 1e-3);
  st.consumers[0].invStd = 4;
  st.consumers[0].gradNoiseVar = 1e-6;
  t.observe(0, st);
  EXPECT_NEAR(t.ruleEb(0), 5.412658773652741e-3, 1e-12);
}

// The sketch keeps a small gradient as it is (the noise exact) and
// estimates a large one's within a few percent: for 10 pairs of 200000
// elements the relative error of each is about sqrt(2 / 1024) = 4.4%.
TEST(GradientSketch, EstimatesNoiseVariance) {
  std::vector<float> a = {1, -2, 3}, b = {0, 0, 1};
  auto sa = gradientSketch(a.data(), a.size());
  auto sb = gradientSketch(b.data(), b.size());
  ASSERT_EQ(sa.size(), 3u);
  // ((1)^2 + (-2)^2 + 2^2) / (2 * 3) = 1.5
  EXPECT_DOUBLE_EQ(sketchedNoiseVariance(sa, sb, 3), 1.5);
  EXPECT_TRUE(std::isnan(sketchedNoiseVariance(sa, {1, 2}, 3)));
  EXPECT_TRUE(std::isnan(sketchedNoiseVariance(sa, sb, 0)));

  const size_t n = 200000;
  uint64_t state = 12345;
  auto uniform = [&] { // xorshift64*: fixed, portable
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return double((state * 2685821657736338717ull) >> 11) * 0x1p-53;
  };
  double worst = 0, sumRatio = 0;
  for (int pair = 0; pair < 10; ++pair) {
    std::vector<float> g(n), h(n);
    double exact = 0;
    for (size_t i = 0; i < n; ++i) {
      // A common mean (cancels) and per-element noise of varied scale.
      double mean = std::sin(0.001 * double(i));
      double scale = 1 + 3 * (i % 7);
      g[i] = float(mean + scale * (uniform() - 0.5));
      h[i] = float(mean + scale * (uniform() - 0.5));
      double d = double(g[i]) - double(h[i]);
      exact += d * d;
    }
    exact /= 2.0 * n;
    auto sg = gradientSketch(g.data(), n), sh = gradientSketch(h.data(), n);
    ASSERT_EQ(sg.size(), static_cast<size_t>(kMaxSketchSize));
    double ratio = sketchedNoiseVariance(sg, sh, n) / exact;
    worst = std::max(worst, std::fabs(ratio - 1));
    sumRatio += ratio;
  }
  EXPECT_LT(worst, 0.15);
  EXPECT_NEAR(sumRatio / 10, 1.0, 0.05);
}

// Sketches travel in the saved state (a run resumed between the step that
// takes them and the stats step that reads them measures the same noise);
// a version 1 text (before the noise was measured) still restores, with
// the noise unmeasured.
TEST(BoundTuner, SavedStateKeepsSketchesAndReadsVersion1) {
  TunerOptions o = opts(Rule::Noise, 3);
  BoundTuner a(o, {convSlot()});
  SlotStats st = stats(1, 0.25, 1e-3, 2e-3);
  st.consumers[0].gradNoiseVar = 0.25;
  a.observe(3, st);
  a.setGradientSketches(5, {{{3, 0}, {1.5, -2, 0x1p-60}}});
  std::string text = a.saveState();
  BoundTuner b(o, {convSlot()});
  ASSERT_EQ(b.restoreState(text), "");
  EXPECT_EQ(b.saveState(), text);
  ASSERT_NE(b.gradientSketch(3, 0, 5), nullptr);
  EXPECT_EQ(*b.gradientSketch(3, 0, 5),
            (std::vector<double>{1.5, -2, 0x1p-60}));
  EXPECT_EQ(b.gradientSketch(3, 0, 6), nullptr); // taken after another step
  EXPECT_EQ(b.gradientSketch(3, 1, 5), nullptr);
  EXPECT_EQ(b.averaged(3).consumers[0].gradNoiseVar, 0.25);

  // Version 1: one window entry with 8 numbers per consumer, no sketches.
  std::string v1 = "comet-tuner 1 0 1\n"
                   "slot 3 1 0x1p-10 1 1 0\n"
                   " 1 0x1p-2 0x1.4p+3 1 0x1.0624dd2f1a9fcp-10 "
                   "0x1.0624dd2f1a9fcp-10 nan nan 0x1.0624dd2f1a9fcp-9 nan "
                   "nan nan\n"
                   " 0 0x1p-10\n\n";
  BoundTuner c(o, {convSlot()});
  ASSERT_EQ(c.restoreState(v1), "");
  EXPECT_EQ(c.currentEb(3), 0x1p-10);
  EXPECT_EQ(c.averaged(3).count, 1);
  EXPECT_TRUE(std::isnan(c.averaged(3).consumers[0].gradNoiseVar));
  EXPECT_EQ(c.averaged(3).consumers[0].meanAbsMomentum, 0x1.0624dd2f1a9fcp-9);
  // A sketch larger than any the tuner takes is malformed.
  std::string big = "comet-tuner 2 0 1\nslot 3 1 0x1p-10 0 1 0\n\n 0 "
                    "0x1p-10\n\nsketches 1 1\n 3 0 2000";
  EXPECT_EQ(c.restoreState(big), "the bound tuner's saved state is malformed");
}
