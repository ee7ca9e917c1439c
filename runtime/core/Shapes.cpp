//===- Shapes.cpp - Shape arithmetic the checks and backends share --------===//

#include "Shapes.h"
#include "Errors.h"

#include <algorithm>

namespace comet::rt {

int64_t product(const std::vector<int64_t> &d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= d[i];
  return p;
}

std::vector<int64_t> plainStrides(const std::vector<int64_t> &d) {
  std::vector<int64_t> s(d.size());
  int64_t acc = 1;
  for (int64_t i = static_cast<int64_t>(d.size()) - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= d[i];
  }
  return s;
}

bool broadcastShape(const std::vector<int64_t> &a,
                    const std::vector<int64_t> &b, std::vector<int64_t> &out) {
  size_t r = std::max(a.size(), b.size());
  out.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1)
      return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

bool broadcastStrides(const std::vector<int64_t> &in,
                      const std::vector<int64_t> &out,
                      std::vector<int64_t> &strides) {
  if (in.size() > out.size())
    return false;
  size_t off = out.size() - in.size();
  strides.assign(out.size(), 0);
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(in.size()) - 1; i >= 0; --i) {
    int64_t o = out[off + i];
    if (in[i] == o)
      strides[off + i] = o == 1 ? 0 : s;
    else if (in[i] != 1)
      return false;
    s *= in[i];
  }
  return true;
}

std::string sliceSpec(const std::vector<int64_t> &dims, const Tensor &starts,
                      const Tensor &ends, const Tensor &axes,
                      const Tensor &steps, SliceSpec &s) {
  int64_t r = static_cast<int64_t>(dims.size()), n = starts.numel();
  if (starts.rank() != 1 || ends.rank() != 1 || ends.numel() != n)
    return "starts and ends must be 1-D of one length";
  if (axes.present && axes.numel() != n)
    return "axes must have starts' length";
  if (steps.present && steps.numel() != n)
    return "steps must have starts' length";
  const int64_t *pStarts = starts.hostAs<int64_t>(),
                *pEnds = ends.hostAs<int64_t>(),
                *pAxes = axes.present ? axes.hostAs<int64_t>() : nullptr,
                *pSteps = steps.present ? steps.hostAs<int64_t>() : nullptr;
  s.start.assign(r, 0);
  s.step.assign(r, 1);
  s.count = dims;
  std::vector<bool> seen(r, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t given = pAxes ? pAxes[i] : i, a = normAxis(given, r);
    if (a < 0 || a >= r || seen[a])
      return concat("bad or repeated axis ", given);
    seen[a] = true;
    int64_t d = dims[a], st = pSteps ? pSteps[i] : 1;
    if (st == 0)
      return "step 0";
    int64_t b = pStarts[i], e = pEnds[i];
    if (b < 0)
      b += d;
    if (e < 0)
      e += d;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      s.count[a] = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      s.count[a] = b > e ? (b - e - st - 1) / -st : 0;
    }
    s.start[a] = b;
    s.step[a] = st;
  }
  return "";
}

std::string reducedAxes(int64_t rank, const Tensor &axes,
                        std::vector<bool> &reduced) {
  reduced.assign(rank, !axes.present);
  if (!axes.present)
    return "";
  const int64_t *p = axes.hostAs<int64_t>();
  for (int64_t i = 0; i < axes.numel(); ++i) {
    int64_t a = normAxis(p[i], rank);
    if (a < 0 || a >= rank)
      return concat("axis ", p[i], " out of range for rank ", rank);
    reduced[a] = true;
  }
  return "";
}

float dropoutRatio(const Tensor &ratio) {
  return ratio.present ? ratio.hostAs<float>()[0] : 0.5f;
}

bool dropoutTraining(const Tensor &trainingMode) {
  return trainingMode.present && trainingMode.hostAs<uint8_t>()[0] != 0;
}

} // namespace comet::rt
