//===- ModuleApiTest.cpp - ONNX Runtime's Module semantics of the Engine --===//
//
// The Engine additions under comet.training.api: gradients that accumulate
// until lazyResetGrad(), the optimizer as a step of its own, the user
// inputs and outputs, one eval batch, and the training state handed to an
// engine of another batch size. python/tests/test_training_api.py checks
// the same against ONNX Runtime.
//
//===----------------------------------------------------------------------===//
#include "comet/Engine/Engine.h"

#include "gtest/gtest.h"

#include <random>
#include <vector>

namespace {

std::string lenet() {
  return std::string(COMET_FIXTURES) + "/lenet/training_model.onnx";
}

std::unique_ptr<comet::Engine> compiled(int64_t batch) {
  auto e = comet::Engine::load(lenet());
  EXPECT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  comet::EngineOptions o;
  o.batchSize = batch;
  if (llvm::Error err = (*e)->compile(o))
    ADD_FAILURE() << llvm::toString(std::move(err));
  return std::move(*e);
}

void batch(int64_t n, std::vector<float> &x, std::vector<int64_t> &y,
           unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(0, 1);
  x.resize(n * 28 * 28);
  y.resize(n);
  for (float &v : x)
    v = u(g);
  for (int64_t i = 0; i < n; ++i)
    y[i] = (i + seed) % 10;
}

std::vector<float> grad(const comet::Engine &e, const char *p) {
  return e.gradient(p).vec();
}

TEST(ModuleApi, GradientsAccumulateUntilALazyReset) {
  auto e = compiled(8);
  std::vector<float> x1, x2;
  std::vector<int64_t> y1, y2;
  batch(8, x1, y1, 1);
  batch(8, x2, y2, 2);
  // g2 alone: a fresh engine starts with a reset pending.
  ASSERT_TRUE(static_cast<bool>(e->computeGradients(x2.data(), y2.data())));
  std::vector<float> g2 = grad(*e, "conv1.weight");
  e->lazyResetGrad();
  ASSERT_TRUE(static_cast<bool>(e->computeGradients(x1.data(), y1.data())));
  std::vector<float> g1 = grad(*e, "conv1.weight");
  // No reset: the second batch's gradient adds to the first's.
  ASSERT_TRUE(static_cast<bool>(e->computeGradients(x2.data(), y2.data())));
  std::vector<float> sum = grad(*e, "conv1.weight");
  ASSERT_EQ(sum.size(), g1.size());
  for (size_t i = 0; i < sum.size(); ++i)
    EXPECT_NEAR(sum[i], g1[i] + g2[i], 1e-6f) << i;
  // The weights did not move: the optimizer is a step of its own.
  e->lazyResetGrad();
  ASSERT_TRUE(static_cast<bool>(e->computeGradients(x2.data(), y2.data())));
  EXPECT_EQ(grad(*e, "conv1.weight"), g2);
  std::vector<float> w = e->parameter("conv1.weight").vec();
  EXPECT_EQ(e->optimizerSteps(), 0);
  ASSERT_FALSE(static_cast<bool>(e->optimizerStep()));
  EXPECT_EQ(e->optimizerSteps(), 1);
  EXPECT_NE(e->parameter("conv1.weight").vec(), w);
  // The caller's batch is read where it lies, never written.
  std::vector<float> x2Copy = x2;
  ASSERT_TRUE(static_cast<bool>(e->computeGradients(x2.data(), y2.data())));
  EXPECT_EQ(x2, x2Copy);
}

TEST(ModuleApi, StepStillResetsEveryTime) {
  auto e = compiled(8);
  std::vector<float> x;
  std::vector<int64_t> y;
  batch(8, x, y, 3);
  ASSERT_FALSE(static_cast<bool>(e->setLearningRate(0.0f)));
  auto a = e->step(x.data(), y.data());
  ASSERT_TRUE(static_cast<bool>(a));
  std::vector<float> g = grad(*e, "fc3.bias");
  auto b = e->step(x.data(), y.data());
  ASSERT_TRUE(static_cast<bool>(b));
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(grad(*e, "fc3.bias"), g);
}

TEST(ModuleApi, UserArgsAndOneEvalBatch) {
  auto e = compiled(4);
  comet::Engine::UserArgs t = e->userArgs(false), v = e->userArgs(true);
  const auto &targs = e->trainer().trainEntry().args;
  ASSERT_EQ(t.inputs.size(), 2u);
  EXPECT_EQ(targs[t.inputs[0]].name, "input");
  EXPECT_EQ(targs[t.inputs[1]].name, "labels");
  EXPECT_EQ(targs[t.inputs[1]].onnxType, 7);
  ASSERT_EQ(t.outputs.size(), 1u);
  EXPECT_EQ(targs[t.outputs[0]].name, "onnx::loss::2");
  EXPECT_EQ(targs[t.outputs[0]].onnxType, 1);
  ASSERT_EQ(v.inputs.size(), 2u);
  ASSERT_EQ(v.outputs.size(), 1u); // the logits the Engine adds are hidden

  std::vector<float> x;
  std::vector<int64_t> y;
  batch(4, x, y, 4);
  float evalLoss = -1, trainLoss = -1;
  ASSERT_FALSE(static_cast<bool>(e->evalStep(x.data(), y.data(), {&evalLoss})));
  ASSERT_FALSE(
      static_cast<bool>(e->trainStep(x.data(), y.data(), {&trainLoss})));
  // LeNet has no Dropout or BatchNorm: both graphs give the same loss.
  EXPECT_NEAR(evalLoss, trainLoss, 1e-6f);
  EXPECT_TRUE(static_cast<bool>(e->evalStep(x.data(), y.data(), {})));
}

TEST(ModuleApi, AnotherBatchSizeTakesOverTheTrainingState) {
  auto big = compiled(8), small = compiled(4);
  std::vector<float> x;
  std::vector<int64_t> y;
  batch(8, x, y, 5);
  ASSERT_FALSE(static_cast<bool>(big->setLearningRate(0.01f)));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(static_cast<bool>(big->step(x.data(), y.data())));
  ASSERT_TRUE(static_cast<bool>(big->computeGradients(x.data(), y.data())));
  ASSERT_FALSE(static_cast<bool>(small->copyStateFrom(*big)));
  for (const std::string &p : big->parameters())
    EXPECT_EQ(small->parameter(p).vec(), big->parameter(p).vec()) << p;
  for (const std::string &p : big->trainableParameters()) {
    EXPECT_EQ(small->gradient(p).vec(), big->gradient(p).vec()) << p;
    EXPECT_EQ(small->optimizerState(p).vec(), big->optimizerState(p).vec())
        << p;
  }
  EXPECT_EQ(small->optimizerSteps(), 3);
  EXPECT_FLOAT_EQ(small->learningRate(), 0.01f);
  // The same update from the same state.
  ASSERT_FALSE(static_cast<bool>(small->optimizerStep()));
  ASSERT_FALSE(static_cast<bool>(big->optimizerStep()));
  for (const std::string &p : big->parameters())
    EXPECT_EQ(small->parameter(p).vec(), big->parameter(p).vec()) << p;

  // An engine of another graph is refused.
  auto other = comet::Engine::load(std::string(COMET_FIXTURES) +
                                   "/mlp/training_model.onnx");
  ASSERT_TRUE(static_cast<bool>(other));
  comet::EngineOptions o;
  o.batchSize = 4;
  ASSERT_FALSE(static_cast<bool>((*other)->compile(o)));
  llvm::Error err = small->copyStateFrom(**other);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("different parameters"),
            std::string::npos);
}

TEST(ModuleApi, SetOptimizerReplacesItsState) {
  auto e = compiled(4);
  EXPECT_EQ(e->optimizerName(), "AdamWOptimizer");
  std::vector<float> x;
  std::vector<int64_t> y;
  batch(4, x, y, 6);
  ASSERT_TRUE(static_cast<bool>(e->step(x.data(), y.data())));
  EXPECT_EQ(e->optimizerSteps(), 1);
  ASSERT_FALSE(static_cast<bool>(e->setOptimizer(
      std::string(COMET_FIXTURES) + "/lenet/sgd_optimizer_model.onnx")));
  EXPECT_EQ(e->optimizerName(), "SGDOptimizerV2");
  EXPECT_EQ(e->optimizerSteps(), 0);
  ASSERT_TRUE(static_cast<bool>(e->step(x.data(), y.data())));
  llvm::Error bad = e->setOptimizer(lenet());
  ASSERT_TRUE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(std::move(bad)).find("no AdamWOptimizer"),
            std::string::npos);
}

} // namespace
