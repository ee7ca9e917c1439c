//===- Handles.cpp - Compressed-activation handles and slots --------------===//
//
// The C ABI of comet/runtime/handles.h: what comet.compress/decompress lower
// to. No MLIR or LLVM here, so JIT users outside the Engine (mlir-runner)
// can load it as a shared library.
//
//===----------------------------------------------------------------------===//
#include "comet/runtime/handles.h"
#include "Context.h"
#include "HandlesInternal.h"
#include "Internal.h"
#include "comet/runtime/alloc.h"
#include "comet/runtime/codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

thread_local std::string lastError;

int32_t fail(int32_t code, std::string msg) {
  lastError = std::move(msg);
  return code;
}

/// The block behind a handle: this header, then the codec stream.
struct HandleHeader {
  uint64_t magic;
  int64_t streamBytes;
  int64_t numElements;
  int64_t site;
};
constexpr uint64_t kHandleMagic = 0x434f4d4554484e44ull; // "COMETHND"

struct SlotTable {
  std::mutex mu;
  std::vector<double> eb; // < 0: undefined
  std::vector<comet_rt_site_stats> sites;
};

SlotTable &table(comet_rt_context *ctx) {
  return comet::rt::resolve(ctx)->state<SlotTable>();
}

/// Views an f32 unranked memref as a contiguous array.
bool viewF32(const comet_rt_memref *m, float *&data, int64_t &n,
             std::vector<uint64_t> &dims) {
  void *p;
  int64_t d[8];
  if (comet_rt_memref_view(m, sizeof(float), 8, &p, d, &n))
    return false;
  data = static_cast<float *>(p);
  dims.assign(d, d + m->rank);
  return true;
}

HandleHeader *fromHandle(int64_t h) {
  auto *hdr = reinterpret_cast<HandleHeader *>(static_cast<intptr_t>(h));
  if (!hdr || hdr->magic != kHandleMagic)
    return nullptr;
  return hdr;
}

} // namespace

namespace comet::rt {

int32_t handlesFail(int32_t code, std::string msg) {
  return ::fail(code, std::move(msg));
}

void handlesClearError() { lastError.clear(); }

int32_t siteBegin(comet_rt_context *ctx, const char *op, int32_t codec,
                  int64_t slot, int64_t site, double &eb, int64_t &prevOut) {
  if (site < 0 || site > (1 << 20))
    return ::fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                  std::string(op) + ": bad site");
  SlotTable &t = table(ctx);
  prevOut = 0;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    if (codec == COMET_RT_CODEC_SZ && slot >= 0) {
      if (static_cast<size_t>(slot) >= t.eb.size())
        t.eb.resize(slot + 1, -1.0);
      if (t.eb[slot] <= 0)
        t.eb[slot] = eb;
      eb = t.eb[slot];
    }
    if (static_cast<size_t>(site) < t.sites.size())
      prevOut = t.sites[site].last_bytes_out;
  }
  if (codec == COMET_RT_CODEC_SZ && !(eb > 0 && std::isfinite(eb)))
    return ::fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                  std::string(op) + ": the bound of site " +
                      std::to_string(site) + " is not positive and finite");
  return COMET_RT_SUCCESS;
}

void siteRecord(comet_rt_context *ctx, int64_t site, int32_t codec,
                int64_t slot, double eb, int64_t bytesIn, int64_t bytesOut) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  if (static_cast<size_t>(site) >= t.sites.size())
    t.sites.resize(site + 1, comet_rt_site_stats{0, 0, 0, 0, 0, 0, -1, 0});
  comet_rt_site_stats &s = t.sites[site];
  s.calls += 1;
  s.bytes_in += bytesIn;
  s.bytes_out += bytesOut;
  s.last_bytes_in = bytesIn;
  s.last_bytes_out = bytesOut;
  s.codec = codec;
  s.slot = codec == COMET_RT_CODEC_SZ ? slot : -1;
  s.last_eb = codec == COMET_RT_CODEC_SZ ? eb : 0.0;
}

} // namespace comet::rt

