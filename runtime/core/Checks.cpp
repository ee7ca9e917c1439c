//===- Checks.cpp - The contract's checks ---------------------------------===//
//
// One function, and so one error text, per check. Messages name operands
// and attributes as abi.def does.
//
//===----------------------------------------------------------------------===//
#include "Checks.h"
#include "Context.h"
#include "Shapes.h"
#include "comet/runtime/codec.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace comet::rt::checks {

namespace {

/// "x [2x3]".
std::string desc(const Tensor &t) {
  return concat(t.name, " ", shapeStr(t.dims));
}

} // namespace

int32_t sameShape(Call &c, Ts ts) {
  const Tensor *first = nullptr;
  for (const Tensor *t : ts) {
    if (!t->present)
      continue;
    if (!first)
      first = t;
    else if (t->dims != first->dims)
      return c.fail(desc(*t), " must have ", first->name, "'s shape ",
                    shapeStr(first->dims));
  }
  return COMET_RT_SUCCESS;
}

int32_t sameNumel(Call &c, Ts ts) {
  const Tensor *first = nullptr;
  for (const Tensor *t : ts) {
    if (!t->present)
      continue;
    if (!first)
      first = t;
    else if (t->numel() != first->numel())
      return c.fail(desc(*t), " must have as many elements as ", desc(*first));
  }
  return COMET_RT_SUCCESS;
}

int32_t rank(Call &c, const Tensor &t, int64_t lo, int64_t hi) {
  if (!t.present || (t.rank() >= lo && t.rank() <= hi))
    return COMET_RT_SUCCESS;
  if (lo == hi)
    return c.fail(desc(t), " must have rank ", lo);
  return c.fail(desc(t), " must have a rank in [", lo, ", ", hi, "]");
}

int32_t numel(Call &c, const Tensor &t, int64_t n, const char *what) {
  if (!t.present || t.numel() == n)
    return COMET_RT_SUCCESS;
  std::string expected = std::to_string(n);
  if (std::string(what) != expected)
    expected = concat(what, " = ", n);
  return c.fail(desc(t), " has ", t.numel(), " elements, expected ", expected);
}

int32_t oneOf(Call &c, const char *name, int64_t v,
              std::initializer_list<int64_t> allowed) {
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end())
    return COMET_RT_SUCCESS;
  std::string list;
  for (int64_t a : allowed)
    list += (list.empty() ? "" : ", ") + std::to_string(a);
  return c.fail(name, " is ", v, ", expected one of ", list);
}

int32_t inRange(Call &c, const char *name, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi)
    return COMET_RT_SUCCESS;
  return c.fail(name, " is ", v, ", expected a value in [", lo, ", ", hi, "]");
}

int32_t positive(Call &c, const char *name, int64_t v) {
  return v > 0 ? COMET_RT_SUCCESS : c.fail(name, " is ", v, ", expected > 0");
}

int32_t nonneg(Call &c, const char *name, int64_t v) {
  return v >= 0 ? COMET_RT_SUCCESS : c.fail(name, " is ", v, ", expected >= 0");
}

int32_t finite(Call &c, const char *name, double v) {
  return std::isfinite(v) ? COMET_RT_SUCCESS
                          : c.fail(name, " must be finite, got ", v);
}

int32_t axis(Call &c, const char *name, int64_t axis, const Tensor &t) {
  if (axis >= -t.rank() && axis < t.rank())
    return COMET_RT_SUCCESS;
  return c.fail(name, " ", axis, " is out of range for ", desc(t));
}

int32_t broadcast(Call &c, const Tensor &out, Ts ins) {
  std::vector<int64_t> want;
  bool ok = true;
  std::string names;
  for (const Tensor *t : ins) {
    names += (names.empty() ? "" : " and ") + desc(*t);
    std::vector<int64_t> next;
    ok = ok && broadcastShape(want, t->dims, next);
    want = next;
  }
  if (ok && want == out.dims)
    return COMET_RT_SUCCESS;
  return c.fail(names, " do not broadcast to ", desc(out));
}

