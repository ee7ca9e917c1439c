//===- KernelTest.cpp - Kernels against naive references in the test -----===//

#include "TestUtil.h"
#include "comet/runtime/alloc.h"
#include "comet/runtime/handles.h"

#include <limits>
#include <memory>

using namespace comet::test;

namespace {

struct ConvP {
  int64_t sH, sW, pT, pL, pB, pR, dH, dW, g;
};

std::vector<double> naiveConv(const F &x, const F &w, const F *b,
                              std::vector<int64_t> yd, ConvP p) {
  int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3];
  int64_t M = w.dims[0], Cg = w.dims[1], KH = w.dims[2], KW = w.dims[3];
  int64_t OH = yd[2], OW = yd[3], Mg = M / p.g;
  (void)C;
  std::vector<double> y(N * M * OH * OW);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double s = b ? (*b)[m] : 0.0;
          int64_t grp = m / Mg;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t a = 0; a < KH; ++a)
              for (int64_t e = 0; e < KW; ++e) {
                int64_t h = i * p.sH - p.pT + a * p.dH;
                int64_t ww = j * p.sW - p.pL + e * p.dW;
                if (h < 0 || h >= H || ww < 0 || ww >= W)
                  continue;
                s += (double)
                         x[((n * x.dims[1] + grp * Cg + c) * H + h) * W + ww] *
                     w[((m * Cg + c) * KH + a) * KW + e];
              }
          y[((n * M + m) * OH + i) * OW + j] = s;
        }
  return y;
}

TEST(Conv, MatchesNaiveLoopsWithPadsStridesDilationsGroups) {
  struct Case {
    std::vector<int64_t> x, w, y;
    ConvP p;
    bool bias;
  } cases[] = {
      {{2, 3, 7, 6},
       {4, 3, 3, 3},
       {2, 4, 7, 6},
       {1, 1, 1, 1, 1, 1, 1, 1, 1},
       true},
      {{1, 4, 9, 9},
       {6, 2, 3, 2},
       {1, 6, 4, 5},
       {2, 2, 0, 1, 1, 1, 1, 1, 2},
       true},
      {{2, 2, 8, 8},
       {3, 2, 3, 3},
       {2, 3, 4, 4},
       {1, 1, 0, 0, 0, 0, 2, 2, 1},
       false},
      {{3, 1, 28, 28},
       {4, 1, 5, 5},
       {3, 4, 28, 28},
       {1, 1, 2, 2, 2, 2, 1, 1, 1},
       true},
  };
  uint32_t seed = 1;
  for (auto &c : cases) {
    F x = randomF(c.x, seed++), w = randomF(c.w, seed++),
      b = randomF({c.w[0]}, seed++), y(c.y), nb = none();
    ASSERT_RT(dev::conv2d(
        nullptr, &x, &w, c.bias ? &b : &nb, &y, c.p.sH, c.p.sW, c.p.pT, c.p.pL,
        c.p.pB, c.p.pR, c.p.dH, c.p.dW, c.p.g));
    expectNear(y.v,
               naiveConv(x, w, c.bias ? std::addressof(b) : nullptr, c.y, c.p),
               1e-5, "conv");
  }
}

TEST(Conv, RejectsWrongOutputShapeAndCachesPrimitives) {
  SKIP_ON_CUDA("oneDNN's primitive cache and the default context's "
               "workspace counters are the CPU backend's");
  F x = randomF({1, 2, 5, 5}, 3), w = randomF({2, 2, 3, 3}, 4), b = none();
  F bad({1, 2, 5, 5});
  EXPECT_EQ(dev::conv2d(nullptr, &x, &w, &b, &bad, 1, 1, 0, 0,
                                         0, 0, 1, 1, 1),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(comet_rt_last_error()).find("expected [1x2x3x3]"),
            std::string::npos)
      << comet_rt_last_error();
  F y({1, 2, 3, 3});
  ASSERT_RT(dev::conv2d(nullptr, &x, &w, &b, &y, 1, 1, 0, 0, 0,
                                         0, 1, 1, 1));
  int64_t cached = comet_rt_primitive_cache_size();
  comet_rt_alloc_stats before, after;
  comet_rt_alloc_get_stats(nullptr, &before);
  for (int i = 0; i < 3; ++i)
    ASSERT_RT(dev::conv2d(nullptr, &x, &w, &b, &y, 1, 1, 0, 0,
                                           0, 0, 1, 1, 1));
  comet_rt_alloc_get_stats(nullptr, &after);
  EXPECT_EQ(comet_rt_primitive_cache_size(), cached);
  // Scratchpads are returned after each call.
  EXPECT_EQ(after.current[COMET_RT_MEM_WORKSPACE],
            before.current[COMET_RT_MEM_WORKSPACE]);
}

TEST(Conv, NonContiguousMemrefIsRejected) {
  F x = randomF({1, 1, 4, 4}, 5), w = randomF({1, 1, 2, 2}, 6), b = none();
  F y({1, 1, 3, 3});
  x.words[3 + 4 + 3] = 2; // innermost stride 2
  EXPECT_EQ(dev::conv2d(nullptr, &x, &w, &b, &y, 1, 1, 0, 0, 0,
                                         0, 1, 1, 1),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(comet_rt_last_error()).find("contiguous"),
            std::string::npos);
}

// The public layout check that kernels and support libraries share.
TEST(MemrefView, ReportsWhyALayoutIsRejected) {
  F x = randomF({2, 3, 4}, 7);
  void *data = nullptr;
  int64_t dims[8], n = 0;
  EXPECT_EQ(comet_rt_memref_view(&x, 4, 8, &data, dims, &n), nullptr);
  EXPECT_EQ(n, 24);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[2], 4);
  EXPECT_EQ(data, x.v.data());
  EXPECT_STREQ(comet_rt_memref_view(&x, 4, 2, &data, dims, &n), "bad rank");
  EXPECT_STREQ(comet_rt_memref_view(nullptr, 4, 8, &data, dims, &n),
               "null memref");
  x.words[3 + 3 + 2] = 2; // innermost stride 2
  EXPECT_STREQ(comet_rt_memref_view(&x, 4, 8, &data, dims, &n),
               "not contiguous row-major");
  x.words[3 + 1] = -1;
  EXPECT_STREQ(comet_rt_memref_view(&x, 4, 8, &data, dims, &n),
               "negative size");
}

TEST(ConvGrad, MatchesNaiveAdjoint) {
  // dX[n,c,h,w] = sum dY * W, dW = sum dY * X, dB = sum dY, by brute force.
  ConvP p{2, 1, 1, 0, 1, 2, 1, 2, 1};
  F x = randomF({2, 3, 6, 5}, 7), w = randomF({4, 3, 3, 2}, 8);
  std::vector<int64_t> yd = {2, 4, 3, 5};
  F dy = randomF(yd, 9), dx(x.dims), dw(w.dims), db({4});
  ASSERT_RT(dev::conv_grad2d(nullptr, &dy, &x, &w, &dx, &dw,
                                              &db, p.sH, p.sW, p.pT, p.pL, p.pB,
                                              p.pR, p.dH, p.dW, p.g));
  // Check against the forward reference: <dY, conv(e_k)> for unit vectors.
  std::vector<double> wantDx(x.size()), wantDw(w.size()), wantDb(4, 0.0);
  for (int64_t k = 0; k < x.size(); ++k) {
    F e(x.dims);
    e[k] = 1;
    auto y = naiveConv(e, w, nullptr, yd, p);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i)
      s += y[i] * dy.v[i];
    wantDx[k] = s;
  }
  for (int64_t k = 0; k < w.size(); ++k) {
    F e(w.dims);
    e[k] = 1;
    auto y = naiveConv(x, e, nullptr, yd, p);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i)
      s += y[i] * dy.v[i];
    wantDw[k] = s;
  }
  for (int64_t i = 0; i < dy.size(); ++i)
    wantDb[(i / 15) % 4] += dy[i];
  expectNear(dx.v, wantDx, 1e-5, "dX");
  expectNear(dw.v, wantDw, 1e-5, "dW");
  expectNear(db.v, wantDb, 1e-5, "dB");

  // Absent outputs are skipped (LeNet's first ConvGrad has no dX).
  F n = none(), dw2(w.dims);
  ASSERT_RT(dev::conv_grad2d(nullptr, &dy, &x, &w, &n, &dw2,
                                              &n, p.sH, p.sW, p.pT, p.pL, p.pB,
                                              p.pR, p.dH, p.dW, p.g));
  expectNear(dw2.v, wantDw, 1e-5, "dW only");
}

