/*===- comet/runtime/alloc.h - Allocator with exact accounting -----------===*
 *
 * Every tensor of a COMET training step comes from comet_rt_alloc and is
 * counted in one category of one runtime context (context.h); compiled code
 * allocates through comet_rt_buffer_alloc (abi.def). The allocator keeps, per
 *category, the bytes live now and the most ever live at once, and the global
 *peak: the largest sum over all categories at one instant (not the sum of
 *per-category peaks). It is thread-safe; the global peak and its per-category
 *breakdown are taken under one lock, so they are exact.
 *
 * The counted size is the requested size, not the rounded-up block.
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_ALLOC_H
#define COMET_RUNTIME_ALLOC_H

#include "comet/runtime/context.h"
#include "comet/runtime/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum comet_rt_alloc_category {
  COMET_RT_MEM_PARAMS = 0,
  COMET_RT_MEM_GRADS = 1,
  COMET_RT_MEM_OPTIMIZER_STATE = 2,
  COMET_RT_MEM_ACTIVATIONS = 3,
  COMET_RT_MEM_COMPRESSED = 4,
  COMET_RT_MEM_WORKSPACE = 5, /* oneDNN scratchpads, kernel temporaries */
  COMET_RT_MEM_OTHER = 6,     /* data batches, labels, shapes, ... */
  COMET_RT_MEM_NUM_CATEGORIES = 7
} comet_rt_alloc_category;

/* The default of comet_rt_context_set_workspace_limit: 16 MiB. */
#define COMET_RT_DEFAULT_WORKSPACE_LIMIT (16ll << 20)

/* Alignment of every block comet_rt_alloc returns. */
#define COMET_RT_ALLOC_ALIGNMENT 64

/* Allocates bytes (64-byte aligned, uninitialised) in category, counted by
 * ctx (NULL: the default context). bytes == 0 gives a valid unique pointer
 * that counts 0 bytes. Returns NULL when out of memory or for an unknown
 * category. */
COMET_RT_API void *comet_rt_alloc(comet_rt_context *ctx, size_t bytes,
                                  int32_t category);

/* Like comet_rt_alloc, but the memory is zeroed. */
COMET_RT_API void *comet_rt_alloc_zeroed(comet_rt_context *ctx, size_t bytes,
                                         int32_t category);

/* Frees a block from comet_rt_alloc*, crediting the context that counted
 * it; NULL is a no-op. */
COMET_RT_API void comet_rt_free(void *ptr);

/* Shrinks a block from comet_rt_alloc* to its first bytes (at most its
 * size) and counts it, from now on, as bytes in category (e.g. a stream
 * encoded into a workspace block of a guessed size becomes a compressed
 * tensor of its exact size); returns it. Its address may change, its first
 * bytes are kept, and the old address is then invalid. A device block keeps
 * its size and address (only its counting changes). NULL, with ptr
 * unchanged, when ptr is not a block of ours, bytes is larger than it or
 * category is unknown. */
COMET_RT_API void *comet_rt_alloc_shrink(void *ptr, size_t bytes,
                                         int32_t category);

/* The requested size and the category of a block (0 / -1 if not ours). */
COMET_RT_API size_t comet_rt_alloc_size(const void *ptr);
COMET_RT_API int32_t comet_rt_alloc_category_of(const void *ptr);

/* Counts delta bytes of memory not from comet_rt_alloc in category (e.g.
 * memory a library holds on our behalf). */
COMET_RT_API void comet_rt_alloc_track(comet_rt_context *ctx, int64_t delta,
                                       int32_t category);

typedef struct comet_rt_alloc_stats {
  int64_t current[COMET_RT_MEM_NUM_CATEGORIES];
  int64_t peak[COMET_RT_MEM_NUM_CATEGORIES];
  int64_t current_total;
  int64_t peak_total;
  /* Per-category bytes at the instant peak_total was reached. */
  int64_t at_peak[COMET_RT_MEM_NUM_CATEGORIES];
  int64_t num_allocs; /* comet_rt_alloc calls since the last reset */
  int64_t num_frees;
  int64_t live_blocks;
  /* Graph tensors: every category but workspace (kernel scratchpads are not
   * graph values), what the liveness analysis predicts. */
  int64_t tensor_current;
  int64_t tensor_peak;
} comet_rt_alloc_stats;

/* The workspace one kernel call of ctx should take at most, in bytes
 * (oneDNN's scratchpad and the kernel's own temporaries): a kernel whose
 * work can be split does it in parts that fit (a convolution's weight
 * gradient over groups of output channels), as far as it can be split.
 * Compression's output staging is not bounded by it. 0: no limit. A new
 * context starts at COMET_RT_DEFAULT_WORKSPACE_LIMIT; negative values are
 * ignored. */
COMET_RT_API void comet_rt_context_set_workspace_limit(comet_rt_context *ctx,
                                                       int64_t bytes);
COMET_RT_API int64_t comet_rt_context_workspace_limit(comet_rt_context *ctx);

/* Outputs of comet_rt_conv_grad2d_workspace. */
#define COMET_RT_CONV_GRAD_DX 1
#define COMET_RT_CONV_GRAD_DW 2
#define COMET_RT_CONV_GRAD_DB 4

/* The most workspace that conv_grad2d takes at once on ctx's backend, under
 * ctx's workspace limit, for X, W and dY of these NCHW and OIHW dims, the
 * window and group, and the outputs (COMET_RT_CONV_GRAD_* bits) present:
 * what a memory prediction adds at a ConvGrad. -1 with
 * comet_rt_last_error() saying why when the shapes are not a convolution's
 * or the backend cannot say. */
COMET_RT_API int64_t comet_rt_conv_grad2d_workspace(
    comet_rt_context *ctx, const int64_t x_dims[4], const int64_t w_dims[4],
    const int64_t dy_dims[4], int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w, int64_t group, int32_t outputs);

COMET_RT_API void comet_rt_alloc_get_stats(comet_rt_context *ctx,
                                           comet_rt_alloc_stats *stats);

/* Resets the peaks to the current values and the call counters to zero;
 * live blocks and current bytes are kept. */
COMET_RT_API void comet_rt_alloc_reset_peaks(comet_rt_context *ctx);

/* Timeline recording: while on, every allocation and free of a graph tensor
 * appends tensor_current to the context's timeline (which turning it on
 * restarts with the current value). comet_rt_alloc_timeline copies up to
 * capacity samples to out and returns how many there are. */
COMET_RT_API void comet_rt_alloc_record_timeline(comet_rt_context *ctx,
                                                 int32_t on);
COMET_RT_API int64_t comet_rt_alloc_timeline(comet_rt_context *ctx,
                                             int64_t *out, int64_t capacity);

/* "params", "grads", "optimizer_state", "activations", "compressed",
 * "workspace", "other"; "unknown" for anything else. */
COMET_RT_API const char *comet_rt_alloc_category_name(int32_t category);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_ALLOC_H */
