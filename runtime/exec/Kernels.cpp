//===- Kernels.cpp - Loss, pooling and shape kernels ----------------------===//
//
// SoftmaxCrossEntropyLoss(+Grad) on oneDNN's log-softmax plus per-sample
// glue; MaxPool with ORT's flat Indices (oneDNN's pooling workspace is an
// opaque in-window offset, so one direct pass computes values and indices);
// MaxPoolGrad as an index scatter; GlobalAveragePool; shape-only ops.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Dnnl.h"
#include "comet/runtime/exec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

using namespace comet::rt;

namespace {

struct LossShape {
  int64_t n, c, d; // scores [n, c, d...] flattened to [n, c, d]
};

int32_t lossShape(const char *op, const Tensor &scores, const Tensor &labels,
                  const Tensor &weights, LossShape &s) {
  COMET_RT_CHECK(scores.rank() >= 2, op, ": scores must have rank >= 2");
  s.n = scores.dim(0);
  s.c = scores.dim(1);
  s.d = 1;
  for (int64_t i = 2; i < scores.rank(); ++i)
    s.d *= scores.dim(i);
  std::vector<int64_t> ld = scores.dims;
  ld.erase(ld.begin() + 1);
  COMET_RT_CHECK(labels.dims == ld, op, ": labels are ", shapeStr(labels.dims),
                 ", expected ", shapeStr(ld));
  COMET_RT_CHECK(!weights.present || weights.numel() == s.c, op,
                 ": weights need ", s.c, " elements");
  return COMET_RT_SUCCESS;
}

/// Per-sample weights (0 for ignored) and their sum; fails on a label out
/// of range.
int32_t sampleWeights(const char *op, const LossShape &s, const int64_t *lbl,
                      const Tensor &weights, int64_t ignoreIndex,
                      bool hasIgnore, std::vector<float> &w, double &sumW) {
  w.resize(s.n * s.d);
  sumW = 0;
  for (int64_t i = 0; i < s.n * s.d; ++i) {
    int64_t l = lbl[i];
    if (hasIgnore && l == ignoreIndex) {
      w[i] = 0;
      continue;
    }
    COMET_RT_CHECK(l >= 0 && l < s.c, op, ": label ", l, " at ", i,
                   " is not in [0, ", s.c, ")");
    w[i] = weights.present ? weights.f()[l] : 1.0f;
    sumW += w[i];
  }
  return COMET_RT_SUCCESS;
}

} // namespace

