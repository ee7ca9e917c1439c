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

#include <cmath>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct SlotTable {
  std::mutex mu;
  std::vector<double> eb; // < 0: undefined
  std::vector<comet_rt_site_stats> sites;
  std::vector<int32_t> entropy;         // per site; -1: the codec's setting
  std::vector<int64_t> fixedWidthBytes; // per site; 0: not measured
};

SlotTable &table(comet_rt_context *ctx) {
  return comet::rt::resolve(ctx)->state<SlotTable>();
}

} // namespace

namespace comet::rt {

int32_t siteBegin(comet_rt_context *ctx, const char *op, int32_t codec,
                  int64_t slot, int64_t site, double &eb, int64_t &prevOut,
                  int32_t &entropy) {
  SlotTable &t = table(ctx);
  prevOut = 0;
  entropy = -1;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    if (codec == COMET_RT_CODEC_SZ && slot >= 0) {
      if (static_cast<size_t>(slot) >= t.eb.size())
        t.eb.resize(slot + 1, -1.0);
      if (t.eb[slot] <= 0)
        t.eb[slot] = eb;
      eb = t.eb[slot];
    }
    if (static_cast<size_t>(site) < t.sites.size())
      prevOut = t.sites[site].last_bytes_out;
    if (static_cast<size_t>(site) < t.entropy.size())
      entropy = t.entropy[site];
  }
  if (codec == COMET_RT_CODEC_SZ && !(eb > 0 && std::isfinite(eb)))
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat(op, ": the bound of site ", site,
                       " is not positive and finite"));
  return COMET_RT_SUCCESS;
}

void siteRecord(comet_rt_context *ctx, int64_t site, int32_t codec,
                int64_t slot, double eb, int64_t bytesIn, int64_t bytesOut) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  if (static_cast<size_t>(site) >= t.sites.size())
    t.sites.resize(site + 1, comet_rt_site_stats{0, 0, 0, 0, 0, 0, -1, 0});
  comet_rt_site_stats &s = t.sites[site];
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
  if (static_cast<size_t>(site) >= t.fixedWidthBytes.size())
    t.fixedWidthBytes.resize(site + 1, 0);
  t.fixedWidthBytes[site] = bytes;
}

} // namespace comet::rt

extern "C" {

const char *comet_rt_handles_last_error(void) { return comet_rt_last_error(); }

double comet_rt_slot_get_eb(comet_rt_context *ctx, int64_t slot) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  if (slot < 0 || static_cast<size_t>(slot) >= t.eb.size())
    return -1.0;
  return t.eb[slot];
}

int32_t comet_rt_slot_set_eb(comet_rt_context *ctx, int64_t slot, double eb) {
  if (slot < 0 || slot > (1 << 20) || !(eb > 0 && std::isfinite(eb)))
    return comet::rt::fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                           "comet_rt_slot_set_eb: bad slot or bound");
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  if (static_cast<size_t>(slot) >= t.eb.size())
    t.eb.resize(slot + 1, -1.0);
  t.eb[slot] = eb;
  return COMET_RT_SUCCESS;
}

void comet_rt_slots_reset(comet_rt_context *ctx) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  t.eb.clear();
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
  if (static_cast<size_t>(site) >= t.entropy.size())
    t.entropy.resize(site + 1, -1);
  t.entropy[site] = entropy;
  return COMET_RT_SUCCESS;
}

int32_t comet_rt_site_get_entropy(comet_rt_context *ctx, int64_t site) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  return site >= 0 && static_cast<size_t>(site) < t.entropy.size()
             ? t.entropy[site]
             : -1;
}

int64_t comet_rt_site_get_fixed_width_bytes(comet_rt_context *ctx,
                                            int64_t site) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  return site >= 0 && static_cast<size_t>(site) < t.fixedWidthBytes.size()
             ? t.fixedWidthBytes[site]
             : 0;
}

} // extern "C"
