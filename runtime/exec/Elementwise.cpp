//===- Elementwise.cpp - Elementwise glue, accumulators, optimizers -------===//
//
// Small OpenMP loops: ReLU and its gradient, broadcasting Add/Sub/Mul/Div,
// comparisons, Where, And, Clip and Expand,
// Scale, copies, InPlaceAccumulatorV2, and the optimizer updates
// (AdamWOptimizer, SGDOptimizerV2, SGD with momentum).
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Internal.h"
#include "comet/runtime/exec.h"

#include <cmath>
#include <cstring>

// Declared here rather than through <omp.h>, which clang with GCC's libgomp
// (the sanitizer tree) does not find.
extern "C" void omp_set_num_threads(int);

using namespace comet::rt;

namespace {

/// The numpy broadcast of shapes a and b into out; false if they do not
/// broadcast.
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

/// Strides of `in` (padded at the front to rank(out)) seen from out's index
/// space: 0 on broadcast dims. Fails if in does not broadcast to out.
bool broadcastStrides(const std::vector<int64_t> &in,
                      const std::vector<int64_t> &out,
                      std::vector<int64_t> &strides) {
  if (in.size() > out.size())
    return false;
  size_t off = out.size() - in.size();
  strides.assign(out.size(), 0);
  int64_t s = 1;
  for (int64_t i = (int64_t)in.size() - 1; i >= 0; --i) {
    int64_t o = out[off + i];
    if (in[i] == o)
      strides[off + i] = o == 1 ? 0 : s;
    else if (in[i] != 1)
      return false;
    s *= in[i];
  }
  return true;
}

/// Offset into a broadcast input for flat output index idx.
inline int64_t bcastOffset(int64_t idx, const std::vector<int64_t> &out,
                           const std::vector<int64_t> &strides) {
  int64_t off = 0;
  for (int64_t d = (int64_t)out.size() - 1; d >= 0 && idx; --d) {
    int64_t q = idx / out[d];
    off += (idx - q * out[d]) * strides[d];
    idx = q;
  }
  return off;
}

bool flag(const Tensor &t, bool dflt) {
  if (!t.present)
    return dflt;
  return *static_cast<const uint8_t *>(t.data) != 0;
}

void setFlag(const Tensor &t, bool v) {
  if (t.present)
    *static_cast<uint8_t *>(t.data) = v ? 1 : 0;
}

int32_t scalar(const char *what, const Tensor &t, float &v) {
  COMET_RT_CHECK(t.present && t.numel() == 1, what,
                 " must have exactly one element");
  v = t.f()[0];
  return COMET_RT_SUCCESS;
}

/// Y = f(A, B) with numpy broadcasting; Y must be exactly the broadcast
/// shape. TA, TB and TY are the element types (bool tensors: uint8_t).
template <typename TA = float, typename TB = float, typename TY = float,
          typename Fn>
int32_t binary(const char *op, comet_rt_memref *am, comet_rt_memref *bm,
               comet_rt_memref *ym, Fn f) {
  Tensor a, b, y;
  COMET_RT_TRY(view(am, sizeof(TA), concat(op, " A").c_str(), a));
  COMET_RT_TRY(view(bm, sizeof(TB), concat(op, " B").c_str(), b));
  COMET_RT_TRY(view(ym, sizeof(TY), concat(op, " Y").c_str(), y));
  std::vector<int64_t> want, sa, sb;
  COMET_RT_CHECK(broadcastShape(a.dims, b.dims, want) && want == y.dims, op,
                 ": A ", shapeStr(a.dims), " and B ", shapeStr(b.dims),
                 " do not broadcast to Y ", shapeStr(y.dims));
  broadcastStrides(a.dims, y.dims, sa);
  broadcastStrides(b.dims, y.dims, sb);
  const TA *pa = a.as<TA>();
  const TB *pb = b.as<TB>();
  TY *py = y.as<TY>();
  int64_t n = y.numel();
  if (a.dims == y.dims && b.dims == y.dims) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i)
      py[i] = f(pa[i], pb[i]);
    return ok();
  }
  if (b.numel() == 1 && a.dims == y.dims) {
    TB s = pb[0];
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i)
      py[i] = f(pa[i], s);
    return ok();
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    py[i] = f(pa[bcastOffset(i, y.dims, sa)], pb[bcastOffset(i, y.dims, sb)]);
  return ok();
}

} // namespace

