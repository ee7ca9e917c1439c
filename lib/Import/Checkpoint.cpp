//===- Checkpoint.cpp - ONNX Runtime training checkpoints -----------------===//
//
// The accessors come from OrtCheckpoint.fbs (flatc at build time); the
// FlatBuffers verifier runs before any of them, so a corrupt or truncated
// file is an error, never a read out of bounds.
//
//===----------------------------------------------------------------------===//
#include "comet/Import/Checkpoint.h"

#include "OrtCheckpoint_generated.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>

namespace comet::checkpoint {

namespace {

// Versions whose module state has the layout of OrtCheckpoint.fbs.
constexpr int32_t kMinVersion = 1, kMaxVersion = 2;
constexpr int32_t kFloat = 1;

const char *dataTypeName(int32_t t) {
  static const char *names[] = {
      "undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
      "int32",     "int64",  "string",    "bool",       "float16", "double",
      "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  if (t >= 0 && t < int32_t(std::size(names)))
    return names[t];
  return "unknown";
}

bool readTensor(const ortfbs::Tensor *t, bool trainable, size_t index,
                Parameter &p, std::string &error) {
  std::string where = std::string(trainable ? "trainable" : "frozen") +
                      " parameter #" + std::to_string(index);
  if (!t || !t->name() || t->name()->size() == 0) {
    error = where + " has no name";
    return false;
  }
  p.name = t->name()->str();
  p.trainable = trainable;
  where = "parameter '" + p.name + "'";
  if (t->external_data_offset() >= 0) {
    error = where + " keeps its data in an external file, which COMET does "
                    "not read";
    return false;
  }
  if (t->data_type() != kFloat) {
    error = where + " has data type " + dataTypeName(t->data_type()) + " (" +
            std::to_string(t->data_type()) + "); only float is supported";
    return false;
  }
  uint64_t numel = 1;
  // The verifier aligns a vector's length prefix to 4 bytes only: int64
  // dims may sit at 4 mod 8, so they are copied out, not loaded in place.
  const auto *dims = t->dims();
  size_t rank = dims ? dims->size() : 0;
  const uint8_t *dimBytes =
      dims ? reinterpret_cast<const uint8_t *>(dims) + sizeof(uint32_t)
           : nullptr;
  for (size_t i = 0; i < rank; ++i) {
    int64_t d;
    std::memcpy(&d, dimBytes + i * sizeof(int64_t), sizeof(d));
    if (d < 0) {
      error = where + " has a negative dim " + std::to_string(d);
      return false;
    }
    if (d != 0 &&
        numel > std::numeric_limits<uint64_t>::max() / 8 / uint64_t(d)) {
      error = where + " has dims whose product overflows";
      return false;
    }
    numel *= uint64_t(d);
    p.dims.push_back(d);
  }
  size_t have = t->raw_data() ? t->raw_data()->size() : 0;
  if (have != numel * sizeof(float)) {
    error = where + " has " + std::to_string(have) + " bytes of data but " +
            std::to_string(numel) + " float elements need " +
            std::to_string(numel * sizeof(float));
    return false;
  }
  p.values.resize(numel);
  if (have) // raw_data need not be 4-byte aligned
    std::memcpy(p.values.data(), t->raw_data()->data(), have);
  return true;
}

} // namespace

const Parameter *Checkpoint::find(const std::string &name) const {
  for (const Parameter &p : parameters)
    if (p.name == name)
      return &p;
  return nullptr;
}

bool readCheckpoint(const void *data, size_t size, Checkpoint &out,
                    std::string &error) {
  auto *bytes = static_cast<const uint8_t *>(data);
  // The accessors load int64 scalars in place: they need an 8-aligned base.
  std::vector<uint64_t> aligned;
  if (reinterpret_cast<uintptr_t>(bytes) % alignof(uint64_t)) {
    aligned.resize((size + 7) / 8);
    std::memcpy(aligned.data(), bytes, size);
    bytes = reinterpret_cast<const uint8_t *>(aligned.data());
  }
  if (size < 8 || !flatbuffers::BufferHasIdentifier(
                      bytes, ortfbs::CheckpointIdentifier())) {
    error = "not an ONNX Runtime checkpoint (no \"ODTC\" file identifier)";
    return false;
  }
  flatbuffers::Verifier verifier(bytes, size);
  if (!ortfbs::VerifyCheckpointBuffer(verifier)) {
    error = "corrupt or truncated checkpoint (FlatBuffers verification "
            "failed)";
    return false;
  }
  const ortfbs::Checkpoint *cp = ortfbs::GetCheckpoint(bytes);
  out = Checkpoint();
  out.version = cp->version();
  if (out.version < kMinVersion || out.version > kMaxVersion) {
    error = "checkpoint version " + std::to_string(out.version) +
            " is not supported (COMET reads versions " +
            std::to_string(kMinVersion) + " to " + std::to_string(kMaxVersion) +
            ")";
    return false;
  }
  const ortfbs::ModuleState *ms = cp->module_state();
  if (!ms) {
    error = "the checkpoint has no module state (no parameters)";
    return false;
  }
  if (ms->is_nominal_state()) {
    error = "the checkpoint is nominal: it names the parameters but holds "
            "no values";
    return false;
  }
  if (ms->has_external_data()) {
    error = "the checkpoint keeps its parameters in an external data file, "
            "which COMET does not read";
    return false;
  }
  std::set<std::string> seen;
  for (bool trainable : {true, false}) {
    auto *list = trainable ? ms->requires_grad_params() : ms->frozen_params();
    if (!list)
      continue;
    for (size_t i = 0; i < list->size(); ++i) {
      Parameter p;
      if (!readTensor(list->Get(i), trainable, i, p, error))
        return false;
      if (!seen.insert(p.name).second) {
        error = "parameter '" + p.name + "' appears twice";
        return false;
      }
      out.parameters.push_back(std::move(p));
    }
  }
  if (out.parameters.empty()) {
    error = "the checkpoint has no parameters";
    return false;
  }
  return true;
}

bool readCheckpointFile(const std::string &path, Checkpoint &out,
                        std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open the checkpoint";
    return false;
  }
  std::vector<char> buf((std::istreambuf_iterator<char>(in)),
                        std::istreambuf_iterator<char>());
  if (in.bad()) {
    error = path + ": cannot read the checkpoint";
    return false;
  }
  if (!readCheckpoint(buf.data(), buf.size(), out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

} // namespace comet::checkpoint
