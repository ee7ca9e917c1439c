//===- SlotStatsTest.cpp - The per-slot statistics ABI --------------------===//
#include "comet/runtime/handles.h"
#include "comet/runtime/slot_stats.h"

#include "gtest/gtest.h"

#include <cmath>
#include <vector>

namespace {

/// A 1-D f32 memref over `v`.
struct Memref1D {
  explicit Memref1D(std::vector<float> &v)
      : desc{reinterpret_cast<int64_t>(v.data()),
             reinterpret_cast<int64_t>(v.data()), 0,
             static_cast<int64_t>(v.size()), 1},
        m{1, desc} {}
  int64_t desc[5];
  comet_rt_memref m;
};

/// A contiguous f32 memref of shape `shape` over `v`.
struct MemrefND {
  MemrefND(std::vector<float> &v, std::vector<int64_t> shape) {
    int64_t r = static_cast<int64_t>(shape.size());
    desc.assign(3 + 2 * r, 0);
    desc[0] = desc[1] = reinterpret_cast<int64_t>(v.data());
    int64_t stride = 1;
    for (int64_t i = r - 1; i >= 0; --i) {
      desc[3 + i] = shape[i];
      desc[3 + r + i] = stride;
      stride *= shape[i];
    }
    m = {r, desc.data()};
  }
  std::vector<int64_t> desc;
  comet_rt_memref m;
};

} // namespace

TEST(SlotStats, NoOpWhenOffThenSums) {
  comet_rt_slot_stats_enable(nullptr, 0);
  comet_rt_slot_observations_clear(nullptr);
  std::vector<float> x = {0, 1, -2, 0, 0, 3, 0, 0};
  std::vector<float> dy = {1, -1, 2, -2};
  Memref1D mx(x), mdy(dy);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_act(nullptr, &mx.m, 2, 0), 0);
  comet_rt_slot_observation o;
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 2, 0, &o), 0);
  EXPECT_EQ(o.calls, 0);

  comet_rt_slot_stats_enable(nullptr, 1);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_act(nullptr, &mx.m, 2, 0), 0);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_grad(nullptr, &mdy.m, 2, 0), 0);
  std::vector<float> inv = {0.5f, 3.0f, 2.0f};
  Memref1D mi(inv);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_max(nullptr, &mi.m, 2, 1), 0);
  comet_rt_slot_stats_enable(nullptr, 0);
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 2, 0, &o), 0);
  EXPECT_EQ(o.act_elements, 8);
  EXPECT_EQ(o.act_nonzero, 3);
  EXPECT_EQ(o.grad_elements, 4);
  EXPECT_DOUBLE_EQ(o.grad_abs_sum, 6);
  EXPECT_DOUBLE_EQ(o.grad_sq_sum, 10);
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 2, 1, &o), 0);
  EXPECT_DOUBLE_EQ(o.aux_max, 3);
  comet_rt_slot_observations_clear(nullptr);
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 2, 0, &o), 0);
  EXPECT_EQ(o.act_elements, 0);
  EXPECT_TRUE(std::isinf(o.aux_max));
}

TEST(SlotStats, AuxChannelsKeepEachChannelsLargest) {
  comet_rt_slot_observations_clear(nullptr);
  comet_rt_slot_stats_enable(nullptr, 1);
  std::vector<float> a = {0.5f, 3.0f, NAN}, b = {0.7f, 1.0f, 2.0f};
  Memref1D ma(a), mb(b);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_max(nullptr, &ma.m, 6, 0), 0);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_max(nullptr, &mb.m, 6, 0), 0);
  comet_rt_slot_stats_enable(nullptr, 0);
  std::vector<double> got(3);
  ASSERT_EQ(comet_rt_slot_get_aux_channels(nullptr, 6, 0, got.data(), 3), 3);
  EXPECT_DOUBLE_EQ(got[0], 0.7f);
  EXPECT_DOUBLE_EQ(got[1], 3.0);
  EXPECT_DOUBLE_EQ(got[2], 2.0);
  // A short buffer gets a prefix; the count stays the tensor's.
  double one = 0;
  EXPECT_EQ(comet_rt_slot_get_aux_channels(nullptr, 6, 0, &one, 1), 3);
  EXPECT_DOUBLE_EQ(one, 0.7f);
  EXPECT_EQ(comet_rt_slot_get_aux_channels(nullptr, 6, 1, nullptr, 0), 0);
  EXPECT_EQ(comet_rt_slot_get_aux_channels(nullptr, -1, 0, nullptr, 0),
            -COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(comet_rt_slot_get_aux_channels(nullptr, 6, 0, nullptr, 3),
            -COMET_RT_ERROR_INVALID_ARGUMENT);
  comet_rt_slot_observations_clear(nullptr);
  EXPECT_EQ(comet_rt_slot_get_aux_channels(nullptr, 6, 0, nullptr, 0), 0);
}

