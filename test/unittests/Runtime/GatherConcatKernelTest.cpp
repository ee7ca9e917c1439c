//===- GatherConcatKernelTest.cpp - Eval and embedding kernels vs. loops --===//
//
// Pow, Sqrt, Erf, Gather, GatherGrad, Concat and SplitTraining pieces and
// the f32 -> i64 Cast, and a GPT's causal mask (Equal, Where) and scale
// (Reciprocal), against naive loops that follow ONNX's and ONNX Runtime's
// definitions, and the errors they report.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

using namespace comet::test;

namespace {

TEST(Pow, ScalarExponentAndBroadcastTensor) {
  F x = randomF({3, 5}, 1, 0.1f, 2.f), y({3, 5});
  for (float e : {2.f, 0.5f, -1.5f}) {
    F b({}, std::vector<float>{e});
    ASSERT_RT(dev::pow(nullptr, &x, &b, &y));
    std::vector<double> want(x.size());
    for (int64_t i = 0; i < x.size(); ++i)
      want[i] = std::pow(double(x[i]), double(e));
    expectNear(y.v, want, 1e-5, "pow scalar");
  }
  // A [5] exponent broadcast over rows, and a [3, 1] base over columns.
  F e = randomF({5}, 2, -2.f, 2.f);
  ASSERT_RT(dev::pow(nullptr, &x, &e, &y));
  std::vector<double> want(x.size());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      want[i * 5 + j] = std::pow(double(x[i * 5 + j]), double(e[j]));
  expectNear(y.v, want, 1e-5, "pow row");
  F col = randomF({3, 1}, 3, 0.5f, 1.5f);
  ASSERT_RT(dev::pow(nullptr, &col, &e, &y));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      want[i * 5 + j] = std::pow(double(col[i]), double(e[j]));
  expectNear(y.v, want, 1e-5, "pow outer");
}

TEST(Pow, RejectsShapesThatDoNotBroadcast) {
  F x = randomF({3, 5}, 1), e = randomF({4}, 2), y({3, 5}), wrong({3, 4});
  EXPECT_NE(dev::pow(nullptr, &x, &e, &y), COMET_RT_SUCCESS);
  F one({1}, std::vector<float>{2.f});
  EXPECT_NE(dev::pow(nullptr, &x, &one, &wrong),
            COMET_RT_SUCCESS);
}

TEST(SqrtErfExp, MatchLibm) {
  F x = randomF({4, 7}, 4, 0.f, 3.f), y({4, 7});
  ASSERT_RT(dev::sqrt(nullptr, &x, &y));
  std::vector<double> want(x.size());
  for (int64_t i = 0; i < x.size(); ++i)
    want[i] = std::sqrt(double(x[i]));
  expectNear(y.v, want, 1e-6, "sqrt");
  F z = randomF({4, 7}, 5, -3.f, 3.f);
  ASSERT_RT(dev::erf(nullptr, &z, &y));
  for (int64_t i = 0; i < z.size(); ++i)
    want[i] = std::erf(double(z[i]));
  expectNear(y.v, want, 1e-6, "erf");
  ASSERT_RT(dev::exp(nullptr, &z, &y));
  for (int64_t i = 0; i < z.size(); ++i)
    want[i] = std::exp(double(z[i]));
  expectNear(y.v, want, 1e-6, "exp");
  F wrong({4, 6});
  EXPECT_NE(dev::erf(nullptr, &z, &wrong), COMET_RT_SUCCESS);
  EXPECT_NE(dev::exp(nullptr, &z, &wrong), COMET_RT_SUCCESS);
}

TEST(Gather, RowsOfATableWithNegativeIndices) {
  // An embedding: data [5, 3], indices [2, 2] -> [2, 2, 3].
  F data = randomF({5, 3}, 6), y({2, 2, 3});
  I idx({2, 2}, std::vector<int64_t>{0, 4, -1, -5});
  ASSERT_RT(dev::gather(nullptr, &data, &idx, &y, 0));
  int64_t rows[4] = {0, 4, 4, 0};
  for (int k = 0; k < 4; ++k)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(y[k * 3 + c], data[rows[k] * 3 + c]) << k << "," << c;
}

TEST(Gather, InnerAxisAndScalarIndex) {
  // data [2, 4, 3], axis -2 (1), indices [2] -> [2, 2, 3].
  F data = randomF({2, 4, 3}, 7), y({2, 2, 3});
  I idx({2}, std::vector<int64_t>{3, 1});
  ASSERT_RT(dev::gather(nullptr, &data, &idx, &y, -2));
  for (int o = 0; o < 2; ++o)
    for (int k = 0; k < 2; ++k)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(y[(o * 2 + k) * 3 + c], data[(o * 4 + idx[k]) * 3 + c]);
  // A scalar index on the last axis drops it: [2, 4, 3] -> [2, 4].
  F last({2, 4});
  I zero({}, std::vector<int64_t>{-3});
  ASSERT_RT(dev::gather(nullptr, &data, &zero, &last, 2));
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(last[i], data[i * 3]);
  // i64 data: an entry of a shape tensor.
  I shape({3}, std::vector<int64_t>{32, 28, 64}), entry({});
  I minus1({}, std::vector<int64_t>{-1});
  ASSERT_RT(
      dev::gather_i64(nullptr, &shape, &minus1, &entry, 0));
  EXPECT_EQ(entry[0], 64);
}

TEST(Gather, RejectsOutOfRangeIndexAxisAndShape) {
  F data = randomF({5, 3}, 8), y({2, 3});
  I far({2}, std::vector<int64_t>{1, 5}), low({2}, std::vector<int64_t>{-6, 0});
  EXPECT_NE(dev::gather(nullptr, &data, &far, &y, 0),
            COMET_RT_SUCCESS);
  EXPECT_NE(std::string(comet_rt_last_error()).find("index 5 is out of range"),
            std::string::npos)
      << comet_rt_last_error();
  EXPECT_NE(dev::gather(nullptr, &data, &low, &y, 0),
            COMET_RT_SUCCESS);
  I ok({2}, std::vector<int64_t>{0, 1});
  EXPECT_NE(dev::gather(nullptr, &data, &ok, &y, 2),
            COMET_RT_SUCCESS);
  F wrong({3, 3});
  EXPECT_NE(dev::gather(nullptr, &data, &ok, &wrong, 0),
            COMET_RT_SUCCESS);
}

TEST(GatherGrad, AddsRepeatedIndices) {
  // dX [4, 3] from indices [2, 3] (repeats, a negative one) and dY [2, 3, 3].
  I idx({2, 3}, std::vector<int64_t>{1, 3, 1, -1, 0, 1});
  F dy = randomF({2, 3, 3}, 9), dx({4, 3}, 7.f);
  ASSERT_RT(dev::gather_grad(nullptr, &idx, &dy, &dx, 0));
  std::vector<double> want(12, 0.0);
  for (int k = 0; k < 6; ++k) {
    int64_t r = idx[k] < 0 ? idx[k] + 4 : idx[k];
    for (int c = 0; c < 3; ++c)
      want[r * 3 + c] += dy[k * 3 + c];
  }
  expectNear(dx.v, want, 1e-6, "gather_grad");
  EXPECT_EQ(dx[2 * 3], 0.f); // row 2 is never gathered
}

TEST(GatherGrad, InnerAxisAndErrors) {
  // dX [2, 5], axis 1, indices [3] -> dY [2, 3].
  I idx({3}, std::vector<int64_t>{4, 4, 0});
  F dy = randomF({2, 3}, 10), dx({2, 5});
  ASSERT_RT(dev::gather_grad(nullptr, &idx, &dy, &dx, 1));
  std::vector<double> want(10, 0.0);
  for (int o = 0; o < 2; ++o)
    for (int k = 0; k < 3; ++k)
      want[o * 5 + idx[k]] += dy[o * 3 + k];
  expectNear(dx.v, want, 1e-6, "gather_grad axis 1");
  I bad({3}, std::vector<int64_t>{4, 5, 0});
  EXPECT_NE(dev::gather_grad(nullptr, &bad, &dy, &dx, 1),
            COMET_RT_SUCCESS);
  F wrong({2, 2});
  EXPECT_NE(dev::gather_grad(nullptr, &idx, &wrong, &dx, 1),
            COMET_RT_SUCCESS);
}

TEST(Concat, InnerAxisPiecesAndSplitBack) {
  // [2, 3, 2] ++ [2, 1, 2] ++ [2, 2, 2] along axis 1 -> [2, 6, 2].
  F a = randomF({2, 3, 2}, 11), b = randomF({2, 1, 2}, 12),
    c = randomF({2, 2, 2}, 13), y({2, 6, 2});
  ASSERT_RT(dev::concat_part(nullptr, &a, &y, 1, 0));
  ASSERT_RT(dev::concat_part(nullptr, &b, &y, -2, 3));
  ASSERT_RT(dev::concat_part(nullptr, &c, &y, 1, 4));
  for (int o = 0; o < 2; ++o)
    for (int j = 0; j < 6; ++j)
      for (int k = 0; k < 2; ++k) {
        float want = j < 3   ? a[(o * 3 + j) * 2 + k]
                     : j < 4 ? b[(o * 1 + j - 3) * 2 + k]
                             : c[(o * 2 + j - 4) * 2 + k];
        EXPECT_EQ(y[(o * 6 + j) * 2 + k], want) << o << "," << j << "," << k;
      }
  // SplitTraining's pieces give the inputs back.
  F a2({2, 3, 2}), b2({2, 1, 2}), c2({2, 2, 2});
  ASSERT_RT(dev::split_part(nullptr, &y, &a2, 1, 0));
  ASSERT_RT(dev::split_part(nullptr, &y, &b2, 1, 3));
  ASSERT_RT(dev::split_part(nullptr, &y, &c2, 1, 4));
  EXPECT_EQ(a2.v, a.v);
  EXPECT_EQ(b2.v, b.v);
  EXPECT_EQ(c2.v, c.v);
  // i64 pieces along axis 0.
  I s({1}, std::vector<int64_t>{32}), t({2}, std::vector<int64_t>{4, -1}),
      st({3});
  ASSERT_RT(dev::concat_part_i64(nullptr, &s, &st, 0, 0));
  ASSERT_RT(dev::concat_part_i64(nullptr, &t, &st, 0, 1));
  EXPECT_EQ(st.v, (std::vector<int64_t>{32, 4, -1}));
}

TEST(Concat, RejectsOverrunAndMismatchedDims) {
  F a = randomF({2, 3}, 14), y({2, 4}), other({3, 4});
  EXPECT_NE(dev::concat_part(nullptr, &a, &y, 1, 2),
            COMET_RT_SUCCESS);
  EXPECT_NE(dev::concat_part(nullptr, &a, &other, 1, 0),
            COMET_RT_SUCCESS);
  EXPECT_NE(dev::concat_part(nullptr, &a, &y, 2, 0),
            COMET_RT_SUCCESS);
  F piece({2, 2});
  EXPECT_NE(dev::split_part(nullptr, &y, &piece, 1, 3),
            COMET_RT_SUCCESS);
}

TEST(CastF32I64, TruncatesTowardZero) {
  F x({5}, std::vector<float>{0.f, 1.9f, -1.9f, 14.99f, 15.f});
  I y({5});
  ASSERT_RT(dev::cast_f32_i64(nullptr, &x, &y));
  EXPECT_EQ(y.v, (std::vector<int64_t>{0, 1, -1, 14, 15}));
  F bad({1}, std::vector<float>{NAN});
  I one({1});
  EXPECT_NE(dev::cast_f32_i64(nullptr, &bad, &one),
            COMET_RT_SUCCESS);
}

// A GPT's causal mask as torch exports it: Where(Equal(tril, 0), -inf, S)
// over scores [2, 3, 4, 4] with the condition [1, 1, 4, 4] and a scalar X,
// then the gradient ORT builds, Where(cond, 0, dY) with a [1] zero.
TEST(Where, CausalMaskAndItsGradient) {
  const int64_t T = 4;
  F tril({1, 1, T, T});
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j)
      tril[i * T + j] = j <= i ? 1.f : 0.f;
  F zero({}, std::vector<float>{0.f});
  B cond({1, 1, T, T});
  ASSERT_RT(dev::compare(nullptr, &tril, &zero, &cond,
                                          COMET_RT_COMPARE_EQ));
  for (int64_t i = 0; i < T * T; ++i)
    EXPECT_EQ(cond[i], (i % T) > (i / T) ? 1 : 0) << i;
  F ninf({}, std::vector<float>{-INFINITY});
  F s = randomF({2, 3, T, T}, 31), y({2, 3, T, T});
  ASSERT_RT(dev::where(nullptr, &cond, &ninf, &s, &y));
  for (int64_t i = 0; i < s.size(); ++i) {
    int64_t r = (i / T) % T, c = i % T;
    if (c > r)
      EXPECT_EQ(y[i], -INFINITY) << i;
    else
      EXPECT_EQ(y[i], s[i]) << i;
  }
  F zero1({1}, std::vector<float>{0.f});
  F dy = randomF({2, 3, T, T}, 32), dx({2, 3, T, T});
  ASSERT_RT(dev::where(nullptr, &cond, &zero1, &dy, &dx));
  for (int64_t i = 0; i < dy.size(); ++i)
    EXPECT_EQ(dx[i], (i % T) > ((i / T) % T) ? 0.f : dy[i]) << i;
}

