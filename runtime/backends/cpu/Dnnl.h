//===- Dnnl.h - oneDNN engine, primitive cache and helpers ----------------===//
//
// What the CPU backend's families share: the oneDNN engine and stream, the
// primitive cache (created once per shape and attribute key), execution
// with a scratchpad from comet_rt_alloc (workspace), and the eltwise and
// softmax primitives several families use. Not installed.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_BACKENDS_CPU_DNNL_H
#define COMET_RUNTIME_BACKENDS_CPU_DNNL_H

#include "Cpu.h"
#include "Shapes.h"
#include "Workspace.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <initializer_list>
#include <new>
#include <string>
#include <unordered_map>

namespace comet::rt::cpu {

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

/// A workspace that throws std::bad_alloc when the allocator fails, for
/// use inside guard().
class Scratch : public Workspace {
public:
  Scratch(comet_rt_context *ctx, size_t bytes) : Workspace(ctx, bytes) {
    if (!ok())
      throw std::bad_alloc();
  }
};

/// Y = f(X) by a oneDNN eltwise primitive `alg` (alpha, beta) over n
/// elements.
int32_t eltwiseImpl(comet_rt_context *ctx, const char *op, dnnl::algorithm alg,
                    float alpha, float beta, const void *x, void *y, int64_t n);
/// dX = dY * f'(.) over n elements by oneDNN eltwise backward `alg` (with
/// `alpha`, e.g. swish's), from the forward's output `in` (a
/// *_use_dst_for_bwd alg: fromDst) or input.
int32_t eltwiseBackwardImpl(comet_rt_context *ctx, const char *op,
                            dnnl::algorithm alg, bool fromDst, const void *in,
                            const void *dy, void *dx, int64_t n,
                            float alpha = 0.f);
/// Softmax or log-softmax of x into y (one shape) along axis.
int32_t softmaxImpl(comet_rt_context *ctx, const char *op, const Tensor &x,
                    const void *xData, void *yData, int64_t axis, bool log);

} // namespace comet::rt::cpu

#endif // COMET_RUNTIME_BACKENDS_CPU_DNNL_H
