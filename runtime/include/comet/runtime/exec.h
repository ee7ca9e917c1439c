/*===- comet/runtime/exec.h - CPU execution kernels, C ABI ----------------===*
 *
 * The kernels that lowered onnx/comet ops call, on MLIR memrefs. docs/
 * runtime.md has each op's semantics and the ONNX Runtime source it was
 * checked against.
 *
 * Calling convention
 * ------------------
 * 1. Every kernel is named _mlir_ciface_comet_rt_<op>: the name MLIR gives
 *    the C-interface wrapper of an external `func.func private
 *    @comet_rt_<op>(...) attributes {llvm.emit_c_interface}`. Tensors are
 *    `memref<*xf32>` (labels, indices, shapes, axes: `memref<*xi64>`; ONNX
 *    bool tensors: `memref<*xi1>`, one byte per element), which the wrapper
 *    passes as a pointer to comet_rt_memref {rank, descriptor}.
 * 2. Operands follow the ONNX op: its inputs in ONNX order, then its outputs
 *    in ONNX order, then its attributes as scalars (i64, or f32 for float
 *    attributes) in the order given at each function. Tensor inputs of the
 *    op (a learning rate, a step, a Scale factor) stay memrefs.
 * 3. Destination passing: the caller allocates every output (with
 *    comet_rt_alloc, see alloc.h) and its shape is the output's shape; a
 *    kernel writes all of it. Inputs are never written unless stated
 *    (optimizers and InPlaceAccumulatorV2 update in place, like ORT).
 * 4. An optional operand that is absent is a NULL pointer or a memref with
 *    0 elements (e.g. `memref<0xf32>` cast to `memref<*xf32>`).
 * 5. Memrefs must be contiguous row-major (the identity layout; any
 *    offset). Spatial ops are 2-D (NCHW). auto_pad must be resolved to
 *    explicit pads by the caller.
 * 6. Each returns int32_t: 0 on success, else a COMET_RT_ERROR_* code with
 *    a message in comet_rt_last_error() (or abort, see
 *    comet_rt_set_abort_on_error). Nothing is written on a shape error.
 *
 * Example: ConvGrad with no dX, as the lowering emits it:
 *
 *   func.func private @comet_rt_conv_grad2d(memref<*xf32>, memref<*xf32>,
 *       memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>,
 *       i64, i64, i64, i64, i64, i64, i64, i64, i64) -> i32
 *       attributes {llvm.emit_c_interface}
 *   ...
 *   %none = memref.alloca() : memref<0xf32>
 *   %n = memref.cast %none : memref<0xf32> to memref<*xf32>
 *   %dy = memref.cast %dY : memref<64x4x28x28xf32> to memref<*xf32>
 *   ...
 *   %rc = func.call @comet_rt_conv_grad2d(%dy, %x, %w, %n, %dw, %db,
 *       %c1, %c1, %c2, %c2, %c2, %c2, %c1, %c1, %c1)
 *       : (...) -> i32   // strides 1,1; pads 2,2,2,2; dilations 1,1; group 1
 *
 * Kernels are thread-safe; oneDNN primitives are cached by shape and
 * attributes, and their scratchpads come from comet_rt_alloc (workspace).
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_EXEC_H
#define COMET_RUNTIME_EXEC_H

#include "comet/runtime/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef comet_rt_memref comet_rt_mr; /* shorthand for the declarations */

/* ONNX reduction attribute values of SoftmaxCrossEntropyLoss(+Grad). */
#define COMET_RT_REDUCTION_NONE 0
#define COMET_RT_REDUCTION_SUM 1
#define COMET_RT_REDUCTION_MEAN 2

/* ---- Convolution (oneDNN) ------------------------------------------------ */

