//===- Handles.h - Slot and site bookkeeping of compress (not installed) --===//
//
// What every backend's compress shares: the context's slot table of bounds
// and the per-site statistics (comet/runtime/handles.h).
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_CORE_HANDLES_H
#define COMET_RUNTIME_CORE_HANDLES_H

#include "comet/runtime/context.h"

#include <cstdint>
#include <vector>

namespace comet::rt {

/// What a compress at `site` takes from the context (siteBegin).
struct SiteConfig {
  /// slot's bound for sz with slot >= 0 (defined with the compiled one
  /// when undefined), else the compiled one.
  double eb = 0;
  /// The site's last stream size (0 before its first).
  int64_t prevOut = 0;
  /// The site's sz entropy stage (comet_rt_site_set_entropy; -1: the
  /// codec's process-wide one).
  int32_t entropy = -1;
  /// Measure its fixed-width size too: an sz site's first compression
  /// while comet_rt_sites_measure_fixed_width is on.
  bool measureFixedWidth = false;
  /// One bound per channel of dim 1 (eb times the slot's channel scales,
  /// comet_rt_slot_set_channel_scale), or empty: one bound, eb. A backend
  /// whose codec has no per-channel streams (CUDA) stores at eb, the
  /// tightest of them.
  std::vector<double> channelEb;
};
/// Fills `out` for a compress at `site` with compiled bound `eb` of a
/// tensor of `shape`. Fails (op names the caller) when the bound is not
/// positive and finite, or when the slot's channel scales do not match the
/// tensor's channels (dim 1). Channel bounds are given only where they pay
/// (comet_rt_codec_channel_bounds_pay).
int32_t siteBegin(comet_rt_context *ctx, const char *op, int32_t codec,
                  int64_t slot, int64_t site, double eb,
                  const std::vector<int64_t> &shape, SiteConfig &out);
/// Counts one compress at site: bytesIn of f32 became bytesOut of block.
void siteRecord(comet_rt_context *ctx, int64_t site, int32_t codec,
                int64_t slot, double eb, int64_t bytesIn, int64_t bytesOut);
/// The block the site's first sz compression would have taken without an
/// entropy stage (comet_rt_site_get_fixed_width_bytes).
void siteRecordFixedWidth(comet_rt_context *ctx, int64_t site, int64_t bytes);

/// The handle block header's size, which both backends count with the
/// stream so that one graph reports the same compressed bytes anywhere.
constexpr int64_t kHandleHeaderBytes = 32;

} // namespace comet::rt

#endif // COMET_RUNTIME_CORE_HANDLES_H
