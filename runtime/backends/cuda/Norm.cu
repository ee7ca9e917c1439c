//===- Norm.cu - Batch and layer normalization ----------------------------===//
//
// Kernels of this backend, not cuDNN's: ONNX's running variance is the
// biased one, cuDNN's the unbiased, and layer normalization's saved
// statistics are ONNX Runtime's (mean, 1 / sqrt(var + epsilon)). Sums are
// two-pass and in double. A batch norm channel's sums are split over
// slices of the batch (one block each; a channel per block left most of
// the device idle), whose partial sums one thread per channel adds in
// order; layer norm's parameter gradients likewise over slices of rows.
// Each result is computed one way, so a run repeats its bits.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

/// Slices of the batch per channel: enough blocks to fill the device,
/// none without an image.
int64_t bnSlices(int64_t n, int64_t c) {
  return std::clamp<int64_t>((1024 + c - 1) / std::max<int64_t>(c, 1), 1,
                             std::max<int64_t>(n, 1));
}

/// Block (channel, slice): the slice's sum of x (mu null) or of (x - mu)^2
/// over its images, in double, into part[ch * slices + slice].
__global__ void bnPartialK(const float *x, int64_t n, int64_t c, int64_t hw,
                           const double *mu, double *part) {
  const int64_t ch = blockIdx.x, slice = blockIdx.y, slices = gridDim.y;
  const int64_t n0 = n * slice / slices, n1 = n * (slice + 1) / slices;
  const double m = mu ? mu[ch] : 0.0;
  double s = 0;
  for (int64_t img = n0; img < n1; ++img) {
    const float *px = x + (img * c + ch) * hw;
    for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) {
      double v = px[i];
      s += mu ? (v - m) * (v - m) : v;
    }
  }
  s = blockSum(s);
  if (threadIdx.x == 0)
    part[ch * slices + slice] = s;
}

/// One thread per channel: the mean from the slices' sums.
__global__ void bnMeanK(const double *part, int64_t c, int64_t slices,
                        int64_t m, double *mu) {
  GRID_STRIDE(ch, c) {
    double s = 0;
    for (int64_t k = 0; k < slices; ++k)
      s += part[ch * slices + k];
    mu[ch] = s / double(m);
  }
}

/// One thread per channel: the biased variance from the slices' sums, and
/// the outputs that depend on the statistics alone.
__global__ void bnFinishK(const double *part, const double *mu, int64_t c,
                          int64_t slices, int64_t m, float *mean, float *var,
                          const float *inMean, const float *inVar,
                          float *runMean, float *runVar, float *savedMean,
                          float *savedInvStd, float eps, float momentum) {
  GRID_STRIDE(ch, c) {
    double q = 0;
    for (int64_t k = 0; k < slices; ++k)
      q += part[ch * slices + k];
    float fm = float(mu[ch]), fv = float(q / double(m));
    // running_* may be input_*'s buffers (in place): read first.
    float im = inMean[ch], iv = inVar[ch];
    mean[ch] = fm;
    var[ch] = fv;
    if (runMean)
      runMean[ch] = im * momentum + fm * (1.0f - momentum);
    if (runVar)
      runVar[ch] = iv * momentum + fv * (1.0f - momentum);
    if (savedMean)
      savedMean[ch] = fm;
    if (savedInvStd)
      savedInvStd[ch] = 1.0f / sqrtf(fv + eps);
  }
}

__global__ void bnApplyK(const float *x, const float *scale, const float *bias,
                         const float *mean, const float *var, float *y,
                         int64_t total, int64_t c, int64_t hw, float eps) {
  GRID_STRIDE(i, total) {
    int64_t ch = (i / hw) % c;
    // bnFinishK saves the same 1 / sqrtf(var + eps).
    float inv = 1.0f / sqrtf(var[ch] + eps);
    y[i] = comet_rt_bn_affine(x[i], mean[ch], inv, scale[ch], bias[ch]);
  }
}

__global__ void bnRecomputeK(const float *x, const float *scale,
                             const float *bias, const float *mean,
                             const float *invStd, float *y, int64_t total,
                             int64_t c, int64_t hw, int64_t act, float lo,
                             float hi) {
  GRID_STRIDE(i, total) {
    int64_t ch = (i / hw) % c;
    y[i] = comet_rt_bn_activation(
        comet_rt_bn_affine(x[i], mean[ch], invStd[ch], scale[ch], bias[ch]),
        act, lo, hi);
  }
}

