//===- AllocTest.cpp - Allocator accounting -------------------------------===//

#include "comet/runtime/alloc.h"
#include "comet/runtime/abi.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace {

comet_rt_alloc_stats stats() {
  comet_rt_alloc_stats s;
  comet_rt_alloc_get_stats(nullptr, &s);
  return s;
}

TEST(Alloc, CountsCurrentAndPeakPerCategory) {
  comet_rt_alloc_reset_peaks(nullptr);
  comet_rt_alloc_stats base = stats();
  void *a = comet_rt_alloc(nullptr, 1000, COMET_RT_MEM_ACTIVATIONS);
  void *b = comet_rt_alloc(nullptr, 300, COMET_RT_MEM_PARAMS);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % COMET_RT_ALLOC_ALIGNMENT, 0u);
  EXPECT_EQ(comet_rt_alloc_size(a), 1000u);
  EXPECT_EQ(comet_rt_alloc_category_of(b), COMET_RT_MEM_PARAMS);
  comet_rt_alloc_stats s = stats();
  EXPECT_EQ(s.current[COMET_RT_MEM_ACTIVATIONS] -
                base.current[COMET_RT_MEM_ACTIVATIONS],
            1000);
  EXPECT_EQ(s.current[COMET_RT_MEM_PARAMS] - base.current[COMET_RT_MEM_PARAMS],
            300);
  EXPECT_EQ(s.current_total - base.current_total, 1300);
  comet_rt_free(a);
  void *c = comet_rt_alloc(nullptr, 500, COMET_RT_MEM_ACTIVATIONS);
  s = stats();
  // Activations peaked at 1000 while 500 are live now.
  EXPECT_EQ(s.peak[COMET_RT_MEM_ACTIVATIONS] -
                base.current[COMET_RT_MEM_ACTIVATIONS],
            1000);
  EXPECT_EQ(s.current[COMET_RT_MEM_ACTIVATIONS] -
                base.current[COMET_RT_MEM_ACTIVATIONS],
            500);
  EXPECT_EQ(s.peak_total - base.current_total, 1300);
  comet_rt_free(b);
  comet_rt_free(c);
  s = stats();
  EXPECT_EQ(s.current_total, base.current_total);
  EXPECT_EQ(s.num_allocs, 3);
  EXPECT_EQ(s.num_frees, 3);
}

// A block made at a guessed size (a stream being encoded) is shrunk to what
// it holds and counted in another category from then on: the first bytes
// are kept, the counts move at once, no peak is made, and the block frees as
// its new size.
TEST(Alloc, ShrinkKeepsTheBytesAndMovesTheCount) {
  comet_rt_context *ctx = comet_rt_context_create();
  ASSERT_NE(ctx, nullptr);
  auto statsOf = [&] {
    comet_rt_alloc_stats s;
    comet_rt_alloc_get_stats(ctx, &s);
    return s;
  };
  // Large (mmap'd by malloc) and small (from the heap) blocks.
  for (size_t big : {size_t(8) << 20, size_t(4096)}) {
    SCOPED_TRACE(big);
    comet_rt_alloc_reset_peaks(ctx);
    void *p = comet_rt_alloc(ctx, big, COMET_RT_MEM_WORKSPACE);
    ASSERT_NE(p, nullptr);
    auto *bytes = static_cast<uint8_t *>(p);
    const size_t keep = big / 3 + 5;
    for (size_t i = 0; i < keep; ++i)
      bytes[i] = uint8_t(i * 7 + 1);
    comet_rt_alloc_stats before = statsOf();
    void *q = comet_rt_alloc_shrink(p, keep, COMET_RT_MEM_COMPRESSED);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % COMET_RT_ALLOC_ALIGNMENT, 0u);
    EXPECT_EQ(comet_rt_alloc_size(q), keep);
    EXPECT_EQ(comet_rt_alloc_category_of(q), COMET_RT_MEM_COMPRESSED);
    for (size_t i = 0; i < keep; ++i)
      ASSERT_EQ(static_cast<uint8_t *>(q)[i], uint8_t(i * 7 + 1)) << i;
    comet_rt_alloc_stats s = statsOf();
    EXPECT_EQ(s.current[COMET_RT_MEM_WORKSPACE],
              before.current[COMET_RT_MEM_WORKSPACE] - int64_t(big));
    EXPECT_EQ(s.current[COMET_RT_MEM_COMPRESSED],
              before.current[COMET_RT_MEM_COMPRESSED] + int64_t(keep));
    EXPECT_EQ(s.peak_total, before.peak_total);
    EXPECT_EQ(s.tensor_current, before.tensor_current + int64_t(keep));
    EXPECT_EQ(s.live_blocks, before.live_blocks);
    // Larger than the block, an unknown category or not our pointer: NULL,
    // the block unchanged.
    EXPECT_EQ(comet_rt_alloc_shrink(q, keep + 1, COMET_RT_MEM_COMPRESSED),
              nullptr);
    EXPECT_EQ(comet_rt_alloc_shrink(q, keep, 99), nullptr);
    EXPECT_EQ(comet_rt_alloc_shrink(nullptr, 0, COMET_RT_MEM_OTHER), nullptr);
    EXPECT_EQ(comet_rt_alloc_size(q), keep);
    // The same size again: nothing moves.
    EXPECT_EQ(comet_rt_alloc_shrink(q, keep, COMET_RT_MEM_COMPRESSED), q);
    comet_rt_free(q);
    s = statsOf();
    EXPECT_EQ(s.current_total, before.current_total - int64_t(big));
  }
  comet_rt_context_destroy(ctx);
}

