//===- fuzz_checkpoint.cpp - libFuzzer target for the checkpoint format ---===//
//
// Feeds arbitrary bytes to comet::checkpoint::readCheckpoint as the contents
// of an ONNX Runtime `checkpoint` file. Any crash, sanitizer report or leak
// is a bug; errors are expected. What it accepts must hold together (each
// parameter named, exactly as many values as its dims say) and must survive
// the writer: writeCheckpoint takes it, its bytes read back as the same
// checkpoint bit for bit, and writing that again gives the same bytes.
//
//===----------------------------------------------------------------------===//
#include "comet/Import/Checkpoint.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace comet::checkpoint;

static void die(const char *what, const std::string &error) {
  fprintf(stderr, "fuzz_checkpoint: %s: %s\n", what, error.c_str());
  abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A copy of exactly size bytes, so reads past the end are caught.
  std::vector<uint8_t> buf(data, data + size);
  Checkpoint cp;
  std::string error;
  if (!readCheckpoint(buf.data(), buf.size(), cp, error)) {
    if (error.empty())
      abort(); // a failure must say why
    return 0;
  }
  for (const auto &p : cp.parameters) {
    uint64_t n = 1;
    for (int64_t d : p.dims)
      n *= uint64_t(d);
    if (p.name.empty() || n != p.values.size() || cp.find(p.name) != &p)
      abort();
  }
  // The round trip through the writer.
  std::string bytes, again;
  if (!writeCheckpoint(cp, bytes, error))
    die("the writer refuses what the reader accepts", error);
  std::vector<uint8_t> written(bytes.begin(), bytes.end());
  Checkpoint back;
  if (!readCheckpoint(written.data(), written.size(), back, error))
    die("the writer's output does not read", error);
  if (!sameContents(cp, back))
    die("the writer's output reads as another checkpoint", "");
  if (!writeCheckpoint(back, again, error) || again != bytes)
    die("writing the same checkpoint twice gives other bytes", error);
  return 0;
}
