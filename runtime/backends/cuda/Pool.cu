//===- Pool.cu - Max, average and global average pooling ------------------===//
//
// Kernels, not cuDNN's pooling: MaxPool's Indices (ORT's flat indices, both
// storage orders, or window positions) have no cuDNN counterpart, and cuDNN
// pads symmetrically. The gradients add in the CPU's order, without
// atomics: MaxPoolGrad over window positions and AveragePoolGrad gather,
// one thread per input element; MaxPoolGrad over flat indices scatters
// one plane per thread.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

struct PoolGeom {
  int64_t h, w, oh, ow, kH, kW, sH, sW, pT, pL, dH, dW;
};

/// The flat index into X (N and C offsets included) of window element
/// (a, b) of output (p, i, j), as ORT's Indices give it.
__device__ int64_t flatIndex(const PoolGeom &g, int64_t p, int64_t i, int64_t j,
                             int64_t a, int64_t b, int storageOrder) {
  int64_t hh = i * g.sH - g.pT + a * g.dH, ww = j * g.sW - g.pL + b * g.dW;
  return storageOrder == 0 ? p * g.h * g.w + hh * g.w + ww
                           : p * g.h * g.w + ww * g.h + hh;
}

/// Writes Y and, when given, ORT's flat Indices (ind) or the argmax's
/// position a * kW + b in its window (pos; every window holds an element of
/// X: checked).
__global__ void maxpoolK(const float *x, float *y, int64_t *ind, uint8_t *pos,
                         int64_t total, PoolGeom g, int storageOrder) {
  GRID_STRIDE(o, total) {
    int64_t j = o % g.ow, i = (o / g.ow) % g.oh, p = o / (g.ow * g.oh);
    const float *plane = x + p * g.h * g.w;
    float best = -INFINITY;
    int64_t ba = -1, bb = -1;
    for (int64_t a = 0; a < g.kH; ++a) {
      int64_t hh = i * g.sH - g.pT + a * g.dH;
      if (hh < 0 || hh >= g.h)
        continue;
      for (int64_t b = 0; b < g.kW; ++b) {
        int64_t ww = j * g.sW - g.pL + b * g.dW;
        if (ww < 0 || ww >= g.w)
          continue;
        float v = plane[hh * g.w + ww];
        if (ba < 0 || v > best) {
          best = v;
          ba = a;
          bb = b;
        }
      }
    }
    y[o] = best;
    if (ind)
      ind[o] = ba < 0 ? -1 : flatIndex(g, p, i, j, ba, bb, storageOrder);
    if (pos)
      pos[o] = uint8_t(ba * g.kW + bb);
  }
}

/// dX[Indices[o]] += dY[o] for the outputs o of one plane each, in order,
/// where the index lies in the plane's own part of dX (every index lies in
/// dX: checked); the others are counted in *strays and left to
/// maxpoolGradStrayK. One thread per plane: the CPU's order of additions,
/// without atomics on dX.
__global__ void maxpoolGradK(const float *dy, const int64_t *ind, float *dx,
                             int64_t planes, int64_t inPlane, int64_t outPlane,
                             unsigned *strays) {
  GRID_STRIDE(p, planes) {
    unsigned mine = 0;
    for (int64_t o = p * outPlane; o < (p + 1) * outPlane; ++o) {
      if (ind[o] / inPlane == p)
        dx[ind[o]] += dy[o];
      else
        ++mine;
    }
    if (mine)
      atomicAdd(strays, mine);
  }
}

/// The indices outside their own plane, serially in output order (one
/// thread, and only when there are any: ORT's Indices never leave their
/// plane).
__global__ void maxpoolGradStrayK(const float *dy, const int64_t *ind,
                                  float *dx, int64_t n, int64_t inPlane,
                                  int64_t outPlane, const unsigned *strays) {
  if (*strays == 0)
    return;
  for (int64_t o = 0; o < n; ++o)
    if (ind[o] / inPlane != o / outPlane)
      dx[ind[o]] += dy[o];
}

/// dX as the sum of dY over the outputs whose window position names this
/// element (every position lies in dX: checked), gathered in output order
/// as the CPU adds them: no atomics, the same bits.
__global__ void maxpoolGradWindowK(const float *dy, const uint8_t *pos,
                                   float *dx, int64_t total, PoolGeom g,
                                   int storageOrder) {
  GRID_STRIDE(e, total) {
    int64_t p = e / (g.h * g.w), r = e % (g.h * g.w);
    int64_t hh = storageOrder == 0 ? r / g.w : r % g.h;
    int64_t ww = storageOrder == 0 ? r % g.w : r / g.h;
    const float *dyp = dy + p * g.oh * g.ow;
    const uint8_t *posp = pos + p * g.oh * g.ow;
    float s = 0.0f;
    // a falling is i rising; b falling is j rising.
    for (int64_t a = g.kH - 1; a >= 0; --a) {
      int64_t ti = hh + g.pT - a * g.dH;
      if (ti < 0 || ti % g.sH)
        continue;
      int64_t i = ti / g.sH;
      if (i >= g.oh)
        continue;
      for (int64_t b = g.kW - 1; b >= 0; --b) {
        int64_t tj = ww + g.pL - b * g.dW;
        if (tj < 0 || tj % g.sW)
          continue;
        int64_t j = tj / g.sW;
        if (j >= g.ow)
          continue;
        int64_t o = i * g.ow + j;
        if (posp[o] == a * g.kW + b)
          s += dyp[o];
      }
    }
    dx[e] = s;
  }
}

