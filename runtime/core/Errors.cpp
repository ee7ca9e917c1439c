//===- Errors.cpp - The error slot and the memref layout check ------------===//

#include "Errors.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
thread_local std::string lastError;
bool abortOnError = [] {
  const char *v = std::getenv("COMET_RT_ABORT_ON_ERROR");
  return v && std::strcmp(v, "0") != 0 && *v;
}();
} // namespace

namespace comet::rt {

int32_t fail(int32_t code, const std::string &msg) {
  lastError = msg;
  if (abortOnError) {
    std::fprintf(stderr, "comet runtime error: %s\n", msg.c_str());
    std::abort();
  }
  return code;
}

int32_t ok() {
  lastError.clear();
  return COMET_RT_SUCCESS;
}

void fatal(const char *msg) {
  std::fprintf(stderr, "comet runtime: %s\n", msg);
  std::abort();
}

std::string shapeStr(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "x" : "") + std::to_string(dims[i]);
  return s + "]";
}

} // namespace comet::rt

extern "C" {
const char *comet_rt_last_error(void) { return lastError.c_str(); }
void comet_rt_set_abort_on_error(int enabled) { abortOnError = enabled != 0; }
}

extern "C" const char *comet_rt_memref_view(const comet_rt_memref *m,
                                            size_t elemBytes, int64_t maxRank,
                                            void **data, int64_t *dims,
                                            int64_t *numel) {
  if (!m || !m->descriptor)
    return "null memref";
  if (m->rank < 0 || m->rank > maxRank || m->rank > 16)
    return "bad rank";
  auto *d = static_cast<const comet_rt_memref_desc *>(m->descriptor);
  const int64_t *sizes = d->sizes_and_strides;
  const int64_t *strides = d->sizes_and_strides + m->rank;
  int64_t n = 1;
  for (int64_t i = 0; i < m->rank; ++i) {
    if (sizes[i] < 0)
      return "negative size";
    dims[i] = sizes[i];
    n *= sizes[i];
  }
  // Row-major contiguity; strides of size-1 dims do not matter.
  int64_t expect = 1;
  for (int64_t i = m->rank - 1; i >= 0 && n != 0; --i) {
    if (sizes[i] != 1 && strides[i] != expect)
      return "not contiguous row-major";
    expect *= sizes[i];
  }
  if (!d->aligned && n != 0)
    return "null data";
  *data = static_cast<char *>(d->aligned) +
          d->offset * static_cast<int64_t>(elemBytes);
  *numel = n;
  return nullptr;
}