/// Block (channel, slice): the slice's sums of dY and dY * xhat, in double,
/// into part[2 * (ch * slices + slice)] and the word after it.
__global__ void bnGradPartialK(const float *dy, const float *x,
                               const float *mean, const float *invStd,
                               int64_t n, int64_t c, int64_t hw, double *part) {
  const int64_t ch = blockIdx.x, slice = blockIdx.y, slices = gridDim.y;
  const int64_t n0 = n * slice / slices, n1 = n * (slice + 1) / slices;
  const float mu = mean[ch], inv = invStd[ch];
  double sdy = 0, sdyx = 0;
  for (int64_t img = n0; img < n1; ++img) {
    const int64_t base = (img * c + ch) * hw;
    for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) {
      double g = dy[base + i];
      sdy += g;
      sdyx += g * double((x[base + i] - mu) * inv);
    }
  }
  sdy = blockSum(sdy);
  sdyx = blockSum(sdyx);
  if (threadIdx.x == 0) {
    part[2 * (ch * slices + slice)] = sdy;
    part[2 * (ch * slices + slice) + 1] = sdyx;
  }
}

/// One thread per channel: dBias = sum dY, dScale = sum dY * xhat, and the
/// two means dX needs.
__global__ void bnGradFinishK(const double *part, int64_t c, int64_t slices,
                              int64_t m, float *dscale, float *dbias,
                              float *means) {
  GRID_STRIDE(ch, c) {
    double db = 0, ds = 0;
    for (int64_t k = 0; k < slices; ++k) {
      db += part[2 * (ch * slices + k)];
      ds += part[2 * (ch * slices + k) + 1];
    }
    dbias[ch] = float(db);
    dscale[ch] = float(ds);
    means[2 * ch] = float(db / double(m));
    means[2 * ch + 1] = float(ds / double(m));
  }
}

/// dX (which may be dY's buffer: each element is read before it is
/// written).
__global__ void bnGradDxK(const float *dy, const float *x, const float *scale,
                          const float *mean, const float *invStd,
                          const float *means, float *dx, int64_t total,
                          int64_t c, int64_t hw) {
  GRID_STRIDE(i, total) {
    int64_t ch = (i / hw) % c;
    float mu = mean[ch], inv = invStd[ch], k = scale[ch] * inv;
    float xhat = (x[i] - mu) * inv;
    dx[i] = k * (dy[i] - means[2 * ch] - xhat * means[2 * ch + 1]);
  }
}

/// One block per row of `cols`: mean and biased variance in double, then
/// y = (x - mean) * inv * scale + bias.
__global__ void lnForwardK(const float *x, const float *scale,
                           const float *bias, float *y, float *mean,
                           float *invStd, int64_t rows, int64_t cols,
                           float eps) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *px = x + row * cols;
    float *py = y + row * cols;
    double s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      s += px[j];
    double mu = blockSum(s) / double(cols);
    double q = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      double d = px[j] - mu;
      q += d * d;
    }
    double var = blockSum(q) / double(cols);
    float fm = float(mu), inv = 1.0f / sqrtf(float(var) + eps);
    if (threadIdx.x == 0) {
      if (mean)
        mean[row] = fm;
      if (invStd)
        invStd[row] = inv;
    }
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      py[j] = (px[j] - fm) * inv * scale[j] + (bias ? bias[j] : 0.0f);
  }
}

/// One block per row: dX = inv * (g - mean(g) - xhat * mean(g * xhat)),
/// g = dY * scale.
__global__ void lnGradXK(const float *dy, const float *x, const float *scale,
                         const float *mean, const float *invStd, float *dx,
                         int64_t rows, int64_t cols) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *pdy = dy + row * cols, *px = x + row * cols;
    float *pdx = dx + row * cols;
    float mu = mean[row], inv = invStd[row];
    double sg = 0, sgx = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      double g = double(pdy[j]) * scale[j];
      sg += g;
      sgx += g * double((px[j] - mu) * inv);
    }
    float mg = float(blockSum(sg) / double(cols)),
          mgx = float(blockSum(sgx) / double(cols));
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      float xhat = (px[j] - mu) * inv;
      pdx[j] = inv * (pdy[j] * scale[j] - mg - xhat * mgx);
    }
  }
}

