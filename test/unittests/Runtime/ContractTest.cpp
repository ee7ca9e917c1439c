//===- ContractTest.cpp - The runtime contract and its coverage -----------===//
//
// What the dispatcher checks before any backend runs (abi.def's
// COMET_RT_CHECKS): required operands, output overlaps and declared
// aliases, the rank limit, value checks, handle checks; and the coverage
// query the drivers ask before the first step (comet/runtime/coverage.h).
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "comet/runtime/codec.h"
#include "comet/runtime/coverage.h"
#include "comet/runtime/device.h"
#include "comet/runtime/handles.h"

#include <set>
#include <string>

using namespace comet::test;

namespace {

std::string lastError() { return comet_rt_last_error(); }

TEST(Contract, EveryEntryHasANameAndAFamily) {
  int32_t n = comet_rt_num_entries();
  ASSERT_GT(n, 80);
  std::set<std::string> names;
  for (int32_t i = 0; i < n; ++i) {
    ASSERT_NE(comet_rt_entry_name(i), nullptr);
    ASSERT_NE(comet_rt_entry_family(i), nullptr);
    EXPECT_TRUE(names.insert(comet_rt_entry_name(i)).second)
        << comet_rt_entry_name(i);
    EXPECT_NE(std::string(comet_rt_entry_family(i)), "");
    // The CPU implements and runs every entry.
    EXPECT_EQ(
        comet_rt_device_lacks(COMET_RT_DEVICE_CPU, comet_rt_entry_name(i)),
        nullptr);
    EXPECT_EQ(comet_rt_entry_verified(COMET_RT_DEVICE_CPU, i), 1);
  }
  EXPECT_EQ(comet_rt_entry_name(n), nullptr);
  EXPECT_EQ(comet_rt_entry_family(-1), nullptr);
  EXPECT_TRUE(names.count("conv2d") && names.count("handle_free"));
}

TEST(Contract, CoverageNamesWhatADeviceLacksAndWhy) {
  // With or without the prefix.
  EXPECT_EQ(comet_rt_device_lacks(COMET_RT_DEVICE_CUDA, "conv2d"), nullptr);
  EXPECT_EQ(comet_rt_device_lacks(COMET_RT_DEVICE_CUDA, "comet_rt_conv2d"),
            nullptr);
  const char *why =
      comet_rt_device_lacks(COMET_RT_DEVICE_CUDA, "comet_rt_slot_observe_act");
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("bound tuner"), std::string::npos);
  EXPECT_STREQ(comet_rt_device_lacks(COMET_RT_DEVICE_CPU, "no_such_entry"),
               "unknown entry");
  EXPECT_STREQ(comet_rt_device_lacks(7, "conv2d"), "unknown device");
}

TEST(Contract, ARequiredOperandMustBePresent) {
  F y({2, 3});
  EXPECT_EQ(dev::relu(nullptr, nullptr, &y), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "relu: x: null memref (a required operand)");
}

TEST(Contract, OneErrorTextPerCheck) {
  // The same shape check gives the same words in every entry.
  F x = randomF({2, 3}, 1), y({3, 2});
  EXPECT_EQ(dev::relu(nullptr, &x, &y), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "relu: y [3x2] must have x's shape [2x3]");
  EXPECT_EQ(dev::sigmoid(nullptr, &x, &y), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "sigmoid: y [3x2] must have x's shape [2x3]");
}

TEST(Contract, AnOutputMayOnlyAliasWhereDeclared) {
  // relu_grad declares dX over dY.
  F x = randomF({4, 5}, 2), g = randomF({4, 5}, 3);
  F want = g;
  for (int64_t i = 0; i < want.size(); ++i)
    want[i] = x[i] > 0 ? g[i] : 0.0f;
  ASSERT_RT(dev::relu_grad(nullptr, &g, &x, &g));
  EXPECT_EQ(g.v, want.v);
  // sigmoid does not: Y over X is refused, and X is left as it was.
  F before = x;
  EXPECT_EQ(dev::sigmoid(nullptr, &x, &x), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "sigmoid: y is x's buffer, which this entry does "
                         "not allow");
  EXPECT_EQ(x.v, before.v);
  // relu declares Y over X (the forward's in-place rule).
  F want2 = x;
  for (float &v : want2.v)
    v = v > 0 ? v : 0.0f;
  ASSERT_RT(dev::relu(nullptr, &x, &x));
  EXPECT_EQ(x.v, want2.v);
  // A partial overlap is never allowed: x is elements [0, 8) of a buffer,
  // y elements [2, 10) of the same one.
  F big = randomF({10}, 4), part({10});
  int64_t base = static_cast<int64_t>(reinterpret_cast<intptr_t>(big.v.data()));
  big.words[3] = 8;
  part.words[0] = part.words[1] = base;
  part.words[2] = 2;
  part.words[3] = 8;
  EXPECT_EQ(dev::relu(nullptr, &big, &part), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "relu: y overlaps x in memory");
}

