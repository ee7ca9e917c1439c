//===- Dnnl.cpp - Kernels on oneDNN primitives ----------------------------===//
//
// Convolution (forward, backward data, backward weights and bias), Gemm and
// MatMul (oneDNN matmul; transposes are strides), batch normalization
// forward and backward, softmax / log-softmax and ReduceSum. Primitives are
// created once per shape and attribute key and cached; they run in
// user-scratchpad mode with the scratchpad from comet_rt_alloc (workspace).
//
//===----------------------------------------------------------------------===//

#include "Dnnl.h"
#include "Backend.h"
#include "comet/runtime/exec.h"

#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>

using namespace comet::rt;
using dnnl::memory;
using tag = dnnl::memory::format_tag;
static constexpr auto f32 = dnnl::memory::data_type::f32;

namespace comet::rt {

dnnl::engine &engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream &stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

namespace {
std::mutex cacheMutex;
std::unordered_map<std::string, Primitive> &cache() {
  static auto *c = new std::unordered_map<std::string, Primitive>();
  return *c;
}
} // namespace

Primitive getPrimitive(const std::string &key,
                       const std::function<Primitive()> &make) {
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    auto it = cache().find(key);
    if (it != cache().end())
      return it->second;
  }
  Primitive p = make(); // may throw; created outside the lock
  std::lock_guard<std::mutex> lock(cacheMutex);
  return cache().emplace(key, p).first->second;
}

dnnl::primitive_attr userScratchpadAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void execute(comet_rt_context *ctx, const Primitive &p,
             std::unordered_map<int, memory> args) {
  std::optional<Workspace> scratch;
  if (size_t bytes = p.scratchpad.get_size()) {
    scratch.emplace(ctx, bytes);
    args[DNNL_ARG_SCRATCHPAD] = mem(p.scratchpad, scratch->get());
  }
  p.prim.execute(stream(), args);
  stream().wait();
}

memory::desc plainMd(const std::vector<int64_t> &dims) {
  memory::dims d(dims.begin(), dims.end());
  memory::dims strides(d.size());
  int64_t s = 1;
  for (int64_t i = (int64_t)d.size() - 1; i >= 0; --i) {
    strides[i] = s;
    s *= d[i];
  }
  return memory::desc(d, f32, strides);
}

memory mem(const memory::desc &md, void *data) {
  return memory(md, engine(), data);
}

std::string key(const char *op, std::initializer_list<int64_t> ints,
                const std::vector<int64_t> &more) {
  std::string k = op;
  for (int64_t v : ints)
    k += ":" + std::to_string(v);
  k += "|";
  for (int64_t v : more)
    k += ":" + std::to_string(v);
  return k;
}

int32_t guard(const char *op, const std::function<int32_t()> &body) {
  try {
    return body();
  } catch (const dnnl::error &e) {
    return fail(
        COMET_RT_ERROR_BACKEND,
        concat(op, ": oneDNN: ", e.what(), " (status ", (int)e.status, ")"));
  } catch (const std::bad_alloc &) {
    return fail(COMET_RT_ERROR_OUT_OF_MEMORY, concat(op, ": out of memory"));
  } catch (const std::exception &e) {
    return fail(COMET_RT_ERROR_BACKEND, concat(op, ": ", e.what()));
  }
}

} // namespace comet::rt

