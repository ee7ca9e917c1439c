//===- TestUtil.h - Memref descriptors for runtime tests ------------------===//

#ifndef COMET_TEST_RUNTIME_TESTUTIL_H
#define COMET_TEST_RUNTIME_TESTUTIL_H

#include "OnDevice.h"
#include "comet/runtime/exec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

/// Asserts that a runtime call succeeds, printing its error message if not.
#define ASSERT_RT(call)                                                        \
  ASSERT_EQ((call), COMET_RT_SUCCESS) << comet_rt_last_error()

namespace comet::test {

/// A dense tensor with an MLIR unranked-memref view of it.
template <typename T> struct MR {
  std::vector<T> v;
  std::vector<int64_t> dims;
  std::vector<int64_t> words; // ranked descriptor, 8-byte words
  comet_rt_memref m;

  explicit MR(std::vector<int64_t> d, T fill = T()) : dims(std::move(d)) {
    int64_t n = 1;
    for (int64_t x : dims)
      n *= x;
    v.assign(n, fill);
    build();
  }
  MR(std::vector<int64_t> d, std::vector<T> values)
      : v(std::move(values)), dims(std::move(d)) {
    build();
  }
  MR(const MR &o) : v(o.v), dims(o.dims) { build(); }
  MR &operator=(const MR &o) {
    v = o.v;
    dims = o.dims;
    build();
    return *this;
  }

  void build() {
    size_t r = dims.size();
    words.assign(3 + 2 * r, 0);
    T *p = v.data();
    std::memcpy(&words[0], &p, sizeof(p));
    std::memcpy(&words[1], &p, sizeof(p));
    int64_t s = 1;
    for (int64_t i = (int64_t)r - 1; i >= 0; --i) {
      words[3 + i] = dims[i];
      words[3 + r + i] = s;
      s *= dims[i];
    }
    m.rank = (int64_t)r;
    m.descriptor = words.data();
  }
  comet_rt_memref *operator&() { return &m; }
  int64_t size() const { return (int64_t)v.size(); }
  T &operator[](int64_t i) { return v[i]; }
  const T &operator[](int64_t i) const { return v[i]; }
};

using F = MR<float>;
using I = MR<int64_t>;
using B = MR<uint8_t>;

inline F randomF(std::vector<int64_t> dims, uint32_t seed, float lo = -1,
                 float hi = 1) {
  F t(std::move(dims));
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (auto &x : t.v)
    x = u(g);
  return t;
}

/// An absent optional operand (a 0-element memref).
inline F none() { return F({0}); }

inline void expectNear(const std::vector<float> &got,
                       const std::vector<double> &want, double rel = 1e-5,
                       const char *what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (double w : want)
    scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * std::max(1.0, scale))
        << what << " at " << i;
}

inline double dot(const F &a, const F &b) {
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i)
    s += (double)a[i] * b[i];
  return s;
}

/// Checks grad against central differences of loss() w.r.t. p (h = 1e-2,
/// float).
inline void checkGrad(F &p, const F &grad, const std::function<double()> &loss,
                      const char *what, double tol = 2e-3) {
  const float h = 1e-2f;
  double scale = 1e-3;
  for (float g : grad.v)
    scale = std::max(scale, (double)std::fabs(g));
  for (int64_t i = 0; i < p.size(); ++i) {
    float old = p[i];
    p[i] = old + h;
    double up = loss();
    p[i] = old - h;
    double down = loss();
    p[i] = old;
    double fd = (up - down) / (2.0 * h);
    ASSERT_NEAR(grad[i], fd, tol * scale + 1e-4) << what << " at " << i;
  }
}

} // namespace comet::test

#endif
