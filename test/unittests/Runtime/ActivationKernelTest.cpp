//===- ActivationKernelTest.cpp - Sigmoid, tanh, QuickGelu, pooling, Pad -===//
//
// The kernels of Activations.cpp against naive references, and their
// gradients against central differences of L(x) = <r, f(x)>.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "comet/runtime/alloc.h"
#include "comet/runtime/codec.h"
#include "comet/runtime/handles.h"

#include <cmath>
#include <functional>

using namespace comet::test;

namespace {

TEST(Activations, SigmoidAndTanhMatchTheFormulas) {
  F x = randomF({2, 3, 5, 7}, 11, -6, 6), s(x.dims), t(x.dims);
  ASSERT_RT(dev::sigmoid(nullptr, &x, &s));
  ASSERT_RT(dev::tanh(nullptr, &x, &t));
  std::vector<double> ws, wt;
  for (float v : x.v) {
    ws.push_back(1.0 / (1.0 + std::exp(-(double)v)));
    wt.push_back(std::tanh((double)v));
  }
  expectNear(s.v, ws, 1e-6, "sigmoid");
  expectNear(t.v, wt, 1e-6, "tanh");

  F dy = randomF(x.dims, 12), ds(x.dims), dt(x.dims);
  ASSERT_RT(dev::sigmoid_grad(nullptr, &dy, &s, &ds));
  ASSERT_RT(dev::tanh_grad(nullptr, &dy, &t, &dt));
  std::vector<double> wds, wdt;
  for (int64_t i = 0; i < x.size(); ++i) {
    wds.push_back((double)dy[i] * s[i] * (1.0 - s[i]));
    wdt.push_back((double)dy[i] * (1.0 - (double)t[i] * t[i]));
  }
  expectNear(ds.v, wds, 1e-6, "sigmoid_grad");
  expectNear(dt.v, wdt, 1e-6, "tanh_grad");

  F bad({2, 3, 5, 6});
  EXPECT_NE(dev::sigmoid(nullptr, &x, &bad), COMET_RT_SUCCESS);
  EXPECT_NE(dev::tanh_grad(nullptr, &dy, &t, &bad),
            COMET_RT_SUCCESS);
}

TEST(FiniteDifferences, SigmoidGradAndTanhGradFromTheOutput) {
  F x = randomF({2, 3, 4}, 13, -2, 2), r = randomF(x.dims, 14), y(x.dims);
  for (bool sigmoid : {true, false}) {
    auto fwd = [&] {
      int32_t rc = sigmoid ? dev::sigmoid(nullptr, &x, &y)
                           : dev::tanh(nullptr, &x, &y);
      EXPECT_EQ(rc, COMET_RT_SUCCESS);
    };
    auto loss = [&] {
      fwd();
      return dot(r, y);
    };
    fwd();
    // The gradient reads Y, as ORT's SigmoidGrad and TanhGrad do.
    F dx(x.dims);
    ASSERT_RT(sigmoid ? dev::sigmoid_grad(nullptr, &r, &y, &dx)
                      : dev::tanh_grad(nullptr, &r, &y, &dx));
    checkGrad(x, dx, loss, sigmoid ? "sigmoid dX" : "tanh dX");
  }
}

/// QuickGelu in double: y = x s and dX = dY (s + u s (1 - s)), u = alpha x,
/// s = sigmoid(u).
static void quickGelu(double x, double dy, double alpha, double &y,
                      double &dx) {
  double u = alpha * x, s = 1.0 / (1.0 + std::exp(-u));
  y = x * s;
  dx = dy * (s + u * s * (1.0 - s));
}

// ORT's QuickGelu and QuickGeluGrad: SiLU (alpha 1), ORT's default 1.702, a
// negative alpha and 0 (y = x / 2), one after another on one shape, so a
// primitive cached for one alpha would give another's values.
TEST(Activations, QuickGeluMatchesTheFormula) {
  F x = randomF({2, 3, 5, 7}, 15, -12, 12), dy = randomF(x.dims, 16);
  for (float alpha : {1.0f, 1.702f, -0.5f, 0.0f}) {
    F y(x.dims), dx(x.dims);
    ASSERT_RT(dev::quick_gelu(nullptr, &x, &y, alpha));
    ASSERT_RT(
        dev::quick_gelu_grad(nullptr, &dy, &x, &dx, alpha));
    std::vector<double> wy(x.size()), wdx(x.size());
    for (int64_t i = 0; i < x.size(); ++i)
      quickGelu(x[i], dy[i], alpha, wy[i], wdx[i]);
    std::string what = "alpha " + std::to_string(alpha);
    expectNear(y.v, wy, 1e-5, ("quick_gelu " + what).c_str());
    expectNear(dx.v, wdx, 1e-5, ("quick_gelu_grad " + what).c_str());
  }
  F bad({2, 3, 5, 6});
  EXPECT_NE(dev::quick_gelu(nullptr, &x, &bad, 1.0f),
            COMET_RT_SUCCESS);
  EXPECT_NE(dev::quick_gelu_grad(nullptr, &dy, &x, &bad, 1.0f),
            COMET_RT_SUCCESS);
  F y(x.dims);
  EXPECT_NE(dev::quick_gelu(nullptr, &x, &y, NAN),
            COMET_RT_SUCCESS);
  EXPECT_NE(
      dev::quick_gelu_grad(nullptr, &dy, &x, &y, INFINITY),
      COMET_RT_SUCCESS);
}

TEST(FiniteDifferences, QuickGeluGradFromTheInput) {
  F x = randomF({2, 3, 4}, 17, -3, 3), r = randomF(x.dims, 18), y(x.dims);
  for (float alpha : {1.0f, 1.702f}) {
    auto loss = [&] {
      EXPECT_EQ(dev::quick_gelu(nullptr, &x, &y, alpha),
                COMET_RT_SUCCESS);
      return dot(r, y);
    };
    F dx(x.dims);
    ASSERT_RT(
        dev::quick_gelu_grad(nullptr, &r, &x, &dx, alpha));
    checkGrad(x, dx, loss, alpha == 1.0f ? "silu dX" : "quick_gelu dX");
  }
}

struct PoolP {
  int64_t kH, kW, sH, sW, pT, pL, pB, pR, includePad;
};

std::vector<double> naiveAvgPool(const F &x, const std::vector<int64_t> &yd,
                                 const PoolP &p) {
  int64_t H = x.dims[2], W = x.dims[3], OH = yd[2], OW = yd[3];
  std::vector<double> y(yd[0] * yd[1] * OH * OW);
  for (int64_t nc = 0; nc < yd[0] * yd[1]; ++nc)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double s = 0;
        int64_t inside = 0;
        for (int64_t a = 0; a < p.kH; ++a)
          for (int64_t b = 0; b < p.kW; ++b) {
            int64_t h = i * p.sH - p.pT + a, w = j * p.sW - p.pL + b;
            if (h < 0 || h >= H || w < 0 || w >= W)
              continue;
            s += x[(nc * H + h) * W + w];
            ++inside;
          }
        y[(nc * OH + i) * OW + j] = s / (p.includePad ? p.kH * p.kW : inside);
      }
  return y;
}

