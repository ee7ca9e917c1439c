//===- GatherConcat.cpp - Kernels of exported eval and embedding graphs ---===//
//
// What torch's export leaves for an eval graph (LayerNorm as Pow/Sqrt, GELU
// as Erf), the Exp of an unfused GELU's gradient, and what ONNX Runtime's
// gradient builder writes for embeddings and concatenation: Gather and
// GatherGrad, Concat (one input at a time), Split and SplitTraining (one
// output at a time), a float-to-i64 Cast, and the Reciprocal of an exported
// attention's scale.
// oneDNN eltwise where it has the op, loops otherwise.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Dnnl.h"
#include "comet/runtime/exec.h"

#include <cmath>
#include <cstring>

using namespace comet::rt;
using dnnl::memory;

namespace {

/// A normalized axis of a rank-r tensor, or an error.
int32_t normAxis(const char *op, int64_t axis, int64_t r, int64_t &out) {
  COMET_RT_CHECK(axis >= -r && axis < r, op, ": axis ", axis,
                 " is out of range for rank ", r);
  out = axis < 0 ? axis + r : axis;
  return ok();
}

/// Indices normalized into [0, n); fails on one out of [-n, n).
int32_t normIndices(const char *op, const Tensor &indices, int64_t n,
                    std::vector<int64_t> &out) {
  out.resize(indices.numel());
  const int64_t *pi = indices.i64();
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t i = pi[k];
    COMET_RT_CHECK(i >= -n && i < n, op, ": index ", i,
                   " is out of range for a dim of size ", n);
    out[k] = i < 0 ? i + n : i;
  }
  return ok();
}

template <typename T>
int32_t gatherImpl(const char *op, comet_rt_memref *dm, comet_rt_memref *im,
                   comet_rt_memref *ym, int64_t axis) {
  Tensor data, indices, y;
  COMET_RT_TRY(view(dm, sizeof(T), concat(op, " data").c_str(), data));
  COMET_RT_TRY(view(im, 8, concat(op, " indices").c_str(), indices));
  COMET_RT_TRY(view(ym, sizeof(T), concat(op, " Y").c_str(), y));
  int64_t a;
  COMET_RT_TRY(normAxis(op, axis, data.rank(), a));
  std::vector<int64_t> want(data.dims.begin(), data.dims.begin() + a);
  want.insert(want.end(), indices.dims.begin(), indices.dims.end());
  want.insert(want.end(), data.dims.begin() + a + 1, data.dims.end());
  COMET_RT_CHECK(y.dims == want, op, ": Y ", shapeStr(y.dims), ", expected ",
                 shapeStr(want));
  int64_t n = data.dim(a), outer = product(data.dims, 0, a),
          inner = product(data.dims, a + 1, data.dims.size());
  std::vector<int64_t> idx;
  COMET_RT_TRY(normIndices(op, indices, n, idx));
  int64_t k = idx.size();
  const T *pd = data.as<T>();
  T *py = y.as<T>();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(py + (o * k + j) * inner, pd + (o * n + idx[j]) * inner,
                  sizeof(T) * inner);
  return ok();
}

/// Copies X into Y's [offset, offset + len) along axis (toY), or that
/// range of X into Y (!toY); len is the axis length of the smaller one.
template <typename T>
int32_t partImpl(const char *op, comet_rt_memref *xm, comet_rt_memref *ym,
                 int64_t axis, int64_t offset, bool toY) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, sizeof(T), concat(op, " X").c_str(), x));
  COMET_RT_TRY(view(ym, sizeof(T), concat(op, " Y").c_str(), y));
  COMET_RT_CHECK(x.rank() == y.rank(), op, ": X ", shapeStr(x.dims), " and Y ",
                 shapeStr(y.dims), " differ in rank");
  int64_t a;
  COMET_RT_TRY(normAxis(op, axis, x.rank(), a));
  const Tensor &whole = toY ? y : x, &part = toY ? x : y;
  for (int64_t d = 0; d < x.rank(); ++d)
    COMET_RT_CHECK(d == a || x.dim(d) == y.dim(d), op, ": X ", shapeStr(x.dims),
                   " and Y ", shapeStr(y.dims), " differ in dim ", d);
  int64_t len = part.dim(a), total = whole.dim(a);
  COMET_RT_CHECK(offset >= 0 && offset + len <= total, op, ": [", offset, ", ",
                 offset + len, ") is out of range for a dim of size ", total);
  int64_t outer = product(x.dims, 0, a),
          inner = product(x.dims, a + 1, x.dims.size());
  const T *src = x.as<T>();
  T *dst = y.as<T>();
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    int64_t w = (o * total + offset) * inner, p = o * len * inner;
    if (toY)
      std::memcpy(dst + w, src + p, sizeof(T) * len * inner);
    else
      std::memcpy(dst + p, src + w, sizeof(T) * len * inner);
  }
  return ok();
}