TEST(Alloc, GlobalPeakIsSumAtOneInstantNotSumOfPeaks) {
  comet_rt_alloc_reset_peaks(nullptr);
  comet_rt_alloc_stats base = stats();
  // Activations peak at 800 and grads at 700, never at the same time.
  void *a = comet_rt_alloc(nullptr, 800, COMET_RT_MEM_ACTIVATIONS);
  void *g1 = comet_rt_alloc(nullptr, 100, COMET_RT_MEM_GRADS);
  comet_rt_free(a);
  void *g2 = comet_rt_alloc(nullptr, 600, COMET_RT_MEM_GRADS);
  comet_rt_alloc_stats s = stats();
  EXPECT_EQ(s.peak[COMET_RT_MEM_ACTIVATIONS] -
                base.current[COMET_RT_MEM_ACTIVATIONS],
            800);
  EXPECT_EQ(s.peak[COMET_RT_MEM_GRADS] - base.current[COMET_RT_MEM_GRADS], 700);
  EXPECT_EQ(s.peak_total - base.current_total, 900); // 800 + 100
  EXPECT_EQ(s.at_peak[COMET_RT_MEM_ACTIVATIONS] -
                base.current[COMET_RT_MEM_ACTIVATIONS],
            800);
  EXPECT_EQ(s.at_peak[COMET_RT_MEM_GRADS] - base.current[COMET_RT_MEM_GRADS],
            100);
  comet_rt_free(g1);
  comet_rt_free(g2);
}

TEST(Alloc, ResetPeaksKeepsCurrent) {
  void *a = comet_rt_alloc(nullptr, 4096, COMET_RT_MEM_OPTIMIZER_STATE);
  void *b = comet_rt_alloc(nullptr, 4096, COMET_RT_MEM_OPTIMIZER_STATE);
  comet_rt_free(b);
  comet_rt_alloc_reset_peaks(nullptr);
  comet_rt_alloc_stats s = stats();
  EXPECT_EQ(s.peak[COMET_RT_MEM_OPTIMIZER_STATE],
            s.current[COMET_RT_MEM_OPTIMIZER_STATE]);
  EXPECT_EQ(s.peak_total, s.current_total);
  EXPECT_EQ(s.num_allocs, 0);
  comet_rt_free(a);
}

TEST(Alloc, TrackAndGenericHooksAndBadArguments) {
  comet_rt_alloc_reset_peaks(nullptr);
  comet_rt_alloc_stats base = stats();
  comet_rt_alloc_track(nullptr, 12345, COMET_RT_MEM_COMPRESSED);
  EXPECT_EQ(stats().current[COMET_RT_MEM_COMPRESSED] -
                base.current[COMET_RT_MEM_COMPRESSED],
            12345);
  comet_rt_alloc_track(nullptr, -12345, COMET_RT_MEM_COMPRESSED);
  EXPECT_EQ(stats().current[COMET_RT_MEM_COMPRESSED],
            base.current[COMET_RT_MEM_COMPRESSED]);

  EXPECT_EQ(comet_rt_alloc(nullptr, 8, 99), nullptr);
  void *z = comet_rt_alloc(nullptr, 0, COMET_RT_MEM_OTHER);
  EXPECT_NE(z, nullptr);
  comet_rt_free(z);
  comet_rt_free(nullptr);
  float *zeroed = static_cast<float *>(comet_rt_alloc_zeroed(
      nullptr, 64 * sizeof(float), COMET_RT_MEM_WORKSPACE));
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(zeroed[i], 0.0f);
  comet_rt_free(zeroed);
  EXPECT_STREQ(comet_rt_alloc_category_name(COMET_RT_MEM_OPTIMIZER_STATE),
               "optimizer_state");
  EXPECT_EQ(stats().current_total, base.current_total);
}

TEST(Alloc, ThreadSafeCounting) {
  comet_rt_alloc_reset_peaks(nullptr);
  comet_rt_alloc_stats base = stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 2000; ++i) {
        void *p = comet_rt_alloc(nullptr, 16 + (i % 7),
                                 t % COMET_RT_MEM_NUM_CATEGORIES);
        comet_rt_free(p);
      }
    });
  for (auto &th : threads)
    th.join();
  comet_rt_alloc_stats s = stats();
  EXPECT_EQ(s.current_total, base.current_total);
  for (int c = 0; c < COMET_RT_MEM_NUM_CATEGORIES; ++c)
    EXPECT_EQ(s.current[c], base.current[c]);
  EXPECT_EQ(s.num_allocs, 16000);
  EXPECT_EQ(s.live_blocks, base.live_blocks);
  // At most 8 blocks of <= 22 bytes were ever live at once.
  EXPECT_LE(s.peak_total - base.current_total, 8 * 22);
}

} // namespace