int32_t avgpool(F &x, F &y, const PoolP &p) {
  return dev::avgpool2d(nullptr, &x, &y, p.kH, p.kW, p.sH,
                                         p.sW, p.pT, p.pL, p.pB, p.pR,
                                         p.includePad);
}

int32_t avgpoolGrad(F &dy, F &dx, const PoolP &p) {
  return dev::avgpool_grad2d(nullptr, &dy, &dx, p.kH, p.kW,
                                              p.sH, p.sW, p.pT, p.pL, p.pB,
                                              p.pR, p.includePad);
}

struct PoolCase {
  std::vector<int64_t> x, y;
  PoolP p;
};

const PoolCase kPoolCases[] = {
    // nn.AvgPool2d(2) on 28x28.
    {{2, 3, 28, 28}, {2, 3, 14, 14}, {2, 2, 2, 2, 0, 0, 0, 0, 1}},
    // AvgPool2d(3, 2, padding=1), counting and not counting the padding.
    {{2, 2, 14, 14}, {2, 2, 7, 7}, {3, 3, 2, 2, 1, 1, 1, 1, 1}},
    {{2, 2, 14, 14}, {2, 2, 7, 7}, {3, 3, 2, 2, 1, 1, 1, 1, 0}},
    // Asymmetric kernel, strides and pads; a remainder row the floor drops.
    {{1, 2, 7, 6}, {1, 2, 3, 6}, {3, 2, 2, 1, 0, 1, 1, 0, 0}},
};

