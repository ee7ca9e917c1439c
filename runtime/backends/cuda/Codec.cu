//===- Codec.cu - Compressed activations on a CUDA device -----------------===//
//
// The CUDA codec (kernels/cuda, format v1) into device memory. A handle is
// host metadata and one device block of the category `compressed` holding
// the stream, counted as the CPU's (its 32-byte header plus the stream) so
// that one graph reports the same bytes on either device. The codec wants
// the worst case's capacity, so compress's scratch block (workspace) is
// the worst-case stream; compress waits once for the stream's size, which
// sizes the handle's block.
//
//===----------------------------------------------------------------------===//
#include "Common.cuh"
#include "Handles.h"
#include "Shapes.h"
#include "comet/runtime/codec.h"
#include "comet/runtime/codec_cuda.h"

#include <memory>

namespace comet::rt::cuda {
namespace {

struct DeviceHandle {
  uint64_t magic;
  int64_t streamBytes;
  int64_t numElements;
  int64_t site;
  int32_t codec;
  void *block;
  std::vector<int64_t> dims;
};
constexpr uint64_t kDeviceHandleMagic = 0x434f4d4554435544ull; // "COMETCUD"

DeviceHandle *deviceHandle(int64_t h) {
  auto *p = reinterpret_cast<DeviceHandle *>(static_cast<intptr_t>(h));
  return p && p->magic == kDeviceHandleMagic ? p : nullptr;
}

/// Compresses n f32 values of device memory at site.
int64_t compressDevice(comet_rt_context *ctx, const char *op, const float *x,
                       const std::vector<int64_t> &shape, int64_t bytesIn,
                       int32_t codec, int64_t slot, double eb, int64_t site) {
  // Fixed-width chunks whatever the site's entropy setting.
  // A slot with one bound per channel is stored at cfg.eb, the tightest of
  // them: the CUDA codec writes one bound per stream.
  SiteConfig cfg;
  if (siteBegin(ctx, op, codec, slot, site, eb, shape, cfg) !=
      COMET_RT_SUCCESS)
    return 0;
  eb = cfg.eb;
  int64_t n = product(shape, 0, shape.size());
  size_t worst = comet_rt_codec_cuda_max_compressed_size(
      codec, COMET_RT_DTYPE_F32, static_cast<uint64_t>(n));
  std::vector<uint64_t> dims(shape.begin(), shape.end());
  State &s = state(ctx);
  size_t outSize = 0;
  auto scratch = std::make_unique<Workspace>(ctx, worst);
  if (!scratch->ok()) {
    oom(op);
    return 0;
  }
  // Synchronous: it returns the stream's size, which sizes the block.
  comet_rt_status st =
      comet_rt_codec_cuda_compress(codec, COMET_RT_DTYPE_F32, x, dims.data(),
                                   static_cast<uint32_t>(dims.size()), eb,
                                   scratch->get(), worst, &outSize, s.stream);
  if (st != COMET_RT_SUCCESS) {
    fail(st, concat(op, ": ", comet_rt_status_string(st)));
    return 0;
  }
  int64_t total = kHandleHeaderBytes + static_cast<int64_t>(outSize);
  void *block = comet_rt_alloc(ctx, total, COMET_RT_MEM_COMPRESSED);
  if (!block) {
    oom(op);
    return 0;
  }
  cudaError_t e = cudaMemcpyAsync(block, scratch->get(), outSize,
                                  cudaMemcpyDeviceToDevice, s.stream);
  scratch.reset();
  if (e != cudaSuccess) {
    comet_rt_free(block);
    cudaFail(op, e);
    return 0;
  }
  auto *h = new DeviceHandle{kDeviceHandleMagic,
                             static_cast<int64_t>(outSize),
                             n,
                             site,
                             codec,
                             block,
                             shape};
  siteRecord(ctx, site, codec, slot, eb, bytesIn, total);
  resolve(ctx)->trackStepBlock(h, /*isHandle=*/true);
  ok();
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(h));
}

/// The bits of a mask handle: the stream's last section.
const uint8_t *maskBits(int64_t handle) {
  DeviceHandle *h = deviceHandle(handle);
  return static_cast<const uint8_t *>(h->block) +
         (h->streamBytes - (h->numElements + 7) / 8);
}

__global__ void boolToFloatK(const uint8_t *x, float *y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = x[i] ? 1.0f : 0.0f;
}

__global__ void maskedK(const float *dy, const uint8_t *bits, float *dx,
                        int64_t n, float scale, int all) {
  GRID_STRIDE(i, n)
  dx[i] = all || (bits[i >> 3] >> (i & 7)) & 1 ? dy[i] * scale : 0.0f;
}

} // namespace

