//===- SlotStats.cpp - Per-slot training statistics, C ABI ----------------===//
//
// comet/runtime/slot_stats.h. Reductions run on the host (OpenMP), over a
// copy of a device tensor; the table keeps a few sums per (slot, consumer).
//
//===----------------------------------------------------------------------===//
#include "SlotStats.h"
#include "Context.h"
#include "comet/kernels/CodecFormat.h"
#include "comet/runtime/device.h"
#include "comet/runtime/handles.h"
#include "comet/runtime/slot_stats.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace {

using comet::rt::Tensor;

/// Where X was non-zero (observe_act), for observe_grad's masked moment.
struct ActMask {
  int64_t batch = 0;
  /// nnz(X_n) / |X_n| per sample.
  std::vector<double> perSample;
  /// Rank-4 X only: [B, H, W] non-zero fraction over channels.
  int64_t h = 0, w = 0;
  std::vector<float> spatial;
  double overall = 0;
  /// Groups of equal non-zero values, for the coherent excess (SlotStats.h):
  /// X viewed as [batch, channels, positions]; group[(n * channels + c) *
  /// positions + p] is 0 or a group of channel c (1..kMaxGroups). Empty when
  /// no channel has a group.
  int64_t channels = 0, positions = 0;
  std::vector<uint8_t> group;
};

/// A value shared by at least kMinGroup elements of a channel forms a group;
/// the kMaxGroups largest per channel are kept.
constexpr int64_t kMinGroup = 4;
constexpr int kMaxGroups = 15;

/// Finds each channel's groups of equal non-zero values in X [b, c, pos].
/// A group is found through a run of equal consecutive elements (along
/// positions, then samples): a constant region has them, and recording one
/// candidate per run keeps this a few linear passes instead of a sort of
/// every value. Equal values that never sit next to each other are not
/// grouped (for conv/BatchNorm outputs such coincidences are rare).
void findGroups(const float *x, int64_t b, int64_t c, int64_t pos,
                ActMask &mask) {
  std::vector<uint8_t> group(static_cast<size_t>(b * c * pos), 0);
  bool any = false;
  // Bit patterns, so that +0/-0 and NaN payloads never merge by accident.
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
#pragma omp parallel for schedule(dynamic) reduction(|| : any)
  for (int64_t ch = 0; ch < c; ++ch) {
    auto at = [&](int64_t k) { return (k / pos * c + ch) * pos + k % pos; };
    const int64_t len = b * pos;
    std::vector<uint32_t> cand;
    for (int64_t k = 1; k < len; ++k) {
      float f = x[at(k)], prev = x[at(k - 1)];
      if (f != 0.0f && f == f && bits(f) == bits(prev) &&
          (k < 2 || bits(x[at(k - 2)]) != bits(f)))
        cand.push_back(bits(f));
    }
    if (cand.empty())
      continue;
    std::sort(cand.begin(), cand.end());
    cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
    std::vector<int64_t> count(cand.size(), 0);
    for (int64_t k = 0; k < len; ++k) {
      uint32_t u = bits(x[at(k)]);
      auto it = std::lower_bound(cand.begin(), cand.end(), u);
      if (it != cand.end() && *it == u)
        ++count[it - cand.begin()];
    }
    std::vector<std::pair<int64_t, uint32_t>> runs; // (count, bits)
    for (size_t g = 0; g < cand.size(); ++g)
      if (count[g] >= kMinGroup)
        runs.push_back({count[g], cand[g]});
    if (runs.empty())
      continue;
    std::sort(runs.begin(), runs.end(), [](const auto &l, const auto &r) {
      return l.first != r.first ? l.first > r.first : l.second < r.second;
    });
    if (runs.size() > static_cast<size_t>(kMaxGroups))
      runs.resize(kMaxGroups);
    any = true;
    for (int64_t k = 0; k < len; ++k) {
      uint32_t u = bits(x[at(k)]);
      for (size_t g = 0; g < runs.size(); ++g)
        if (runs[g].second == u) {
          group[at(k)] = static_cast<uint8_t>(g + 1);
          break;
        }
    }
  }
  if (!any)
    return;
  mask.channels = c;
  mask.positions = pos;
  mask.group = std::move(group);
}

