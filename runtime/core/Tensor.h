//===- Tensor.h - An operand as the contract sees it (not installed) ------===//
//
// The dispatcher views every memref operand of an abi.def entry as a
// Tensor before any check or backend runs: a dense row-major array of
// `elemBytes`-sized elements with its dims. `data` is what the backend
// computes on (device memory on a device context); `host` is a view the
// host may read: the data itself on the CPU, a staged copy of a PARAM or
// SCAN operand on a device (Contract.h), null otherwise.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_CORE_TENSOR_H
#define COMET_RUNTIME_CORE_TENSOR_H

#include "comet/runtime/types.h"

#include <cstdint>
#include <vector>

namespace comet::rt {

/// The highest rank any operand of the runtime's interface may have.
constexpr int64_t kMaxRank = 8;

struct Tensor {
  void *data = nullptr;
  const void *host = nullptr;
  std::vector<int64_t> dims;
  /// false for a null memref, and for an optional operand with 0 elements.
  bool present = false;

  // What the contract declares about the operand (Contract.h).
  const char *name = "";
  int32_t elemBytes = 0;
  enum Role : uint8_t { In, Out, InOut } role = In;
  bool optional = false;
  /// PARAM: the backend gets host memory; SCAN: the checks read a host copy.
  bool param = false, scan = false;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  }
  int64_t bytes() const { return numel() * elemBytes; }
  int64_t dim(int64_t i) const { return dims[i]; }
  template <typename T> T *as() const { return static_cast<T *>(data); }
  float *f() const { return as<float>(); }
  int64_t *i64() const { return as<int64_t>(); }
  uint8_t *u8() const { return as<uint8_t>(); }
  /// Host-readable elements (checks, PARAM operands in backends).
  template <typename T> const T *hostAs() const {
    return static_cast<const T *>(host);
  }
};

} // namespace comet::rt

#endif // COMET_RUNTIME_CORE_TENSOR_H
