//===- CudaBackendTest.cpp - The CUDA backend against the CPU backend -----===//
//
// Each test runs a kernel of abi.def twice on the same random inputs: in a
// CPU context and in a context put on the CUDA device, and compares the
// outputs (copied back with comet_rt_memcpy). Also: the device pool's
// accounting, workspaces included, and the CUDA codec's handles.
//
// Needs a CUDA device: without one (or without a driver), main() exits with
// 77 before any test runs and ctest reports the test as skipped (label gpu).
// Any other CUDA error fails.
//
//===----------------------------------------------------------------------===//
#include "comet/runtime/alloc.h"
#include "comet/runtime/codec.h"
#include "comet/runtime/device.h"
#include "comet/runtime/exec.h"
#include "comet/runtime/handles.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace {

/// A tensor in one context's memory, with its memref descriptor.
class Mem {
public:
  Mem(comet_rt_context *ctx, std::vector<int64_t> dims, size_t elem,
      int32_t category = COMET_RT_MEM_OTHER)
      : ctx(ctx), dims(std::move(dims)), elem(elem) {
    numel = 1;
    for (int64_t d : this->dims)
      numel *= d;
    data = comet_rt_alloc_zeroed(ctx, numel * elem, category);
    int64_t rank = this->dims.size();
    desc.assign(3 + 2 * rank, 0);
    desc[0] = desc[1] = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
    int64_t stride = 1;
    for (int64_t i = rank - 1; i >= 0; --i) {
      desc[3 + i] = this->dims[i];
      desc[3 + rank + i] = stride;
      stride *= this->dims[i];
    }
    ref = {rank, desc.data()};
  }
  ~Mem() { comet_rt_free(data); }
  Mem(const Mem &) = delete;

  void set(const void *host) {
    ASSERT_EQ(comet_rt_memcpy(ctx, data, host, numel * elem), 0)
        << comet_rt_last_error();
  }
  template <typename T> std::vector<T> get() const {
    std::vector<T> v(numel);
    EXPECT_EQ(comet_rt_memcpy(ctx, v.data(), data, numel * elem), 0)
        << comet_rt_last_error();
    return v;
  }
  comet_rt_memref *m() { return &ref; }

  comet_rt_context *ctx;
  std::vector<int64_t> dims;
  size_t elem;
  int64_t numel;
  void *data;

private:
  std::vector<int64_t> desc;
  comet_rt_memref ref;
};

/// The same tensor in the CPU context (c) and the CUDA context (g).
struct Pair {
  Mem c, g;
  Pair(comet_rt_context *cpu, comet_rt_context *gpu,
       const std::vector<int64_t> &dims, size_t elem, const void *init)
      : c(cpu, dims, elem), g(gpu, dims, elem) {
    if (init) {
      c.set(init);
      g.set(init);
    }
  }
};