/// The coherent excess of dY [b, o, positions of dY] against X's groups:
/// sum over (o, c) of sum_g (S_g^2 - T_g), S_g (T_g) the sum of dY (dY^2)
/// over the dY elements whose X element (at `xPos(dyPos)`) is in group g of
/// channel c. Adds it to `excess` and o * c to `pairs`; `diagonal`: the
/// (c, c) pairs alone, and c to `pairs` (comet_rt_slot_set_diagonal), and
/// with `perChannel` (c entries) each channel's own excess added to its
/// entry.
template <typename XPos>
void coherentExcess(const float *dy, int64_t b, int64_t o, int64_t dyPos,
                    const ActMask &mask, XPos xPos, double &excess,
                    int64_t &pairs, bool diagonal = false,
                    std::vector<double> *perChannel = nullptr) {
  const int64_t c = mask.channels, pos = mask.positions;
  if (diagonal && o != c)
    return;
  std::vector<int64_t> at(static_cast<size_t>(dyPos));
  for (int64_t i = 0; i < dyPos; ++i)
    at[i] = xPos(i);
  // Only channels with a group contribute.
  auto hasGroup = [&](int64_t ch) {
    for (int64_t n = 0; n < b; ++n)
      for (int64_t k = 0; k < pos; ++k)
        if (mask.group[(n * c + ch) * pos + k])
          return true;
    return false;
  };
  std::vector<int64_t> grouped;
  for (int64_t ch = 0; ch < c; ++ch)
    if (hasGroup(ch))
      grouped.push_back(ch);
  const int64_t ng = static_cast<int64_t>(grouped.size());
  const int64_t outs = diagonal ? 1 : o;
  double total = 0;
  // One (o, c) pair per iteration: dY's and X's rows are read in order.
#pragma omp parallel for schedule(static) reduction(+ : total)
  for (int64_t pc = 0; pc < outs * ng; ++pc) {
    const int64_t ch = grouped[pc % ng], oc = diagonal ? ch : pc / ng;
    double sum[kMaxGroups + 1] = {0}, sq = 0;
    for (int64_t n = 0; n < b; ++n) {
      const float *d = dy + (n * o + oc) * dyPos;
      const uint8_t *g = mask.group.data() + (n * c + ch) * pos;
      for (int64_t i = 0; i < dyPos; ++i)
        if (uint8_t id = g[at[i]]) {
          double v = d[i];
          sum[id] += v;
          sq += v * v;
        }
    }
    double e = -sq;
    for (int id = 1; id <= kMaxGroups; ++id)
      e += sum[id] * sum[id];
    total += e;
    // Diagonal: one iteration per channel, so no two write one entry.
    if (diagonal && perChannel)
      (*perChannel)[ch] += e;
  }
  excess += total;
  pairs += diagonal ? c : o * c;
}

/// One context's observations.
struct Table {
  std::atomic<int32_t> enabled{0};
  /// comet_rt_slot_stats_diagnostics: the error-model check's figures.
  std::atomic<int32_t> diagnostics{0};
  std::mutex mu;
  std::map<std::pair<int64_t, int64_t>, comet_rt_slot_observation> obs;
  std::map<int64_t, std::shared_ptr<const ActMask>> masks;
  /// Slots whose observe_act keeps no ActMask (comet_rt_slot_set_moments).
  std::set<int64_t> noMoments;
  /// (slot, consumer) keys of comet_rt_slot_set_diagonal.
  std::set<std::pair<int64_t, int64_t>> diagonal;
  /// Per (slot, consumer), each channel's (dim 1) error weight from the
  /// latest observe_grad (dY's energy there plus, for a diagonal consumer,
  /// the channel's coherent excess), which observe_max weights its
  /// per-channel values by.
  std::map<std::pair<int64_t, int64_t>, std::vector<double>> channelWeight;
  /// Per (slot, consumer), observe_max's tensor, element-wise max since
  /// the clear (comet_rt_slot_get_aux_channels).
  std::map<std::pair<int64_t, int64_t>, std::vector<double>> auxChannels;
};

Table &table(comet_rt_context *ctx) {
  return comet::rt::resolve(ctx)->state<Table>();
}

comet_rt_slot_observation empty() {
  comet_rt_slot_observation o{};
  o.aux_max = -std::numeric_limits<double>::infinity();
  return o;
}

constexpr int64_t kMaxSlot = 1 << 20;

bool validKey(int64_t slot, int64_t consumer) {
  return slot >= 0 && slot < kMaxSlot && consumer >= 0 && consumer < 1024;
}

/// The common start of the observe calls: the context's table when it
/// collects, with t's elements readable on the host (a copy on a device
/// context), else null (the call ends with `status`).
Table *beginObserve(comet_rt_context *ctx, const Tensor &t,
                    std::vector<float> &copy, const float *&data, int64_t &n,
                    int32_t &status) {
  status = COMET_RT_SUCCESS;
  Table &tab = table(ctx);
  if (!tab.enabled.load(std::memory_order_relaxed))
    return nullptr;
  n = t.numel();
  data = static_cast<const float *>(t.host);
  if (!data) {
    copy.resize(n);
    status = comet_rt_memcpy(ctx, copy.data(), t.data, n * sizeof(float));
    if (status != COMET_RT_SUCCESS)
      return nullptr;
    data = copy.data();
  }
  return &tab;
}