extern "C" {

void comet_rt_set_num_threads(int n) {
  if (n > 0)
    omp_set_num_threads(n);
}

int32_t comet_rt_cpu_relu(comet_rt_context *ctx, comet_rt_memref *xm,
                          comet_rt_memref *ym) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "relu X", x));
  COMET_RT_TRY(view(ym, 4, "relu Y", y));
  COMET_RT_CHECK(x.dims == y.dims, "relu: X and Y shapes differ");
  const float *a = x.f();
  float *b = y.f();
  int64_t n = x.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    b[i] = a[i] > 0.0f ? a[i] : 0.0f;
  return ok();
}

int32_t comet_rt_cpu_relu_grad(comet_rt_context *ctx, comet_rt_memref *dym,
                               comet_rt_memref *xm, comet_rt_memref *dxm) {
  Tensor dy, x, dx;
  COMET_RT_TRY(view(dym, 4, "relu_grad dY", dy));
  COMET_RT_TRY(view(xm, 4, "relu_grad X", x));
  COMET_RT_TRY(view(dxm, 4, "relu_grad dX", dx));
  COMET_RT_CHECK(dy.dims == x.dims && dx.dims == x.dims,
                 "relu_grad: dY, X and dX shapes differ");
  const float *g = dy.f(), *a = x.f();
  float *o = dx.f();
  int64_t n = x.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    o[i] = a[i] > 0.0f ? g[i] : 0.0f;
  return ok();
}

int32_t comet_rt_cpu_leaky_relu(comet_rt_context *ctx, comet_rt_memref *xm,
                                comet_rt_memref *ym, float alpha) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "leaky_relu X", x));
  COMET_RT_TRY(view(ym, 4, "leaky_relu Y", y));
  COMET_RT_CHECK(x.dims == y.dims, "leaky_relu: X ", shapeStr(x.dims),
                 " and Y ", shapeStr(y.dims), " must share a shape");
  const float *a = x.f();
  float *b = y.f();
  int64_t n = x.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    b[i] = a[i] >= 0.0f ? a[i] : alpha * a[i];
  return ok();
}

int32_t comet_rt_cpu_leaky_relu_grad(comet_rt_context *ctx,
                                     comet_rt_memref *dym, comet_rt_memref *ym,
                                     comet_rt_memref *dxm, float alpha) {
  Tensor dy, y, dx;
  COMET_RT_TRY(view(dym, 4, "leaky_relu_grad dY", dy));
  COMET_RT_TRY(view(ym, 4, "leaky_relu_grad Y", y));
  COMET_RT_TRY(view(dxm, 4, "leaky_relu_grad dX", dx));
  COMET_RT_CHECK(dy.dims == y.dims && dx.dims == y.dims, "leaky_relu_grad: dY ",
                 shapeStr(dy.dims), ", Y ", shapeStr(y.dims), " and dX ",
                 shapeStr(dx.dims), " must share a shape");
  // Each dY element is read before its dX is written: dX may alias dY.
  const float *g = dy.f(), *a = y.f();
  float *o = dx.f();
  int64_t n = y.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    o[i] = a[i] > 0.0f ? g[i] : alpha * g[i];
  return ok();
}

int32_t comet_rt_cpu_add(comet_rt_context *ctx, comet_rt_memref *am,
                         comet_rt_memref *bm, comet_rt_memref *ym) {
  return binary("add", am, bm, ym, [](float a, float b) { return a + b; });
}

int32_t comet_rt_cpu_sub(comet_rt_context *ctx, comet_rt_memref *am,
                         comet_rt_memref *bm, comet_rt_memref *ym) {
  return binary("sub", am, bm, ym, [](float a, float b) { return a - b; });
}

int32_t comet_rt_cpu_mul(comet_rt_context *ctx, comet_rt_memref *am,
                         comet_rt_memref *bm, comet_rt_memref *ym) {
  return binary("mul", am, bm, ym, [](float a, float b) { return a * b; });
}