namespace {

struct ConvShape {
  int64_t n, c, h, w, m, kh, kw, oh, ow, group;
  memory::dims strides, dilates, padL, padR;
  memory::desc src, wei, dst, bias;
};

int32_t convShape(const char *op, const Tensor &x, const Tensor &w,
                  const Tensor &y, int64_t sH, int64_t sW, int64_t pT,
                  int64_t pL, int64_t pB, int64_t pR, int64_t dH, int64_t dW,
                  int64_t group, ConvShape &s) {
  COMET_RT_CHECK(x.rank() == 4 && w.rank() == 4 && y.rank() == 4, op,
                 ": X, W and Y must be 4-D (NCHW), got ", shapeStr(x.dims),
                 ", ", shapeStr(w.dims), ", ", shapeStr(y.dims));
  COMET_RT_CHECK(sH > 0 && sW > 0 && dH > 0 && dW > 0 && group > 0 && pT >= 0 &&
                     pL >= 0 && pB >= 0 && pR >= 0,
                 op, ": bad strides, dilations, pads or group");
  s = ConvShape{x.dim(0), x.dim(1), x.dim(2), x.dim(3), w.dim(0),
                w.dim(2), w.dim(3), y.dim(2), y.dim(3), group};
  COMET_RT_CHECK(
      s.c % group == 0 && s.m % group == 0 && w.dim(1) == s.c / group, op,
      ": W ", shapeStr(w.dims), " does not fit C=", s.c, " group=", group);
  int64_t eoh = (s.h + pT + pB - ((s.kh - 1) * dH + 1)) / sH + 1;
  int64_t eow = (s.w + pL + pR - ((s.kw - 1) * dW + 1)) / sW + 1;
  COMET_RT_CHECK(y.dim(0) == s.n && y.dim(1) == s.m && eoh == s.oh &&
                     eow == s.ow,
                 op, ": Y is ", shapeStr(y.dims), ", expected ",
                 shapeStr({s.n, s.m, eoh, eow}));
  s.strides = {sH, sW};
  s.dilates = {dH - 1, dW - 1};
  s.padL = {pT, pL};
  s.padR = {pB, pR};
  s.src = memory::desc({s.n, s.c, s.h, s.w}, f32, tag::nchw);
  s.dst = memory::desc({s.n, s.m, s.oh, s.ow}, f32, tag::nchw);
  s.wei = group == 1
              ? memory::desc({s.m, s.c, s.kh, s.kw}, f32, tag::oihw)
              : memory::desc({group, s.m / group, s.c / group, s.kh, s.kw}, f32,
                             tag::goihw);
  s.bias = memory::desc({s.m}, f32, tag::x);
  return COMET_RT_SUCCESS;
}

std::string convKey(const char *op, const ConvShape &s, bool bias) {
  return key(op, {s.n, s.c, s.h, s.w, s.m, s.kh, s.kw, s.oh, s.ow, s.group,
                  s.strides[0], s.strides[1], s.dilates[0], s.dilates[1],
                  s.padL[0], s.padL[1], s.padR[0], s.padR[1], (int64_t)bias});
}

dnnl::convolution_forward::primitive_desc convFwdPd(const ConvShape &s,
                                                    bool bias) {
  using cf = dnnl::convolution_forward;
  cf::desc d =
      bias ? cf::desc(dnnl::prop_kind::forward_training,
                      dnnl::algorithm::convolution_direct, s.src, s.wei, s.bias,
                      s.dst, s.strides, s.dilates, s.padL, s.padR)
           : cf::desc(dnnl::prop_kind::forward_training,
                      dnnl::algorithm::convolution_direct, s.src, s.wei, s.dst,
                      s.strides, s.dilates, s.padL, s.padR);
  return cf::primitive_desc(d, userScratchpadAttr(), engine());
}

} // namespace

extern "C" {

int32_t comet_rt_cpu_conv2d(comet_rt_context *ctx, comet_rt_memref *xm,
                            comet_rt_memref *wm, comet_rt_memref *bm,
                            comet_rt_memref *ym, int64_t sH, int64_t sW,
                            int64_t pT, int64_t pL, int64_t pB, int64_t pR,
                            int64_t dH, int64_t dW, int64_t group) {
  const char *op = "conv2d";
  Tensor x, w, b, y;
  COMET_RT_TRY(view(xm, 4, "conv2d X", x));
  COMET_RT_TRY(view(wm, 4, "conv2d W", w));
  COMET_RT_TRY(view(bm, 4, "conv2d B", b, /*optional=*/true));
  COMET_RT_TRY(view(ym, 4, "conv2d Y", y));
  ConvShape s;
  COMET_RT_TRY(
      convShape(op, x, w, y, sH, sW, pT, pL, pB, pR, dH, dW, group, s));
  COMET_RT_CHECK(!b.present || b.numel() == s.m, op, ": B has ", b.numel(),
                 " elements, expected ", s.m);
  return guard(op, [&] {
    Primitive p = getPrimitive(convKey(op, s, b.present), [&] {
      auto pd = convFwdPd(s, b.present);
      return Primitive{dnnl::convolution_forward(pd), pd.scratchpad_desc()};
    });
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(s.src, x.data)},
                                         {DNNL_ARG_WEIGHTS, mem(s.wei, w.data)},
                                         {DNNL_ARG_DST, mem(s.dst, y.data)}};
    if (b.present)
      args[DNNL_ARG_BIAS] = mem(s.bias, b.data);
    execute(ctx, p, args);
    return ok();
  });
}

