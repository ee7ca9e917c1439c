//===- OnDevice.h - The kernel tests on the CPU or on a CUDA device -------===//
//
// One suite for every backend: the kernel tests call the runtime through
// dev::<entry>(ctx, args...) (generated from abi.def) with host tensors
// (TestUtil.h). In CometRuntimeTests that is the exported function itself.
// In CometRuntimeCudaKernelTests (built with COMET_TEST_CUDA) the call runs
// on a CUDA context: every memref operand is copied into device memory
// first (operands that share a host buffer share a device one, so aliases
// and overlaps stay what they were), the same descriptor points at it, and
// after a successful call the device data is copied back, so the test
// reads the results where it always did.
//
// A test that covers what only one backend has says so: SKIP_ON_CUDA(why).
// A test of an entry the device's backend lacks is skipped with the
// backend's reason (REQUIRE_ENTRY).
//
//===----------------------------------------------------------------------===//
#ifndef COMET_TEST_RUNTIME_ONDEVICE_H
#define COMET_TEST_RUNTIME_ONDEVICE_H

#include "comet/runtime/abi.h"
#include "comet/runtime/coverage.h"
#include "comet/runtime/device.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <tuple>
#include <type_traits>
#include <vector>

namespace comet::test {

/// Whether this binary runs the kernels on a CUDA device.
bool onCuda();
/// COMET_RT_DEVICE_* of the test device.
int32_t testDevice();
/// A new context on the test device (comet_rt_context_destroy it).
comet_rt_context *newContext();
/// Where a call with a NULL context runs: the default context on the CPU,
/// one shared device context on CUDA.
comet_rt_context *nullContext();

#define SKIP_ON_CUDA(why)                                                      \
  if (::comet::test::onCuda())                                                 \
  GTEST_SKIP() << (why)
#define REQUIRE_ENTRY(name)                                                    \
  if (const char *cometLacks_ =                                                \
          comet_rt_device_lacks(::comet::test::testDevice(), name))            \
  GTEST_SKIP() << name << ": " << cometLacks_

/// Device copies of the memref operands of one call.
class Mirror {
public:
  explicit Mirror(comet_rt_context *ctx) : ctx(ctx) {}
  ~Mirror();
  Mirror(const Mirror &) = delete;

  /// Pass 1: the host bytes m reaches (elemBytes each).
  void reserve(comet_rt_memref *m, int elemBytes);
  /// Allocates the device blocks and copies the host bytes in.
  int32_t upload();
  /// Pass 2: m's descriptor over the device block (null stays null).
  comet_rt_memref *map(comet_rt_memref *m);
  /// Copies every block back to the host.
  int32_t download();

private:
  struct Block {
    size_t bytes = 0;
    bool copy = true;
    void *dev = nullptr;
  };
  comet_rt_context *ctx;
  std::map<char *, Block> blocks;
  std::deque<std::vector<int64_t>> descs;
  std::deque<comet_rt_memref> refs;
};

/// Calls fn with ctx (NULL: nullContext()), on the device when the context
/// is a device's. elems gives each argument's element size (0: not a
/// memref).
template <typename R, typename... P, typename... A>
R callOn(R (*fn)(comet_rt_context *, P...), std::initializer_list<int> elems,
         comet_rt_context *ctx, A... a) {
  static_assert(sizeof...(P) == sizeof...(A), "wrong number of arguments");
  if (!ctx)
    ctx = nullContext();
  if (comet_rt_context_get_device(ctx) == COMET_RT_DEVICE_CPU)
    return fn(ctx, a...);
  Mirror mirror(ctx);
  const int *elem = elems.begin();
  size_t i = 0;
  auto reserve = [&](auto v) {
    if constexpr (std::is_same_v<decltype(v), comet_rt_memref *>)
      mirror.reserve(v, elem[i]);
    ++i;
    return 0;
  };
  (void)std::initializer_list<int>{reserve(a)...};
  int32_t up = mirror.upload();
  auto map = [&](auto v) {
    if constexpr (std::is_same_v<decltype(v), comet_rt_memref *>)
      return mirror.map(v);
    else
      return v;
  };
  // Braced initialization evaluates the mapped arguments in order.
  std::tuple<P...> args{map(a)...};
  if constexpr (std::is_void_v<R>) {
    if (up == 0) {
      std::apply([&](auto... p) { fn(ctx, p...); }, args);
      mirror.download();
    }
  } else {
    if (up != 0)
      return R{};
    R r = std::apply([&](auto... p) { return fn(ctx, p...); }, args);
    // A failed call writes nothing (and the copy would clear its message).
    if constexpr (std::is_same_v<R, int64_t>) {
      if (r != 0)
        mirror.download();
    } else if (r == 0) {
      r = mirror.download();
    }
    return r;
  }
}

/// dev::<name>(ctx, args...): abi.def's entries through callOn.
namespace dev {
#define COMET_TEST_ELEM_tf32 4
#define COMET_TEST_ELEM_ti64 8
#define COMET_TEST_ELEM_ti1 1
#define COMET_TEST_ELEM_tu8 1
#define COMET_TEST_ELEM_buffer 0
#define COMET_TEST_ELEM_handle 0
#define COMET_TEST_ELEM_i64 0
#define COMET_TEST_ELEM_i32 0
#define COMET_TEST_ELEM_f32 0
#define COMET_TEST_ELEM_f64 0
#define COMET_RT_ARG(kind, name) COMET_TEST_ELEM_##kind,
#define COMET_RT_FUNC(name, ret, args)                                         \
  template <typename... A> auto name(comet_rt_context *ctx, A... a) {          \
    return ::comet::test::callOn(_mlir_ciface_comet_rt_##name, {args - 1},     \
                                 ctx, a...);                                   \
  }
#include "comet/runtime/abi.def"
} // namespace dev

} // namespace comet::test

#endif // COMET_TEST_RUNTIME_ONDEVICE_H
