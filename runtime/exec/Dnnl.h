//===- Dnnl.h - oneDNN engine, primitive cache and helpers ----------------===//

#ifndef COMET_RUNTIME_EXEC_DNNL_H
#define COMET_RUNTIME_EXEC_DNNL_H

#include "Internal.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>

namespace comet::rt {

/// A cached primitive and the scratchpad it needs.
struct Primitive {
  dnnl::primitive prim;
  dnnl::memory::desc scratchpad;
};

dnnl::engine &engine();
dnnl::stream &stream();
dnnl::primitive_attr userScratchpadAttr();
/// The cached primitive for key, made by make on first use.
Primitive getPrimitive(const std::string &key,
                       const std::function<Primitive()> &make);
/// Runs p with a scratchpad from comet_rt_alloc (workspace) and waits.
void execute(comet_rt_context *ctx, const Primitive &p,
             std::unordered_map<int, dnnl::memory> args);
dnnl::memory::desc plainMd(const std::vector<int64_t> &dims);
dnnl::memory mem(const dnnl::memory::desc &md, void *data);
std::string key(const char *op, std::initializer_list<int64_t> ints,
                const std::vector<int64_t> &more = {});
/// Runs body, turning oneDNN and allocation exceptions into error codes.
int32_t guard(const char *op, const std::function<int32_t()> &body);
/// Softmax or log-softmax of x into y along axis, on oneDNN.
/// Y = f(X) by a oneDNN eltwise primitive `alg` (alpha, beta) over the flat
/// tensor; x and y have the same number of elements.
int32_t eltwiseImpl(comet_rt_context *ctx, const char *op, dnnl::algorithm alg,
                    float alpha, float beta, const Tensor &x, const Tensor &y);
/// dX = dY * f'(.) over n elements by oneDNN eltwise backward `alg` (with
/// `alpha`, e.g. swish's), from the forward's output `in` (a
/// *_use_dst_for_bwd alg: fromDst) or input.
int32_t eltwiseBackwardImpl(comet_rt_context *ctx, const char *op,
                            dnnl::algorithm alg, bool fromDst, float *in,
                            const Tensor &dy, const Tensor &dx, int64_t n,
                            float alpha = 0.f);
/// The memref forms: Y = f(X), and dX = dY * f'(.) from the saved `in`
/// (X or Y as above), all of one shape.
int32_t eltwiseForward(comet_rt_context *ctx, const char *op,
                       dnnl::algorithm alg, comet_rt_memref *xm,
                       comet_rt_memref *ym, float alpha = 0.f);
int32_t eltwiseBackward(comet_rt_context *ctx, const char *op,
                        dnnl::algorithm alg, bool fromDst, comet_rt_memref *dym,
                        comet_rt_memref *inm, comet_rt_memref *dxm,
                        float alpha = 0.f);

/// Y = alpha * A' x B' on oneDNN matmul, where A' and B' are A and B read
/// through the logical dims (padded to one rank r >= 2) and strides given;
/// batch dims broadcast. Y holds the product's elements; with keepsLastTwo
/// it must also end in the product's last two dims (it may drop leading
/// 1s), without it only the count is checked (numpy's rank-1 MatMul drops
/// a promoted dim). opts are the kernel's attributes, for error messages.
/// With sumBeta, Y = alpha * A' x B' + sumBeta * Y (Gemm's C, which the
/// caller has put into Y).
/// The product of d[from, to).
int64_t product(const std::vector<int64_t> &d, size_t from, size_t to);
/// Views of an elementwise op's f32 X and Y, which must share a shape.
int32_t unaryViews(const char *op, comet_rt_memref *xm, comet_rt_memref *ym,
                   Tensor &x, Tensor &y);
/// Row-major strides of dims.
std::vector<int64_t> plainStrides(const std::vector<int64_t> &d);
int32_t matmulImpl(comet_rt_context *ctx, const char *op, const Tensor &a,
                   const Tensor &b, const Tensor &y,
                   const std::vector<int64_t> &ad,
                   const std::vector<int64_t> &as,
                   const std::vector<int64_t> &bd,
                   const std::vector<int64_t> &bs, float alpha,
                   bool keepsLastTwo, const std::string &opts,
                   std::optional<float> sumBeta = std::nullopt);

int32_t softmaxImpl(comet_rt_context *ctx, const char *op, const Tensor &x,
                    const Tensor &y, int64_t axis, bool log);

} // namespace comet::rt

#endif // COMET_RUNTIME_EXEC_DNNL_H