TEST(AveragePool, MatchesNaiveLoopsWithAndWithoutPaddingInTheCount) {
  uint32_t seed = 20;
  for (const PoolCase &c : kPoolCases) {
    F x = randomF(c.x, seed++), y(c.y);
    ASSERT_RT(avgpool(x, y, c.p));
    expectNear(y.v, naiveAvgPool(x, c.y, c.p), 1e-6, "avgpool");
  }
}

TEST(AveragePool, RejectsShapesAndPadsThatDoNotFit) {
  F x = randomF({1, 1, 4, 4}, 30), y({1, 1, 3, 3}), ok({1, 1, 2, 2});
  // Floor mode gives 2x2, not 3x3.
  EXPECT_NE(avgpool(x, y, {2, 2, 2, 2, 0, 0, 0, 0, 1}), COMET_RT_SUCCESS);
  EXPECT_NE(std::string(comet_rt_last_error()).find("floor mode"),
            std::string::npos)
      << comet_rt_last_error();
  // A pad as large as the kernel.
  F y3({1, 1, 3, 3});
  EXPECT_NE(avgpool(x, y3, {2, 2, 2, 2, 2, 0, 0, 0, 0}), COMET_RT_SUCCESS);
  // Channels differ.
  F wrong({1, 2, 2, 2});
  EXPECT_NE(avgpool(x, wrong, {2, 2, 2, 2, 0, 0, 0, 0, 1}), COMET_RT_SUCCESS);
  ASSERT_RT(avgpool(x, ok, {2, 2, 2, 2, 0, 0, 0, 0, 1}));
}

TEST(AveragePoolGrad, IsTheAdjointAndMatchesFiniteDifferences) {
  uint32_t seed = 40;
  for (const PoolCase &c : kPoolCases) {
    // <dY, pool(X)> = <pool_grad(dY), X> for every X: the naive pool of
    // each unit vector gives pool_grad's column.
    F dy = randomF(c.y, seed++), dx(c.x);
    ASSERT_RT(avgpoolGrad(dy, dx, c.p));
    std::vector<double> want(dx.size());
    F e(c.x);
    for (int64_t i = 0; i < e.size(); ++i) {
      e[i] = 1;
      std::vector<double> col = naiveAvgPool(e, c.y, c.p);
      e[i] = 0;
      for (size_t k = 0; k < col.size(); ++k)
        want[i] += col[k] * dy[k];
    }
    expectNear(dx.v, want, 1e-6, "avgpool_grad");
  }
  // Central differences through the forward kernel, on a small case.
  const PoolCase &c = kPoolCases[3];
  F x = randomF(c.x, seed++), r = randomF(c.y, seed++), y(c.y), dx(c.x);
  auto loss = [&] {
    EXPECT_EQ(avgpool(x, y, c.p), COMET_RT_SUCCESS);
    return dot(r, y);
  };
  ASSERT_RT(avgpoolGrad(r, dx, c.p));
  checkGrad(x, dx, loss, "avgpool dX");
}

std::vector<double> naivePad(const F &x, const std::vector<int64_t> &pads,
                             const std::vector<int64_t> &yd, float value) {
  int64_t r = x.dims.size(), n = 1;
  for (int64_t d : yd)
    n *= d;
  std::vector<double> y(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, off = 0, stride = 1;
    bool inside = true;
    for (int64_t k = r - 1; k >= 0; --k) {
      int64_t xi = rest % yd[k] - pads[k];
      rest /= yd[k];
      inside = inside && xi >= 0 && xi < x.dims[k];
      off += xi * stride;
      stride *= x.dims[k];
    }
    y[i] = inside ? x[off] : value;
  }
  return y;
}