bool handleInfo(comet_rt_context *, int64_t handle, HandleInfo &out) {
  DeviceHandle *h = deviceHandle(handle);
  if (!h)
    return false;
  out.codec = h->codec;
  out.numElements = h->numElements;
  out.dims = h->dims;
  out.blockBytes = out.streamBytes = h->streamBytes;
  // The CUDA codec writes a mask's bits as the stream's last section.
  out.payloadBytes = h->codec == COMET_RT_CODEC_MASK ? (h->numElements + 7) / 8
                                                     : h->streamBytes;
  return true;
}

int64_t run(comet_rt_context *ctx, const compress_args &a) {
  return compressDevice(ctx, "compress", a.x.f(), a.x.dims, a.x.bytes(),
                        a.codec, a.slot, a.eb, a.site);
}

int64_t run(comet_rt_context *ctx, const compress_i1_args &a) {
  const char *op = "compress_i1";
  int64_t n = a.x.numel();
  // The codec reads floats: 1.0 for true, 0.0 for false, counted as
  // workspace while the stream is built.
  Workspace f(ctx, std::max<size_t>(1, size_t(n) * sizeof(float)));
  if (!f.ok()) {
    oom(op);
    return 0;
  }
  if (n) {
    boolToFloatK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(a.x.as<uint8_t>(),
                                                             f.f(), n);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
      cudaFail(op, e);
      return 0;
    }
  }
  return compressDevice(ctx, op, f.f(), a.x.dims, n, COMET_RT_CODEC_MASK, -1,
                        0.0, a.site);
}

int32_t run(comet_rt_context *ctx, const decompress_args &a) {
  const char *op = "decompress";
  DeviceHandle *h = deviceHandle(a.handle);
  // The status goes to a device word nobody reads: the stream is this
  // backend's own, and waiting for it would cost a sync per activation.
  Workspace status(ctx, sizeof(int32_t));
  if (!status.ok())
    return oom(op);
  comet_rt_status st = comet_rt_codec_cuda_decompress_async(
      h->block, static_cast<size_t>(h->streamBytes), a.y.data,
      static_cast<size_t>(a.y.bytes()), status.as<int32_t>(), streamOf(ctx));
  if (st != COMET_RT_SUCCESS)
    return fail(st, concat(op, ": ", comet_rt_status_string(st)));
  return ok();
}

int32_t run(comet_rt_context *ctx, const relu_grad_mask_args &a) {
  int64_t n = a.dy.numel();
  if (n == 0)
    return ok();
  maskedK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.dy.f(), maskBits(a.handle), a.dx.f(), n, 1.0f, 0);
  LAUNCHED("relu_grad_mask");
  return ok();
}

int32_t run(comet_rt_context *ctx, const dropout_grad_mask_args &a) {
  int64_t n = a.dy.numel();
  if (n == 0)
    return ok();
  bool training = dropoutTraining(a.training_mode);
  float scale = training ? 1.0f / (1.0f - dropoutRatio(a.ratio)) : 1.0f;
  maskedK<<<gridFor(n), kThreads, 0, streamOf(ctx)>>>(
      a.dy.f(), maskBits(a.handle), a.dx.f(), n, scale, !training);
  LAUNCHED("dropout_grad_mask");
  return ok();
}

void run(comet_rt_context *ctx, const handle_free_args &a) {
  if (DeviceHandle *h = deviceHandle(a.handle)) {
    resolve(ctx)->untrackStepBlock(h);
    h->magic = 0;
    comet_rt_free(h->block);
    delete h;
  }
}

} // namespace comet::rt::cuda