// Under a context's workspace limit, dW and dB come from groups of output
// channels (the last one shorter: 40 channels go 20, 10, 5, 3, 2, 1 as
// the limit falls) and must match the whole convolution within float rounding,
// dX exactly (it is not split); the weight gradient's workspace peak must
// stay under a limit that a group of one channel fits.
TEST(ConvGrad, OutputChannelGroupsUnderTheWorkspaceLimit) {
  ConvP p{1, 1, 1, 1, 1, 1, 1, 1, 1};
  // Small planes and many channels: oneDNN's weight-gradient scratchpad
  // (a reduction of dW over threads) then grows with the channels.
  F x = randomF({8, 16, 4, 4}, 31), w = randomF({40, 16, 3, 3}, 32);
  F dy = randomF({8, 40, 4, 4}, 33);
  auto run = [&](int64_t limit, F &dx, F &dw, F &db) {
    comet_rt_context *ctx = comet_rt_context_create();
    comet_rt_context_set_workspace_limit(ctx, limit);
    EXPECT_EQ(comet_rt_context_workspace_limit(ctx), limit);
    EXPECT_EQ(dev::conv_grad2d(ctx, &dy, &x, &w, &dx, &dw, &db, p.sH, p.sW,
                               p.pT, p.pL, p.pB, p.pR, p.dH, p.dW, p.g),
              COMET_RT_SUCCESS)
        << comet_rt_last_error();
    comet_rt_alloc_stats st;
    comet_rt_alloc_get_stats(ctx, &st);
    // What a memory prediction asks beforehand is what the call took.
    int32_t outputs = (dx.size() ? COMET_RT_CONV_GRAD_DX : 0) |
                      (dw.size() ? COMET_RT_CONV_GRAD_DW : 0) |
                      (db.size() ? COMET_RT_CONV_GRAD_DB : 0);
    EXPECT_EQ(comet_rt_conv_grad2d_workspace(
                  ctx, x.dims.data(), w.dims.data(), dy.dims.data(), p.sH, p.sW,
                  p.pT, p.pL, p.pB, p.pR, p.dH, p.dW, p.g, outputs),
              st.peak[COMET_RT_MEM_WORKSPACE])
        << comet_rt_last_error();
    comet_rt_context_destroy(ctx);
    return st.peak[COMET_RT_MEM_WORKSPACE];
  };
  F dx0(x.dims), dw0(w.dims), db0({40});
  int64_t whole = run(0, dx0, dw0, db0);
  ASSERT_GT(whole, 0) << "no scratchpad: the test would not split anything";
  std::vector<double> wantDw(dw0.v.begin(), dw0.v.end()),
      wantDb(db0.v.begin(), db0.v.end());
  // A limit below a group of one channel still computes, one at a time.
  for (int64_t limit : {whole - 1, whole / 2, whole / 4, int64_t(1)}) {
    SCOPED_TRACE("limit " + std::to_string(limit) + " of " +
                 std::to_string(whole));
    F dx(x.dims), dw(w.dims), db({40});
    int64_t peak = run(limit, dx, dw, db);
    EXPECT_LT(peak, whole);
    EXPECT_EQ(dx.v, dx0.v);
    expectNear(dw.v, wantDw, 1e-5, "dW");
    expectNear(db.v, wantDb, 1e-5, "dB");
  }
  // The weight gradient alone (dX's scratchpad is not split) keeps to it.
  F n = none(), dw(w.dims), db({40});
  int64_t wholeDw = run(0, n, dw, db);
  ASSERT_GT(wholeDw, 0);
  EXPECT_LE(run(wholeDw / 2, n, dw, db), wholeDw / 2);
  expectNear(dw.v, wantDw, 1e-5, "dW only");
  // The query checks the geometry as the call does.
  std::vector<int64_t> badDy = {8, 40, 5, 4};
  EXPECT_EQ(comet_rt_conv_grad2d_workspace(
                nullptr, x.dims.data(), w.dims.data(), badDy.data(), 1, 1, 1, 1,
                1, 1, 1, 1, 1, COMET_RT_CONV_GRAD_DW),
            -1);
  EXPECT_NE(std::string(comet_rt_last_error()).find("expected [8x40x4x4]"),
            std::string::npos)
      << comet_rt_last_error();
  // The default context limit is the documented one.
  comet_rt_context *ctx = comet_rt_context_create();
  EXPECT_EQ(comet_rt_context_workspace_limit(ctx),
            COMET_RT_DEFAULT_WORKSPACE_LIMIT);
  comet_rt_context_set_workspace_limit(ctx, -5);
  EXPECT_EQ(comet_rt_context_workspace_limit(ctx),
            COMET_RT_DEFAULT_WORKSPACE_LIMIT);
  comet_rt_context_destroy(ctx);
}

std::vector<double> naiveGemm(const F &a, const F &b, const F *c, int64_t M,
                              int64_t N, int64_t K, bool ta, bool tb,
                              float alpha, float beta) {
  std::vector<double> y(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += (double)(ta ? a[k * M + i] : a[i * K + k]) *
             (tb ? b[j * K + k] : b[k * N + j]);
      double cv = 0;
      if (c) {
        int64_t r = c->dims.size() == 2 ? c->dims[0] : 1;
        int64_t cc = c->dims.empty() ? 1 : c->dims.back();
        cv = (*c)[(r == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)];
      }
      y[i * N + j] = alpha * s + beta * cv;
    }
  return y;
}

