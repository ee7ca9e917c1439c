//===- Checkpoint.h - ONNX Runtime training checkpoints ---------*- C++ -*-===//
//
// Reads and writes the `checkpoint` file of ONNX Runtime's training API (a
// FlatBuffers buffer, docs/checkpoint-format.md): the parameters, the
// optimizer state and the property bag, as ONNX Runtime 1.19 reads and
// writes them. Plain C++ with no LLVM, like ONNXModel.h, so that the
// libFuzzer target builds it alone.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_IMPORT_CHECKPOINT_H
#define COMET_IMPORT_CHECKPOINT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace comet::checkpoint {

/// The version ONNX Runtime 1.19 writes, and what writeCheckpoint writes
/// unless told otherwise.
constexpr int32_t kVersion = 2;

/// One parameter (or one optimizer state tensor): float32 values in
/// row-major order.
struct Parameter {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> values;
  /// Listed among the trainable parameters (else frozen, e.g. BN
  /// statistics). Not used for optimizer state.
  bool trainable = false;
};

/// One parameter's optimizer state: ORT's ParameterOptimizerState.
struct ParameterOptimizerState {
  std::string param;
  /// The state tensors, named as ONNX Runtime names them: "momentum0" (the
  /// optimizer graph's first_order_moments) and "momentum1"
  /// (second_order_moments), each of the parameter's dims.
  std::vector<Parameter> momentums;

  /// The momentum named `name`, or null.
  const Parameter *find(const std::string &name) const;
};

/// ORT's OptimizerGroup.
struct OptimizerGroup {
  /// "group0": ONNX Runtime keeps one group of that name.
  std::string name;
  /// Optimizer steps taken (AdamW's step input).
  int64_t step = 0;
  float initialLearningRate = 0;
  std::vector<ParameterOptimizerState> states;

  /// The state of parameter `param`, or null.
  const ParameterOptimizerState *find(const std::string &param) const;
};

/// ORT's PropertyBag, in file order. A name appears once across the three
/// lists.
struct PropertyBag {
  std::vector<std::pair<std::string, int64_t>> ints;
  std::vector<std::pair<std::string, float>> floats;
  std::vector<std::pair<std::string, std::string>> strings;

  bool empty() const {
    return ints.empty() && floats.empty() && strings.empty();
  }
  /// The property named `name`, or null.
  const int64_t *findInt(const std::string &name) const;
  const float *findFloat(const std::string &name) const;
  const std::string *findString(const std::string &name) const;
};

struct Checkpoint {
  int32_t version = kVersion;
  /// Trainable parameters first, then frozen ones, each in file order.
  std::vector<Parameter> parameters;
  /// Empty: no optimizer state saved.
  std::vector<OptimizerGroup> optimizerGroups;
  PropertyBag properties;

  /// The parameter named `name`, or null.
  const Parameter *find(const std::string &name) const;
};

/// Whether `a` and `b` hold the same checkpoint: the same version, the
/// same parameters, groups, states and properties in the same order, every
/// float compared bit for bit (so a NaN equals itself).
bool sameContents(const Checkpoint &a, const Checkpoint &b);

/// Parses a checkpoint held in memory. The buffer is verified first (every
/// offset and vector within `size`), then each part: a parameter has a
/// non-empty unique name, dims >= 0, float32 data and exactly as many bytes
/// as the dims need; an optimizer state names a parameter of the
/// checkpoint once per group, and its momentums (uniquely named, float32)
/// have that parameter's dims; a property has a non-empty name not used by
/// another. On failure returns false and sets `error` (naming what is at
/// fault); `out` is then unspecified.
bool readCheckpoint(const void *data, size_t size, Checkpoint &out,
                    std::string &error);

/// Reads and parses the file at `path`; `error` then starts with the path.
bool readCheckpointFile(const std::string &path, Checkpoint &out,
                        std::string &error);

/// Serializes `c` in ONNX Runtime's format (what ORT 1.19 reads): trainable
/// parameters as requires_grad_params and the others as frozen_params, in
/// the order given; the optimizer groups and the property bag when not
/// empty. `c` must pass the checks readCheckpoint makes (else false, with
/// `error` naming what is wrong), and fit one FlatBuffers buffer (< 2 GiB).
bool writeCheckpoint(const Checkpoint &c, std::string &bytes,
                     std::string &error);

/// writeCheckpoint to `path`, atomically: the bytes go to a temporary file
/// in the same folder (unnamed where the file system supports O_TMPFILE,
/// named `path`.tmp.<pid>.<hex> only once complete), are fsync'ed, and the
/// file is renamed over `path`; a failure leaves `path` as it was. The
/// temporary files of `path` that dead processes left are removed first.
/// `error` then starts with the path.
bool writeCheckpointFile(const std::string &path, const Checkpoint &c,
                         std::string &error);

/// Writes `bytes` to `path` as writeCheckpointFile does: through a
/// temporary file in the same folder, fsync'ed and renamed over `path`.
/// `error` then starts with the path.
bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error);

} // namespace comet::checkpoint

#endif // COMET_IMPORT_CHECKPOINT_H