int32_t comet_rt_cpu_conv_grad2d(comet_rt_context *ctx, comet_rt_memref *dym,
                                 comet_rt_memref *xm, comet_rt_memref *wm,
                                 comet_rt_memref *dxm, comet_rt_memref *dwm,
                                 comet_rt_memref *dbm, int64_t sH, int64_t sW,
                                 int64_t pT, int64_t pL, int64_t pB, int64_t pR,
                                 int64_t dH, int64_t dW, int64_t group) {
  const char *op = "conv_grad2d";
  Tensor dy, x, w, dx, dw, db;
  COMET_RT_TRY(view(dym, 4, "conv_grad2d dY", dy));
  COMET_RT_TRY(view(xm, 4, "conv_grad2d X", x));
  COMET_RT_TRY(view(wm, 4, "conv_grad2d W", w));
  COMET_RT_TRY(view(dxm, 4, "conv_grad2d dX", dx, true));
  COMET_RT_TRY(view(dwm, 4, "conv_grad2d dW", dw, true));
  COMET_RT_TRY(view(dbm, 4, "conv_grad2d dB", db, true));
  ConvShape s;
  COMET_RT_TRY(
      convShape(op, x, w, dy, sH, sW, pT, pL, pB, pR, dH, dW, group, s));
  COMET_RT_CHECK(!dx.present || dx.dims == x.dims, op, ": dX is ",
                 shapeStr(dx.dims), ", X is ", shapeStr(x.dims));
  COMET_RT_CHECK(!dw.present || dw.dims == w.dims, op, ": dW is ",
                 shapeStr(dw.dims), ", W is ", shapeStr(w.dims));
  COMET_RT_CHECK(!db.present || db.numel() == s.m, op, ": dB has ", db.numel(),
                 " elements, expected ", s.m);
  COMET_RT_CHECK(!db.present || dw.present, op,
                 ": dB without dW is not supported");
  return guard(op, [&] {
    if (dx.present) {
      Primitive p = getPrimitive(convKey("conv_bwd_data", s, false), [&] {
        auto fwd = convFwdPd(s, false);
        using cb = dnnl::convolution_backward_data;
        cb::desc d(dnnl::algorithm::convolution_direct, s.src, s.wei, s.dst,
                   s.strides, s.dilates, s.padL, s.padR);
        cb::primitive_desc pd(d, userScratchpadAttr(), engine(), fwd);
        return Primitive{cb(pd), pd.scratchpad_desc()};
      });
      execute(ctx, p,
              {{DNNL_ARG_DIFF_DST, mem(s.dst, dy.data)},
               {DNNL_ARG_WEIGHTS, mem(s.wei, w.data)},
               {DNNL_ARG_DIFF_SRC, mem(s.src, dx.data)}});
    }
    if (dw.present) {
      bool bias = db.present;
      Primitive p = getPrimitive(convKey("conv_bwd_weights", s, bias), [&] {
        auto fwd = convFwdPd(s, bias);
        using cb = dnnl::convolution_backward_weights;
        cb::desc d =
            bias ? cb::desc(dnnl::algorithm::convolution_direct, s.src, s.wei,
                            s.bias, s.dst, s.strides, s.dilates, s.padL, s.padR)
                 : cb::desc(dnnl::algorithm::convolution_direct, s.src, s.wei,
                            s.dst, s.strides, s.dilates, s.padL, s.padR);
        cb::primitive_desc pd(d, userScratchpadAttr(), engine(), fwd);
        return Primitive{cb(pd), pd.scratchpad_desc()};
      });
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, mem(s.src, x.data)},
          {DNNL_ARG_DIFF_DST, mem(s.dst, dy.data)},
          {DNNL_ARG_DIFF_WEIGHTS, mem(s.wei, dw.data)}};
      if (bias)
        args[DNNL_ARG_DIFF_BIAS] = mem(s.bias, db.data);
      execute(ctx, p, args);
    }
    return ok();
  });
}

int32_t comet_rt_cpu_gemm(comet_rt_context *ctx, comet_rt_memref *am,
                          comet_rt_memref *bm, comet_rt_memref *cm,
                          comet_rt_memref *ym, float alpha, float beta,
                          int64_t transA, int64_t transB) {
  const char *op = "gemm";
  Tensor a, b, c, y;
  COMET_RT_TRY(view(am, 4, "gemm A", a));
  COMET_RT_TRY(view(bm, 4, "gemm B", b));
  COMET_RT_TRY(view(cm, 4, "gemm C", c, true));
  COMET_RT_TRY(view(ym, 4, "gemm Y", y));
  COMET_RT_CHECK(a.rank() == 2 && b.rank() == 2 && y.rank() == 2, op,
                 ": A, B and Y must be 2-D");
  int64_t m = transA ? a.dim(1) : a.dim(0), k = transA ? a.dim(0) : a.dim(1);
  int64_t kb = transB ? b.dim(1) : b.dim(0), n = transB ? b.dim(0) : b.dim(1);
  COMET_RT_CHECK(k == kb && y.dim(0) == m && y.dim(1) == n, op, ": A ",
                 shapeStr(a.dims), " B ", shapeStr(b.dims), " Y ",
                 shapeStr(y.dims), " do not fit transA=", transA,
                 " transB=", transB);
  bool useC = c.present && beta != 0.0f;
  // C's broadcast to [M, N]: rows/cols of 1 repeat.
  int64_t cRows = 1, cCols = 1;
  if (useC) {
    COMET_RT_CHECK(c.rank() <= 2, op, ": C must have rank <= 2");
    if (c.rank() == 1)
      cCols = c.dim(0);
    else if (c.rank() == 2) {
      cRows = c.dim(0);
      cCols = c.dim(1);
    }
    COMET_RT_CHECK((cRows == 1 || cRows == m) && (cCols == 1 || cCols == n), op,
                   ": C ", shapeStr(c.dims), " does not broadcast to ",
                   shapeStr({m, n}));
  }
  if (m == 0 || n == 0)
    return ok();
  // Y starts as C broadcast, which the matmul's sum post-op scales by beta.
  if (useC) {
    float *yd = y.f();
    const float *cd = c.f();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        yd[i * n + j] = cd[(cRows == 1 ? 0 : i) * cCols + (cCols == 1 ? 0 : j)];
  }
  std::vector<int64_t> ad = a.dims, as = plainStrides(ad), bd = b.dims,
                       bs = plainStrides(bd);
  if (transA) {
    std::swap(ad[0], ad[1]);
    std::swap(as[0], as[1]);
  }
  if (transB) {
    std::swap(bd[0], bd[1]);
    std::swap(bs[0], bs[1]);
  }
  return matmulImpl(ctx, op, a, b, y, ad, as, bd, bs, alpha,
                    /*keepsLastTwo=*/true,
                    concat(" transA=", transA, " transB=", transB),
                    useC ? std::optional<float>(beta) : std::nullopt);
}