// Two contexts count apart, and neither touches the default context.
TEST(Alloc, ContextsAreIndependent) {
  comet_rt_context *a = comet_rt_context_create();
  comet_rt_context *b = comet_rt_context_create();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  comet_rt_alloc_stats d0, d1, sa, sb;
  comet_rt_alloc_get_stats(nullptr, &d0);
  void *pa = comet_rt_alloc(a, 1000, COMET_RT_MEM_ACTIVATIONS);
  void *pb = comet_rt_alloc(b, 300, COMET_RT_MEM_PARAMS);
  void *wa = comet_rt_alloc(a, 50, COMET_RT_MEM_WORKSPACE);
  comet_rt_alloc_get_stats(a, &sa);
  comet_rt_alloc_get_stats(b, &sb);
  comet_rt_alloc_get_stats(nullptr, &d1);
  EXPECT_EQ(sa.current_total, 1050);
  EXPECT_EQ(sa.current[COMET_RT_MEM_ACTIVATIONS], 1000);
  EXPECT_EQ(sa.current[COMET_RT_MEM_PARAMS], 0);
  // Workspace is not a graph tensor.
  EXPECT_EQ(sa.tensor_current, 1000);
  EXPECT_EQ(sb.current_total, 300);
  EXPECT_EQ(sb.tensor_peak, 300);
  EXPECT_EQ(d1.current_total, d0.current_total);
  comet_rt_free(pa);
  comet_rt_free(wa);
  comet_rt_alloc_get_stats(a, &sa);
  EXPECT_EQ(sa.current_total, 0);
  EXPECT_EQ(sa.peak_total, 1050);
  EXPECT_EQ(sa.tensor_peak, 1000);
  comet_rt_context_destroy(a);
  // A block outlives its context's destroy: the context stays until the
  // block is freed.
  comet_rt_context_destroy(b);
  comet_rt_alloc_get_stats(b, &sb);
  EXPECT_EQ(sb.current_total, 300);
  comet_rt_free(pb);
}

// The timeline records every tensor allocation and free while on.
TEST(Alloc, TimelineRecordsTensorBytes) {
  comet_rt_context *c = comet_rt_context_create();
  void *keep = comet_rt_alloc(c, 10, COMET_RT_MEM_PARAMS);
  comet_rt_alloc_record_timeline(c, 1);
  void *x = comet_rt_alloc(c, 100, COMET_RT_MEM_ACTIVATIONS);
  void *w = comet_rt_alloc(c, 7, COMET_RT_MEM_WORKSPACE); // not recorded
  comet_rt_free(x);
  comet_rt_free(w);
  comet_rt_alloc_record_timeline(c, 0);
  void *late = comet_rt_alloc(c, 5, COMET_RT_MEM_OTHER); // after recording
  int64_t n = comet_rt_alloc_timeline(c, nullptr, 0);
  ASSERT_EQ(n, 3);
  std::vector<int64_t> t(n);
  EXPECT_EQ(comet_rt_alloc_timeline(c, t.data(), n), 3);
  EXPECT_EQ(t, (std::vector<int64_t>{10, 110, 10}));
  comet_rt_free(late);
  comet_rt_free(keep);
  comet_rt_context_destroy(c);
}

// step_abort frees what compiled code allocated and did not free, and only
// that: blocks from comet_rt_alloc (the engine's buffers) stay.
TEST(Alloc, StepAbortFreesStepBlocks) {
  comet_rt_context *c = comet_rt_context_create();
  void *param = comet_rt_alloc(c, 64, COMET_RT_MEM_PARAMS);
  comet_rt_buffer b1, b2;
  _mlir_ciface_comet_rt_buffer_alloc(&b1, c, 400, COMET_RT_MEM_ACTIVATIONS);
  _mlir_ciface_comet_rt_buffer_alloc(&b2, c, 200, COMET_RT_MEM_OTHER);
  ASSERT_NE(b1.aligned, nullptr);
  EXPECT_EQ(b1.size, 400);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b1.aligned) % COMET_RT_ALLOC_ALIGNMENT,
            0u);
  _mlir_ciface_comet_rt_buffer_free(c, &b2);
  comet_rt_alloc_stats s;
  comet_rt_alloc_get_stats(c, &s);
  EXPECT_EQ(s.current_total, 464);
  _mlir_ciface_comet_rt_step_abort(c);
  comet_rt_alloc_get_stats(c, &s);
  EXPECT_EQ(s.current_total, 64);
  EXPECT_EQ(s.live_blocks, 1);
  _mlir_ciface_comet_rt_step_abort(c); // nothing left: a no-op
  comet_rt_free(param);
  comet_rt_context_destroy(c);
}