TEST(Pad, PadsCropsAndFillsAsTheNaiveIndexMap) {
  struct Case {
    std::vector<int64_t> x, pads, y;
    bool value;
  } cases[] = {
      // The zero pads torch exports before AvgPool2d(2).
      {{2, 3, 4, 4}, {0, 0, 0, 0, 0, 0, 0, 0}, {2, 3, 4, 4}, false},
      // Spatial padding of count_include_pad, with a fill value.
      {{2, 3, 4, 5}, {0, 0, 1, 2, 0, 0, 2, 1}, {2, 3, 7, 8}, true},
      // Its gradient: negative pads crop.
      {{2, 3, 7, 8}, {0, 0, -1, -2, 0, 0, -2, -1}, {2, 3, 4, 5}, false},
      // Mixed signs, a padded leading dim, rank 1.
      {{3, 4}, {1, -1, -1, 2}, {3, 5}, true},
      {{5}, {2, -3}, {4}, true},
  };
  uint32_t seed = 60;
  for (auto &c : cases) {
    F x = randomF(c.x, seed++), y(c.y), v({1}, {0.5f}), nv = none();
    I p({(int64_t)c.pads.size()}, c.pads);
    ASSERT_RT(
        dev::pad(nullptr, &x, &p, c.value ? &v : &nv, &y));
    expectNear(y.v, naivePad(x, c.pads, c.y, c.value ? 0.5f : 0.0f), 0, "pad");
  }
  F x = randomF({2, 3}, 70), y({2, 4});
  I p({4}, {0, 0, 0, 0});
  EXPECT_NE(dev::pad(nullptr, &x, &p, nullptr, &y),
            COMET_RT_SUCCESS);
  I three({3}, {0, 0, 0});
  F same({2, 3});
  EXPECT_NE(dev::pad(nullptr, &x, &three, nullptr, &same),
            COMET_RT_SUCCESS);
}

TEST(FiniteDifferences, PadByTheNegatedPadsIsTheGradientOfPad) {
  // ORT's gradient of Pad(X, pads) is Pad(dY, -pads).
  F x = randomF({2, 2, 3, 4}, 80);
  std::vector<int64_t> pads = {0, 0, 1, 2, 0, 0, 2, 0},
                       neg = {0, 0, -1, -2, 0, 0, -2, 0};
  std::vector<int64_t> yd = {2, 2, 6, 6};
  F r = randomF(yd, 81), y(yd), dx(x.dims);
  I p({8}, pads), np({8}, neg);
  auto loss = [&] {
    EXPECT_EQ(dev::pad(nullptr, &x, &p, nullptr, &y),
              COMET_RT_SUCCESS);
    return dot(r, y);
  };
  ASSERT_RT(dev::pad(nullptr, &r, &np, nullptr, &dx));
  checkGrad(x, dx, loss, "pad dX");
}

// LeakyRelu and ONNX Runtime's LeakyReluGrad, which reads the forward
// output Y: exact (one multiply), for ORT's default slope, torch's 0.1, a
// negative slope and 0 (ReLU); dX written over dY gives the same.
TEST(Activations, LeakyReluAndItsGradient) {
  F x = randomF({2, 3, 5, 7}, 90, -3, 3), dy = randomF(x.dims, 91);
  x.v[0] = 0.0f; // x = 0 keeps x, Y = 0 takes the slope.
  for (float alpha : {0.01f, 0.1f, -0.5f, 0.0f}) {
    F y(x.dims), dx(x.dims);
    ASSERT_RT(dev::leaky_relu(nullptr, &x, &y, alpha));
    ASSERT_RT(dev::leaky_relu_grad(nullptr, &dy, &y, &dx, alpha));
    for (int64_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(y[i], x[i] >= 0 ? x[i] : alpha * x[i]) << i;
      EXPECT_EQ(dx[i], y[i] > 0 ? dy[i] : alpha * dy[i]) << i;
    }
    F inPlace = dy;
    ASSERT_RT(dev::leaky_relu_grad(nullptr, &inPlace, &y, &inPlace, alpha));
    EXPECT_EQ(inPlace.v, dx.v);
  }
  F bad({2, 3, 5, 6});
  EXPECT_NE(dev::leaky_relu(nullptr, &x, &bad, 0.1f), COMET_RT_SUCCESS);
  EXPECT_NE(dev::leaky_relu_grad(nullptr, &dy, &x, &bad, 0.1f),
            COMET_RT_SUCCESS);
  // The slope is an attribute the contract checks: finite.
  F y(x.dims), dx(x.dims);
  EXPECT_NE(dev::leaky_relu(nullptr, &x, &y, NAN), COMET_RT_SUCCESS);
  EXPECT_EQ(std::string(comet_rt_last_error()),
            "leaky_relu: alpha must be finite, got nan");
  EXPECT_NE(dev::leaky_relu_grad(nullptr, &dy, &x, &dx, INFINITY),
            COMET_RT_SUCCESS);
  EXPECT_EQ(std::string(comet_rt_last_error()),
            "leaky_relu_grad: alpha must be finite, got inf");
  // Y written over X is not declared: the forward is never lowered in place.
  F xy = x;
  EXPECT_NE(dev::leaky_relu(nullptr, &xy, &xy, 0.1f), COMET_RT_SUCCESS);
}

