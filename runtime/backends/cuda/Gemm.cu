//===- Gemm.cu - Gemm, MatMul and FusedMatMul on cuBLAS -------------------===//
//
// cublasSgemmStridedBatched, row-major as the transposed column-major
// product. Gemm's C is broadcast into Y by a kernel first; batch dims
// broadcast by a stride of 0, or one call per output matrix when a batch
// dim broadcasts in the middle.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"

namespace comet::rt::cuda {
namespace {

/// Row-major Y[M,N] = alpha * op(A) * op(B) + beta * Y as cuBLAS's
/// column-major Y^T = op(B)^T * op(A)^T, batched with element strides.
int32_t sgemmRowMajor(State &s, const char *op, bool ta, bool tb, int64_t m,
                      int64_t n, int64_t k, float alpha, const float *a,
                      int64_t strideA, const float *b, int64_t strideB,
                      float beta, float *y, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0)
    return COMET_RT_SUCCESS;
  int lda = static_cast<int>(ta ? m : k), ldb = static_cast<int>(tb ? k : n);
  int ldy = static_cast<int>(n);
  cublasOperation_t opA = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  BLAS_TRY(op, cublasSgemmStridedBatched(
                   s.blas, opB, opA, static_cast<int>(n), static_cast<int>(m),
                   static_cast<int>(k), &alpha, b, ldb, strideB, a, lda,
                   strideA, &beta, y, ldy, m * n, static_cast<int>(batch)));
  return COMET_RT_SUCCESS;
}

/// Y[batch..., M, N] = alpha * op(A) x op(B), the batch dims aB and bB of
/// A and B broadcasting (numpy) to Y's.
int32_t batchedGemm(State &s, const char *op, bool ta, bool tb,
                    const std::vector<int64_t> &aB,
                    const std::vector<int64_t> &bB, int64_t m, int64_t n,
                    int64_t k, float alpha, const float *a, const float *b,
                    float *y) {
  std::vector<int64_t> outB;
  broadcastShape(aB, bB, outB);
  size_t r = outB.size();
  int64_t batch = product(outB, 0, r), aCount = product(aB, 0, aB.size()),
          bCount = product(bB, 0, bB.size());
  // One strided-batched call when each operand is either whole or one
  // matrix; otherwise one call per output matrix.
  if ((aCount == batch || aCount == 1) && (bCount == batch || bCount == 1) &&
      (aCount == 1 || aB.size() == r) && (bCount == 1 || bB.size() == r))
    return sgemmRowMajor(s, op, ta, tb, m, n, k, alpha, a,
                         aCount == batch ? m * k : 0, b,
                         bCount == batch ? k * n : 0, 0.0f, y, batch);
  std::vector<int64_t> idx(r, 0);
  for (int64_t t = 0; t < batch; ++t) {
    int64_t offA = 0, offB = 0;
    for (size_t i = 0; i < r; ++i) {
      if (i + aB.size() >= r) {
        int64_t dim = aB[i + aB.size() - r];
        offA = offA * dim + (dim == 1 ? 0 : idx[i]);
      }
      if (i + bB.size() >= r) {
        int64_t dim = bB[i + bB.size() - r];
        offB = offB * dim + (dim == 1 ? 0 : idx[i]);
      }
    }
    COMET_RT_TRY(sgemmRowMajor(s, op, ta, tb, m, n, k, alpha, a + offA * m * k,
                               0, b + offB * k * n, 0, 0.0f, y + t * m * n, 1));
    for (int64_t i = static_cast<int64_t>(r) - 1; i >= 0; --i) {
      if (++idx[i] < outB[i])
        break;
      idx[i] = 0;
    }
  }
  return COMET_RT_SUCCESS;
}

__global__ void bcastCopyK(const float *a, float *y, int64_t n, Bcast d) {
  GRID_STRIDE(i, n) y[i] = a[bcastOffset(d, 0, i)];
}

} // namespace

int32_t run(comet_rt_context *ctx, const gemm_args &a) {
  const char *op = "gemm";
  int64_t m = a.y.dim(0), n = a.y.dim(1);
  int64_t k = a.trans_a ? a.a.dim(0) : a.a.dim(1);
  State &s = state(ctx);
  float beta = 0.0f;
  if (a.c.present && a.beta != 0.0f && m * n > 0) {
    Bcast d = bcastOf(a.y.dims, {&a.c.dims});
    bcastCopyK<<<gridFor(m * n), kThreads, 0, s.stream>>>(a.c.f(), a.y.f(),
                                                          m * n, d);
    LAUNCHED(op);
    beta = a.beta;
  }
  if (k == 0) {
    // An empty sum: Y = beta * C, or 0.
    if (beta == 0.0f)
      COMET_RT_TRY(zeroAsync(ctx, op, a.y.data, sizeof(float) * m * n));
    else
      BLAS_TRY(op,
               cublasSscal(s.blas, static_cast<int>(m * n), &beta, a.y.f(), 1));
    return ok();
  }
  COMET_RT_TRY(sgemmRowMajor(s, op, a.trans_a, a.trans_b, m, n, k, a.alpha,
                             a.a.f(), 0, a.b.f(), 0, beta, a.y.f(), 1));
  return ok();
}

int32_t run(comet_rt_context *ctx, const matmul_args &a) {
  const char *op = "matmul";
  std::vector<int64_t> ad = a.a.dims, bd = a.b.dims;
  if (ad.size() == 1)
    ad.insert(ad.begin(), 1);
  if (bd.size() == 1)
    bd.push_back(1);
  int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  if (k == 0) {
    COMET_RT_TRY(zeroAsync(ctx, op, a.y.data, sizeof(float) * a.y.numel()));
    return ok();
  }
  COMET_RT_TRY(batchedGemm(state(ctx), op, false, false,
                           std::vector<int64_t>(ad.begin(), ad.end() - 2),
                           std::vector<int64_t>(bd.begin(), bd.end() - 2), m, n,
                           k, 1.0f, a.a.f(), a.b.f(), a.y.f()));
  return ok();
}

int32_t run(comet_rt_context *ctx, const fused_matmul_args &a) {
  const char *op = "fused_matmul";
  int64_t ra = a.a.rank(), rb = a.b.rank();
  bool ta = a.trans_a != 0, tb = a.trans_b != 0;
  int64_t m = ta ? a.a.dim(ra - 1) : a.a.dim(ra - 2),
          k = ta ? a.a.dim(ra - 2) : a.a.dim(ra - 1),
          n = tb ? a.b.dim(rb - 2) : a.b.dim(rb - 1);
  if (k == 0) {
    COMET_RT_TRY(zeroAsync(ctx, op, a.y.data, sizeof(float) * a.y.numel()));
    return ok();
  }
  COMET_RT_TRY(
      batchedGemm(state(ctx), op, ta, tb,
                  std::vector<int64_t>(a.a.dims.begin(), a.a.dims.end() - 2),
                  std::vector<int64_t>(a.b.dims.begin(), a.b.dims.end() - 2), m,
                  n, k, a.alpha, a.a.f(), a.b.f(), a.y.f()));
  return ok();
}

} // namespace comet::rt::cuda