int64_t dimOf(const Tensor &t, int64_t i) {
  i = normAxis(i, t.rank());
  return t.present && i >= 0 && i < t.rank() ? t.dim(i) : -1;
}

int64_t rowsOf(const Tensor &t, int64_t axis) {
  axis = normAxis(axis, t.rank());
  return axis >= 0 && axis <= t.rank() ? product(t.dims, 0, axis) : -1;
}

int64_t colsOf(const Tensor &t, int64_t axis) {
  axis = normAxis(axis, t.rank());
  return axis >= 0 && axis <= t.rank() ? product(t.dims, axis, t.dims.size())
                                       : -1;
}

int32_t convShape(Call &c, const Tensor &x, const Tensor &w, const Tensor &y,
                  int64_t sH, int64_t sW, int64_t pT, int64_t pL, int64_t pB,
                  int64_t pR, int64_t dH, int64_t dW, int64_t group) {
  if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4)
    return c.fail(desc(x), ", ", desc(w), " and ", desc(y),
                  " must be 4-D (NCHW)");
  if (!(sH > 0 && sW > 0 && dH > 0 && dW > 0 && group > 0 && pT >= 0 &&
        pL >= 0 && pB >= 0 && pR >= 0))
    return c.fail("bad strides, dilations, pads or group");
  int64_t n = x.dim(0), ch = x.dim(1), h = x.dim(2), wd = x.dim(3);
  int64_t m = w.dim(0), kh = w.dim(2), kw = w.dim(3);
  if (ch % group != 0 || m % group != 0 || w.dim(1) != ch / group)
    return c.fail(desc(w), " does not fit C=", ch, " group=", group);
  int64_t oh = (h + pT + pB - ((kh - 1) * dH + 1)) / sH + 1;
  int64_t ow = (wd + pL + pR - ((kw - 1) * dW + 1)) / sW + 1;
  std::vector<int64_t> want = {n, m, oh, ow};
  if (y.dims != want)
    return c.fail(y.name, " is ", shapeStr(y.dims), ", expected ",
                  shapeStr(want));
  return COMET_RT_SUCCESS;
}

int32_t gemmShape(Call &c, const Tensor &a, const Tensor &b, const Tensor &cc,
                  const Tensor &y, float beta, int64_t transA, int64_t transB) {
  if (a.rank() != 2 || b.rank() != 2 || y.rank() != 2)
    return c.fail(desc(a), ", ", desc(b), " and ", desc(y), " must be 2-D");
  int64_t m = transA ? a.dim(1) : a.dim(0), k = transA ? a.dim(0) : a.dim(1);
  int64_t kb = transB ? b.dim(1) : b.dim(0), n = transB ? b.dim(0) : b.dim(1);
  if (k != kb || y.dim(0) != m || y.dim(1) != n)
    return c.fail(desc(a), ", ", desc(b), " and ", desc(y),
                  " do not fit trans_a=", transA, " trans_b=", transB);
  if (!cc.present || beta == 0.0f)
    return COMET_RT_SUCCESS;
  std::vector<int64_t> strides;
  if (cc.rank() > 2 || !broadcastStrides(cc.dims, y.dims, strides))
    return c.fail(desc(cc), " does not broadcast to ", shapeStr(y.dims));
  return COMET_RT_SUCCESS;
}

int32_t matmulShape(Call &c, const Tensor &a, const Tensor &b,
                    const Tensor &y) {
  if (a.rank() < 1 || b.rank() < 1)
    return c.fail(desc(a), " and ", desc(b), " must have rank >= 1");
  std::vector<int64_t> ad = a.dims, bd = b.dims;
  bool aVec = ad.size() == 1, bVec = bd.size() == 1;
  if (aVec)
    ad.insert(ad.begin(), 1);
  if (bVec)
    bd.push_back(1);
  if (ad.back() != bd[bd.size() - 2])
    return c.fail("inner dims differ: ", desc(a), ", ", desc(b));
  std::vector<int64_t> batch;
  if (!broadcastShape(std::vector<int64_t>(ad.begin(), ad.end() - 2),
                      std::vector<int64_t>(bd.begin(), bd.end() - 2), batch))
    return c.fail("batch dims of ", desc(a), " and ", desc(b),
                  " do not broadcast");
  if (!aVec)
    batch.push_back(ad[ad.size() - 2]);
  if (!bVec)
    batch.push_back(bd.back());
  if (y.dims != batch)
    return c.fail(y.name, " is ", shapeStr(y.dims), ", expected ",
                  shapeStr(batch));
  return COMET_RT_SUCCESS;
}