/// One block per (n, c) plane.
__global__ void gapK(const float *x, float *y, int64_t planes, int64_t hw) {
  for (int64_t pl = blockIdx.x; pl < planes; pl += gridDim.x) {
    const float *p = x + pl * hw;
    double s = 0;
    for (int64_t i = threadIdx.x; i < hw; i += blockDim.x)
      s += p[i];
    s = blockSum(s);
    if (threadIdx.x == 0)
      y[pl] = float(s / double(hw));
  }
}

/// AveragePool's divisor for the window at output (i, j): kH * kW with
/// count_include_pad (floor mode keeps windows inside the padded input),
/// else its elements inside X.
__device__ int64_t avgCount(const PoolGeom &g, int64_t i, int64_t j,
                            int includePad) {
  if (includePad)
    return g.kH * g.kW;
  int64_t h0 = i * g.sH - g.pT, w0 = j * g.sW - g.pL;
  int64_t hs = max(h0, int64_t(0)), he = min(h0 + g.kH, g.h);
  int64_t ws = max(w0, int64_t(0)), we = min(w0 + g.kW, g.w);
  return max(he - hs, int64_t(0)) * max(we - ws, int64_t(0));
}

__global__ void avgpoolK(const float *x, float *y, int64_t total, PoolGeom g,
                         int includePad) {
  GRID_STRIDE(o, total) {
    int64_t j = o % g.ow, i = (o / g.ow) % g.oh, p = o / (g.ow * g.oh);
    const float *plane = x + p * g.h * g.w;
    int64_t h0 = i * g.sH - g.pT, w0 = j * g.sW - g.pL;
    float s = 0.0f;
    for (int64_t hh = max(h0, int64_t(0)); hh < min(h0 + g.kH, g.h); ++hh)
      for (int64_t ww = max(w0, int64_t(0)); ww < min(w0 + g.kW, g.w); ++ww)
        s += plane[hh * g.w + ww];
    int64_t count = avgCount(g, i, j, includePad);
    y[o] = count ? s / float(count) : 0.0f;
  }
}

/// dX[h, w] = sum over the windows holding (h, w) of dY / count.
__global__ void avgpoolGradK(const float *dy, float *dx, int64_t total,
                             PoolGeom g, int includePad) {
  GRID_STRIDE(e, total) {
    int64_t ww = e % g.w, hh = (e / g.w) % g.h, p = e / (g.w * g.h);
    const float *plane = dy + p * g.oh * g.ow;
    // Windows i with i*sH - pT <= hh < i*sH - pT + kH.
    int64_t iLo = hh + g.pT - g.kH + 1, iHi = hh + g.pT;
    iLo = iLo <= 0 ? 0 : (iLo + g.sH - 1) / g.sH;
    iHi = min(iHi / g.sH, g.oh - 1);
    int64_t jLo = ww + g.pL - g.kW + 1, jHi = ww + g.pL;
    jLo = jLo <= 0 ? 0 : (jLo + g.sW - 1) / g.sW;
    jHi = min(jHi / g.sW, g.ow - 1);
    float s = 0.0f;
    for (int64_t i = iLo; i <= iHi; ++i)
      for (int64_t j = jLo; j <= jHi; ++j) {
        int64_t count = avgCount(g, i, j, includePad);
        if (count)
          s += plane[i * g.ow + j] / float(count);
      }
    dx[e] = s;
  }
}

/// A max pool's geometry from its entry's attributes: input planes in, output
/// planes out (X and Y forward, dX and dY backward).
template <typename Args, typename T>
PoolGeom maxpoolGeom(const Args &a, const T &in, const T &out) {
  return {in.dim(2),  in.dim(3),  out.dim(2),   out.dim(3),
          a.kernel_h, a.kernel_w, a.stride_h,   a.stride_w,
          a.pad_top,  a.pad_left, a.dilation_h, a.dilation_w};
}

} // namespace

int32_t run(comet_rt_context *ctx, const maxpool2d_args &a) {
  if (a.y.numel() == 0)
    return ok();
  PoolGeom g = maxpoolGeom(a, a.x, a.y);
  maxpoolK<<<gridFor(a.y.numel()), kThreads, 0, streamOf(ctx)>>>(
      a.x.f(), a.y.f(), a.indices.present ? a.indices.i64() : nullptr, nullptr,
      a.y.numel(), g, static_cast<int>(a.storage_order));
  LAUNCHED("maxpool2d");
  return ok();
}

