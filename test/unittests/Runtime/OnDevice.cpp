//===- OnDevice.cpp - The kernel tests on the CPU or on a CUDA device -----===//
#include "OnDevice.h"
#include "comet/runtime/alloc.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace comet::test {

#ifdef COMET_TEST_CUDA
bool onCuda() { return true; }
#else
bool onCuda() { return false; }
#endif

int32_t testDevice() {
  return onCuda() ? COMET_RT_DEVICE_CUDA : COMET_RT_DEVICE_CPU;
}

comet_rt_context *newContext() {
  comet_rt_context *ctx = comet_rt_context_create();
  if (onCuda() && comet_rt_context_set_device(ctx, COMET_RT_DEVICE_CUDA) != 0)
    ADD_FAILURE() << "a CUDA context: " << comet_rt_last_error();
  return ctx;
}

comet_rt_context *nullContext() {
  if (!onCuda())
    return nullptr;
  static comet_rt_context *shared = newContext(); // used at exit
  return shared;
}

Mirror::~Mirror() {
  for (auto &[host, b] : blocks)
    comet_rt_free(b.dev);
}

void Mirror::reserve(comet_rt_memref *m, int elemBytes) {
  if (!m || !m->descriptor || m->rank < 0 || m->rank > 16)
    return;
  auto *w = static_cast<const int64_t *>(m->descriptor);
  char *aligned = reinterpret_cast<char *>(static_cast<intptr_t>(w[1]));
  // The elements the descriptor reaches: offset + the last index + 1. A
  // layout the runtime rejects gets a block but no copy: its call fails
  // before reading it, and the host buffer may be smaller than the
  // descriptor says.
  void *data;
  int64_t dims[16], n = 0;
  bool valid =
      !comet_rt_memref_view(m, elemBytes, 16, &data, dims, &n) && aligned;
  int64_t extent = w[2];
  if (n > 0)
    for (int64_t k = 0; k < m->rank; ++k)
      extent += (w[3 + k] - 1) * w[3 + m->rank + k];
  extent += n > 0 ? 1 : 0;
  Block &b = blocks[aligned];
  b.bytes = std::max(b.bytes, static_cast<size_t>(std::max<int64_t>(
                                  extent * elemBytes, 1)));
  b.copy = b.copy && valid;
}

int32_t Mirror::upload() {
  for (auto &[host, b] : blocks) {
    b.dev = comet_rt_alloc(ctx, b.bytes, COMET_RT_MEM_OTHER);
    if (!b.dev) {
      ADD_FAILURE() << "out of device memory for " << b.bytes << " bytes";
      return COMET_RT_ERROR_OUT_OF_MEMORY;
    }
    if (b.copy && host)
      if (int32_t rc = comet_rt_memcpy(ctx, b.dev, host, b.bytes))
        return rc;
  }
  return COMET_RT_SUCCESS;
}

comet_rt_memref *Mirror::map(comet_rt_memref *m) {
  if (!m || !m->descriptor || m->rank < 0 || m->rank > 16)
    return m;
  auto *w = static_cast<const int64_t *>(m->descriptor);
  std::vector<int64_t> desc(w, w + 3 + 2 * m->rank);
  char *aligned = reinterpret_cast<char *>(static_cast<intptr_t>(w[1]));
  int64_t dev =
      static_cast<int64_t>(reinterpret_cast<intptr_t>(blocks[aligned].dev));
  desc[0] = desc[1] = dev;
  descs.push_back(std::move(desc));
  refs.push_back({m->rank, descs.back().data()});
  return &refs.back();
}

int32_t Mirror::download() {
  for (auto &[host, b] : blocks)
    if (b.copy && host)
      if (int32_t rc = comet_rt_memcpy(ctx, host, b.dev, b.bytes))
        return rc;
  return COMET_RT_SUCCESS;
}

} // namespace comet::test

#ifdef COMET_TEST_CUDA
// The CUDA binary skips (exit 77) only where the machine has no CUDA
// device or no driver; any other error fails.
int main(int argc, char **argv) {
  comet_rt_context *probe = comet_rt_context_create();
  int32_t rc = comet_rt_context_set_device(probe, COMET_RT_DEVICE_CUDA);
  std::string why = comet_rt_last_error();
  comet_rt_context_destroy(probe);
  if (rc != 0) {
    bool absent = why.find("no CUDA device") != std::string::npos;
    std::fprintf(absent ? stdout : stderr, "%s: %s%s\n", argv[0], why.c_str(),
                 absent ? "; skipping" : "");
    return absent ? 77 : 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
#endif