std::vector<float> randoms(int64_t n, uint32_t seed, float lo = -1,
                           float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

int64_t count(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

void expectClose(const std::vector<float> &want, const std::vector<float> &got,
                 float rtol, float atol, const char *what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_LE(std::fabs(want[i] - got[i]), atol + rtol * std::fabs(want[i]))
        << what << "[" << i << "]: cpu " << want[i] << ", cuda " << got[i];
}

void expectSame(const Pair &p, float rtol, float atol, const char *what) {
  expectClose(p.c.get<float>(), p.g.get<float>(), rtol, atol, what);
}

#define RT_OK(expr)                                                            \
  ASSERT_EQ((expr), COMET_RT_SUCCESS) << #expr << ": " << comet_rt_last_error()

class Cuda : public ::testing::Test {
protected:
  void SetUp() override {
    cpu = comet_rt_context_create();
    gpu = comet_rt_context_create();
    ASSERT_EQ(comet_rt_context_set_device(gpu, COMET_RT_DEVICE_CUDA), 0)
        << comet_rt_last_error();
  }
  void TearDown() override {
    if (gpu)
      EXPECT_EQ(comet_rt_synchronize(gpu), 0) << comet_rt_last_error();
    comet_rt_context_destroy(gpu);
    comet_rt_context_destroy(cpu);
  }
  Pair pair(const std::vector<int64_t> &dims, uint32_t seed) {
    std::vector<float> v = randoms(count(dims), seed);
    return Pair(cpu, gpu, dims, 4, v.data());
  }
  Pair zeros(const std::vector<int64_t> &dims, size_t elem = 4) {
    return Pair(cpu, gpu, dims, elem, nullptr);
  }
  Pair scalar(float v) { return Pair(cpu, gpu, {1}, 4, &v); }

  comet_rt_context *cpu = nullptr, *gpu = nullptr;
};

struct ConvCase {
  std::vector<int64_t> x, w;
  int64_t stride, pad, dilation, group;
};

class CudaConv : public Cuda, public ::testing::WithParamInterface<ConvCase> {};

TEST_P(CudaConv, ForwardAndBackwardMatchCpu) {
  const ConvCase &k = GetParam();
  int64_t kh = k.w[2],
          oh = (k.x[2] + 2 * k.pad - k.dilation * (kh - 1) - 1) / k.stride + 1;
  int64_t kw = k.w[3],
          ow = (k.x[3] + 2 * k.pad - k.dilation * (kw - 1) - 1) / k.stride + 1;
  std::vector<int64_t> yd = {k.x[0], k.w[0], oh, ow};
  Pair x = pair(k.x, 1), w = pair(k.w, 2), b = pair({k.w[0]}, 3);
  Pair y = zeros(yd), dy = pair(yd, 4);
  Pair dx = zeros(k.x), dw = zeros(k.w), db = zeros({k.w[0]});
  int64_t s = k.stride, p = k.pad, d = k.dilation, g = k.group;
  RT_OK(_mlir_ciface_comet_rt_conv2d(cpu, x.c.m(), w.c.m(), b.c.m(), y.c.m(), s,
                                     s, p, p, p, p, d, d, g));
  RT_OK(_mlir_ciface_comet_rt_conv2d(gpu, x.g.m(), w.g.m(), b.g.m(), y.g.m(), s,
                                     s, p, p, p, p, d, d, g));
  expectSame(y, 1e-5f, 1e-5f, "Y");
  RT_OK(_mlir_ciface_comet_rt_conv_grad2d(cpu, dy.c.m(), x.c.m(), w.c.m(),
                                          dx.c.m(), dw.c.m(), db.c.m(), s, s, p,
                                          p, p, p, d, d, g));
  RT_OK(_mlir_ciface_comet_rt_conv_grad2d(gpu, dy.g.m(), x.g.m(), w.g.m(),
                                          dx.g.m(), dw.g.m(), db.g.m(), s, s, p,
                                          p, p, p, d, d, g));
  expectSame(dx, 1e-5f, 1e-5f, "dX");
  expectSame(dw, 1e-5f, 1e-4f, "dW");
  expectSame(db, 1e-5f, 1e-4f, "dB");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaConv,
    ::testing::Values(ConvCase{{2, 3, 8, 8}, {4, 3, 3, 3}, 1, 1, 1, 1},
                      ConvCase{{2, 4, 9, 9}, {6, 4, 3, 3}, 2, 1, 1, 1},
                      ConvCase{{1, 4, 10, 10}, {6, 2, 5, 5}, 1, 2, 1, 2},
                      ConvCase{{2, 3, 11, 11}, {5, 3, 3, 3}, 2, 0, 2, 1},
                      ConvCase{{3, 1, 28, 28}, {6, 1, 5, 5}, 1, 0, 1, 1}));

TEST_F(Cuda, AsymmetricPadsMatchCpu) {
  // cuDNN pads symmetrically: the backend pads a copy of X (and crops dX).
  Pair x = pair({2, 3, 6, 7}, 1), w = pair({4, 3, 3, 3}, 2),
       y = zeros({2, 4, 5, 6}), dy = pair({2, 4, 5, 6}, 3),
       dx = zeros({2, 3, 6, 7}), dw = zeros({4, 3, 3, 3});
  RT_OK(_mlir_ciface_comet_rt_conv2d(cpu, x.c.m(), w.c.m(), nullptr, y.c.m(), 1,
                                     1, 0, 1, 1, 0, 1, 1, 1));
  RT_OK(_mlir_ciface_comet_rt_conv2d(gpu, x.g.m(), w.g.m(), nullptr, y.g.m(), 1,
                                     1, 0, 1, 1, 0, 1, 1, 1));
  expectSame(y, 1e-5f, 1e-5f, "Y");
  RT_OK(_mlir_ciface_comet_rt_conv_grad2d(cpu, dy.c.m(), x.c.m(), w.c.m(),
                                          dx.c.m(), dw.c.m(), nullptr, 1, 1, 0,
                                          1, 1, 0, 1, 1, 1));
  RT_OK(_mlir_ciface_comet_rt_conv_grad2d(gpu, dy.g.m(), x.g.m(), w.g.m(),
                                          dx.g.m(), dw.g.m(), nullptr, 1, 1, 0,
                                          1, 1, 0, 1, 1, 1));
  expectSame(dx, 1e-5f, 1e-5f, "dX");
  expectSame(dw, 1e-5f, 1e-4f, "dW");
}

TEST_F(Cuda, GemmMatchesCpu) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      int64_t m = 5, k = 7, n = 3;
      Pair a =
          pair(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, 1);
      Pair b =
          pair(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, 2);
      Pair c = pair({n}, 3), y = zeros({m, n});
      RT_OK(_mlir_ciface_comet_rt_gemm(cpu, a.c.m(), b.c.m(), c.c.m(), y.c.m(),
                                       0.5f, 2.0f, ta, tb));
      RT_OK(_mlir_ciface_comet_rt_gemm(gpu, a.g.m(), b.g.m(), c.g.m(), y.g.m(),
                                       0.5f, 2.0f, ta, tb));
      expectSame(y, 1e-5f, 1e-6f, "gemm Y");
    }
}

