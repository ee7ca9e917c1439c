//===- Profile.cpp - Per-entry time of one context ------------------------===//
#include "Profile.h"
#include "Context.h"
#include "Contract.h"
#include "Errors.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace comet::rt {

std::unique_ptr<Profile> Profile::fromEnvironment() {
  const char *v = std::getenv("COMET_RT_PROFILE");
  if (!v || !*v)
    return nullptr;
  return std::unique_ptr<Profile>(new Profile(v));
}

int64_t Profile::nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Profile::finish(comet_rt_context *ctx, int32_t entry, const char *name,
                     int64_t startNs) {
  if (ctx->device && ctx->device->synchronize(ctx) != COMET_RT_SUCCESS) {
    std::lock_guard<std::mutex> lock(mu);
    if (!faultReported)
      std::fprintf(stderr,
                   "comet-rt profile: the device failed in comet_rt_%s: %s\n",
                   name, comet_rt_last_error());
    faultReported = true;
  }
  int64_t ns = nowNs() - startNs;
  std::lock_guard<std::mutex> lock(mu);
  if (rows.size() <= size_t(entry))
    rows.resize(size_t(entry) + 1);
  Row &r = rows[size_t(entry)];
  r.name = name;
  ++r.calls;
  r.totalNs += ns;
  r.maxNs = std::max(r.maxNs, ns);
}

void Profile::write(int32_t deviceKind) const {
  std::lock_guard<std::mutex> lock(mu);
  std::vector<Row> sorted;
  int64_t total = 0;
  for (const Row &r : rows)
    if (r.calls) {
      sorted.push_back(r);
      total += r.totalNs;
    }
  std::sort(sorted.begin(), sorted.end(),
            [](const Row &a, const Row &b) { return a.totalNs > b.totalNs; });
  FILE *f = path == "-" ? stderr : std::fopen(path.c_str(), "a");
  if (!f) {
    std::fprintf(stderr, "comet-rt profile: cannot write %s\n", path.c_str());
    return;
  }
  std::fprintf(f,
               "# comet-rt profile: one context on %s, %.3f ms in runtime "
               "calls (each waited for)\n%-34s %8s %11s %10s %10s %6s\n",
               deviceKind == COMET_RT_DEVICE_CUDA ? "cuda" : "cpu", total / 1e6,
               "entry", "calls", "total_ms", "mean_us", "max_us", "share");
  for (const Row &r : sorted)
    std::fprintf(f, "%-34s %8lld %11.3f %10.1f %10.1f %5.1f%%\n", r.name,
                 static_cast<long long>(r.calls), r.totalNs / 1e6,
                 r.totalNs / 1e3 / double(r.calls), r.maxNs / 1e3,
                 total ? 100.0 * double(r.totalNs) / double(total) : 0.0);
  if (f != stderr)
    std::fclose(f);
}

} // namespace comet::rt