/* Conv: X[N,C,H,W], W[M,C/group,kH,kW], B[M]? -> Y[N,M,oH,oW].
 * Attributes: strides (sH, sW), pads (top, left, bottom, right),
 * dilations (dH, dW), group. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_conv2d(
    comet_rt_mr *x, comet_rt_mr *w, comet_rt_mr *b, comet_rt_mr *y,
    int64_t stride_h, int64_t stride_w, int64_t pad_top, int64_t pad_left,
    int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t group);

/* com.microsoft ConvGrad: (dY, X, W) -> (dX?, dW?, dB?). Same attributes
 * as conv2d. Any output may be absent. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_conv_grad2d(
    comet_rt_mr *dy, comet_rt_mr *x, comet_rt_mr *w, comet_rt_mr *dx,
    comet_rt_mr *dw, comet_rt_mr *db, int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w, int64_t group);

/* ---- Matrix products (oneDNN matmul) ------------------------------------- */

/* Gemm: Y = alpha * op(A) * op(B) + beta * C, op = transpose when trans_*
 * is set; C? broadcasts unidirectionally to [M,N] (rank 0, [N], [1,N],
 * [M,1], [M,N]). Attributes: alpha, beta, transA, transB. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_gemm(comet_rt_mr *a, comet_rt_mr *b,
                                                comet_rt_mr *c, comet_rt_mr *y,
                                                float alpha, float beta,
                                                int64_t trans_a,
                                                int64_t trans_b);

/* MatMul with numpy semantics: rank-1 operands are promoted and the
 * promoted axis removed again; batch dims broadcast. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_matmul(comet_rt_mr *a,
                                                  comet_rt_mr *b,
                                                  comet_rt_mr *y);

/* ---- Normalization (oneDNN batch normalization) -------------------------- */

/* com.microsoft BatchNormInternal: (X[N,C,...], scale[C], B[C],
 * input_mean[C], input_var[C]) -> (Y, running_mean?, running_var?,
 * saved_mean?, saved_inv_std?). training_mode != 0: batch statistics
 * (biased variance), running = input * momentum + batch * (1 - momentum),
 * saved_inv_std = 1 / sqrt(var + epsilon). training_mode == 0: normalizes
 * with input_mean/input_var; the other outputs must be absent.
 * Attributes: epsilon, momentum, training_mode. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_batch_norm_internal(
    comet_rt_mr *x, comet_rt_mr *scale, comet_rt_mr *bias,
    comet_rt_mr *input_mean, comet_rt_mr *input_var, comet_rt_mr *y,
    comet_rt_mr *running_mean, comet_rt_mr *running_var,
    comet_rt_mr *saved_mean, comet_rt_mr *saved_inv_std, float epsilon,
    float momentum, int64_t training_mode);

/* com.microsoft BatchNormalizationGrad: (dY, X, scale, saved_mean,
 * saved_inv_std) -> (dX, dScale, dBias). Attribute: epsilon. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_batch_norm_grad(
    comet_rt_mr *dy, comet_rt_mr *x, comet_rt_mr *scale,
    comet_rt_mr *saved_mean, comet_rt_mr *saved_inv_std, comet_rt_mr *dx,
    comet_rt_mr *dscale, comet_rt_mr *dbias, float epsilon);

/* ---- Loss (oneDNN log-softmax + glue) ------------------------------------ */

/* SoftmaxCrossEntropyLoss: (scores[N,C,d...], labels[N,d...] i64,
 * weights[C]?) -> (loss, log_prob[N,C,d...]?). loss is [N,d...] for
 * reduction none, else one element. mean divides by the sum of the weights
 * of the non-ignored samples (their count without weights).
 * Attributes: reduction (COMET_RT_REDUCTION_*), ignore_index and
 * has_ignore_index (0 when the attribute is absent). */
COMET_RT_API int32_t _mlir_ciface_comet_rt_softmax_cross_entropy_loss(
    comet_rt_mr *scores, comet_rt_mr *labels, comet_rt_mr *weights,
    comet_rt_mr *loss, comet_rt_mr *log_prob, int64_t reduction,
    int64_t ignore_index, int64_t has_ignore_index);