TEST(Contract, RanksAboveTheLimitAreRefused) {
  F x(std::vector<int64_t>(9, 1)), y(std::vector<int64_t>(9, 1));
  EXPECT_EQ(dev::relu(nullptr, &x, &y), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "relu: x: rank 9 is above 8, the runtime's limit");
}

TEST(Contract, AttributeAndValueChecks) {
  F w = randomF({3}, 5), g = randomF({3}, 6), m1({3}), m2({3}), lr({1}, 0.1f);
  I step({1}, 1);
  EXPECT_EQ(dev::adamw(nullptr, &lr, &step, &w, &g, &m1, &m2, nullptr, nullptr,
                       0.9f, 0.999f, 1e-8f, 0.0f, 2, 1),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "adamw: adam_mode is 2, expected one of 0, 1");
  // A label out of range (a SCAN operand: read before the backend runs).
  F scores = randomF({2, 3}, 7), loss({1});
  I labels({2}, std::vector<int64_t>{1, 3});
  EXPECT_EQ(dev::softmax_cross_entropy_loss(nullptr, &scores, &labels, nullptr,
                                            &loss, nullptr,
                                            COMET_RT_REDUCTION_MEAN, 0, 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(),
            "softmax_cross_entropy_loss: label 3 at 1 is not in [0, 3)");
}

TEST(Contract, HandlesAreCheckedAgainstTheBackend) {
  F y({4});
  EXPECT_EQ(dev::decompress(nullptr, 12345, &y),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), std::string("decompress: handle 12345 is not a live "
                                     "handle of the ") +
                             (onCuda() ? "cuda" : "cpu") + " backend");
  EXPECT_STREQ(comet_rt_handles_last_error(), comet_rt_last_error());
  F x = randomF({4}, 8);
  EXPECT_EQ(dev::compress(nullptr, &x, 9, -1, 0.1, 0), 0);
  EXPECT_EQ(lastError(), "compress: unknown codec 9");
  int64_t h = dev::compress(nullptr, &x, COMET_RT_CODEC_SZ, -1, 1e-3, 0);
  ASSERT_NE(h, 0) << lastError();
  F small({3});
  EXPECT_EQ(dev::decompress(nullptr, h, &small),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "decompress: y [3] has 3 elements, the handle 4");
  // A lossy stream is not a mask.
  F dy = randomF({4}, 9), dx({4});
  EXPECT_EQ(dev::relu_grad_mask(nullptr, &dy, h, &dx),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "relu_grad_mask: the handle is not a mask stream");
  dev::handle_free(nullptr, h);
}

TEST(Contract, StatisticsKeysAreChecked) {
  // The key is checked before the device is asked for the entry, so this
  // holds on a device that lacks it too.
  F x = randomF({4}, 10);
  EXPECT_EQ(dev::slot_observe_act(nullptr, &x, -1, 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("slot -1, consumer 0 is not a key"),
            std::string::npos)
      << lastError();
}

} // namespace

// The harness that runs this suite on a device (OnDevice.h): views of one
// host buffer share one device block, so aliases and overlaps reach the
// runtime as they were; results come back to the host buffer.
TEST(OnDevice, MirrorSharesBlocksAndCopiesBack) {
  comet_rt_context *ctx = newContext();
  F big = randomF({10}, 11), part({10});
  int64_t base = static_cast<int64_t>(reinterpret_cast<intptr_t>(big.v.data()));
  big.words[3] = 8;
  part.words[0] = part.words[1] = base;
  part.words[2] = 2;
  part.words[3] = 8;
  std::vector<float> before = big.v;
  {
    Mirror m(ctx);
    m.reserve(&big, 4);
    m.reserve(&part, 4);
    m.reserve(nullptr, 4);
    ASSERT_EQ(m.upload(), COMET_RT_SUCCESS) << lastError();
    comet_rt_memref *db = m.map(&big), *dp = m.map(&part);
    EXPECT_EQ(m.map(nullptr), nullptr);
    auto *wb = static_cast<int64_t *>(db->descriptor),
         *wp = static_cast<int64_t *>(dp->descriptor);
    EXPECT_EQ(wb[1], wp[1]);
    EXPECT_NE(wb[1], base);
    EXPECT_EQ(wp[2], 2);
    EXPECT_EQ(wp[3], 8);
    // Write through the device copy: element 9 (part's last), then back.
    float nine = 42.0f;
    ASSERT_EQ(comet_rt_memcpy(
                  ctx,
                  reinterpret_cast<float *>(static_cast<intptr_t>(wb[1])) + 9,
                  &nine, sizeof(nine)),
              COMET_RT_SUCCESS);
    ASSERT_EQ(m.download(), COMET_RT_SUCCESS);
  }
  EXPECT_EQ(big[9], 42.0f);
  before[9] = 42.0f;
  EXPECT_EQ(big.v, before);
  comet_rt_context_destroy(ctx);
}