TEST(SlotStats, RejectsBadArguments) {
  std::vector<float> x = {1, 2};
  Memref1D mx(x);
  EXPECT_NE(_mlir_ciface_comet_rt_slot_observe_act(nullptr, &mx.m, -1, 0), 0);
  comet_rt_slot_stats_enable(nullptr, 1);
  EXPECT_NE(_mlir_ciface_comet_rt_slot_observe_grad(nullptr, nullptr, 0, 0), 0);
  mx.desc[4] = 2; // non-contiguous stride
  EXPECT_NE(_mlir_ciface_comet_rt_slot_observe_act(nullptr, &mx.m, 0, 0), 0);
  comet_rt_slot_stats_enable(nullptr, 0);
  comet_rt_slot_observation o;
  EXPECT_NE(comet_rt_slot_get_observation(nullptr, 0, -1, &o), 0);
}

// By hand: X [2, 4] has non-zero fractions 1/4 (sample 0) and 3/4
// (sample 1); dY [2, 2] has ||dY_0||^2 = 2 and ||dY_1||^2 = 4, so the
// masked sum is 2/4 + 4*3/4 = 3.5 over 4 elements (R * sum dY^2 would be 3).
TEST(SlotStats, MaskedMomentGemmPerSample) {
  comet_rt_slot_observations_clear(nullptr);
  comet_rt_slot_stats_enable(nullptr, 1);
  std::vector<float> x = {1, 0, 0, 0, 1, 2, 3, 0};
  std::vector<float> dy = {1, 1, 2, 0};
  MemrefND mx(x, {2, 4}), mdy(dy, {2, 2});
  // Before X is observed nothing is masked.
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_grad(nullptr, &mdy.m, 3, 0), 0);
  comet_rt_slot_observation o;
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 3, 0, &o), 0);
  EXPECT_EQ(o.grad_masked_elements, 0);
  comet_rt_slot_observations_clear(nullptr);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_act(nullptr, &mx.m, 3, 0), 0);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_grad(nullptr, &mdy.m, 3, 1), 0);
  comet_rt_slot_stats_enable(nullptr, 0);
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 3, 1, &o), 0);
  EXPECT_EQ(o.grad_masked_elements, 4);
  EXPECT_DOUBLE_EQ(o.grad_masked_sq_sum, 3.5);
  EXPECT_DOUBLE_EQ(o.grad_sq_sum, 6);
  // A clear forgets X's mask too.
  comet_rt_slot_observations_clear(nullptr);
  comet_rt_slot_stats_enable(nullptr, 1);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_grad(nullptr, &mdy.m, 3, 1), 0);
  comet_rt_slot_stats_enable(nullptr, 0);
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 3, 1, &o), 0);
  EXPECT_EQ(o.grad_masked_elements, 0);
}

// By hand: X [1, 2, 4, 4], dY [1, 1, 2, 2], so s = 4 / 2 = 2 and
// o = (4 - 2 - 1) / 2 = 0: output (y, x) reads input (2y, 2x). Channel 0
// is non-zero at (0,0) and (2,2), channel 1 at (0,0) and (0,2), so the
// fractions at (0,0), (0,2), (2,0), (2,2) are 1, 1/2, 0, 1/2 and with
// dY = 1, 2, 3, 4 the masked sum is 1 + 4/2 + 0 + 16/2 = 11.
TEST(SlotStats, MaskedMomentConvStride) {
  comet_rt_slot_observations_clear(nullptr);
  comet_rt_slot_stats_enable(nullptr, 1);
  std::vector<float> x(32, 0.0f);
  x[0 * 16 + 0 * 4 + 0] = 1;
  x[0 * 16 + 2 * 4 + 2] = -1;
  x[1 * 16 + 0 * 4 + 0] = 2;
  x[1 * 16 + 0 * 4 + 2] = 3;
  x[1 * 16 + 1 * 4 + 1] = 5; // not at a sampled position
  std::vector<float> dy = {1, 2, 3, 4};
  MemrefND mx(x, {1, 2, 4, 4}), mdy(dy, {1, 1, 2, 2});
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_act(nullptr, &mx.m, 4, 0), 0);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_grad(nullptr, &mdy.m, 4, 0), 0);
  comet_rt_slot_stats_enable(nullptr, 0);
  comet_rt_slot_observation o;
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 4, 0, &o), 0);
  EXPECT_EQ(o.act_nonzero, 5);
  EXPECT_EQ(o.grad_masked_elements, 4);
  EXPECT_DOUBLE_EQ(o.grad_masked_sq_sum, 11);
  comet_rt_slot_observations_clear(nullptr);
}

