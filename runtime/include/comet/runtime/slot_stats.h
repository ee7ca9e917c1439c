/*===- comet/runtime/slot_stats.h - Per-slot training statistics, C ABI
 *------===*
 *
 * What lowered code calls so that the bound tuner (comet/Tuner/Tuner.h) can
 * re-tune the slot of a lossy compressed activation from measurements.
 * compress-activations records, for every lossy slot, its far consumers
 * (the ops that form weight gradients from it); comet-lower-to-runtime then
 * emits
 *
 *   comet_rt_slot_observe_act(X, slot, 0)        before the compress of X
 *   comet_rt_slot_observe_grad(dY, slot, c)      before consumer c of slot
 *   comet_rt_slot_observe_max(inv_std, slot, c)  before a BatchNormGrad
 *
 * Each call is a no-op (a lookup of the context's table and one relaxed
 * atomic load) unless collection is on for the context
 * (comet_rt_slot_stats_enable(ctx, 1)), which the tuner does for the steps it
 * samples. On those steps each call reduces its tensor on the host into a
 * few sums, so the tuner reads back a handful of numbers per slot. Weight
 * gradients and optimizer state live in buffers the Engine owns; the tuner
 * reads them there (docs/tuning.md).
 *
 * Library: libCometRuntime (runtime/core/SlotStats.cpp).
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_SLOT_STATS_H
#define COMET_RUNTIME_SLOT_STATS_H

#include "comet/runtime/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sums gathered for one (slot, consumer) since the last clear. */
typedef struct comet_rt_slot_observation {
  int64_t act_elements;  /* elements of the activation seen (observe_act) */
  int64_t act_nonzero;   /* of which non-zero */
  int64_t grad_elements; /* elements of dY seen (observe_grad) */
  double grad_abs_sum;   /* sum |dY| */
  double grad_sq_sum;    /* sum dY^2 */
  double aux_max;        /* max of observe_max's tensor (-inf if none) */
  int64_t calls;         /* observe calls that counted */
  /* sum dY^2 * r, r the estimated non-zero fraction of the X that each dY
   * element multiplies in the weight gradient (the masked second moment is
   * grad_masked_sq_sum / grad_masked_elements; see observe_grad). */
  double grad_masked_sq_sum;
  int64_t grad_masked_elements; /* elements of dY counted in it */
  /* The coherent excess (see observe_grad): sum over (output channel o,
   * X channel c) pairs of sum_g (S_g^2 - T_g), and the number of pairs;
   * the excess per weight element is grad_coherent_sum /
   * grad_coherent_pairs. */
  double grad_coherent_sum;
  int64_t grad_coherent_pairs;
  /* Diagnostics (comet_rt_slot_stats_diagnostics), 0 without them.
   * The sz codec's own error on the activation (observe_act), at the
   * slot's bound then: sum over elements of (x - x')^2, x' the element's
   * reconstruction by the format's quantizer (0 for one stored verbatim or
   * a zero), and the non-zero elements it is over (0 while the slot has no
   * bound). */
  double act_err_sq_sum;
  int64_t act_err_elements;
  /* observe_max's tensor a (BatchNorm's per-channel 1/std) weighted by the
   * same consumer's per-channel (dim 1) error weight from its observe_grad,
   * E_c = sum of dY^2 over channel c plus, for a diagonal consumer, the
   * channel's coherent excess (c, c): sum_c a_c^2 E_c and sum_c E_c. Their
   * ratio is the squared gain that the weight gradient's error sees, both
   * terms of the model weighted per channel (0 and 0 without an
   * observe_grad of matching channels before it). */
  double aux_weighted_sq_sum;
  double aux_weight_sum;
} comet_rt_slot_observation;

/* Turns collection on (non-zero) or off. Off by default. */
COMET_RT_API void comet_rt_slot_stats_enable(comet_rt_context *ctx, int32_t on);
COMET_RT_API int32_t comet_rt_slot_stats_enabled(comet_rt_context *ctx);
/* Turns on (off by default) the diagnostics that only the error-model check
 * reads: act_err_sq_sum / act_err_elements, and aux_weighted_sq_sum /
 * aux_weight_sum with the per-channel dY energy behind them. */
COMET_RT_API void comet_rt_slot_stats_diagnostics(comet_rt_context *ctx,
                                                  int32_t on);

