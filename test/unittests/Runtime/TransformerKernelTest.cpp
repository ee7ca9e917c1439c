//===- TransformerKernelTest.cpp - Transformer kernels vs. loops ----------===//
//
// The kernels of transformer training graphs against naive loops in double
// precision that follow ONNX's and ONNX Runtime's definitions.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

using namespace comet::test;

namespace {

std::vector<int64_t> stridesOf(const std::vector<int64_t> &d) {
  std::vector<int64_t> s(d.size(), 1);
  for (int64_t i = (int64_t)d.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * d[i + 1];
  return s;
}

TEST(Transpose, MatchesIndexPermutation) {
  for (std::vector<int64_t> perm :
       {std::vector<int64_t>{1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {0, 1, 2}}) {
    std::vector<int64_t> xd = {3, 4, 5}, yd(3);
    for (int i = 0; i < 3; ++i)
      yd[i] = xd[perm[i]];
    F x = randomF(xd, 1), y(yd);
    I p({3}, perm);
    ASSERT_RT(dev::transpose(nullptr, &x, &y, &p));
    auto xs = stridesOf(xd), ys = stridesOf(yd);
    std::vector<double> want(y.size());
    for (int64_t i = 0; i < yd[0]; ++i)
      for (int64_t j = 0; j < yd[1]; ++j)
        for (int64_t k = 0; k < yd[2]; ++k) {
          int64_t idx[3] = {i, j, k}, off = 0;
          for (int d = 0; d < 3; ++d)
            off += idx[d] * xs[perm[d]];
          want[i * ys[0] + j * ys[1] + k] = x[off];
        }
    expectNear(y.v, want, 0, "transpose");
  }
}

TEST(Transpose, RejectsBadPermAndShape) {
  F x = randomF({2, 3}, 2), y({3, 2}), wrong({2, 3});
  I dup({2}, std::vector<int64_t>{0, 0}), ok({2}, std::vector<int64_t>{1, 0});
  EXPECT_NE(dev::transpose(nullptr, &x, &y, &dup),
            COMET_RT_SUCCESS);
  EXPECT_NE(dev::transpose(nullptr, &x, &wrong, &ok),
            COMET_RT_SUCCESS);
}

/// alpha * op(A) x op(B) with A [ba, r, c] and B [bb, r, c], batch 1
/// broadcasting.
std::vector<double> refMatMul(const F &a, const F &b, bool ta, bool tb,
                              double alpha, int64_t batch) {
  int64_t ar = a.dims[1], ac = a.dims[2], br = b.dims[1], bc = b.dims[2];
  int64_t m = ta ? ac : ar, k = ta ? ar : ac, n = tb ? br : bc;
  std::vector<double> y(batch * m * n);
  for (int64_t p = 0; p < batch; ++p) {
    int64_t pa = a.dims[0] == 1 ? 0 : p, pb = b.dims[0] == 1 ? 0 : p;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) {
          double av =
              ta ? a[(pa * ar + q) * ac + i] : a[(pa * ar + i) * ac + q];
          double bv =
              tb ? b[(pb * br + j) * bc + q] : b[(pb * br + q) * bc + j];
          s += av * bv;
        }
        y[(p * m + i) * n + j] = alpha * s;
      }
  }
  return y;
}

TEST(FusedMatMul, BatchedWithTransposesAndBroadcast) {
  struct Case {
    std::vector<int64_t> a, b, y;
    bool ta, tb;
    float alpha;
  } cases[] = {
      {{4, 3, 5}, {4, 6, 5}, {4, 3, 6}, false, true, 1.0f},
      {{4, 5, 3}, {4, 5, 6}, {4, 3, 6}, true, false, 0.5f},
      {{4, 5, 3}, {1, 6, 5}, {4, 3, 6}, true, true, 2.0f},
      {{1, 3, 5}, {4, 5, 6}, {4, 3, 6}, false, false, 1.0f},
  };
  for (const Case &c : cases) {
    F a = randomF(c.a, 3), b = randomF(c.b, 4), y(c.y);
    ASSERT_RT(dev::fused_matmul(nullptr, &a, &b, &y, c.alpha,
                                                 c.ta, c.tb));
    expectNear(y.v, refMatMul(a, b, c.ta, c.tb, c.alpha, c.y[0]), 1e-5,
               "fused_matmul");
  }
  // 2-D weights against a 3-D activation (dX = dY x W).
  F a = randomF({2, 3, 5}, 5), w = randomF({6, 5}, 6), y({2, 3, 6});
  ASSERT_RT(
      dev::fused_matmul(nullptr, &a, &w, &y, 1.0f, 0, 1));
  F w3({1, 6, 5}, w.v);
  expectNear(y.v, refMatMul(a, w3, false, true, 1.0, 2), 1e-5, "2-D B");
  F bad({2, 3, 5});
  EXPECT_NE(
      dev::fused_matmul(nullptr, &a, &w, &bad, 1.0f, 0, 1),
      COMET_RT_SUCCESS);
}

struct LnRef {
  std::vector<double> y, mean, inv;
};

LnRef refLayerNorm(const F &x, const F &g, const F &b, int64_t rows,
                   int64_t cols, double eps) {
  LnRef r{std::vector<double>(x.size()), std::vector<double>(rows),
          std::vector<double>(rows)};
  for (int64_t i = 0; i < rows; ++i) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < cols; ++j)
      m += x[i * cols + j];
    m /= cols;
    for (int64_t j = 0; j < cols; ++j)
      v += (x[i * cols + j] - m) * (x[i * cols + j] - m);
    v /= cols;
    double inv = 1 / std::sqrt(v + eps);
    r.mean[i] = m;
    r.inv[i] = inv;
    for (int64_t j = 0; j < cols; ++j)
      r.y[i * cols + j] = (x[i * cols + j] - m) * inv * g[j] + b[j];
  }
  return r;
}