template <typename Fn>
int32_t update(Table &t, int64_t slot, int64_t consumer, Fn fn) {
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.obs.find({slot, consumer});
  if (it == t.obs.end())
    it = t.obs.emplace(std::make_pair(slot, consumer), empty()).first;
  fn(it->second);
  it->second.calls += 1;
  return COMET_RT_SUCCESS;
}

} // namespace

extern "C" {

void comet_rt_slot_stats_enable(comet_rt_context *ctx, int32_t on) {
  table(ctx).enabled.store(on ? 1 : 0, std::memory_order_relaxed);
}

int32_t comet_rt_slot_stats_enabled(comet_rt_context *ctx) {
  return table(ctx).enabled.load(std::memory_order_relaxed);
}

void comet_rt_slot_stats_diagnostics(comet_rt_context *ctx, int32_t on) {
  table(ctx).diagnostics.store(on ? 1 : 0, std::memory_order_relaxed);
}

} // extern "C"

// What the slot_observe_* entries of a backend call: the statistics run on
// the host (a device's tensor is copied, only while collection is on).
namespace comet::rt {

int32_t observeAct(comet_rt_context *ctx, const slot_observe_act_args &a) {
  const int64_t slot = a.slot, consumer = a.consumer;
  const float *p;
  int64_t n;
  std::vector<float> copy;
  const std::vector<int64_t> &shape = a.x.dims;
  int32_t status;
  Table *tab = beginObserve(ctx, a.x, copy, p, n, status);
  if (!tab)
    return status;
  Table &t = *tab;
  bool moments;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    moments = !t.noMoments.count(slot);
  }
  int64_t nz = 0;
  auto mask = std::make_shared<ActMask>();
  if (moments && !shape.empty() && shape[0] > 0 && n > 0) {
    int64_t b = shape[0], per = n / b;
    mask->batch = b;
    mask->perSample.assign(b, 0);
    bool conv = shape.size() == 4;
    int64_t c = conv ? shape[1] : 1, hw = conv ? shape[2] * shape[3] : 0;
    if (conv) {
      mask->h = shape[2];
      mask->w = shape[3];
      mask->spatial.assign(b * hw, 0);
    }
    // The per-sample counts add up to the whole tensor's, so one pass
    // gives both.
#pragma omp parallel for reduction(+ : nz) schedule(static)
    for (int64_t s = 0; s < b; ++s) {
      const float *q = p + s * per;
      int64_t cnt = 0;
      for (int64_t i = 0; i < per; ++i)
        cnt += q[i] != 0.0f;
      nz += cnt;
      mask->perSample[s] = double(cnt) / double(per);
      if (conv) {
        float *f = mask->spatial.data() + s * hw;
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t i = 0; i < hw; ++i)
            f[i] += q[ch * hw + i] != 0.0f;
        for (int64_t i = 0; i < hw; ++i)
          f[i] /= float(c);
      }
    }
  } else {
#pragma omp parallel for reduction(+ : nz) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      nz += p[i] != 0.0f;
  }
  if (moments) {
    mask->overall = n ? double(nz) / double(n) : 0;
    if ((shape.size() == 4 || shape.size() == 2) && shape[0] > 0 && n > 0)
      findGroups(p, shape[0], shape[1], n / (shape[0] * shape[1]), *mask);
    std::lock_guard<std::mutex> lock(t.mu);
    t.masks[slot] = std::move(mask);
  }
  // The codec's error at the slot's bound, element by element through the
  // format's quantizer: what the consumers will read instead of X.
  namespace fmt = comet::kernels::format;
  double errSq = 0;
  int64_t errN = 0;
  fmt::QuantParams qp;
  if (moments && t.diagnostics.load(std::memory_order_relaxed) &&
      fmt::quantParams(comet_rt_slot_get_eb(ctx, slot), qp)) {
#pragma omp parallel for reduction(+ : errSq) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      bool bad;
      int32_t q = fmt::quantizeValue<fmt::F32>(p[i], qp, &bad);
      if (!bad) {
        double d = double(p[i]) -
                   double(fmt::F32::toFloat(fmt::dequantize<fmt::F32>(q, qp)));
        errSq += d * d;
      }
    }
    // Over the non-zero elements: a zero is reconstructed exactly, and the
    // consumers' model counts the non-zero ones only (R, the masked M).
    errN = nz;
  }
  return update(t, slot, consumer, [&](comet_rt_slot_observation &o) {
    o.act_elements += n;
    o.act_nonzero += nz;
    o.act_err_sq_sum += errSq;
    o.act_err_elements += errN;
  });
}