int32_t comet_rt_cpu_matmul(comet_rt_context *ctx, comet_rt_memref *am,
                            comet_rt_memref *bm, comet_rt_memref *ym) {
  const char *op = "matmul";
  Tensor a, b, y;
  COMET_RT_TRY(view(am, 4, "matmul A", a));
  COMET_RT_TRY(view(bm, 4, "matmul B", b));
  COMET_RT_TRY(view(ym, 4, "matmul Y", y));
  COMET_RT_CHECK(a.rank() >= 1 && b.rank() >= 1, op,
                 ": operands must have rank >= 1");
  // numpy: a rank-1 A is a row, a rank-1 B a column.
  std::vector<int64_t> ad = a.dims, bd = b.dims;
  if (ad.size() == 1)
    ad.insert(ad.begin(), 1);
  if (bd.size() == 1)
    bd.push_back(1);
  size_t r = std::max(ad.size(), bd.size());
  ad.insert(ad.begin(), r - ad.size(), 1);
  bd.insert(bd.begin(), r - bd.size(), 1);
  return matmulImpl(ctx, op, a, b, y, ad, plainStrides(ad), bd,
                    plainStrides(bd), 1.0f, /*keepsLastTwo=*/false, "");
}

int32_t comet_rt_cpu_batch_norm_internal(
    comet_rt_context *ctx, comet_rt_memref *xm, comet_rt_memref *scm,
    comet_rt_memref *bm, comet_rt_memref *imm, comet_rt_memref *ivm,
    comet_rt_memref *ym, comet_rt_memref *rmm, comet_rt_memref *rvm,
    comet_rt_memref *smm, comet_rt_memref *sim, float epsilon, float momentum,
    int64_t trainingMode) {
  const char *op = "batch_norm_internal";
  Tensor x, sc, b, im, iv, y, rm, rv, sm, si;
  COMET_RT_TRY(view(xm, 4, "batch_norm X", x));
  COMET_RT_TRY(view(scm, 4, "batch_norm scale", sc));
  COMET_RT_TRY(view(bm, 4, "batch_norm B", b));
  COMET_RT_TRY(view(imm, 4, "batch_norm input_mean", im));
  COMET_RT_TRY(view(ivm, 4, "batch_norm input_var", iv));
  COMET_RT_TRY(view(ym, 4, "batch_norm Y", y));
  COMET_RT_TRY(view(rmm, 4, "batch_norm running_mean", rm, true));
  COMET_RT_TRY(view(rvm, 4, "batch_norm running_var", rv, true));
  COMET_RT_TRY(view(smm, 4, "batch_norm saved_mean", sm, true));
  COMET_RT_TRY(view(sim, 4, "batch_norm saved_inv_std", si, true));
  COMET_RT_CHECK(x.rank() >= 2 && x.rank() <= 5 && y.dims == x.dims, op,
                 ": X must have rank 2..5 and Y its shape; X ",
                 shapeStr(x.dims), " Y ", shapeStr(y.dims));
  int64_t c = x.dim(1);
  for (const Tensor *t : {&sc, &b, &im, &iv})
    COMET_RT_CHECK(t->numel() == c, op, ": per-channel inputs need ", c,
                   " elements");
  for (const Tensor *t : {&rm, &rv, &sm, &si})
    COMET_RT_CHECK(!t->present || t->numel() == c, op,
                   ": per-channel outputs need ", c, " elements");
  COMET_RT_CHECK(trainingMode ||
                     !(rm.present || rv.present || sm.present || si.present),
                 op, ": inference mode has only the Y output");
  if (x.numel() == 0)
    return ok();
  auto flags = dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
  if (!trainingMode)
    flags = flags | dnnl::normalization_flags::use_global_stats;
  uint32_t epsBits;
  std::memcpy(&epsBits, &epsilon, 4);
  return guard(op, [&] {
    memory::desc xMd = plainMd(x.dims), cMd({c}, f32, tag::x);
    Primitive p = getPrimitive(
        key(op, {trainingMode != 0, (int64_t)epsBits}, x.dims), [&] {
          using bf = dnnl::batch_normalization_forward;
          bf::desc d(trainingMode ? dnnl::prop_kind::forward_training
                                  : dnnl::prop_kind::forward_inference,
                     xMd, epsilon, flags);
          bf::primitive_desc pd(d, userScratchpadAttr(), engine());
          return Primitive{bf(pd), pd.scratchpad_desc()};
        });
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(xMd, x.data)},
                                         {DNNL_ARG_DST, mem(xMd, y.data)},
                                         {DNNL_ARG_SCALE, mem(cMd, sc.data)},
                                         {DNNL_ARG_SHIFT, mem(cMd, b.data)}};
    if (!trainingMode) {
      args[DNNL_ARG_MEAN] = mem(cMd, im.data);
      args[DNNL_ARG_VARIANCE] = mem(cMd, iv.data);
      execute(ctx, p, args);
      return ok();
    }
    // Batch statistics into a temporary (outputs may be absent).
    Workspace statsBuf(ctx, 2 * c * sizeof(float));
    float *stats = statsBuf.f();
    args[DNNL_ARG_MEAN] = mem(cMd, stats);
    args[DNNL_ARG_VARIANCE] = mem(cMd, stats + c);
    execute(ctx, p, args);
    for (int64_t i = 0; i < c; ++i) {
      float mean = stats[i], var = stats[c + i];
      float inMean = im.f()[i], inVar = iv.f()[i];
      if (rm.present)
        rm.f()[i] = inMean * momentum + mean * (1.0f - momentum);
      if (rv.present)
        rv.f()[i] = inVar * momentum + var * (1.0f - momentum);
      if (sm.present)
        sm.f()[i] = mean;
      if (si.present)
        si.f()[i] = 1.0f / std::sqrt(var + epsilon);
    }
    return ok();
  });
}