int32_t fusedMatmulShape(Call &c, const Tensor &a, const Tensor &b,
                         const Tensor &y, int64_t transA, int64_t transB) {
  if (a.rank() < 2 || b.rank() < 2)
    return c.fail(desc(a), " and ", desc(b), " must have rank >= 2");
  int64_t ra = a.rank(), rb = b.rank();
  int64_t m = transA ? a.dim(ra - 1) : a.dim(ra - 2),
          k = transA ? a.dim(ra - 2) : a.dim(ra - 1);
  int64_t kb = transB ? b.dim(rb - 1) : b.dim(rb - 2),
          n = transB ? b.dim(rb - 2) : b.dim(rb - 1);
  if (k != kb)
    return c.fail("inner dims differ: ", desc(a), ", ", desc(b),
                  " trans_a=", transA, " trans_b=", transB);
  std::vector<int64_t> batch;
  if (!broadcastShape(std::vector<int64_t>(a.dims.begin(), a.dims.end() - 2),
                      std::vector<int64_t>(b.dims.begin(), b.dims.end() - 2),
                      batch))
    return c.fail("batch dims of ", desc(a), " and ", desc(b),
                  " do not broadcast");
  batch.push_back(m);
  batch.push_back(n);
  if (y.numel() != product(batch, 0, batch.size()) || y.rank() < 2 ||
      y.dim(y.rank() - 2) != m || y.dim(y.rank() - 1) != n)
    return c.fail(desc(y), " does not hold the product ", shapeStr(batch));
  return COMET_RT_SUCCESS;
}

int32_t inferenceHasOnlyY(Call &c, int64_t trainingMode, const Tensor &rm,
                          const Tensor &rv, const Tensor &sm,
                          const Tensor &si) {
  if (trainingMode || !(rm.present || rv.present || sm.present || si.present))
    return COMET_RT_SUCCESS;
  return c.fail("inference mode (training_mode 0) has only the y output");
}

int32_t lossLabels(Call &c, const Tensor &scores, const Tensor &labels,
                   int64_t ignoreIndex, int64_t hasIgnore) {
  std::vector<int64_t> want = scores.dims;
  want.erase(want.begin() + 1);
  if (labels.dims != want)
    return c.fail(labels.name, " is ", shapeStr(labels.dims), ", expected ",
                  shapeStr(want), " for ", desc(scores));
  int64_t classes = scores.dim(1);
  const int64_t *l = labels.hostAs<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    if (!(hasIgnore && l[i] == ignoreIndex) && (l[i] < 0 || l[i] >= classes))
      return c.fail("label ", l[i], " at ", i, " is not in [0, ", classes, ")");
  return COMET_RT_SUCCESS;
}

int32_t lossElements(Call &c, const Tensor &loss, const Tensor &scores,
                     int64_t reduction) {
  int64_t want =
      reduction == COMET_RT_REDUCTION_NONE
          ? scores.dim(0) * product(scores.dims, 2, scores.dims.size())
          : 1;
  if (loss.numel() == want)
    return COMET_RT_SUCCESS;
  return c.fail(desc(loss), " has ", loss.numel(), " elements, expected ", want,
                " for reduction ", reduction);
}