/* observe_act also keeps, until the next clear, the non-zero fraction of X
 * per sample (dim 0) and, for a rank-4 X [B, C, H, W], per sample and
 * position averaged over channels. observe_grad weights each dY^2 by it:
 *  - dY [B, O, Ho, Wo] with X [B, C, H, W]: output (h, w) maps to the input
 *    position at the centre of its receptive field, (h*s + o, w*s + o) with
 *    s = H / Ho and o = (H - (Ho-1)*s - 1) / 2 (exact for 'same' padding
 *    and for no padding with stride 1); the receptive field's non-zero
 *    fraction is approximated by that one position's.
 *  - dY with the same dim 0 as X otherwise (Gemm/MatMul over the batch):
 *    the sample's fraction nnz(X_n) / |X_n|.
 *  - anything else: X's overall non-zero fraction R.
 * Nothing is added when the slot's X was not observed since the clear.
 *
 * The codec's error is a function of the value (it quantizes each element
 * on a fixed grid), so elements of equal value get equal errors, and their
 * products with dY add up coherently instead of as independent terms. Such
 * groups are common: a constant input region (an image's zero background)
 * stays one constant per channel through conv, BatchNorm and ReLU.
 * observe_act therefore also finds, for X [B, C, H, W] or [B, C], each
 * channel's groups of equal non-zero values (at least 4 elements; the 15
 * largest). A value is a candidate only where two consecutive elements of
 * the channel (along positions, then samples) hold it, as in a constant
 * region; equal values that are never adjacent are not grouped, which keeps
 * the search linear. observe_grad (same two cases as above, X's position taken
 * at the receptive field's centre) sums per output channel o and X channel c
 * S_g = sum of dY and T_g = sum of dY^2 over each group g's elements, and
 * adds sum_g (S_g^2 - T_g): what replacing the group's independent terms by
 * one shared error adds to the variance of a dW element, in units of the
 * error's variance (docs/error-bounds.md, "Coherent errors"). */

/* The observe calls (slot_observe_act/grad/max of abi.def) return 0, or
 * COMET_RT_ERROR_INVALID_ARGUMENT for a bad memref or slot (also when
 * collection is off, so the lowering's check catches a bad call on every
 * step). `consumer` is the index of the consumer in the slot's comet.tune
 * list (0 for observe_act). */

/* Whether observe_act keeps X's non-zero pattern and equal-value groups
 * for `slot`, i.e. whether observe_grad measures the masked moment and the
 * coherent excess (on by default; kept across clears). Only the rules of
 * Conv and Gemm consumers read them, so the tuner turns this off for slots
 * that only BatchNorm reads. Returns 0, or COMET_RT_ERROR_INVALID_ARGUMENT
 * for a bad slot. */
COMET_RT_API int32_t comet_rt_slot_set_moments(comet_rt_context *ctx,
                                               int64_t slot, int32_t on);

/* Whether (slot, consumer)'s weight gradient pairs each X channel with the
 * same dY channel only, as BatchNorm's scale gradient does (dscale_c = sum
 * dY_c * xhat_c): observe_grad's coherent excess then sums the (c, c) pairs
 * alone and counts C pairs, instead of every (o, c) pair of a Conv or Gemm
 * weight (it adds nothing when dY's channels differ in number from X's).
 * Off by default; kept across clears. Returns 0, or
 * COMET_RT_ERROR_INVALID_ARGUMENT for a bad slot or consumer. */
COMET_RT_API int32_t comet_rt_slot_set_diagonal(comet_rt_context *ctx,
                                                int64_t slot, int64_t consumer,
                                                int32_t on);

/* The sums of (slot, consumer); all zero (aux_max -inf) if none. Returns 0,
 * or COMET_RT_ERROR_INVALID_ARGUMENT for a negative slot or consumer. */
COMET_RT_API int32_t
comet_rt_slot_get_observation(comet_rt_context *ctx, int64_t slot,
                              int64_t consumer, comet_rt_slot_observation *out);

/* observe_max's tensor of (slot, consumer) element by element, the largest
 * value of each element (non-finite ones skipped, -inf where none) since
 * the clear: a BatchNorm's 1/std per channel. Copies up to capacity values
 * to out and returns how many the tensor has (0 if none was observed), or
 * -COMET_RT_ERROR_INVALID_ARGUMENT for a bad slot, consumer or buffer. */
COMET_RT_API int64_t comet_rt_slot_get_aux_channels(comet_rt_context *ctx,
                                                    int64_t slot,
                                                    int64_t consumer,
                                                    double *out,
                                                    int64_t capacity);

/* Forgets every observation (collection stays as it is). */
COMET_RT_API void comet_rt_slot_observations_clear(comet_rt_context *ctx);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_SLOT_STATS_H */