int32_t comet_rt_cpu_batch_norm_grad(comet_rt_context *ctx,
                                     comet_rt_memref *dym, comet_rt_memref *xm,
                                     comet_rt_memref *scm, comet_rt_memref *smm,
                                     comet_rt_memref *sim, comet_rt_memref *dxm,
                                     comet_rt_memref *dsm, comet_rt_memref *dbm,
                                     float epsilon) {
  const char *op = "batch_norm_grad";
  Tensor dy, x, sc, sm, si, dx, ds, db;
  COMET_RT_TRY(view(dym, 4, "batch_norm_grad dY", dy));
  COMET_RT_TRY(view(xm, 4, "batch_norm_grad X", x));
  COMET_RT_TRY(view(scm, 4, "batch_norm_grad scale", sc));
  COMET_RT_TRY(view(smm, 4, "batch_norm_grad saved_mean", sm));
  COMET_RT_TRY(view(sim, 4, "batch_norm_grad saved_inv_std", si));
  COMET_RT_TRY(view(dxm, 4, "batch_norm_grad dX", dx));
  COMET_RT_TRY(view(dsm, 4, "batch_norm_grad dScale", ds));
  COMET_RT_TRY(view(dbm, 4, "batch_norm_grad dBias", db));
  COMET_RT_CHECK(x.rank() >= 2 && x.rank() <= 5 && dy.dims == x.dims &&
                     dx.dims == x.dims,
                 op, ": dY, X and dX must share a shape of rank 2..5");
  int64_t c = x.dim(1);
  for (const Tensor *t : {&sc, &sm, &si, &ds, &db})
    COMET_RT_CHECK(t->numel() == c, op, ": per-channel operands need ", c,
                   " elements");
  if (x.numel() == 0)
    return ok();
  uint32_t epsBits;
  std::memcpy(&epsBits, &epsilon, 4);
  return guard(op, [&] {
    auto flags = dnnl::normalization_flags::use_scale |
                 dnnl::normalization_flags::use_shift;
    memory::desc xMd = plainMd(x.dims), cMd({c}, f32, tag::x);
    Primitive p = getPrimitive(key(op, {(int64_t)epsBits}, x.dims), [&] {
      using bf = dnnl::batch_normalization_forward;
      using bb = dnnl::batch_normalization_backward;
      bf::primitive_desc fwd(
          bf::desc(dnnl::prop_kind::forward_training, xMd, epsilon, flags),
          userScratchpadAttr(), engine());
      bb::primitive_desc pd(
          bb::desc(dnnl::prop_kind::backward, xMd, xMd, epsilon, flags),
          userScratchpadAttr(), engine(), fwd);
      return Primitive{bb(pd), pd.scratchpad_desc()};
    });
    // oneDNN wants the variance; ORT saves 1/sqrt(var + eps).
    Workspace varBuf(ctx, c * sizeof(float));
    float *var = varBuf.f();
    for (int64_t i = 0; i < c; ++i) {
      double s = si.f()[i];
      var[i] = (float)(1.0 / (s * s) - (double)epsilon);
    }
    execute(ctx, p,
            {{DNNL_ARG_SRC, mem(xMd, x.data)},
             {DNNL_ARG_DIFF_DST, mem(xMd, dy.data)},
             {DNNL_ARG_MEAN, mem(cMd, sm.data)},
             {DNNL_ARG_VARIANCE, mem(cMd, var)},
             {DNNL_ARG_SCALE, mem(cMd, sc.data)},
             // oneDNN 2.6 lists the shift as an input of the backward
             // pass with use_shift although dX does not depend on it.
             {DNNL_ARG_SHIFT, mem(cMd, sc.data)},
             {DNNL_ARG_DIFF_SRC, mem(xMd, dx.data)},
             {DNNL_ARG_DIFF_SCALE, mem(cMd, ds.data)},
             {DNNL_ARG_DIFF_SHIFT, mem(cMd, db.data)}});
    return ok();
  });
}

} // extern "C"

