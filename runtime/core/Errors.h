//===- Errors.h - The runtime's error reporting (not installed) -----------===//
//
// One error slot per thread (comet_rt_last_error), one status vocabulary
// (comet/runtime/status.h). The contract's checks, the backends and the
// runtime services all report through fail().
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_CORE_ERRORS_H
#define COMET_RUNTIME_CORE_ERRORS_H

#include "comet/runtime/types.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace comet::rt {

/// Records msg as this thread's last error and returns code (or aborts when
/// abort-on-error is set).
int32_t fail(int32_t code, const std::string &msg);
/// Clears the last error; returns COMET_RT_SUCCESS.
int32_t ok();
/// Prints msg and aborts: for misuse that cannot be reported (bad free).
[[noreturn]] void fatal(const char *msg);

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

/// "[2x3x4]".
std::string shapeStr(const std::vector<int64_t> &dims);

} // namespace comet::rt

#define COMET_RT_TRY(expr)                                                     \
  do {                                                                         \
    int32_t cometRtStatus_ = (expr);                                           \
    if (cometRtStatus_ != COMET_RT_SUCCESS)                                    \
      return cometRtStatus_;                                                   \
  } while (0)

#endif // COMET_RUNTIME_CORE_ERRORS_H
