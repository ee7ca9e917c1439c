//===- ErrorBounds.h - Static error bounds for compressed activations -----===//
//
// The two rules that turn training statistics into an absolute error bound
// for an activation that a weight gradient reads. docs/error-bounds.md
// derives both; the functions here are the only place the formulas live.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_ANALYSIS_ERRORBOUNDS_H
#define COMET_ANALYSIS_ERRORBOUNDS_H

#include <cstdint>

namespace comet {

/// The standard deviation of an error drawn uniformly from [-eb, eb] is
/// eb / sqrt(3); this is COMET's constant `a`.
constexpr double kUniformStdFactor = 0.57735026918962576451; // 1/sqrt(3)

/// Inputs of COMET's rule for one activation.
struct CometBoundParams {
  /// N: how many products one weight-gradient element sums (for ConvGrad dW:
  /// batch * H_out * W_out; for Gemm/MatMul dW: the contraction size).
  double numTerms = 1;
  /// R: the non-zero fraction of the activation (errors only land on
  /// non-zeros, since the codec keeps zeros exact).
  double nonZeroFraction = 1;
  /// Lbar: mean |dY| of the incoming gradient.
  double meanAbsGrad = 1;
  /// mean |momentum| of the weights the gradient updates.
  double meanAbsMomentum = 1;
  /// k in sigma = k * mean|momentum|.
  double sigmaFactor = 0.01;
};

/// COMET: sigma = k * mean|momentum|, sigma = a * eb * Lbar * sqrt(N * R),
/// so eb = sigma / (a * Lbar * sqrt(N * R)), a = 1/sqrt(3). Returns 0 when
/// an input is not positive and finite (the caller must not compress then).
double cometErrorBound(const CometBoundParams &p);

/// The weight-gradient error std that COMET's model predicts for `eb`:
/// a * eb * Lbar * sqrt(N * R). The inverse of cometErrorBound.
double cometPredictedGradStd(double eb, const CometBoundParams &p);

/// COMET's rule with the masked second moment M of dY: the error of a
/// weight-gradient element sums e_i * dY_i over the N terms whose X is
/// non-zero, so its variance is a^2 eb^2 * N * M with M = mean over the N
/// terms of dY^2 * 1[X != 0] (= R * E[dY^2] only if X's non-zeros are
/// independent of where dY is large). sigma = a * eb * sqrt(N * M), so
/// eb = sigma / (a * sqrt(N * M)).
///
/// K (`coherentExcess`, >= -N * M) corrects for terms that share one error:
/// elements of X with equal values get equal codec errors, so a group of
/// them contributes (sum dY)^2 rather than sum dY^2 to the variance; K is
/// the mean over dW elements of sum over groups of ((sum dY)^2 - sum dY^2)
/// (comet/runtime/slot_stats.h). The variance becomes a^2 eb^2 (N M + K).
/// Returns 0 when an input is not positive and finite or N M + K <= 0.
double cometErrorBoundMasked(double sigma, double a, double numTerms,
                             double maskedMoment, double coherentExcess = 0);

/// a * eb * sqrt(N * M + K): the inverse of cometErrorBoundMasked.
double cometPredictedGradStdMasked(double eb, double a, double numTerms,
                                   double maskedMoment,
                                   double coherentExcess = 0);

/// The noise rule's target for the weight-gradient error: sigma = f times
/// the standard deviation of the gradient's minibatch noise (noiseVariance:
/// its variance over batches at fixed weights, averaged over the
/// parameter's elements). An independent error of that size adds f^2 to
/// the noise's variance, as a batch 1 / (1 + f^2) times smaller would.
/// Returns 0 when an input is not positive and finite.
double noiseTargetSigma(double fraction, double noiseVariance);

/// Inputs of AC-GC's rule for a conv/linear consumer.
struct AcgcBoundParams {
  /// e: the tolerated relative gradient-error energy.
  double energyFraction = 0.01;
  /// ||g_W||^2 and ||g_Y||^2: squared norms of the weight gradient and of the
  /// gradient that reaches the layer's output.
  double weightGradNormSq = 1;
  double outputGradNormSq = 1;
  /// N*C*H*W: elements of the activation.
  double activationElements = 1;
  /// u = kernel area / product of strides (1 for Gemm/MatMul).
  double reuse = 1;
};

/// AC-GC: eb^2 = e * ||g_W||^2 / (2 * N*C*H*W * u * ||g_Y||^2). Returns 0
/// when an input is not positive and finite.
double acgcErrorBound(const AcgcBoundParams &p);

} // namespace comet

#endif // COMET_ANALYSIS_ERRORBOUNDS_H