/// Observes X then dY for `slot` (consumer 0) from a clear and returns the
/// observation.
static comet_rt_slot_observation
observe(std::vector<float> x, std::vector<int64_t> xShape,
        std::vector<float> dy, std::vector<int64_t> dyShape, int64_t slot) {
  comet_rt_slot_observations_clear(nullptr);
  comet_rt_slot_stats_enable(nullptr, 1);
  MemrefND mx(x, xShape), mdy(dy, dyShape);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_act(nullptr, &mx.m, slot, 0), 0);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_grad(nullptr, &mdy.m, slot, 0),
            0);
  comet_rt_slot_stats_enable(nullptr, 0);
  comet_rt_slot_observation o;
  EXPECT_EQ(comet_rt_slot_get_observation(nullptr, slot, 0, &o), 0);
  comet_rt_slot_observations_clear(nullptr);
  return o;
}

// By hand, Gemm: X [4, 2]; channel 0 is 2 in all four samples (one group),
// channel 1 repeats 7 only three times (below the group size of 4). With
// dY [4, 1] = 1, 2, 3, -1 the group's S = 5 and T = 15, so the excess is
// 25 - 15 = 10 over 1 * 2 (o, c) pairs.
TEST(SlotStats, CoherentExcessGemm) {
  comet_rt_slot_observation o =
      observe({2, 7, 2, 7, 2, 7, 2, 0}, {4, 2}, {1, 2, 3, -1}, {4, 1}, 5);
  EXPECT_EQ(o.grad_coherent_pairs, 2);
  EXPECT_DOUBLE_EQ(o.grad_coherent_sum, 10);
}

// By hand, Conv (stride 1, same size: output (y, x) reads input (y, x)):
// X [2, 1, 2, 2] is 0.5 at five positions (one group) and otherwise 0 or
// 1 (singletons); dY [2, 1, 2, 2] = 1, -2, 4, 3 | 2, 5, -1, 1. The group's
// elements see dY 1, -2, 3 and 2, -1: S = 3, T = 19, excess 9 - 19 = -10
// (the sums cancel, so sharing an error there lowers the variance).
TEST(SlotStats, CoherentExcessConv) {
  const std::vector<float> dy = {1, -2, 4, 3, 2, 5, -1, 1};
  comet_rt_slot_observation o = observe({0.5f, 0.5f, 0, 0.5f, 0.5f, 1, 0.5f, 0},
                                        {2, 1, 2, 2}, dy, {2, 1, 2, 2}, 6);
  EXPECT_EQ(o.grad_coherent_pairs, 1);
  EXPECT_DOUBLE_EQ(o.grad_coherent_sum, -10);
  // Without repeated values there is no group and nothing is added.
  o = observe({1, 2, 3, 4, 5, 6, 7, 8}, {2, 1, 2, 2}, dy, {2, 1, 2, 2}, 6);
  EXPECT_EQ(o.grad_coherent_pairs, 0);
  EXPECT_EQ(o.grad_coherent_sum, 0);
  // Groups are found through runs of equal neighbours: four 3s that never
  // sit next to each other are not one (SlotStats.h).
  o = observe({3, 0, 3, 0, 3, 0, 3, 0}, {2, 1, 2, 2}, dy, {2, 1, 2, 2}, 6);
  EXPECT_EQ(o.grad_coherent_pairs, 0);
}

