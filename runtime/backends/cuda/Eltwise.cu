//===- Eltwise.cu - Elementwise activations and math ----------------------===//
//
// One grid-stride kernel per shape of function (Y = f(X); dX = g(dY, X or
// Y)), instantiated with a functor per op. The functions are the ones the
// CPU backend's oneDNN primitives compute: GELU is the erf form, QuickGelu
// x * sigmoid(alpha x), and SigmoidGrad and TanhGrad read the forward
// output Y.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

__device__ inline float sigmoidOf(float v) { return 1.0f / (1.0f + expf(-v)); }
__device__ inline float geluOf(float v) {
  return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}
/// d gelu / dx.
__device__ inline float geluDerivative(float v) {
  return 0.5f * (1.0f + erff(v * 0.70710678118654752f)) +
         v * expf(-0.5f * v * v) * 0.39894228040143268f;
}

struct Relu {
  __device__ float operator()(float v) const { return v > 0.0f ? v : 0.0f; }
};
struct LeakyRelu {
  float alpha;
  __device__ float operator()(float v) const {
    return v >= 0.0f ? v : alpha * v;
  }
};
struct Sigmoid {
  __device__ float operator()(float v) const { return sigmoidOf(v); }
};
struct Tanh {
  __device__ float operator()(float v) const { return tanhf(v); }
};
struct Gelu {
  __device__ float operator()(float v) const { return geluOf(v); }
};
struct Sqrt {
  __device__ float operator()(float v) const { return sqrtf(v); }
};
struct Erf {
  __device__ float operator()(float v) const { return erff(v); }
};
struct Exp {
  __device__ float operator()(float v) const { return expf(v); }
};
struct Reciprocal {
  __device__ float operator()(float v) const { return 1.0f / v; }
};
struct QuickGelu {
  float alpha;
  __device__ float operator()(float v) const {
    return v * sigmoidOf(alpha * v);
  }
};

struct ReluGrad {
  __device__ float operator()(float g, float x) const {
    return x > 0.0f ? g : 0.0f;
  }
};
struct LeakyReluGrad { // from Y
  float alpha;
  __device__ float operator()(float g, float y) const {
    return y > 0.0f ? g : alpha * g;
  }
};
struct SigmoidGrad { // from Y
  __device__ float operator()(float g, float y) const {
    return g * y * (1.0f - y);
  }
};
struct TanhGrad { // from Y
  __device__ float operator()(float g, float y) const {
    return g * (1.0f - y * y);
  }
};
struct GeluGrad {
  __device__ float operator()(float g, float x) const {
    return g * geluDerivative(x);
  }
};
struct QuickGeluGrad {
  float alpha;
  __device__ float operator()(float g, float x) const {
    float v = alpha * x, s = sigmoidOf(v);
    return g * (s + v * s * (1.0f - s));
  }
};

template <typename F>
__global__ void unaryK(const float *x, float *y, int64_t n, F f) {
  GRID_STRIDE(i, n) y[i] = f(x[i]);
}

template <typename F>
__global__ void gradK(const float *dy, const float *in, float *dx, int64_t n,
                      F f) {
  GRID_STRIDE(i, n) dx[i] = f(dy[i], in[i]);
}

template <typename F>
int32_t unary(comet_rt_context *ctx, const char *op, const Tensor &x,
              const Tensor &y, F f) {
  int64_t n = x.numel();
  if (n == 0)
    return ok();
  unaryK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(x.f(), y.f(), n, f);
  LAUNCHED(op);
  return ok();
}

template <typename F>
int32_t grad(comet_rt_context *ctx, const char *op, const Tensor &dy,
             const Tensor &in, const Tensor &dx, F f) {
  int64_t n = in.numel();
  if (n == 0)
    return ok();
  gradK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(dy.f(), in.f(), dx.f(), n,
                                                    f);
  LAUNCHED(op);
  return ok();
}

/// Y = gelu(X + B) along the last dim.
__global__ void biasGeluK(const float *x, const float *b, float *y, int64_t n,
                          int64_t cols) {
  GRID_STRIDE(i, n) y[i] = geluOf(x[i] + b[i % cols]);
}

__global__ void biasGeluGradK(const float *dy, const float *x, const float *b,
                              float *dx, int64_t n, int64_t cols) {
  GRID_STRIDE(i, n) dx[i] = dy[i] * geluDerivative(x[i] + b[i % cols]);
}

/// min(max(x, lo), hi), lo and hi read on the device (absent: +-inf).
__global__ void clipK(const float *x, const float *lo, const float *hi,
                      float *y, int64_t n) {
  float a = lo ? *lo : -INFINITY, b = hi ? *hi : INFINITY;
  GRID_STRIDE(i, n) {
    float v = x[i];
    v = v < a ? a : v;
    y[i] = v > b ? b : v;
  }
}

__global__ void scaleK(const float *x, float f, float *y, int64_t n, int down) {
  GRID_STRIDE(i, n) y[i] = down ? x[i] / f : x[i] * f;
}

__global__ void castI1F32K(const uint8_t *x, float *y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = x[i] ? 1.0f : 0.0f;
}