TEST(Gemm, AllTransposesAlphaBetaAndBroadcastC) {
  int64_t M = 5, N = 7, K = 3;
  uint32_t seed = 20;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (auto cd :
           std::vector<std::vector<int64_t>>{{}, {N}, {1, N}, {M, 1}, {M, N}}) {
        F a = randomF(ta ? std::vector<int64_t>{K, M}
                         : std::vector<int64_t>{M, K},
                      seed++);
        F b = randomF(tb ? std::vector<int64_t>{N, K}
                         : std::vector<int64_t>{K, N},
                      seed++);
        F c = randomF(cd, seed++), y({M, N});
        ASSERT_RT(dev::gemm(nullptr, &a, &b, &c, &y, 0.5f,
                                             -2.0f, ta, tb));
        expectNear(
            y.v,
            naiveGemm(a, b, std::addressof(c), M, N, K, ta, tb, 0.5f, -2.0f),
            1e-5, "gemm");
      }
  // No C, beta 0 (the backward Gemms of the training graphs).
  F a = randomF({K, M}, 90), b = randomF({K, N}, 91), n = none(), y({M, N});
  ASSERT_RT(
      dev::gemm(nullptr, &a, &b, &n, &y, 1.0f, 0.0f, 1, 0));
  expectNear(y.v, naiveGemm(a, b, nullptr, M, N, K, true, false, 1, 0), 1e-5);
  F bad({M, N + 1});
  EXPECT_EQ(dev::gemm(nullptr, &a, &b, &n, &bad, 1, 0, 1, 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
}

TEST(MatMul, BatchedWithBroadcastAndVectors) {
  F a = randomF({2, 1, 3, 4}, 30), b = randomF({3, 4, 5}, 31), y({2, 3, 3, 5});
  ASSERT_RT(dev::matmul(nullptr, &a, &b, &y));
  std::vector<double> want(y.size());
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 5; ++c) {
          double s = 0;
          for (int64_t k = 0; k < 4; ++k)
            s += (double)a[(i * 3 + r) * 4 + k] * b[(j * 4 + k) * 5 + c];
          want[((i * 3 + j) * 3 + r) * 5 + c] = s;
        }
  expectNear(y.v, want, 1e-5, "matmul");
  F v = randomF({4}, 32), m = randomF({4, 2}, 33), vy({2});
  ASSERT_RT(dev::matmul(nullptr, &v, &m, &vy));
  expectNear(vy.v,
             {v[0] * m[0] + (double)v[1] * m[2] + v[2] * m[4] + v[3] * m[6],
              v[0] * m[1] + (double)v[1] * m[3] + v[2] * m[5] + v[3] * m[7]},
             1e-5);
}

TEST(BatchNorm, TrainingStatisticsAndRunningUpdate) {
  int64_t N = 3, C = 2, HW = 5;
  F x = randomF({N, C, 1, HW}, 40, -2, 3), sc = randomF({C}, 41),
    bi = randomF({C}, 42), im = randomF({C}, 43), iv = randomF({C}, 44, 0.5, 2);
  F y(x.dims), rm({C}), rv({C}), sm({C}), si({C});
  float eps = 1e-5f, mom = 0.9f;
  ASSERT_RT(dev::batch_norm_internal(
      nullptr, &x, &sc, &bi, &im, &iv, &y, &rm, &rv, &sm, &si, eps, mom, 1));
  std::vector<double> wantY(x.size());
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0, var = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i)
        mean += x[(n * C + c) * HW + i];
    mean /= N * HW;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i)
        var += std::pow(x[(n * C + c) * HW + i] - mean, 2);
    var /= N * HW; // biased, as ORT
    EXPECT_NEAR(sm[c], mean, 1e-5);
    EXPECT_NEAR(si[c], 1 / std::sqrt(var + eps), 1e-4);
    EXPECT_NEAR(rm[c], im[c] * mom + mean * (1 - mom), 1e-5);
    EXPECT_NEAR(rv[c], iv[c] * mom + var * (1 - mom), 1e-5);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i) {
        int64_t k = (n * C + c) * HW + i;
        wantY[k] = (x[k] - mean) / std::sqrt(var + eps) * sc[c] + bi[c];
      }
  }
  expectNear(y.v, wantY, 1e-5, "bn Y");

  // Inference mode uses the given statistics.
  F y2(x.dims), n0 = none();
  ASSERT_RT(dev::batch_norm_internal(
      nullptr, &x, &sc, &bi, &im, &iv, &y2, &n0, &n0, &n0, &n0, eps, mom, 0));
  for (int64_t k = 0; k < x.size(); ++k) {
    int64_t c = (k / HW) % C;
    ASSERT_NEAR(y2[k], (x[k] - im[c]) / std::sqrt(iv[c] + eps) * sc[c] + bi[c],
                1e-5);
  }
}

// comet-recompute-activations replaces a kept BatchNorm output by this
// call in the backward: it must give the forward's bits, with and without
// the ReLU or Clip that follows it, at every layout oneDNN picks a kernel
// for (rank 2 to 5, spatial sizes with and without a vector tail).
TEST(BatchNormApply, GivesTheForwardsBitsFromTheSavedStatistics) {
  std::vector<std::vector<int64_t>> shapes = {
      {8, 5}, {4, 3, 7}, {3, 16, 5, 5}, {2, 64, 14, 14}, {5, 7, 3, 17},
      {2, 8, 3, 4, 5}, {64, 32, 1, 1}};
  uint64_t seed = 300;
  for (const auto &dims : shapes) {
    int64_t C = dims[1];
    F x = randomF(dims, seed++, -3, 4), sc = randomF({C}, seed++, -2, 2),
      bi = randomF({C}, seed++), im = randomF({C}, seed++),
      iv = randomF({C}, seed++, 0.5, 2);
    F y(x.dims), rm({C}), rv({C}), sm({C}), si({C});
    ASSERT_RT(dev::batch_norm_internal(nullptr, &x, &sc, &bi, &im, &iv, &y,
                                       &rm, &rv, &sm, &si, 1e-5f, 0.9f, 1));
    struct Act {
      int64_t kind;
      float lo, hi;
    } acts[] = {{COMET_RT_BN_ACT_NONE, 0, 0},
                {COMET_RT_BN_ACT_RELU, 0, 0},
                {COMET_RT_BN_ACT_CLIP, 0.0f, 6.0f},
                {COMET_RT_BN_ACT_CLIP, -0.5f, 0.25f}};
    for (const Act &a : acts) {
      F want(x.dims), got(x.dims);
      for (int64_t k = 0; k < y.size(); ++k)
        want[k] = comet_rt_bn_activation(y[k], a.kind, a.lo, a.hi);
      ASSERT_RT(dev::batch_norm_apply(nullptr, &x, &sc, &bi, &sm, &si, &got,
                                      a.kind, a.lo, a.hi));
      int64_t diff = 0;
      for (int64_t k = 0; k < y.size(); ++k)
        diff += std::memcmp(&want[k], &got[k], 4) != 0;
      EXPECT_EQ(diff, 0) << "shape rank " << dims.size() << " C " << C
                         << " activation " << a.kind;
    }
  }
  // Bad input is refused before the kernel runs.
  F x = randomF({2, 3, 4}, 1), c3({3}), c2({2}), y({2, 3, 4});
  EXPECT_NE(dev::batch_norm_apply(nullptr, &x, &c3, &c3, &c2, &c3, &y,
                                  int64_t(1), 0.0f, 0.0f),
            0);
  EXPECT_NE(dev::batch_norm_apply(nullptr, &x, &c3, &c3, &c3, &c3, &y,
                                  int64_t(3), 0.0f, 0.0f),
            0);
}

