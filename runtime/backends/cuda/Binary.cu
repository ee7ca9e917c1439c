//===- Binary.cu - Broadcasting elementwise ops ---------------------------===//
//
// Add, Sub, Mul, Div, i64 Mod, Pow, comparisons, And, Where and Expand: one
// thread per output element, each input read through its broadcast strides
// (numpy, up to rank 8).
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

struct Add {
  __device__ float operator()(float x, float z) const { return x + z; }
};
struct Sub {
  __device__ float operator()(float x, float z) const { return x - z; }
};
struct Mul {
  __device__ float operator()(float x, float z) const { return x * z; }
};
struct Div {
  __device__ float operator()(float x, float z) const { return x / z; }
};
struct ModI64 {
  int64_t fmod;
  __device__ int64_t operator()(int64_t x, int64_t z) const {
    return comet_rt_mod_i64(x, z, fmod);
  }
};
struct Pow {
  __device__ float operator()(float x, float z) const { return powf(x, z); }
};
struct Compare {
  int64_t predicate;
  __device__ uint8_t operator()(float x, float z) const {
    return predicate == COMET_RT_COMPARE_GE   ? x >= z
           : predicate == COMET_RT_COMPARE_LE ? x <= z
                                              : x == z;
  }
};
struct And {
  __device__ uint8_t operator()(uint8_t x, uint8_t z) const {
    return x != 0 && z != 0;
  }
};

template <typename TA, typename TB, typename TY, typename F>
__global__ void binaryK(const TA *a, const TB *b, TY *y, int64_t n, Bcast d,
                        F f) {
  GRID_STRIDE(i, n) y[i] = f(a[bcastOffset(d, 0, i)], b[bcastOffset(d, 1, i)]);
}

template <typename TA = float, typename TB = float, typename TY = float,
          typename F>
int32_t binary(comet_rt_context *ctx, const char *op, const Tensor &a,
               const Tensor &b, const Tensor &y, F f) {
  int64_t n = y.numel();
  if (n == 0)
    return ok();
  Bcast d = bcastOf(y.dims, {&a.dims, &b.dims});
  binaryK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(a.as<TA>(), b.as<TB>(),
                                                      y.as<TY>(), n, d, f);
  LAUNCHED(op);
  return ok();
}

__global__ void whereK(const uint8_t *c, const float *x, const float *y,
                       float *out, int64_t n, Bcast d) {
  GRID_STRIDE(i, n)
  out[i] = c[bcastOffset(d, 0, i)] ? x[bcastOffset(d, 1, i)]
                                   : y[bcastOffset(d, 2, i)];
}

__global__ void expandK(const float *x, float *y, int64_t n, Bcast d) {
  GRID_STRIDE(i, n) y[i] = x[bcastOffset(d, 0, i)];
}

} // namespace

int32_t run(comet_rt_context *ctx, const add_args &a) {
  return binary(ctx, "add", a.a, a.b, a.y, Add{});
}
int32_t run(comet_rt_context *ctx, const sub_args &a) {
  return binary(ctx, "sub", a.a, a.b, a.y, Sub{});
}
int32_t run(comet_rt_context *ctx, const mul_args &a) {
  return binary(ctx, "mul", a.a, a.b, a.y, Mul{});
}
int32_t run(comet_rt_context *ctx, const div_args &a) {
  return binary(ctx, "div", a.a, a.b, a.y, Div{});
}
int32_t run(comet_rt_context *ctx, const mod_i64_args &a) {
  // The contract has refused a zero divisor (on a host copy of B).
  return binary<int64_t, int64_t, int64_t>(ctx, "mod_i64", a.a, a.b, a.y,
                                           ModI64{a.fmod});
}
int32_t run(comet_rt_context *ctx, const pow_args &a) {
  return binary(ctx, "pow", a.a, a.b, a.y, Pow{});
}
int32_t run(comet_rt_context *ctx, const compare_args &a) {
  return binary<float, float, uint8_t>(ctx, "compare", a.a, a.b, a.y,
                                       Compare{a.predicate});
}
int32_t run(comet_rt_context *ctx, const and_i1_args &a) {
  return binary<uint8_t, uint8_t, uint8_t>(ctx, "and_i1", a.a, a.b, a.y, And{});
}

int32_t run(comet_rt_context *ctx, const where_args &a) {
  int64_t n = a.out.numel();
  if (n == 0)
    return ok();
  Bcast d = bcastOf(a.out.dims, {&a.condition.dims, &a.x.dims, &a.y.dims});
  whereK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.condition.as<uint8_t>(), a.x.f(), a.y.f(), a.out.f(), n, d);
  LAUNCHED("where");
  return ok();
}

int32_t run(comet_rt_context *ctx, const expand_args &a) {
  int64_t n = a.y.numel();
  if (n == 0)
    return ok();
  Bcast d = bcastOf(a.y.dims, {&a.x.dims});
  expandK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(a.x.f(), a.y.f(), n, d);
  LAUNCHED("expand");
  return ok();
}

} // namespace comet::rt::cuda
