//===- Alloc.cpp - Allocator with exact per-category accounting -----------===//
//
// Each block carries a small header right before the returned pointer with
// the raw pointer, the requested size, the category and the context that
// counts it, so that free needs no lookup table. Each context counts under
// its own mutex so that its peak and the breakdown describe one instant.
//
//===----------------------------------------------------------------------===//

#include "comet/runtime/alloc.h"
#include "Context.h"
#include "Contract.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace comet::rt {

void Accounting::add(int32_t category, int64_t delta, bool isAlloc) {
  std::lock_guard<std::mutex> lock(mutex);
  stats.current[category] += delta;
  stats.current_total += delta;
  if (stats.current[category] > stats.peak[category])
    stats.peak[category] = stats.current[category];
  if (stats.current_total > stats.peak_total) {
    stats.peak_total = stats.current_total;
    std::memcpy(stats.at_peak, stats.current, sizeof(stats.at_peak));
  }
  if (category != COMET_RT_MEM_WORKSPACE) {
    stats.tensor_current += delta;
    stats.tensor_peak = std::max(stats.tensor_peak, stats.tensor_current);
    if (recording)
      timeline.push_back(stats.tensor_current);
  }
  if (isAlloc) {
    ++stats.num_allocs;
    ++stats.live_blocks;
  }
}

void Accounting::release(int32_t category, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  stats.current[category] -= bytes;
  stats.current_total -= bytes;
  if (category != COMET_RT_MEM_WORKSPACE) {
    stats.tensor_current -= bytes;
    if (recording)
      timeline.push_back(stats.tensor_current);
  }
  ++stats.num_frees;
  --stats.live_blocks;
}

} // namespace comet::rt

namespace {

using comet::rt::resolve;

constexpr uint64_t kMagic = 0xC0E7A11C0C0E7A11ull;

/// Right before every returned pointer: the raw block, the counted size,
/// the category and the context that counts it, so free needs no lookup.
struct BlockHeader {
  void *raw;
  uint64_t size;
  int64_t category;
  comet_rt_context *ctx;
  uint64_t pad[3];
  uint64_t magic;
};
static_assert(sizeof(BlockHeader) == 64, "header layout");

bool validCategory(int32_t c) {
  return c >= 0 && c < COMET_RT_MEM_NUM_CATEGORIES;
}

BlockHeader *headerOf(const void *ptr) {
  return reinterpret_cast<BlockHeader *>(
      const_cast<char *>(static_cast<const char *>(ptr)) - sizeof(BlockHeader));
}

/// Blocks of device contexts. Their memory cannot carry a host header, so
/// a table maps each to what the header would hold.
struct DeviceBlock {
  uint64_t size;
  int32_t category;
  comet_rt_context *ctx;
};
struct DeviceBlocks {
  std::mutex mu;
  std::unordered_map<const void *, DeviceBlock> blocks;
  /// Lets comet_rt_free skip the lock while no device block is live.
  std::atomic<int64_t> live{0};

  bool find(const void *p, DeviceBlock &out) {
    if (live.load(std::memory_order_acquire) == 0)
      return false;
    std::lock_guard<std::mutex> lock(mu);
    auto it = blocks.find(p);
    if (it == blocks.end())
      return false;
    out = it->second;
    return true;
  }
};
DeviceBlocks &deviceBlocks() {
  static DeviceBlocks *t = new DeviceBlocks(); // used at exit
  return *t;
}

void *allocDevice(comet_rt_context *ctx, size_t bytes, int32_t category,
                  bool zero) {
  // A 0-byte block is still a unique pointer.
  void *p = ctx->device->alloc(ctx, bytes ? bytes : 1, zero);
  if (!p)
    return nullptr;
  DeviceBlocks &t = deviceBlocks();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    t.blocks[p] = {bytes, category, ctx};
    t.live.fetch_add(1, std::memory_order_release);
  }
  ctx->retain();
  ctx->alloc.add(category, static_cast<int64_t>(bytes), /*isAlloc=*/true);
  return p;
}

/// Frees p when it is a device block; false when it is not one.
bool freeDevice(void *p) {
  DeviceBlocks &t = deviceBlocks();
  if (t.live.load(std::memory_order_acquire) == 0)
    return false;
  DeviceBlock b;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.blocks.find(p);
    if (it == t.blocks.end())
      return false;
    b = it->second;
    t.blocks.erase(it);
    t.live.fetch_sub(1, std::memory_order_release);
  }
  b.ctx->alloc.release(b.category, static_cast<int64_t>(b.size));
  b.ctx->device->free(b.ctx, p);
  b.ctx->release();
  return true;
}