/* com.microsoft SoftmaxCrossEntropyLossGrad: (dY, log_prob, labels,
 * weights?) -> dX = (exp(log_prob) - onehot(label)) * w * dY [/ sum w].
 * Same attributes as the loss. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_softmax_cross_entropy_loss_grad(
    comet_rt_mr *dy, comet_rt_mr *log_prob, comet_rt_mr *labels,
    comet_rt_mr *weights, comet_rt_mr *dx, int64_t reduction,
    int64_t ignore_index, int64_t has_ignore_index);

/* Softmax / LogSoftmax along axis (negative counts from the back). */
COMET_RT_API int32_t _mlir_ciface_comet_rt_softmax(comet_rt_mr *x,
                                                   comet_rt_mr *y,
                                                   int64_t axis);
COMET_RT_API int32_t _mlir_ciface_comet_rt_log_softmax(comet_rt_mr *x,
                                                       comet_rt_mr *y,
                                                       int64_t axis);

/* ---- Activations and pooling (glue) -------------------------------------- */

COMET_RT_API int32_t _mlir_ciface_comet_rt_relu(comet_rt_mr *x, comet_rt_mr *y);

/* com.microsoft ReluGrad: (dY, X) -> dX = X > 0 ? dY : 0. ORT's gradient
 * graph passes Relu's output as X; the input gives the same mask. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_relu_grad(comet_rt_mr *dy,
                                                     comet_rt_mr *x,
                                                     comet_rt_mr *dx);

/* MaxPool: X[N,C,H,W] -> (Y[N,C,oH,oW], Indices? i64). The output size is
 * Y's (so ceil_mode is the caller's choice of oH, oW); windows are clipped
 * to the input. Indices are flat indices into X including the N and C
 * offsets, as ORT computes them: ((n*C + c)*H + h)*W + w for storage_order
 * 0, ((n*C + c)*W + w)*H + h for 1. Ties pick the first in scan order.
 * Attributes: kernel (kH, kW), strides, pads (top, left, bottom, right),
 * dilations, storage_order. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_maxpool2d(
    comet_rt_mr *x, comet_rt_mr *y, comet_rt_mr *indices, int64_t kernel_h,
    int64_t kernel_w, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t storage_order);

/* MaxPoolGrad: (dY, Indices i64) -> dX = 0, then dX[Indices[i]] += dY[i].
 * Every index must lie in [0, numel(dX)). */
COMET_RT_API int32_t _mlir_ciface_comet_rt_maxpool_grad(comet_rt_mr *dy,
                                                        comet_rt_mr *indices,
                                                        comet_rt_mr *dx);

/* GlobalAveragePool: X[N,C,...] -> Y[N,C,1,...]. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_global_average_pool(comet_rt_mr *x,
                                                               comet_rt_mr *y);

/* ---- Shapes, copies, broadcasting (glue) --------------------------------- */

/* Identity (also Reshape and Flatten once the caller knows Y's shape):
 * copies numel elements; X and Y must have the same element count. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_identity(comet_rt_mr *x,
                                                    comet_rt_mr *y);
COMET_RT_API int32_t _mlir_ciface_comet_rt_identity_i64(comet_rt_mr *x,
                                                        comet_rt_mr *y);

/* Reshape: (X, shape i64) -> Y. Checks that shape (with 0 = copy the input
 * dim unless allowzero, and one -1) gives Y's dims, then copies. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_reshape(comet_rt_mr *x,
                                                   comet_rt_mr *shape,
                                                   comet_rt_mr *y,
                                                   int64_t allowzero);

/* Flatten: X -> Y[prod(dims[:axis]), prod(dims[axis:])]. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_flatten(comet_rt_mr *x,
                                                   comet_rt_mr *y,
                                                   int64_t axis);

/* Shape: X (any element type, not read) -> Y i64 = dims[start:end];
 * end > rank means rank (pass INT64_MAX for "absent"). */
COMET_RT_API int32_t _mlir_ciface_comet_rt_shape(comet_rt_mr *x, comet_rt_mr *y,
                                                 int64_t start, int64_t end);

/* Add (and Sum of two inputs): Y = A + B with numpy broadcasting. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_add(comet_rt_mr *a, comet_rt_mr *b,
                                               comet_rt_mr *y);

/* Expand: (X, shape i64) -> Y, Y's dims = broadcast(X dims, shape). */
COMET_RT_API int32_t _mlir_ciface_comet_rt_expand(comet_rt_mr *x,
                                                  comet_rt_mr *shape,
                                                  comet_rt_mr *y);