TEST(BatchNormGrad, MatchesClosedForm) {
  int64_t N = 4, C = 3, HW = 6;
  F x = randomF({N, C, 2, 3}, 50, -1, 2), sc = randomF({C}, 51),
    dy = randomF(x.dims, 52), sm({C}), si({C});
  float eps = 1e-5f;
  int64_t M = N * HW;
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0, var = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i)
        mean += x[(n * C + c) * HW + i];
    mean /= M;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i)
        var += std::pow(x[(n * C + c) * HW + i] - mean, 2);
    sm[c] = (float)mean;
    si[c] = (float)(1 / std::sqrt(var / M + eps));
  }
  F dx(x.dims), ds({C}), db({C});
  ASSERT_RT(dev::batch_norm_grad(nullptr, &dy, &x, &sc, &sm,
                                                  &si, &dx, &ds, &db, eps));
  std::vector<double> wantDx(x.size()), wantDs(C), wantDb(C);
  for (int64_t c = 0; c < C; ++c) {
    double sdy = 0, sdyx = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i) {
        int64_t k = (n * C + c) * HW + i;
        sdy += dy[k];
        sdyx += dy[k] * (x[k] - sm[c]) * si[c];
      }
    wantDb[c] = sdy;
    wantDs[c] = sdyx;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i) {
        int64_t k = (n * C + c) * HW + i;
        double xh = (x[k] - sm[c]) * si[c];
        wantDx[k] = sc[c] * si[c] * (dy[k] - sdy / M - xh * sdyx / M);
      }
  }
  expectNear(dx.v, wantDx, 1e-5, "dX");
  expectNear(ds.v, wantDs, 1e-5, "dScale");
  expectNear(db.v, wantDb, 1e-5, "dBias");

  // In place (abi.def: dX may alias dY), as the lowering passes it where
  // dY dies: the same gradients.
  F inPlace = dy, ds2({C}), db2({C});
  ASSERT_RT(dev::batch_norm_grad(
      nullptr, &inPlace, &x, &sc, &sm, &si, &inPlace, &ds2, &db2, eps));
  expectNear(inPlace.v, wantDx, 1e-5, "dX in place");
  expectNear(ds2.v, wantDs, 1e-5, "dScale in place");
  expectNear(db2.v, wantDb, 1e-5, "dBias in place");
}

TEST(SoftmaxCrossEntropy, ReductionsWeightsIgnoreIndex) {
  int64_t N = 6, C = 4;
  F s = randomF({N, C}, 60, -3, 3), w = randomF({C}, 61, 0.1, 2);
  I labels({N}, std::vector<int64_t>{0, 3, 1, 2, 3, 1});
  std::vector<double> lp(N * C);
  for (int64_t n = 0; n < N; ++n) {
    double mx = -1e30, z = 0;
    for (int64_t c = 0; c < C; ++c)
      mx = std::max(mx, (double)s[n * C + c]);
    for (int64_t c = 0; c < C; ++c)
      z += std::exp(s[n * C + c] - mx);
    for (int64_t c = 0; c < C; ++c)
      lp[n * C + c] = s[n * C + c] - mx - std::log(z);
  }
  for (int weighted = 0; weighted < 2; ++weighted)
    for (int ignore = 0; ignore < 2; ++ignore)
      for (int64_t red = 0; red < 3; ++red) {
        F loss(red == 0 ? std::vector<int64_t>{N} : std::vector<int64_t>{}),
            logp({N, C}), n0 = none();
        ASSERT_RT(dev::softmax_cross_entropy_loss(
            nullptr, &s, &labels, weighted ? &w : &n0, &loss, &logp, red, 3,
            ignore));
        expectNear(logp.v, lp, 1e-6, "log_prob");
        std::vector<double> per(N), wi(N);
        double sum = 0, sumW = 0;
        for (int64_t n = 0; n < N; ++n) {
          int64_t l = labels[n];
          wi[n] = (ignore && l == 3) ? 0 : (weighted ? w[l] : 1.0);
          per[n] = -wi[n] * lp[n * C + l];
          sum += per[n];
          sumW += wi[n];
        }
        if (red == 0)
          expectNear(loss.v, per, 1e-6, "loss none");
        else
          expectNear(loss.v, {red == 1 ? sum : sum / sumW}, 1e-6, "loss");

        // Gradient: (softmax - onehot) * w * dY [/ sum w].
        F dy = red == 0 ? randomF({N}, 62) : F({}, std::vector<float>{0.7f});
        F dx({N, C});
        ASSERT_RT(dev::softmax_cross_entropy_loss_grad(
            nullptr, &dy, &logp, &labels, weighted ? &w : &n0, &dx, red, 3,
            ignore));
        std::vector<double> want(N * C);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < C; ++c) {
            double g = red == 0 ? dy[n] : dy[0];
            if (red == 2)
              g /= sumW;
            want[n * C + c] =
                (std::exp(lp[n * C + c]) - (c == labels[n] ? 1.0 : 0.0)) *
                wi[n] * g;
          }
        expectNear(dx.v, want, 1e-5, "sce grad");

        // Without the log_prob output (a temporary holds it), the same loss.
        F loss2(loss.dims);
        ASSERT_RT(dev::softmax_cross_entropy_loss(
            nullptr, &s, &labels, weighted ? &w : &n0, &loss2, &n0, red, 3,
            ignore));
        EXPECT_EQ(loss2.v, loss.v);
      }
  I badLabels({N}, std::vector<int64_t>{0, 4, 1, 2, 3, 1});
  F loss({}), n0 = none();
  EXPECT_EQ(dev::softmax_cross_entropy_loss(
                nullptr, &s, &badLabels, &n0, &loss, &n0, 2, 0, 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
}

TEST(Softmax, AlongAMiddleAxis) {
  F x = randomF({2, 3, 4}, 65, -4, 4), y(x.dims), ly(x.dims);
  ASSERT_RT(dev::softmax(nullptr, &x, &y, 1));
  ASSERT_RT(dev::log_softmax(nullptr, &x, &ly, -2));
  std::vector<double> want(x.size()), lwant(x.size());
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t c = 0; c < 4; ++c) {
      double z = 0;
      for (int64_t b = 0; b < 3; ++b)
        z += std::exp((double)x[(a * 3 + b) * 4 + c]);
      for (int64_t b = 0; b < 3; ++b) {
        int64_t k = (a * 3 + b) * 4 + c;
        want[k] = std::exp((double)x[k]) / z;
        lwant[k] = x[k] - std::log(z);
      }
    }
  expectNear(y.v, want, 1e-6);
  expectNear(ly.v, lwant, 1e-6);
}

TEST(MaxPool, ValuesAndOrtFlatIndices) {
  int64_t N = 2, C = 3, H = 5, W = 6;
  F x = randomF({N, C, H, W}, 70);
  for (int storage = 0; storage < 2; ++storage) {
    // kernel 3x2, stride 2x2, pads top 1 left 0 bottom 1 right 1.
    F y({N, C, 3, 3});
    I ind({N, C, 3, 3});
    ASSERT_RT(dev::maxpool2d(nullptr, &x, &y, &ind, 3, 2, 2, 2,
                                              1, 0, 1, 1, 1, 1, storage));
    for (int64_t p = 0; p < N * C; ++p)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 3; ++j) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t bh = 0, bw = 0;
          for (int64_t a = 0; a < 3; ++a)
            for (int64_t b = 0; b < 2; ++b) {
              int64_t h = i * 2 - 1 + a, w = j * 2 + b;
              if (h < 0 || h >= H || w >= W)
                continue;
              if (x[(p * H + h) * W + w] > best) {
                best = x[(p * H + h) * W + w];
                bh = h;
                bw = w;
              }
            }
          int64_t o = (p * 3 + i) * 3 + j;
          ASSERT_EQ(y[o], best);
          ASSERT_EQ(ind[o], storage == 0 ? (p * H + bh) * W + bw
                                         : (p * W + bw) * H + bh);
        }
  }
  // MaxPoolGrad scatters dY to those flat indices, accumulating repeats.
  F y({N, C, 2, 3});
  I ind({N, C, 2, 3});
  ASSERT_RT(dev::maxpool2d(nullptr, &x, &y, &ind, 3, 3, 2, 2,
                                            0, 0, 0, 0, 1, 1, 0));
  F dy = randomF(y.dims, 71), dx(x.dims, 123.0f);
  ASSERT_RT(dev::maxpool_grad(nullptr, &dy, &ind, &dx));
  std::vector<double> want(x.size(), 0.0);
  for (int64_t i = 0; i < dy.size(); ++i)
    want[ind[i]] += dy[i];
  expectNear(dx.v, want, 1e-6, "maxpool grad");
  ind[0] = x.size(); // out of range
  EXPECT_EQ(dev::maxpool_grad(nullptr, &dy, &ind, &dx),
            COMET_RT_ERROR_INVALID_ARGUMENT);
}