int32_t observeGrad(comet_rt_context *ctx, const slot_observe_grad_args &a) {
  const int64_t slot = a.slot, consumer = a.consumer;
  const float *p;
  int64_t n;
  std::vector<float> copy;
  const std::vector<int64_t> &shape = a.dy.dims;
  int32_t status;
  Table *tab = beginObserve(ctx, a.dy, copy, p, n, status);
  if (!tab)
    return status;
  Table &t = *tab;
  double sa = 0, sq = 0;
#pragma omp parallel for reduction(+ : sa, sq) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    double v = p[i];
    sa += std::fabs(v);
    sq += v * v;
  }
  // The weight of each channel (dim 1) in the weight gradient's error:
  // dY's energy there, plus below the channel's coherent excess, so that
  // a per-channel gain (BatchNorm's 1/std, in observe_max) weights both
  // terms of the model as each channel's scale gradient sees them.
  std::vector<double> e;
  if (t.diagnostics.load(std::memory_order_relaxed) && shape.size() >= 2 &&
      shape[0] > 0 && shape[1] > 0 && n > 0) {
    const int64_t b = shape[0], c = shape[1], inner = n / (b * c);
    e.assign(c, 0.0);
#pragma omp parallel for schedule(static)
    for (int64_t ch = 0; ch < c; ++ch) {
      double acc = 0;
      for (int64_t s = 0; s < b; ++s) {
        const float *q = p + (s * c + ch) * inner;
        for (int64_t i = 0; i < inner; ++i)
          acc += double(q[i]) * q[i];
      }
      e[ch] = acc;
    }
  }
  std::shared_ptr<const ActMask> mask;
  bool diagonal;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.masks.find(slot);
    if (it != t.masks.end())
      mask = it->second;
    diagonal = t.diagonal.count({slot, consumer}) != 0;
  }
  double msq = 0, excess = 0;
  int64_t mcount = 0, pairs = 0;
  if (mask && n > 0) {
    mcount = n;
    int64_t b = shape.empty() ? 0 : shape[0];
    if (shape.size() == 4 && !mask->spatial.empty() && b == mask->batch &&
        shape[2] > 0 && shape[3] > 0) {
      // Conv: each output position weighted by X's non-zero fraction at the
      // centre of its receptive field (SlotStats.h).
      int64_t o = shape[1], ho = shape[2], wo = shape[3];
      int64_t sh = std::max<int64_t>(1, mask->h / ho);
      int64_t sw = std::max<int64_t>(1, mask->w / wo);
      int64_t oh = std::max<int64_t>(0, (mask->h - (ho - 1) * sh - 1) / 2);
      int64_t ow = std::max<int64_t>(0, (mask->w - (wo - 1) * sw - 1) / 2);
#pragma omp parallel for reduction(+ : msq) schedule(static)
      for (int64_t s = 0; s < b; ++s) {
        const float *f = mask->spatial.data() + s * mask->h * mask->w;
        for (int64_t y = 0; y < ho; ++y) {
          int64_t hi = std::min(mask->h - 1, y * sh + oh);
          for (int64_t x = 0; x < wo; ++x) {
            int64_t wi = std::min(mask->w - 1, x * sw + ow);
            double r = f[hi * mask->w + wi], g2 = 0;
            for (int64_t c = 0; c < o; ++c) {
              double v = p[((s * o + c) * ho + y) * wo + x];
              g2 += v * v;
            }
            msq += g2 * r;
          }
        }
      }
      if (!mask->group.empty() && mask->positions == mask->h * mask->w)
        coherentExcess(
            p, b, o, ho * wo, *mask,
            [&](int64_t i) {
              int64_t hi = std::min(mask->h - 1, (i / wo) * sh + oh);
              int64_t wi = std::min(mask->w - 1, (i % wo) * sw + ow);
              return hi * mask->w + wi;
            },
            excess, pairs, diagonal,
            int64_t(e.size()) == o && diagonal ? &e : nullptr);
    } else if (b > 0 && b == mask->batch) {
      // Gemm/MatMul over the batch: the sample's non-zero fraction.
      int64_t per = n / b;
#pragma omp parallel for reduction(+ : msq) schedule(static)
      for (int64_t s = 0; s < b; ++s) {
        double g2 = 0;
        for (int64_t i = 0; i < per; ++i) {
          double v = p[s * per + i];
          g2 += v * v;
        }
        msq += g2 * mask->perSample[s];
      }
      if (shape.size() == 2 && !mask->group.empty() && mask->positions == 1)
        coherentExcess(
            p, b, shape[1], 1, *mask, [](int64_t) { return int64_t(0); },
            excess, pairs, diagonal);
    } else {
      msq = sq * mask->overall;
    }
  }
  if (!e.empty()) {
    std::lock_guard<std::mutex> lock(t.mu);
    t.channelWeight[{slot, consumer}] = std::move(e);
  }
  return update(t, slot, consumer, [&](comet_rt_slot_observation &o) {
    o.grad_elements += n;
    o.grad_abs_sum += sa;
    o.grad_sq_sum += sq;
    o.grad_masked_sq_sum += msq;
    o.grad_masked_elements += mcount;
    o.grad_coherent_sum += excess;
    o.grad_coherent_pairs += pairs;
  });
}