TEST_F(Cuda, MatMulBatchedAndBroadcastMatchCpu) {
  struct Case {
    std::vector<int64_t> a, b, y;
  } cases[] = {{{3, 4, 5}, {5, 6}, {3, 4, 6}},
               {{2, 1, 4, 5}, {3, 5, 6}, {2, 3, 4, 6}},
               {{5}, {2, 5, 3}, {2, 3}},
               {{4, 5}, {5}, {4}}};
  for (const Case &cs : cases) {
    Pair a = pair(cs.a, 1), b = pair(cs.b, 2), y = zeros(cs.y);
    RT_OK(_mlir_ciface_comet_rt_matmul(cpu, a.c.m(), b.c.m(), y.c.m()));
    RT_OK(_mlir_ciface_comet_rt_matmul(gpu, a.g.m(), b.g.m(), y.g.m()));
    expectSame(y, 1e-5f, 1e-6f, "matmul Y");
  }
}

TEST_F(Cuda, BatchNormTrainingAndGradMatchCpu) {
  std::vector<int64_t> xd = {4, 3, 5, 5};
  Pair x = pair(xd, 1), sc = pair({3}, 2), bi = pair({3}, 3);
  Pair im = pair({3}, 4);
  std::vector<float> var = randoms(3, 5, 0.5f, 2.0f);
  Pair iv(cpu, gpu, {3}, 4, var.data());
  Pair y = zeros(xd), rm = zeros({3}), rv = zeros({3}), sm = zeros({3}),
       si = zeros({3});
  RT_OK(_mlir_ciface_comet_rt_batch_norm_internal(
      cpu, x.c.m(), sc.c.m(), bi.c.m(), im.c.m(), iv.c.m(), y.c.m(), rm.c.m(),
      rv.c.m(), sm.c.m(), si.c.m(), 1e-5f, 0.9f, 1));
  RT_OK(_mlir_ciface_comet_rt_batch_norm_internal(
      gpu, x.g.m(), sc.g.m(), bi.g.m(), im.g.m(), iv.g.m(), y.g.m(), rm.g.m(),
      rv.g.m(), sm.g.m(), si.g.m(), 1e-5f, 0.9f, 1));
  expectSame(y, 1e-4f, 1e-5f, "Y");
  expectSame(rm, 1e-5f, 1e-6f, "running_mean");
  expectSame(rv, 1e-5f, 1e-6f, "running_var");
  expectSame(sm, 1e-5f, 1e-6f, "saved_mean");
  expectSame(si, 1e-5f, 1e-6f, "saved_inv_std");
  Pair dy = pair(xd, 6), dx = zeros(xd), dsc = zeros({3}), dbi = zeros({3});
  RT_OK(_mlir_ciface_comet_rt_batch_norm_grad(cpu, dy.c.m(), x.c.m(), sc.c.m(),
                                              sm.c.m(), si.c.m(), dx.c.m(),
                                              dsc.c.m(), dbi.c.m(), 1e-5f));
  RT_OK(_mlir_ciface_comet_rt_batch_norm_grad(gpu, dy.g.m(), x.g.m(), sc.g.m(),
                                              sm.g.m(), si.g.m(), dx.g.m(),
                                              dsc.g.m(), dbi.g.m(), 1e-5f));
  expectSame(dx, 1e-4f, 1e-5f, "dX");
  expectSame(dsc, 1e-4f, 1e-5f, "dScale");
  expectSame(dbi, 1e-4f, 1e-5f, "dBias");
  // Inference mode normalizes with the inputs' statistics.
  RT_OK(_mlir_ciface_comet_rt_batch_norm_internal(
      cpu, x.c.m(), sc.c.m(), bi.c.m(), im.c.m(), iv.c.m(), y.c.m(), nullptr,
      nullptr, nullptr, nullptr, 1e-5f, 0.9f, 0));
  RT_OK(_mlir_ciface_comet_rt_batch_norm_internal(
      gpu, x.g.m(), sc.g.m(), bi.g.m(), im.g.m(), iv.g.m(), y.g.m(), nullptr,
      nullptr, nullptr, nullptr, 1e-5f, 0.9f, 0));
  expectSame(y, 1e-5f, 1e-6f, "inference Y");
}