TEST(LayerNorm, ForwardMatchesDefinition) {
  int64_t n = 3, t = 5, d = 16;
  F x = randomF({n, t, d}, 7, -2, 3), g = randomF({d}, 8), b = randomF({d}, 9);
  F y({n, t, d}), mean({n, t, 1}), inv({n, t, 1});
  ASSERT_RT(dev::layer_norm(nullptr, &x, &g, &b, &y, &mean,
                                             &inv, -1, 1e-5f));
  LnRef r = refLayerNorm(x, g, b, n * t, d, 1e-5);
  expectNear(y.v, r.y, 1e-5, "Y");
  expectNear(mean.v, r.mean, 1e-5, "mean");
  expectNear(inv.v, r.inv, 1e-5, "inv_std_var");
  // No bias and no statistics.
  F y2({n, t, d}), nb = none(), nm = none(), ni = none();
  F zero({d}, 0.0f);
  ASSERT_RT(dev::layer_norm(nullptr, &x, &g, &nb, &y2, &nm,
                                             &ni, 2, 1e-5f));
  expectNear(y2.v, refLayerNorm(x, g, zero, n * t, d, 1e-5).y, 1e-5, "no B");
  // Normalizing over the last two dims.
  F g2 = randomF({t * d}, 10), b2 = randomF({t * d}, 11), y3({n, t, d}),
    m3({n, 1, 1}), i3({n, 1, 1});
  ASSERT_RT(dev::layer_norm(nullptr, &x, &g2, &b2, &y3, &m3,
                                             &i3, 1, 1e-5f));
  expectNear(y3.v, refLayerNorm(x, g2, b2, n, t * d, 1e-5).y, 1e-5, "axis 1");
}

TEST(LayerNorm, BackwardMatchesOnnxRuntimeFormula) {
  int64_t rows = 12, cols = 16;
  F x = randomF({rows, cols}, 12, -2, 3), g = randomF({cols}, 13),
    b({cols}, 0.0f), dy = randomF({rows, cols}, 14);
  F y({rows, cols}), mean({rows, 1}), inv({rows, 1});
  ASSERT_RT(dev::layer_norm(nullptr, &x, &g, &b, &y, &mean,
                                             &inv, -1, 1e-5f));
  F dx({rows, cols}), dg({cols}), db({cols});
  ASSERT_RT(dev::layer_norm_grad(
      nullptr, &dy, &x, &g, &mean, &inv, &dx, &dg, &db, -1, 1e-5f));
  std::vector<double> wdx(x.size()), wdg(cols, 0), wdb(cols, 0);
  for (int64_t i = 0; i < rows; ++i) {
    double a = 0, c = 0;
    for (int64_t j = 0; j < cols; ++j) {
      double xh = (x[i * cols + j] - mean[i]) * inv[i];
      double dyg = dy[i * cols + j] * g[j];
      a += dyg;
      c += dyg * xh;
      wdg[j] += dy[i * cols + j] * xh;
      wdb[j] += dy[i * cols + j];
    }
    for (int64_t j = 0; j < cols; ++j) {
      double xh = (x[i * cols + j] - mean[i]) * inv[i];
      wdx[i * cols + j] =
          inv[i] * (dy[i * cols + j] * g[j] - a / cols - xh * c / cols);
    }
  }
  expectNear(dx.v, wdx, 1e-4, "dX");
  expectNear(dg.v, wdg, 1e-4, "dscale");
  expectNear(db.v, wdb, 1e-5, "dbias");
}