int32_t run(comet_rt_context *ctx, const maxpool2d_window_args &a) {
  if (a.y.numel() == 0)
    return ok();
  PoolGeom g = maxpoolGeom(a, a.x, a.y);
  maxpoolK<<<gridFor(a.y.numel()), kThreads, 0, streamOf(ctx)>>>(
      a.x.f(), a.y.f(), nullptr, a.positions.u8(), a.y.numel(), g, 0);
  LAUNCHED("maxpool2d_window");
  return ok();
}

int32_t run(comet_rt_context *ctx, const maxpool_grad_args &a) {
  const char *op = "maxpool_grad";
  COMET_RT_TRY(zeroAsync(ctx, op, a.dx.data, a.dx.bytes()));
  if (a.dy.numel() == 0)
    return ok();
  // Planes as the CPU takes them: dX's and dY's first two dims; a dY of
  // another shape is one plane.
  int64_t planes = 1;
  if (a.dx.rank() >= 2 && a.dy.rank() == a.dx.rank() &&
      a.dy.dim(0) * a.dy.dim(1) == a.dx.dim(0) * a.dx.dim(1) &&
      a.dx.dim(0) * a.dx.dim(1) > 0)
    planes = a.dx.dim(0) * a.dx.dim(1);
  int64_t inPlane = std::max<int64_t>(a.dx.numel() / planes, 1),
          outPlane = a.dy.numel() / planes;
  Workspace strays(ctx, sizeof(unsigned));
  if (!strays.ok())
    return oom(op);
  COMET_RT_TRY(zeroAsync(ctx, op, strays.get(), sizeof(unsigned)));
  maxpoolGradK<<<gridFor(planes), kThreads, 0, streamOf(ctx)>>>(
      a.dy.f(), a.indices.i64(), a.dx.f(), planes, inPlane, outPlane,
      strays.as<unsigned>());
  LAUNCHED(op);
  maxpoolGradStrayK<<<1, 1, 0, streamOf(ctx)>>>(
      a.dy.f(), a.indices.i64(), a.dx.f(), a.dy.numel(), inPlane, outPlane,
      strays.as<unsigned>());
  LAUNCHED(op);
  return ok();
}

int32_t run(comet_rt_context *ctx, const maxpool_grad_window_args &a) {
  const char *op = "maxpool_grad_window";
  if (a.dx.numel() == 0)
    return ok();
  if (a.dy.numel() == 0)
    return zeroAsync(ctx, op, a.dx.data, a.dx.bytes());
  PoolGeom g = maxpoolGeom(a, a.dx, a.dy);
  maxpoolGradWindowK<<<gridFor(a.dx.numel()), kThreads, 0, streamOf(ctx)>>>(
      a.dy.f(), a.positions.u8(), a.dx.f(), a.dx.numel(), g,
      static_cast<int>(a.storage_order));
  LAUNCHED(op);
  return ok();
}

int32_t run(comet_rt_context *ctx, const global_average_pool_args &a) {
  int64_t planes = a.x.dim(0) * a.x.dim(1);
  if (planes == 0)
    return ok();
  gapK<<<blocksFor(planes), kThreads, 0, streamOf(ctx)>>>(
      a.x.f(), a.y.f(), planes, a.x.numel() / planes);
  LAUNCHED("global_average_pool");
  return ok();
}

int32_t run(comet_rt_context *ctx, const avgpool2d_args &a) {
  if (a.y.numel() == 0)
    return ok();
  PoolGeom g = {a.x.dim(2), a.x.dim(3), a.y.dim(2), a.y.dim(3),
                a.kernel_h, a.kernel_w, a.stride_h, a.stride_w,
                a.pad_top,  a.pad_left, 1,          1};
  avgpoolK<<<gridFor(a.y.numel()), kThreads, 0, streamOf(ctx)>>>(
      a.x.f(), a.y.f(), a.y.numel(), g, a.count_include_pad != 0);
  LAUNCHED("avgpool2d");
  return ok();
}

int32_t run(comet_rt_context *ctx, const avgpool_grad2d_args &a) {
  if (a.dx.numel() == 0)
    return ok();
  PoolGeom g = {a.dx.dim(2), a.dx.dim(3), a.dy.dim(2), a.dy.dim(3),
                a.kernel_h,  a.kernel_w,  a.stride_h,  a.stride_w,
                a.pad_top,   a.pad_left,  1,           1};
  avgpoolGradK<<<gridFor(a.dx.numel()), kThreads, 0, streamOf(ctx)>>>(
      a.dy.f(), a.dx.f(), a.dx.numel(), g, a.count_include_pad != 0);
  LAUNCHED("avgpool_grad2d");
  return ok();
}

} // namespace comet::rt::cuda
