//===- CodecApi.cpp - C ABI of the activation codec -----------------------===//
#include "comet/kernels/cpu/Codec.h"
#include "comet/runtime/codec.h"

namespace cpu = comet::kernels::cpu;

extern "C" {

const char *comet_rt_status_string(comet_rt_status status) {
  switch (status) {
  case COMET_RT_SUCCESS:
    return "ok";
  case COMET_RT_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case COMET_RT_ERROR_BUFFER_TOO_SMALL:
    return "output buffer too small";
  case COMET_RT_ERROR_TRUNCATED:
    return "truncated stream";
  case COMET_RT_ERROR_CORRUPT:
    return "corrupt stream";
  case COMET_RT_ERROR_UNSUPPORTED:
    return "unsupported stream version or feature";
  case COMET_RT_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  case COMET_RT_ERROR_IO:
    return "input/output error";
  case COMET_RT_ERROR_BACKEND:
    return "backend library error";
  }
  return "unknown status";
}

size_t comet_rt_dtype_size(int dtype) { return cpu::dtypeSize(dtype); }

size_t comet_rt_codec_max_compressed_size(int codec, int dtype, uint64_t n) {
  return cpu::maxCompressedSize(codec, dtype, n);
}

void comet_rt_codec_set_num_threads(int num_threads) {
  cpu::setNumThreads(num_threads);
}

comet_rt_status comet_rt_codec_compress(int codec, int dtype, const void *data,
                                        const uint64_t *dims, uint32_t rank,
                                        double eb, void *out,
                                        size_t out_capacity, size_t *out_size) {
  return cpu::compress(codec, dtype, data, dims, rank, eb, out, out_capacity,
                       out_size);
}

comet_rt_status comet_rt_codec_compress_version(int version, int codec,
                                                int dtype, const void *data,
                                                const uint64_t *dims,
                                                uint32_t rank, double eb,
                                                void *out, size_t out_capacity,
                                                size_t *out_size) {
  return cpu::compressVersion(version, codec, dtype, data, dims, rank, eb, out,
                              out_capacity, out_size);
}

comet_rt_status comet_rt_codec_compress_entropy(int entropy, int codec,
                                                int dtype, const void *data,
                                                const uint64_t *dims,
                                                uint32_t rank, double eb,
                                                void *out, size_t out_capacity,
                                                size_t *out_size) {
  return cpu::compressWith(comet::kernels::format::kFormatVersion, entropy,
                           codec, dtype, data, dims, rank, eb, out,
                           out_capacity, out_size);
}

comet_rt_status
comet_rt_codec_compress_channels(int entropy, int dtype, const void *data,
                                 const uint64_t *dims, uint32_t rank,
                                 const double *eb, void *out,
                                 size_t out_capacity, size_t *out_size) {
  return cpu::compressChannels(entropy, dtype, data, dims, rank, eb, out,
                               out_capacity, out_size);
}

int comet_rt_codec_channel_bounds_pay(const uint64_t *dims, uint32_t rank) {
  if (!dims || rank < 2 || rank > COMET_RT_CODEC_MAX_RANK || dims[1] < 2)
    return 0;
  uint64_t inner = 1;
  for (uint32_t i = 2; i < rank; ++i) {
    if (dims[i] >= 16)
      return 1;
    inner *= dims[i];
  }
  return inner >= 16;
}

comet_rt_status comet_rt_codec_set_isa(int isa) { return cpu::setIsa(isa); }

int comet_rt_codec_active_isa(void) { return cpu::activeIsa(); }

comet_rt_status comet_rt_codec_set_entropy(int entropy) {
  return cpu::setEntropy(entropy);
}

int comet_rt_codec_get_entropy(void) { return cpu::entropy(); }

comet_rt_status comet_rt_codec_get_info(const void *in, size_t in_size,
                                        comet_rt_codec_info *info) {
  return cpu::getInfo(in, in_size, info);
}

comet_rt_status comet_rt_codec_decompress(const void *in, size_t in_size,
                                          void *out, size_t out_capacity) {
  return cpu::decompress(in, in_size, out, out_capacity);
}

} // extern "C"