int32_t maxpoolShape(Call &c, const Tensor &x, const Tensor &y, int64_t kH,
                     int64_t kW, int64_t sH, int64_t sW, int64_t pT, int64_t pL,
                     int64_t pB, int64_t pR, int64_t dH, int64_t dW) {
  if (x.rank() != 4 || y.rank() != 4)
    return c.fail(desc(x), " and ", desc(y), " must be 4-D (NCHW)");
  if (!(kH > 0 && kW > 0 && sH > 0 && sW > 0 && dH > 0 && dW > 0 && pT >= 0 &&
        pL >= 0 && pB >= 0 && pR >= 0))
    return c.fail("bad kernel, strides, dilations or pads");
  if (y.dim(0) != x.dim(0) || y.dim(1) != x.dim(1))
    return c.fail(desc(y), " does not fit ", desc(x));
  int64_t h = x.dim(2), w = x.dim(3), oh = y.dim(2), ow = y.dim(3);
  // Floor and ceil mode outputs both allowed; each window must start
  // inside the padded input.
  int64_t floorH = (h + pT + pB - ((kH - 1) * dH + 1)) / sH + 1;
  int64_t floorW = (w + pL + pR - ((kW - 1) * dW + 1)) / sW + 1;
  if (!((oh == floorH || oh == floorH + 1) &&
        (ow == floorW || ow == floorW + 1) && (oh - 1) * sH < h + pT &&
        (ow - 1) * sW < w + pL))
    return c.fail(y.name, " spatial dims ", oh, "x", ow,
                  " do not fit the pooling (floor gives ", floorH, "x", floorW,
                  ")");
  return COMET_RT_SUCCESS;
}

int32_t indicesInRange(Call &c, const Tensor &indices, const Tensor &dx) {
  int64_t total = dx.numel();
  const int64_t *id = indices.hostAs<int64_t>();
  for (int64_t i = 0; i < indices.numel(); ++i)
    if (id[i] < 0 || id[i] >= total)
      return c.fail("index ", id[i], " at ", i, " is outside ", dx.name, " (",
                    total, " elements)");
  return COMET_RT_SUCCESS;
}

namespace {
/// Whether the window at output `i` along one axis (size n) holds an
/// element of the input.
bool windowHits(int64_t i, int64_t n, int64_t k, int64_t s, int64_t p,
                int64_t d) {
  for (int64_t a = 0; a < k; ++a)
    if (int64_t at = i * s - p + a * d; at >= 0 && at < n)
      return true;
  return false;
}
} // namespace

int32_t maxpoolWindowsFit(Call &c, const Tensor &x, const Tensor &y, int64_t kH,
                          int64_t kW, int64_t sH, int64_t sW, int64_t pT,
                          int64_t pL, int64_t dH, int64_t dW) {
  if (kH * kW > 256)
    return c.fail("a ", kH, "x", kW, " window has ", kH * kW,
                  " positions, more than a byte holds (256)");
  for (int64_t i = 0; i < y.dim(2); ++i)
    if (!windowHits(i, x.dim(2), kH, sH, pT, dH))
      return c.fail("the windows of output row ", i, " hold no element of ",
                    desc(x), " (all padding)");
  for (int64_t j = 0; j < y.dim(3); ++j)
    if (!windowHits(j, x.dim(3), kW, sW, pL, dW))
      return c.fail("the windows of output column ", j, " hold no element of ",
                    desc(x), " (all padding)");
  return COMET_RT_SUCCESS;
}

