//===- Context.h - The runtime context's layout (not installed) -----------===//
//
// comet_rt_context (comet/runtime/context.h) is the allocator's accounting
// plus one state object per runtime module (handles and slots, slot
// statistics), created on first use. Each module keeps its state type to
// itself and reaches it through Context::state<T>().
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_EXEC_CONTEXT_H
#define COMET_RUNTIME_EXEC_CONTEXT_H

#include "comet/runtime/alloc.h"
#include "comet/runtime/context.h"
#include "comet/runtime/device.h"
#include "Profile.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <typeindex>
#include <unordered_map>
#include <vector>

namespace comet::rt {

/// The memory of a context that is not the host's, provided by the
/// device's backend when the context is put on it. Every pointer is a
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

/// The allocator's counters, under one mutex so that the global peak and
/// its breakdown describe one instant.
struct Accounting {
  std::mutex mutex;
  comet_rt_alloc_stats stats{};
  bool recording = false;
  std::vector<int64_t> timeline;

  void add(int32_t category, int64_t delta, bool isAlloc);
  void release(int32_t category, int64_t bytes);
};

} // namespace comet::rt

struct comet_rt_context {
  comet::rt::Accounting alloc;
  /// 1 for the creator, plus one per live block.
  std::atomic<int64_t> refs{1};
  /// comet_rt_context_set_workspace_limit's bytes (0: none).
  std::atomic<int64_t> workspaceLimit{COMET_RT_DEFAULT_WORKSPACE_LIMIT};

  /// The device whose backend runs this context's kernels (the dispatcher
  /// picks its table by deviceKind) and, for a device context, the memory
  /// comet_rt_alloc gives out and the backend's own state (stream, library
  /// handles). Set once, before the first allocation
  /// (comet_rt_context_set_device).
  const comet::rt::DeviceOps *device = nullptr;
  int32_t deviceKind = COMET_RT_DEVICE_CPU;
  void *deviceState = nullptr;

  /// Per-entry times when COMET_RT_PROFILE is set (Profile.h).
  std::unique_ptr<comet::rt::Profile> profile =
      comet::rt::Profile::fromEnvironment();

  ~comet_rt_context() {
    if (profile)
      profile->write(deviceKind);
    if (device)
      device->destroy(this);
  }

  /// The module state of type T, created on first use.
  template <typename T> T &state() {
    std::lock_guard<std::mutex> lock(stateMu);
    std::shared_ptr<void> &p = states[std::type_index(typeid(T))];
    if (!p)
      p = std::make_shared<T>();
    return *static_cast<T *>(p.get());
  }

  /// Blocks compiled code allocated and has not freed yet (buffers from
  /// buffer_alloc, handles from compress), for step_abort.
  std::mutex stepMu;
  std::unordered_map<void *, bool /*isHandle*/> stepBlocks;

  void trackStepBlock(void *p, bool isHandle) {
    std::lock_guard<std::mutex> lock(stepMu);
    stepBlocks[p] = isHandle;
  }
  void untrackStepBlock(void *p) {
    std::lock_guard<std::mutex> lock(stepMu);
    stepBlocks.erase(p);
  }
  /// Whether h is a live handle of this context: the contract checks this
  /// before any backend reads a handle's memory.
  bool isLiveHandle(int64_t h) {
    std::lock_guard<std::mutex> lock(stepMu);
    auto it =
        stepBlocks.find(reinterpret_cast<void *>(static_cast<intptr_t>(h)));
    return it != stepBlocks.end() && it->second;
  }

  void retain() { refs.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
      delete this;
  }

private:
  std::mutex stateMu;
  std::unordered_map<std::type_index, std::shared_ptr<void>> states;
};

namespace comet::rt {
/// ctx, or the default context for NULL.
inline comet_rt_context *resolve(comet_rt_context *ctx) {
  return ctx ? ctx : comet_rt_default_context();
}
} // namespace comet::rt

#endif // COMET_RUNTIME_EXEC_CONTEXT_H