TEST_F(Cuda, PoolingMatchesCpu) {
  std::vector<int64_t> xd = {2, 3, 7, 7}, yd = {2, 3, 4, 4};
  Pair x = pair(xd, 1), y = zeros(yd), ind = zeros(yd, 8);
  for (int64_t order : {0, 1}) {
    RT_OK(_mlir_ciface_comet_rt_maxpool2d(cpu, x.c.m(), y.c.m(), ind.c.m(), 3,
                                          3, 2, 2, 1, 1, 1, 1, 1, 1, order));
    RT_OK(_mlir_ciface_comet_rt_maxpool2d(gpu, x.g.m(), y.g.m(), ind.g.m(), 3,
                                          3, 2, 2, 1, 1, 1, 1, 1, 1, order));
    expectSame(y, 0, 0, "maxpool Y");
    EXPECT_EQ(ind.c.get<int64_t>(), ind.g.get<int64_t>());
  }
  // Overlapping windows: several dY land on one dX.
  RT_OK(_mlir_ciface_comet_rt_maxpool2d(cpu, x.c.m(), y.c.m(), ind.c.m(), 3, 3,
                                        2, 2, 1, 1, 1, 1, 1, 1, 0));
  RT_OK(_mlir_ciface_comet_rt_maxpool2d(gpu, x.g.m(), y.g.m(), ind.g.m(), 3, 3,
                                        2, 2, 1, 1, 1, 1, 1, 1, 0));
  Pair dy = pair(yd, 2), dx = pair(xd, 3);
  RT_OK(_mlir_ciface_comet_rt_maxpool_grad(cpu, dy.c.m(), ind.c.m(), dx.c.m()));
  RT_OK(_mlir_ciface_comet_rt_maxpool_grad(gpu, dy.g.m(), ind.g.m(), dx.g.m()));
  expectSame(dx, 1e-6f, 1e-6f, "maxpool dX");
  // Window positions: the same Y and the same dX as the flat indices.
  Pair pos = zeros(yd, 1), yw = zeros(yd), dxw = pair(xd, 5);
  RT_OK(_mlir_ciface_comet_rt_maxpool2d_window(
      cpu, x.c.m(), yw.c.m(), pos.c.m(), 3, 3, 2, 2, 1, 1, 1, 1, 1, 1));
  RT_OK(_mlir_ciface_comet_rt_maxpool2d_window(
      gpu, x.g.m(), yw.g.m(), pos.g.m(), 3, 3, 2, 2, 1, 1, 1, 1, 1, 1));
  expectSame(yw, 0, 0, "maxpool2d_window Y");
  EXPECT_EQ(pos.c.get<uint8_t>(), pos.g.get<uint8_t>());
  RT_OK(_mlir_ciface_comet_rt_maxpool_grad_window(
      cpu, dy.c.m(), pos.c.m(), dxw.c.m(), 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0));
  RT_OK(_mlir_ciface_comet_rt_maxpool_grad_window(
      gpu, dy.g.m(), pos.g.m(), dxw.g.m(), 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0));
  expectSame(dxw, 1e-6f, 1e-6f, "maxpool_grad_window dX");
  EXPECT_EQ(dxw.c.get<float>(), dx.c.get<float>());
  Pair gy = zeros({2, 3, 1, 1});
  RT_OK(_mlir_ciface_comet_rt_global_average_pool(cpu, x.c.m(), gy.c.m()));
  RT_OK(_mlir_ciface_comet_rt_global_average_pool(gpu, x.g.m(), gy.g.m()));
  expectSame(gy, 1e-5f, 1e-6f, "global_average_pool Y");
}

TEST_F(Cuda, ElementwiseAndBroadcastMatchCpu) {
  Pair x = pair({2, 3, 4}, 1), dy = pair({2, 3, 4}, 2), y = zeros({2, 3, 4});
  RT_OK(_mlir_ciface_comet_rt_relu(cpu, x.c.m(), y.c.m()));
  RT_OK(_mlir_ciface_comet_rt_relu(gpu, x.g.m(), y.g.m()));
  expectSame(y, 0, 0, "relu");
  RT_OK(_mlir_ciface_comet_rt_relu_grad(cpu, dy.c.m(), x.c.m(), y.c.m()));
  RT_OK(_mlir_ciface_comet_rt_relu_grad(gpu, dy.g.m(), x.g.m(), y.g.m()));
  expectSame(y, 0, 0, "relu_grad");
  for (float alpha : {0.01f, -0.5f}) {
    RT_OK(_mlir_ciface_comet_rt_leaky_relu(cpu, x.c.m(), y.c.m(), alpha));
    RT_OK(_mlir_ciface_comet_rt_leaky_relu(gpu, x.g.m(), y.g.m(), alpha));
    expectSame(y, 0, 0, "leaky_relu");
    Pair dx = zeros({2, 3, 4});
    RT_OK(_mlir_ciface_comet_rt_leaky_relu_grad(cpu, dy.c.m(), y.c.m(),
                                                dx.c.m(), alpha));
    RT_OK(_mlir_ciface_comet_rt_leaky_relu_grad(gpu, dy.g.m(), y.g.m(),
                                                dx.g.m(), alpha));
    expectSame(dx, 0, 0, "leaky_relu_grad");
  }
  for (float alpha : {1.0f, 1.702f}) {
    RT_OK(_mlir_ciface_comet_rt_quick_gelu(cpu, x.c.m(), y.c.m(), alpha));
    RT_OK(_mlir_ciface_comet_rt_quick_gelu(gpu, x.g.m(), y.g.m(), alpha));
    expectSame(y, 1e-5f, 1e-6f, "quick_gelu");
    RT_OK(_mlir_ciface_comet_rt_quick_gelu_grad(cpu, dy.c.m(), x.c.m(), y.c.m(),
                                                alpha));
    RT_OK(_mlir_ciface_comet_rt_quick_gelu_grad(gpu, dy.g.m(), x.g.m(), y.g.m(),
                                                alpha));
    expectSame(y, 1e-5f, 1e-6f, "quick_gelu_grad");
  }
  Pair b = pair({3, 1}, 3);
  RT_OK(_mlir_ciface_comet_rt_add(cpu, x.c.m(), b.c.m(), y.c.m()));
  RT_OK(_mlir_ciface_comet_rt_add(gpu, x.g.m(), b.g.m(), y.g.m()));
  expectSame(y, 0, 0, "add");
  int64_t shapeV[3] = {2, 3, 4};
  Pair shape(cpu, gpu, {3}, 8, shapeV);
  RT_OK(_mlir_ciface_comet_rt_expand(cpu, b.c.m(), shape.c.m(), y.c.m()));
  RT_OK(_mlir_ciface_comet_rt_expand(gpu, b.g.m(), shape.g.m(), y.g.m()));
  expectSame(y, 0, 0, "expand");
  Pair s = scalar(0.25f);
  for (int down : {0, 1}) {
    RT_OK(_mlir_ciface_comet_rt_scale(cpu, x.c.m(), s.c.m(), y.c.m(), down));
    RT_OK(_mlir_ciface_comet_rt_scale(gpu, x.g.m(), s.g.m(), y.g.m(), down));
    expectSame(y, 0, 0, "scale");
  }
  for (int64_t axis : {1, -1}) {
    RT_OK(_mlir_ciface_comet_rt_softmax(cpu, x.c.m(), y.c.m(), axis));
    RT_OK(_mlir_ciface_comet_rt_softmax(gpu, x.g.m(), y.g.m(), axis));
    expectSame(y, 1e-5f, 1e-7f, "softmax");
    RT_OK(_mlir_ciface_comet_rt_log_softmax(cpu, x.c.m(), y.c.m(), axis));
    RT_OK(_mlir_ciface_comet_rt_log_softmax(gpu, x.g.m(), y.g.m(), axis));
    expectSame(y, 1e-5f, 1e-6f, "log_softmax");
  }
}

