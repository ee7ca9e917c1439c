//===- Loss.cpp - SoftmaxCrossEntropyLoss and its gradient ----------------===//
//
// oneDNN's log-softmax plus per-sample glue. Labels are in range (the
// contract checked them).
//
//===----------------------------------------------------------------------===//
#include "Dnnl.h"

#include <cmath>
#include <optional>

namespace comet::rt::cpu {

namespace {

struct LossShape {
  int64_t n, c, d; // scores [n, c, d...] flattened to [n, c, d]
};

LossShape lossShape(const Tensor &scores) {
  return {scores.dim(0), scores.dim(1),
          product(scores.dims, 2, scores.dims.size())};
}

/// Per-sample weights (0 for ignored) and their sum.
void sampleWeights(const LossShape &s, const int64_t *lbl,
                   const Tensor &weights, int64_t ignoreIndex, bool hasIgnore,
                   std::vector<float> &w, double &sumW) {
  w.resize(s.n * s.d);
  sumW = 0;
  for (int64_t i = 0; i < s.n * s.d; ++i) {
    int64_t l = lbl[i];
    if (hasIgnore && l == ignoreIndex) {
      w[i] = 0;
      continue;
    }
    w[i] = weights.present ? weights.f()[l] : 1.0f;
    sumW += w[i];
  }
}

} // namespace

int32_t run(comet_rt_context *ctx, const softmax_cross_entropy_loss_args &a) {
  const char *op = "softmax_cross_entropy_loss";
  LossShape s = lossShape(a.scores);
  std::vector<float> w;
  double sumW;
  sampleWeights(s, a.labels.i64(), a.weights, a.ignore_index,
                a.has_ignore_index != 0, w, sumW);
  return guard(op, [&] {
    // Without a log_prob output, the log-softmax goes to a temporary.
    std::optional<Scratch> tmp;
    void *lpData = a.log_prob.data;
    if (!a.log_prob.present) {
      tmp.emplace(ctx, sizeof(float) * a.scores.numel());
      lpData = tmp->get();
    }
    COMET_RT_TRY(softmaxImpl(ctx, op, a.scores, a.scores.data, lpData, 1,
                             /*log=*/true));
    const float *l = static_cast<const float *>(lpData);
    const int64_t *lbl = a.labels.i64();
    double total = 0;
    for (int64_t i = 0; i < s.n * s.d; ++i) {
      int64_t n = i / s.d, d = i % s.d;
      float v = w[i] == 0 ? 0.0f : -w[i] * l[(n * s.c + lbl[i]) * s.d + d];
      if (a.reduction == COMET_RT_REDUCTION_NONE)
        a.loss.f()[i] = v;
      total += v;
    }
    if (a.reduction == COMET_RT_REDUCTION_SUM)
      a.loss.f()[0] = (float)total;
    else if (a.reduction == COMET_RT_REDUCTION_MEAN)
      a.loss.f()[0] = (float)(total / sumW);
    return ok();
  });
}

int32_t run(comet_rt_context *ctx,
            const softmax_cross_entropy_loss_grad_args &a) {
  LossShape s = lossShape(a.log_prob);
  std::vector<float> w;
  double sumW;
  sampleWeights(s, a.labels.i64(), a.weights, a.ignore_index,
                a.has_ignore_index != 0, w, sumW);
  const float *l = a.log_prob.f(), *dy = a.dy.f();
  float *out = a.dx.f();
  const int64_t *lbl = a.labels.i64();
  int64_t reduction = a.reduction;
  float div = reduction == COMET_RT_REDUCTION_MEAN ? (float)sumW : 1.0f;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < s.n * s.d; ++i) {
    int64_t n = i / s.d, d = i % s.d;
    float g = reduction == COMET_RT_REDUCTION_NONE ? dy[i] : dy[0];
    float scale = w[i] * g / div;
    for (int64_t c = 0; c < s.c; ++c) {
      int64_t at = (n * s.c + c) * s.d + d;
      float p = std::exp(l[at]);
      out[at] = w[i] == 0 ? 0.0f : (p - (c == lbl[i] ? 1.0f : 0.0f)) * scale;
    }
  }
  return ok();
}

} // namespace comet::rt::cpu
