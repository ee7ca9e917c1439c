/*===- comet/runtime/abi.h - C prototypes of the runtime's interface ------===*
 *
 * Expands comet/runtime/abi.def, the one declaration of the functions that
 * compiled training code calls, into C prototypes. The kinds of abi.def map
 * to C types here; the same kinds map to MLIR types in the lowering.
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_ABI_H
#define COMET_RUNTIME_ABI_H

#include "comet/runtime/context.h"
#include "comet/runtime/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ONNX reduction attribute values of SoftmaxCrossEntropyLoss(+Grad). */
#define COMET_RT_REDUCTION_NONE 0
#define COMET_RT_REDUCTION_SUM 1
#define COMET_RT_REDUCTION_MEAN 2

/* The predicate of comet_rt_compare. */
#define COMET_RT_COMPARE_GE 0
#define COMET_RT_COMPARE_LE 1
#define COMET_RT_COMPARE_EQ 2

/* One element of BatchNorm's training output from the saved mean and
 * 1/sqrt(var + eps): both backends' batch_norm_internal (training mode)
 * and batch_norm_apply compute it here, so a recomputed output has the
 * forward's bits.
 * The activation batch_norm_apply applies after the normalization: the
 * relu and clip kernels' own expressions, so a recomputed output has the
 * forward's bits (relu gives +0 for -0; clip lets NaN through). */
#define COMET_RT_BN_ACT_NONE 0
#define COMET_RT_BN_ACT_RELU 1
#define COMET_RT_BN_ACT_CLIP 2
#ifdef __CUDACC__
__host__ __device__
#endif
static inline float comet_rt_bn_affine(float x, float mean, float inv_std,
                                       float scale, float bias) {
  float s = inv_std * scale;
  return x * s + (bias - mean * s);
}
#ifdef __CUDACC__
__host__ __device__
#endif
static inline float comet_rt_bn_activation(float v, int64_t act, float lo,
                                           float hi) {
  if (act == COMET_RT_BN_ACT_RELU)
    return v > 0.0f ? v : 0.0f;
  if (act == COMET_RT_BN_ACT_CLIP) {
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
  }
  return v;
}

/* ONNX Mod of two integers, b != 0: with fmod 0 the remainder takes the
 * divisor's sign (Python's %), with fmod 1 the dividend's (C's %); a
 * divisor of -1 gives 0 (INT64_MIN % -1 overflows in C). The compiler's
 * folding of constant shape arithmetic and both backends' mod_i64 compute
 * it here, so they cannot disagree. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline int64_t comet_rt_mod_i64(int64_t a, int64_t b, int64_t fmod) {
  if (b == -1)
    return 0;
  int64_t r = a % b;
  if (!fmod && r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

/* A 1-D byte memref descriptor (memref<?xi8>), what buffer_alloc returns. */
typedef struct comet_rt_buffer {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
} comet_rt_buffer;

#define COMET_RT_CTYPE_tf32 comet_rt_memref *
#define COMET_RT_CTYPE_ti64 comet_rt_memref *
#define COMET_RT_CTYPE_ti1 comet_rt_memref *
#define COMET_RT_CTYPE_tu8 comet_rt_memref *
#define COMET_RT_CTYPE_buffer comet_rt_buffer *
#define COMET_RT_CTYPE_handle int64_t
#define COMET_RT_CTYPE_i64 int64_t
#define COMET_RT_CTYPE_i32 int32_t
#define COMET_RT_CTYPE_f32 float
#define COMET_RT_CTYPE_f64 double

#define COMET_RT_CRET_status int32_t
#define COMET_RT_CRET_handle int64_t
#define COMET_RT_CRET_none void
#define COMET_RT_CRET_buffer void

/* A memref result comes first, through a pointer. */
#define COMET_RT_CRESULT_status
#define COMET_RT_CRESULT_handle
#define COMET_RT_CRESULT_none
#define COMET_RT_CRESULT_buffer comet_rt_buffer *result,

#define COMET_RT_ARG(kind, name) , COMET_RT_CTYPE_##kind name
#define COMET_RT_FUNC(name, ret, args)                                         \
  COMET_RT_API COMET_RT_CRET_##ret _mlir_ciface_comet_rt_##name(               \
      COMET_RT_CRESULT_##ret comet_rt_context *ctx args);
#include "comet/runtime/abi.def"

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_ABI_H */
