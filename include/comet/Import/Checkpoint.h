//===- Checkpoint.h - ONNX Runtime training checkpoints ---------*- C++ -*-===//
//
// Reads the parameters of the `checkpoint` file that ONNX Runtime's
// generate_artifacts writes (a FlatBuffers buffer, docs/checkpoint-format.md).
// Plain C++ with no LLVM, like ONNXModel.h, so that the libFuzzer target
// builds it alone.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_IMPORT_CHECKPOINT_H
#define COMET_IMPORT_CHECKPOINT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace comet::checkpoint {

/// One parameter: float32 values in row-major order.
struct Parameter {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> values;
  /// Listed among the trainable parameters (else frozen, e.g. BN statistics).
  bool trainable = false;
};

struct Checkpoint {
  int32_t version = 0;
  /// Trainable parameters first, then frozen ones, each in file order.
  std::vector<Parameter> parameters;

  /// The parameter named `name`, or null.
  const Parameter *find(const std::string &name) const;
};

/// Parses a checkpoint held in memory. The buffer is verified first (every
/// offset and vector within `size`), then each parameter: a non-empty unique
/// name, dims >= 0, float32 data, and exactly as many bytes as the dims
/// need. On failure returns false and sets `error` (naming the parameter at
/// fault); `out` is then unspecified.
bool readCheckpoint(const void *data, size_t size, Checkpoint &out,
                    std::string &error);

/// Reads and parses the file at `path`; `error` then starts with the path.
bool readCheckpointFile(const std::string &path, Checkpoint &out,
                        std::string &error);

} // namespace comet::checkpoint

#endif // COMET_IMPORT_CHECKPOINT_H
