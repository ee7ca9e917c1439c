//===- Workspace.h - A kernel temporary of the context (not installed) ----===//
#ifndef COMET_RUNTIME_CORE_WORKSPACE_H
#define COMET_RUNTIME_CORE_WORKSPACE_H

#include "comet/runtime/alloc.h"

#include <cstddef>

namespace comet::rt {

/// A block from comet_rt_alloc in the category workspace of ctx (device
/// memory on a device context), freed at the end of its scope.
class Workspace {
public:
  Workspace(comet_rt_context *ctx, size_t bytes)
      : p(bytes ? comet_rt_alloc(ctx, bytes, COMET_RT_MEM_WORKSPACE) : nullptr),
        wanted(bytes) {}
  ~Workspace() { comet_rt_free(p); }
  Workspace(const Workspace &) = delete;
  Workspace &operator=(const Workspace &) = delete;
  /// false when the allocator failed.
  bool ok() const { return wanted == 0 || p; }
  void *get() const { return p; }
  template <typename T> T *as() const { return static_cast<T *>(p); }
  float *f() const { return as<float>(); }

private:
  void *p;
  size_t wanted;
};

} // namespace comet::rt

#endif // COMET_RUNTIME_CORE_WORKSPACE_H