namespace comet::rt {

int32_t softmaxImpl(comet_rt_context *ctx, const char *op, const Tensor &x,
                    const Tensor &y, int64_t axis, bool log) {
  COMET_RT_CHECK(x.dims == y.dims && x.rank() >= 1, op,
                 ": X and Y must share a shape of rank >= 1");
  if (axis < 0)
    axis += x.rank();
  COMET_RT_CHECK(axis >= 0 && axis < x.rank(), op, ": bad axis");
  int64_t outer = 1, inner = 1, mid = x.dim(axis);
  for (int64_t i = 0; i < axis; ++i)
    outer *= x.dim(i);
  for (int64_t i = axis + 1; i < x.rank(); ++i)
    inner *= x.dim(i);
  if (x.numel() == 0)
    return ok();
  return guard(op, [&] {
    memory::desc md({outer, mid, inner}, f32, tag::abc);
    // Keyed by the primitive, not by op: SoftmaxCrossEntropyLoss shares
    // log_softmax's primitives.
    Primitive p = getPrimitive(key("softmax", {outer, mid, inner, log}), [&] {
      using sf = dnnl::softmax_v2_forward;
      sf::desc d(dnnl::prop_kind::forward_inference,
                 log ? dnnl::algorithm::softmax_log
                     : dnnl::algorithm::softmax_accurate,
                 md, md, 1);
      sf::primitive_desc pd(d, userScratchpadAttr(), engine());
      return Primitive{sf(pd), pd.scratchpad_desc()};
    });
    execute(ctx, p,
            {{DNNL_ARG_SRC, mem(md, x.data)}, {DNNL_ARG_DST, mem(md, y.data)}});
    return ok();
  });
}

/// Y = f(X) by a oneDNN eltwise primitive over the flat tensor.
int64_t product(const std::vector<int64_t> &d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= d[i];
  return p;
}

int32_t unaryViews(const char *op, comet_rt_memref *xm, comet_rt_memref *ym,
                   Tensor &x, Tensor &y) {
  COMET_RT_TRY(view(xm, 4, concat(op, " X").c_str(), x));
  COMET_RT_TRY(view(ym, 4, concat(op, " Y").c_str(), y));
  COMET_RT_CHECK(x.dims == y.dims, op, ": X ", shapeStr(x.dims), " and Y ",
                 shapeStr(y.dims), " differ");
  return ok();
}

std::vector<int64_t> plainStrides(const std::vector<int64_t> &d) {
  std::vector<int64_t> s(d.size());
  int64_t acc = 1;
  for (int64_t i = (int64_t)d.size() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= d[i];
  }
  return s;
}

int32_t
matmulImpl(comet_rt_context *ctx, const char *op, const Tensor &a,
           const Tensor &b, const Tensor &y, const std::vector<int64_t> &ad,
           const std::vector<int64_t> &as, const std::vector<int64_t> &bd,
           const std::vector<int64_t> &bs, float alpha, bool keepsLastTwo,
           const std::string &opts, std::optional<float> sumBeta) {
  size_t r = ad.size();
  COMET_RT_CHECK(r >= 2 && bd.size() == r, op, ": operands of ",
                 shapeStr(a.dims), " and ", shapeStr(b.dims));
  COMET_RT_CHECK(r <= DNNL_MAX_NDIMS, op, ": rank above ", DNNL_MAX_NDIMS);
  std::vector<int64_t> yd(r);
  for (size_t i = 0; i + 2 < r; ++i) {
    COMET_RT_CHECK(ad[i] == bd[i] || ad[i] == 1 || bd[i] == 1, op,
                   ": batch dims of ", shapeStr(a.dims), " and ",
                   shapeStr(b.dims), " do not broadcast");
    yd[i] = std::max(ad[i], bd[i]);
  }
  COMET_RT_CHECK(ad[r - 1] == bd[r - 2], op, ": inner dims differ: A ",
                 shapeStr(a.dims), " B ", shapeStr(b.dims), opts);
  yd[r - 2] = ad[r - 2];
  yd[r - 1] = bd[r - 1];
  int64_t yn = product(yd, 0, r);
  COMET_RT_CHECK(yn == y.numel() &&
                     (!keepsLastTwo ||
                      (y.rank() >= 2 && y.dim(y.rank() - 1) == yd[r - 1] &&
                       y.dim(y.rank() - 2) == yd[r - 2])),
                 op, ": Y ", shapeStr(y.dims), " does not hold the product ",
                 shapeStr(yd));
  if (yn == 0)
    return ok();
  if (ad[r - 1] == 0) {
    // An empty sum: Y = beta * Y, or 0.
    float *py = y.f();
    for (int64_t i = 0; i < yn; ++i)
      py[i] = sumBeta ? *sumBeta * py[i] : 0.0f;
    return ok();
  }
  uint32_t alphaBits, betaBits = 0;
  std::memcpy(&alphaBits, &alpha, 4);
  if (sumBeta)
    std::memcpy(&betaBits, &*sumBeta, 4);
  std::vector<int64_t> k = ad;
  for (const auto *v : {&as, &bd, &bs})
    k.insert(k.end(), v->begin(), v->end());
  return guard(op, [&] {
    auto f32 = memory::data_type::f32;
    memory::desc aMd(memory::dims(ad.begin(), ad.end()), f32,
                     memory::dims(as.begin(), as.end()));
    memory::desc bMd(memory::dims(bd.begin(), bd.end()), f32,
                     memory::dims(bs.begin(), bs.end()));
    memory::desc yMd = plainMd(yd);
    Primitive p = getPrimitive(
        key(op,
            {(int64_t)r, (int64_t)alphaBits, sumBeta ? (int64_t)betaBits : -1},
            k),
        [&] {
          dnnl::primitive_attr attr = userScratchpadAttr();
          if (alpha != 1.0f)
            attr.set_output_scales(0, {alpha});
          if (sumBeta) {
            dnnl::post_ops po;
            po.append_sum(*sumBeta);
            attr.set_post_ops(po);
          }
          dnnl::matmul::desc d(aMd, bMd, yMd);
          dnnl::matmul::primitive_desc pd(d, attr, engine());
          return Primitive{dnnl::matmul(pd), pd.scratchpad_desc()};
        });
    execute(ctx, p,
            {{DNNL_ARG_SRC, mem(aMd, a.data)},
             {DNNL_ARG_WEIGHTS, mem(bMd, b.data)},
             {DNNL_ARG_DST, mem(yMd, y.data)}});
    return ok();
  });
}

int32_t eltwiseImpl(comet_rt_context *ctx, const char *op, dnnl::algorithm alg,
                    float alpha, float beta, const Tensor &x, const Tensor &y) {
  int64_t n = x.numel();
  if (n == 0)
    return ok();
  // The bits of alpha and beta key the primitive: distinct values (Pow's
  // exponent, QuickGelu's alpha) never share one.
  uint32_t alphaBits, betaBits;
  std::memcpy(&alphaBits, &alpha, sizeof(alpha));
  std::memcpy(&betaBits, &beta, sizeof(beta));
  return guard(op, [&] {
    memory::desc md({n}, memory::data_type::f32, memory::format_tag::a);
    Primitive p = getPrimitive(
        key(op, {n, int64_t(alg), int64_t(alphaBits), int64_t(betaBits)}), [&] {
          dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg,
                                        md, alpha, beta);
          dnnl::eltwise_forward::primitive_desc pd(d, userScratchpadAttr(),
                                                   engine());
          return Primitive{dnnl::eltwise_forward(pd), pd.scratchpad_desc()};
        });
    execute(ctx, p,
            {{DNNL_ARG_SRC, mem(md, x.data)}, {DNNL_ARG_DST, mem(md, y.data)}});
    return ok();
  });
}

