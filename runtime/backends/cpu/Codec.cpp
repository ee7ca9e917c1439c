//===- Codec.cpp - Compressed activations on the CPU ----------------------===//
//
// A CPU handle is one block from comet_rt_alloc in the category
// `compressed`: a 32-byte header, then the codec stream
// (docs/codec-format.md), so the allocator counts exactly what is kept.
// compress and decompress run the CPU codec (CometCodec); relu_grad_mask
// and dropout_grad_mask read a mask stream's bits directly.
//
//===----------------------------------------------------------------------===//
#include "comet/runtime/codec.h"
#include "Context.h"
#include "Cpu.h"
#include "Handles.h"
#include "Shapes.h"
#include "comet/runtime/handles.h"

#include <algorithm>
#include <cstring>

namespace comet::rt::cpu {

namespace {

/// The block behind a handle: this header, then the codec stream.
struct HandleHeader {
  uint64_t magic;
  int64_t streamBytes;
  int64_t numElements;
  int64_t site;
};
static_assert(sizeof(HandleHeader) == kHandleHeaderBytes);
constexpr uint64_t kHandleMagic = 0x434f4d4554484e44ull; // "COMETHND"

HandleHeader *fromHandle(int64_t h) {
  auto *hdr = reinterpret_cast<HandleHeader *>(static_cast<intptr_t>(h));
  if (!hdr || hdr->magic != kHandleMagic)
    return nullptr;
  return hdr;
}

/// Compresses n f32 values at site; bytesIn is the size of the tensor they
/// stand for (the site statistics' input bytes).
int64_t compressF32(comet_rt_context *ctx, const char *op, const float *data,
                    int64_t n, const std::vector<int64_t> &shape,
                    int64_t bytesIn, int32_t codec, int64_t slot, double eb,
                    int64_t site) {
  SiteConfig cfg;
  if (siteBegin(ctx, op, codec, slot, site, eb, shape, cfg) != COMET_RT_SUCCESS)
    return 0;
  eb = cfg.eb;
  const int64_t prevOut = cfg.prevOut;
  const int32_t entropy = cfg.entropy;
  std::vector<uint64_t> dims(shape.begin(), shape.end());
  const uint32_t rank = static_cast<uint32_t>(dims.size());
  const std::vector<double> &channelEb = cfg.channelEb;
  auto encodeWith = [&](int32_t mode, void *out, size_t cap, size_t &size) {
    if (!channelEb.empty())
      return comet_rt_codec_compress_channels(
          mode >= 0 ? mode : comet_rt_codec_get_entropy(), COMET_RT_DTYPE_F32,
          data, dims.data(), rank, channelEb.data(), out, cap, &size);
    return mode >= 0 ? comet_rt_codec_compress_entropy(
                           mode, codec, COMET_RT_DTYPE_F32, data, dims.data(),
                           rank, eb, out, cap, &size)
                     : comet_rt_codec_compress(codec, COMET_RT_DTYPE_F32, data,
                                               dims.data(), rank, eb, out, cap,
                                               &size);
  };
  auto encode = [&](void *out, size_t cap, size_t &size) {
    return encodeWith(entropy, out, cap, size);
  };
  // While the trainer weighs streams against the codec's time
  // (Trainer::chooseSiteEntropy), a site's first sz compression also
  // measures its stream without an entropy stage.
  if (cfg.measureFixedWidth) {
    size_t fixed = 0;
    if (encodeWith(COMET_RT_CODEC_ENTROPY_NONE, nullptr, 0, fixed) ==
        COMET_RT_ERROR_BUFFER_TOO_SMALL)
      siteRecordFixedWidth(ctx, site,
                           static_cast<int64_t>(sizeof(HandleHeader) + fixed));
  }
  auto oom = [&] {
    fail(COMET_RT_ERROR_OUT_OF_MEMORY, concat(op, ": out of memory"));
    return 0;
  };
  // The handle keeps exactly the stream's bytes. With this site's last
  // stream (an sz site after its first step) the stream is made in a block
  // a little larger than that one, counted as workspace while it is made,
  // which then becomes the handle, shrunk to the stream: no second block,
  // no copy. Without one (a first step; raw and mask, whose size is
  // known), or when that handle is too small, the codec gives the exact
  // size and the stream is made in a handle of that size: a worst-case
  // block would be the tensor's size, and at the stem of an image model
  // the step's largest temporary.
  size_t outSize = 0;
  comet_rt_status st = COMET_RT_ERROR_BUFFER_TOO_SMALL;
  HandleHeader *hdr = nullptr;
  if (codec == COMET_RT_CODEC_SZ && prevOut > 0) {
    size_t worst = comet_rt_codec_max_compressed_size(
                       codec, COMET_RT_DTYPE_F32, static_cast<uint64_t>(n)) +
                   8 * channelEb.size();
    size_t guess = std::min(worst, size_t(prevOut) * 17 / 16 + 4096);
    hdr = static_cast<HandleHeader *>(comet_rt_alloc(
        ctx, sizeof(HandleHeader) + guess, COMET_RT_MEM_WORKSPACE));
    if (!hdr)
      return oom();
    st = encode(hdr + 1, guess, outSize);
    void *kept =
        st == COMET_RT_SUCCESS
            ? comet_rt_alloc_shrink(hdr, sizeof(HandleHeader) + outSize,
                                    COMET_RT_MEM_COMPRESSED)
            : nullptr;
    if (!kept)
      comet_rt_free(hdr);
    hdr = static_cast<HandleHeader *>(kept);
    if (st == COMET_RT_SUCCESS && !hdr)
      return oom();
  } else {
    st = encode(nullptr, 0, outSize);
  }
  if (st == COMET_RT_ERROR_BUFFER_TOO_SMALL) {
    hdr = static_cast<HandleHeader *>(comet_rt_alloc(
        ctx, sizeof(HandleHeader) + outSize, COMET_RT_MEM_COMPRESSED));
    if (!hdr)
      return oom();
    st = encode(hdr + 1, outSize, outSize);
  }
  if (st != COMET_RT_SUCCESS) {
    comet_rt_free(hdr);
    fail(st, concat(op, ": ", comet_rt_status_string(st)));
    return 0;
  }
  size_t total = sizeof(HandleHeader) + outSize;
  hdr->magic = kHandleMagic;
  hdr->streamBytes = static_cast<int64_t>(outSize);
  hdr->numElements = n;
  hdr->site = site;
  siteRecord(ctx, site, codec, slot, eb, bytesIn, static_cast<int64_t>(total));
  ctx->trackStepBlock(hdr, /*isHandle=*/true);
  ok();
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(hdr));
}

/// The bits of a mask handle (checked by the contract).
const uint8_t *maskBits(int64_t handle) {
  HandleHeader *hdr = fromHandle(handle);
  comet_rt_codec_info info;
  comet_rt_codec_get_info(hdr + 1, static_cast<size_t>(hdr->streamBytes),
                          &info);
  // The payload is the stream's last section.
  return reinterpret_cast<const uint8_t *>(hdr + 1) +
         (info.compressed_bytes - info.payload_bytes);
}

} // namespace