__global__ void castF32I64K(const float *x, int64_t *y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = static_cast<int64_t>(x[i]);
}

} // namespace

int32_t run(comet_rt_context *ctx, const relu_args &a) {
  return unary(ctx, "relu", a.x, a.y, Relu{});
}
int32_t run(comet_rt_context *ctx, const relu_grad_args &a) {
  return grad(ctx, "relu_grad", a.dy, a.x, a.dx, ReluGrad{});
}
int32_t run(comet_rt_context *ctx, const leaky_relu_args &a) {
  return unary(ctx, "leaky_relu", a.x, a.y, LeakyRelu{a.alpha});
}
int32_t run(comet_rt_context *ctx, const leaky_relu_grad_args &a) {
  return grad(ctx, "leaky_relu_grad", a.dy, a.y, a.dx, LeakyReluGrad{a.alpha});
}
int32_t run(comet_rt_context *ctx, const sigmoid_args &a) {
  return unary(ctx, "sigmoid", a.x, a.y, Sigmoid{});
}
int32_t run(comet_rt_context *ctx, const tanh_args &a) {
  return unary(ctx, "tanh", a.x, a.y, Tanh{});
}
int32_t run(comet_rt_context *ctx, const sigmoid_grad_args &a) {
  return grad(ctx, "sigmoid_grad", a.dy, a.y, a.dx, SigmoidGrad{});
}
int32_t run(comet_rt_context *ctx, const tanh_grad_args &a) {
  return grad(ctx, "tanh_grad", a.dy, a.y, a.dx, TanhGrad{});
}
int32_t run(comet_rt_context *ctx, const gelu_args &a) {
  return unary(ctx, "gelu", a.x, a.y, Gelu{});
}
int32_t run(comet_rt_context *ctx, const gelu_grad_args &a) {
  return grad(ctx, "gelu_grad", a.dy, a.x, a.dx, GeluGrad{});
}
int32_t run(comet_rt_context *ctx, const quick_gelu_args &a) {
  return unary(ctx, "quick_gelu", a.x, a.y, QuickGelu{a.alpha});
}
int32_t run(comet_rt_context *ctx, const quick_gelu_grad_args &a) {
  return grad(ctx, "quick_gelu_grad", a.dy, a.x, a.dx, QuickGeluGrad{a.alpha});
}
int32_t run(comet_rt_context *ctx, const sqrt_args &a) {
  return unary(ctx, "sqrt", a.x, a.y, Sqrt{});
}
int32_t run(comet_rt_context *ctx, const erf_args &a) {
  return unary(ctx, "erf", a.x, a.y, Erf{});
}
int32_t run(comet_rt_context *ctx, const exp_args &a) {
  return unary(ctx, "exp", a.x, a.y, Exp{});
}
int32_t run(comet_rt_context *ctx, const reciprocal_args &a) {
  return unary(ctx, "reciprocal", a.x, a.y, Reciprocal{});
}

int32_t run(comet_rt_context *ctx, const bias_gelu_args &a) {
  int64_t n = a.x.numel(), cols = a.x.dim(a.x.rank() - 1);
  if (n == 0)
    return ok();
  biasGeluK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(a.x.f(), a.bias.f(),
                                                        a.y.f(), n, cols);
  LAUNCHED("bias_gelu");
  return ok();
}

int32_t run(comet_rt_context *ctx, const bias_gelu_grad_dx_args &a) {
  int64_t n = a.x.numel(), cols = a.x.dim(a.x.rank() - 1);
  if (n == 0)
    return ok();
  biasGeluGradK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.dy.f(), a.x.f(), a.bias.f(), a.dx.f(), n, cols);
  LAUNCHED("bias_gelu_grad_dx");
  return ok();
}

int32_t run(comet_rt_context *ctx, const clip_args &a) {
  int64_t n = a.x.numel();
  if (n == 0)
    return ok();
  clipK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.x.f(), a.min.present ? a.min.f() : nullptr,
      a.max.present ? a.max.f() : nullptr, a.y.f(), n);
  LAUNCHED("clip");
  return ok();
}

int32_t run(comet_rt_context *ctx, const scale_args &a) {
  int64_t n = a.x.numel();
  if (n == 0)
    return ok();
  // PARAM: the factor is on the host (often a constant of the compiled
  // step, which no kernel can read).
  scaleK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.x.f(), a.scale.hostAs<float>()[0], a.y.f(), n, a.scale_down != 0);
  LAUNCHED("scale");
  return ok();
}

int32_t run(comet_rt_context *ctx, const cast_i1_f32_args &a) {
  int64_t n = a.x.numel();
  if (n == 0)
    return ok();
  castI1F32K<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(a.x.as<uint8_t>(),
                                                         a.y.f(), n);
  LAUNCHED("cast_i1_f32");
  return ok();
}

int32_t run(comet_rt_context *ctx, const cast_f32_i64_args &a) {
  int64_t n = a.x.numel();
  if (n == 0)
    return ok();
  castF32I64K<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(a.x.f(), a.y.i64(),
                                                          n);
  LAUNCHED("cast_f32_i64");
  return ok();
}

} // namespace comet::rt::cuda
