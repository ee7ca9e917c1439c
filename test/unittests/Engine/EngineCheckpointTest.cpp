//===- EngineCheckpointTest.cpp - comet::Engine's state as a checkpoint ---===//
//
// checkpointState / saveCheckpoint / loadCheckpointState / initialState: an
// engine started from another's checkpoint continues its training bit for
// bit, for each optimizer; bad checkpoints are refused and change nothing.
//
//===----------------------------------------------------------------------===//
#include "comet/Engine/Engine.h"
#include "comet/Import/ONNXModel.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <unistd.h>
#include <vector>

namespace {

using comet::checkpoint::Checkpoint;
using comet::checkpoint::Parameter;

std::string folder(const char *model) {
  return std::string(COMET_FIXTURES) + "/models/" + model;
}

constexpr int64_t kBatch = 8;

/// A seeded batch of 1x28x28 images and labels.
void batch(std::vector<float> &x, std::vector<int64_t> &y, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(0, 1);
  x.resize(kBatch * 28 * 28);
  y.resize(kBatch);
  for (float &v : x)
    v = u(g);
  for (int64_t &v : y)
    v = g() % 10;
}

std::unique_ptr<comet::Engine>
compiled(const char *model, const std::string &optimizer,
         std::shared_ptr<const Checkpoint> initial = nullptr,
         bool fuseOptimizer = false) {
  auto e = comet::Engine::load(folder(model));
  EXPECT_TRUE(static_cast<bool>(e)) << toString(e.takeError());
  comet::EngineOptions o;
  o.batchSize = kBatch;
  o.optimizerPath = optimizer;
  o.initialState = std::move(initial);
  o.fuseOptimizer = fuseOptimizer;
  llvm::Error err = (*e)->compile(o);
  EXPECT_FALSE(static_cast<bool>(err)) << toString(std::move(err));
  return std::move(*e);
}

/// Runs steps [first, last) on the seeded batches; returns the last loss.
float train(comet::Engine &e, unsigned first, unsigned last) {
  std::vector<float> x;
  std::vector<int64_t> y;
  float loss = 0;
  for (unsigned s = first; s < last; ++s) {
    batch(x, y, s);
    auto l = e.step(x.data(), y.data());
    EXPECT_TRUE(static_cast<bool>(l)) << toString(l.takeError());
    loss = *l;
  }
  return loss;
}

bool sameBits(llvm::ArrayRef<float> a, llvm::ArrayRef<float> b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Every parameter and optimizer state of `a` equals `b`'s bit for bit.
void expectSameState(const comet::Engine &a, const comet::Engine &b) {
  for (const std::string &p : a.parameters())
    EXPECT_TRUE(sameBits(a.parameter(p), b.parameter(p))) << p;
  for (const std::string &p : a.trainableParameters())
    for (int k = 0; k < 2; ++k) {
      const comet::Buffer *sa = a.trainer().optimizerState(p, k);
      const comet::Buffer *sb = b.trainer().optimizerState(p, k);
      ASSERT_EQ(!sa, !sb) << p;
      if (sa) {
        EXPECT_EQ(std::memcmp(sa->data, sb->data, sa->bytes()), 0) << p;
      }
    }
  EXPECT_EQ(a.trainer().optimizerSteps(), b.trainer().optimizerSteps());
}

std::string tempDir() {
  char tmpl[] = "/tmp/comet-engine-ckpt-XXXXXX";
  EXPECT_TRUE(mkdtemp(tmpl));
  return tmpl;
}

struct Case {
  const char *model;
  std::string optimizer; // as EngineOptions::optimizerPath
  const char *kind;
  size_t momentums; // per trainable parameter in the checkpoint
};

class Continue : public ::testing::TestWithParam<Case> {};

/// Train 3 steps, save, start a second engine from the file: the state is
/// the same, and 2 more steps on each give the same losses and bits.
TEST_P(Continue, FromTheSavedFileBitForBit) {
  const Case &c = GetParam();
  std::string optimizer = c.optimizer == comet::EngineOptions::kBuiltinOptimizer
                              ? c.optimizer
                              : folder(c.model) + "/" + c.optimizer;
  auto a = compiled(c.model, optimizer);
  ASSERT_EQ(a->optimizerName(), c.kind);
  train(*a, 0, 3);

  auto state = a->checkpointState(true);
  ASSERT_TRUE(static_cast<bool>(state)) << toString(state.takeError());
  ASSERT_EQ(state->optimizerGroups.size(), 1u);
  const auto &g = state->optimizerGroups[0];
  EXPECT_EQ(g.name, "group0");
  EXPECT_EQ(g.step, 3);
  EXPECT_EQ(g.initialLearningRate, a->learningRate());
  EXPECT_EQ(g.states.size(), a->trainableParameters().size());
  size_t trainable = 0;
  for (const Parameter &p : state->parameters) {
    EXPECT_TRUE(sameBits(p.values, a->parameter(p.name))) << p.name;
    EXPECT_EQ(p.trainable, !a->gradient(p.name).empty()) << p.name;
    // Trainable parameters first.
    EXPECT_EQ(p.trainable, trainable++ < a->trainableParameters().size());
  }
  EXPECT_EQ(state->parameters.size(), a->parameters().size());
  for (const auto &s : g.states) {
    ASSERT_EQ(s.momentums.size(), c.momentums) << s.param;
    EXPECT_EQ(s.momentums[0].name, "momentum0");
    if (std::string(c.kind) == "SGDOptimizerV2")
      EXPECT_EQ(s.momentums[0].values,
                std::vector<float>(s.momentums[0].values.size(), 0.0f));
    else
      EXPECT_TRUE(sameBits(s.momentums[0].values, a->optimizerState(s.param)));
  }

  std::string d = tempDir(), path = d + "/ckpt";
  comet::checkpoint::PropertyBag props;
  props.ints = {{"epoch", 4}};
  props.strings = {{"note", "x"}};
  llvm::Error err = a->saveCheckpoint(path, true, props);
  ASSERT_FALSE(static_cast<bool>(err)) << toString(std::move(err));
  auto read = std::make_shared<Checkpoint>();
  std::string error;
  ASSERT_TRUE(comet::checkpoint::readCheckpointFile(path, *read, error))
      << error;
  EXPECT_EQ(read->properties.ints, props.ints);
  EXPECT_EQ(read->properties.strings, props.strings);
  Checkpoint withoutProps = *read;
  withoutProps.properties = {};
  EXPECT_TRUE(comet::checkpoint::sameContents(withoutProps, *state));

  auto b = compiled(c.model, optimizer, read);
  expectSameState(*a, *b);
  EXPECT_EQ(b->stats().steps, 3);
  float la = train(*a, 3, 5), lb = train(*b, 3, 5);
  EXPECT_EQ(la, lb);
  expectSameState(*a, *b);
  unlink(path.c_str());
  rmdir(d.c_str());
}

/// The optimizer fused into the step trains bit for bit as the optimizer
/// after it, keeps no gradient, refuses what needs one, follows the
/// learning rate it is given, and its checkpoint continues unfused.
TEST_P(Continue, FusedIntoTheStepBitForBit) {
  const Case &c = GetParam();
  std::string optimizer = c.optimizer == comet::EngineOptions::kBuiltinOptimizer
                              ? c.optimizer
                              : folder(c.model) + "/" + c.optimizer;
  auto a = compiled(c.model, optimizer);
  auto b = compiled(c.model, optimizer, nullptr, /*fuseOptimizer=*/true);
  ASSERT_FALSE(a->trainer().optimizerFused());
  ASSERT_TRUE(b->trainer().optimizerFused());
  EXPECT_EQ(a->trainableParameters(), b->trainableParameters());
  EXPECT_EQ(a->parameters(), b->parameters());
  for (const std::string &p : b->trainableParameters()) {
    EXPECT_TRUE(b->gradient(p).empty()) << p;
    EXPECT_FALSE(a->gradient(p).empty()) << p;
  }
  // No gradient buffer: the fused step's graph holds less at its peak.
  EXPECT_LT(b->stats().predictedPeakBytes, a->stats().predictedPeakBytes);
  const float halved = a->learningRate() * 0.5f;
  for (unsigned s = 0; s < 5; ++s) {
    // A scheduler's change reaches the fused step as an input.
    if (s == 3)
      for (comet::Engine *e : {a.get(), b.get()}) {
        llvm::Error err = e->setLearningRate(halved);
        ASSERT_FALSE(static_cast<bool>(err)) << toString(std::move(err));
      }
    EXPECT_EQ(train(*a, s, s + 1), train(*b, s, s + 1)) << "step " << s;
  }
  expectSameState(*a, *b);
  // The prediction follows: the tensors' peaks as predicted, exactly
  // (uncompressed), and lower fused.
  comet::EngineStats sa = a->stats(), sb = b->stats();
  EXPECT_EQ(sb.steps, 5);
  EXPECT_EQ(sa.predictedTensorPeakBytes, sa.tensorPeakBytes);
  EXPECT_EQ(sb.predictedTensorPeakBytes, sb.tensorPeakBytes);
  EXPECT_LT(sb.tensorPeakBytes, sa.tensorPeakBytes);

  std::vector<float> x;
  std::vector<int64_t> y;
  batch(x, y, 9);
  llvm::Expected<float> g = b->computeGradients(x.data(), y.data());
  ASSERT_FALSE(static_cast<bool>(g));
  EXPECT_NE(toString(g.takeError()).find("keeps no gradient"),
            std::string::npos);
  llvm::Error opt = b->optimizerStep();
  ASSERT_TRUE(static_cast<bool>(opt));
  EXPECT_NE(toString(std::move(opt)).find("no separate optimizer step"),
            std::string::npos);
  // The optimizer is compiled in: another one is refused, the state kept.
  std::string other = std::string(c.kind) == "AdamWOptimizer"
                          ? comet::EngineOptions::kBuiltinOptimizer
                          : folder(c.model) + "/optimizer_model.onnx";
  llvm::Error swap = b->setOptimizer(other);
  ASSERT_TRUE(static_cast<bool>(swap));
  EXPECT_NE(toString(std::move(swap)).find("compiled in"), std::string::npos);
  expectSameState(*a, *b);

  // The fused engine's checkpoint goes on unfused, as the unfused one.
  auto state = std::make_shared<Checkpoint>();
  auto st = b->checkpointState(true);
  ASSERT_TRUE(static_cast<bool>(st)) << toString(st.takeError());
  *state = std::move(*st);
  auto d = compiled(c.model, optimizer, state);
  ASSERT_FALSE(static_cast<bool>(d->setLearningRate(a->learningRate())));
  EXPECT_EQ(train(*a, 5, 7), train(*d, 5, 7));
  expectSameState(*a, *d);
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, Continue,
    ::testing::Values(
        Case{"lenet", "optimizer_model.onnx", "AdamWOptimizer", 2},
        Case{"lenet", "sgd_optimizer_model.onnx", "SGDOptimizerV2", 1},
        Case{"lenet", comet::EngineOptions::kBuiltinOptimizer,
             "builtin-sgd-momentum", 1},
        // BatchNorm: frozen running statistics travel too.
        Case{"resnet", "optimizer_model.onnx", "AdamWOptimizer", 2}),
    [](const ::testing::TestParamInfo<Case> &i) {
      return std::string(i.param.model) + "_" +
             (i.param.kind[0] == 'b' ? "builtin" : i.param.kind);
    });

TEST(EngineCheckpoint, WithoutAGroupTheOptimizerStartsFresh) {
  auto a = compiled("lenet", "");
  train(*a, 0, 2);
  auto state = a->checkpointState(false);
  ASSERT_TRUE(static_cast<bool>(state));
  EXPECT_TRUE(state->optimizerGroups.empty());
  auto b =
      compiled("lenet", "", std::make_shared<Checkpoint>(std::move(*state)));
  for (const std::string &p : a->parameters())
    EXPECT_TRUE(sameBits(a->parameter(p), b->parameter(p))) << p;
  EXPECT_EQ(b->trainer().optimizerSteps(), 0);
  for (const std::string &p : b->trainableParameters())
    for (float v : b->optimizerState(p))
      ASSERT_EQ(v, 0.0f) << p;
}

/// ONNX Runtime's own checkpoint after two AdamW steps
/// (test/fixtures/checkpoints/resnet-adamw): its moments and step load.
TEST(EngineCheckpoint, StartsFromOrtSavedOptimizerState) {
  auto ort = std::make_shared<Checkpoint>();
  std::string error;
  ASSERT_TRUE(comet::checkpoint::readCheckpointFile(
      std::string(COMET_FIXTURES) + "/checkpoints/resnet-adamw", *ort, error))
      << error;
  auto e = compiled("resnet", "", ort);
  EXPECT_EQ(e->optimizerName(), "AdamWOptimizer");
  EXPECT_EQ(e->trainer().optimizerSteps(), 2);
  const auto &g = ort->optimizerGroups[0];
  for (const auto &s : g.states) {
    EXPECT_TRUE(sameBits(s.momentums[0].values, e->optimizerState(s.param)));
    const comet::Buffer *m1 = e->trainer().optimizerState(s.param, 1);
    ASSERT_TRUE(m1);
    EXPECT_EQ(std::memcmp(m1->data, s.momentums[1].values.data(), m1->bytes()),
              0);
  }
  for (const Parameter &p : ort->parameters)
    EXPECT_TRUE(sameBits(p.values, e->parameter(p.name))) << p.name;
}

/// A bad checkpoint names what is wrong and changes nothing.
TEST(EngineCheckpoint, BadStateIsRefusedAndChangesNothing) {
  auto e = compiled("lenet", folder("lenet") + "/optimizer_model.onnx");
  train(*e, 0, 2);
  auto good = e->checkpointState(true);
  ASSERT_TRUE(static_cast<bool>(good));
  Checkpoint before = *good;
  auto expectRefused = [&](const Checkpoint &c, const std::string &msg) {
    llvm::Error err = e->loadCheckpointState(c);
    ASSERT_TRUE(static_cast<bool>(err));
    EXPECT_EQ(toString(std::move(err)), msg);
    auto now = e->checkpointState(true);
    ASSERT_TRUE(static_cast<bool>(now));
    EXPECT_TRUE(comet::checkpoint::sameContents(*now, before));
  };
  auto changed = [&](auto edit) {
    Checkpoint c = *good;
    // Different values everywhere, so a partial write would show.
    for (Parameter &p : c.parameters)
      for (float &v : p.values)
        v += 1;
    edit(c);
    return c;
  };
  expectRefused(changed([](Checkpoint &c) {
                  c.parameters.push_back({"extra", {1}, {0}, true});
                }),
                "the checkpoint's parameter 'extra' is not a parameter of "
                "the training graph");
  expectRefused(changed([](Checkpoint &c) {
                  c.parameters.back().dims = {1, 10};
                }),
                "parameter '" + good->parameters.back().name +
                    "' has shape [1,10] in the checkpoint but the graph "
                    "wants [10]");
  expectRefused(
      changed([](Checkpoint &c) { c.optimizerGroups[0].states.pop_back(); }),
      "optimizer group 'group0' has no state for the trainable "
      "parameter '" +
          good->optimizerGroups[0].states.back().param + "'");
  expectRefused(changed([](Checkpoint &c) {
                  c.optimizerGroups[0].states[0].momentums.pop_back();
                }),
                "optimizer group 'group0': parameter '" +
                    good->optimizerGroups[0].states[0].param +
                    "' has no momentum 'momentum1', which AdamWOptimizer "
                    "keeps");
  expectRefused(changed([](Checkpoint &c) {
                  c.optimizerGroups.push_back(c.optimizerGroups[0]);
                }),
                "the checkpoint has 2 optimizer groups; COMET runs one");
  // AdamW's state into the built-in SGD: its first moment is no velocity.
  auto sgd = compiled("lenet", comet::EngineOptions::kBuiltinOptimizer);
  llvm::Error err = sgd->loadCheckpointState(*good);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(toString(std::move(err)),
            "optimizer group 'group0': parameter '" + good->parameters[0].name +
                "' has momentum 'momentum1', which the built-in SGD does "
                "not keep (1 per parameter): the checkpoint comes from "
                "another optimizer");
  // At compile, the message names the source.
  auto e2 = comet::Engine::load(folder("lenet"));
  ASSERT_TRUE(static_cast<bool>(e2));
  comet::EngineOptions o;
  o.batchSize = kBatch;
  o.optimizerPath = comet::EngineOptions::kBuiltinOptimizer;
  o.initialState = std::make_shared<Checkpoint>(*good);
  o.weightsPath = "ckpt.bin";
  err = (*e2)->compile(o);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(toString(std::move(err)).rfind("ckpt.bin: optimizer group", 0), 0u);
  // A subset of the parameters loads; the rest keep their values.
  Checkpoint subset;
  subset.parameters.push_back(good->parameters[0]);
  subset.parameters[0].values.assign(subset.parameters[0].values.size(), 0.5f);
  err = e->loadCheckpointState(subset);
  ASSERT_FALSE(static_cast<bool>(err)) << toString(std::move(err));
  for (float v : e->parameter(subset.parameters[0].name))
    ASSERT_EQ(v, 0.5f);
  EXPECT_TRUE(sameBits(e->parameter(good->parameters[1].name),
                       good->parameters[1].values));
  EXPECT_EQ(e->trainer().optimizerSteps(), 2);
}

comet::onnx_import::Model readModelFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in),
                    std::istreambuf_iterator<char>()};
  comet::onnx_import::Model m;
  std::string error;
  EXPECT_TRUE(
      comet::onnx_import::readONNXModel(bytes.data(), bytes.size(), m, error))
      << error;
  return m;
}

