//===- codec-roundtrip-fuzzer.cpp - Fuzz the guarantees of compress -------===//
//
// The first byte picks the codec, dtype, eb and shape (1-D, or rows of 3, 8
// or 29 so that the 2-D predictor runs); the rest is the tensor. The input's
// size modulo 4 picks the entropy setting (auto, off, always, none), so that
// coded chunks and the fixed-width chunks are tried on every input shape.
// Bit 2 of the size gives an sz input with rows one bound per column (dim
// 1): column c at ebs[(sel / 9 + c) % 8]. The stream must decode, and the sz
// guarantees must hold for every element, each at its own bound.
//
//===----------------------------------------------------------------------===//
#include "comet/runtime/codec.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

static float bf16ToFloat(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

static float f16ToFloat(uint16_t h) {
  int exp = (h >> 10) & 31, mant = h & 1023;
  float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exp == 31)
    return mant ? NAN : sign * INFINITY;
  if (exp == 0)
    return sign * std::ldexp(float(mant), -24);
  return sign * std::ldexp(float(mant + 1024), exp - 25);
}

static float loadElem(comet_rt_dtype dt, const uint8_t *p) {
  if (dt == COMET_RT_DTYPE_F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return dt == COMET_RT_DTYPE_F16 ? f16ToFloat(h) : bf16ToFloat(h);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  static const double ebs[] = {1e-7, 1e-4, 1e-2, 0.5, 1.0, 100.0, 1e30, 1e-30};
  uint8_t sel = data[0];
  comet_rt_codec codec = comet_rt_codec(sel % 3);
  comet_rt_dtype dtype = comet_rt_dtype((sel / 3) % 3);
  double eb = ebs[(sel / 9) % 8];
  size_t es = comet_rt_dtype_size(dtype);
  uint64_t n = (size - 1) / es;
  static const uint64_t rowLengths[] = {0, 3, 8, 29};
  const uint64_t w = rowLengths[(sel / 72) % 4];
  uint64_t dims[2] = {n, 1};
  uint32_t rank = 1;
  if (w) {
    n -= n % w;
    dims[0] = n / w;
    dims[1] = w;
    rank = 2;
  }
  if (comet_rt_codec_set_entropy(int(size % 4)) != COMET_RT_SUCCESS)
    abort();
  std::vector<uint8_t> in(data + 1, data + 1 + n * es);
  const bool channels = codec == COMET_RT_CODEC_SZ && w && (size & 4);
  std::vector<double> colEb(w ? w : 1, eb);
  if (channels)
    for (uint64_t c = 0; c < w; ++c)
      colEb[c] = ebs[(sel / 9 + c) % 8];
  std::vector<uint8_t> s(comet_rt_codec_max_compressed_size(codec, dtype, n) +
                         8 * w);
  size_t ssize = 0;
  comet_rt_status st =
      channels
          ? comet_rt_codec_compress_channels(int(size % 4), dtype, in.data(),
                                             dims, rank, colEb.data(), s.data(),
                                             s.size(), &ssize)
          : comet_rt_codec_compress(codec, dtype, in.data(), dims, rank, eb,
                                    s.data(), s.size(), &ssize);
  if (st != COMET_RT_SUCCESS)
    abort();
  std::vector<uint8_t> out(n * es);
  if (comet_rt_codec_decompress(s.data(), ssize, out.data(), out.size()) !=
      COMET_RT_SUCCESS)
    abort();
  for (uint64_t i = 0; i < n; ++i) {
    float x = loadElem(dtype, &in[i * es]), y = loadElem(dtype, &out[i * es]);
    bool ok;
    if (codec == COMET_RT_CODEC_RAW)
      ok = std::memcmp(&in[i * es], &out[i * es], es) == 0;
    else if (codec == COMET_RT_CODEC_MASK)
      ok = y == (x > 0.0f ? 1.0f : 0.0f);
    else if (!std::isfinite(x))
      ok = std::memcmp(&in[i * es], &out[i * es], es) == 0;
    else if (x == 0.0f)
      ok = y == 0.0f;
    else
      ok = std::fabs(double(x) - double(y)) <= (channels ? colEb[i % w] : eb);
    if (!ok)
      abort();
  }
  return 0;
}
