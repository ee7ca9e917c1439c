//===- Internal.h - Shared helpers of the runtime implementation ----------===//
//
// Error reporting, views of MLIR memref descriptors and kernel temporaries
// (the oneDNN engine, stream and primitive cache are in Dnnl.h). Not
// installed.
//
//===----------------------------------------------------------------------===//

#ifndef COMET_RUNTIME_EXEC_INTERNAL_H
#define COMET_RUNTIME_EXEC_INTERNAL_H

#include "comet/runtime/alloc.h"
#include "comet/runtime/types.h"

#include <cstdint>
#include <new>
#include <string>
#include <vector>

namespace comet::rt {

/// Records msg as this thread's last error and returns code (or aborts when
/// abort-on-error is set).
int32_t fail(int32_t code, const std::string &msg);
/// Clears the last error; returns COMET_RT_SUCCESS.
int32_t ok();
/// Prints msg and aborts: for misuse that cannot be reported (bad free).
[[noreturn]] void fatal(const char *msg);

/// A dense row-major view of an unranked memref argument.
struct Tensor {
  void *data = nullptr;
  std::vector<int64_t> dims;
  bool present = false; ///< false for a null pointer or a 0-element optional

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  }
  int64_t dim(int64_t i) const { return dims[i]; }
  template <typename T> T *as() const { return static_cast<T *>(data); }
  float *f() const { return as<float>(); }
  int64_t *i64() const { return as<int64_t>(); }
};

/// Reads m into t; elemBytes sizes the offset. Fails (with a message naming
/// what) on a null descriptor or a non-contiguous layout. optional: a null
/// m, or a memref with 0 elements, gives present = false and succeeds.
int32_t view(const comet_rt_memref *m, size_t elemBytes, const char *what,
             Tensor &t, bool optional = false);

std::string shapeStr(const std::vector<int64_t> &dims);

/// Reserves n numbers of ctx's random stream (Random.cpp): the stream's
/// seed and the first counter of the reservation.
void reserveRandom(comet_rt_context *ctx, uint64_t n, uint64_t &seed,
                   uint64_t &base);
/// Dropout's ratio[1]? (default 0.5, must lie in [0, 1)) and
/// training_mode[1]? (default false); `op` names the caller in errors.
int32_t dropoutParams(const char *op, comet_rt_memref *ratio,
                      comet_rt_memref *trainingMode, float &ratioOut,
                      bool &training);

/// A kernel temporary from comet_rt_alloc (category workspace of the
/// calling context), freed at the
/// end of its scope. Throws std::bad_alloc when the allocator fails, so it
/// belongs inside guard() (Dnnl.h), which reports that as out of memory.
class Workspace {
public:
  Workspace(comet_rt_context *ctx, size_t bytes)
      : p(comet_rt_alloc(ctx, bytes, COMET_RT_MEM_WORKSPACE)) {
    if (!p)
      throw std::bad_alloc();
  }
  ~Workspace() { comet_rt_free(p); }
  Workspace(const Workspace &) = delete;
  Workspace &operator=(const Workspace &) = delete;
  void *get() const { return p; }
  float *f() const { return static_cast<float *>(p); }

private:
  void *p;
};

} // namespace comet::rt

#define COMET_RT_TRY(expr)                                                     \
  do {                                                                         \
    int32_t cometRtStatus_ = (expr);                                           \
    if (cometRtStatus_ != COMET_RT_SUCCESS)                                    \
      return cometRtStatus_;                                                   \
  } while (0)

#define COMET_RT_CHECK(cond, ...)                                              \
  do {                                                                         \
    if (!(cond))                                                               \
      return ::comet::rt::fail(COMET_RT_ERROR_INVALID_ARGUMENT,                \
                               ::comet::rt::concat(__VA_ARGS__));              \
  } while (0)

namespace comet::rt {
inline void appendAll(std::string &) {}
template <typename T, typename... Rest>
void appendAll(std::string &s, const T &v, const Rest &...rest) {
  if constexpr (std::is_convertible_v<T, std::string>)
    s += v;
  else
    s += std::to_string(v);
  appendAll(s, rest...);
}
template <typename... Args> std::string concat(const Args &...args) {
  std::string s;
  appendAll(s, args...);
  return s;
}
} // namespace comet::rt

#endif // COMET_RUNTIME_EXEC_INTERNAL_H