int32_t comet_rt_cpu_div(comet_rt_context *ctx, comet_rt_memref *am,
                         comet_rt_memref *bm, comet_rt_memref *ym) {
  return binary("div", am, bm, ym, [](float a, float b) { return a / b; });
}

int32_t comet_rt_cpu_compare(comet_rt_context *, comet_rt_memref *am,
                             comet_rt_memref *bm, comet_rt_memref *ym,
                             int64_t predicate) {
  switch (predicate) {
  case COMET_RT_COMPARE_GE:
    return binary<float, float, uint8_t>(
        "compare >=", am, bm, ym,
        [](float x, float z) { return uint8_t(x >= z); });
  case COMET_RT_COMPARE_LE:
    return binary<float, float, uint8_t>(
        "compare <=", am, bm, ym,
        [](float x, float z) { return uint8_t(x <= z); });
  case COMET_RT_COMPARE_EQ:
    return binary<float, float, uint8_t>(
        "compare ==", am, bm, ym,
        [](float x, float z) { return uint8_t(x == z); });
  }
  return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
              "compare: unknown predicate " + std::to_string(predicate));
}

int32_t comet_rt_cpu_and_i1(comet_rt_context *, comet_rt_memref *am,
                            comet_rt_memref *bm, comet_rt_memref *ym) {
  return binary<uint8_t, uint8_t, uint8_t>(
      "and", am, bm, ym,
      [](uint8_t x, uint8_t z) { return uint8_t(x != 0 && z != 0); });
}

int32_t comet_rt_cpu_where(comet_rt_context *, comet_rt_memref *cm,
                           comet_rt_memref *xm, comet_rt_memref *ym,
                           comet_rt_memref *om) {
  Tensor c, x, y, o;
  COMET_RT_TRY(view(cm, 1, "where condition", c));
  COMET_RT_TRY(view(xm, 4, "where X", x));
  COMET_RT_TRY(view(ym, 4, "where Y", y));
  COMET_RT_TRY(view(om, 4, "where output", o));
  std::vector<int64_t> cx, want, sc, sx, sy;
  COMET_RT_CHECK(broadcastShape(c.dims, x.dims, cx) &&
                     broadcastShape(cx, y.dims, want) && want == o.dims,
                 "where: condition ", shapeStr(c.dims), ", X ",
                 shapeStr(x.dims), " and Y ", shapeStr(y.dims),
                 " do not broadcast to the output ", shapeStr(o.dims));
  broadcastStrides(c.dims, o.dims, sc);
  broadcastStrides(x.dims, o.dims, sx);
  broadcastStrides(y.dims, o.dims, sy);
  const uint8_t *pc = c.as<uint8_t>();
  const float *px = x.f(), *py = y.f();
  float *po = o.f();
  int64_t n = o.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    po[i] = pc[bcastOffset(i, o.dims, sc)] ? px[bcastOffset(i, o.dims, sx)]
                                           : py[bcastOffset(i, o.dims, sy)];
  return ok();
}

int32_t comet_rt_cpu_cast_i1_f32(comet_rt_context *, comet_rt_memref *xm,
                                 comet_rt_memref *ym) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 1, "cast X", x));
  COMET_RT_TRY(view(ym, 4, "cast Y", y));
  COMET_RT_CHECK(x.dims == y.dims, "cast: X ", shapeStr(x.dims), " and Y ",
                 shapeStr(y.dims), " differ");
  const uint8_t *px = x.as<uint8_t>();
  float *py = y.f();
  int64_t n = y.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    py[i] = px[i] ? 1.0f : 0.0f;
  return ok();
}