extern "C" {

const char *comet_rt_handles_last_error(void) { return lastError.c_str(); }

} // extern "C"

/// comet_rt_compress of n f32 values; bytesIn is the size of the tensor
/// they stand for (the site statistics' input bytes).
static int64_t compressF32(comet_rt_context *ctx, const float *data, int64_t n,
                           const std::vector<uint64_t> &dims, int64_t bytesIn,
                           int32_t codec, int64_t slot, double eb,
                           int64_t site) {
  int64_t prevOut = 0;
  if (comet::rt::siteBegin(ctx, "comet_rt_compress", codec, slot, site, eb,
                           prevOut) != COMET_RT_SUCCESS)
    return 0;
  size_t worst = comet_rt_codec_max_compressed_size(codec, COMET_RT_DTYPE_F32,
                                                    static_cast<uint64_t>(n));
  if (worst == 0) {
    fail(COMET_RT_ERROR_INVALID_ARGUMENT,
         "comet_rt_compress: unknown codec " + std::to_string(codec));
    return 0;
  }
  // Compress into a scratch block first, sized from this site's last stream
  // (retrying at the worst case), then keep exactly the stream's bytes: the
  // scratch is counted as workspace while it lives.
  size_t guess =
      prevOut > 0 ? std::min(worst, size_t(prevOut) * 5 / 4 + 4096) : worst;
  size_t outSize = 0;
  comet_rt_status st = COMET_RT_ERROR_BUFFER_TOO_SMALL;
  void *scratch = nullptr;
  for (size_t cap : {guess, worst}) {
    scratch = comet_rt_alloc(ctx, cap, COMET_RT_MEM_WORKSPACE);
    if (!scratch) {
      fail(COMET_RT_ERROR_OUT_OF_MEMORY, "comet_rt_compress: out of memory");
      return 0;
    }
    st = comet_rt_codec_compress(codec, COMET_RT_DTYPE_F32, data, dims.data(),
                                 static_cast<uint32_t>(dims.size()), eb,
                                 scratch, cap, &outSize);
    if (st != COMET_RT_ERROR_BUFFER_TOO_SMALL || cap == worst)
      break;
    comet_rt_free(scratch);
    scratch = nullptr;
  }
  if (st != COMET_RT_SUCCESS) {
    comet_rt_free(scratch);
    fail(static_cast<int32_t>(st),
         std::string("comet_rt_compress: ") + comet_rt_status_string(st));
    return 0;
  }
  size_t total = sizeof(HandleHeader) + outSize;
  auto *hdr = static_cast<HandleHeader *>(
      comet_rt_alloc(ctx, total, COMET_RT_MEM_COMPRESSED));
  if (!hdr) {
    comet_rt_free(scratch);
    fail(COMET_RT_ERROR_OUT_OF_MEMORY, "comet_rt_compress: out of memory");
    return 0;
  }
  hdr->magic = kHandleMagic;
  hdr->streamBytes = static_cast<int64_t>(outSize);
  hdr->numElements = n;
  hdr->site = site;
  std::memcpy(hdr + 1, scratch, outSize);
  comet_rt_free(scratch);
  comet::rt::siteRecord(ctx, site, codec, slot, eb, bytesIn,
                        static_cast<int64_t>(total));
  comet::rt::resolve(ctx)->trackStepBlock(hdr, /*isHandle=*/true);
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(hdr));
}