/// Block (column tile, slice of rows): each thread's column's sums of
/// dY * xhat and dY over the slice, in double, into
/// part[2 * (slice * cols + j)] and the word after it.
__global__ void lnGradParamsPartialK(const float *dy, const float *x,
                                     const float *mean, const float *invStd,
                                     int64_t rows, int64_t cols, double *part) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t slice = blockIdx.y, slices = gridDim.y;
  if (j >= cols)
    return;
  const int64_t r0 = rows * slice / slices, r1 = rows * (slice + 1) / slices;
  double ss = 0, sb = 0;
  for (int64_t r = r0; r < r1; ++r) {
    double g = dy[r * cols + j];
    sb += g;
    ss += g * double((x[r * cols + j] - mean[r]) * invStd[r]);
  }
  part[2 * (slice * cols + j)] = ss;
  part[2 * (slice * cols + j) + 1] = sb;
}

/// One thread per column: dScale and dBias from the slices' sums, in order.
__global__ void lnGradParamsFinishK(const double *part, int64_t cols,
                                    int64_t slices, float *dscale,
                                    float *dbias) {
  GRID_STRIDE(j, cols) {
    double ss = 0, sb = 0;
    for (int64_t k = 0; k < slices; ++k) {
      ss += part[2 * (k * cols + j)];
      sb += part[2 * (k * cols + j) + 1];
    }
    if (dscale)
      dscale[j] = float(ss);
    if (dbias)
      dbias[j] = float(sb);
  }
}

} // namespace

int32_t run(comet_rt_context *ctx, const batch_norm_internal_args &a) {
  const char *op = "batch_norm_internal";
  const Tensor &x = a.x;
  int64_t n = x.dim(0), c = x.dim(1), hw = product(x.dims, 2, x.dims.size());
  State &s = state(ctx);
  const float *mean = a.input_mean.f(), *var = a.input_var.f();
  bool training = a.training_mode != 0;
  const int64_t slices = bnSlices(n, c);
  // The statistics (2c floats), the slices' sums and the means (double).
  Workspace stats(ctx, training ? 2 * c * sizeof(float) +
                                      (c * slices + c) * sizeof(double)
                                : 0);
  if (!stats.ok())
    return oom(op);
  if (training && n * hw > 0 && c > 0) {
    float *sm = stats.f();
    // After the 2c floats, 8c bytes: aligned for doubles.
    double *part = reinterpret_cast<double *>(sm + 2 * c);
    double *mu = part + c * slices;
    auto opt = [](const Tensor &t) { return t.present ? t.f() : nullptr; };
    dim3 grid(static_cast<unsigned>(c), static_cast<unsigned>(slices));
    bnPartialK<<<grid, kThreads, 0, s.stream>>>(x.f(), n, c, hw, nullptr, part);
    LAUNCHED(op);
    bnMeanK<<<gridFor(c), kThreads, 0, s.stream>>>(part, c, slices, n * hw, mu);
    LAUNCHED(op);
    bnPartialK<<<grid, kThreads, 0, s.stream>>>(x.f(), n, c, hw, mu, part);
    LAUNCHED(op);
    bnFinishK<<<gridFor(c), kThreads, 0, s.stream>>>(
        part, mu, c, slices, n * hw, sm, sm + c, a.input_mean.f(),
        a.input_var.f(), opt(a.running_mean), opt(a.running_var),
        opt(a.saved_mean), opt(a.saved_inv_std), a.epsilon, a.momentum);
    LAUNCHED(op);
    mean = sm;
    var = sm + c;
  }
  if (x.numel() > 0) {
    bnApplyK<<<gridFor(x.numel()), kThreads, 0, s.stream>>>(
        x.f(), a.scale.f(), a.bias.f(), mean, var, a.y.f(), x.numel(), c, hw,
        a.epsilon);
    LAUNCHED(op);
  }
  return ok();
}

