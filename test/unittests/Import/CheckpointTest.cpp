//===- CheckpointTest.cpp - The ONNX Runtime checkpoint reader ------------===//
#include "comet/Import/Checkpoint.h"
#include "comet/Import/ONNXModel.h"

#include "OrtCheckpoint_generated.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using comet::checkpoint::Checkpoint;
using comet::checkpoint::OptimizerGroup;
using comet::checkpoint::Parameter;
using comet::checkpoint::ParameterOptimizerState;
using comet::checkpoint::readCheckpoint;
using comet::checkpoint::readCheckpointFile;
using comet::checkpoint::sameContents;
using comet::checkpoint::writeCheckpoint;
using comet::checkpoint::writeCheckpointFile;
namespace fb = comet::ortfbs;

std::vector<char> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string dir(const char *model) {
  return std::string(COMET_FIXTURES) + "/" + model;
}

/// Every parameter of the checkpoint equals model.onnx's initializer of the
/// same name (both written from the same weights by the exporter), and the
/// trainable/frozen split is the training graph's: trainable parameters are
/// those with a gradient buffer.
class FixtureCheckpoint : public ::testing::TestWithParam<const char *> {};

TEST_P(FixtureCheckpoint, MatchesModelInitializers) {
  Checkpoint cp;
  std::string error;
  ASSERT_TRUE(comet::checkpoint::readCheckpointFile(
      dir(GetParam()) + "/checkpoint", cp, error))
      << error;
  EXPECT_EQ(cp.version, 2);

  std::vector<char> onnxBytes = readFile(dir(GetParam()) + "/model.onnx");
  comet::onnx_import::Model model;
  ASSERT_TRUE(comet::onnx_import::readONNXModel(onnxBytes.data(),
                                                onnxBytes.size(), model, error))
      << error;
  std::map<std::string, const comet::onnx_import::Tensor *> inits;
  for (const auto &t : model.graph.initializers)
    if (t.dataType == 1)
      inits[t.name] = &t;

  std::vector<char> trainBytes =
      readFile(dir(GetParam()) + "/training_model.onnx");
  comet::onnx_import::Model train;
  ASSERT_TRUE(comet::onnx_import::readONNXModel(
      trainBytes.data(), trainBytes.size(), train, error))
      << error;
  std::map<std::string, bool> hasGrad;
  for (const auto &in : train.graph.inputs) {
    auto pos = in.name.find("_grad.accumulation.buffer");
    if (pos != std::string::npos)
      hasGrad[in.name.substr(0, pos)] = true;
  }

  ASSERT_EQ(cp.parameters.size(), inits.size());
  size_t trainable = 0;
  for (const auto &p : cp.parameters) {
    SCOPED_TRACE(p.name);
    auto it = inits.find(p.name);
    ASSERT_NE(it, inits.end());
    EXPECT_EQ(p.dims, it->second->dims);
    ASSERT_EQ(p.values.size() * 4, it->second->bytes.size());
    EXPECT_EQ(std::memcmp(p.values.data(), it->second->bytes.data(),
                          it->second->bytes.size()),
              0);
    EXPECT_EQ(p.trainable, hasGrad.count(p.name) == 1);
    trainable += p.trainable;
    EXPECT_EQ(cp.find(p.name), &p);
  }
  EXPECT_EQ(trainable, hasGrad.size());
  EXPECT_EQ(cp.find("no such parameter"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureCheckpoint,
                         ::testing::Values("lenet", "mlp", "resnet", "vgg",
                                           "cnn", "transformer"));

TEST(Checkpoint, ResnetHasFrozenBatchNormStatistics) {
  Checkpoint cp;
  std::string error;
  ASSERT_TRUE(comet::checkpoint::readCheckpointFile(
      dir("resnet") + "/checkpoint", cp, error))
      << error;
  const auto *mean = cp.find("bn1.running_mean");
  const auto *var = cp.find("bn1.running_var");
  ASSERT_TRUE(mean && var);
  EXPECT_FALSE(mean->trainable);
  EXPECT_EQ(mean->dims, std::vector<int64_t>{8});
  EXPECT_EQ(mean->values, std::vector<float>(8, 0.0f));
  EXPECT_EQ(var->values, std::vector<float>(8, 1.0f));
  EXPECT_TRUE(cp.find("conv1.weight")->trainable);
}

std::string readError(const void *data, size_t size) {
  Checkpoint cp;
  std::string error;
  EXPECT_FALSE(readCheckpoint(data, size, cp, error));
  return error;
}

TEST(Checkpoint, EveryTruncationFails) {
  std::vector<char> bytes = readFile(dir("lenet") + "/checkpoint");
  ASSERT_GT(bytes.size(), 1000u);
  // Each prefix on its own heap block, so ASan sees a read past its end.
  for (size_t n = 0; n < bytes.size(); n += n < 256 ? 1 : 97) {
    std::vector<char> prefix(bytes.begin(), bytes.begin() + n);
    std::string e = readError(prefix.data(), prefix.size());
    EXPECT_FALSE(e.empty()) << n;
  }
  EXPECT_EQ(readError(bytes.data(), 100),
            "corrupt or truncated checkpoint (FlatBuffers verification "
            "failed)");
}

TEST(Checkpoint, NotACheckpoint) {
  std::vector<char> onnx = readFile(dir("lenet") + "/model.onnx");
  EXPECT_EQ(readError(onnx.data(), onnx.size()),
            "not an ONNX Runtime checkpoint (no \"ODTC\" file identifier)");
  Checkpoint cp;
  std::string error;
  EXPECT_FALSE(
      comet::checkpoint::readCheckpointFile("/nonexistent/ckpt", cp, error));
  EXPECT_EQ(error, "/nonexistent/ckpt: cannot open the checkpoint");
}

TEST(Checkpoint, CorruptOffsetFails) {
  std::vector<char> bytes = readFile(dir("lenet") + "/checkpoint");
  // The root offset pointing past the end.
  uint32_t past = bytes.size() + 64;
  std::memcpy(bytes.data(), &past, 4);
  EXPECT_EQ(readError(bytes.data(), bytes.size()),
            "corrupt or truncated checkpoint (FlatBuffers verification "
            "failed)");
}

/// A checkpoint of the given tensors, built with the generated builders.
struct TensorSpec {
  const char *name;
  std::vector<int64_t> dims;
  int32_t dataType = 1;
  size_t bytes = 0; // raw_data size; SIZE_MAX: as many as the dims need
  int64_t external = -1;
};

std::vector<uint8_t> build(const std::vector<TensorSpec> &trainable,
                           const std::vector<TensorSpec> &frozen = {},
                           int32_t version = 2, bool nominal = false,
                           bool moduleState = true) {
  flatbuffers::FlatBufferBuilder b;
  auto tensors = [&](const std::vector<TensorSpec> &specs) {
    std::vector<flatbuffers::Offset<fb::Tensor>> out;
    for (const TensorSpec &s : specs) {
      size_t n = 1;
      for (int64_t d : s.dims)
        n *= d < 0 ? 0 : d;
      std::vector<uint8_t> raw(s.bytes == SIZE_MAX ? n * 4 : s.bytes, 0x3f);
      out.push_back(fb::CreateTensorDirect(
          b, s.name, nullptr, &s.dims, s.dataType, &raw, nullptr, s.external));
    }
    return out;
  };
  auto t = tensors(trainable), f = tensors(frozen);
  flatbuffers::Offset<fb::ModuleState> ms;
  if (moduleState)
    ms = fb::CreateModuleStateDirect(b, &t, &f, nominal, false);
  b.Finish(fb::CreateCheckpoint(b, version, ms), fb::CheckpointIdentifier());
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

TEST(Checkpoint, BuiltCheckpointReads) {
  auto buf = build({{"w", {2, 3}, 1, SIZE_MAX}}, {{"s", {}, 1, SIZE_MAX}});
  Checkpoint cp;
  std::string error;
  ASSERT_TRUE(readCheckpoint(buf.data(), buf.size(), cp, error)) << error;
  ASSERT_EQ(cp.parameters.size(), 2u);
  EXPECT_EQ(cp.parameters[0].values.size(), 6u);
  EXPECT_TRUE(cp.parameters[0].trainable);
  EXPECT_EQ(cp.parameters[1].dims, std::vector<int64_t>{});
  EXPECT_EQ(cp.parameters[1].values.size(), 1u);
  EXPECT_FALSE(cp.parameters[1].trainable);
}

TEST(Checkpoint, UnalignedBufferReads) {
  auto buf = build({{"w", {2, 3}, 1, SIZE_MAX}});
  std::vector<uint8_t> shifted(buf.size() + 1);
  std::memcpy(shifted.data() + 1, buf.data(), buf.size());
  Checkpoint cp;
  std::string error;
  EXPECT_TRUE(readCheckpoint(shifted.data() + 1, buf.size(), cp, error))
      << error;
}

TEST(Checkpoint, InvalidParametersNameTheParameter) {
  auto expectError = [](const std::vector<uint8_t> &buf, const char *msg) {
    EXPECT_EQ(readError(buf.data(), buf.size()), msg);
  };
  expectError(build({{"w", {2, 3}, 1, 20}}),
              "parameter 'w' has 20 bytes of data but 6 float elements need "
              "24");
  expectError(build({{"w", {2, 3}, 7, SIZE_MAX}}),
              "parameter 'w' has data type int64 (7); only float is "
              "supported");
  expectError(build({{"w", {2, -3}, 1, 0}}),
              "parameter 'w' has a negative dim -3");
  expectError(build({{"w", {1LL << 40, 1LL << 40}, 1, 0}}),
              "parameter 'w' has dims whose product overflows");
  expectError(build({{"w", {2}, 1, 0, 128}}),
              "parameter 'w' keeps its data in an external file, which "
              "COMET does not read");
  expectError(build({{"", {2}, 1, SIZE_MAX}}),
              "trainable parameter #0 has no name");
  expectError(build({{"w", {2}, 1, SIZE_MAX}}, {{"w", {2}, 1, SIZE_MAX}}),
              "parameter 'w' appears twice");
  expectError(build({{"w", {2}, 1, SIZE_MAX}}, {}, 3),
              "checkpoint version 3 is not supported (COMET reads versions "
              "1 to 2)");
  expectError(build({{"w", {2}, 1, SIZE_MAX}}, {}, 2, /*nominal=*/true),
              "the checkpoint is nominal: it names the parameters but holds "
              "no values");
  expectError(build({}, {}, 2, false, /*moduleState=*/false),
              "the checkpoint has no module state (no parameters)");
  expectError(build({}), "the checkpoint has no parameters");
}

// -- what ONNX Runtime saves after training -------------------------------

std::string ortSaved(const char *name) {
  return std::string(COMET_FIXTURES) + "/../checkpoints/" + name;
}

/// resnet-adamw: ONNX Runtime 1.19.2 after two AdamW steps, optimizer
/// state and properties included (test/fixtures/checkpoints/regenerate.py).
TEST(OrtSaved, AdamWStateAndPropertiesRead) {
  Checkpoint cp;
  std::string error;
  ASSERT_TRUE(readCheckpointFile(ortSaved("resnet-adamw"), cp, error)) << error;
  EXPECT_EQ(cp.version, 2);
  size_t trainable = 0;
  for (const Parameter &p : cp.parameters)
    trainable += p.trainable;
  EXPECT_EQ(trainable, 20u);
  EXPECT_EQ(cp.parameters.size(), 32u);
  ASSERT_EQ(cp.optimizerGroups.size(), 1u);
  const OptimizerGroup &g = cp.optimizerGroups[0];
  EXPECT_EQ(g.name, "group0");
  EXPECT_EQ(g.step, 2);
  EXPECT_EQ(g.initialLearningRate, 1e-3f);
  ASSERT_EQ(g.states.size(), 20u);
  for (const ParameterOptimizerState &s : g.states) {
    SCOPED_TRACE(s.param);
    const Parameter *p = cp.find(s.param);
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->trainable);
    ASSERT_EQ(s.momentums.size(), 2u);
    EXPECT_EQ(s.momentums[0].name, "momentum0");
    EXPECT_EQ(s.momentums[1].name, "momentum1");
    EXPECT_EQ(s.momentums[0].dims, p->dims);
    // AdamW's second moment is a mean of squares.
    for (float v : s.momentums[1].values)
      EXPECT_GE(v, 0.0f);
    EXPECT_EQ(s.find("momentum1"), &s.momentums[1]);
  }
  using Ints = std::vector<std::pair<std::string, int64_t>>;
  using Floats = std::vector<std::pair<std::string, float>>;
  using Strings = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(cp.properties.ints, (Ints{{"epoch", 3}}));
  EXPECT_EQ(cp.properties.floats, (Floats{{"best_loss", 0.25f}}));
  EXPECT_EQ(cp.properties.strings, (Strings{{"note", "saved by onnxruntime"}}));
  EXPECT_EQ(*cp.properties.findInt("epoch"), 3);
  EXPECT_EQ(cp.properties.findInt("best_loss"), nullptr);
  EXPECT_EQ(*cp.properties.findString("note"), "saved by onnxruntime");
}

/// SGDOptimizerV2 keeps no state, but ONNX Runtime saves its graph's
/// first_order_moments input, zeros, as momentum0.
TEST(OrtSaved, SgdStateIsZeroMomentum0) {
  Checkpoint cp;
  std::string error;
  ASSERT_TRUE(readCheckpointFile(ortSaved("resnet-sgd"), cp, error)) << error;
  ASSERT_EQ(cp.optimizerGroups.size(), 1u);
  EXPECT_EQ(cp.optimizerGroups[0].step, 1);
  for (const ParameterOptimizerState &s : cp.optimizerGroups[0].states) {
    ASSERT_EQ(s.momentums.size(), 1u);
    EXPECT_EQ(s.momentums[0].name, "momentum0");
    for (float v : s.momentums[0].values)
      EXPECT_EQ(v, 0.0f);
  }
  EXPECT_TRUE(cp.properties.empty());
}

// -- the writer ------------------------------------------------------------

/// Reads what writeCheckpoint wrote; fails the test if either fails.
Checkpoint roundTrip(const Checkpoint &c, std::string *bytesOut = nullptr) {
  std::string bytes, error;
  EXPECT_TRUE(writeCheckpoint(c, bytes, error)) << error;
  Checkpoint back;
  EXPECT_TRUE(readCheckpoint(bytes.data(), bytes.size(), back, error)) << error;
  if (bytesOut)
    *bytesOut = bytes;
  return back;
}

class WrittenCheckpoint : public ::testing::TestWithParam<std::string> {};

/// Every fixture and ORT-saved checkpoint reads back equal after writing,
/// and writing it again gives the same bytes.
TEST_P(WrittenCheckpoint, ReadsBackEqual) {
  Checkpoint cp;
  std::string error;
  ASSERT_TRUE(readCheckpointFile(GetParam(), cp, error)) << error;
  std::string first, second;
  Checkpoint back = roundTrip(cp, &first);
  EXPECT_TRUE(sameContents(cp, back));
  roundTrip(back, &second);
  EXPECT_EQ(first, second);
}

INSTANTIATE_TEST_SUITE_P(Files, WrittenCheckpoint,
                         ::testing::Values(dir("lenet") + "/checkpoint",
                                           dir("resnet") + "/checkpoint",
                                           dir("transformer") + "/checkpoint",
                                           ortSaved("resnet-adamw"),
                                           ortSaved("resnet-sgd")));

/// A checkpoint with the corners: a scalar, an empty tensor, NaN payloads
/// and -0, extreme ints, names and a string holding NUL bytes, an empty
/// string.
Checkpoint corners() {
  Checkpoint c;
  float nan = std::nanf("0x12345");
  c.parameters.push_back({"w", {2, 3}, {1, -0.0f, nan, 4, 5, 6}, true});
  c.parameters.push_back({"empty", {0, 3}, {}, true});
  c.parameters.push_back({"scalar", {}, {7.5f}, false});
  // Names are byte strings: NUL included.
  c.parameters.push_back({std::string("n\0ul", 4), {1}, {2.0f}, false});
  OptimizerGroup g;
  g.name = "group0";
  g.step = std::numeric_limits<int64_t>::max();
  g.initialLearningRate = 3e-4f;
  g.states.push_back(
      {"w",
       {{"momentum0", {2, 3}, {0, 1, 2, 3, 4, 5}, false},
        {"momentum1", {2, 3}, {nan, 0, 0, 0, 0, 1e-30f}, false}}});
  g.states.push_back({"empty", {{"momentum0", {0, 3}, {}, false}}});
  c.optimizerGroups.push_back(g);
  c.properties.ints = {{"comet.step", std::numeric_limits<int64_t>::min()},
                       {"b", 0},
                       {std::string("b\0c", 3), 1}};
  c.properties.floats = {{"f", nan}, {"g", -0.0f}};
  c.properties.strings = {{"s", std::string("a\0b", 3)}, {"empty", ""}};
  return c;
}

TEST(Writer, KeepsEveryBit) {
  Checkpoint c = corners();
  Checkpoint back = roundTrip(c);
  EXPECT_TRUE(sameContents(c, back));
  // sameContents compares bits, and sees a one-bit change.
  Checkpoint changed = back;
  changed.optimizerGroups[0].states[0].momentums[1].values[5] = 2e-30f;
  EXPECT_FALSE(sameContents(c, changed));
  changed = back;
  changed.properties.floats[1].second = 0.0f;
  EXPECT_FALSE(sameContents(c, changed));
  // No groups, no properties: neither is written.
  Checkpoint plain;
  plain.parameters = c.parameters;
  std::string bytes;
  Checkpoint p2 = roundTrip(plain, &bytes);
  EXPECT_TRUE(sameContents(plain, p2));
  const fb::Checkpoint *root = fb::GetCheckpoint(bytes.data());
  EXPECT_EQ(root->optimizer_groups(), nullptr);
  EXPECT_EQ(root->property_bag(), nullptr);
}

std::string writeError(const Checkpoint &c) {
  std::string bytes, error;
  EXPECT_FALSE(writeCheckpoint(c, bytes, error));
  return error;
}

TEST(Writer, RefusesWhatTheReaderRejects) {
  Checkpoint c = corners();
  c.parameters[0].values.pop_back();
  EXPECT_EQ(writeError(c), "parameter 'w' has 5 values but its dims [2,3] "
                           "need 6");
  c = corners();
  c.parameters[1].name = "";
  EXPECT_EQ(writeError(c), "parameter #1 has no name");
  c = corners();
  c.parameters[2].dims = {-1};
  EXPECT_EQ(writeError(c), "parameter 'scalar' has a negative dim -1");
  c = corners();
  c.parameters[2].name = "w";
  EXPECT_EQ(writeError(c), "parameter 'w' appears twice");
  c = corners();
  c.version = 3;
  EXPECT_EQ(writeError(c), "checkpoint version 3 is not supported (COMET "
                           "reads versions 1 to 2)");
  c = corners();
  c.parameters.clear();
  c.optimizerGroups.clear();
  EXPECT_EQ(writeError(c), "the checkpoint has no parameters");
  c = corners();
  c.optimizerGroups[0].states[0].param = "nope";
  EXPECT_EQ(writeError(c), "optimizer group 'group0': the state of "
                           "parameter 'nope' names no parameter of the "
                           "checkpoint");
  c = corners();
  c.optimizerGroups[0].states[1].param = "w";
  EXPECT_EQ(writeError(c), "optimizer group 'group0': the state of "
                           "parameter 'w' appears twice");
  c = corners();
  c.optimizerGroups[0].states[0].momentums[1].dims = {3, 2};
  EXPECT_EQ(writeError(c), "optimizer group 'group0': the state of "
                           "parameter 'w': momentum 'momentum1' has dims "
                           "[3,2], the parameter [2,3]");
  c = corners();
  c.optimizerGroups[0].states[0].momentums[1].name = "momentum0";
  EXPECT_EQ(writeError(c), "optimizer group 'group0': the state of "
                           "parameter 'w' has two momentums named "
                           "'momentum0'");
  c = corners();
  c.optimizerGroups[0].states[0].momentums[0].values.resize(2);
  EXPECT_EQ(writeError(c), "optimizer group 'group0': momentum 'momentum0' "
                           "of parameter 'w' has 2 values but its dims "
                           "[2,3] need 6");
  c = corners();
  c.optimizerGroups[0].states[0].momentums[0].name = "";
  EXPECT_EQ(writeError(c), "optimizer group 'group0': momentum #0 of "
                           "parameter 'w' has no name");
  c = corners();
  c.optimizerGroups[0].name = "";
  EXPECT_EQ(writeError(c), "optimizer group #0 has no name");
  c = corners();
  c.optimizerGroups[0].step = -2;
  EXPECT_EQ(writeError(c), "optimizer group 'group0' has a negative step -2");
  c = corners();
  c.properties.strings.push_back({"b", "x"});
  EXPECT_EQ(writeError(c), "property 'b' appears twice");
  c = corners();
  c.properties.floats.push_back({"", 1});
  EXPECT_EQ(writeError(c), "a property has no name");
}

/// The reader makes the same checks on what it parses (buffers built with
/// the generated builders, as another writer could make them).
TEST(Reader, RejectsInconsistentStateAndProperties) {
  auto make = [](const char *stateParam, std::vector<int64_t> momentumDims,
                 const char *prop1, const char *prop2) {
    flatbuffers::FlatBufferBuilder b;
    std::vector<int64_t> dims = {2};
    std::vector<uint8_t> raw(8, 0);
    std::vector<uint8_t> mraw;
    size_t n = 1;
    for (int64_t d : momentumDims)
      n *= d;
    mraw.resize(n * 4);
    std::vector<flatbuffers::Offset<fb::Tensor>> params = {
        fb::CreateTensorDirect(b, "w", nullptr, &dims, 1, &raw)};
    auto ms = fb::CreateModuleStateDirect(b, &params, nullptr);
    std::vector<flatbuffers::Offset<fb::Tensor>> moms = {fb::CreateTensorDirect(
        b, "momentum0", nullptr, &momentumDims, 1, &mraw)};
    std::vector<flatbuffers::Offset<fb::ParameterOptimizerState>> states = {
        fb::CreateParameterOptimizerStateDirect(b, stateParam, &moms)};
    std::vector<flatbuffers::Offset<fb::OptimizerGroup>> groups = {
        fb::CreateOptimizerGroupDirect(b, "group0", 1, 0.1f, &states)};
    std::vector<flatbuffers::Offset<fb::IntProperty>> ints = {
        fb::CreateIntPropertyDirect(b, prop1, 1)};
    std::vector<flatbuffers::Offset<fb::StringProperty>> strs = {
        fb::CreateStringPropertyDirect(b, prop2, "v")};
    auto bag = fb::CreatePropertyBagDirect(b, &ints, nullptr, &strs);
    b.Finish(fb::CreateCheckpointDirect(b, 2, ms, &groups, bag),
             fb::CheckpointIdentifier());
    return std::vector<uint8_t>(b.GetBufferPointer(),
                                b.GetBufferPointer() + b.GetSize());
  };
  auto ok = make("w", {2}, "a", "b");
  Checkpoint cp;
  std::string error;
  ASSERT_TRUE(readCheckpoint(ok.data(), ok.size(), cp, error)) << error;
  EXPECT_EQ(cp.optimizerGroups[0].states[0].momentums[0].dims,
            std::vector<int64_t>{2});
  auto bad = make("v", {2}, "a", "b");
  EXPECT_EQ(readError(bad.data(), bad.size()),
            "optimizer group 'group0': the state of parameter 'v' names no "
            "parameter of the checkpoint");
  bad = make("w", {3}, "a", "b");
  EXPECT_EQ(readError(bad.data(), bad.size()),
            "optimizer group 'group0': the state of parameter 'w': momentum "
            "'momentum0' has dims [3], the parameter [2]");
  bad = make("w", {2}, "a", "a");
  EXPECT_EQ(readError(bad.data(), bad.size()), "property 'a' appears twice");
  bad = make("w", {2}, "", "a");
  EXPECT_EQ(readError(bad.data(), bad.size()), "a property has no name");
}

/// A truncated file fails, or (when only the padding after the last string
/// is cut) reads as the whole: never as another checkpoint.
TEST(Writer, NoTruncationOfItsOutputReadsAsAnother) {
  Checkpoint c = corners();
  std::string bytes, error;
  ASSERT_TRUE(writeCheckpoint(c, bytes, error)) << error;
  size_t readable = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<char> prefix(bytes.begin(), bytes.begin() + n);
    Checkpoint cp;
    if (readCheckpoint(prefix.data(), prefix.size(), cp, error)) {
      EXPECT_TRUE(sameContents(cp, c)) << n;
      ++readable;
    }
  }
  EXPECT_LE(readable, 3u);
}

/// The files in `dir`, sorted.
std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(WriteFile, ReplacesAtomicallyAndLeavesNothingElse) {
  char tmpl[] = "/tmp/comet-ckpt-XXXXXX";
  ASSERT_TRUE(mkdtemp(tmpl));
  std::string d = tmpl, path = d + "/ckpt";
  std::string error;
  Checkpoint a = corners(), b = corners();
  b.parameters[0].values[0] = 42;
  ASSERT_TRUE(writeCheckpointFile(path, a, error)) << error;
  ASSERT_TRUE(writeCheckpointFile(path, b, error)) << error;
  Checkpoint back;
  ASSERT_TRUE(readCheckpointFile(path, back, error)) << error;
  EXPECT_TRUE(sameContents(back, b));
  EXPECT_EQ(listDir(d), std::vector<std::string>{"ckpt"});
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
  // An invalid checkpoint is refused before anything is written.
  Checkpoint bad = corners();
  bad.parameters[0].values.clear();
  EXPECT_FALSE(writeCheckpointFile(path, bad, error));
  EXPECT_EQ(error, path + ": parameter 'w' has 0 values but its dims [2,3] "
                          "need 6");
  ASSERT_TRUE(readCheckpointFile(path, back, error)) << error;
  EXPECT_TRUE(sameContents(back, b));
  // A writer killed between naming its temporary file and renaming it
  // leaves the file; the next write removes it, not a live process's.
  pid_t child = fork();
  if (child == 0)
    _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  std::string stale = path + ".tmp." + std::to_string(child) + ".0000abcd",
              live = path + ".tmp." + std::to_string(getpid()) + ".0000abcd";
  for (const std::string &f : {stale, live})
    std::ofstream(f) << "partial";
  ASSERT_TRUE(writeCheckpointFile(path, b, error)) << error;
  EXPECT_EQ(listDir(d),
            (std::vector<std::string>{
                "ckpt", "ckpt.tmp." + std::to_string(getpid()) + ".0000abcd"}));
  unlink(live.c_str());
  // A folder that does not exist.
  EXPECT_FALSE(writeCheckpointFile(d + "/no/ckpt", a, error));
  EXPECT_EQ(error.rfind(d + "/no/ckpt: cannot create a temporary file in " + d +
                            "/no: ",
                        0),
            0u)
      << error;
  EXPECT_EQ(listDir(d), std::vector<std::string>{"ckpt"});
  unlink(path.c_str());
  rmdir(d.c_str());
}

} // namespace
