//===- EngineTuner.h - Re-tune a comet::Engine's slots while training -*- C++
//-*-===//
//
// Connects a BoundTuner to a compiled comet::Engine:
//
//   auto t = comet::EngineTuner::create(engine, opts);   // after compile()
//   for (step = 0; ...; ++step) {
//     (*t)->beforeStep(step);       // turns statistics on for stats steps
//     engine.step(images, labels);
//     (*t)->afterStep(step);        // reads them back; re-tunes on schedule
//   }
//
// Statistics come from the observe calls the lowering emits (SlotStats.h),
// the Engine's gradient buffers (||dW||^2) and optimizer state
// (mean |momentum|), and the compress sites' byte counts (ratio). New bounds
// go to the runtime's slot table (comet_rt_slot_set_eb). docs/tuning.md.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_TUNER_ENGINETUNER_H
#define COMET_TUNER_ENGINETUNER_H

#include "comet/Engine/Engine.h"
#include "comet/Tuner/Tuner.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <memory>

namespace comet {

class EngineTuner {
public:
  /// Reads the lossy slots and their consumers from `engine` (compiled with
  /// compression) and seeds the slot table with the compiled bounds.
  static llvm::Expected<std::unique_ptr<EngineTuner>>
  create(Engine &engine, const tuner::TunerOptions &options);

  void beforeStep(int64_t step);
  /// Returns the slots whose bound changed after this step.
  std::map<int64_t, double> afterStep(int64_t step);

  const tuner::BoundTuner &tuner() const { return bt; }

  /// The averaged statistics of every slot in the format that
  /// --comet-compress-activations profile=PATH reads (docs/error-bounds.md).
  llvm::json::Object profile() const;
  /// What the report adds to a slot: ratio_history, stats, rule_eb.
  llvm::json::Object slotReport(int64_t slot) const;

  // ---- checkpoints ----
  /// The bound tuner's state (BoundTuner::saveState) and the slots' channel
  /// scales, for a checkpoint.
  std::string saveState() const;
  /// Takes it back and sets every slot's bound in the engine's runtime to
  /// the one in force then, so that a resumed run compresses as the
  /// uninterrupted one would.
  llvm::Error restoreState(const std::string &text);

