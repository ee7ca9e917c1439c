//===- Handles.cpp - Slots of lossy bounds and compress-site statistics ---===//
//
// comet/runtime/handles.h: the context's slot table, which every backend's
// compress reads its bound from (siteBegin), and the per-site statistics
// it records (siteRecord). The handles themselves are the backends'
// (runtime/backends/<device>/Codec.*).
//
//===----------------------------------------------------------------------===//
#include "Handles.h"
#include "Context.h"
#include "Errors.h"
#include "comet/runtime/codec.h"
#include "comet/runtime/handles.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct SlotTable {
  std::mutex mu;
  std::vector<double> eb; // < 0: undefined
  /// Per slot, each channel's bound over the slot's (empty: one bound).
  std::vector<std::vector<double>> channelScale;
  std::vector<comet_rt_site_stats> sites;
  std::vector<int32_t> entropy;         // per site; -1: the codec's setting
  std::vector<int64_t> fixedWidthBytes; // per site; 0: not measured
  bool measureFixedWidth = false;       // comet_rt_sites_measure_fixed_width
};

/// v[i], grown with `fill` to hold it.
template <typename T> T &grow(std::vector<T> &v, int64_t i, T fill) {
  if (static_cast<size_t>(i) >= v.size())
    v.resize(i + 1, fill);
  return v[i];
}

/// v[i], or `missing` when v does not hold it.
template <typename T> T at(const std::vector<T> &v, int64_t i, T missing) {
  return i >= 0 && static_cast<size_t>(i) < v.size() ? v[i] : missing;
}

SlotTable &table(comet_rt_context *ctx) {
  return comet::rt::resolve(ctx)->state<SlotTable>();
}

} // namespace

namespace comet::rt {

int32_t siteBegin(comet_rt_context *ctx, const char *op, int32_t codec,
                  int64_t slot, int64_t site, double eb,
                  const std::vector<int64_t> &shape, SiteConfig &out) {
  SlotTable &t = table(ctx);
  size_t numScales = 0;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    if (codec == COMET_RT_CODEC_SZ && slot >= 0) {
      double &slotEb = grow(t.eb, slot, -1.0);
      if (slotEb <= 0)
        slotEb = eb;
      eb = slotEb;
      if (static_cast<size_t>(slot) < t.channelScale.size()) {
        const std::vector<double> &scale = t.channelScale[slot];
        numScales = scale.size();
        // Where the table does not pay, one bound: the tightest.
        if (numScales && shape.size() >= 2 &&
            shape.size() <= COMET_RT_CODEC_MAX_RANK &&
            numScales == static_cast<size_t>(shape[1])) {
          uint64_t dims[COMET_RT_CODEC_MAX_RANK];
          std::copy(shape.begin(), shape.end(), dims);
          if (comet_rt_codec_channel_bounds_pay(
                  dims, static_cast<uint32_t>(shape.size())))
            for (double s : scale)
              out.channelEb.push_back(eb * s);
        }
      }
    }
    const comet_rt_site_stats none{0, 0, 0, 0, 0, 0, -1, 0};
    out.prevOut = at(t.sites, site, none).last_bytes_out;
    out.entropy = at(t.entropy, site, -1);
    out.measureFixedWidth =
        codec == COMET_RT_CODEC_SZ && t.measureFixedWidth && out.prevOut == 0;
  }
  out.eb = eb;
  if (codec == COMET_RT_CODEC_SZ && !(eb > 0 && std::isfinite(eb)))
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat(op, ": the bound of site ", site,
                       " is not positive and finite"));
  const int64_t channels = shape.size() >= 2 ? shape[1] : -1;
  if (numScales && channels != static_cast<int64_t>(numScales))
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat(op, ": slot ", slot, " has ", numScales,
                       " channel bounds, its tensor at site ", site, " ",
                       channels, " channels"));
  return COMET_RT_SUCCESS;
}

void siteRecord(comet_rt_context *ctx, int64_t site, int32_t codec,
                int64_t slot, double eb, int64_t bytesIn, int64_t bytesOut) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  comet_rt_site_stats &s =
      grow(t.sites, site, comet_rt_site_stats{0, 0, 0, 0, 0, 0, -1, 0});
  s.calls += 1;
  s.bytes_in += bytesIn;
  s.bytes_out += bytesOut;
  s.last_bytes_in = bytesIn;
  s.last_bytes_out = bytesOut;
  s.codec = codec;
  s.slot = codec == COMET_RT_CODEC_SZ ? slot : -1;
  s.last_eb = codec == COMET_RT_CODEC_SZ ? eb : 0.0;
}