void *allocAligned(comet_rt_context *ctx, size_t bytes, size_t alignment,
                   int32_t category, bool zero) {
  if (!validCategory(category))
    return nullptr;
  ctx = resolve(ctx);
  if (ctx->device)
    return allocDevice(ctx, bytes, category, zero);
  if (alignment < COMET_RT_ALLOC_ALIGNMENT)
    alignment = COMET_RT_ALLOC_ALIGNMENT;
  if ((alignment & (alignment - 1)) != 0)
    return nullptr;
  size_t total = bytes + alignment + sizeof(BlockHeader);
  if (total < bytes)
    return nullptr; // overflow
  void *raw = zero ? std::calloc(1, total) : std::malloc(total);
  if (!raw)
    return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(raw) + sizeof(BlockHeader);
  uintptr_t aligned = (start + alignment - 1) & ~(uintptr_t)(alignment - 1);
  auto *result = reinterpret_cast<void *>(aligned);
  BlockHeader *h = headerOf(result);
  h->raw = raw;
  h->size = bytes;
  h->category = category;
  h->ctx = ctx;
  h->magic = kMagic;
  ctx->retain();
  ctx->alloc.add(category, static_cast<int64_t>(bytes), /*isAlloc=*/true);
  return result;
}

} // namespace

extern "C" {

comet_rt_context *comet_rt_context_create(void) {
  return new (std::nothrow) comet_rt_context();
}

void comet_rt_context_destroy(comet_rt_context *ctx) {
  if (ctx && ctx != comet_rt_default_context())
    ctx->release();
}

comet_rt_context *comet_rt_default_context(void) {
  static comet_rt_context *def = new comet_rt_context(); // used at exit
  return def;
}

void *comet_rt_alloc(comet_rt_context *ctx, size_t bytes, int32_t category) {
  return allocAligned(ctx, bytes, COMET_RT_ALLOC_ALIGNMENT, category, false);
}

void *comet_rt_alloc_zeroed(comet_rt_context *ctx, size_t bytes,
                            int32_t category) {
  return allocAligned(ctx, bytes, COMET_RT_ALLOC_ALIGNMENT, category, true);
}

void comet_rt_free(void *ptr) {
  if (!ptr || freeDevice(ptr))
    return;
  BlockHeader *h = headerOf(ptr);
  if (h->magic != kMagic) {
    comet::rt::fatal("comet_rt_free: pointer not from comet_rt_alloc");
    return;
  }
  h->magic = 0; // catches a double free
  comet_rt_context *ctx = h->ctx;
  ctx->alloc.release(static_cast<int32_t>(h->category),
                     static_cast<int64_t>(h->size));
  std::free(h->raw);
  ctx->release();
}

void *comet_rt_alloc_shrink(void *ptr, size_t bytes, int32_t category) {
  if (!ptr || !validCategory(category))
    return nullptr;
  DeviceBlocks &t = deviceBlocks();
  if (t.live.load(std::memory_order_acquire) != 0) {
    std::unique_lock<std::mutex> lock(t.mu);
    auto it = t.blocks.find(ptr);
    if (it != t.blocks.end()) {
      DeviceBlock &b = it->second;
      if (bytes > b.size)
        return nullptr;
      DeviceBlock old = b;
      b.size = bytes;
      b.category = category;
      lock.unlock();
      old.ctx->alloc.add(old.category, -static_cast<int64_t>(old.size),
                         /*isAlloc=*/false);
      old.ctx->alloc.add(category, static_cast<int64_t>(bytes),
                         /*isAlloc=*/false);
      return ptr;
    }
  }
  BlockHeader *h = headerOf(ptr);
  if (h->magic != kMagic || bytes > h->size)
    return nullptr;
  // Room for any alignment offset, as allocAligned asks: realloc may move
  // the block, and the offset that aligns it may then differ.
  const size_t offset = static_cast<char *>(ptr) - static_cast<char *>(h->raw);
  const size_t total = bytes + COMET_RT_ALLOC_ALIGNMENT + sizeof(BlockHeader);
  BlockHeader saved = *h;
  // Under 128 bytes less, or when realloc fails (it keeps the block then),
  // the block stays where it is with its tail unused.
  void *raw = total < offset + h->size ? std::realloc(h->raw, total) : nullptr;
  if (!raw)
    raw = saved.raw;
  char *result = static_cast<char *>(raw) + offset;
  if (raw != saved.raw) {
    uintptr_t start = reinterpret_cast<uintptr_t>(raw) + sizeof(BlockHeader);
    uintptr_t aligned = (start + COMET_RT_ALLOC_ALIGNMENT - 1) &
                        ~(uintptr_t)(COMET_RT_ALLOC_ALIGNMENT - 1);
    std::memmove(reinterpret_cast<void *>(aligned), result, bytes);
    result = reinterpret_cast<char *>(aligned);
  }
  h = headerOf(result);
  *h = saved;
  h->raw = raw;
  h->size = bytes;
  h->category = category;
  // The old size leaves its category before the new one is counted, so the
  // change never makes a peak.
  saved.ctx->alloc.add(static_cast<int32_t>(saved.category),
                       -static_cast<int64_t>(saved.size), /*isAlloc=*/false);
  saved.ctx->alloc.add(category, static_cast<int64_t>(bytes),
                       /*isAlloc=*/false);
  return result;
}

size_t comet_rt_alloc_size(const void *ptr) {
  if (DeviceBlock b; deviceBlocks().find(ptr, b))
    return b.size;
  if (!ptr || headerOf(ptr)->magic != kMagic)
    return 0;
  return headerOf(ptr)->size;
}

int32_t comet_rt_alloc_category_of(const void *ptr) {
  if (DeviceBlock b; deviceBlocks().find(ptr, b))
    return b.category;
  if (!ptr || headerOf(ptr)->magic != kMagic)
    return -1;
  return static_cast<int32_t>(headerOf(ptr)->category);
}

void comet_rt_alloc_track(comet_rt_context *ctx, int64_t delta,
                          int32_t category) {
  if (validCategory(category))
    resolve(ctx)->alloc.add(category, delta, /*isAlloc=*/false);
}

} // extern "C"