TEST(MaxPool, WindowPositionsGiveTheFlatIndicesAndTheSameGradient) {
  struct Case {
    std::vector<int64_t> x, y;
    int64_t kH, kW, sH, sW, pT, pL, pB, pR, dH, dW;
  } cases[] = {
      // ResNet's stem pooling: 3x3, stride 2, pad 1.
      {{2, 3, 12, 10}, {2, 3, 6, 5}, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
      // Asymmetric pads, kernel and stride.
      {{2, 2, 5, 6}, {2, 2, 3, 3}, 3, 2, 2, 2, 1, 0, 1, 1, 1, 1},
      // Ceil mode: one more output than floor, its window clipped.
      {{1, 3, 7, 7}, {1, 3, 4, 4}, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1},
      // Dilations, with padding.
      {{2, 2, 9, 8}, {2, 2, 5, 4}, 3, 2, 2, 2, 2, 1, 2, 1, 2, 3},
      // Overlapping windows (stride 1): the gradient accumulates repeats.
      {{1, 2, 6, 6}, {1, 2, 4, 4}, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1},
      // The largest window a byte holds: 16x16 = 256 positions.
      {{1, 2, 20, 18}, {1, 2, 3, 2}, 16, 16, 2, 2, 0, 0, 0, 0, 1, 1},
  };
  uint32_t seed = 300;
  for (const Case &c : cases)
    for (int storage = 0; storage < 2; ++storage)
      for (int ties = 0; ties < 2; ++ties) {
        SCOPED_TRACE("case " + std::to_string(&c - cases) + " storage " +
                     std::to_string(storage) + " ties " + std::to_string(ties));
        F x = randomF(c.x, seed++);
        if (ties) // few distinct values: ties in most windows
          for (float &v : x.v)
            v = std::round(v * 2.0f);
        F y(c.y), yw(c.y, 7.0f);
        I ind(c.y);
        B pos(c.y, 255);
        ASSERT_RT(dev::maxpool2d(nullptr, &x, &y, &ind, c.kH, c.kW, c.sH, c.sW,
                                 c.pT, c.pL, c.pB, c.pR, c.dH, c.dW, storage));
        ASSERT_RT(dev::maxpool2d_window(nullptr, &x, &yw, &pos, c.kH, c.kW,
                                        c.sH, c.sW, c.pT, c.pL, c.pB, c.pR,
                                        c.dH, c.dW));
        EXPECT_EQ(yw.v, y.v);
        // Each position is the window element the flat index names.
        int64_t oh = c.y[2], ow = c.y[3], h = c.x[2], w = c.x[3];
        for (int64_t o = 0; o < y.size(); ++o) {
          int64_t j = o % ow, i = (o / ow) % oh, p = o / (ow * oh);
          int64_t a = pos[o] / c.kW, b = pos[o] % c.kW;
          ASSERT_LT(a, c.kH);
          int64_t hh = i * c.sH - c.pT + a * c.dH,
                  ww = j * c.sW - c.pL + b * c.dW;
          ASSERT_EQ(ind[o], storage == 0 ? (p * h + hh) * w + ww
                                         : (p * w + ww) * h + hh)
              << "at " << o;
        }
        // The gradients agree bit for bit.
        F dy = randomF(c.y, seed++), dx(c.x, 5.0f), dxw(c.x, -5.0f);
        ASSERT_RT(dev::maxpool_grad(nullptr, &dy, &ind, &dx));
        ASSERT_RT(dev::maxpool_grad_window(nullptr, &dy, &pos, &dxw, c.kH, c.kW,
                                           c.sH, c.sW, c.pT, c.pL, c.pB, c.pR,
                                           c.dH, c.dW, storage));
        EXPECT_EQ(dxw.v, dx.v);
      }
}

TEST(MaxPool, WindowPositionsRefuseWhatTheyCannotHold) {
  F x = randomF({1, 2, 6, 6}, 320);
  // Positions of one 3x3 window at a time (stride 3): 2x2 outputs.
  F y({1, 2, 2, 2});
  B pos({1, 2, 2, 2});
  ASSERT_RT(dev::maxpool2d_window(nullptr, &x, &y, &pos, 3, 3, 3, 3, 0, 0, 0, 0,
                                  1, 1));
  F dy = randomF(y.dims, 321), dx(x.dims);
  ASSERT_RT(dev::maxpool_grad_window(nullptr, &dy, &pos, &dx, 3, 3, 3, 3, 0, 0,
                                     0, 0, 1, 1, 0));
  // A position past the window (3x3 has 9).
  B bad = pos;
  bad[1] = 9;
  F dx2(x.dims, 1.0f);
  EXPECT_EQ(dev::maxpool_grad_window(nullptr, &dy, &bad, &dx2, 3, 3, 3, 3, 0, 0,
                                     0, 0, 1, 1, 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(comet_rt_last_error()).find("position 9 at 1"),
            std::string::npos)
      << comet_rt_last_error();
  EXPECT_EQ(dx2.v, std::vector<float>(x.size(), 1.0f)) << "dX was written";
  // A position in the padding: pad 1, window (0, 0) of output (0, 0).
  F yp({1, 2, 3, 3});
  B posp({1, 2, 3, 3});
  ASSERT_RT(dev::maxpool2d_window(nullptr, &x, &yp, &posp, 3, 3, 2, 2, 1, 1, 0,
                                  0, 1, 1));
  posp[0] = 0;
  F dyp = randomF(yp.dims, 322);
  EXPECT_EQ(dev::maxpool_grad_window(nullptr, &dyp, &posp, &dx2, 3, 3, 2, 2, 1,
                                     1, 0, 0, 1, 1, 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  // More positions than a byte holds: 17x16.
  F xl = randomF({1, 1, 17, 16}, 323), yl({1, 1, 1, 1});
  B posl({1, 1, 1, 1});
  EXPECT_EQ(dev::maxpool2d_window(nullptr, &xl, &yl, &posl, 17, 16, 1, 1, 0, 0,
                                  0, 0, 1, 1),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(comet_rt_last_error()).find("272 positions"),
            std::string::npos)
      << comet_rt_last_error();
  // A window wholly in the padding has no argmax (rows -1 and 2 of a
  // 2-row input: kernel 2, dilation 3, pad 1).
  F xs = randomF({1, 1, 2, 4}, 324), ys({1, 1, 1, 4});
  B poss({1, 1, 1, 4});
  EXPECT_EQ(dev::maxpool2d_window(nullptr, &xs, &ys, &poss, 2, 1, 1, 1, 1, 0, 1,
                                  0, 3, 1),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(comet_rt_last_error()).find("output row 0"),
            std::string::npos)
      << comet_rt_last_error();
}

TEST(Glue, ReluAddExpandScaleGapReduceShapes) {
  F x = randomF({2, 3, 2, 2}, 80), y(x.dims), dy = randomF(x.dims, 81),
    dx(x.dims);
  ASSERT_RT(dev::relu(nullptr, &x, &y));
  ASSERT_RT(dev::relu_grad(nullptr, &dy, &y, &dx));
  for (int64_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f);
    ASSERT_EQ(dx[i], x[i] > 0 ? dy[i] : 0.0f);
  }
  F b = randomF({3, 1, 2}, 82), s(x.dims);
  ASSERT_RT(dev::add(nullptr, &x, &b, &s));
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t c = (i / 4) % 3, w = i % 2;
    ASSERT_FLOAT_EQ(s[i], x[i] + b[c * 2 + w]);
  }
  // Y must be the broadcast shape itself, not one that A and B fit into.
  F one({1}, 1.0f), three({3}), deepY({1, 2, 3, 2, 2});
  EXPECT_EQ(dev::add(nullptr, &one, &one, &three),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(dev::add(nullptr, &x, &b, &deepY),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  F g({2, 3, 1, 1});
  ASSERT_RT(dev::global_average_pool(nullptr, &x, &g));
  for (int64_t p = 0; p < 6; ++p)
    ASSERT_NEAR(g[p],
                (x[4 * p] + x[4 * p + 1] + x[4 * p + 2] + x[4 * p + 3]) / 4,
                1e-6);
  I shape({4});
  ASSERT_RT(dev::shape(nullptr, &x, &shape, 0,
                                        std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(shape.v, (std::vector<int64_t>{2, 3, 2, 2}));
  F e({2, 3, 2, 2}), factor({1}, std::vector<float>{4.0f}), sd(g.dims);
  ASSERT_RT(dev::scale(nullptr, &g, &factor, &sd, 1));
  ASSERT_RT(dev::expand(nullptr, &sd, &shape, &e));
  for (int64_t i = 0; i < e.size(); ++i)
    ASSERT_FLOAT_EQ(e[i], g[i / 4] / 4.0f);
  // ReduceSum over axis 0 without keepdims (Gemm bias gradients) and over
  // {-1, 1} with keepdims.
  I ax0({1}, std::vector<int64_t>{0}), ax2({2}, std::vector<int64_t>{-1, 1});
  F r0({3, 2, 2}), r1({2, 1, 2, 1});
  ASSERT_RT(dev::reduce_sum(nullptr, &x, &ax0, &r0, 0, 0));
  ASSERT_RT(dev::reduce_sum(nullptr, &x, &ax2, &r1, 1, 0));
  for (int64_t i = 0; i < 12; ++i)
    ASSERT_NEAR(r0[i], x[i] + x[i + 12], 1e-6);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t h = 0; h < 2; ++h) {
      double sum = 0;
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t w = 0; w < 2; ++w)
          sum += x[((n * 3 + c) * 2 + h) * 2 + w];
      ASSERT_NEAR(r1[n * 2 + h], sum, 1e-5);
    }
  F all({}), n0 = none();
  I empty({0});
  ASSERT_RT(dev::reduce_sum(nullptr, &x, &empty, &all, 0, 0));
  double total = 0;
  for (float v : x.v)
    total += v;
  EXPECT_NEAR(all[0], total, 1e-5);
  F flat({2, 12}), back(x.dims);
  I rs({4}, std::vector<int64_t>{0, -1, 2, 2});
  ASSERT_RT(dev::flatten(nullptr, &x, &flat, 1));
  ASSERT_RT(dev::reshape(nullptr, &flat, &rs, &back, 0));
  EXPECT_EQ(back.v, x.v);
  F copy({24});
  ASSERT_RT(dev::identity(nullptr, &x, &copy));
  EXPECT_EQ(copy.v, x.v);
  I copyI({4});
  ASSERT_RT(dev::identity_i64(nullptr, &shape, &copyI));
  EXPECT_EQ(copyI.v, shape.v);
  EXPECT_EQ(dev::identity(nullptr, &x, &r0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  F wrong({2, 3, 4});
  EXPECT_EQ(dev::reshape(nullptr, &flat, &rs, &wrong, 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  F st({2});
  ASSERT_RT(dev::abs_mean_and_density(nullptr, &y, &st));
  double am = 0, nz = 0;
  for (float v : y.v) {
    am += std::fabs(v);
    nz += v != 0;
  }
  EXPECT_NEAR(st[0], am / y.size(), 1e-6);
  EXPECT_NEAR(st[1], nz / y.size(), 1e-6);
}

TEST(Accumulator, AddsOrOverwritesInPlace) {
  F buf({4}, std::vector<float>{1, 2, 3, 4}),
      val({4}, std::vector<float>{10, 20, 30, 40});
  B ow({1}, std::vector<uint8_t>{0}), upd({1}, std::vector<uint8_t>{0});
  F n0 = none();
  ASSERT_RT(dev::inplace_accumulator_v2(nullptr, &buf, &val,
                                                         &ow, &upd, &n0));
  EXPECT_EQ(buf.v, (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(upd[0], 1);
  ow[0] = 1;
  ASSERT_RT(dev::inplace_accumulator_v2(nullptr, &buf, &val,
                                                         &ow, &upd, &buf));
  EXPECT_EQ(buf.v, val.v);
}

TEST(Optimizers, AdamWModesSgdAndMomentum) {
  for (int mode = 0; mode < 2; ++mode)
    for (int correct = 0; correct < 2; ++correct) {
      if (mode == 0 && !correct)
        continue; // ORT requires correct_bias for mode 0
      F w = randomF({5}, 100), g = randomF({5}, 101),
        m1 = randomF({5}, 102, 0, 0.1), m2 = randomF({5}, 103, 0, 0.1);
      F w0 = w, m10 = m1, m20 = m2;
      F lr({1}, std::vector<float>{0.01f});
      I step({1}, std::vector<int64_t>{3});
      B flag({1}), n0({0});
      float a = 0.9f, b = 0.999f, eps = 1e-6f, wd = 0.05f;
      ASSERT_RT(dev::adamw(nullptr, &lr, &step, &w, &g, &m1,
                                            &m2, &n0, &flag, a, b, eps, wd,
                                            mode, correct));
      EXPECT_EQ(flag[0], 1);
      double ac = correct ? 1 - std::pow((double)a, 3) : 1;
      double bc = correct ? 1 - std::pow((double)b, 3) : 1;
      for (int i = 0; i < 5; ++i) {
        double mm1 = a * m10[i] + (1 - a) * g[i];
        double mm2 = b * m20[i] + (1 - b) * g[i] * g[i];
        double want;
        if (mode == 0) {
          double wi = w0[i] * (1 - 0.01 * wd);
          want = wi - 0.01 * mm1 / (ac * (std::sqrt(mm2 / bc) + eps));
        } else {
          double wi =
              w0[i] - 0.01 * std::sqrt(bc) / ac * mm1 / (std::sqrt(mm2) + eps);
          want = wi - 0.01 * wd * wi;
        }
        EXPECT_NEAR(m1[i], mm1, 1e-6);
        EXPECT_NEAR(m2[i], mm2, 1e-7);
        EXPECT_NEAR(w[i], want, 1e-6) << "mode " << mode;
      }
      // update_signal false: nothing moves.
      B off({1}, std::vector<uint8_t>{0});
      F w1 = w;
      ASSERT_RT(dev::adamw(nullptr, &lr, &step, &w, &g, &m1,
                                            &m2, &off, &flag, a, b, eps, wd,
                                            mode, correct));
      EXPECT_EQ(w.v, w1.v);
      EXPECT_EQ(flag[0], 0);
    }
  F w = randomF({6}, 110), g = randomF({6}, 111), v({6}),
    lr({1}, std::vector<float>{0.1f});
  F w0 = w;
  B n0({0});
  ASSERT_RT(dev::sgd_v2(nullptr, &lr, &w, &g, &n0, &n0));
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(w[i], w0[i] - 0.1f * g[i]);
  w = w0;
  // Two momentum steps: v1 = g', v2 = mu v1 + g'.
  for (int step = 0; step < 2; ++step)
    ASSERT_RT(dev::sgd_momentum(nullptr, &lr, &w, &g, &v, 0.9f,
                                                 0.0f, 0));
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(v[i], 1.9 * g[i], 1e-6);
    EXPECT_NEAR(w[i], w0[i] - 0.1 * g[i] - 0.1 * 1.9 * g[i], 1e-6);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Ops of the PyTorch-exported models: grouped/depthwise ConvGrad, Dropout,
// Clip and the Clip gradient's compare/And/Cast/Mul.
//===----------------------------------------------------------------------===//

namespace {

/// <dY, conv(e_k)> for every unit vector e_k of X and of W: the adjoint of
/// the naive forward, so dX and dW follow from it by brute force.
void adjointConvGrad(const F &x, const F &w, const F &dy, ConvP p,
                     std::vector<double> &wantDx, std::vector<double> &wantDw) {
  wantDx.assign(x.size(), 0);
  wantDw.assign(w.size(), 0);
  for (int64_t k = 0; k < x.size(); ++k) {
    F e(x.dims);
    e[k] = 1;
    auto y = naiveConv(e, w, nullptr, dy.dims, p);
    for (size_t i = 0; i < y.size(); ++i)
      wantDx[k] += y[i] * dy.v[i];
  }
  for (int64_t k = 0; k < w.size(); ++k) {
    F e(w.dims);
    e[k] = 1;
    auto y = naiveConv(x, e, nullptr, dy.dims, p);
    for (size_t i = 0; i < y.size(); ++i)
      wantDw[k] += y[i] * dy.v[i];
  }
}

} // namespace

TEST(ConvGrad, GroupedAndDepthwise) {
  struct Case {
    std::vector<int64_t> x, w, y;
    ConvP p;
  } cases[] = {
      // Two groups of 2 input and 3 output channels, stride 2.
      {{2, 4, 7, 7}, {6, 2, 3, 3}, {2, 6, 4, 4}, {2, 2, 1, 1, 1, 1, 1, 1, 2}},
      // Depthwise, as MobileNetV2 (group = channels, 3x3, pad 1).
      {{2, 6, 6, 6}, {6, 1, 3, 3}, {2, 6, 6, 6}, {1, 1, 1, 1, 1, 1, 1, 1, 6}},
      // Depthwise with stride 2.
      {{1, 5, 8, 8}, {5, 1, 3, 3}, {1, 5, 4, 4}, {2, 2, 1, 1, 1, 1, 1, 1, 5}},
  };
  uint32_t seed = 40;
  for (auto &c : cases) {
    F x = randomF(c.x, seed++), w = randomF(c.w, seed++),
      dy = randomF(c.y, seed++), y(c.y), dx(c.x), dw(c.w), db({c.w[0]}),
      nb = none();
    ConvP p = c.p;
    ASSERT_RT(dev::conv2d(nullptr, &x, &w, &nb, &y, p.sH, p.sW,
                                           p.pT, p.pL, p.pB, p.pR, p.dH, p.dW,
                                           p.g));
    expectNear(y.v, naiveConv(x, w, nullptr, c.y, p), 1e-5, "grouped conv");
    ASSERT_RT(dev::conv_grad2d(nullptr, &dy, &x, &w, &dx, &dw,
                                                &db, p.sH, p.sW, p.pT, p.pL,
                                                p.pB, p.pR, p.dH, p.dW, p.g));
    std::vector<double> wantDx, wantDw, wantDb(c.w[0], 0.0);
    adjointConvGrad(x, w, dy, p, wantDx, wantDw);
    int64_t pix = c.y[2] * c.y[3];
    for (int64_t i = 0; i < dy.size(); ++i)
      wantDb[(i / pix) % c.w[0]] += dy[i];
    expectNear(dx.v, wantDx, 1e-5, "grouped dX");
    expectNear(dw.v, wantDw, 1e-5, "grouped dW");
    expectNear(db.v, wantDb, 1e-5, "grouped dB");
  }
}

TEST(Dropout, MaskDensityScalingAndSeed) {
  comet_rt_context *ctx = newContext();
  F x = randomF({8, 1000}, 51, 0.5f, 1.5f), y(x.dims), ratio({1}, 0.25f);
  B train({1}, 1), mask(x.dims);
  comet_rt_context_set_seed(ctx, 3);
  ASSERT_RT(dev::dropout(ctx, &x, &ratio, &train, &y, &mask));
  int64_t kept = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    ASSERT_TRUE(mask[i] == 0 || mask[i] == 1);
    kept += mask[i];
    // Kept elements are scaled by 1 / (1 - ratio), dropped ones are 0.
    EXPECT_EQ(y[i], mask[i] ? x[i] * (1.0f / 0.75f) : 0.0f) << i;
  }
  // 8000 Bernoulli(0.75) draws: the density is within 5 sigma of 0.75.
  double density = double(kept) / x.size();
  EXPECT_NEAR(density, 0.75, 5 * std::sqrt(0.75 * 0.25 / x.size()));

  // The next call continues the stream; the same seed restarts it.
  B mask2(x.dims), mask3(x.dims);
  ASSERT_RT(dev::dropout(ctx, &x, &ratio, &train, &y, &mask2));
  EXPECT_NE(mask.v, mask2.v);
  comet_rt_context_set_seed(ctx, 3);
  ASSERT_RT(dev::dropout(ctx, &x, &ratio, &train, &y, &mask3));
  EXPECT_EQ(mask.v, mask3.v);
  // Another context has its own stream: seed 4 gives other masks.
  comet_rt_context *other = newContext();
  comet_rt_context_set_seed(other, 4);
  B mask4(x.dims);
  ASSERT_RT(
      dev::dropout(other, &x, &ratio, &train, &y, &mask4));
  EXPECT_NE(mask.v, mask4.v);
  comet_rt_context_destroy(other);

  // Inference (training_mode absent or false): Y = X and an all-true mask.
  B off({1}, 0);
  F n = none();
  ASSERT_RT(dev::dropout(ctx, &x, &ratio, &off, &y, &mask));
  EXPECT_EQ(y.v, x.v);
  EXPECT_EQ(mask.v, std::vector<uint8_t>(x.size(), 1));
  ASSERT_RT(dev::dropout(ctx, &x, &n, &n, &y, &n));
  EXPECT_EQ(y.v, x.v);

  // A ratio outside [0, 1) is an error.
  F one({1}, 1.0f);
  EXPECT_NE(dev::dropout(ctx, &x, &one, &train, &y, &mask),
            COMET_RT_SUCCESS);
  EXPECT_NE(std::string(comet_rt_last_error()).find("ratio must lie in"),
            std::string::npos);
  comet_rt_context_destroy(ctx);
}

// A stream continued from its saved (seed, counter), as a resumed run's,
// draws what the uninterrupted one draws.
TEST(Dropout, RandomStateContinuesTheStream) {
  comet_rt_context *a = newContext(), *b = newContext();
  F x = randomF({4, 300}, 52), y(x.dims), ratio({1}, 0.5f);
  B train({1}, 1), first(x.dims), second(x.dims), resumed(x.dims);
  comet_rt_context_set_seed(a, 9);
  ASSERT_RT(dev::dropout(a, &x, &ratio, &train, &y, &first));
  uint64_t seed = 0, counter = 0;
  comet_rt_context_get_random_state(a, &seed, &counter);
  EXPECT_EQ(seed, 9u);
  EXPECT_EQ(counter, uint64_t(x.size()));
  ASSERT_RT(dev::dropout(a, &x, &ratio, &train, &y, &second));
  comet_rt_context_set_random_state(b, seed, counter);
  ASSERT_RT(dev::dropout(b, &x, &ratio, &train, &y, &resumed));
  EXPECT_EQ(resumed.v, second.v);
  EXPECT_NE(resumed.v, first.v);
  comet_rt_context_destroy(a);
  comet_rt_context_destroy(b);
}

TEST(DropoutGrad, MatchesReferenceAndMaskHandle) {
  comet_rt_context *ctx = newContext();
  F dy = randomF({4, 37}, 61), dx(dy.dims), dx2(dy.dims), ratio({1}, 0.1f);
  B train({1}, 1), mask(dy.dims);
  std::mt19937 g(5);
  for (auto &m : mask.v)
    m = g() % 4 != 0;
  ASSERT_RT(
      dev::dropout_grad(ctx, &dy, &mask, &ratio, &train, &dx));
  for (int64_t i = 0; i < dy.size(); ++i)
    EXPECT_EQ(dx[i], mask[i] ? dy[i] * (1.0f / 0.9f) : 0.0f) << i;

  // The same from a 1-bit mask handle (compress_i1): bit for bit.
  int64_t h = dev::compress_i1(ctx, &mask, 0);
  ASSERT_NE(h, 0) << comet_rt_handles_last_error();
  if (!onCuda()) // comet_rt_handle_bytes reads the CPU's handle layout
    EXPECT_LE(comet_rt_handle_bytes(h), 256 + (dy.size() + 7) / 8);
  ASSERT_EQ(dev::dropout_grad_mask(ctx, &dy, h, &ratio, &train,
                                                    &dx2),
            COMET_RT_SUCCESS)
      << comet_rt_handles_last_error();
  EXPECT_EQ(dx.v, dx2.v);
  dev::handle_free(ctx, h);

  // Without training mode dX = dY.
  B off({1}, 0);
  ASSERT_RT(
      dev::dropout_grad(ctx, &dy, &mask, &ratio, &off, &dx));
  EXPECT_EQ(dx.v, dy.v);
  comet_rt_context_destroy(ctx);
}

TEST(ClipGrad, ClipCompareAndCastMul) {
  // ReLU6 forward and the gradient ORT builds for it:
  // dX = dY * Cast(And(X >= 0, X <= 6)).
  F x = randomF({2, 3, 4, 5}, 71, -3, 9), y(x.dims), lo({}, 0.0f), hi({}, 6.0f),
    n = none();
  ASSERT_RT(dev::clip(nullptr, &x, &lo, &hi, &y));
  for (int64_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(y[i], std::min(std::max(x[i], 0.0f), 6.0f));
  ASSERT_RT(dev::clip(nullptr, &x, &n, &hi, &y));
  for (int64_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(y[i], std::min(x[i], 6.0f));

  B ge(x.dims), le(x.dims), both(x.dims);
  ASSERT_RT(dev::compare(nullptr, &x, &lo, &ge,
                                          COMET_RT_COMPARE_GE));
  ASSERT_RT(dev::compare(nullptr, &x, &hi, &le,
                                          COMET_RT_COMPARE_LE));
  ASSERT_RT(dev::and_i1(nullptr, &ge, &le, &both));
  F m(x.dims), dy = randomF(x.dims, 72), dx(x.dims);
  ASSERT_RT(dev::cast_i1_f32(nullptr, &both, &m));
  ASSERT_RT(dev::mul(nullptr, &dy, &m, &dx));
  for (int64_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(ge[i], x[i] >= 0.0f);
    EXPECT_EQ(le[i], x[i] <= 6.0f);
    EXPECT_EQ(dx[i], x[i] >= 0.0f && x[i] <= 6.0f ? dy[i] : 0.0f) << i;
  }

  // Sub and Div with numpy broadcasting ([2,3,4,5] with [3,1,1]).
  F c = randomF({3, 1, 1}, 73, 1, 2), out(x.dims);
  ASSERT_RT(dev::sub(nullptr, &x, &c, &out));
  for (int64_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(out[i], x[i] - c[(i / 20) % 3]);
  ASSERT_RT(dev::div(nullptr, &x, &c, &out));
  for (int64_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(out[i], x[i] / c[(i / 20) % 3]);
  F wrong({2, 3});
  EXPECT_NE(dev::sub(nullptr, &x, &c, &wrong),
            COMET_RT_SUCCESS);
}

// ONNX Mod of i64 tensors: with fmod 0 the remainder takes the divisor's
// sign (Python's %), with fmod 1 the dividend's (C's %); each sign pair,
// zero, and the extremes where C's % overflows (INT64_MIN % -1).
TEST(ModI64, SignsOfBothModes) {
  const int64_t lo = std::numeric_limits<int64_t>::min(),
                hi = std::numeric_limits<int64_t>::max();
  I a({9}, std::vector<int64_t>{7, -7, 7, -7, 0, 6, lo, hi, lo});
  I b({9}, std::vector<int64_t>{3, 3, -3, -3, 5, 3, -1, -1, 3});
  I y({9});
  ASSERT_RT(dev::mod_i64(nullptr, &a, &b, &y, 0));
  // lo = -3 * 3074457345618258602 - 2: 1 with fmod 0, -2 with fmod 1.
  EXPECT_EQ(y.v, (std::vector<int64_t>{1, 2, -2, -1, 0, 0, 0, 0, 1}));
  ASSERT_RT(dev::mod_i64(nullptr, &a, &b, &y, 1));
  EXPECT_EQ(y.v, (std::vector<int64_t>{1, -1, 1, -1, 0, 0, 0, 0, -2}));
}

// Broadcasting ([2, 3] with [3] and with a scalar), in place over A, against
// floor division in the test.
TEST(ModI64, BroadcastsAndRunsInPlace) {
  I a({2, 3}, std::vector<int64_t>{10, -10, 11, -11, 12, -13});
  I b({3}, std::vector<int64_t>{4, -4, 5});
  I y({2, 3});
  ASSERT_RT(dev::mod_i64(nullptr, &a, &b, &y, 0));
  for (int64_t i = 0; i < 6; ++i) {
    int64_t x = a[i], d = b[i % 3];
    int64_t q = x / d - ((x % d != 0) && ((x < 0) != (d < 0)));
    EXPECT_EQ(y[i], x - q * d) << i;
  }
  I s({}, std::vector<int64_t>{7});
  std::vector<int64_t> before = a.v;
  ASSERT_RT(dev::mod_i64(nullptr, &a, &s, &a, 1));
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(a[i], before[i] % 7) << i;
}

// A zero divisor is an error with its position, not a crash, and the
// output is not written; so are a bad fmod and shapes that do not
// broadcast.
TEST(ModI64, RefusesZeroDivisorAndBadArguments) {
  I a({2, 3}, std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  I b({3}, std::vector<int64_t>{2, 0, 3});
  I y({2, 3}, std::vector<int64_t>(6, 42));
  EXPECT_EQ(dev::mod_i64(nullptr, &a, &b, &y, 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(comet_rt_last_error()).find("b is 0 at 1"),
            std::string::npos)
      << comet_rt_last_error();
  EXPECT_EQ(y.v, std::vector<int64_t>(6, 42));
  I ok({3}, std::vector<int64_t>{2, 2, 3});
  EXPECT_EQ(dev::mod_i64(nullptr, &a, &ok, &y, 2),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  I wrong({2, 2});
  EXPECT_EQ(dev::mod_i64(nullptr, &a, &ok, &wrong, 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  I four({4}, std::vector<int64_t>{1, 1, 1, 1});
  EXPECT_EQ(dev::mod_i64(nullptr, &a, &four, &y, 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
}