TEST(Softmax, BackwardMatchesDefinition) {
  int64_t outer = 6, l = 7;
  F s = randomF({outer, l}, 15, -3, 3), y({outer, l}),
    dy = randomF({outer, l}, 16);
  ASSERT_RT(dev::softmax(nullptr, &s, &y, -1));
  F dx({outer, l});
  ASSERT_RT(dev::softmax_grad(nullptr, &dy, &y, &dx, -1));
  std::vector<double> want(dx.size());
  for (int64_t i = 0; i < outer; ++i) {
    double dot = 0;
    for (int64_t j = 0; j < l; ++j)
      dot += double(dy[i * l + j]) * y[i * l + j];
    for (int64_t j = 0; j < l; ++j)
      want[i * l + j] = y[i * l + j] * (dy[i * l + j] - dot);
  }
  expectNear(dx.v, want, 1e-5, "softmax dX");
  // Along a middle axis.
  F y3 = randomF({2, 3, 4}, 17, 0, 1), dy3 = randomF({2, 3, 4}, 18),
    dx3({2, 3, 4});
  ASSERT_RT(dev::softmax_grad(nullptr, &dy3, &y3, &dx3, 1));
  std::vector<double> w3(dx3.size());
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t c = 0; c < 4; ++c) {
      double dot = 0;
      for (int64_t j = 0; j < 3; ++j)
        dot += double(dy3[(a * 3 + j) * 4 + c]) * y3[(a * 3 + j) * 4 + c];
      for (int64_t j = 0; j < 3; ++j)
        w3[(a * 3 + j) * 4 + c] =
            y3[(a * 3 + j) * 4 + c] * (dy3[(a * 3 + j) * 4 + c] - dot);
    }
  expectNear(dx3.v, w3, 1e-5, "axis 1");
}

/// gelu(z) = z Phi(z) and dY * gelu'(z), in double.
static void erfGelu(double z, double dy, double &y, double &dx) {
  double cdf = 0.5 * (1 + std::erf(z / std::sqrt(2.0)));
  y = z * cdf;
  dx = dy * (cdf + z * std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI));
}

TEST(BiasGelu, ForwardAndGradientMatchErfGelu) {
  int64_t rows = 10, cols = 12;
  F x = randomF({2, rows / 2, cols}, 19, -4, 4), b = randomF({cols}, 20),
    y({2, rows / 2, cols}), dy = randomF({2, rows / 2, cols}, 21),
    dx({2, rows / 2, cols});
  ASSERT_RT(dev::bias_gelu(nullptr, &x, &b, &y));
  ASSERT_RT(dev::bias_gelu_grad_dx(nullptr, &dy, &x, &b, &dx));
  std::vector<double> wy(y.size()), wdx(y.size());
  for (int64_t i = 0; i < x.size(); ++i)
    erfGelu(double(x[i]) + b[i % cols], dy[i], wy[i], wdx[i]);
  expectNear(y.v, wy, 1e-5, "gelu");
  expectNear(dx.v, wdx, 1e-5, "gelu grad");
  F wrongB({cols + 1});
  EXPECT_NE(dev::bias_gelu(nullptr, &x, &wrongB, &y),
            COMET_RT_SUCCESS);
}

// ORT's Gelu/GeluGrad: BiasGelu without the bias.
TEST(Gelu, ForwardAndGradientMatchErfGelu) {
  F x = randomF({3, 7, 5}, 23, -4, 4), y({3, 7, 5}),
    dy = randomF({3, 7, 5}, 24), dx({3, 7, 5});
  ASSERT_RT(dev::gelu(nullptr, &x, &y));
  ASSERT_RT(dev::gelu_grad(nullptr, &dy, &x, &dx));
  std::vector<double> wy(y.size()), wdx(y.size());
  for (int64_t i = 0; i < x.size(); ++i)
    erfGelu(x[i], dy[i], wy[i], wdx[i]);
  expectNear(y.v, wy, 1e-5, "gelu");
  expectNear(dx.v, wdx, 1e-5, "gelu grad");
  F wrong({3, 7, 6});
  EXPECT_NE(dev::gelu(nullptr, &x, &wrong), COMET_RT_SUCCESS);
  EXPECT_NE(dev::gelu_grad(nullptr, &dy, &x, &wrong),
            COMET_RT_SUCCESS);
}