extern "C" {

int64_t comet_rt_cpu_compress(comet_rt_context *ctx, comet_rt_memref *x,
                              int32_t codec, int64_t slot, double eb,
                              int64_t site) {
  lastError.clear();
  float *data;
  int64_t n;
  std::vector<uint64_t> dims;
  if (!viewF32(x, data, n, dims)) {
    fail(COMET_RT_ERROR_INVALID_ARGUMENT,
         "comet_rt_compress: input is not a contiguous f32 memref");
    return 0;
  }
  return compressF32(ctx, data, n, dims, n * 4, codec, slot, eb, site);
}

int64_t comet_rt_cpu_compress_i1(comet_rt_context *ctx, comet_rt_memref *x,
                                 int64_t site) {
  lastError.clear();
  void *p;
  int64_t d[8], n;
  if (comet_rt_memref_view(x, 1, 8, &p, d, &n)) {
    fail(COMET_RT_ERROR_INVALID_ARGUMENT,
         "comet_rt_compress_i1: input is not a contiguous bool memref");
    return 0;
  }
  // The codec reads floats: 1.0 for true, 0.0 for false, counted as
  // workspace while the stream is built.
  auto *f = static_cast<float *>(
      comet_rt_alloc(ctx, std::max<size_t>(1, size_t(n) * sizeof(float)),
                     COMET_RT_MEM_WORKSPACE));
  if (!f) {
    fail(COMET_RT_ERROR_OUT_OF_MEMORY, "comet_rt_compress_i1: out of memory");
    return 0;
  }
  const uint8_t *b = static_cast<const uint8_t *>(p);
  for (int64_t i = 0; i < n; ++i)
    f[i] = b[i] ? 1.0f : 0.0f;
  std::vector<uint64_t> dims(d, d + x->rank);
  int64_t h =
      compressF32(ctx, f, n, dims, n, COMET_RT_CODEC_MASK, -1, 0.0, site);
  comet_rt_free(f);
  return h;
}

int32_t comet_rt_cpu_decompress(comet_rt_context *, int64_t handle,
                                comet_rt_memref *y) {
  lastError.clear();
  HandleHeader *hdr = fromHandle(handle);
  if (!hdr)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "comet_rt_decompress: not a live handle");
  float *data;
  int64_t n;
  std::vector<uint64_t> dims;
  if (!viewF32(y, data, n, dims))
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "comet_rt_decompress: output is not a contiguous f32 memref");
  if (n != hdr->numElements)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "comet_rt_decompress: output has " + std::to_string(n) +
                    " elements, the handle " +
                    std::to_string(hdr->numElements));
  comet_rt_status st =
      comet_rt_codec_decompress(hdr + 1, static_cast<size_t>(hdr->streamBytes),
                                data, static_cast<size_t>(n) * sizeof(float));
  if (st != COMET_RT_SUCCESS)
    return fail(static_cast<int32_t>(st), std::string("comet_rt_decompress: ") +
                                              comet_rt_status_string(st));
  return COMET_RT_SUCCESS;
}

} // extern "C"

/// The bits of a mask handle for a gradient dY -> dX of its shape: what
/// relu_grad_mask and dropout_grad_mask read. `op` names the caller.
static int32_t maskBits(const char *op, int64_t handle, comet_rt_memref *dym,
                        comet_rt_memref *dxm, const float *&g, float *&o,
                        const uint8_t *&bits, int64_t &count) {
  std::string name = std::string("comet_rt_") + op;
  HandleHeader *hdr = fromHandle(handle);
  if (!hdr)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, name + ": not a live handle");
  float *gm;
  int64_t ng, no;
  std::vector<uint64_t> dg, dout;
  if (!viewF32(dym, gm, ng, dg) || !viewF32(dxm, o, no, dout))
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                name + ": dY and dX must be contiguous f32 memrefs");
  g = gm;
  size_t streamBytes = static_cast<size_t>(hdr->streamBytes);
  comet_rt_codec_info info;
  comet_rt_status st = comet_rt_codec_get_info(hdr + 1, streamBytes, &info);
  if (st != COMET_RT_SUCCESS)
    return fail(static_cast<int32_t>(st),
                name + ": " + comet_rt_status_string(st));
  uint64_t n = info.num_elements;
  if (info.codec != COMET_RT_CODEC_MASK ||
      info.compressed_bytes != streamBytes ||
      info.payload_bytes != (n + 7) / 8 ||
      info.payload_bytes > info.compressed_bytes)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                name + ": the handle is not a mask stream");
  if (dg != dout || dg.size() != info.rank ||
      !std::equal(dg.begin(), dg.end(), info.dims))
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                name + ": dY, dX and the handle's shapes differ");
  // The payload is the stream's last section.
  bits = reinterpret_cast<const uint8_t *>(hdr + 1) +
         (info.compressed_bytes - info.payload_bytes);
  count = static_cast<int64_t>(n);
  return COMET_RT_SUCCESS;
}