int32_t observeMax(comet_rt_context *ctx, const slot_observe_max_args &a) {
  const int64_t slot = a.slot, consumer = a.consumer;
  const float *p;
  int64_t n;
  std::vector<float> copy;
  int32_t status;
  Table *tab = beginObserve(ctx, a.t, copy, p, n, status);
  if (!tab)
    return status;
  double mx = -std::numeric_limits<double>::infinity(), wsq = 0, w = 0;
  std::vector<double> weight;
  {
    std::lock_guard<std::mutex> lock(tab->mu);
    auto it = tab->channelWeight.find({slot, consumer});
    if (it != tab->channelWeight.end())
      weight = it->second;
    std::vector<double> &ch = tab->auxChannels[{slot, consumer}];
    if (int64_t(ch.size()) != n)
      ch.assign(n, -std::numeric_limits<double>::infinity());
    for (int64_t i = 0; i < n; ++i)
      if (std::isfinite(p[i]))
        ch[i] = std::max<double>(ch[i], p[i]);
  }
  const bool weighted = int64_t(weight.size()) == n;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(p[i])) {
      mx = std::max<double>(mx, p[i]);
      if (weighted) {
        wsq += double(p[i]) * p[i] * weight[i];
        w += weight[i];
      }
    }
  return update(*tab, slot, consumer, [&](comet_rt_slot_observation &o) {
    o.aux_max = std::max(o.aux_max, mx);
    o.aux_weighted_sq_sum += wsq;
    o.aux_weight_sum += w;
  });
}

} // namespace comet::rt

extern "C" {

int32_t comet_rt_slot_set_moments(comet_rt_context *ctx, int64_t slot,
                                  int32_t on) {
  if (!validKey(slot, 0))
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  Table &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  if (on)
    t.noMoments.erase(slot);
  else
    t.noMoments.insert(slot);
  return COMET_RT_SUCCESS;
}

int32_t comet_rt_slot_set_diagonal(comet_rt_context *ctx, int64_t slot,
                                   int64_t consumer, int32_t on) {
  if (!validKey(slot, consumer))
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  Table &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  if (on)
    t.diagonal.insert({slot, consumer});
  else
    t.diagonal.erase({slot, consumer});
  return COMET_RT_SUCCESS;
}

int32_t comet_rt_slot_get_observation(comet_rt_context *ctx, int64_t slot,
                                      int64_t consumer,
                                      comet_rt_slot_observation *out) {
  if (!out || !validKey(slot, consumer))
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  Table &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.obs.find({slot, consumer});
  *out = it == t.obs.end() ? empty() : it->second;
  return COMET_RT_SUCCESS;
}

int64_t comet_rt_slot_get_aux_channels(comet_rt_context *ctx, int64_t slot,
                                       int64_t consumer, double *out,
                                       int64_t capacity) {
  if (!validKey(slot, consumer) || capacity < 0 || (capacity && !out))
    return -COMET_RT_ERROR_INVALID_ARGUMENT;
  Table &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.auxChannels.find({slot, consumer});
  if (it == t.auxChannels.end())
    return 0;
  const std::vector<double> &ch = it->second;
  std::copy_n(ch.begin(), std::min<int64_t>(capacity, int64_t(ch.size())), out);
  return int64_t(ch.size());
}

void comet_rt_slot_observations_clear(comet_rt_context *ctx) {
  Table &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  t.obs.clear();
  t.masks.clear();
  t.channelWeight.clear();
  t.auxChannels.clear();
}

} // extern "C"
