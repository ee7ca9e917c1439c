//===- Gemm.cpp - Gemm, MatMul and FusedMatMul on oneDNN matmul -----------===//
//
// One oneDNN matmul for all three: operands are read through their logical
// dims (padded to one rank r >= 2) and strides, so transposes cost nothing;
// batch dims broadcast. Gemm's C is put into Y first and added by the sum
// post-op scaled by beta.
//
//===----------------------------------------------------------------------===//
#include "Dnnl.h"

#include <cstring>
#include <optional>

using dnnl::memory;

namespace comet::rt::cpu {

namespace {

/// Y = alpha * A' x B' (+ sumBeta * Y), A' and B' being a and b read
/// through dims ad/bd and strides as/bs of one rank.
int32_t matmulImpl(comet_rt_context *ctx, const char *op, const Tensor &a,
                   const Tensor &b, const Tensor &y,
                   const std::vector<int64_t> &ad,
                   const std::vector<int64_t> &as,
                   const std::vector<int64_t> &bd,
                   const std::vector<int64_t> &bs, float alpha,
                   std::optional<float> sumBeta = std::nullopt) {
  size_t r = ad.size();
  std::vector<int64_t> yd(r);
  for (size_t i = 0; i + 2 < r; ++i)
    yd[i] = std::max(ad[i], bd[i]);
  yd[r - 2] = ad[r - 2];
  yd[r - 1] = bd[r - 1];
  int64_t yn = product(yd, 0, r);
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

} // namespace

int32_t run(comet_rt_context *ctx, const gemm_args &a) {
  int64_t m = a.y.dim(0), n = a.y.dim(1);
  bool useC = a.c.present && a.beta != 0.0f;
  if (m == 0 || n == 0)
    return ok();
  // Y starts as C broadcast, which the matmul's sum post-op scales by beta.
  if (useC) {
    int64_t cRows = 1, cCols = 1;
    if (a.c.rank() == 1)
      cCols = a.c.dim(0);
    else if (a.c.rank() == 2) {
      cRows = a.c.dim(0);
      cCols = a.c.dim(1);
    }
    float *yd = a.y.f();
    const float *cd = a.c.f();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        yd[i * n + j] = cd[(cRows == 1 ? 0 : i) * cCols + (cCols == 1 ? 0 : j)];
  }
  std::vector<int64_t> ad = a.a.dims, as = plainStrides(ad), bd = a.b.dims,
                       bs = plainStrides(bd);
  if (a.trans_a) {
    std::swap(ad[0], ad[1]);
    std::swap(as[0], as[1]);
  }
  if (a.trans_b) {
    std::swap(bd[0], bd[1]);
    std::swap(bs[0], bs[1]);
  }
  return matmulImpl(ctx, "gemm", a.a, a.b, a.y, ad, as, bd, bs, a.alpha,
                    useC ? std::optional<float>(a.beta) : std::nullopt);
}

int32_t run(comet_rt_context *ctx, const matmul_args &a) {
  // numpy: a rank-1 A is a row, a rank-1 B a column.
  std::vector<int64_t> ad = a.a.dims, bd = a.b.dims;
  if (ad.size() == 1)
    ad.insert(ad.begin(), 1);
  if (bd.size() == 1)
    bd.push_back(1);
  size_t r = std::max(ad.size(), bd.size());
  ad.insert(ad.begin(), r - ad.size(), 1);
  bd.insert(bd.begin(), r - bd.size(), 1);
  return matmulImpl(ctx, "matmul", a.a, a.b, a.y, ad, plainStrides(ad), bd,
                    plainStrides(bd), 1.0f);
}

int32_t run(comet_rt_context *ctx, const fused_matmul_args &a) {
  size_t r = std::max(a.a.rank(), a.b.rank());
  // Stored dims padded to rank r, and the strides that read op(A), op(B).
  auto logical = [&](const Tensor &t, bool trans, std::vector<int64_t> &dims,
                     std::vector<int64_t> &strides) {
    dims = t.dims;
    dims.insert(dims.begin(), r - dims.size(), 1);
    strides = plainStrides(dims);
    if (trans) {
      std::swap(dims[r - 1], dims[r - 2]);
      std::swap(strides[r - 1], strides[r - 2]);
    }
  };
  std::vector<int64_t> ad, as, bd, bs;
  logical(a.a, a.trans_a != 0, ad, as);
  logical(a.b, a.trans_b != 0, bd, bs);
  return matmulImpl(ctx, "fused_matmul", a.a, a.b, a.y, ad, as, bd, bs,
                    a.alpha);
}

} // namespace comet::rt::cpu
