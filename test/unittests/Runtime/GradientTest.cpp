//===- GradientTest.cpp - Backward kernels against finite differences -----===//
//
// For a kernel f and a fixed random r, L(p) = <r, f(p)>; the backward kernel
// fed dY = r must give dL/dp. Central differences in float with h = 1e-2 on
// tiny shapes; the tolerance covers their O(h^2) and rounding error.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <functional>
#include <memory>

using namespace comet::test;

namespace {

TEST(FiniteDifferences, ConvGrad) {
  F x = randomF({2, 2, 5, 4}, 1), w = randomF({3, 2, 3, 2}, 2),
    b = randomF({3}, 3);
  std::vector<int64_t> yd = {2, 3, 3, 4};
  F r = randomF(yd, 4), y(yd);
  auto loss = [&] {
    EXPECT_EQ(dev::conv2d(nullptr, &x, &w, &b, &y, 2, 1, 1, 1,
                                           1, 0, 1, 1, 1),
              0);
    return dot(r, y);
  };
  F dx(x.dims), dw(w.dims), db({3});
  ASSERT_RT(dev::conv_grad2d(nullptr, &r, &x, &w, &dx, &dw,
                                              &db, 2, 1, 1, 1, 1, 0, 1, 1, 1));
  checkGrad(x, dx, loss, "dX");
  checkGrad(w, dw, loss, "dW");
  checkGrad(b, db, loss, "dB");
}

TEST(FiniteDifferences, GemmBackwardAsTheTrainingGraphsWriteIt) {
  // Y = X W^T + B (transB = 1); dX = dY W, dW = dY^T X, dB = sum_rows dY.
  int64_t M = 3, K = 4, N = 5;
  F x = randomF({M, K}, 10), w = randomF({N, K}, 11), b = randomF({N}, 12);
  F r = randomF({M, N}, 13), y({M, N}), n0 = none();
  auto loss = [&] {
    EXPECT_EQ(dev::gemm(nullptr, &x, &w, &b, &y, 1, 1, 0, 1),
              0);
    return dot(r, y);
  };
  F dx({M, K}), dw({N, K}), db({N});
  ASSERT_RT(dev::gemm(nullptr, &r, &w, &n0, &dx, 1, 0, 0, 0));
  ASSERT_RT(dev::gemm(nullptr, &r, &x, &n0, &dw, 1, 0, 1, 0));
  I axes({1}, std::vector<int64_t>{0});
  ASSERT_RT(dev::reduce_sum(nullptr, &r, &axes, &db, 0, 0));
  checkGrad(x, dx, loss, "dX");
  checkGrad(w, dw, loss, "dW");
  checkGrad(b, db, loss, "dB");
}

TEST(FiniteDifferences, BatchNormGrad) {
  int64_t C = 2;
  F x = randomF({3, C, 2, 2}, 20, -1, 2), sc = randomF({C}, 21),
    bi = randomF({C}, 22), im({C}), iv({C}, 1.0f);
  F r = randomF(x.dims, 23), y(x.dims), rm({C}), rv({C}), sm({C}), si({C});
  float eps = 1e-5f;
  auto loss = [&] {
    EXPECT_EQ(dev::batch_norm_internal(nullptr, &x, &sc, &bi,
                                                        &im, &iv, &y, &rm, &rv,
                                                        &sm, &si, eps, 0.9f, 1),
              0);
    return dot(r, y);
  };
  loss(); // saved statistics of the unperturbed X
  F sm0 = sm, si0 = si;
  F dx(x.dims), ds({C}), db({C});
  ASSERT_RT(dev::batch_norm_grad(nullptr, &r, &x, &sc, &sm0,
                                                  &si0, &dx, &ds, &db, eps));
  checkGrad(x, dx, loss, "dX", 5e-3);
  checkGrad(sc, ds, loss, "dScale");
  checkGrad(bi, db, loss, "dBias");
}

TEST(FiniteDifferences, SoftmaxCrossEntropyLossGrad) {
  int64_t N = 4, C = 5;
  F s = randomF({N, C}, 30, -2, 2), wts = randomF({C}, 31, 0.5, 1.5);
  I labels({N}, std::vector<int64_t>{1, 4, 0, 1});
  for (int64_t red : {1, 2})
    for (int weighted = 0; weighted < 2; ++weighted) {
      F loss({}), lp({N, C}), n0 = none();
      F *wp = weighted ? std::addressof(wts) : std::addressof(n0);
      auto f = [&] {
        EXPECT_EQ(dev::softmax_cross_entropy_loss(
                      nullptr, &s, &labels, &*wp, &loss, &lp, red, 0, 0),
                  0);
        return (double)loss[0];
      };
      f();
      F dy({}, std::vector<float>{1.0f}), dx({N, C});
      ASSERT_RT(dev::softmax_cross_entropy_loss_grad(
          nullptr, &dy, &lp, &labels, &*wp, &dx, red, 0, 0));
      checkGrad(s, dx, f, red == 1 ? "sum" : "mean");
    }
}

} // namespace
