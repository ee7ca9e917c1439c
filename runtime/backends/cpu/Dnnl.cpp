//===- Dnnl.cpp - oneDNN engine, primitive cache and helpers --------------===//
//
// Primitives are created once per shape and attribute key and cached; they
// run in user-scratchpad mode with the scratchpad from comet_rt_alloc
// (workspace).
//
//===----------------------------------------------------------------------===//

#include "Dnnl.h"
#include "comet/runtime/exec.h"

#include <cstring>
#include <mutex>
#include <optional>

using dnnl::memory;

// Declared here rather than through <omp.h>, which clang with GCC's libgomp
// (the sanitizer tree) does not find.
extern "C" void omp_set_num_threads(int);

namespace comet::rt::cpu {

dnnl::engine &engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream &stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

namespace {
std::mutex cacheMutex;
std::unordered_map<std::string, Primitive> &cache() {
  static auto *c = new std::unordered_map<std::string, Primitive>();
  return *c;
}
} // namespace

Primitive getPrimitive(const std::string &key,
                       const std::function<Primitive()> &make) {
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    auto it = cache().find(key);
    if (it != cache().end())
      return it->second;
  }
  Primitive p = make(); // may throw; created outside the lock
  std::lock_guard<std::mutex> lock(cacheMutex);
  return cache().emplace(key, p).first->second;
}

dnnl::primitive_attr userScratchpadAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void execute(comet_rt_context *ctx, const Primitive &p,
             std::unordered_map<int, memory> args) {
  std::optional<Scratch> scratch;
  if (size_t bytes = p.scratchpad.get_size()) {
    scratch.emplace(ctx, bytes);
    args[DNNL_ARG_SCRATCHPAD] = mem(p.scratchpad, scratch->get());
  }
  p.prim.execute(stream(), args);
  stream().wait();
}

memory::desc plainMd(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides = plainStrides(dims);
  return memory::desc(memory::dims(dims.begin(), dims.end()),
                      memory::data_type::f32,
                      memory::dims(strides.begin(), strides.end()));
}

memory mem(const memory::desc &md, void *data) {
  return memory(md, engine(), data);
}

std::string key(const char *op, std::initializer_list<int64_t> ints,
                const std::vector<int64_t> &more) {
  std::string k = op;
  for (int64_t v : ints)
    k += ":" + std::to_string(v);
  k += "|";
  for (int64_t v : more)
    k += ":" + std::to_string(v);
  return k;
}

int32_t guard(const char *op, const std::function<int32_t()> &body) {
  try {
    return body();
  } catch (const dnnl::error &e) {
    return fail(
        COMET_RT_ERROR_BACKEND,
        concat(op, ": oneDNN: ", e.what(), " (status ", (int)e.status, ")"));
  } catch (const std::bad_alloc &) {
    return fail(COMET_RT_ERROR_OUT_OF_MEMORY, concat(op, ": out of memory"));
  } catch (const std::exception &e) {
    return fail(COMET_RT_ERROR_BACKEND, concat(op, ": ", e.what()));
  }
}

int32_t eltwiseImpl(comet_rt_context *ctx, const char *op, dnnl::algorithm alg,
                    float alpha, float beta, const void *x, void *y,
                    int64_t n) {
  if (n == 0)
    return ok();
  // The bits of alpha and beta key the primitive: distinct values (Pow's
  // exponent, QuickGelu's alpha) never share one.
  uint32_t alphaBits, betaBits;
  std::memcpy(&alphaBits, &alpha, sizeof(alpha));
  std::memcpy(&betaBits, &beta, sizeof(beta));
  return guard(op, [&] {
    memory::desc md({n}, memory::data_type::f32, memory::format_tag::a);
    Primitive p = getPrimitive(
        key(op, {n, int64_t(alg), int64_t(alphaBits), int64_t(betaBits)}), [&] {
          dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg,
                                        md, alpha, beta);
          dnnl::eltwise_forward::primitive_desc pd(d, userScratchpadAttr(),
                                                   engine());
          return Primitive{dnnl::eltwise_forward(pd), pd.scratchpad_desc()};
        });
    execute(ctx, p,
            {{DNNL_ARG_SRC, mem(md, const_cast<void *>(x))},
             {DNNL_ARG_DST, mem(md, y)}});
    return ok();
  });
}

int32_t eltwiseBackwardImpl(comet_rt_context *ctx, const char *op,
                            dnnl::algorithm alg, bool fromDst, const void *in,
                            const void *dy, void *dx, int64_t n, float alpha) {
  if (n == 0)
    return ok();
  uint32_t alphaBits;
  std::memcpy(&alphaBits, &alpha, sizeof(alpha));
  return guard(op, [&] {
    memory::desc md({n}, memory::data_type::f32, memory::format_tag::a);
    Primitive p =
        getPrimitive(key(op, {n, int64_t(alg), int64_t(alphaBits)}), [&] {
          dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, alg,
                                         md, alpha, 0.f);
          dnnl::eltwise_forward::primitive_desc fpd(fd, engine());
          dnnl::eltwise_backward::desc d(alg, md, md, alpha, 0.f);
          dnnl::eltwise_backward::primitive_desc pd(d, userScratchpadAttr(),
                                                    engine(), fpd);
          return Primitive{dnnl::eltwise_backward(pd), pd.scratchpad_desc()};
        });
    execute(ctx, p,
            {{fromDst ? DNNL_ARG_DST : DNNL_ARG_SRC,
              mem(md, const_cast<void *>(in))},
             {DNNL_ARG_DIFF_DST, mem(md, const_cast<void *>(dy))},
             {DNNL_ARG_DIFF_SRC, mem(md, dx)}});
    return ok();
  });
}

int32_t softmaxImpl(comet_rt_context *ctx, const char *op, const Tensor &x,
                    const void *xData, void *yData, int64_t axis, bool log) {
  axis = normAxis(axis, x.rank());
  int64_t outer = product(x.dims, 0, axis), mid = x.dim(axis),
          inner = product(x.dims, axis + 1, x.dims.size());
  if (x.numel() == 0)
    return ok();
  return guard(op, [&] {
    memory::desc md({outer, mid, inner}, memory::data_type::f32,
                    memory::format_tag::abc);
    // Keyed by the primitive, not by op: SoftmaxCrossEntropyLoss shares
    // log_softmax's primitives.
    Primitive p = getPrimitive(key("softmax", {outer, mid, inner, log}), [&] {
      using sf = dnnl::softmax_v2_forward;
      sf::desc d(dnnl::prop_kind::forward_inference,
                 log ? dnnl::algorithm::softmax_log
                     : dnnl::algorithm::softmax_accurate,
                 md, md, 1);
      sf::primitive_desc pd(d, userScratchpadAttr(), engine());
      return Primitive{sf(pd), pd.scratchpad_desc()};
    });
    execute(ctx, p,
            {{DNNL_ARG_SRC, mem(md, const_cast<void *>(xData))},
             {DNNL_ARG_DST, mem(md, yData)}});
    return ok();
  });
}

} // namespace comet::rt::cpu

extern "C" {

void comet_rt_set_num_threads(int n) {
  if (n > 0)
    omp_set_num_threads(n);
}

int64_t comet_rt_primitive_cache_size(void) {
  std::lock_guard<std::mutex> lock(comet::rt::cpu::cacheMutex);
  return (int64_t)comet::rt::cpu::cache().size();
}

} // extern "C"