/// The export: the eval graph cut to the logits, the trained parameters as
/// initializers, the data the only input.
TEST(ExportInferenceModel, HoldsTheTrainedParameters) {
  auto e = compiled("lenet", "");
  train(*e, 0, 2);
  std::string d = tempDir(), path = d + "/lenet.onnx";
  llvm::Error err = e->exportInferenceModel(path, {"logits"});
  ASSERT_FALSE(static_cast<bool>(err)) << toString(std::move(err));
  comet::onnx_import::Model m = readModelFile(path);
  ASSERT_EQ(m.graph.inputs.size(), 1u);
  EXPECT_EQ(m.graph.inputs[0].name, "input");
  ASSERT_EQ(m.graph.outputs.size(), 1u);
  EXPECT_EQ(m.graph.outputs[0].name, "logits");
  EXPECT_EQ(m.graph.outputs[0].type.elemType, 1);
  EXPECT_EQ(m.graph.initializers.size(), e->parameters().size());
  for (const auto &t : m.graph.initializers) {
    llvm::ArrayRef<float> p = e->parameter(t.name);
    ASSERT_EQ(t.bytes.size(), p.size() * sizeof(float)) << t.name;
    EXPECT_EQ(std::memcmp(t.bytes.data(), p.data(), t.bytes.size()), 0)
        << t.name;
  }
  for (const auto &n : m.graph.nodes)
    EXPECT_NE(n.opType, "SoftmaxCrossEntropyLoss");

  err = e->exportInferenceModel(d + "/bad.onnx", {"logits", "nothing"});
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(toString(std::move(err)),
            folder("lenet") +
                "/eval_model.onnx: the graph has no value named 'nothing' to "
                "output");
  err = e->exportInferenceModel(d + "/bad.onnx", {});
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(toString(std::move(err)),
            folder("lenet") + "/eval_model.onnx: no output was requested");
  std::ifstream bad(d + "/bad.onnx");
  EXPECT_FALSE(bad.good());
  unlink(path.c_str());
  rmdir(d.c_str());
}

