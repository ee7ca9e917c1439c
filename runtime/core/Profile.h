//===- Profile.h - Per-entry time of one context (COMET_RT_PROFILE) -------===//
//
// With COMET_RT_PROFILE set when a context is created (a file to append
// to, or "-" for stderr), every runtime call on that context waits for its
// device before it returns, and its wall time is added to its entry's row.
// Waiting makes each row the entry's own time, host and device, and makes
// an asynchronous device fault surface in the call that caused it: that
// call's entry is named on stderr at once. The table is written when the
// context is destroyed. Off, a call pays one null check.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_CORE_PROFILE_H
#define COMET_RUNTIME_CORE_PROFILE_H

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct comet_rt_context;

namespace comet::rt {

class Profile {
public:
  /// A profile when COMET_RT_PROFILE names where to write it, else null.
  static std::unique_ptr<Profile> fromEnvironment();

  /// One call of entry (kNumEntries at most) that took ns; ctx is waited
  /// for first and a failing wait is reported naming the entry.
  void finish(comet_rt_context *ctx, int32_t entry, const char *name,
              int64_t startNs);
  /// The table, sorted by total time, appended to the file (or stderr).
  void write(int32_t deviceKind) const;

  static int64_t nowNs();

private:
  explicit Profile(std::string path) : path(std::move(path)) {}
  struct Row {
    const char *name = nullptr;
    int64_t calls = 0, totalNs = 0, maxNs = 0;
  };
  std::string path;
  mutable std::mutex mu;
  std::vector<Row> rows;
  bool faultReported = false;
};

} // namespace comet::rt

#endif
