//===- Dispatch.cpp - The C ABI: validate, then a backend computes --------===//
//===//
//
// Defines every _mlir_ciface_comet_rt_<name> of abi.def once. Each views
// its memref operands, runs the entry's checks (validate(), from
// abi.def's COMET_RT_CHECKS) and only then calls the entry of the context's
// backend (runtime/backends/<device>), or the runtime's own implementation
// for a host entry. No backend sees an argument the contract rejects.
//
//===----------------------------------------------------------------------===//
#include "Backends.h"
#include "Checks.h"
#include "Context.h"
#include "Contract.h"
#include "comet/runtime/alloc.h"

namespace comet::rt {

const Backend &backendFor(const comet_rt_context *ctx) {
#ifdef COMET_RT_WITH_CUDA
  if (ctx->deviceKind == COMET_RT_DEVICE_CUDA)
    return cuda::table();
#endif
  return cpu::table();
}

} // namespace comet::rt

extern "C" int64_t comet_rt_conv_grad2d_workspace(
    comet_rt_context *ctx, const int64_t xDims[4], const int64_t wDims[4],
    const int64_t dyDims[4], int64_t strideH, int64_t strideW, int64_t padTop,
    int64_t padLeft, int64_t padBottom, int64_t padRight, int64_t dilationH,
    int64_t dilationW, int64_t group, int32_t outputs) {
  using namespace comet::rt;
  ctx = resolve(ctx);
  const Backend &b = backendFor(ctx);
  Call c(ctx, Entry::conv_grad2d, b);
  if (!xDims || !wDims || !dyDims) {
    c.fail("the workspace query needs the dims of x, w and dy");
    return -1;
  }
  conv_grad2d_args a;
  auto shape = [](Tensor &t, const char *name, const int64_t *dims,
                  bool present) {
    t.name = name;
    t.elemBytes = 4;
    t.dims.assign(dims, dims + 4);
    t.present = present;
  };
  shape(a.x, "x", xDims, true);
  shape(a.w, "w", wDims, true);
  shape(a.dy, "dy", dyDims, true);
  shape(a.dx, "dx", xDims, outputs & COMET_RT_CONV_GRAD_DX);
  shape(a.dw, "dw", wDims, outputs & COMET_RT_CONV_GRAD_DW);
  int64_t m[1] = {wDims[0]};
  a.db.name = "db";
  a.db.elemBytes = 4;
  a.db.dims.assign(m, m + 1);
  a.db.present = outputs & COMET_RT_CONV_GRAD_DB;
  a.stride_h = strideH;
  a.stride_w = strideW;
  a.pad_top = padTop;
  a.pad_left = padLeft;
  a.pad_bottom = padBottom;
  a.pad_right = padRight;
  a.dilation_h = dilationH;
  a.dilation_w = dilationW;
  a.group = group;
  if (checks::convShape(c, a.x, a.w, a.dy, strideH, strideW, padTop, padLeft,
                        padBottom, padRight, dilationH, dilationW,
                        group) != COMET_RT_SUCCESS)
    return -1;
  for (const int64_t *d : {xDims, wDims})
    for (int i = 0; i < 4; ++i)
      if (d[i] <= 0) {
        c.fail("the workspace query needs positive dims");
        return -1;
      }
  if (!b.convGrad2dWorkspace) {
    c.fail("the ", b.name, " backend does not report its workspace");
    return -1;
  }
  return b.convGrad2dWorkspace(ctx, a);
}

// abi.def's argument lists, `COMET_RT_ARG(k, n) ...`, become the list
// `_, (k, n), (k, n), ...`; COMET_RT_MAP applies a macro to each pair (24 at
// most: a longer entry fails to compile, naming COMET_RT_MAP_25), once
// for the parameter list and once for binding the arguments.
#define COMET_RT_CAT_(a, b) a##b
#define COMET_RT_CAT(a, b) COMET_RT_CAT_(a, b)
#define COMET_RT_COUNT(...)                                                    \
  COMET_RT_COUNT_(__VA_ARGS__, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, \
                  12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define COMET_RT_COUNT_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12,     \
                        _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, \
                        _24, n, ...)                                           \
  n
#define COMET_RT_MAP(m, ...)                                                   \
  COMET_RT_CAT(COMET_RT_MAP_, COMET_RT_COUNT(__VA_ARGS__))(m, __VA_ARGS__)
