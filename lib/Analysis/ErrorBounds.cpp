//===- ErrorBounds.cpp - Static error bounds for compressed activations ---===//
#include "comet/Analysis/ErrorBounds.h"

#include <algorithm>
#include <cmath>

using namespace comet;

static bool positiveFinite(double x) { return std::isfinite(x) && x > 0; }

double comet::cometErrorBound(const CometBoundParams &p) {
  if (!positiveFinite(p.numTerms) || !positiveFinite(p.nonZeroFraction) ||
      !positiveFinite(p.meanAbsGrad) || !positiveFinite(p.meanAbsMomentum) ||
      !positiveFinite(p.sigmaFactor))
    return 0;
  double sigma = p.sigmaFactor * p.meanAbsMomentum;
  double eb = sigma / (kUniformStdFactor * p.meanAbsGrad *
                       std::sqrt(p.numTerms * p.nonZeroFraction));
  return positiveFinite(eb) ? eb : 0;
}

double comet::cometPredictedGradStd(double eb, const CometBoundParams &p) {
  return kUniformStdFactor * eb * p.meanAbsGrad *
         std::sqrt(p.numTerms * p.nonZeroFraction);
}

double comet::cometErrorBoundMasked(double sigma, double a, double numTerms,
                                    double maskedMoment,
                                    double coherentExcess) {
  if (!positiveFinite(sigma) || !positiveFinite(a) ||
      !positiveFinite(numTerms) || !positiveFinite(maskedMoment) ||
      !std::isfinite(coherentExcess))
    return 0;
  double var = numTerms * maskedMoment + coherentExcess;
  if (!positiveFinite(var))
    return 0;
  double eb = sigma / (a * std::sqrt(var));
  return positiveFinite(eb) ? eb : 0;
}

double comet::cometPredictedGradStdMasked(double eb, double a, double numTerms,
                                          double maskedMoment,
                                          double coherentExcess) {
  return a * eb *
         std::sqrt(std::max(0.0, numTerms * maskedMoment + coherentExcess));
}

double comet::noiseTargetSigma(double fraction, double noiseVariance) {
  if (!positiveFinite(fraction) || !positiveFinite(noiseVariance))
    return 0;
  double sigma = fraction * std::sqrt(noiseVariance);
  return positiveFinite(sigma) ? sigma : 0;
}

double comet::acgcErrorBound(const AcgcBoundParams &p) {
  if (!positiveFinite(p.energyFraction) ||
      !positiveFinite(p.weightGradNormSq) ||
      !positiveFinite(p.outputGradNormSq) ||
      !positiveFinite(p.activationElements) || !positiveFinite(p.reuse))
    return 0;
  double eb2 = p.energyFraction * p.weightGradNormSq /
               (2 * p.activationElements * p.reuse * p.outputGradNormSq);
  double eb = std::sqrt(eb2);
  return positiveFinite(eb) ? eb : 0;
}
