//===- Gather.cpp - Gather and GatherGrad ---------------------------------===//
//
// What embeddings need: Gather along an axis (f32 and i64 data) and
// com.microsoft GatherGrad, which adds dY at the indices (repeated ones add
// up, in index order).
//
//===----------------------------------------------------------------------===//
#include "Cpu.h"
#include "Shapes.h"

#include <cstring>

namespace comet::rt::cpu {

namespace {

/// Indices normalized into [0, n) (the contract checked their range).
std::vector<int64_t> normIndices(const Tensor &indices, int64_t n) {
  std::vector<int64_t> out(indices.numel());
  const int64_t *pi = indices.i64();
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = pi[k] < 0 ? pi[k] + n : pi[k];
  return out;
}

template <typename T>
int32_t gather(const Tensor &data, const Tensor &indices, const Tensor &y,
               int64_t axis) {
  int64_t a = normAxis(axis, data.rank());
  int64_t n = data.dim(a), outer = product(data.dims, 0, a),
          inner = product(data.dims, a + 1, data.dims.size());
  std::vector<int64_t> idx = normIndices(indices, n);
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

} // namespace

int32_t run(comet_rt_context *, const gather_args &a) {
  return gather<float>(a.data, a.indices, a.y, a.axis);
}

int32_t run(comet_rt_context *, const gather_i64_args &a) {
  return gather<int64_t>(a.data, a.indices, a.y, a.axis);
}

int32_t run(comet_rt_context *, const gather_grad_args &a) {
  const Tensor &dx = a.dx;
  int64_t ax = normAxis(a.axis, dx.rank());
  int64_t n = dx.dim(ax), outer = product(dx.dims, 0, ax),
          inner = product(dx.dims, ax + 1, dx.dims.size());
  std::vector<int64_t> idx = normIndices(a.indices, n);
  int64_t k = idx.size();
  const float *pdy = a.dy.f();
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

} // namespace comet::rt::cpu