bool handleInfo(comet_rt_context *, int64_t h, HandleInfo &out) {
  HandleHeader *hdr = fromHandle(h);
  if (!hdr)
    return false;
  comet_rt_codec_info info;
  if (comet_rt_codec_get_info(hdr + 1, static_cast<size_t>(hdr->streamBytes),
                              &info) != COMET_RT_SUCCESS)
    return false;
  out.codec = static_cast<int32_t>(info.codec);
  out.numElements = hdr->numElements;
  out.dims.assign(info.dims, info.dims + info.rank);
  out.blockBytes = hdr->streamBytes;
  out.streamBytes = static_cast<int64_t>(info.compressed_bytes);
  out.payloadBytes = static_cast<int64_t>(info.payload_bytes);
  return true;
}

int64_t run(comet_rt_context *ctx, const compress_args &a) {
  return compressF32(ctx, "compress", a.x.f(), a.x.numel(), a.x.dims,
                     a.x.numel() * 4, a.codec, a.slot, a.eb, a.site);
}

int64_t run(comet_rt_context *ctx, const compress_i1_args &a) {
  const char *op = "compress_i1";
  int64_t n = a.x.numel();
  // The codec reads floats: 1.0 for true, 0.0 for false, counted as
  // workspace while the stream is built.
  auto *f = static_cast<float *>(
      comet_rt_alloc(ctx, std::max<size_t>(1, size_t(n) * sizeof(float)),
                     COMET_RT_MEM_WORKSPACE));
  if (!f) {
    fail(COMET_RT_ERROR_OUT_OF_MEMORY, concat(op, ": out of memory"));
    return 0;
  }
  const uint8_t *b = a.x.as<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    f[i] = b[i] ? 1.0f : 0.0f;
  int64_t h = compressF32(ctx, op, f, n, a.x.dims, n, COMET_RT_CODEC_MASK, -1,
                          0.0, a.site);
  comet_rt_free(f);
  return h;
}

int32_t run(comet_rt_context *, const decompress_args &a) {
  HandleHeader *hdr = fromHandle(a.handle);
  comet_rt_status st = comet_rt_codec_decompress(
      hdr + 1, static_cast<size_t>(hdr->streamBytes), a.y.data,
      static_cast<size_t>(a.y.numel()) * sizeof(float));
  if (st != COMET_RT_SUCCESS)
    return fail(st, concat("decompress: ", comet_rt_status_string(st)));
  return ok();
}

int32_t run(comet_rt_context *, const relu_grad_mask_args &a) {
  const uint8_t *bits = maskBits(a.handle);
  const float *g = a.dy.f();
  float *o = a.dx.f();
  int64_t count = a.dy.numel();
  for (int64_t i = 0; i < count; ++i)
    o[i] = (bits[i >> 3] >> (i & 7)) & 1 ? g[i] : 0.0f;
  return ok();
}

int32_t run(comet_rt_context *, const dropout_grad_mask_args &a) {
  const uint8_t *bits = maskBits(a.handle);
  const float *g = a.dy.f();
  float *o = a.dx.f();
  int64_t count = a.dy.numel();
  bool training = dropoutTraining(a.training_mode);
  float scale = training ? 1.0f / (1.0f - dropoutRatio(a.ratio)) : 1.0f;
  for (int64_t i = 0; i < count; ++i)
    o[i] = !training || (bits[i >> 3] >> (i & 7)) & 1 ? g[i] * scale : 0.0f;
  return ok();
}

void run(comet_rt_context *ctx, const handle_free_args &a) {
  if (HandleHeader *hdr = fromHandle(a.handle)) {
    ctx->untrackStepBlock(hdr);
    hdr->magic = 0;
    comet_rt_free(hdr);
  }
}

} // namespace comet::rt::cpu

extern "C" int64_t comet_rt_handle_bytes(int64_t handle) {
  auto *hdr = comet::rt::cpu::fromHandle(handle);
  return hdr ? static_cast<int64_t>(sizeof(*hdr)) + hdr->streamBytes : 0;
}
