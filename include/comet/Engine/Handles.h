/*===- comet/Engine/Handles.h - Compressed-activation handles, C ABI ------===*
 *
 * What comet-lower-to-runtime emits for comet.compress / comet.decompress.
 * A compressed activation is an opaque handle (an int64_t; 0 is "none")
 * owned by this library: one block from comet_rt_alloc in the category
 * `compressed`, holding a small header and the codec stream (docs/
 * codec-format.md), so the allocator counts exactly what is kept.
 *
 * Lossy bounds live in a slot table: slot s holds the bound that every
 * compress of slot s reads at run time. The compiled bound only seeds an
 * undefined slot; a tuner changes it with comet_rt_slot_set_eb. Every
 * compress site (the n-th comet.compress of the function, numbered by the
 * lowering) keeps statistics for the report.
 *
 * Library: libCometExecSupport (lib/Engine), on CometRuntime and CometCodec.
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_ENGINE_HANDLES_H
#define COMET_ENGINE_HANDLES_H

#include "comet/runtime/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Compresses x (f32, contiguous) with codec (comet_rt_codec), for compress
 * site `site` (>= 0). A lossy codec reads its bound from slot `slot` when
 * slot >= 0 (defining it with eb if it is not defined yet), else uses eb.
 * Returns the handle, or 0 on failure (message in
 * comet_rt_handles_last_error()). */
COMET_RT_API int64_t _mlir_ciface_comet_rt_compress(comet_rt_memref *x,
                                                    int32_t codec, int64_t slot,
                                                    double eb, int64_t site);

/* Decompresses handle into y (f32, the handle's element count). The handle
 * stays valid. Returns 0 or a COMET_RT_ERROR_* code. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_decompress(int64_t handle,
                                                      comet_rt_memref *y);

/* ReluGrad straight from a mask handle: dX[i] = bit i set ? dY[i] : 0, the
 * bit being x[i] > 0 of the compressed tensor (docs/codec-format.md). dY
 * and dX (f32, contiguous, may alias) have the handle's shape. Reads the
 * bits in place: no f32 tensor is allocated. Returns 0 or a
 * COMET_RT_ERROR_* code. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_relu_grad_mask(comet_rt_memref *dy,
                                                          int64_t handle,
                                                          comet_rt_memref *dx);

/* The message of this library's last failure on this thread ("" if the
 * last call succeeded). comet_rt_last_error() has the kernels' messages. */
COMET_RT_API const char *comet_rt_handles_last_error(void);

/* Releases a handle (0 is a no-op). */
COMET_RT_API void comet_rt_handle_free(int64_t handle);

/* Bytes a handle holds (header + stream), as counted by the allocator. */
COMET_RT_API int64_t comet_rt_handle_bytes(int64_t handle);

/* ---- Slots ---------------------------------------------------------------*/

/* The bound of slot (negative when undefined). */
COMET_RT_API double comet_rt_slot_get_eb(int64_t slot);
/* Sets the bound of slot (> 0 and finite); returns 0 or an error code. */
COMET_RT_API int32_t comet_rt_slot_set_eb(int64_t slot, double eb);
/* Forgets every slot and every site's statistics. */
COMET_RT_API void comet_rt_slots_reset(void);

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

/* Number of sites seen so far (the largest site index + 1). */
COMET_RT_API int64_t comet_rt_num_sites(void);
/* Returns 0, or COMET_RT_ERROR_INVALID_ARGUMENT for an unknown site. */
COMET_RT_API int32_t comet_rt_site_get_stats(int64_t site,
                                             comet_rt_site_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* COMET_ENGINE_HANDLES_H */
