//===- ErrorBoundsTest.cpp - COMET's and AC-GC's error-bound rules --------===//
#include "comet/Analysis/ErrorBounds.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace comet;

namespace {

// By hand: N = 2 * 4 * 4 = 32 (ConvGrad dW over batch 2, 4x4 output),
// R = 0.5, Lbar = 1e-3, mean|momentum| = 1e-3, k = 0.01:
// sigma = 1e-5; a = 1/sqrt(3); sqrt(N R) = 4;
// eb = 1e-5 / (0.57735 * 1e-3 * 4) = 4.330127018922193e-3.
TEST(ErrorBounds, CometRuleByHand) {
  CometBoundParams p;
  p.numTerms = 32;
  p.nonZeroFraction = 0.5;
  p.meanAbsGrad = 1e-3;
  p.meanAbsMomentum = 1e-3;
  p.sigmaFactor = 0.01;
  double eb = cometErrorBound(p);
  EXPECT_NEAR(eb, 4.330127018922193e-3, 1e-15);
  // The model's predicted gradient-error std is sigma again.
  EXPECT_NEAR(cometPredictedGradStd(eb, p), 1e-5, 1e-18);
}

// By hand: sigma = 1e-5, a = 1/sqrt(3), N = 32, M = 2e-6:
// sqrt(N M) = sqrt(6.4e-5) = 8e-3; eb = 1e-5 * sqrt(3) / 8e-3
// = 2.1650635094610965e-3. With M = R * G^2 = 0.5 * (1e-3)^2 the masked
// rule is the RMS rule above (4.330127018922193e-3).
TEST(ErrorBounds, CometMaskedRuleByHand) {
  double eb = cometErrorBoundMasked(1e-5, kUniformStdFactor, 32, 2e-6);
  EXPECT_NEAR(eb, 2.1650635094610965e-3, 1e-15);
  EXPECT_NEAR(cometPredictedGradStdMasked(eb, kUniformStdFactor, 32, 2e-6),
              1e-5, 1e-18);
  EXPECT_NEAR(cometErrorBoundMasked(1e-5, kUniformStdFactor, 32, 5e-7),
              4.330127018922193e-3, 1e-15);
  EXPECT_EQ(cometErrorBoundMasked(1e-5, kUniformStdFactor, 32, 0), 0);
  EXPECT_EQ(cometErrorBoundMasked(1e-5, kUniformStdFactor, 32, NAN), 0);
  EXPECT_EQ(cometErrorBoundMasked(-1, kUniformStdFactor, 32, 2e-6), 0);
}

// By hand: the same sigma, N and M with a coherent excess K = 3 N M =
// 1.92e-4: N M + K = 2.56e-4, sqrt = 1.6e-2, so the bound halves to
// 1.0825317547305482e-3. K = -N M leaves no variance: no bound.
TEST(ErrorBounds, CometMaskedRuleWithCoherentExcess) {
  double eb = cometErrorBoundMasked(1e-5, kUniformStdFactor, 32, 2e-6, 1.92e-4);
  EXPECT_NEAR(eb, 1.0825317547305482e-3, 1e-15);
  EXPECT_NEAR(
      cometPredictedGradStdMasked(eb, kUniformStdFactor, 32, 2e-6, 1.92e-4),
      1e-5, 1e-18);
  // A negative K (the group's dY sums cancel) loosens the bound.
  EXPECT_GT(cometErrorBoundMasked(1e-5, kUniformStdFactor, 32, 2e-6, -3.2e-5),
            2.1650635094610965e-3);
  EXPECT_EQ(cometErrorBoundMasked(1e-5, kUniformStdFactor, 32, 2e-6, -6.4e-5),
            0);
  EXPECT_EQ(cometErrorBoundMasked(1e-5, kUniformStdFactor, 32, 2e-6, NAN), 0);
}

TEST(ErrorBounds, CometRuleScaling) {
  CometBoundParams p;
  p.numTerms = 100;
  double e1 = cometErrorBound(p);
  p.numTerms = 400; // 4x the terms: half the bound.
  EXPECT_NEAR(cometErrorBound(p), e1 / 2, 1e-15);
  p.meanAbsMomentum = 3; // sigma scales linearly.
  EXPECT_NEAR(cometErrorBound(p), 3 * e1 / 2, 1e-14);
}

TEST(ErrorBounds, CometRuleRejectsBadInputs) {
  CometBoundParams p;
  p.numTerms = 0;
  EXPECT_EQ(cometErrorBound(p), 0);
  p.numTerms = 1;
  p.meanAbsGrad = std::nan("");
  EXPECT_EQ(cometErrorBound(p), 0);
  p.meanAbsGrad = 1;
  p.nonZeroFraction = -0.5;
  EXPECT_EQ(cometErrorBound(p), 0);
}

// By hand: e = 0.01, ||g_W||^2 = 4, ||g_Y||^2 = 2, N*C*H*W = 100, u = 9
// (3x3 kernel, stride 1): eb^2 = 0.04 / (2 * 100 * 9 * 2) = 1/90000.
TEST(ErrorBounds, AcgcRuleByHand) {
  AcgcBoundParams p;
  p.energyFraction = 0.01;
  p.weightGradNormSq = 4;
  p.outputGradNormSq = 2;
  p.activationElements = 100;
  p.reuse = 9;
  EXPECT_NEAR(acgcErrorBound(p), 1.0 / 300.0, 1e-15);
  p.reuse = 0;
  EXPECT_EQ(acgcErrorBound(p), 0);
}

// The error model itself: perturb the non-zeros of an activation uniformly
// in [-eb, eb], form dW = sum dY_i X_i, and compare the measured std of the
// dW error with a * eb * Lbar * sqrt(N R). |dY| = Lbar exactly, with random
// signs, so E[dY^2] = Lbar^2 as the model assumes.
TEST(ErrorBounds, PredictedStdMatchesMonteCarlo) {
  const int n = 2048, trials = 4000;
  const double lbar = 2e-3, eb = 1e-2, r = 0.25;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unif(-eb, eb);
  std::bernoulli_distribution nonzero(r), sign(0.5);
  std::vector<double> dy(n);
  std::vector<bool> nz(n);
  int count = 0;
  for (int i = 0; i < n; ++i) {
    dy[i] = sign(rng) ? lbar : -lbar;
    nz[i] = nonzero(rng);
    count += nz[i];
  }
  double sum = 0, sumSq = 0;
  for (int t = 0; t < trials; ++t) {
    double err = 0;
    for (int i = 0; i < n; ++i)
      if (nz[i])
        err += dy[i] * unif(rng);
    sum += err;
    sumSq += err * err;
  }
  double mean = sum / trials;
  double measured = std::sqrt(sumSq / trials - mean * mean);
  CometBoundParams p;
  p.numTerms = n;
  p.nonZeroFraction = static_cast<double>(count) / n;
  p.meanAbsGrad = lbar;
  double predicted = cometPredictedGradStd(eb, p);
  // 4000 samples: the std estimate is within ~1.1% (1 sigma); allow 5%.
  EXPECT_NEAR(measured / predicted, 1.0, 0.05);
}

// The coherent term by Monte Carlo: 512 of 2048 terms (a constant X
// region) share one uniform error, the rest draw their own, and dY leans
// positive so the shared terms add up. a * eb * sqrt(N M + K), with M and K
// computed from the terms as SlotStats does, predicts the std; sqrt(N M)
// alone is several times too small.
TEST(ErrorBounds, CoherentPredictionMatchesMonteCarlo) {
  const int n = 2048, shared = 512, trials = 4000;
  const double eb = 1e-2;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unif(-eb, eb), grad(-1e-3, 3e-3);
  std::vector<double> dy(n);
  for (double &g : dy)
    g = grad(rng);
  double sumShared = 0, sqShared = 0, sqAll = 0;
  for (int i = 0; i < n; ++i) {
    sqAll += dy[i] * dy[i];
    if (i < shared) {
      sumShared += dy[i];
      sqShared += dy[i] * dy[i];
    }
  }
  double sum = 0, sumSq = 0;
  for (int t = 0; t < trials; ++t) {
    double common = unif(rng), err = 0;
    for (int i = 0; i < n; ++i)
      err += dy[i] * (i < shared ? common : unif(rng));
    sum += err;
    sumSq += err * err;
  }
  double mean = sum / trials;
  double measured = std::sqrt(sumSq / trials - mean * mean);
  double m = sqAll / n, k = sumShared * sumShared - sqShared;
  double predicted =
      cometPredictedGradStdMasked(eb, kUniformStdFactor, n, m, k);
  EXPECT_NEAR(measured / predicted, 1.0, 0.05);
  EXPECT_GT(measured / cometPredictedGradStdMasked(eb, kUniformStdFactor, n, m),
            3.0);
}

} // namespace