/// Y = f(X) elementwise, for the functions oneDNN's eltwise lacks.
template <typename Fn>
int32_t unaryLoop(const char *op, comet_rt_memref *xm, comet_rt_memref *ym,
                  Fn f) {
  Tensor x, y;
  COMET_RT_TRY(unaryViews(op, xm, ym, x, y));
  const float *px = x.f();
  float *py = y.f();
  int64_t n = x.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    py[i] = f(px[i]);
  return ok();
}

} // namespace

extern "C" {

int32_t comet_rt_cpu_pow(comet_rt_context *ctx, comet_rt_memref *am,
                         comet_rt_memref *bm, comet_rt_memref *ym) {
  const char *op = "pow";
  Tensor a, b, y;
  COMET_RT_TRY(view(am, 4, "pow A", a));
  COMET_RT_TRY(view(bm, 4, "pow B", b));
  COMET_RT_TRY(view(ym, 4, "pow Y", y));
  // numpy broadcasting: Y's dims, and each input's strides in Y's index
  // space (0 on broadcast dims).
  size_t r = std::max(a.dims.size(), b.dims.size());
  std::vector<int64_t> want(r), sa(r, 0), sb(r, 0);
  int64_t stA = 1, stB = 1;
  for (size_t i = r; i-- > 0;) {
    int64_t da = i + a.dims.size() >= r ? a.dims[i + a.dims.size() - r] : 1;
    int64_t db = i + b.dims.size() >= r ? b.dims[i + b.dims.size() - r] : 1;
    COMET_RT_CHECK(da == db || da == 1 || db == 1, op, ": A ", shapeStr(a.dims),
                   " and B ", shapeStr(b.dims), " do not broadcast");
    want[i] = da == 1 ? db : da;
    sa[i] = da == 1 ? 0 : stA;
    sb[i] = db == 1 ? 0 : stB;
    stA *= da;
    stB *= db;
  }
  COMET_RT_CHECK(want == y.dims, op, ": Y ", shapeStr(y.dims),
                 ", the broadcast is ", shapeStr(want));
  if (b.numel() == 1 && a.dims == y.dims)
    return eltwiseImpl(ctx, op, dnnl::algorithm::eltwise_pow, 1.f, b.f()[0], a,
                       y);
  const float *pa = a.f(), *pb = b.f();
  float *py = y.f();
  int64_t n = y.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    int64_t oa = 0, ob = 0, idx = i;
    for (size_t d = r; d-- > 0 && idx;) {
      int64_t c = idx % want[d];
      idx /= want[d];
      oa += c * sa[d];
      ob += c * sb[d];
    }
    py[i] = std::pow(pa[oa], pb[ob]);
  }
  return ok();
}

int32_t comet_rt_cpu_sqrt(comet_rt_context *ctx, comet_rt_memref *xm,
                          comet_rt_memref *ym) {
  return eltwiseForward(ctx, "sqrt", dnnl::algorithm::eltwise_sqrt, xm, ym);
}

int32_t comet_rt_cpu_exp(comet_rt_context *ctx, comet_rt_memref *xm,
                         comet_rt_memref *ym) {
  return eltwiseForward(ctx, "exp", dnnl::algorithm::eltwise_exp, xm, ym);
}

int32_t comet_rt_cpu_erf(comet_rt_context *, comet_rt_memref *xm,
                         comet_rt_memref *ym) {
  // oneDNN has erf only inside gelu_erf: a loop.
  return unaryLoop("erf", xm, ym, [](float v) { return std::erf(v); });
}