extern "C" {

int32_t comet_rt_cpu_softmax_cross_entropy_loss(
    comet_rt_context *ctx, comet_rt_memref *sm, comet_rt_memref *lm,
    comet_rt_memref *wm, comet_rt_memref *lossm, comet_rt_memref *lpm,
    int64_t reduction, int64_t ignoreIndex, int64_t hasIgnore) {
  const char *op = "softmax_cross_entropy_loss";
  Tensor scores, labels, weights, loss, lp;
  COMET_RT_TRY(view(sm, 4, "sce scores", scores));
  COMET_RT_TRY(view(lm, 8, "sce labels", labels));
  COMET_RT_TRY(view(wm, 4, "sce weights", weights, true));
  COMET_RT_TRY(view(lossm, 4, "sce loss", loss));
  COMET_RT_TRY(view(lpm, 4, "sce log_prob", lp, true));
  LossShape s;
  COMET_RT_TRY(lossShape(op, scores, labels, weights, s));
  COMET_RT_CHECK(reduction >= 0 && reduction <= 2, op, ": bad reduction");
  COMET_RT_CHECK(reduction == COMET_RT_REDUCTION_NONE
                     ? loss.numel() == s.n * s.d
                     : loss.numel() == 1,
                 op, ": loss has ", loss.numel(), " elements");
  COMET_RT_CHECK(!lp.present || lp.dims == scores.dims, op,
                 ": log_prob must have the scores' shape");
  std::vector<float> w;
  double sumW;
  COMET_RT_TRY(sampleWeights(op, s, labels.i64(), weights, ignoreIndex,
                             hasIgnore != 0, w, sumW));
  return guard(op, [&] {
    // Without a log_prob output, the log-softmax goes to a temporary.
    Tensor lpBuf = lp;
    std::optional<Workspace> tmp;
    if (!lp.present) {
      tmp.emplace(ctx, sizeof(float) * scores.numel());
      lpBuf.data = tmp->get();
      lpBuf.dims = scores.dims;
    }
    COMET_RT_TRY(softmaxImpl(ctx, op, scores, lpBuf, 1, /*log=*/true));
    const float *l = lpBuf.f();
    const int64_t *lbl = labels.i64();
    double total = 0;
    for (int64_t i = 0; i < s.n * s.d; ++i) {
      int64_t n = i / s.d, d = i % s.d;
      float v = w[i] == 0 ? 0.0f : -w[i] * l[(n * s.c + lbl[i]) * s.d + d];
      if (reduction == COMET_RT_REDUCTION_NONE)
        loss.f()[i] = v;
      total += v;
    }
    if (reduction == COMET_RT_REDUCTION_SUM)
      loss.f()[0] = (float)total;
    else if (reduction == COMET_RT_REDUCTION_MEAN)
      loss.f()[0] = (float)(total / sumW);
    return ok();
  });
}

int32_t comet_rt_cpu_softmax_cross_entropy_loss_grad(
    comet_rt_context *ctx, comet_rt_memref *dym, comet_rt_memref *lpm,
    comet_rt_memref *lm, comet_rt_memref *wm, comet_rt_memref *dxm,
    int64_t reduction, int64_t ignoreIndex, int64_t hasIgnore) {
  const char *op = "softmax_cross_entropy_loss_grad";
  Tensor dy, lp, labels, weights, dx;
  COMET_RT_TRY(view(dym, 4, "sce_grad dY", dy));
  COMET_RT_TRY(view(lpm, 4, "sce_grad log_prob", lp));
  COMET_RT_TRY(view(lm, 8, "sce_grad labels", labels));
  COMET_RT_TRY(view(wm, 4, "sce_grad weights", weights, true));
  COMET_RT_TRY(view(dxm, 4, "sce_grad dX", dx));
  LossShape s;
  COMET_RT_TRY(lossShape(op, lp, labels, weights, s));
  COMET_RT_CHECK(reduction >= 0 && reduction <= 2, op, ": bad reduction");
  COMET_RT_CHECK(dx.dims == lp.dims, op, ": dX must have log_prob's shape");
  COMET_RT_CHECK(reduction == COMET_RT_REDUCTION_NONE ? dy.numel() == s.n * s.d
                                                      : dy.numel() == 1,
                 op, ": dY has ", dy.numel(), " elements");
  std::vector<float> w;
  double sumW;
  COMET_RT_TRY(sampleWeights(op, s, labels.i64(), weights, ignoreIndex,
                             hasIgnore != 0, w, sumW));
  const float *l = lp.f();
  float *out = dx.f();
  const int64_t *lbl = labels.i64();
  float div = reduction == COMET_RT_REDUCTION_MEAN ? (float)sumW : 1.0f;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < s.n * s.d; ++i) {
    int64_t n = i / s.d, d = i % s.d;
    float g = reduction == COMET_RT_REDUCTION_NONE ? dy.f()[i] : dy.f()[0];
    float scale = w[i] * g / div;
    for (int64_t c = 0; c < s.c; ++c) {
      int64_t at = (n * s.c + c) * s.d + d;
      float p = std::exp(l[at]);
      out[at] = w[i] == 0 ? 0.0f : (p - (c == lbl[i] ? 1.0f : 0.0f)) * scale;
    }
  }
  return ok();
}