int32_t comet_rt_cpu_clip(comet_rt_context *, comet_rt_memref *xm,
                          comet_rt_memref *minm, comet_rt_memref *maxm,
                          comet_rt_memref *ym) {
  Tensor x, lo, hi, y;
  COMET_RT_TRY(view(xm, 4, "clip X", x));
  COMET_RT_TRY(view(minm, 4, "clip min", lo, /*optional=*/true));
  COMET_RT_TRY(view(maxm, 4, "clip max", hi, /*optional=*/true));
  COMET_RT_TRY(view(ym, 4, "clip Y", y));
  COMET_RT_CHECK(x.dims == y.dims, "clip: X ", shapeStr(x.dims), " and Y ",
                 shapeStr(y.dims), " differ");
  float a = -INFINITY, b = INFINITY;
  if (lo.present)
    COMET_RT_TRY(scalar("clip: min", lo, a));
  if (hi.present)
    COMET_RT_TRY(scalar("clip: max", hi, b));
  const float *px = x.f();
  float *py = y.f();
  int64_t n = y.numel();
  // ONNX: min(max(x, min), max), so max wins when min > max; NaN stays.
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float v = px[i];
    v = v < a ? a : v;
    py[i] = v > b ? b : v;
  }
  return ok();
}

int32_t comet_rt_cpu_expand(comet_rt_context *ctx, comet_rt_memref *xm,
                            comet_rt_memref *sm, comet_rt_memref *ym) {
  Tensor x, s, y;
  COMET_RT_TRY(view(xm, 4, "expand X", x));
  COMET_RT_TRY(view(sm, 8, "expand shape", s));
  COMET_RT_TRY(view(ym, 4, "expand Y", y));
  COMET_RT_CHECK(s.rank() == 1, "expand: shape must be 1-D");
  // Y = broadcast(X dims, shape).
  std::vector<int64_t> shp(s.i64(), s.i64() + s.numel()), want;
  COMET_RT_CHECK(broadcastShape(x.dims, shp, want), "expand: X ",
                 shapeStr(x.dims), " and shape ", shapeStr(shp),
                 " do not broadcast");
  COMET_RT_CHECK(want == y.dims, "expand: Y is ", shapeStr(y.dims),
                 ", expected ", shapeStr(want));
  std::vector<int64_t> sx;
  broadcastStrides(x.dims, y.dims, sx);
  const float *px = x.f();
  float *py = y.f();
  int64_t n = y.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    py[i] = px[bcastOffset(i, y.dims, sx)];
  return ok();
}

int32_t comet_rt_cpu_scale(comet_rt_context *ctx, comet_rt_memref *xm,
                           comet_rt_memref *sm, comet_rt_memref *ym,
                           int64_t scaleDown) {
  Tensor x, s, y;
  COMET_RT_TRY(view(xm, 4, "scale X", x));
  COMET_RT_TRY(view(sm, 4, "scale factor", s));
  COMET_RT_TRY(view(ym, 4, "scale Y", y));
  COMET_RT_CHECK(x.dims == y.dims, "scale: X and Y shapes differ");
  float f;
  COMET_RT_TRY(scalar("scale: the factor", s, f));
  const float *a = x.f();
  float *b = y.f();
  int64_t n = x.numel();
  if (scaleDown) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i)
      b[i] = a[i] / f;
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i)
      b[i] = a[i] * f;
  }
  return ok();
}

static int32_t copyImpl(const char *op, comet_rt_memref *xm,
                        comet_rt_memref *ym, size_t elem) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, elem, op, x));
  COMET_RT_TRY(view(ym, elem, op, y));
  COMET_RT_CHECK(x.numel() == y.numel(), op, ": X ", shapeStr(x.dims),
                 " and Y ", shapeStr(y.dims), " differ in size");
  if (x.data != y.data)
    std::memmove(y.data, x.data, elem * x.numel());
  return ok();
}

int32_t comet_rt_cpu_identity(comet_rt_context *ctx, comet_rt_memref *xm,
                              comet_rt_memref *ym) {
  return copyImpl("identity", xm, ym, 4);
}

int32_t comet_rt_cpu_identity_i64(comet_rt_context *ctx, comet_rt_memref *xm,
                                  comet_rt_memref *ym) {
  return copyImpl("identity_i64", xm, ym, 8);
}

int32_t comet_rt_cpu_identity_i1(comet_rt_context *ctx, comet_rt_memref *xm,
                                 comet_rt_memref *ym) {
  return copyImpl("identity_i1", xm, ym, 1);
}