int32_t eltwiseBackwardImpl(comet_rt_context *ctx, const char *op,
                            dnnl::algorithm alg, bool fromDst, float *in,
                            const Tensor &dy, const Tensor &dx, int64_t n,
                            float alpha) {
  if (n == 0)
    return ok();
  uint32_t alphaBits;
  std::memcpy(&alphaBits, &alpha, sizeof(alpha));
  return guard(op, [&] {
    memory::desc md({n}, memory::data_type::f32, memory::format_tag::a);
    Primitive p =
        getPrimitive(key(op, {n, int64_t(alg), int64_t(alphaBits)}), [&] {
          dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, alg,
                                         md, alpha, 0.f);
          dnnl::eltwise_forward::primitive_desc fpd(fd, engine());
          dnnl::eltwise_backward::desc d(alg, md, md, alpha, 0.f);
          dnnl::eltwise_backward::primitive_desc pd(d, userScratchpadAttr(),
                                                    engine(), fpd);
          return Primitive{dnnl::eltwise_backward(pd), pd.scratchpad_desc()};
        });
    execute(ctx, p,
            {{fromDst ? DNNL_ARG_DST : DNNL_ARG_SRC, mem(md, in)},
             {DNNL_ARG_DIFF_DST, mem(md, dy.data)},
             {DNNL_ARG_DIFF_SRC, mem(md, dx.data)}});
    return ok();
  });
}

int32_t eltwiseForward(comet_rt_context *ctx, const char *op,
                       dnnl::algorithm alg, comet_rt_memref *xm,
                       comet_rt_memref *ym, float alpha) {
  Tensor x, y;
  COMET_RT_TRY(unaryViews(op, xm, ym, x, y));
  return eltwiseImpl(ctx, op, alg, alpha, 0.f, x, y);
}

int32_t eltwiseBackward(comet_rt_context *ctx, const char *op,
                        dnnl::algorithm alg, bool fromDst, comet_rt_memref *dym,
                        comet_rt_memref *inm, comet_rt_memref *dxm,
                        float alpha) {
  const char *inName = fromDst ? " Y" : " X";
  Tensor dy, in, dx;
  COMET_RT_TRY(view(dym, 4, concat(op, " dY").c_str(), dy));
  COMET_RT_TRY(view(inm, 4, concat(op, inName).c_str(), in));
  COMET_RT_TRY(view(dxm, 4, concat(op, " dX").c_str(), dx));
  COMET_RT_CHECK(dy.dims == in.dims && dx.dims == in.dims, op, ": dY ",
                 shapeStr(dy.dims), ",", inName, " ", shapeStr(in.dims),
                 " and dX ", shapeStr(dx.dims), " must share a shape");
  return eltwiseBackwardImpl(ctx, op, alg, fromDst, in.f(), dy, dx, in.numel(),
                             alpha);
}

} // namespace comet::rt