/* ReduceSum: (X, axes? i64) -> Y. Axes may be negative; empty axes reduce
 * everything unless noop_with_empty_axes (then Y = X). Y has the reduced
 * dims as 1 (keepdims) or removed. Attributes: keepdims,
 * noop_with_empty_axes. Uses oneDNN reduction. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_reduce_sum(comet_rt_mr *x,
                                                      comet_rt_mr *axes,
                                                      comet_rt_mr *y,
                                                      int64_t keepdims,
                                                      int64_t noop_empty_axes);

/* com.microsoft Scale: (X, scale[1]) -> Y = X * s, or X / s when
 * scale_down. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_scale(comet_rt_mr *x,
                                                 comet_rt_mr *scale,
                                                 comet_rt_mr *y,
                                                 int64_t scale_down);

/* ---- Gradient accumulation and optimizers (glue, in place) --------------- */

/* com.microsoft InPlaceAccumulatorV2: (buffer, value, overwrite? i1) ->
 * (updated i1, buffer_out?). buffer_out (which may be buffer itself; when
 * absent, buffer is updated) = overwrite ? value : buffer + value;
 * updated = true, as in ORT. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_inplace_accumulator_v2(
    comet_rt_mr *buffer, comet_rt_mr *value, comet_rt_mr *overwrite,
    comet_rt_mr *updated, comet_rt_mr *buffer_out);

/* com.microsoft AdamWOptimizer for one tensor of its sequences:
 * (lr[1], step[1] i64, weight, grad, m1, m2, update_signal? i1) ->
 * updated_flag? i1; weight, m1, m2 are updated in place. When
 * update_signal is present and false nothing changes and the flag is 0.
 * adam_mode 0 (PyTorch AdamW) and 1 (Hugging Face), see docs/runtime.md.
 * Attributes: alpha, beta, epsilon, weight_decay, adam_mode, correct_bias. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_adamw(
    comet_rt_mr *lr, comet_rt_mr *step, comet_rt_mr *weight, comet_rt_mr *grad,
    comet_rt_mr *m1, comet_rt_mr *m2, comet_rt_mr *update_signal,
    comet_rt_mr *updated_flag, float alpha, float beta, float epsilon,
    float weight_decay, int64_t adam_mode, int64_t correct_bias);

/* com.microsoft SGDOptimizerV2 for one tensor: (lr[1], weight, grad,
 * update_signal? i1) -> update_completed? i1; weight -= lr * grad. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_sgd_v2(
    comet_rt_mr *lr, comet_rt_mr *weight, comet_rt_mr *grad,
    comet_rt_mr *update_signal, comet_rt_mr *update_completed);

/* Built-in SGD with momentum (PyTorch convention, velocity starts at 0):
 * g' = grad + weight_decay * weight; v = momentum * v + g';
 * weight -= lr * (nesterov ? g' + momentum * v : v). Updates weight and
 * velocity in place. */
COMET_RT_API int32_t _mlir_ciface_comet_rt_sgd_momentum(
    comet_rt_mr *lr, comet_rt_mr *weight, comet_rt_mr *grad,
    comet_rt_mr *velocity, float momentum, float weight_decay,
    int64_t nesterov);

/* ---- Statistics (glue) --------------------------------------------------- */

/* out[0] = mean |X|; out[1] = fraction of non-zero elements of X. out has
 * 2 elements. No lowering emits it; the bound tuner's statistics come from
 * comet_rt_slot_observe_* (docs/tuning.md). */
COMET_RT_API int32_t
_mlir_ciface_comet_rt_abs_mean_and_density(comet_rt_mr *x, comet_rt_mr *out);

/* omp_set_num_threads(num_threads) on the calling thread: the thread count
 * of the glue kernels and of oneDNN (built on the same OpenMP runtime);
 * num_threads <= 0 leaves it as it is. */
COMET_RT_API void comet_rt_set_num_threads(int num_threads);

/* Number of oneDNN primitives in the cache (for tests). */
COMET_RT_API int64_t comet_rt_primitive_cache_size(void);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_EXEC_H */
