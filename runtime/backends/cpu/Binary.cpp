//===- Binary.cpp - Broadcasting elementwise ops --------------------------===//
//
// Add, Sub, Mul, Div, i64 Mod, Pow (oneDNN eltwise pow for a scalar
// exponent), comparisons, And, Where and Expand: OpenMP loops over Y, each
// input read through its broadcast strides (0 along broadcast dims).
//
//===----------------------------------------------------------------------===//
#include "Dnnl.h"

#include <cmath>

namespace comet::rt::cpu {

namespace {

/// Offset into a broadcast input for flat output index idx.
inline int64_t bcastOffset(int64_t idx, const std::vector<int64_t> &out,
                           const std::vector<int64_t> &strides) {
  int64_t off = 0;
  for (int64_t d = (int64_t)out.size() - 1; d >= 0 && idx; --d) {
    int64_t q = idx / out[d];
    off += (idx - q * out[d]) * strides[d];
    idx = q;
  }
  return off;
}

/// Y = f(A, B) with numpy broadcasting (Y is the broadcast shape). TA, TB
/// and TY are the element types (bool tensors: uint8_t).
template <typename TA = float, typename TB = float, typename TY = float,
          typename Fn>
int32_t binary(const Tensor &a, const Tensor &b, const Tensor &y, Fn f) {
  std::vector<int64_t> sa, sb;
  broadcastStrides(a.dims, y.dims, sa);
  broadcastStrides(b.dims, y.dims, sb);
  const TA *pa = a.as<TA>();
  const TB *pb = b.as<TB>();
  TY *py = y.as<TY>();
  int64_t n = y.numel();
  if (a.dims == y.dims && b.dims == y.dims) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i)
      py[i] = f(pa[i], pb[i]);
    return ok();
  }
  if (b.numel() == 1 && a.dims == y.dims) {
    TB s = pb[0];
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i)
      py[i] = f(pa[i], s);
    return ok();
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    py[i] = f(pa[bcastOffset(i, y.dims, sa)], pb[bcastOffset(i, y.dims, sb)]);
  return ok();
}

} // namespace

int32_t run(comet_rt_context *, const add_args &a) {
  return binary(a.a, a.b, a.y, [](float x, float z) { return x + z; });
}

int32_t run(comet_rt_context *, const sub_args &a) {
  return binary(a.a, a.b, a.y, [](float x, float z) { return x - z; });
}

int32_t run(comet_rt_context *, const mul_args &a) {
  return binary(a.a, a.b, a.y, [](float x, float z) { return x * z; });
}

int32_t run(comet_rt_context *, const div_args &a) {
  return binary(a.a, a.b, a.y, [](float x, float z) { return x / z; });
}

int32_t run(comet_rt_context *, const mod_i64_args &a) {
  // The contract has refused a zero divisor.
  int64_t fmod = a.fmod;
  return binary<int64_t, int64_t, int64_t>(
      a.a, a.b, a.y,
      [fmod](int64_t x, int64_t z) { return comet_rt_mod_i64(x, z, fmod); });
}

int32_t run(comet_rt_context *ctx, const pow_args &a) {
  if (a.b.numel() == 1 && a.a.dims == a.y.dims)
    return eltwiseImpl(ctx, "pow", dnnl::algorithm::eltwise_pow, 1.f,
                       a.b.f()[0], a.a.data, a.y.data, a.y.numel());
  std::vector<int64_t> sa, sb;
  broadcastStrides(a.a.dims, a.y.dims, sa);
  broadcastStrides(a.b.dims, a.y.dims, sb);
  const float *pa = a.a.f(), *pb = a.b.f();
  float *py = a.y.f();
  int64_t n = a.y.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    py[i] = std::pow(pa[bcastOffset(i, a.y.dims, sa)],
                     pb[bcastOffset(i, a.y.dims, sb)]);
  return ok();
}

int32_t run(comet_rt_context *, const compare_args &a) {
  switch (a.predicate) {
  case COMET_RT_COMPARE_GE:
    return binary<float, float, uint8_t>(
        a.a, a.b, a.y, [](float x, float z) { return uint8_t(x >= z); });
  case COMET_RT_COMPARE_LE:
    return binary<float, float, uint8_t>(
        a.a, a.b, a.y, [](float x, float z) { return uint8_t(x <= z); });
  default:
    return binary<float, float, uint8_t>(
        a.a, a.b, a.y, [](float x, float z) { return uint8_t(x == z); });
  }
}

int32_t run(comet_rt_context *, const and_i1_args &a) {
  return binary<uint8_t, uint8_t, uint8_t>(
      a.a, a.b, a.y,
      [](uint8_t x, uint8_t z) { return uint8_t(x != 0 && z != 0); });
}

int32_t run(comet_rt_context *, const where_args &a) {
  const Tensor &o = a.out;
  std::vector<int64_t> sc, sx, sy;
  broadcastStrides(a.condition.dims, o.dims, sc);
  broadcastStrides(a.x.dims, o.dims, sx);
  broadcastStrides(a.y.dims, o.dims, sy);
  const uint8_t *pc = a.condition.as<uint8_t>();
  const float *px = a.x.f(), *py = a.y.f();
  float *po = o.f();
  int64_t n = o.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    po[i] = pc[bcastOffset(i, o.dims, sc)] ? px[bcastOffset(i, o.dims, sx)]
                                           : py[bcastOffset(i, o.dims, sy)];
  return ok();
}

int32_t run(comet_rt_context *, const expand_args &a) {
  const Tensor &y = a.y;
  std::vector<int64_t> sx;
  broadcastStrides(a.x.dims, y.dims, sx);
  const float *px = a.x.f();
  float *py = y.f();
  int64_t n = y.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    py[i] = px[bcastOffset(i, y.dims, sx)];
  return ok();
}

} // namespace comet::rt::cpu