int32_t comet_rt_cpu_maxpool2d(comet_rt_context *ctx, comet_rt_memref *xm,
                               comet_rt_memref *ym, comet_rt_memref *im,
                               int64_t kH, int64_t kW, int64_t sH, int64_t sW,
                               int64_t pT, int64_t pL, int64_t pB, int64_t pR,
                               int64_t dH, int64_t dW, int64_t storageOrder) {
  const char *op = "maxpool2d";
  Tensor x, y, ind;
  COMET_RT_TRY(view(xm, 4, "maxpool X", x));
  COMET_RT_TRY(view(ym, 4, "maxpool Y", y));
  COMET_RT_TRY(view(im, 8, "maxpool Indices", ind, true));
  COMET_RT_CHECK(x.rank() == 4 && y.rank() == 4, op, ": X and Y must be 4-D");
  COMET_RT_CHECK(kH > 0 && kW > 0 && sH > 0 && sW > 0 && dH > 0 && dW > 0 &&
                     pT >= 0 && pL >= 0 && pB >= 0 && pR >= 0 &&
                     (storageOrder == 0 || storageOrder == 1),
                 op, ": bad kernel, strides, dilations, pads or storage_order");
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  int64_t oh = y.dim(2), ow = y.dim(3);
  COMET_RT_CHECK(y.dim(0) == n && y.dim(1) == c, op, ": Y ", shapeStr(y.dims),
                 " does not fit X ", shapeStr(x.dims));
  // Floor and ceil mode outputs both allowed; each window must start
  // inside the padded input.
  int64_t floorH = (h + pT + pB - ((kH - 1) * dH + 1)) / sH + 1;
  int64_t floorW = (w + pL + pR - ((kW - 1) * dW + 1)) / sW + 1;
  COMET_RT_CHECK((oh == floorH || oh == floorH + 1) &&
                     (ow == floorW || ow == floorW + 1) &&
                     (oh - 1) * sH < h + pT && (ow - 1) * sW < w + pL,
                 op, ": Y spatial dims ", oh, "x", ow,
                 " do not fit the pooling (floor gives ", floorH, "x", floorW,
                 ")");
  COMET_RT_CHECK(!ind.present || ind.dims == y.dims, op,
                 ": Indices must have Y's shape");
  const float *xd = x.f();
  float *yd = y.f();
  int64_t *id = ind.present ? ind.i64() : nullptr;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < n * c; ++p) {
    const float *plane = xd + p * h * w;
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t bh = -1, bw = -1;
        for (int64_t a = 0; a < kH; ++a) {
          int64_t hh = i * sH - pT + a * dH;
          if (hh < 0 || hh >= h)
            continue;
          for (int64_t b = 0; b < kW; ++b) {
            int64_t ww = j * sW - pL + b * dW;
            if (ww < 0 || ww >= w)
              continue;
            float v = plane[hh * w + ww];
            if (bh < 0 || v > best) {
              best = v;
              bh = hh;
              bw = ww;
            }
          }
        }
        int64_t o = (p * oh + i) * ow + j;
        yd[o] = best;
        if (id)
          id[o] = bh < 0              ? -1
                  : storageOrder == 0 ? p * h * w + bh * w + bw
                                      : p * h * w + bw * h + bh;
      }
  }
  return ok();
}

int32_t comet_rt_cpu_maxpool_grad(comet_rt_context *ctx, comet_rt_memref *dym,
                                  comet_rt_memref *im, comet_rt_memref *dxm) {
  const char *op = "maxpool_grad";
  Tensor dy, ind, dx;
  COMET_RT_TRY(view(dym, 4, "maxpool_grad dY", dy));
  COMET_RT_TRY(view(im, 8, "maxpool_grad Indices", ind));
  COMET_RT_TRY(view(dxm, 4, "maxpool_grad dX", dx));
  COMET_RT_CHECK(ind.numel() == dy.numel(), op,
                 ": Indices and dY must have as many elements");
  int64_t total = dx.numel();
  const int64_t *id = ind.i64();
  for (int64_t i = 0; i < ind.numel(); ++i)
    COMET_RT_CHECK(id[i] >= 0 && id[i] < total, op, ": index ", id[i], " at ",
                   i, " is outside dX (", total, " elements)");
  std::memset(dx.data, 0, sizeof(float) * total);
  // Planes of dY scatter into disjoint planes of dX when dX and dY share
  // N*C; otherwise scatter serially.
  const float *g = dy.f();
  float *out = dx.f();
  int64_t planes = dx.rank() >= 2 ? dx.dim(0) * dx.dim(1) : 0;
  bool byPlane = planes > 0 && dy.rank() == dx.rank() && dy.rank() >= 2 &&
                 dy.dim(0) * dy.dim(1) == planes;
  if (byPlane) {
    int64_t inPlane = total / planes, outPlane = dy.numel() / planes;
    for (int64_t i = 0; i < dy.numel() && byPlane; ++i)
      byPlane = id[i] / std::max<int64_t>(inPlane, 1) == i / outPlane;
    if (byPlane) {
#pragma omp parallel for schedule(static)
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t i = p * outPlane; i < (p + 1) * outPlane; ++i)
          out[id[i]] += g[i];
      return ok();
    }
  }
  for (int64_t i = 0; i < dy.numel(); ++i)
    out[id[i]] += g[i];
  return ok();
}