extern "C" {

int32_t comet_rt_cpu_relu_grad_mask(comet_rt_context *, comet_rt_memref *dym,
                                    int64_t handle, comet_rt_memref *dxm) {
  lastError.clear();
  const float *g;
  float *o;
  const uint8_t *bits;
  int64_t count;
  if (int32_t rc =
          maskBits("relu_grad_mask", handle, dym, dxm, g, o, bits, count))
    return rc;
  for (int64_t i = 0; i < count; ++i)
    o[i] = (bits[i >> 3] >> (i & 7)) & 1 ? g[i] : 0.0f;
  return COMET_RT_SUCCESS;
}

int32_t comet_rt_cpu_dropout_grad_mask(comet_rt_context *, comet_rt_memref *dym,
                                       int64_t handle, comet_rt_memref *ratiom,
                                       comet_rt_memref *trainm,
                                       comet_rt_memref *dxm) {
  lastError.clear();
  const float *g;
  float *o;
  const uint8_t *bits;
  int64_t count;
  if (int32_t rc =
          maskBits("dropout_grad_mask", handle, dym, dxm, g, o, bits, count))
    return rc;
  float ratio;
  bool training;
  if (int32_t rc = comet::rt::dropoutParams("dropout_grad_mask", ratiom, trainm,
                                            ratio, training))
    return fail(rc, comet_rt_last_error());
  float scale = training ? 1.0f / (1.0f - ratio) : 1.0f;
  for (int64_t i = 0; i < count; ++i)
    o[i] = !training || (bits[i >> 3] >> (i & 7)) & 1 ? g[i] * scale : 0.0f;
  return COMET_RT_SUCCESS;
}

void comet_rt_cpu_handle_free(comet_rt_context *ctx, int64_t handle) {
  if (HandleHeader *hdr = fromHandle(handle)) {
    comet::rt::resolve(ctx)->untrackStepBlock(hdr);
    hdr->magic = 0;
    comet_rt_free(hdr);
  }
}

int64_t comet_rt_handle_bytes(int64_t handle) {
  HandleHeader *hdr = fromHandle(handle);
  return hdr ? static_cast<int64_t>(sizeof(HandleHeader)) + hdr->streamBytes
             : 0;
}

double comet_rt_slot_get_eb(comet_rt_context *ctx, int64_t slot) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  if (slot < 0 || static_cast<size_t>(slot) >= t.eb.size())
    return -1.0;
  return t.eb[slot];
}

int32_t comet_rt_slot_set_eb(comet_rt_context *ctx, int64_t slot, double eb) {
  if (slot < 0 || slot > (1 << 20) || !(eb > 0 && std::isfinite(eb)))
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "comet_rt_slot_set_eb: bad slot or bound");
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  if (static_cast<size_t>(slot) >= t.eb.size())
    t.eb.resize(slot + 1, -1.0);
  t.eb[slot] = eb;
  return COMET_RT_SUCCESS;
}

void comet_rt_slots_reset(comet_rt_context *ctx) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  t.eb.clear();
  t.sites.clear();
}

int64_t comet_rt_num_sites(comet_rt_context *ctx) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  return static_cast<int64_t>(t.sites.size());
}

int32_t comet_rt_site_get_stats(comet_rt_context *ctx, int64_t site,
                                comet_rt_site_stats *out) {
  SlotTable &t = table(ctx);
  std::lock_guard<std::mutex> lock(t.mu);
  if (!out || site < 0 || static_cast<size_t>(site) >= t.sites.size())
    return COMET_RT_ERROR_INVALID_ARGUMENT;
  *out = t.sites[site];
  return COMET_RT_SUCCESS;
}

} // extern "C"
