/*===- comet/runtime/types.h - Shared C ABI types of the runtime ---------===*
 *
 * The last-error message and the memref descriptor layout that exec.h,
 * alloc.h and data.h share; the result codes are comet_rt_status
 * (status.h). Pure C; no MLIR or LLVM headers.
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_TYPES_H
#define COMET_RUNTIME_TYPES_H

#include "comet/runtime/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The message of the last failed call on this thread ("" if none). The
 * pointer stays valid until the next runtime call on the same thread. */
COMET_RT_API const char *comet_rt_last_error(void);

/* When set (non-zero), a failing kernel prints its message to stderr and
 * calls abort() instead of returning. JIT-compiled code that ignores return
 * values should turn this on. Default: off. Also set by the environment
 * variable COMET_RT_ABORT_ON_ERROR=1 at load time. */
COMET_RT_API void comet_rt_set_abort_on_error(int enabled);

/* MLIR's unranked memref as passed by llvm.emit_c_interface functions
 * (the same layout as UnrankedMemRefType<T> in CRunnerUtils.h): `rank` and a
 * pointer to a ranked descriptor laid out as
 *   { T *allocated; T *aligned; int64_t offset;
 *     int64_t sizes[rank]; int64_t strides[rank]; }                      */
typedef struct comet_rt_memref {
  int64_t rank;
  void *descriptor;
} comet_rt_memref;

/* The ranked descriptor that comet_rt_memref::descriptor points to. */
typedef struct comet_rt_memref_desc {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes_and_strides[]; /* sizes[rank], then strides[rank] */
} comet_rt_memref_desc;

/* Reads `m` as a dense row-major tensor of `elem_bytes`-sized elements:
 * *data = aligned + offset, dims[0 .. rank) (rank <= max_rank, at most 16)
 * and *numel. Strides of size-1 dimensions, and of memrefs with no
 * elements, do not matter. Returns NULL on success, else a static string
 * saying why not: "null memref", "bad rank", "negative size", "not
 * contiguous row-major" or "null data". Records no error: the one place
 * that checks memref layouts, for kernels and support libraries alike. */
COMET_RT_API const char *comet_rt_memref_view(const comet_rt_memref *m,
                                              size_t elem_bytes,
                                              int64_t max_rank, void **data,
                                              int64_t *dims, int64_t *numel);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_TYPES_H */
