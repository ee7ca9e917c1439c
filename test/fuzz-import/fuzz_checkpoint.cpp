//===- fuzz_checkpoint.cpp - libFuzzer target for the checkpoint reader ---===//
//
// Feeds arbitrary bytes to comet::checkpoint::readCheckpoint as the contents
// of an ONNX Runtime `checkpoint` file. Any crash, sanitizer report or leak
// is a bug; errors are expected. What it accepts must hold together: each
// parameter has a name and exactly as many values as its dims say.
//
//===----------------------------------------------------------------------===//
#include "comet/Import/Checkpoint.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A copy of exactly size bytes, so reads past the end are caught.
  std::vector<uint8_t> buf(data, data + size);
  comet::checkpoint::Checkpoint cp;
  std::string error;
  if (!comet::checkpoint::readCheckpoint(buf.data(), buf.size(), cp, error)) {
    if (error.empty())
      abort(); // a failure must say why
    return 0;
  }
  float sum = 0;
  for (const auto &p : cp.parameters) {
    uint64_t n = 1;
    for (int64_t d : p.dims)
      n *= uint64_t(d);
    if (p.name.empty() || n != p.values.size() || cp.find(p.name) != &p)
      abort();
    for (float v : p.values)
      sum += v;
  }
  return sum == 12345.0f; // keeps the loop
}