int32_t windowPositionsInRange(Call &c, const Tensor &positions,
                               const Tensor &dx, int64_t kH, int64_t kW,
                               int64_t sH, int64_t sW, int64_t pT, int64_t pL,
                               int64_t dH, int64_t dW) {
  int64_t h = dx.dim(2), w = dx.dim(3);
  int64_t oh = positions.dim(2), ow = positions.dim(3);
  int64_t planes = positions.dim(0) * positions.dim(1);
  const uint8_t *q = positions.hostAs<uint8_t>();
  // Whether every position of a window row (column) lies inside dX: there
  // a position is valid when it names a row of the window, a table lookup.
  // A stem's positions are tens of MB a step.
  std::vector<uint8_t> rowInside(oh), colInside(ow);
  for (int64_t i = 0; i < oh; ++i)
    rowInside[i] = i * sH - pT >= 0 && i * sH - pT + (kH - 1) * dH < h;
  for (int64_t j = 0; j < ow; ++j)
    colInside[j] = j * sW - pL >= 0 && j * sW - pL + (kW - 1) * dW < w;
  auto valid = [&](int64_t i, int64_t j, uint8_t v) {
    int64_t a = v / kW, b = v % kW;
    if (a >= kH)
      return false;
    if (rowInside[i] && colInside[j])
      return true;
    int64_t hh = i * sH - pT + a * dH, ww = j * sW - pL + b * dW;
    return hh >= 0 && hh < h && ww >= 0 && ww < w;
  };
  // The first bad position of each plane, in parallel; the lowest is named.
  int64_t firstBad = -1;
#pragma omp parallel for schedule(static) if (planes * oh * ow > (1 << 20))
  for (int64_t p = 0; p < planes; ++p) {
    int64_t o = p * oh * ow, bad = -1;
    for (int64_t i = 0; i < oh && bad < 0; ++i)
      for (int64_t j = 0; j < ow; ++j, ++o)
        if (!valid(i, j, q[o])) {
          bad = o;
          break;
        }
    if (bad >= 0) {
#pragma omp critical(cometWindowPositions)
      if (firstBad < 0 || bad < firstBad)
        firstBad = bad;
    }
  }
  if (firstBad >= 0)
    return c.fail("position ", int64_t(q[firstBad]), " at ", firstBad,
                  " is not an element of its ", kH, "x", kW, " window inside ",
                  desc(dx));
  return COMET_RT_SUCCESS;
}

int32_t globalPoolShape(Call &c, const Tensor &x, const Tensor &y) {
  if (x.rank() >= 3 && y.rank() == x.rank() && y.dim(0) == x.dim(0) &&
      y.dim(1) == x.dim(1) && y.numel() == x.dim(0) * x.dim(1))
    return COMET_RT_SUCCESS;
  return c.fail(desc(x), " and ", desc(y),
                " do not fit [N,C,...] -> [N,C,1,...]");
}

int32_t avgpoolShape(Call &c, const Tensor &x, const Tensor &y, int64_t kH,
                     int64_t kW, int64_t sH, int64_t sW, int64_t pT, int64_t pL,
                     int64_t pB, int64_t pR) {
  if (x.rank() != 4 || y.rank() != 4)
    return c.fail(desc(x), " and ", desc(y), " must be 4-D (NCHW)");
  if (!(kH > 0 && kW > 0 && sH > 0 && sW > 0))
    return c.fail("kernel and strides must be positive");
  if (!(pT >= 0 && pL >= 0 && pB >= 0 && pR >= 0 && pT < kH && pB < kH &&
        pL < kW && pR < kW))
    return c.fail("pads must lie in [0, kernel)");
  if (y.dim(0) != x.dim(0) || y.dim(1) != x.dim(1))
    return c.fail(desc(y), " does not fit ", desc(x));
  int64_t spanH = x.dim(2) + pT + pB - kH, spanW = x.dim(3) + pL + pR - kW;
  if (!(spanH >= 0 && spanW >= 0 && y.dim(2) == spanH / sH + 1 &&
        y.dim(3) == spanW / sW + 1))
    return c.fail(y.name, " spatial dims ", y.dim(2), "x", y.dim(3),
                  " are not the pooling's (floor mode) of ", desc(x));
  return COMET_RT_SUCCESS;
}

int32_t padShape(Call &c, const Tensor &x, const Tensor &pads,
                 const Tensor &y) {
  int64_t r = x.rank();
  if (y.rank() != r || pads.numel() != 2 * r)
    return c.fail(desc(x), " and ", desc(y), " need one rank and ", 2 * r,
                  " pads, got ", pads.numel());
  const int64_t *p = pads.hostAs<int64_t>();
  for (int64_t i = 0; i < r; ++i) {
    // In 128 bits: pads are data.
    __int128 want = __int128(x.dim(i)) + p[i] + p[r + i];
    if (want != y.dim(i))
      return c.fail(desc(y), " is not ", desc(x), " padded by pads ",
                    shapeStr(std::vector<int64_t>(p, p + 2 * r)));
  }
  return COMET_RT_SUCCESS;
}

