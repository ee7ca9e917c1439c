//===- Norm.cu - Batch and layer normalization ----------------------------===//
//
// Kernels of this backend, not cuDNN's: ONNX's running variance is the
// biased one, cuDNN's the unbiased, and layer normalization's saved
// statistics are ONNX Runtime's (mean, 1 / sqrt(var + epsilon)). One block
// per channel (batch norm) or row (layer norm), two-pass sums in double.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

/// One block per channel: the batch mean and biased variance (two passes,
/// double sums), and the outputs that depend on them alone.
__global__ void bnStatsK(const float *x, int64_t n, int64_t c, int64_t hw,
                         float *mean, float *var, const float *inMean,
                         const float *inVar, float *runMean, float *runVar,
                         float *savedMean, float *savedInvStd, float eps,
                         float momentum) {
  int64_t m = n * hw;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    double s = 0;
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x)
      s += x[((i / hw) * c + ch) * hw + i % hw];
    double mu = blockSum(s) / double(m);
    double q = 0;
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
      double d = x[((i / hw) * c + ch) * hw + i % hw] - mu;
      q += d * d;
    }
    double v = blockSum(q) / double(m);
    if (threadIdx.x == 0) {
      float fm = float(mu), fv = float(v);
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
}

__global__ void bnApplyK(const float *x, const float *scale, const float *bias,
                         const float *mean, const float *var, float *y,
                         int64_t total, int64_t c, int64_t hw, float eps) {
  GRID_STRIDE(i, total) {
    int64_t ch = (i / hw) % c;
    // bnStatsK saves the same 1 / sqrtf(var + eps).
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
        comet_rt_bn_affine(x[i], mean[ch], invStd[ch], scale[ch], bias[ch]), act, lo,
        hi);
  }
}

/// One block per channel: dBias = sum dY, dScale = sum dY * xhat, then dX
/// (which may be dY's buffer: each element is read before it is written).
__global__ void bnGradK(const float *dy, const float *x, const float *scale,
                        const float *mean, const float *invStd, float *dx,
                        float *dscale, float *dbias, int64_t n, int64_t c,
                        int64_t hw) {
  int64_t m = n * hw;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    float mu = mean[ch], inv = invStd[ch];
    double sdy = 0, sdyx = 0;
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
      int64_t at = ((i / hw) * c + ch) * hw + i % hw;
      double g = dy[at];
      sdy += g;
      sdyx += g * double((x[at] - mu) * inv);
    }
    double db = blockSum(sdy), ds = blockSum(sdyx);
    if (threadIdx.x == 0) {
      dbias[ch] = float(db);
      dscale[ch] = float(ds);
    }
    float k = scale[ch] * inv, mdb = float(db / double(m)),
          mds = float(ds / double(m));
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
      int64_t at = ((i / hw) * c + ch) * hw + i % hw;
      float xhat = (x[at] - mu) * inv;
      dx[at] = k * (dy[at] - mdb - xhat * mds);
    }
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

/// One thread per column: dScale = sum dY * xhat, dBias = sum dY over rows.
__global__ void lnGradParamsK(const float *dy, const float *x,
                              const float *mean, const float *invStd,
                              float *dscale, float *dbias, int64_t rows,
                              int64_t cols) {
  GRID_STRIDE(j, cols) {
    double ss = 0, sb = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double g = dy[r * cols + j];
      sb += g;
      ss += g * double((x[r * cols + j] - mean[r]) * invStd[r]);
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
  Workspace stats(ctx, training ? 2 * c * sizeof(float) : 0);
  if (!stats.ok())
    return oom(op);
  if (training && n * hw > 0) {
    float *sm = stats.f();
    auto opt = [](const Tensor &t) { return t.present ? t.f() : nullptr; };
    bnStatsK<<<blocksFor(c), kThreads, 0, s.stream>>>(
        x.f(), n, c, hw, sm, sm + c, a.input_mean.f(), a.input_var.f(),
        opt(a.running_mean), opt(a.running_var), opt(a.saved_mean),
        opt(a.saved_inv_std), a.epsilon, a.momentum);
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
  bnGradK<<<blocksFor(c), kThreads, 0, streamOf(ctx)>>>(
      a.dy.f(), x.f(), a.scale.f(), a.saved_mean.f(), a.saved_inv_std.f(),
      a.dx.f(), a.dscale.f(), a.dbias.f(), n, c, hw);
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
    lnGradParamsK<<<gridFor(cols), kThreads, 0, st>>>(
        a.dy.f(), x.f(), a.mean.f(), a.inv_std_var.f(), dscale, dbias, rows,
        cols);
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