void siteRecordFixedWidth(comet_rt_context *ctx, int64_t site, int64_t bytes) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  grow(t.fixedWidthBytes, site, int64_t(0)) = bytes;
}

} // namespace comet::rt

extern "C" {

const char *comet_rt_handles_last_error(void) { return comet_rt_last_error(); }

double comet_rt_slot_get_eb(comet_rt_context *ctx, int64_t slot) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  return at(t.eb, slot, -1.0);
}

int32_t comet_rt_slot_set_eb(comet_rt_context *ctx, int64_t slot, double eb) {
  if (slot < 0 || slot > (1 << 20) || !(eb > 0 && std::isfinite(eb)))
    return comet::rt::fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                           "comet_rt_slot_set_eb: bad slot or bound");
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  grow(t.eb, slot, -1.0) = eb;
  return COMET_RT_SUCCESS;
}

int32_t comet_rt_slot_set_channel_scale(comet_rt_context *ctx, int64_t slot,
                                        const double *scale, int64_t n) {
  if (slot < 0 || slot > (1 << 20) || n < 0 || n > (int64_t(1) << 24) ||
      (n && !scale))
    return comet::rt::fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                           "comet_rt_slot_set_channel_scale: bad slot or "
                           "channel count");
  // At least 1, so that the slot's bound stays the tightest (what a codec
  // without per-channel streams stores at), and at most 2^20, so that a
  // channel's bound is valid for any slot bound up to 2^-20 of the codec's
  // largest.
  for (int64_t c = 0; c < n; ++c)
    if (!(scale[c] >= 1 && scale[c] <= double(1 << 20)))
      return comet::rt::fail(
          COMET_RT_ERROR_INVALID_ARGUMENT,
          comet::rt::concat("comet_rt_slot_set_channel_scale: the scale of "
                            "channel ",
                            c, " is not in [1, 2^20]"));
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  grow(t.channelScale, slot, std::vector<double>()) =
      std::vector<double>(scale, scale + n);
  return COMET_RT_SUCCESS;
}

int64_t comet_rt_slot_get_channel_scale(comet_rt_context *ctx, int64_t slot,
                                        double *out, int64_t capacity) {
  if (capacity < 0 || (capacity && !out))
    return -COMET_RT_ERROR_INVALID_ARGUMENT;
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  const std::vector<double> none;
  const std::vector<double> &s =
      slot >= 0 && size_t(slot) < t.channelScale.size() ? t.channelScale[slot]
                                                        : none;
  std::copy_n(s.begin(), std::min<int64_t>(capacity, int64_t(s.size())), out);
  return int64_t(s.size());
}

void comet_rt_slots_reset(comet_rt_context *ctx) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  t.eb.clear();
  t.channelScale.clear();
  t.sites.clear();
  t.entropy.clear();
  t.fixedWidthBytes.clear();
}

int64_t comet_rt_num_sites(comet_rt_context *ctx) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  return static_cast<int64_t>(t.sites.size());
}

int32_t comet_rt_site_get_stats(comet_rt_context *ctx, int64_t site,
                                comet_rt_site_stats *out) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  if (!out || site < 0 || static_cast<size_t>(site) >= t.sites.size())
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  *out = t.sites[site];
  return COMET_RT_SUCCESS;
}

int32_t comet_rt_site_set_entropy(comet_rt_context *ctx, int64_t site,
                                  int32_t entropy) {
  if (site < 0 || site > (1 << 20) || entropy < -1 ||
      entropy > COMET_RT_CODEC_ENTROPY_NONE)
    return comet::rt::fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                           "comet_rt_site_set_entropy: bad site or setting");
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  grow(t.entropy, site, -1) = entropy;
  return COMET_RT_SUCCESS;
}

int32_t comet_rt_site_get_entropy(comet_rt_context *ctx, int64_t site) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  return at(t.entropy, site, -1);
}

void comet_rt_sites_measure_fixed_width(comet_rt_context *ctx, int32_t on) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  t.measureFixedWidth = on != 0;
}

int64_t comet_rt_site_get_fixed_width_bytes(comet_rt_context *ctx,
                                            int64_t site) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  return at(t.fixedWidthBytes, site, int64_t(0));
}

} // extern "C"