int32_t dropoutParams(Call &c, const Tensor &ratio,
                      const Tensor &trainingMode) {
  if (ratio.present && ratio.numel() != 1)
    return c.fail(ratio.name, " must hold one element");
  if (trainingMode.present && trainingMode.numel() != 1)
    return c.fail(trainingMode.name, " must hold one element");
  float r = dropoutRatio(ratio);
  if (!(r >= 0.0f && r < 1.0f))
    return c.fail("ratio must lie in [0, 1), got ", std::to_string(r));
  return COMET_RT_SUCCESS;
}

int32_t reshapeShape(Call &c, const Tensor &x, const Tensor &shape,
                     const Tensor &y, int64_t allowzero) {
  std::vector<int64_t> dims(shape.numel());
  const int64_t *s = shape.hostAs<int64_t>();
  int64_t known = 1, infer = -1;
  for (int64_t i = 0; i < shape.numel(); ++i) {
    int64_t v = s[i];
    if (v == 0 && !allowzero) {
      if (i >= x.rank())
        return c.fail("0 at ", i, " of ", shape.name, " has no input dim");
      v = x.dim(i);
    }
    if (v == -1) {
      if (infer >= 0)
        return c.fail(shape.name, " has more than one -1");
      infer = i;
      continue;
    }
    if (v < 0)
      return c.fail("bad dim ", v, " in ", shape.name);
    dims[i] = v;
    known *= v;
  }
  if (infer >= 0) {
    if (known <= 0 || x.numel() % known != 0)
      return c.fail("cannot infer the -1 dim of ", shape.name, " for ",
                    desc(x));
    dims[infer] = x.numel() / known;
  }
  if (dims != y.dims || y.numel() != x.numel())
    return c.fail(shape.name, " gives ", shapeStr(dims), ", ", desc(y), ", ",
                  desc(x));
  return COMET_RT_SUCCESS;
}

int32_t flattenShape(Call &c, const Tensor &x, const Tensor &y, int64_t axis) {
  int64_t a = normAxis(axis, x.rank());
  if (a < 0 || a > x.rank())
    return c.fail("axis ", axis, " is out of range for ", desc(x));
  int64_t outer = product(x.dims, 0, a);
  int64_t inner = outer ? x.numel() / outer : 0;
  std::vector<int64_t> want = {outer, inner};
  if (y.dims != want)
    return c.fail(y.name, " is ", shapeStr(y.dims), ", expected ",
                  shapeStr(want));
  return COMET_RT_SUCCESS;
}

int32_t shapeSlice(Call &c, const Tensor &x, const Tensor &y, int64_t start,
                   int64_t end) {
  int64_t r = x.rank();
  auto clampDim = [r](int64_t v) {
    return std::clamp<int64_t>(normAxis(v, r), 0, r);
  };
  int64_t count = std::max<int64_t>(clampDim(end) - clampDim(start), 0);
  if (y.numel() != count)
    return c.fail(desc(y), " has ", y.numel(), " elements, expected ", count);
  return COMET_RT_SUCCESS;
}

int32_t expandShape(Call &c, const Tensor &x, const Tensor &shape,
                    const Tensor &y) {
  const int64_t *s = shape.hostAs<int64_t>();
  std::vector<int64_t> shp(s, s + shape.numel()), want;
  if (!broadcastShape(x.dims, shp, want))
    return c.fail(desc(x), " and ", shape.name, " ", shapeStr(shp),
                  " do not broadcast");
  if (want != y.dims)
    return c.fail(y.name, " is ", shapeStr(y.dims), ", expected ",
                  shapeStr(want));
  return COMET_RT_SUCCESS;
}