int32_t comet_rt_cpu_global_average_pool(comet_rt_context *ctx,
                                         comet_rt_memref *xm,
                                         comet_rt_memref *ym) {
  const char *op = "global_average_pool";
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "gap X", x));
  COMET_RT_TRY(view(ym, 4, "gap Y", y));
  COMET_RT_CHECK(x.rank() >= 3 && y.rank() == x.rank() &&
                     y.dim(0) == x.dim(0) && y.dim(1) == x.dim(1) &&
                     y.numel() == x.dim(0) * x.dim(1),
                 op, ": X ", shapeStr(x.dims), " and Y ", shapeStr(y.dims),
                 " do not fit [N,C,...] -> [N,C,1,...]");
  int64_t planes = x.dim(0) * x.dim(1), size = planes ? x.numel() / planes : 0;
  const float *xd = x.f();
  float *yd = y.f();
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    double s = 0;
    for (int64_t i = 0; i < size; ++i)
      s += xd[p * size + i];
    yd[p] = (float)(s / (double)size);
  }
  return ok();
}

int32_t comet_rt_cpu_shape(comet_rt_context *ctx, comet_rt_memref *xm,
                           comet_rt_memref *ym, int64_t start, int64_t end) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 1, "shape X", x));
  COMET_RT_TRY(view(ym, 8, "shape Y", y));
  int64_t r = x.rank();
  auto clampDim = [r](int64_t v) {
    if (v < 0)
      v += r;
    return std::min(std::max<int64_t>(v, 0), r);
  };
  start = clampDim(start);
  end = clampDim(end);
  int64_t count = std::max<int64_t>(end - start, 0);
  COMET_RT_CHECK(y.numel() == count, "shape: Y has ", y.numel(),
                 " elements, expected ", count);
  for (int64_t i = 0; i < count; ++i)
    y.i64()[i] = x.dim(start + i);
  return ok();
}

int32_t comet_rt_cpu_reshape(comet_rt_context *ctx, comet_rt_memref *xm,
                             comet_rt_memref *sm, comet_rt_memref *ym,
                             int64_t allowzero) {
  const char *op = "reshape";
  Tensor x, s, y;
  COMET_RT_TRY(view(xm, 4, "reshape X", x));
  COMET_RT_TRY(view(sm, 8, "reshape shape", s));
  COMET_RT_TRY(view(ym, 4, "reshape Y", y));
  COMET_RT_CHECK(s.rank() == 1, op, ": shape must be 1-D");
  std::vector<int64_t> dims(s.numel());
  int64_t known = 1, infer = -1;
  for (int64_t i = 0; i < s.numel(); ++i) {
    int64_t v = s.i64()[i];
    if (v == 0 && !allowzero) {
      COMET_RT_CHECK(i < x.rank(), op, ": 0 at ", i, " has no input dim");
      v = x.dim(i);
    }
    if (v == -1) {
      COMET_RT_CHECK(infer < 0, op, ": more than one -1");
      infer = i;
      continue;
    }
    COMET_RT_CHECK(v >= 0, op, ": bad dim ", v);
    dims[i] = v;
    known *= v;
  }
  if (infer >= 0) {
    COMET_RT_CHECK(known > 0 && x.numel() % known == 0, op,
                   ": cannot infer the -1 dim");
    dims[infer] = x.numel() / known;
  }
  COMET_RT_CHECK(dims == y.dims && y.numel() == x.numel(), op, ": shape gives ",
                 shapeStr(dims), ", Y is ", shapeStr(y.dims), ", X is ",
                 shapeStr(x.dims));
  if (x.data != y.data)
    std::memcpy(y.data, x.data, sizeof(float) * x.numel());
  return ok();
}

int32_t comet_rt_cpu_flatten(comet_rt_context *ctx, comet_rt_memref *xm,
                             comet_rt_memref *ym, int64_t axis) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "flatten X", x));
  COMET_RT_TRY(view(ym, 4, "flatten Y", y));
  if (axis < 0)
    axis += x.rank();
  COMET_RT_CHECK(axis >= 0 && axis <= x.rank(), "flatten: bad axis");
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= x.dim(i);
  int64_t inner = outer ? x.numel() / outer : 0;
  COMET_RT_CHECK(y.rank() == 2 && y.dim(0) == outer && y.dim(1) == inner,
                 "flatten: Y is ", shapeStr(y.dims), ", expected ",
                 shapeStr({outer, inner}));
  if (x.data != y.data)
    std::memcpy(y.data, x.data, sizeof(float) * x.numel());
  return ok();
}

} // extern "C"