  /// Reads the statistics of the step that just ran with collection on.
  tuner::SlotStats collect(const tuner::SlotInfo &info, int64_t step) const;
  /// Under TunerOptions::channelBounds, sets the channel scales of a slot
  /// that only BatchNorm reads from this stats step's 1/std per channel.
  void setChannelScales(const tuner::SlotInfo &info) const;

private:
  EngineTuner(Engine &e, tuner::BoundTuner t) : engine(e), bt(std::move(t)) {}
  Engine &engine;
  tuner::BoundTuner bt;
  std::map<int64_t, int64_t> siteOfSlot;
  bool collecting = false;
};

/// One slot of the error-model check (docs/error-bounds.md, "Measured
/// against prediction").
struct GradErrorMeasurement {
  int64_t slot = -1;
  std::string value, param, kind;
  double eb = 0, numTerms = 0, nonZero = 0, meanAbsGrad = 0, rmsGrad = 0;
  /// COMET's prediction a * eb * Lbar * sqrt(N R) (cometPredictedGradStd),
  /// and the same with the RMS of dY in place of Lbar.
  double predictedStd = 0, predictedStdRms = 0;
  /// M (masked second moment of dY) and a * eb * sqrt(N M)
  /// (cometPredictedGradStdMasked).
  double maskedMoment = 0, predictedStdMasked = 0;
  /// K (coherent excess per dW element) and a * eb * sqrt(N M + K): what
  /// the default (masked) rule predicts. For BatchNorm K is over the (c, c)
  /// pairs of its scale gradient and eb is scaled by inv_std.
  double coherentExcess = 0, predictedStdCoherent = 0;
  /// The codec's own error on this slot's activation in the lossy step
  /// (comet_rt_slot_observation::act_err_sq_sum): its RMS, that over eb
  /// (the uniform +-eb gives 1/sqrt(3)), and the masked + coherent
  /// prediction with that factor in place of 1/sqrt(3). 0 when not
  /// observed.
  double codecErrorStd = 0, codecFactor = 0, predictedStdCodec = 0;
  /// BatchNorm: the per-channel inv_std weighted by each channel's share
  /// of the model's two terms, sqrt(sum_c s_c^2 W_c / sum_c W_c) with
  /// W_c = E_c + K_c, its dY energy plus its own coherent excess (each
  /// channel's scale gradient sees its own 1/std), and the masked +
  /// coherent prediction with it as the gain in place of the largest
  /// channel's.
  double invStdWeighted = 0, predictedStdChannels = 0;
  /// BatchNorm: the largest channel's inv_std, which scales eb in all its
  /// predictions.
  double invStd = 0;
  /// RMS of dW(compressed) - dW(exact) over the parameter's elements.
  double measuredStd = 0, measuredMean = 0;
  /// Is the error biased along the gradient? With d the error and g the
  /// exact gradient: <d, g> / ||g||^2 (a shrinkage of dW shows as < 0) and
  /// the cosine <d, g> / (||d|| ||g||), which for an error independent of
  /// g is of order 1 / sqrt(weightElements). gradRms is the RMS of g.
  double gradRms = 0, errorProjection = 0, errorCosine = 0;
  int64_t weightElements = 0;
  /// The optimizer step from the same state (weights and optimizer state
  /// of `compressed` before the check), run by the engine's own optimizer:
  /// RMS over the parameter's elements of the exact update u and of the
  /// update error u(compressed gradient) - u(exact gradient).
  double updateRms = 0, updateErrorRms = 0;
  /// The minibatch noise (with noise batches, else 0): the square root of
  /// the mean over elements of the variance of the exact gradient over the
  /// batches (the measured one and the noise batches, at the same weights;
  /// the unbiased sample variance), and the same for the update from the
  /// same optimizer state.
  double gradNoiseStd = 0, updateNoiseStd = 0;
  /// (noise std / error std)^2 for the gradient and for the update: how
  /// many times the minibatch noise's variance exceeds the compression's.
  double gradNoiseToError = 0, updateNoiseToError = 0;
  /// What the error does to the other measured parameters (every slot
  /// consumer's), which it reaches through the consumer's dX (BatchNorm's
  /// backward reads X there too) when the lossy slot's consumer is not the
  /// only reader: how many of them change at all, and the smallest noise /
  /// error variance ratio over them, for the gradient and for the update,
  /// with the parameter where the gradient's is smallest (0 and empty
  /// without noise batches or without a change).
  int64_t propagatedParams = 0;
  std::string propagatedParam;
  double propagatedGradNoiseToError = 0, propagatedUpdateNoiseToError = 0;
};

/// A batch of measureGradError's minibatch noise.
struct NoiseBatch {
  const void *images;
  const int64_t *labels;
};

/// Runs one training-graph step on (images, labels) with `compressed`
/// (compiled with compression) and with `reference` (compiled without, its
/// weights overwritten by `compressed`'s), once per lossy slot with only
/// that slot at its current bound (the others at a bound so small that the
/// codec stores them exactly), and compares the consumer's weight gradient.
/// For a BatchNorm consumer the parameter is its scale. Each lossy run also
/// takes one optimizer step (the engine's optimizer, from its state before
/// the check), compared with the exact gradient's step from the same state;
/// with noise batches, the exact gradients and steps of those and of
/// (images, labels) give the minibatch noise. Weights, optimizer state
/// and bounds are restored afterwards; the masked moment and coherent
/// excess stay collected for every slot (comet_rt_slot_set_moments).
llvm::Expected<std::vector<GradErrorMeasurement>>
measureGradError(Engine &compressed, Engine &reference, const void *images,
                 const int64_t *labels,
                 llvm::ArrayRef<NoiseBatch> noiseBatches = {});

} // namespace comet

#endif // COMET_TUNER_ENGINETUNER_H
