/*===- comet/runtime/handles.h - Compressed-activation handles, C ABI -----===*
 *
 * What comet-lower-to-runtime emits for comet.compress / comet.decompress
 * (the calls compress, decompress, relu_grad_mask and handle_free of
 * abi.def). A compressed activation is an opaque handle (an int64_t; 0 is
 * "none") owned by the runtime: one block from comet_rt_alloc in the
 * category `compressed` of the calling context, holding a small header and
 * the codec stream (docs/codec-format.md), so the allocator counts exactly
 * what is kept.
 *
 * Lossy bounds live in the context's slot table: slot s holds the bound
 * that every compress of slot s reads at run time. The compiled bound only
 * seeds an undefined slot; a tuner changes it with comet_rt_slot_set_eb.
 * Every compress site (the n-th comet.compress of the function, numbered by
 * the lowering) keeps statistics for the report.
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_HANDLES_H
#define COMET_RUNTIME_HANDLES_H

#include "comet/runtime/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The message of the last failure on this thread: the same as
 * comet_rt_last_error() (one error slot for every comet_rt_ call). */
COMET_RT_API const char *comet_rt_handles_last_error(void);

/* Bytes a handle holds (header + stream), as counted by the allocator. */
COMET_RT_API int64_t comet_rt_handle_bytes(int64_t handle);

/* ---- Slots ---------------------------------------------------------------*/

/* The bound of slot (negative when undefined). */
COMET_RT_API double comet_rt_slot_get_eb(comet_rt_context *ctx, int64_t slot);
/* Sets the bound of slot (> 0 and finite); returns 0 or an error code. */
COMET_RT_API int32_t comet_rt_slot_set_eb(comet_rt_context *ctx, int64_t slot,
                                          double eb);
/* One bound per channel (dim 1) for slot: channel c of its tensor is
 * stored within eb * scale[c], eb the slot's bound (comet_rt_slot_set_eb,
 * which stays the tightest: every scale is in [1, 2^20]). n = 0 goes back
 * to one bound. A compress of the slot fails when its tensor's dim 1 is not
 * n. The CPU codec writes one bound per channel (docs/codec-format.md,
 * "Bounds per channel"); the CUDA backend stores such a slot at eb. Returns
 * 0 or an error code. */
COMET_RT_API int32_t comet_rt_slot_set_channel_scale(comet_rt_context *ctx,
                                                     int64_t slot,
                                                     const double *scale,
                                                     int64_t n);
/* Copies up to capacity of slot's channel scales to out; returns how many
 * it has (0: one bound), or -COMET_RT_ERROR_INVALID_ARGUMENT. */
COMET_RT_API int64_t comet_rt_slot_get_channel_scale(comet_rt_context *ctx,
                                                     int64_t slot, double *out,
                                                     int64_t capacity);
/* Forgets every slot and every site's statistics. */
COMET_RT_API void comet_rt_slots_reset(comet_rt_context *ctx);

/* ---- Per-site statistics ----------------------------------------------- */

typedef struct comet_rt_site_stats {
  int64_t calls;         /* compressions so far */
  int64_t bytes_in;      /* sum of uncompressed bytes */
  int64_t bytes_out;     /* sum of handle bytes */
  int64_t last_bytes_in; /* of the latest compression */
  int64_t last_bytes_out;
  int32_t codec;  /* of the latest compression */
  int64_t slot;   /* -1 without a slot */
  double last_eb; /* bound used by the latest compression */
} comet_rt_site_stats;

/* The sz entropy stage of one site's compressions on the CPU (a
 * comet_rt_codec_entropy), or -1, the default: the codec's process-wide
 * setting. The CUDA encoder writes fixed-width chunks whatever it is.
 * Returns 0 or COMET_RT_ERROR_INVALID_ARGUMENT. */
COMET_RT_API int32_t comet_rt_site_set_entropy(comet_rt_context *ctx,
                                               int64_t site, int32_t entropy);
/* The site's setting (-1: the process-wide one). */
COMET_RT_API int32_t comet_rt_site_get_entropy(comet_rt_context *ctx,
                                               int64_t site);
/* While on (off by default), each sz site's first compression on the CPU
 * also measures, by one more encoding, the block it would have taken
 * without an entropy stage. */
COMET_RT_API void comet_rt_sites_measure_fixed_width(comet_rt_context *ctx,
                                                     int32_t on);
/* That block (header and stream, COMET_RT_CODEC_ENTROPY_NONE); 0 when not
 * measured. */
COMET_RT_API int64_t comet_rt_site_get_fixed_width_bytes(comet_rt_context *ctx,
                                                         int64_t site);

/* Number of sites seen so far (the largest site index + 1). */
COMET_RT_API int64_t comet_rt_num_sites(comet_rt_context *ctx);
/* Returns 0, or COMET_RT_ERROR_INVALID_ARGUMENT for an unknown site. */
COMET_RT_API int32_t comet_rt_site_get_stats(comet_rt_context *ctx,
                                             int64_t site,
                                             comet_rt_site_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_HANDLES_H */