int32_t comet_rt_cpu_inplace_accumulator_v2(
    comet_rt_context *ctx, comet_rt_memref *bm, comet_rt_memref *vm,
    comet_rt_memref *om, comet_rt_memref *um, comet_rt_memref *outm) {
  const char *op = "inplace_accumulator_v2";
  Tensor buf, val, ow, upd, out;
  COMET_RT_TRY(view(bm, 4, "accumulator buffer", buf));
  COMET_RT_TRY(view(vm, 4, "accumulator value", val));
  COMET_RT_TRY(view(om, 1, "accumulator overwrite", ow, true));
  COMET_RT_TRY(view(um, 1, "accumulator updated", upd, true));
  COMET_RT_TRY(view(outm, 4, "accumulator buffer_out", out, true));
  COMET_RT_CHECK(buf.numel() == val.numel(), op, ": buffer ",
                 shapeStr(buf.dims), " and value ", shapeStr(val.dims),
                 " differ in size");
  if (!out.present)
    out = buf;
  COMET_RT_CHECK(out.numel() == buf.numel(), op,
                 ": buffer_out must have the buffer's size");
  bool overwrite = flag(ow, false);
  const float *b = buf.f(), *v = val.f();
  float *o = out.f();
  int64_t n = buf.numel();
  if (overwrite) {
    if (o != v)
      std::memmove(o, v, sizeof(float) * n);
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i)
      o[i] = b[i] + v[i];
  }
  // Keep the buffer itself updated too when a separate output is given,
  // as ORT aliases buffer_out to buffer.
  if (o != b)
    std::memcpy(const_cast<float *>(b), o, sizeof(float) * n);
  setFlag(upd, true);
  return ok();
}

int32_t comet_rt_cpu_adamw(comet_rt_context *ctx, comet_rt_memref *lrm,
                           comet_rt_memref *stepm, comet_rt_memref *wm,
                           comet_rt_memref *gm, comet_rt_memref *m1m,
                           comet_rt_memref *m2m, comet_rt_memref *sigm,
                           comet_rt_memref *flagm, float alpha, float beta,
                           float epsilon, float weightDecay, int64_t adamMode,
                           int64_t correctBias) {
  const char *op = "adamw";
  Tensor lrT, stepT, w, g, m1, m2, sig, fl;
  COMET_RT_TRY(view(lrm, 4, "adamw lr", lrT));
  COMET_RT_TRY(view(stepm, 8, "adamw step", stepT));
  COMET_RT_TRY(view(wm, 4, "adamw weight", w));
  COMET_RT_TRY(view(gm, 4, "adamw grad", g));
  COMET_RT_TRY(view(m1m, 4, "adamw m1", m1));
  COMET_RT_TRY(view(m2m, 4, "adamw m2", m2));
  COMET_RT_TRY(view(sigm, 1, "adamw update_signal", sig, true));
  COMET_RT_TRY(view(flagm, 1, "adamw updated_flag", fl, true));
  COMET_RT_CHECK(w.dims == g.dims && w.dims == m1.dims && w.dims == m2.dims, op,
                 ": weight, grad and moments must share a shape");
  COMET_RT_CHECK(adamMode == 0 || adamMode == 1, op, ": bad adam_mode");
  COMET_RT_CHECK(correctBias == 0 || correctBias == 1, op,
                 ": bad correct_bias");
  COMET_RT_CHECK(stepT.numel() == 1, op, ": step must have one element");
  float lr;
  COMET_RT_TRY(scalar("adamw: lr", lrT, lr));
  if (!flag(sig, true)) {
    setFlag(fl, false);
    return ok();
  }
  int64_t step = stepT.i64()[0];
  float alphaCorr = 1.0f, betaCorr = 1.0f, lrCorr = lr;
  if (correctBias) {
    // As ORT: pow in double, then float.
    alphaCorr = 1.0f - (float)std::pow((double)alpha, (double)step);
    betaCorr = 1.0f - (float)std::pow((double)beta, (double)step);
    lrCorr = lr * (std::sqrt(betaCorr) / alphaCorr);
  }
  float *pw = w.f(), *p1 = m1.f(), *p2 = m2.f();
  const float *pg = g.f();
  int64_t n = w.numel();
  if (adamMode == 0) {
    // PyTorch AdamW: decay first, bias correction on m and v.
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      float wi = pw[i] - pw[i] * lr * weightDecay;
      float a = alpha * p1[i] + (1.0f - alpha) * pg[i];
      float b = beta * p2[i] + (1.0f - beta) * pg[i] * pg[i];
      p1[i] = a;
      p2[i] = b;
      float denom = std::sqrt(b / betaCorr) + epsilon;
      pw[i] = wi - (lr * a) / (alphaCorr * denom);
    }
  } else {
    // Hugging Face AdamW: corrected lr, decay after the update.
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      float a = alpha * p1[i] + (1.0f - alpha) * pg[i];
      float b = beta * p2[i] + (1.0f - beta) * pg[i] * pg[i];
      p1[i] = a;
      p2[i] = b;
      float wi = pw[i] - lrCorr * a / (std::sqrt(b) + epsilon);
      pw[i] = wi - lr * weightDecay * wi;
    }
  }
  setFlag(fl, true);
  return ok();
}