extern "C" {

int32_t comet_rt_cpu_softmax(comet_rt_context *ctx, comet_rt_memref *xm,
                             comet_rt_memref *ym, int64_t axis) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "softmax X", x));
  COMET_RT_TRY(view(ym, 4, "softmax Y", y));
  return softmaxImpl(ctx, "softmax", x, y, axis, false);
}

int32_t comet_rt_cpu_log_softmax(comet_rt_context *ctx, comet_rt_memref *xm,
                                 comet_rt_memref *ym, int64_t axis) {
  Tensor x, y;
  COMET_RT_TRY(view(xm, 4, "log_softmax X", x));
  COMET_RT_TRY(view(ym, 4, "log_softmax Y", y));
  return softmaxImpl(ctx, "log_softmax", x, y, axis, true);
}

} // extern "C"

/// ReduceSum / ReduceMean on oneDNN reduction.
static int32_t reduceImpl(comet_rt_context *ctx, const char *op,
                          comet_rt_memref *xm, comet_rt_memref *axm,
                          comet_rt_memref *ym, int64_t keepdims,
                          int64_t noopEmpty, bool mean) {
  Tensor x, ax, y;
  COMET_RT_TRY(view(xm, 4, concat(op, " X").c_str(), x));
  COMET_RT_TRY(view(axm, 8, concat(op, " axes").c_str(), ax, true));
  COMET_RT_TRY(view(ym, 4, concat(op, " Y").c_str(), y));
  std::vector<bool> reduced(x.rank(), false);
  if (!ax.present || ax.numel() == 0) {
    if (noopEmpty) {
      COMET_RT_CHECK(y.numel() == x.numel(), op,
                     ": noop with empty axes needs Y of X's size");
      std::memcpy(y.data, x.data, sizeof(float) * x.numel());
      return ok();
    }
    reduced.assign(x.rank(), true);
  } else {
    for (int64_t i = 0; i < ax.numel(); ++i) {
      int64_t a = ax.i64()[i];
      if (a < 0)
        a += x.rank();
      COMET_RT_CHECK(a >= 0 && a < x.rank(), op, ": axis ", ax.i64()[i],
                     " out of range for rank ", x.rank());
      reduced[a] = true;
    }
  }
  std::vector<int64_t> kept, dropped;
  for (int64_t i = 0; i < x.rank(); ++i) {
    kept.push_back(reduced[i] ? 1 : x.dim(i));
    if (!reduced[i])
      dropped.push_back(x.dim(i));
  }
  COMET_RT_CHECK(y.dims == (keepdims ? kept : dropped), op, ": Y is ",
                 shapeStr(y.dims), ", expected ",
                 shapeStr(keepdims ? kept : dropped));
  if (y.numel() == 0)
    return ok();
  if (x.numel() == 0) {
    // The mean of nothing is NaN, as numpy's.
    std::fill(y.f(), y.f() + y.numel(), mean ? NAN : 0.0f);
    return ok();
  }
  if (kept == x.dims) {
    std::memcpy(y.data, x.data, sizeof(float) * x.numel());
    return ok();
  }
  // oneDNN reduction needs rank >= 1; a rank-0 X has nothing to reduce.
  return guard(op, [&] {
    memory::desc xMd = plainMd(x.dims), yMd = plainMd(kept);
    std::vector<int64_t> k = x.dims;
    k.insert(k.end(), kept.begin(), kept.end());
    Primitive p = getPrimitive(key(op, {x.rank()}, k), [&] {
      dnnl::reduction::desc d(mean ? dnnl::algorithm::reduction_mean
                                   : dnnl::algorithm::reduction_sum,
                              xMd, yMd, 0.f, 0.f);
      dnnl::reduction::primitive_desc pd(d, userScratchpadAttr(), engine());
      return Primitive{dnnl::reduction(pd), pd.scratchpad_desc()};
    });
    execute(
        ctx, p,
        {{DNNL_ARG_SRC, mem(xMd, x.data)}, {DNNL_ARG_DST, mem(yMd, y.data)}});
    return ok();
  });
}

extern "C" {

int32_t comet_rt_cpu_reduce_sum(comet_rt_context *ctx, comet_rt_memref *xm,
                                comet_rt_memref *axm, comet_rt_memref *ym,
                                int64_t keepdims, int64_t noopEmpty) {
  return reduceImpl(ctx, "reduce_sum", xm, axm, ym, keepdims, noopEmpty,
                    /*mean=*/false);
}

int32_t comet_rt_cpu_reduce_mean(comet_rt_context *ctx, comet_rt_memref *xm,
                                 comet_rt_memref *axm, comet_rt_memref *ym,
                                 int64_t keepdims) {
  return reduceImpl(ctx, "reduce_mean", xm, axm, ym, keepdims,
                    /*noopEmpty=*/0, /*mean=*/true);
}

int64_t comet_rt_primitive_cache_size(void) {
  std::lock_guard<std::mutex> lock(cacheMutex);
  return (int64_t)cache().size();
}

} // extern "C"
