//===- Checks.h - The contract's checks (not installed) -------------------===//
//
// What abi.def's rules call (Validate.cpp expands them): the common checks
// behind SAME_SHAPE, NUMEL, BROADCAST, ... and the named checks of CHECK().
// Each returns COMET_RT_SUCCESS or fails through Call::fail with one text
// ("<entry>: ..."), naming operands as abi.def does. Absent optional
// operands pass. A check reads tensor elements only of PARAM and SCAN
// operands, through Tensor::host.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_CORE_CHECKS_H
#define COMET_RUNTIME_CORE_CHECKS_H

#include "Contract.h"

#include <initializer_list>

namespace comet::rt::checks {

using Ts = std::initializer_list<const Tensor *>;

// Common checks.
int32_t sameShape(Call &c, Ts ts);
int32_t sameNumel(Call &c, Ts ts);
int32_t rank(Call &c, const Tensor &t, int64_t lo, int64_t hi);
int32_t numel(Call &c, const Tensor &t, int64_t n, const char *what);
int32_t oneOf(Call &c, const char *name, int64_t v,
              std::initializer_list<int64_t> allowed);
int32_t inRange(Call &c, const char *name, int64_t v, int64_t lo, int64_t hi);
int32_t positive(Call &c, const char *name, int64_t v);
int32_t nonneg(Call &c, const char *name, int64_t v);
int32_t finite(Call &c, const char *name, double v);
int32_t axis(Call &c, const char *name, int64_t axis, const Tensor &t);
int32_t broadcast(Call &c, const Tensor &out, Ts ins);

/// The expressions NUMEL may use: t's dim i (from the back when i < 0),
/// and the products of its dims before and from axis; -1 when t has no
/// such dims.
int64_t dimOf(const Tensor &t, int64_t i);
int64_t rowsOf(const Tensor &t, int64_t axis);
int64_t colsOf(const Tensor &t, int64_t axis);

// Named checks.

/// X [N,C,H,W] * W [M,C/group,kH,kW] -> Y [N,M,oH,oW] (floor).
int32_t convShape(Call &c, const Tensor &x, const Tensor &w, const Tensor &y,
                  int64_t sH, int64_t sW, int64_t pT, int64_t pL, int64_t pB,
                  int64_t pR, int64_t dH, int64_t dW, int64_t group);
/// Gemm's A, B 2-D, Y [M,N], C (when it counts) broadcasting to [M,N].
int32_t gemmShape(Call &c, const Tensor &a, const Tensor &b, const Tensor &cc,
                  const Tensor &y, float beta, int64_t transA, int64_t transB);
/// numpy MatMul: rank >= 1, promoted vectors, broadcast batch dims; Y is
/// exactly the result's shape.
int32_t matmulShape(Call &c, const Tensor &a, const Tensor &b, const Tensor &y);
/// FusedMatMul: ranks >= 2, op() swapping the last two dims, broadcast
/// batch dims; Y ends in [M,N] and holds the product's elements.
int32_t fusedMatmulShape(Call &c, const Tensor &a, const Tensor &b,
                         const Tensor &y, int64_t transA, int64_t transB);
/// BatchNormInternal in inference mode has only Y.
int32_t inferenceHasOnlyY(Call &c, int64_t trainingMode, const Tensor &rm,
                          const Tensor &rv, const Tensor &sm, const Tensor &si);
/// Labels [N, d...] for scores [N, C, d...], each in [0, C) unless it is
/// the ignore_index (SCAN).
int32_t lossLabels(Call &c, const Tensor &scores, const Tensor &labels,
                   int64_t ignoreIndex, int64_t hasIgnore);
/// The loss (or its gradient dY): N*d elements for reduction none, else 1.
int32_t lossElements(Call &c, const Tensor &loss, const Tensor &scores,
                     int64_t reduction);
/// MaxPool's window over X [N,C,H,W] gives Y [N,C,oH,oW] (floor or ceil).
int32_t maxpoolShape(Call &c, const Tensor &x, const Tensor &y, int64_t kH,
                     int64_t kW, int64_t sH, int64_t sW, int64_t pT, int64_t pL,
                     int64_t pB, int64_t pR, int64_t dH, int64_t dW);
/// Every index lies in [0, numel(dx)) (SCAN).
int32_t indicesInRange(Call &c, const Tensor &indices, const Tensor &dx);
/// A window position fits a byte (kH * kW <= 256) and every window of the
/// pooling from X [N,C,H,W] to Y holds an element of X.
int32_t maxpoolWindowsFit(Call &c, const Tensor &x, const Tensor &y, int64_t kH,
                          int64_t kW, int64_t sH, int64_t sW, int64_t pT,
                          int64_t pL, int64_t dH, int64_t dW);
/// Every window position (SCAN, one per output of the pooling from dX)
/// names an element of its window that lies in dX.
int32_t windowPositionsInRange(Call &c, const Tensor &positions,
                               const Tensor &dx, int64_t kH, int64_t kW,
                               int64_t sH, int64_t sW, int64_t pT, int64_t pL,
                               int64_t dH, int64_t dW);
/// X [N,C,...] -> Y [N,C,1,...].
int32_t globalPoolShape(Call &c, const Tensor &x, const Tensor &y);
/// AveragePool's window over X [N,C,H,W] gives Y (floor), pads < kernel.
int32_t avgpoolShape(Call &c, const Tensor &x, const Tensor &y, int64_t kH,
                     int64_t kW, int64_t sH, int64_t sW, int64_t pT, int64_t pL,
                     int64_t pB, int64_t pR);
/// Y is X padded by pads [2 * rank] (PARAM).
int32_t padShape(Call &c, const Tensor &x, const Tensor &pads, const Tensor &y);
/// ratio[1]? in [0, 1), training_mode[1]? (PARAM).
int32_t dropoutParams(Call &c, const Tensor &ratio, const Tensor &trainingMode);
/// shape (PARAM; 0 copies an input dim unless allowzero, one -1) gives
/// Y's dims, of X's size.
int32_t reshapeShape(Call &c, const Tensor &x, const Tensor &shape,
                     const Tensor &y, int64_t allowzero);
/// Y [prod(dims[:axis]), prod(dims[axis:])], axis in [-rank, rank].
int32_t flattenShape(Call &c, const Tensor &x, const Tensor &y, int64_t axis);
/// Y holds dims[start:end] (clamped).
int32_t shapeSlice(Call &c, const Tensor &x, const Tensor &y, int64_t start,
                   int64_t end);
/// Y = broadcast(X, shape) (PARAM).
int32_t expandShape(Call &c, const Tensor &x, const Tensor &shape,
                    const Tensor &y);
/// Y is X reduced over axes (PARAM), keepdims or not.
int32_t reduceShape(Call &c, const Tensor &x, const Tensor &axes,
                    const Tensor &y, int64_t keepdims, int64_t noopEmptyAxes);
int32_t reduceMeanShape(Call &c, const Tensor &x, const Tensor &axes,
                        const Tensor &y, int64_t keepdims);
/// perm (PARAM) permutes X's dims into Y's.
int32_t transposeShape(Call &c, const Tensor &x, const Tensor &y,
                       const Tensor &perm);
/// Y is the slice of X (PARAM starts, ends, axes, steps).
int32_t sliceShape(Call &c, const Tensor &x, const Tensor &starts,
                   const Tensor &ends, const Tensor &axes, const Tensor &steps,
                   const Tensor &y);
/// dX has `shape` (PARAM) and dY is the slice of it.
int32_t sliceGradShape(Call &c, const Tensor &dy, const Tensor &shape,
                       const Tensor &starts, const Tensor &ends,
                       const Tensor &axes, const Tensor &steps,
                       const Tensor &dx);
/// Every element is finite and fits in int64 (SCAN).
int32_t fitsInt64(Call &c, const Tensor &x);
/// No element of the i64 divisor b is 0 (SCAN).
int32_t nonzeroDivisor(Call &c, const Tensor &b);
/// Gather of data along axis at indices (SCAN, each in [-n, n)) gives Y.
int32_t gatherShape(Call &c, const Tensor &data, const Tensor &indices,
                    const Tensor &y, int64_t axis);
/// part's dims are whole's except along axis, where it fits at offset.
int32_t partShape(Call &c, const Tensor &whole, const Tensor &part,
                  int64_t axis, int64_t offset);
/// codec is a comet_rt_codec.
int32_t knownCodec(Call &c, int32_t codec);
/// handle is 0 or a live handle of the context.
int32_t freeableHandle(Call &c, int64_t handle);
/// handle is a live handle of the context's backend of y's size.
int32_t handleElements(Call &c, int64_t handle, const Tensor &y);
/// handle is a live mask handle of the shape of dy and dx.
int32_t maskHandle(Call &c, int64_t handle, const Tensor &dy, const Tensor &dx);
/// A slot statistics key (comet/runtime/slot_stats.h).
int32_t observeKey(Call &c, int64_t slot, int64_t consumer);

} // namespace comet::rt::checks

#endif // COMET_RUNTIME_CORE_CHECKS_H
