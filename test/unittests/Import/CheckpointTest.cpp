//===- CheckpointTest.cpp - The ONNX Runtime checkpoint reader ------------===//
#include "comet/Import/Checkpoint.h"
#include "comet/Import/ONNXModel.h"

#include "OrtCheckpoint_generated.h"

#include "gtest/gtest.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

namespace {

using comet::checkpoint::Checkpoint;
using comet::checkpoint::readCheckpoint;
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
      out.push_back(fb::CreateTensorDirect(b, s.name, &s.dims, s.dataType, &raw,
                                           s.external));
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

} // namespace