// All three broadcast: condition [3, 1], X [1, 4], Y [4] give [3, 4].
TEST(Where, BroadcastsAllThreeOperands) {
  B cond({3, 1}, std::vector<uint8_t>{1, 0, 1});
  F x = randomF({1, 4}, 33), y = randomF({4}, 34), out({3, 4});
  ASSERT_RT(dev::where(nullptr, &cond, &x, &y, &out));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(out[i * 4 + j], cond[i] ? x[j] : y[j]) << i << "," << j;
  F wrong({4, 4});
  EXPECT_NE(dev::where(nullptr, &cond, &x, &y, &wrong),
            COMET_RT_SUCCESS);
  EXPECT_NE(std::string(comet_rt_last_error()).find("do not broadcast"),
            std::string::npos)
      << comet_rt_last_error();
  B bad({2, 1});
  EXPECT_NE(dev::where(nullptr, &bad, &x, &y, &out),
            COMET_RT_SUCCESS);
}

TEST(Compare, EqualBroadcastsAndKeepsIEEESemantics) {
  F a({2, 3}, std::vector<float>{0.f, -0.f, 1.f, NAN, 2.f, 0.f});
  F b({3}, std::vector<float>{0.f, 0.f, NAN});
  B c({2, 3});
  ASSERT_RT(
      dev::compare(nullptr, &a, &b, &c, COMET_RT_COMPARE_EQ));
  // -0 == 0; NaN equals nothing, itself included.
  EXPECT_EQ(c.v, (std::vector<uint8_t>{1, 1, 0, 0, 0, 0}));
  EXPECT_NE(dev::compare(nullptr, &a, &b, &c, 7),
            COMET_RT_SUCCESS);
}

TEST(Reciprocal, OneOverX) {
  F x = randomF({3, 5}, 35, 0.25f, 4.f), y({3, 5});
  x[0] = 0.f;
  x[1] = -2.f;
  ASSERT_RT(dev::reciprocal(nullptr, &x, &y));
  EXPECT_EQ(y[0], INFINITY);
  EXPECT_EQ(y[1], -0.5f);
  for (int64_t i = 2; i < x.size(); ++i)
    EXPECT_EQ(y[i], 1.f / x[i]) << i;
  F wrong({3, 4});
  EXPECT_NE(dev::reciprocal(nullptr, &x, &wrong),
            COMET_RT_SUCCESS);
}

} // namespace