TEST(Slice, ClampsNegativeIndicesAndSteps) {
  F x = randomF({4, 10}, 22);
  // Axis -1 from 2 to -1 with step 3 (2, 5, 8); axis 0 from 10 (clamped to
  // 3) down to -100 (clamped) with step -2 (3, 1).
  I starts({2}, std::vector<int64_t>{2, 10}),
      ends({2}, std::vector<int64_t>{-1, -100}),
      axes({2}, std::vector<int64_t>{-1, 0}),
      steps({2}, std::vector<int64_t>{3, -2});
  F y({2, 3});
  ASSERT_RT(dev::slice(nullptr, &x, &starts, &ends, &axes,
                                        &steps, &y));
  std::vector<double> want;
  for (int64_t r : {3, 1})
    for (int64_t c : {2, 5, 8})
      want.push_back(x[r * 10 + c]);
  expectNear(y.v, want, 0, "slice");
  // SliceGrad puts dY back there and zeros elsewhere.
  F dx({4, 10}, 7.0f);
  I shape({2}, std::vector<int64_t>{4, 10});
  ASSERT_RT(dev::slice_grad(nullptr, &y, &shape, &starts,
                                             &ends, &axes, &steps, &dx));
  std::vector<double> wdx(40, 0.0);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      wdx[(i == 0 ? 3 : 1) * 10 + 2 + 3 * j] = y[i * 3 + j];
  expectNear(dx.v, wdx, 0, "slice_grad");
  // The attention split: columns [64, 128) of [28, 2, 192], no steps.
  F qkv = randomF({3, 2, 12}, 23), k({3, 2, 4}), nothing = none();
  I s1({1}, std::vector<int64_t>{4}), e1({1}, std::vector<int64_t>{8}),
      a1({1}, std::vector<int64_t>{-1});
  I noSteps({0});
  ASSERT_RT(
      dev::slice(nullptr, &qkv, &s1, &e1, &a1, &noSteps, &k));
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 4; ++j)
      ASSERT_EQ(k[i * 4 + j], qkv[i * 12 + 4 + j]);
  F bad({3, 2, 5});
  EXPECT_NE(
      dev::slice(nullptr, &qkv, &s1, &e1, &a1, &noSteps, &bad),
      COMET_RT_SUCCESS);
}

TEST(Binary, SubMulDivBroadcast) {
  F a = randomF({2, 3, 4}, 24), b = randomF({3, 1}, 25, 0.5, 2), y({2, 3, 4});
  struct {
    int32_t (*fn)(comet_rt_context *, comet_rt_memref *, comet_rt_memref *,
                  comet_rt_memref *);
    double (*ref)(double, double);
  } ops[] = {
      {dev::sub, [](double p, double q) { return p - q; }},
      {dev::mul, [](double p, double q) { return p * q; }},
      {dev::div, [](double p, double q) { return p / q; }}};
  for (auto &o : ops) {
    ASSERT_RT(o.fn(nullptr, &a, &b, &y));
    std::vector<double> want(y.size());
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k)
          want[(i * 3 + j) * 4 + k] = o.ref(a[(i * 3 + j) * 4 + k], b[j]);
    expectNear(y.v, want, 1e-6, "binary");
  }
  F s({}, std::vector<float>{4.0f}), ys({2, 3, 4});
  ASSERT_RT(dev::div(nullptr, &a, &s, &ys));
  for (int64_t i = 0; i < a.size(); ++i)
    ASSERT_FLOAT_EQ(ys[i], a[i] / 4.0f);
}

TEST(ReduceMean, OverAxesWithAndWithoutKeepdims) {
  F x = randomF({3, 5, 4}, 26), y({3, 4}), yk({3, 1, 4}), all({1, 1, 1});
  I axes({1}, std::vector<int64_t>{1}), noAxes({0});
  ASSERT_RT(dev::reduce_mean(nullptr, &x, &axes, &y, 0));
  ASSERT_RT(dev::reduce_mean(nullptr, &x, &axes, &yk, 1));
  ASSERT_RT(dev::reduce_mean(nullptr, &x, &noAxes, &all, 1));
  std::vector<double> want(12, 0.0);
  double total = 0;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t k = 0; k < 4; ++k) {
        want[i * 4 + k] += x[(i * 5 + j) * 4 + k] / 5.0;
        total += x[(i * 5 + j) * 4 + k];
      }
  expectNear(y.v, want, 1e-6, "mean");
  expectNear(yk.v, want, 1e-6, "keepdims");
  expectNear(all.v, {total / 60}, 1e-6, "all");
}

} // namespace
