//===- Backend.h - The per-context table of runtime kernels (not installed)
//-===//
//
// Every exported _mlir_ciface_comet_rt_<name> (abi.def) forwards to the
// function of the same name in its context's Backend (Dispatch.cpp): the CPU
// backend by default, the CUDA backend when the context was put on a CUDA
// device (comet_rt_context_set_device). A backend that leaves an entry null
// does not implement it; the call fails with COMET_RT_ERROR_UNSUPPORTED.
//
// A backend may also own the context's memory: DeviceOps allocates, frees
// and copies the blocks comet_rt_alloc hands out for the context.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_EXEC_BACKEND_H
#define COMET_RUNTIME_EXEC_BACKEND_H

#include "comet/runtime/abi.h"

#include <cstddef>
#include <cstdint>

namespace comet::rt {

/// One function pointer per abi.def entry, with the entry's C signature.
struct Backend {
  const char *name;
#define COMET_RT_ARG(kind, name) , COMET_RT_CTYPE_##kind name
#define COMET_RT_FUNC(name, ret, args)                                         \
  COMET_RT_CRET_##ret (*name)(COMET_RT_CRESULT_##ret comet_rt_context *        \
                              ctx args);
#include "comet/runtime/abi.def"
};

/// The memory of a context that is not the host's. Every pointer is a
/// device address; nothing here touches it from the host.
struct DeviceOps {
  /// bytes of uninitialised (or zeroed) device memory; NULL when out of
  /// memory.
  void *(*alloc)(comet_rt_context *ctx, size_t bytes, bool zero);
  void (*free)(comet_rt_context *ctx, void *p);
  /// dst and src are host or device memory; synchronous with the host.
  int32_t (*copy)(comet_rt_context *ctx, void *dst, const void *src,
                  size_t bytes);
  int32_t (*fill)(comet_rt_context *ctx, void *dst, int value, size_t bytes);
  int32_t (*synchronize)(comet_rt_context *ctx);
  /// Releases the context's device state (stream, handles, pool).
  void (*destroy)(comet_rt_context *ctx);
};

/// The CPU kernels (runtime/exec), the default of every context.
extern const Backend cpuBackend;

} // namespace comet::rt

// The CPU kernels' definitions: comet_rt_cpu_<name>, one per abi.def entry.
extern "C" {
#define COMET_RT_ARG(kind, name) , COMET_RT_CTYPE_##kind name
#define COMET_RT_FUNC(name, ret, args)                                         \
  COMET_RT_CRET_##ret comet_rt_cpu_##name(                                     \
      COMET_RT_CRESULT_##ret comet_rt_context *ctx args);
#include "comet/runtime/abi.def"
}

#endif // COMET_RUNTIME_EXEC_BACKEND_H