int32_t reduceShape(Call &c, const Tensor &x, const Tensor &axes,
                    const Tensor &y, int64_t keepdims, int64_t noopEmptyAxes) {
  if (!axes.present && noopEmptyAxes) {
    if (y.numel() != x.numel())
      return c.fail("noop with empty axes needs ", y.name, " of ", desc(x),
                    "'s size");
    return COMET_RT_SUCCESS;
  }
  std::vector<bool> reduced;
  if (std::string why = reducedAxes(x.rank(), axes, reduced); !why.empty())
    return c.fail(why);
  std::vector<int64_t> want;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (!reduced[i] || keepdims)
      want.push_back(reduced[i] ? 1 : x.dim(i));
  if (y.dims != want)
    return c.fail(y.name, " is ", shapeStr(y.dims), ", expected ",
                  shapeStr(want));
  return COMET_RT_SUCCESS;
}

int32_t reduceMeanShape(Call &c, const Tensor &x, const Tensor &axes,
                        const Tensor &y, int64_t keepdims) {
  return reduceShape(c, x, axes, y, keepdims, /*noopEmptyAxes=*/0);
}

int32_t transposeShape(Call &c, const Tensor &x, const Tensor &y,
                       const Tensor &perm) {
  int64_t r = x.rank();
  if (perm.numel() != r || y.rank() != r)
    return c.fail(perm.name, " has ", perm.numel(), " entries for ", desc(x),
                  " and ", desc(y));
  std::vector<bool> used(r, false);
  std::vector<int64_t> want(r);
  const int64_t *p = perm.hostAs<int64_t>();
  for (int64_t i = 0; i < r; ++i) {
    if (p[i] < 0 || p[i] >= r || used[p[i]])
      return c.fail(perm.name, " is not a permutation");
    used[p[i]] = true;
    want[i] = x.dim(p[i]);
  }
  if (want != y.dims)
    return c.fail(y.name, " is ", shapeStr(y.dims), ", expected ",
                  shapeStr(want));
  return COMET_RT_SUCCESS;
}

int32_t sliceShape(Call &c, const Tensor &x, const Tensor &starts,
                   const Tensor &ends, const Tensor &axes, const Tensor &steps,
                   const Tensor &y) {
  SliceSpec s;
  if (std::string why = sliceSpec(x.dims, starts, ends, axes, steps, s);
      !why.empty())
    return c.fail(why);
  if (s.count != y.dims)
    return c.fail(desc(y), " is not the slice ", shapeStr(s.count));
  return COMET_RT_SUCCESS;
}

int32_t sliceGradShape(Call &c, const Tensor &dy, const Tensor &shape,
                       const Tensor &starts, const Tensor &ends,
                       const Tensor &axes, const Tensor &steps,
                       const Tensor &dx) {
  const int64_t *s = shape.hostAs<int64_t>();
  if (std::vector<int64_t>(s, s + shape.numel()) != dx.dims)
    return c.fail(desc(dx), " is not of ", shape.name, " ",
                  shapeStr(std::vector<int64_t>(s, s + shape.numel())));
  SliceSpec spec;
  if (std::string why = sliceSpec(dx.dims, starts, ends, axes, steps, spec);
      !why.empty())
    return c.fail(why);
  if (spec.count != dy.dims)
    return c.fail(desc(dy), " is not the slice ", shapeStr(spec.count));
  return COMET_RT_SUCCESS;
}

int32_t fitsInt64(Call &c, const Tensor &x) {
  const float *p = x.hostAs<float>();
  for (int64_t i = 0; i < x.numel(); ++i)
    if (!(std::isfinite(p[i]) && std::fabs(p[i]) < 9.2e18f))
      return c.fail(p[i], " at ", i, " does not fit in i64");
  return COMET_RT_SUCCESS;
}

int32_t nonzeroDivisor(Call &c, const Tensor &b) {
  const int64_t *p = b.hostAs<int64_t>();
  for (int64_t i = 0; i < b.numel(); ++i)
    if (p[i] == 0)
      return c.fail(b.name, " is 0 at ", i, ": an integer mod by zero");
  return COMET_RT_SUCCESS;
}

