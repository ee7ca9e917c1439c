//===- DeviceTest.cpp - Putting contexts on a device, without a device
//-----===//
//
// What comet/runtime/device.h does on any machine: the refusals, the CPU
// context's copies, and the message a missing device or backend gives (the
// CUDA backend's kernels are tested in test/unittests/RuntimeCuda, on a
// GPU).
//
//===----------------------------------------------------------------------===//
#include "comet/runtime/device.h"
#include "comet/runtime/alloc.h"
#include "comet/runtime/exec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace {

TEST(Device, CpuIsTheDefault) {
  comet_rt_context *ctx = comet_rt_context_create();
  EXPECT_EQ(comet_rt_context_get_device(ctx), COMET_RT_DEVICE_CPU);
  EXPECT_EQ(comet_rt_context_get_device(nullptr), COMET_RT_DEVICE_CPU);
  EXPECT_EQ(comet_rt_context_set_device(ctx, COMET_RT_DEVICE_CPU), 0);
  comet_rt_context_destroy(ctx);
}

TEST(Device, RefusesTheDefaultContextAndAContextWithMemory) {
  EXPECT_EQ(comet_rt_context_set_device(nullptr, COMET_RT_DEVICE_CUDA),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  comet_rt_context *ctx = comet_rt_context_create();
  void *p = comet_rt_alloc(ctx, 16, COMET_RT_MEM_OTHER);
  EXPECT_EQ(comet_rt_context_set_device(ctx, COMET_RT_DEVICE_CUDA),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(comet_rt_last_error(), "already has memory"), nullptr);
  EXPECT_EQ(comet_rt_context_set_device(ctx, 7),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  comet_rt_free(p);
  EXPECT_EQ(comet_rt_context_set_device(ctx, 7),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(comet_rt_last_error(), "unknown device"), nullptr);
  comet_rt_context_destroy(ctx);
}

// Without its backend, or without a device, CUDA is refused with a message
// that says which; with both (a GPU machine) the context moves to the GPU.
TEST(Device, CudaNeedsTheBackendAndADevice) {
  comet_rt_context *ctx = comet_rt_context_create();
  int32_t rc = comet_rt_context_set_device(ctx, COMET_RT_DEVICE_CUDA);
  std::string msg = comet_rt_last_error();
  if (!comet_rt_cuda_built()) {
    EXPECT_EQ(rc, COMET_RT_ERROR_UNSUPPORTED);
    EXPECT_NE(msg.find("built without its CUDA backend"), std::string::npos)
        << msg;
  } else if (rc != 0) {
    EXPECT_EQ(rc, COMET_RT_ERROR_UNSUPPORTED);
    EXPECT_NE(msg.find("no CUDA device"), std::string::npos) << msg;
  } else {
    EXPECT_EQ(comet_rt_context_get_device(ctx), COMET_RT_DEVICE_CUDA);
  }
  if (rc != 0)
    EXPECT_EQ(comet_rt_context_get_device(ctx), COMET_RT_DEVICE_CPU);
  comet_rt_context_destroy(ctx);
}

TEST(Device, CpuCopiesAreMemcpy) {
  comet_rt_context *ctx = comet_rt_context_create();
  auto *p = static_cast<float *>(comet_rt_alloc(ctx, 8, COMET_RT_MEM_OTHER));
  const float in[2] = {1.5f, -2.0f};
  float out[2] = {0, 0};
  ASSERT_EQ(comet_rt_memcpy(ctx, p, in, sizeof(in)), 0);
  ASSERT_EQ(comet_rt_memcpy(ctx, out, p, sizeof(out)), 0);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -2.0f);
  ASSERT_EQ(comet_rt_memset(ctx, p, 0, 8), 0);
  EXPECT_EQ(p[0], 0.0f);
  EXPECT_EQ(p[1], 0.0f);
  EXPECT_EQ(comet_rt_synchronize(ctx), 0);
  comet_rt_free(p);
  comet_rt_context_destroy(ctx);
}

} // namespace