// LeakyReluGrad reads Y only as Y > 0, so Y through a mask stream (1.0
// where Y > 0, else 0.0) gives dX bit for bit: compress-activations keeps
// it as 1 bit per element.
TEST(Activations, LeakyReluGradFromAMaskStream) {
  comet_rt_context *ctx = newContext();
  F x = randomF({4, 3, 6, 6}, 92, -2, 2), dy = randomF(x.dims, 93);
  x.v[1] = 0.0f;
  for (float alpha : {0.1f, -0.5f}) {
    F y(x.dims), decoded(x.dims), dx(x.dims), dxMask(x.dims);
    ASSERT_RT(dev::leaky_relu(ctx, &x, &y, alpha));
    int64_t h = dev::compress(ctx, &y, COMET_RT_CODEC_MASK, -1, 0.0, 0);
    ASSERT_NE(h, 0) << comet_rt_last_error();
    ASSERT_RT(dev::decompress(ctx, h, &decoded));
    dev::handle_free(ctx, h);
    ASSERT_RT(dev::leaky_relu_grad(ctx, &dy, &y, &dx, alpha));
    ASSERT_RT(dev::leaky_relu_grad(ctx, &dy, &decoded, &dxMask, alpha));
    EXPECT_EQ(dx.v, dxMask.v);
  }
  comet_rt_context_destroy(ctx);
}

// An sz site after its first step makes its stream in a block of the last
// stream's size plus a little, which becomes the handle, shrunk to the
// stream: the step holds one block for it, not a scratch block and a copy.
// A stream that outgrows the guess is made again at its exact size.
TEST(Activations, LaterStreamsAreMadeInTheirHandle) {
  SKIP_ON_CUDA("the CUDA backend encodes into a worst-case scratch block and "
               "copies the stream into the handle's block (Codec.cu); its "
               "handle is host metadata, not an allocator block");
  comet_rt_context *ctx = newContext();
  const int64_t n = 1 << 20;
  F smooth({n}), noisy = randomF({n}, 95);
  for (int64_t i = 0; i < n; ++i)
    smooth.v[i] = float(std::sin(double(i) * 1e-3));
  const double eb = 1e-3;
  auto statsOf = [&] {
    comet_rt_alloc_stats s;
    comet_rt_alloc_get_stats(ctx, &s);
    return s;
  };
  // The first step (exact size), a second with the same data (the guess
  // fits) and a third with data that needs far more (it does not).
  for (int k = 0; k < 3; ++k) {
    F &x = k < 2 ? smooth : noisy;
    comet_rt_alloc_reset_peaks(ctx);
    comet_rt_alloc_stats before = statsOf();
    int64_t h = dev::compress(ctx, &x, COMET_RT_CODEC_SZ, -1, eb, 4);
    ASSERT_NE(h, 0) << comet_rt_last_error();
    comet_rt_alloc_stats s = statsOf();
    void *block = reinterpret_cast<void *>(static_cast<intptr_t>(h));
    const size_t held = comet_rt_alloc_size(block);
    EXPECT_EQ(comet_rt_alloc_category_of(block), COMET_RT_MEM_COMPRESSED);
    EXPECT_EQ(s.current[COMET_RT_MEM_COMPRESSED] -
                  before.current[COMET_RT_MEM_COMPRESSED],
              int64_t(held));
    EXPECT_EQ(s.current[COMET_RT_MEM_WORKSPACE],
              before.current[COMET_RT_MEM_WORKSPACE]);
    if (k == 1) {
      // One block of at most the guess (17/16 of the last, 4 KiB and the
      // handle's header) was live: a scratch block and a copy would be two.
      EXPECT_LE(s.peak_total - before.current_total,
                int64_t(held * 17 / 16 + 4096 + 64));
    }
    F y(x.dims);
    ASSERT_RT(dev::decompress(ctx, h, &y));
    for (int64_t i = 0; i < n; ++i)
      ASSERT_LE(std::fabs(double(y.v[i]) - double(x.v[i])), eb) << i;
    dev::handle_free(ctx, h);
  }
  comet_rt_context_destroy(ctx);
}

} // namespace