// A diagonal (BatchNorm) consumer's channel weights are its dY energy plus
// the channel's coherent excess, so that the per-channel gain weights both
// terms. X and dY as in CoherentExcessDiagonal below: E_0 = 40, E_1 = 20,
// the excesses 10 and 6, so the weights are 50 and 26.
TEST(SlotStats, MaxWeightedWithTheCoherentExcessPerChannel) {
  std::vector<float> x = {0.5f, 0.5f, 0.5f, 1, 3, 3, 2, 3,
                          0.5f, 4,    0,    0, 5, 6, 3, 7};
  std::vector<float> dy = {1, 2, 3, 0, 2, 2, 2, 1, -1, 0, 4, 3, 1, 2, -1, 1};
  ASSERT_EQ(comet_rt_slot_set_diagonal(nullptr, 9, 0, 1), 0);
  comet_rt_slot_observations_clear(nullptr);
  comet_rt_slot_stats_enable(nullptr, 1);
  comet_rt_slot_stats_diagnostics(nullptr, 1);
  MemrefND mx(x, {2, 2, 2, 2}), mdy(dy, {2, 2, 2, 2});
  std::vector<float> inv = {2.0f, 10.0f};
  Memref1D mi(inv);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_act(nullptr, &mx.m, 9, 0), 0);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_grad(nullptr, &mdy.m, 9, 0), 0);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_max(nullptr, &mi.m, 9, 0), 0);
  comet_rt_slot_stats_diagnostics(nullptr, 0);
  comet_rt_slot_stats_enable(nullptr, 0);
  comet_rt_slot_observation o;
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 9, 0, &o), 0);
  EXPECT_DOUBLE_EQ(o.grad_coherent_sum, 16);
  EXPECT_DOUBLE_EQ(o.aux_weight_sum, 50.0 + 26.0);
  EXPECT_DOUBLE_EQ(o.aux_weighted_sq_sum, 4.0 * 50 + 100.0 * 26);
  ASSERT_EQ(comet_rt_slot_set_diagonal(nullptr, 9, 0, 0), 0);
  comet_rt_slot_observations_clear(nullptr);
}

// By hand, BatchNorm (diagonal): X [2, 2, 2, 2] holds 0.5 at four positions
// of channel 0 and 3 at four of channel 1 (one group each); dY has the same
// shape. Channel 0's group sees dY 1, 2, 3, -1 in dY channel 0 (S = 5,
// T = 15: 10) and channel 1's sees 2, 2, 1, -1 in dY channel 1 (S = 4,
// T = 10: 6); the diagonal sums 16 over 2 pairs. Every (o, c) pair, as
// for a Conv weight, also counts channel 0's group against dY channel 1
// (2, 2, 2, 1: 49 - 13 = 36) and channel 1's against dY channel 0 (1, 2, 0,
// 4: 49 - 21 = 28): 80 over 4 pairs.
TEST(SlotStats, CoherentExcessDiagonal) {
  const std::vector<float> x = {0.5f, 0.5f, 0.5f, 1, 3, 3, 2, 3,
                                0.5f, 4,    0,    0, 5, 6, 3, 7};
  const std::vector<float> dy = {1,  2, 3, 0, 2, 2, 2,  1,
                                 -1, 0, 4, 3, 1, 2, -1, 1};
  comet_rt_slot_observation o = observe(x, {2, 2, 2, 2}, dy, {2, 2, 2, 2}, 8);
  EXPECT_EQ(o.grad_coherent_pairs, 4);
  EXPECT_DOUBLE_EQ(o.grad_coherent_sum, 80);
  ASSERT_EQ(comet_rt_slot_set_diagonal(nullptr, 8, 0, 1), 0);
  o = observe(x, {2, 2, 2, 2}, dy, {2, 2, 2, 2}, 8);
  EXPECT_EQ(o.grad_coherent_pairs, 2);
  EXPECT_DOUBLE_EQ(o.grad_coherent_sum, 16);
  // Another consumer of the slot keeps every pair.
  ASSERT_EQ(comet_rt_slot_set_diagonal(nullptr, 8, 0, 0), 0);
  o = observe(x, {2, 2, 2, 2}, dy, {2, 2, 2, 2}, 8);
  EXPECT_EQ(o.grad_coherent_pairs, 4);
  EXPECT_NE(comet_rt_slot_set_diagonal(nullptr, 8, -1, 1), 0);
  EXPECT_NE(comet_rt_slot_set_diagonal(nullptr, -1, 0, 1), 0);
}

// With moments off (a slot only BatchNorm reads) X's non-zeros are still
// counted but no masked moment or coherent excess is measured; turning them
// back on restores both.
TEST(SlotStats, MomentsOffSkipsMaskAndGroups) {
  const std::vector<float> x = {2, 7, 2, 7, 2, 7, 2, 0};
  const std::vector<float> dy = {1, 2, 3, -1};
  ASSERT_EQ(comet_rt_slot_set_moments(nullptr, 7, 0), 0);
  comet_rt_slot_observation o = observe(x, {4, 2}, dy, {4, 1}, 7);
  EXPECT_EQ(o.act_nonzero, 7);
  EXPECT_EQ(o.grad_elements, 4);
  EXPECT_EQ(o.grad_masked_elements, 0);
  EXPECT_EQ(o.grad_coherent_pairs, 0);
  ASSERT_EQ(comet_rt_slot_set_moments(nullptr, 7, 1), 0);
  o = observe(x, {4, 2}, dy, {4, 1}, 7);
  EXPECT_EQ(o.grad_masked_elements, 4);
  EXPECT_EQ(o.grad_coherent_pairs, 2);
  EXPECT_DOUBLE_EQ(o.grad_coherent_sum, 10);
  EXPECT_NE(comet_rt_slot_set_moments(nullptr, -1, 0), 0);
}