#define COMET_RT_MAP_1(m, skip)
#define COMET_RT_MAP_2(m, skip, ...) COMET_RT_EACH_1(m, __VA_ARGS__)
#define COMET_RT_MAP_3(m, skip, ...) COMET_RT_EACH_2(m, __VA_ARGS__)
#define COMET_RT_MAP_4(m, skip, ...) COMET_RT_EACH_3(m, __VA_ARGS__)
#define COMET_RT_MAP_5(m, skip, ...) COMET_RT_EACH_4(m, __VA_ARGS__)
#define COMET_RT_MAP_6(m, skip, ...) COMET_RT_EACH_5(m, __VA_ARGS__)
#define COMET_RT_MAP_7(m, skip, ...) COMET_RT_EACH_6(m, __VA_ARGS__)
#define COMET_RT_MAP_8(m, skip, ...) COMET_RT_EACH_7(m, __VA_ARGS__)
#define COMET_RT_MAP_9(m, skip, ...) COMET_RT_EACH_8(m, __VA_ARGS__)
#define COMET_RT_MAP_10(m, skip, ...) COMET_RT_EACH_9(m, __VA_ARGS__)
#define COMET_RT_MAP_11(m, skip, ...) COMET_RT_EACH_10(m, __VA_ARGS__)
#define COMET_RT_MAP_12(m, skip, ...) COMET_RT_EACH_11(m, __VA_ARGS__)
#define COMET_RT_MAP_13(m, skip, ...) COMET_RT_EACH_12(m, __VA_ARGS__)
#define COMET_RT_MAP_14(m, skip, ...) COMET_RT_EACH_13(m, __VA_ARGS__)
#define COMET_RT_MAP_15(m, skip, ...) COMET_RT_EACH_14(m, __VA_ARGS__)
#define COMET_RT_MAP_16(m, skip, ...) COMET_RT_EACH_15(m, __VA_ARGS__)
#define COMET_RT_MAP_17(m, skip, ...) COMET_RT_EACH_16(m, __VA_ARGS__)
#define COMET_RT_MAP_18(m, skip, ...) COMET_RT_EACH_17(m, __VA_ARGS__)
#define COMET_RT_MAP_19(m, skip, ...) COMET_RT_EACH_18(m, __VA_ARGS__)
#define COMET_RT_MAP_20(m, skip, ...) COMET_RT_EACH_19(m, __VA_ARGS__)
#define COMET_RT_MAP_21(m, skip, ...) COMET_RT_EACH_20(m, __VA_ARGS__)
#define COMET_RT_MAP_22(m, skip, ...) COMET_RT_EACH_21(m, __VA_ARGS__)
#define COMET_RT_MAP_23(m, skip, ...) COMET_RT_EACH_22(m, __VA_ARGS__)
#define COMET_RT_MAP_24(m, skip, ...) COMET_RT_EACH_23(m, __VA_ARGS__)
#define COMET_RT_EACH_1(m, a) m a
#define COMET_RT_EACH_2(m, a, ...) m a COMET_RT_EACH_1(m, __VA_ARGS__)
#define COMET_RT_EACH_3(m, a, ...) m a COMET_RT_EACH_2(m, __VA_ARGS__)
#define COMET_RT_EACH_4(m, a, ...) m a COMET_RT_EACH_3(m, __VA_ARGS__)
#define COMET_RT_EACH_5(m, a, ...) m a COMET_RT_EACH_4(m, __VA_ARGS__)
#define COMET_RT_EACH_6(m, a, ...) m a COMET_RT_EACH_5(m, __VA_ARGS__)
#define COMET_RT_EACH_7(m, a, ...) m a COMET_RT_EACH_6(m, __VA_ARGS__)
#define COMET_RT_EACH_8(m, a, ...) m a COMET_RT_EACH_7(m, __VA_ARGS__)
#define COMET_RT_EACH_9(m, a, ...) m a COMET_RT_EACH_8(m, __VA_ARGS__)
#define COMET_RT_EACH_10(m, a, ...) m a COMET_RT_EACH_9(m, __VA_ARGS__)
#define COMET_RT_EACH_11(m, a, ...) m a COMET_RT_EACH_10(m, __VA_ARGS__)
#define COMET_RT_EACH_12(m, a, ...) m a COMET_RT_EACH_11(m, __VA_ARGS__)
#define COMET_RT_EACH_13(m, a, ...) m a COMET_RT_EACH_12(m, __VA_ARGS__)
#define COMET_RT_EACH_14(m, a, ...) m a COMET_RT_EACH_13(m, __VA_ARGS__)
#define COMET_RT_EACH_15(m, a, ...) m a COMET_RT_EACH_14(m, __VA_ARGS__)
#define COMET_RT_EACH_16(m, a, ...) m a COMET_RT_EACH_15(m, __VA_ARGS__)
#define COMET_RT_EACH_17(m, a, ...) m a COMET_RT_EACH_16(m, __VA_ARGS__)
#define COMET_RT_EACH_18(m, a, ...) m a COMET_RT_EACH_17(m, __VA_ARGS__)
#define COMET_RT_EACH_19(m, a, ...) m a COMET_RT_EACH_18(m, __VA_ARGS__)
#define COMET_RT_EACH_20(m, a, ...) m a COMET_RT_EACH_19(m, __VA_ARGS__)
#define COMET_RT_EACH_21(m, a, ...) m a COMET_RT_EACH_20(m, __VA_ARGS__)
#define COMET_RT_EACH_22(m, a, ...) m a COMET_RT_EACH_21(m, __VA_ARGS__)
#define COMET_RT_EACH_23(m, a, ...) m a COMET_RT_EACH_22(m, __VA_ARGS__)
#define COMET_RT_PARAM(kind, name) , COMET_RT_CTYPE_##kind name
#define COMET_RT_BIND(kind, name) COMET_RT_BIND_##kind(name)
#define COMET_RT_BIND_VIEW(n, elem)                                            \
  if (cometRc_ == COMET_RT_SUCCESS)                                            \
    cometRc_ = cometCall_.bind(cometArgs_.n, n, #n, elem);
#define COMET_RT_BIND_tf32(n) COMET_RT_BIND_VIEW(n, 4)
#define COMET_RT_BIND_ti64(n) COMET_RT_BIND_VIEW(n, 8)
#define COMET_RT_BIND_ti1(n) COMET_RT_BIND_VIEW(n, 1)
#define COMET_RT_BIND_tu8(n) COMET_RT_BIND_VIEW(n, 1)
#define COMET_RT_BIND_buffer(n) cometArgs_.n = n;
#define COMET_RT_BIND_handle(n) cometArgs_.n = n;
#define COMET_RT_BIND_i64(n) cometArgs_.n = n;
#define COMET_RT_BIND_i32(n) cometArgs_.n = n;
#define COMET_RT_BIND_f32(n) cometArgs_.n = n;
#define COMET_RT_BIND_f64(n) cometArgs_.n = n;

#define COMET_RT_RESULT_status
#define COMET_RT_RESULT_handle
#define COMET_RT_RESULT_none
#define COMET_RT_RESULT_buffer cometArgs_.result = result;
#define COMET_RT_FAILED_status return cometRc_;
#define COMET_RT_FAILED_handle return 0;
#define COMET_RT_FAILED_none return;
#define COMET_RT_FAILED_buffer                                                 \
  *result = {};                                                                \
  return;

extern "C" {
#define COMET_RT_ARG(kind, name) , (kind, name)
#define COMET_RT_FUNC(name, ret, args)                                         \
  COMET_RT_CRET_##ret _mlir_ciface_comet_rt_##name(                            \
      COMET_RT_CRESULT_##ret comet_rt_context *ctx COMET_RT_MAP(               \
          COMET_RT_PARAM, _ args)) {                                           \
    namespace crt = ::comet::rt;                                               \
    comet_rt_context *cometCtx_ = crt::resolve(ctx);                           \
    const crt::Backend &cometBackend_ = crt::backendFor(cometCtx_);            \
    crt::name##_args cometArgs_;                                               \
    COMET_RT_RESULT_##ret crt::Call cometCall_(cometCtx_, crt::Entry::name,    \
                                               cometBackend_);                 \
    int32_t cometRc_ = COMET_RT_SUCCESS;                                       \
    COMET_RT_MAP(COMET_RT_BIND, _ args)                                        \
    if (cometRc_ == COMET_RT_SUCCESS)                                          \
      cometRc_ = crt::validate(cometCall_, cometArgs_);                        \
    if (cometRc_ == COMET_RT_SUCCESS)                                          \
      cometRc_ = cometCall_.runnable(crt::IsHost<crt::Entry::name>::value ||   \
                                     cometBackend_.name != nullptr);           \
    if (cometRc_ != COMET_RT_SUCCESS) {                                        \
      COMET_RT_FAILED_##ret                                                    \
    }                                                                          \
    if constexpr (crt::IsHost<crt::Entry::name>::value)                        \
      return crt::host::run(cometCtx_, cometArgs_);                            \
    else                                                                       \
      return cometBackend_.name(cometCtx_, cometArgs_);                        \
  }
#include "comet/runtime/abi.def"
}