int32_t comet_rt_cpu_sgd_v2(comet_rt_context *ctx, comet_rt_memref *lrm,
                            comet_rt_memref *wm, comet_rt_memref *gm,
                            comet_rt_memref *sigm, comet_rt_memref *flagm) {
  Tensor lrT, w, g, sig, fl;
  COMET_RT_TRY(view(lrm, 4, "sgd lr", lrT));
  COMET_RT_TRY(view(wm, 4, "sgd weight", w));
  COMET_RT_TRY(view(gm, 4, "sgd grad", g));
  COMET_RT_TRY(view(sigm, 1, "sgd update_signal", sig, true));
  COMET_RT_TRY(view(flagm, 1, "sgd update_completed", fl, true));
  COMET_RT_CHECK(w.dims == g.dims, "sgd_v2: weight and grad shapes differ");
  float lr;
  COMET_RT_TRY(scalar("sgd_v2: lr", lrT, lr));
  if (!flag(sig, true)) {
    setFlag(fl, false);
    return ok();
  }
  float *pw = w.f();
  const float *pg = g.f();
  int64_t n = w.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    pw[i] -= lr * pg[i];
  setFlag(fl, true);
  return ok();
}

int32_t comet_rt_cpu_sgd_momentum(comet_rt_context *ctx, comet_rt_memref *lrm,
                                  comet_rt_memref *wm, comet_rt_memref *gm,
                                  comet_rt_memref *vm, float momentum,
                                  float weightDecay, int64_t nesterov) {
  Tensor lrT, w, g, v;
  COMET_RT_TRY(view(lrm, 4, "sgd_momentum lr", lrT));
  COMET_RT_TRY(view(wm, 4, "sgd_momentum weight", w));
  COMET_RT_TRY(view(gm, 4, "sgd_momentum grad", g));
  COMET_RT_TRY(view(vm, 4, "sgd_momentum velocity", v));
  COMET_RT_CHECK(w.dims == g.dims && w.dims == v.dims,
                 "sgd_momentum: weight, grad and velocity shapes differ");
  float lr;
  COMET_RT_TRY(scalar("sgd_momentum: lr", lrT, lr));
  float *pw = w.f(), *pv = v.f();
  const float *pg = g.f();
  int64_t n = w.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float gi = pg[i] + weightDecay * pw[i];
    float vi = momentum * pv[i] + gi;
    pv[i] = vi;
    pw[i] -= lr * (nesterov ? gi + momentum * vi : vi);
  }
  return ok();
}

int32_t comet_rt_cpu_abs_mean_and_density(comet_rt_context *ctx,
                                          comet_rt_memref *xm,
                                          comet_rt_memref *om) {
  Tensor x, o;
  COMET_RT_TRY(view(xm, 4, "abs_mean X", x));
  COMET_RT_TRY(view(om, 4, "abs_mean out", o));
  COMET_RT_CHECK(o.numel() == 2, "abs_mean_and_density: out needs 2 elements");
  const float *p = x.f();
  int64_t n = x.numel();
  double s = 0;
  int64_t nz = 0;
#pragma omp parallel for reduction(+ : s, nz) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    s += std::fabs(p[i]);
    nz += p[i] != 0.0f;
  }
  o.f()[0] = n ? (float)(s / n) : 0.0f;
  o.f()[1] = n ? (float)((double)nz / n) : 0.0f;
  return ok();
}

} // extern "C"