// i64 Mod, both modes, broadcast [2, 3] by [3]; a zero divisor is refused
// from the host copy of B before a kernel runs.
TEST_F(Cuda, ModI64MatchesCpuAndRefusesZero) {
  int64_t av[6] = {7, -7, 11, -11, 0, INT64_MIN}, bv[3] = {3, -3, 5};
  Pair a(cpu, gpu, {2, 3}, 8, av), b(cpu, gpu, {3}, 8, bv);
  Pair y = zeros({2, 3}, 8);
  for (int64_t fmod : {0, 1}) {
    RT_OK(_mlir_ciface_comet_rt_mod_i64(cpu, a.c.m(), b.c.m(), y.c.m(), fmod));
    RT_OK(_mlir_ciface_comet_rt_mod_i64(gpu, a.g.m(), b.g.m(), y.g.m(), fmod));
    EXPECT_EQ(y.c.get<int64_t>(), y.g.get<int64_t>()) << "fmod " << fmod;
  }
  int64_t zv[3] = {3, 0, 5};
  Pair z(cpu, gpu, {3}, 8, zv);
  EXPECT_EQ(_mlir_ciface_comet_rt_mod_i64(gpu, a.g.m(), z.g.m(), y.g.m(), 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
}

TEST_F(Cuda, ReduceSumMatchesCpu) {
  struct Case {
    std::vector<int64_t> x, axes, y;
    int64_t keep;
  } cases[] = {{{4, 6}, {0}, {6}, 0}, // inferred from the shapes
               {{6, 6}, {1}, {6}, 0}, // ambiguous: the axes are read
               {{2, 3, 4}, {0, 2}, {1, 3, 1}, 1},
               {{2, 3, 4}, {}, {}, 0}}; // empty axes: everything
  for (const Case &cs : cases) {
    Pair x = pair(cs.x, 1), y = zeros(cs.y);
    Pair axes(cpu, gpu, {int64_t(cs.axes.size())}, 8, cs.axes.data());
    RT_OK(_mlir_ciface_comet_rt_reduce_sum(cpu, x.c.m(), axes.c.m(), y.c.m(),
                                           cs.keep, 0));
    RT_OK(_mlir_ciface_comet_rt_reduce_sum(gpu, x.g.m(), axes.g.m(), y.g.m(),
                                           cs.keep, 0));
    expectSame(y, 1e-5f, 1e-6f, "reduce_sum");
  }
}

TEST_F(Cuda, CopiesAndShapesMatchCpu) {
  Pair x = pair({2, 3, 4}, 1), y = zeros({6, 4}), f = zeros({2, 12});
  int64_t shapeV[2] = {6, 4};
  Pair shape(cpu, gpu, {2}, 8, shapeV);
  RT_OK(_mlir_ciface_comet_rt_reshape(cpu, x.c.m(), shape.c.m(), y.c.m(), 0));
  RT_OK(_mlir_ciface_comet_rt_reshape(gpu, x.g.m(), shape.g.m(), y.g.m(), 0));
  expectSame(y, 0, 0, "reshape");
  RT_OK(_mlir_ciface_comet_rt_flatten(cpu, x.c.m(), f.c.m(), 1));
  RT_OK(_mlir_ciface_comet_rt_flatten(gpu, x.g.m(), f.g.m(), 1));
  expectSame(f, 0, 0, "flatten");
  Pair dims = zeros({2}, 8);
  RT_OK(_mlir_ciface_comet_rt_shape(cpu, x.c.m(), dims.c.m(), 1, 3));
  RT_OK(_mlir_ciface_comet_rt_shape(gpu, x.g.m(), dims.g.m(), 1, 3));
  EXPECT_EQ(dims.g.get<int64_t>(), (std::vector<int64_t>{3, 4}));
  // identity_i1 from host memory (a compiled constant) into device memory.
  uint8_t bits[3] = {1, 0, 1};
  Mem host(cpu, {3}, 1), dev(gpu, {3}, 1);
  host.set(bits);
  RT_OK(_mlir_ciface_comet_rt_identity_i1(gpu, host.m(), dev.m()));
  EXPECT_EQ(dev.get<uint8_t>(), (std::vector<uint8_t>{1, 0, 1}));
}

// The operands a compiled step passes straight from its constants
// (memref.get_global: host memory, which no kernel may read): Scale's
// factor, Transpose's perm, a reduction's axes, Pad's pads and value. Each
// is a PARAM, staged on the host, so the CUDA call gives the CPU's result.
// Scale's factor was not, and the transformer's step faulted on the device.
TEST_F(Cuda, HostConstantsOfTheCompiledStepReachKernels) {
  Pair x = pair({2, 3, 4}, 41);
  auto hostF = [&](std::vector<float> v) {
    auto m =
        std::make_unique<Mem>(cpu, std::vector<int64_t>{int64_t(v.size())}, 4);
    m->set(v.data());
    return m;
  };
  auto hostI = [&](std::vector<int64_t> v) {
    auto m =
        std::make_unique<Mem>(cpu, std::vector<int64_t>{int64_t(v.size())}, 8);
    m->set(v.data());
    return m;
  };
  auto factor = hostF({-2.5f});
  for (int64_t down : {0, 1}) {
    Pair y = zeros({2, 3, 4});
    RT_OK(
        _mlir_ciface_comet_rt_scale(cpu, x.c.m(), factor->m(), y.c.m(), down));
    RT_OK(
        _mlir_ciface_comet_rt_scale(gpu, x.g.m(), factor->m(), y.g.m(), down));
    expectSame(y, 0, 0, "scale");
  }
  auto perm = hostI({2, 0, 1});
  Pair t = zeros({4, 2, 3});
  RT_OK(_mlir_ciface_comet_rt_transpose(cpu, x.c.m(), t.c.m(), perm->m()));
  RT_OK(_mlir_ciface_comet_rt_transpose(gpu, x.g.m(), t.g.m(), perm->m()));
  expectSame(t, 0, 0, "transpose");
  auto axes = hostI({1});
  Pair r = zeros({2, 4});
  RT_OK(_mlir_ciface_comet_rt_reduce_mean(cpu, x.c.m(), axes->m(), r.c.m(), 0));
  RT_OK(_mlir_ciface_comet_rt_reduce_mean(gpu, x.g.m(), axes->m(), r.g.m(), 0));
  expectSame(r, 1e-6f, 1e-7f, "reduce_mean");
  auto pads = hostI({0, 1, 0, 0, 0, 2});
  auto value = hostF({0.5f});
  Pair p = zeros({2, 4, 6});
  RT_OK(
      _mlir_ciface_comet_rt_pad(cpu, x.c.m(), pads->m(), value->m(), p.c.m()));
  RT_OK(
      _mlir_ciface_comet_rt_pad(gpu, x.g.m(), pads->m(), value->m(), p.g.m()));
  expectSame(p, 0, 0, "pad");
}

TEST_F(Cuda, SoftmaxCrossEntropyMatchesCpu) {
  std::vector<int64_t> lab = {0, 4, 2, -100, 1, 3, 3, 0};
  for (int64_t reduction : {0, 1, 2}) {
    Pair sc = pair({8, 5}, 1), w = pair({5}, 2);
    Pair labels(cpu, gpu, {8}, 8, lab.data());
    std::vector<int64_t> ld =
        reduction == 0 ? std::vector<int64_t>{8} : std::vector<int64_t>{};
    Pair loss = zeros(ld), lp = zeros({8, 5}), dx = zeros({8, 5});
    Pair dy = pair(ld, 3);
    RT_OK(_mlir_ciface_comet_rt_softmax_cross_entropy_loss(
        cpu, sc.c.m(), labels.c.m(), w.c.m(), loss.c.m(), lp.c.m(), reduction,
        -100, 1));
    RT_OK(_mlir_ciface_comet_rt_softmax_cross_entropy_loss(
        gpu, sc.g.m(), labels.g.m(), w.g.m(), loss.g.m(), lp.g.m(), reduction,
        -100, 1));
    expectSame(loss, 1e-5f, 1e-6f, "loss");
    expectSame(lp, 1e-5f, 1e-6f, "log_prob");
    RT_OK(_mlir_ciface_comet_rt_softmax_cross_entropy_loss_grad(
        cpu, dy.c.m(), lp.c.m(), labels.c.m(), w.c.m(), dx.c.m(), reduction,
        -100, 1));
    RT_OK(_mlir_ciface_comet_rt_softmax_cross_entropy_loss_grad(
        gpu, dy.g.m(), lp.g.m(), labels.g.m(), w.g.m(), dx.g.m(), reduction,
        -100, 1));
    expectSame(dx, 1e-5f, 1e-6f, "dX");
  }
}

TEST_F(Cuda, OptimizersMatchCpu) {
  std::vector<int64_t> d = {4, 9};
  int64_t step = 3;
  for (int64_t mode : {0, 1}) {
    Pair w = pair(d, 1), g = pair(d, 2), m1 = pair(d, 3), lr = scalar(0.01f);
    std::vector<float> v2 = randoms(count(d), 4, 0, 1);
    Pair m2(cpu, gpu, d, 4, v2.data());
    Pair st(cpu, gpu, {1}, 8, &step);
    RT_OK(_mlir_ciface_comet_rt_adamw(cpu, lr.c.m(), st.c.m(), w.c.m(), g.c.m(),
                                      m1.c.m(), m2.c.m(), nullptr, nullptr,
                                      0.9f, 0.999f, 1e-8f, 0.01f, mode, 1));
    RT_OK(_mlir_ciface_comet_rt_adamw(gpu, lr.g.m(), st.g.m(), w.g.m(), g.g.m(),
                                      m1.g.m(), m2.g.m(), nullptr, nullptr,
                                      0.9f, 0.999f, 1e-8f, 0.01f, mode, 1));
    expectSame(w, 1e-6f, 1e-7f, "adamw weight");
    expectSame(m1, 1e-6f, 1e-7f, "adamw m1");
    expectSame(m2, 1e-6f, 1e-7f, "adamw m2");
  }
  Pair w = pair(d, 5), g = pair(d, 6), v = pair(d, 7), lr = scalar(0.1f);
  Pair flag = zeros({1}, 1);
  RT_OK(_mlir_ciface_comet_rt_sgd_v2(cpu, lr.c.m(), w.c.m(), g.c.m(), nullptr,
                                     flag.c.m()));
  RT_OK(_mlir_ciface_comet_rt_sgd_v2(gpu, lr.g.m(), w.g.m(), g.g.m(), nullptr,
                                     flag.g.m()));
  expectSame(w, 1e-6f, 1e-7f, "sgd_v2 weight");
  EXPECT_EQ(flag.g.get<uint8_t>()[0], 1);
  for (int64_t nesterov : {0, 1}) {
    RT_OK(_mlir_ciface_comet_rt_sgd_momentum(cpu, lr.c.m(), w.c.m(), g.c.m(),
                                             v.c.m(), 0.9f, 1e-4f, nesterov));
    RT_OK(_mlir_ciface_comet_rt_sgd_momentum(gpu, lr.g.m(), w.g.m(), g.g.m(),
                                             v.g.m(), 0.9f, 1e-4f, nesterov));
    expectSame(w, 1e-6f, 1e-7f, "sgd_momentum weight");
    expectSame(v, 1e-6f, 1e-7f, "sgd_momentum velocity");
  }
  for (uint8_t overwrite : {0, 1}) {
    Pair ow(cpu, gpu, {1}, 1, &overwrite), upd = zeros({1}, 1);
    RT_OK(_mlir_ciface_comet_rt_inplace_accumulator_v2(
        cpu, w.c.m(), g.c.m(), ow.c.m(), upd.c.m(), nullptr));
    RT_OK(_mlir_ciface_comet_rt_inplace_accumulator_v2(
        gpu, w.g.m(), g.g.m(), ow.g.m(), upd.g.m(), nullptr));
    expectSame(w, 0, 0, "accumulator");
    EXPECT_EQ(upd.g.get<uint8_t>()[0], 1);
  }
}

TEST_F(Cuda, PoolCountsDeviceBlocksPerCategory) {
  comet_rt_alloc_stats st;
  void *a = comet_rt_alloc(gpu, 1000, COMET_RT_MEM_PARAMS);
  void *b = comet_rt_alloc(gpu, 24, COMET_RT_MEM_ACTIVATIONS);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(comet_rt_alloc_size(a), 1000u);
  EXPECT_EQ(comet_rt_alloc_category_of(b), COMET_RT_MEM_ACTIVATIONS);
  comet_rt_alloc_get_stats(gpu, &st);
  EXPECT_EQ(st.current[COMET_RT_MEM_PARAMS], 1000);
  EXPECT_EQ(st.current[COMET_RT_MEM_ACTIVATIONS], 24);
  EXPECT_EQ(st.peak_total, 1024);
  EXPECT_EQ(st.live_blocks, 2);
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, a), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  comet_rt_free(a);
  comet_rt_free(b);
  comet_rt_alloc_get_stats(gpu, &st);
  EXPECT_EQ(st.current_total, 0);
  EXPECT_EQ(st.live_blocks, 0);
  EXPECT_EQ(st.peak_total, 1024);
  // A convolution's cuDNN workspace and a compress's scratch are counted
  // as workspace, and freed by the end of the call.
  comet_rt_alloc_reset_peaks(gpu);
  {
    Pair x = pair({8, 16, 32, 32}, 1), w = pair({32, 16, 3, 3}, 2);
    Pair y = zeros({8, 32, 32, 32});
    RT_OK(_mlir_ciface_comet_rt_conv2d(gpu, x.g.m(), w.g.m(), nullptr, y.g.m(),
                                       1, 1, 1, 1, 1, 1, 1, 1, 1));
    int64_t h = _mlir_ciface_comet_rt_compress(gpu, y.g.m(), COMET_RT_CODEC_SZ,
                                               -1, 1e-3, 0);
    ASSERT_NE(h, 0) << comet_rt_handles_last_error();
    comet_rt_alloc_get_stats(gpu, &st);
    EXPECT_GT(st.peak[COMET_RT_MEM_WORKSPACE], 0);
    EXPECT_EQ(st.current[COMET_RT_MEM_WORKSPACE], 0);
    comet_rt_site_stats site;
    ASSERT_EQ(comet_rt_site_get_stats(gpu, 0, &site), 0);
    EXPECT_EQ(st.current[COMET_RT_MEM_COMPRESSED], site.last_bytes_out);
    EXPECT_EQ(site.last_bytes_in, 8 * 32 * 32 * 32 * 4);
    _mlir_ciface_comet_rt_handle_free(gpu, h);
    comet_rt_alloc_get_stats(gpu, &st);
    EXPECT_EQ(st.current[COMET_RT_MEM_COMPRESSED], 0);
  }
  comet_rt_alloc_get_stats(gpu, &st);
  EXPECT_EQ(st.live_blocks, 0);
}

TEST_F(Cuda, CompressedActivationsRoundTrip) {
  std::vector<int64_t> d = {4, 8, 6, 6};
  Pair x = pair(d, 1), yc = zeros(d), dy = pair(d, 2), dx = zeros(d);
  const double eb = 1e-3;
  int64_t hc = _mlir_ciface_comet_rt_compress(cpu, x.c.m(), COMET_RT_CODEC_SZ,
                                              -1, eb, 0);
  int64_t hg = _mlir_ciface_comet_rt_compress(gpu, x.g.m(), COMET_RT_CODEC_SZ,
                                              -1, eb, 0);
  ASSERT_TRUE(hc && hg) << comet_rt_handles_last_error();
  RT_OK(_mlir_ciface_comet_rt_decompress(cpu, hc, yc.c.m()));
  RT_OK(_mlir_ciface_comet_rt_decompress(gpu, hg, yc.g.m()));
  std::vector<float> orig = x.c.get<float>(), g = yc.g.get<float>();
  for (size_t i = 0; i < orig.size(); ++i)
    ASSERT_LE(std::fabs(g[i] - orig[i]), eb * (1 + 1e-6)) << i;
  // Both within the bound of X, so within twice it of each other.
  expectSame(yc, 0, float(2 * eb), "sz decompress");
  _mlir_ciface_comet_rt_handle_free(cpu, hc);
  _mlir_ciface_comet_rt_handle_free(gpu, hg);
  // A ReLU mask drives relu_grad_mask.
  Pair r = zeros(d);
  RT_OK(_mlir_ciface_comet_rt_relu(cpu, x.c.m(), r.c.m()));
  RT_OK(_mlir_ciface_comet_rt_relu(gpu, x.g.m(), r.g.m()));
  hc = _mlir_ciface_comet_rt_compress(cpu, r.c.m(), COMET_RT_CODEC_MASK, -1, 0,
                                      1);
  hg = _mlir_ciface_comet_rt_compress(gpu, r.g.m(), COMET_RT_CODEC_MASK, -1, 0,
                                      1);
  ASSERT_TRUE(hc && hg) << comet_rt_handles_last_error();
  RT_OK(_mlir_ciface_comet_rt_relu_grad_mask(cpu, dy.c.m(), hc, dx.c.m()));
  RT_OK(_mlir_ciface_comet_rt_relu_grad_mask(gpu, dy.g.m(), hg, dx.g.m()));
  expectSame(dx, 0, 0, "relu_grad_mask");
  // step_abort frees what compiled code left: the handle and a buffer.
  comet_rt_buffer buf;
  _mlir_ciface_comet_rt_buffer_alloc(&buf, gpu, 64, COMET_RT_MEM_ACTIVATIONS);
  ASSERT_NE(buf.allocated, nullptr);
  _mlir_ciface_comet_rt_step_abort(gpu);
  _mlir_ciface_comet_rt_handle_free(cpu, hc);
  comet_rt_alloc_stats st;
  comet_rt_alloc_get_stats(gpu, &st);
  EXPECT_EQ(st.current[COMET_RT_MEM_COMPRESSED], 0);
  EXPECT_EQ(st.current[COMET_RT_MEM_ACTIVATIONS], 0);
}

} // namespace

int main(int argc, char **argv) {
  // Only the absence of a device skips: no GPU driver on the machine, or a
  // driver that reports no device. Any other error fails with its message.
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  bool noDriver = e == cudaErrorInsufficientDriver &&
                  !dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) &&
                  !dlopen("libcuda.so.1", RTLD_NOW);
  if ((e == cudaSuccess && count == 0) || e == cudaErrorNoDevice || noDriver) {
    std::printf("CometRuntimeCudaTests: no CUDA device (%s); skipping\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77; // SKIP_RETURN_CODE
  }
  if (e != cudaSuccess) {
    std::fprintf(stderr, "CometRuntimeCudaTests: cudaGetDeviceCount: %s (%s)\n",
                 cudaGetErrorString(e), cudaGetErrorName(e));
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