// The host entries of abi.def that manage compiled code's memory.
namespace comet::rt::host {

void run(comet_rt_context *ctx, const buffer_alloc_args &a) {
  void *p = a.bytes >= 0
                ? comet_rt_alloc(ctx, static_cast<size_t>(a.bytes), a.category)
                : nullptr;
  if (p)
    ctx->trackStepBlock(p, /*isHandle=*/false);
  // A null buffer makes the lowered code's next kernel fail on a null
  // memref, which reports it; the lowering checks it too.
  *a.result = {p, p, 0, p ? a.bytes : 0, 1};
}

void run(comet_rt_context *ctx, const buffer_free_args &a) {
  if (!a.buffer || !a.buffer->allocated)
    return;
  ctx->untrackStepBlock(a.buffer->allocated);
  comet_rt_free(a.buffer->allocated);
}

void run(comet_rt_context *ctx, const step_abort_args &) {
  std::vector<std::pair<void *, bool>> blocks;
  {
    std::lock_guard<std::mutex> lock(ctx->stepMu);
    blocks.assign(ctx->stepBlocks.begin(), ctx->stepBlocks.end());
  }
  // handle_free untracks the handles it frees (they are live until then).
  for (auto [p, isHandle] : blocks) {
    if (isHandle) {
      _mlir_ciface_comet_rt_handle_free(
          ctx, static_cast<int64_t>(reinterpret_cast<intptr_t>(p)));
    } else {
      ctx->untrackStepBlock(p);
      comet_rt_free(p);
    }
  }
}

} // namespace comet::rt::host

extern "C" {

void comet_rt_alloc_get_stats(comet_rt_context *ctx,
                              comet_rt_alloc_stats *stats) {
  if (!stats)
    return;
  comet::rt::Accounting &acc = resolve(ctx)->alloc;
  std::lock_guard<std::mutex> lock(acc.mutex);
  *stats = acc.stats;
}

void comet_rt_context_set_workspace_limit(comet_rt_context *ctx,
                                          int64_t bytes) {
  if (bytes >= 0)
    resolve(ctx)->workspaceLimit.store(bytes, std::memory_order_relaxed);
}

int64_t comet_rt_context_workspace_limit(comet_rt_context *ctx) {
  return resolve(ctx)->workspaceLimit.load(std::memory_order_relaxed);
}

void comet_rt_alloc_reset_peaks(comet_rt_context *ctx) {
  comet::rt::Accounting &acc = resolve(ctx)->alloc;
  std::lock_guard<std::mutex> lock(acc.mutex);
  std::memcpy(acc.stats.peak, acc.stats.current, sizeof(acc.stats.peak));
  std::memcpy(acc.stats.at_peak, acc.stats.current, sizeof(acc.stats.at_peak));
  acc.stats.peak_total = acc.stats.current_total;
  acc.stats.tensor_peak = acc.stats.tensor_current;
  acc.stats.num_allocs = 0;
  acc.stats.num_frees = 0;
}

void comet_rt_alloc_record_timeline(comet_rt_context *ctx, int32_t on) {
  comet::rt::Accounting &acc = resolve(ctx)->alloc;
  std::lock_guard<std::mutex> lock(acc.mutex);
  acc.recording = on != 0;
  if (acc.recording)
    acc.timeline.assign(1, acc.stats.tensor_current);
}

int64_t comet_rt_alloc_timeline(comet_rt_context *ctx, int64_t *out,
                                int64_t capacity) {
  comet::rt::Accounting &acc = resolve(ctx)->alloc;
  std::lock_guard<std::mutex> lock(acc.mutex);
  int64_t n = static_cast<int64_t>(acc.timeline.size());
  for (int64_t i = 0; out && i < std::min(n, capacity); ++i)
    out[i] = acc.timeline[i];
  return n;
}

const char *comet_rt_alloc_category_name(int32_t category) {
  static const char *names[] = {"params",      "grads",      "optimizer_state",
                                "activations", "compressed", "workspace",
                                "other"};
  return validCategory(category) ? names[category] : "unknown";
}

} // extern "C"