int32_t comet_rt_cpu_reciprocal(comet_rt_context *, comet_rt_memref *xm,
                                comet_rt_memref *ym) {
  return unaryLoop("reciprocal", xm, ym, [](float v) { return 1.0f / v; });
}

int32_t comet_rt_cpu_cast_f32_i64(comet_rt_context *, comet_rt_memref *xm,
                                  comet_rt_memref *ym) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "cast_f32_i64 X", x));
  COMET_RT_TRY(view(ym, 8, "cast_f32_i64 Y", y));
  COMET_RT_CHECK(x.dims == y.dims, "cast_f32_i64: X ", shapeStr(x.dims),
                 " and Y ", shapeStr(y.dims), " differ");
  const float *px = x.f();
  int64_t *py = y.i64();
  int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    COMET_RT_CHECK(std::isfinite(px[i]) && std::fabs(px[i]) < 9.2e18f,
                   "cast_f32_i64: ", px[i], " does not fit in i64");
    py[i] = static_cast<int64_t>(px[i]);
  }
  return ok();
}

int32_t comet_rt_cpu_gather(comet_rt_context *, comet_rt_memref *dm,
                            comet_rt_memref *im, comet_rt_memref *ym,
                            int64_t axis) {
  return gatherImpl<float>("gather", dm, im, ym, axis);
}

int32_t comet_rt_cpu_gather_i64(comet_rt_context *, comet_rt_memref *dm,
                                comet_rt_memref *im, comet_rt_memref *ym,
                                int64_t axis) {
  return gatherImpl<int64_t>("gather_i64", dm, im, ym, axis);
}

int32_t comet_rt_cpu_gather_grad(comet_rt_context *, comet_rt_memref *im,
                                 comet_rt_memref *dym, comet_rt_memref *dxm,
                                 int64_t axis) {
  const char *op = "gather_grad";
  Tensor indices, dy, dx;
  COMET_RT_TRY(view(im, 8, "gather_grad indices", indices));
  COMET_RT_TRY(view(dym, 4, "gather_grad dY", dy));
  COMET_RT_TRY(view(dxm, 4, "gather_grad dX", dx));
  int64_t a;
  COMET_RT_TRY(normAxis(op, axis, dx.rank(), a));
  std::vector<int64_t> want(dx.dims.begin(), dx.dims.begin() + a);
  want.insert(want.end(), indices.dims.begin(), indices.dims.end());
  want.insert(want.end(), dx.dims.begin() + a + 1, dx.dims.end());
  COMET_RT_CHECK(dy.dims == want, op, ": dY ", shapeStr(dy.dims), ", expected ",
                 shapeStr(want));
  int64_t n = dx.dim(a), outer = product(dx.dims, 0, a),
          inner = product(dx.dims, a + 1, dx.dims.size());
  std::vector<int64_t> idx;
  COMET_RT_TRY(normIndices(op, indices, n, idx));
  int64_t k = idx.size();
  const float *pdy = dy.f();
  float *pdx = dx.f();
  std::memset(pdx, 0, sizeof(float) * dx.numel());
  // Each (outer, inner) pair owns its column of dX: repeated indices add
  // up in index order without races.
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < inner; ++c)
      for (int64_t j = 0; j < k; ++j)
        pdx[(o * n + idx[j]) * inner + c] += pdy[(o * k + j) * inner + c];
  return ok();
}

int32_t comet_rt_cpu_concat_part(comet_rt_context *, comet_rt_memref *xm,
                                 comet_rt_memref *ym, int64_t axis,
                                 int64_t offset) {
  return partImpl<float>("concat_part", xm, ym, axis, offset, true);
}

int32_t comet_rt_cpu_concat_part_i64(comet_rt_context *, comet_rt_memref *xm,
                                     comet_rt_memref *ym, int64_t axis,
                                     int64_t offset) {
  return partImpl<int64_t>("concat_part_i64", xm, ym, axis, offset, true);
}

int32_t comet_rt_cpu_split_part(comet_rt_context *, comet_rt_memref *xm,
                                comet_rt_memref *ym, int64_t axis,
                                int64_t offset) {
  return partImpl<float>("split_part", xm, ym, axis, offset, false);
}

} // extern "C"
