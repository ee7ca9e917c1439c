//===- Table.cpp - The CUDA backend's table, generated from abi.def -------===//
//
// One member per entry: the run() of its family's file, or, for an entry
// Exclusions.def lists, no function and the declared reason. An entry with
// neither fails to link.
//
//===----------------------------------------------------------------------===//
#include "Cuda.h"
#include "comet/runtime/device.h"

namespace comet::rt::cuda {
namespace {

template <Entry E> struct Exclusion {
  static constexpr const char *why = nullptr;
};
#define COMET_RT_EXCLUDE(name, reason)                                         \
  template <> struct Exclusion<Entry::name> {                                  \
    static constexpr const char *why = reason;                                 \
  };
#include "Exclusions.def"

} // namespace

const Backend &table() {
  static const Backend b = [] {
    Backend t;
    t.name = "cuda";
    t.device = COMET_RT_DEVICE_CUDA;
    t.handleInfo = &handleInfo;
#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args)                                         \
  if constexpr (IsHost<Entry::name>::value) {                                  \
  } else if constexpr (Exclusion<Entry::name>::why != nullptr) {               \
    t.excluded[static_cast<int32_t>(Entry::name)] =                            \
        Exclusion<Entry::name>::why;                                           \
  } else {                                                                     \
    t.name = &run;                                                             \
  }
#include "comet/runtime/abi.def"
    return t;
  }();
  return b;
}

} // namespace comet::rt::cuda