void copyFile(const std::string &from, const std::string &to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream(to, std::ios::binary) << in.rdbuf();
}

/// Without an eval graph, the training graph's forward part, in inference
/// mode: ORT's BatchNormInternal becomes BatchNormalization with one output.
TEST(ExportInferenceModel, TrainingGraphForwardInInferenceMode) {
  std::string d = tempDir();
  for (const char *f : {"training_model.onnx", "checkpoint"})
    copyFile(folder("resnet") + "/" + f, d + "/" + f);
  auto e = comet::Engine::load(d);
  ASSERT_TRUE(static_cast<bool>(e));
  comet::EngineOptions o;
  o.batchSize = kBatch;
  ASSERT_FALSE(static_cast<bool>((*e)->compile(o)));
  ASSERT_FALSE((*e)->hasEval());
  llvm::Error err = (*e)->exportInferenceModel(d + "/m.onnx", {"logits"});
  ASSERT_FALSE(static_cast<bool>(err)) << toString(std::move(err));
  comet::onnx_import::Model m = readModelFile(d + "/m.onnx");
  size_t batchNorms = 0;
  for (const auto &n : m.graph.nodes) {
    EXPECT_EQ(n.opType.find("Grad"), std::string::npos) << n.opType;
    EXPECT_NE(n.opType, "BatchNormInternal");
    if (n.opType == "BatchNormalization") {
      ++batchNorms;
      EXPECT_EQ(n.outputs.size(), 1u);
      for (const auto &a : n.attributes)
        EXPECT_NE(a.name, "training_mode");
    }
  }
  EXPECT_EQ(batchNorms, 6u);
  ASSERT_EQ(m.graph.inputs.size(), 1u);
  EXPECT_EQ(m.graph.inputs[0].name, "input");
  for (const char *f : {"training_model.onnx", "checkpoint", "m.onnx"})
    unlink((d + "/" + f).c_str());
  rmdir(d.c_str());
}

} // namespace