// observe_act measures the sz codec's own error at the slot's bound: each
// non-zero element against its reconstruction, q = round(x / 2eb) times
// 2eb; zeros are exact and not counted. Without a bound, nothing.
TEST(SlotStats, CodecErrorAtTheSlotsBound) {
  comet_rt_slots_reset(nullptr);
  comet_rt_slot_observations_clear(nullptr);
  comet_rt_slot_stats_enable(nullptr, 1);
  comet_rt_slot_stats_diagnostics(nullptr, 1);
  std::vector<float> x = {0.0f, 0.3f, -0.26f, 0.0f, 1.05f, 0.49f};
  Memref1D mx(x);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_act(nullptr, &mx.m, 4, 0), 0);
  comet_rt_slot_observation o;
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 4, 0, &o), 0);
  EXPECT_EQ(o.act_err_elements, 0);
  EXPECT_EQ(o.act_err_sq_sum, 0.0);

  ASSERT_EQ(comet_rt_slot_set_eb(nullptr, 4, 0.25), 0);
  comet_rt_slot_observations_clear(nullptr);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_act(nullptr, &mx.m, 4, 0), 0);
  comet_rt_slot_stats_enable(nullptr, 0);
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 4, 0, &o), 0);
  // Step 0.5: 0.3 -> 0.5, -0.26 -> -0.5, 1.05 -> 1.0, 0.49 -> 0.5.
  double want = 0;
  for (auto [v, r] : {std::pair{0.3, 0.5}, std::pair{-0.26, -0.5},
                      std::pair{1.05, 1.0}, std::pair{0.49, 0.5}}) {
    double d = double(float(v)) - r;
    want += d * d;
  }
  EXPECT_EQ(o.act_err_elements, 4);
  EXPECT_NEAR(o.act_err_sq_sum, want, 1e-12);
  comet_rt_slot_stats_diagnostics(nullptr, 0);
  comet_rt_slots_reset(nullptr);
}

// observe_max weights its per-channel values by the energy per channel of
// the dY that observe_grad saw for the same (slot, consumer) just before:
// sum_c a_c^2 E_c and sum_c E_c. Channels are dim 1.
TEST(SlotStats, MaxWeightedByTheGradientsChannelEnergy) {
  comet_rt_slot_observations_clear(nullptr);
  comet_rt_slot_stats_enable(nullptr, 1);
  comet_rt_slot_stats_diagnostics(nullptr, 1);
  // dY [2, 2, 1, 2]: channel 0 holds 1, 2 and 3, 1 (E_0 = 15); channel 1
  // holds 0, 1 and 0, 0 (E_1 = 1).
  std::vector<float> dy = {1, 2, 0, 1, 3, 1, 0, 0};
  MemrefND mdy(dy, {2, 2, 1, 2});
  std::vector<float> inv = {2.0f, 10.0f};
  Memref1D mi(inv);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_grad(nullptr, &mdy.m, 6, 1), 0);
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_max(nullptr, &mi.m, 6, 1), 0);
  // A consumer without a dY of matching channels: its maximum only.
  EXPECT_EQ(_mlir_ciface_comet_rt_slot_observe_max(nullptr, &mi.m, 6, 2), 0);
  comet_rt_slot_stats_enable(nullptr, 0);
  comet_rt_slot_observation o;
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 6, 1, &o), 0);
  EXPECT_DOUBLE_EQ(o.aux_max, 10.0);
  EXPECT_DOUBLE_EQ(o.aux_weight_sum, 16.0);
  EXPECT_DOUBLE_EQ(o.aux_weighted_sq_sum, 4.0 * 15 + 100.0 * 1);
  ASSERT_EQ(comet_rt_slot_get_observation(nullptr, 6, 2, &o), 0);
  EXPECT_DOUBLE_EQ(o.aux_max, 10.0);
  EXPECT_EQ(o.aux_weight_sum, 0.0);
  comet_rt_slot_stats_diagnostics(nullptr, 0);
}