int32_t gatherShape(Call &c, const Tensor &data, const Tensor &indices,
                    const Tensor &y, int64_t axis) {
  int64_t r = data.rank(), a = normAxis(axis, r);
  if (a < 0 || a >= r)
    return c.fail("axis ", axis, " is out of range for ", desc(data));
  std::vector<int64_t> want(data.dims.begin(), data.dims.begin() + a);
  want.insert(want.end(), indices.dims.begin(), indices.dims.end());
  want.insert(want.end(), data.dims.begin() + a + 1, data.dims.end());
  if (y.dims != want)
    return c.fail(y.name, " is ", shapeStr(y.dims), ", expected ",
                  shapeStr(want));
  int64_t n = data.dim(a);
  const int64_t *p = indices.hostAs<int64_t>();
  for (int64_t k = 0; k < indices.numel(); ++k)
    if (p[k] < -n || p[k] >= n)
      return c.fail("index ", p[k], " is out of range for a dim of size ", n);
  return COMET_RT_SUCCESS;
}

int32_t partShape(Call &c, const Tensor &whole, const Tensor &part,
                  int64_t axis, int64_t offset) {
  if (whole.rank() != part.rank())
    return c.fail(desc(whole), " and ", desc(part), " differ in rank");
  int64_t a = normAxis(axis, whole.rank());
  if (a < 0 || a >= whole.rank())
    return c.fail("axis ", axis, " is out of range for ", desc(whole));
  for (int64_t d = 0; d < whole.rank(); ++d)
    if (d != a && whole.dim(d) != part.dim(d))
      return c.fail(desc(whole), " and ", desc(part), " differ in dim ", d);
  int64_t len = part.dim(a), total = whole.dim(a);
  if (offset < 0 || offset + len > total)
    return c.fail("[", offset, ", ", offset + len,
                  ") is out of range for a dim of size ", total);
  return COMET_RT_SUCCESS;
}

int32_t knownCodec(Call &c, int32_t codec) {
  if (codec == COMET_RT_CODEC_RAW || codec == COMET_RT_CODEC_SZ ||
      codec == COMET_RT_CODEC_MASK)
    return COMET_RT_SUCCESS;
  return c.fail("unknown codec ", codec);
}

namespace {
int32_t liveHandle(Call &c, int64_t handle, HandleInfo &info) {
  // The context's record first: a backend reads only a handle it made.
  if (c.ctx->isLiveHandle(handle) && c.backend.handleInfo &&
      c.backend.handleInfo(c.ctx, handle, info))
    return COMET_RT_SUCCESS;
  return c.fail("handle ", handle, " is not a live handle of the ",
                c.backend.name, " backend");
}
} // namespace

int32_t freeableHandle(Call &c, int64_t handle) {
  if (handle == 0 || c.ctx->isLiveHandle(handle))
    return COMET_RT_SUCCESS;
  return c.fail("handle ", handle, " is not a live handle of this context");
}

int32_t handleElements(Call &c, int64_t handle, const Tensor &y) {
  HandleInfo info;
  COMET_RT_TRY(liveHandle(c, handle, info));
  if (y.numel() != info.numElements)
    return c.fail(desc(y), " has ", y.numel(), " elements, the handle ",
                  info.numElements);
  return COMET_RT_SUCCESS;
}

int32_t maskHandle(Call &c, int64_t handle, const Tensor &dy,
                   const Tensor &dx) {
  HandleInfo info;
  COMET_RT_TRY(liveHandle(c, handle, info));
  int64_t n = info.numElements;
  if (info.codec != COMET_RT_CODEC_MASK ||
      info.streamBytes != info.blockBytes || info.payloadBytes != (n + 7) / 8 ||
      info.payloadBytes > info.streamBytes)
    return c.fail("the handle is not a mask stream");
  if (dy.dims != dx.dims || dy.dims != info.dims)
    return c.fail(desc(dy), ", ", desc(dx), " and the handle's ",
                  shapeStr(info.dims), " differ");
  return COMET_RT_SUCCESS;
}

int32_t observeKey(Call &c, int64_t slot, int64_t consumer) {
  if (slot >= 0 && slot < (1 << 20) && consumer >= 0 && consumer < 1024)
    return COMET_RT_SUCCESS;
  return c.fail("slot ", slot, ", consumer ", consumer,
                " is not a key (slot in [0, 2^20), consumer in [0, 1024))");
}

} // namespace comet::rt::checks