int32_t run(comet_rt_context *ctx, const batch_norm_grad_args &a) {
  const char *op = "batch_norm_grad";
  const Tensor &x = a.x;
  int64_t n = x.dim(0), c = x.dim(1), hw = product(x.dims, 2, x.dims.size());
  if (x.numel() == 0)
    return ok();
  const int64_t slices = bnSlices(n, c);
  // The slices' two sums (double), then the two means per channel.
  Workspace work(ctx, 2 * c * slices * sizeof(double) + 2 * c * sizeof(float));
  if (!work.ok())
    return oom(op);
  double *part = work.as<double>();
  float *means = reinterpret_cast<float *>(part + 2 * c * slices);
  cudaStream_t st = streamOf(ctx);
  bnGradPartialK<<<dim3(static_cast<unsigned>(c),
                        static_cast<unsigned>(slices)),
                   kThreads, 0, st>>>(a.dy.f(), x.f(), a.saved_mean.f(),
                                      a.saved_inv_std.f(), n, c, hw, part);
  LAUNCHED(op);
  bnGradFinishK<<<gridFor(c), kThreads, 0, st>>>(
      part, c, slices, n * hw, a.dscale.f(), a.dbias.f(), means);
  LAUNCHED(op);
  bnGradDxK<<<gridFor(x.numel()), kThreads, 0, st>>>(
      a.dy.f(), x.f(), a.scale.f(), a.saved_mean.f(), a.saved_inv_std.f(),
      means, a.dx.f(), x.numel(), c, hw);
  LAUNCHED(op);
  return ok();
}

int32_t run(comet_rt_context *ctx, const batch_norm_apply_args &a) {
  const char *op = "batch_norm_apply";
  const Tensor &x = a.x;
  int64_t c = x.dim(1), hw = product(x.dims, 2, x.dims.size());
  if (x.numel() == 0)
    return ok();
  bnRecomputeK<<<gridFor(x.numel()), kThreads, 0, streamOf(ctx)>>>(
      x.f(), a.scale.f(), a.bias.f(), a.saved_mean.f(), a.saved_inv_std.f(),
      a.y.f(), x.numel(), c, hw, a.activation, a.lo, a.hi);
  LAUNCHED(op);
  return ok();
}

int32_t run(comet_rt_context *ctx, const layer_norm_args &a) {
  const char *op = "layer_norm";
  const Tensor &x = a.x;
  int64_t axis = normAxis(a.axis, x.rank());
  int64_t rows = product(x.dims, 0, axis),
          cols = product(x.dims, axis, x.dims.size());
  if (x.numel() == 0)
    return ok();
  lnForwardK<<<blocksFor(rows), kThreads, 0, streamOf(ctx)>>>(
      x.f(), a.scale.f(), a.bias.present ? a.bias.f() : nullptr, a.y.f(),
      a.mean.present ? a.mean.f() : nullptr,
      a.inv_std_var.present ? a.inv_std_var.f() : nullptr, rows, cols,
      a.epsilon);
  LAUNCHED(op);
  return ok();
}

int32_t run(comet_rt_context *ctx, const layer_norm_grad_args &a) {
  const char *op = "layer_norm_grad";
  const Tensor &x = a.x;
  int64_t axis = normAxis(a.axis, x.rank());
  int64_t rows = product(x.dims, 0, axis),
          cols = product(x.dims, axis, x.dims.size());
  cudaStream_t st = streamOf(ctx);
  float *dscale = a.dscale.present ? a.dscale.f() : nullptr,
        *dbias = a.dbias.present ? a.dbias.f() : nullptr;
  // The parameter gradients first: dX may not alias dY here, but they read
  // dY and X only.
  if ((dscale || dbias) && cols > 0) {
    // Slices of about 64 rows, at most 256.
    const int64_t slices = std::clamp<int64_t>(rows / 64, 1, 256);
    Workspace part(ctx, 2 * slices * cols * sizeof(double));
    if (!part.ok())
      return oom(op);
    dim3 grid(static_cast<unsigned>((cols + kThreads - 1) / kThreads),
              static_cast<unsigned>(slices));
    lnGradParamsPartialK<<<grid, kThreads, 0, st>>>(a.dy.f(), x.f(), a.mean.f(),
                                                    a.inv_std_var.f(), rows,
                                                    cols, part.as<double>());
    LAUNCHED(op);
    lnGradParamsFinishK<<<gridFor(cols), kThreads, 0, st>>>(
        part.as<double>(), cols, slices, dscale, dbias);
    LAUNCHED(op);
  }
  if (x.numel() == 0)
    return ok();
  lnGradXK<<<blocksFor(rows), kThreads, 0, st>>>(a.dy.f(), x.f(), a.scale.f(),
                                                 a.mean.f(), a.inv_std_var.f(),
                                                 a.dx.f(), rows, cols);
  LAUNCHED(op);
  return ok();
}

} // namespace comet::rt::cuda
