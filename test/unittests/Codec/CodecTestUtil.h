//===- CodecTestUtil.h - Helpers for the codec tests ------------*- C++ -*-===//
#ifndef COMET_TEST_CODEC_TESTUTIL_H
#define COMET_TEST_CODEC_TESTUTIL_H

#include "comet/runtime/codec.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace comet::test {

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Smooth: a random walk, so that neighbours predict each other (the
// Lorenzo modes).
enum class Dist { Uniform, Normal, Relu50, Relu95, Constant, Smooth };

// Seeded data of magnitude `scale`; specials mixes NaN (one with a payload),
// +-Inf, -0.0, FLT_MAX, FLT_MIN and denormals in at random places. The CPU
// and the CUDA codec tests share it, so both see the same inputs.
inline std::vector<float> makeData(Dist dist, double scale, size_t n,
                                   bool specials, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  double zeroFrac = dist == Dist::Relu50 ? 0.5 : 0.95;
  std::vector<float> x(n);
  double walk = 0;
  for (size_t i = 0; i < n; ++i) {
    double v = 0;
    switch (dist) {
    case Dist::Smooth:
      walk = 0.99 * walk + normal(rng) * 0.05;
      v = walk * scale;
      break;
    case Dist::Uniform:
      v = uni(rng) * scale;
      break;
    case Dist::Normal:
      v = normal(rng) * scale * 0.3;
      break;
    case Dist::Relu50:
    case Dist::Relu95:
      v = unit(rng) < zeroFrac ? 0.0 : std::fabs(normal(rng)) * scale * 0.3;
      break;
    case Dist::Constant:
      v = 0.7 * scale;
      break;
    }
    x[i] = float(std::clamp(v, -double(FLT_MAX), double(FLT_MAX)));
  }
  if (specials && n) {
    const float sp[] = {std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(),
                        -0.0f,
                        FLT_MAX,
                        -FLT_MAX,
                        FLT_MIN,
                        std::numeric_limits<float>::denorm_min(),
                        0.0f};
    std::uniform_int_distribution<size_t> pos(0, n - 1);
    size_t count = std::max<size_t>(1, n / 50);
    for (size_t k = 0; k < count; ++k)
      x[pos(rng)] = sp[k % (sizeof(sp) / sizeof(sp[0]))];
    // A NaN with a payload and sign must survive bit-exactly too.
    uint32_t payloadNaN = 0xFFC12345u;
    std::memcpy(&x[pos(rng)], &payloadNaN, 4);
  }
  return x;
}

// Compresses and returns the stream; status in *st.
inline std::vector<uint8_t>
compressVec(comet_rt_codec codec, comet_rt_dtype dtype, const void *data,
            std::vector<uint64_t> dims, double eb, comet_rt_status *st,
            int version = COMET_RT_CODEC_FORMAT_VERSION) {
  uint64_t n = 1;
  for (uint64_t d : dims)
    n *= d;
  std::vector<uint8_t> out(comet_rt_codec_max_compressed_size(codec, dtype, n));
  size_t size = 0;
  *st = comet_rt_codec_compress_version(version, codec, dtype, data,
                                        dims.data(), uint32_t(dims.size()), eb,
                                        out.data(), out.size(), &size);
  out.resize(*st == COMET_RT_SUCCESS ? size : 0);
  return out;
}

// Attention-like softmax rows: `maps` maps of seq x seq, each row the
// softmax of small seeded logits (an untrained model's attention: values
// near 1 / seq, near-constant codes at a coarse bound).
inline std::vector<float> makeAttention(size_t maps, size_t seq,
                                        uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.1);
  std::vector<float> x(maps * seq * seq);
  std::vector<double> row(seq);
  for (size_t r = 0; r < maps * seq; ++r) {
    double sum = 0;
    for (double &v : row)
      sum += v = std::exp(normal(rng));
    for (size_t j = 0; j < seq; ++j)
      x[r * seq + j] = float(row[j] / sum);
  }
  return x;
}

// The modes of a version 2 sz stream's chunks: per present block its mode,
// or one 7 for a coded chunk; empty for anything else.
inline std::vector<int> v2Modes(const std::vector<uint8_t> &s) {
  std::vector<int> modes;
  comet_rt_codec_info info;
  if (comet_rt_codec_get_info(s.data(), s.size(), &info) != COMET_RT_SUCCESS ||
      info.version != 2 || info.codec != COMET_RT_CODEC_SZ)
    return modes;
  uint64_t chunks = (info.num_elements + 4095) / 4096, off = 128 + 4 * chunks;
  for (uint64_t c = 0; c < chunks; ++c) {
    uint32_t size;
    std::memcpy(&size, &s[128 + 4 * c], 4);
    if (size) {
      uint64_t bitmap;
      uint16_t outliers;
      std::memcpy(&bitmap, &s[off], 8);
      std::memcpy(&outliers, &s[off + 8], 2);
      // A coded chunk has one descriptor, mode 7.
      int nd = outliers & 0x8000 ? 1 : __builtin_popcountll(bitmap);
      for (int i = 0; i < nd; ++i)
        modes.push_back(s[off + 10 + i] >> 5);
    }
    off += size;
  }
  return modes;
}

// The coder of each coded chunk (mode 7) of a version 2 sz stream, in
// order: 0 the range coder, 1 Rice with per-context k.
inline std::vector<int> v2Coders(const std::vector<uint8_t> &s) {
  std::vector<int> coders;
  comet_rt_codec_info info;
  if (comet_rt_codec_get_info(s.data(), s.size(), &info) != COMET_RT_SUCCESS ||
      info.version != 2 || info.codec != COMET_RT_CODEC_SZ)
    return coders;
  uint64_t chunks = (info.num_elements + 4095) / 4096, off = 128 + 4 * chunks;
  for (uint64_t c = 0; c < chunks; ++c) {
    uint32_t size;
    std::memcpy(&size, &s[128 + 4 * c], 4);
    uint16_t outliers = 0;
    if (size)
      std::memcpy(&outliers, &s[off + 8], 2);
    if (size && (outliers & 0x8000))
      coders.push_back((s[off + 10] >> 2) & 7);
    off += size;
  }
  return coders;
}

// The test vectors of test/fixtures/codec (a folder's manifest.txt: name,
// codec, dtype, eb, dims, input, stream, decoding, optional entropy).
inline std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot open " << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

struct Case {
  std::string name, codec, dtype;
  double eb = 0;
  std::vector<uint64_t> dims;
  std::string input, stream, output;
  int entropy = COMET_RT_CODEC_ENTROPY_AUTO;
};

// A manifest's entropy word (auto, off, always or none).
inline int entropyOf(const std::string &word) {
  EXPECT_TRUE(word == "auto" || word == "off" || word == "always" ||
              word == "none")
      << word;
  return word == "off"      ? COMET_RT_CODEC_ENTROPY_OFF
         : word == "always" ? COMET_RT_CODEC_ENTROPY_ALWAYS
         : word == "none"   ? COMET_RT_CODEC_ENTROPY_NONE
                            : COMET_RT_CODEC_ENTROPY_AUTO;
}

// A manifest's dims ("2x3x40").
inline std::vector<uint64_t> dimsOf(const std::string &text) {
  std::vector<uint64_t> dims;
  std::istringstream ds(text);
  for (std::string d; std::getline(ds, d, 'x');)
    dims.push_back(std::stoull(d));
  return dims;
}

// Runs check() at each encoder instruction set the CPU has (AVX2 only where
// present: CodecIsa fails on CI when it is missing) and at 1 and 4 threads,
// since the bytes must not depend on either; stops at a fatal failure and
// restores the defaults.
template <typename F> void atEveryIsaAndThreadCount(F &&check) {
  const bool avx2 =
      comet_rt_codec_set_isa(COMET_RT_CODEC_ISA_AVX2) == COMET_RT_SUCCESS;
  for (int isa : {COMET_RT_CODEC_ISA_BASELINE, COMET_RT_CODEC_ISA_AVX2}) {
    if (isa == COMET_RT_CODEC_ISA_AVX2 && !avx2)
      continue;
    ASSERT_EQ(comet_rt_codec_set_isa(isa), COMET_RT_SUCCESS);
    for (int threads : {1, 4}) {
      SCOPED_TRACE(::testing::Message()
                   << "isa " << isa << ", " << threads << " threads");
      comet_rt_codec_set_num_threads(threads);
      check();
      if (::testing::Test::HasFatalFailure())
        break;
    }
  }
  comet_rt_codec_set_num_threads(0);
  comet_rt_codec_set_isa(COMET_RT_CODEC_ISA_AUTO);
}

inline std::vector<Case> readManifest(const std::string &dir) {
  std::ifstream f(dir + "/manifest.txt");
  EXPECT_TRUE(f.good());
  std::vector<Case> cases;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream ls(line);
    Case c;
    std::string dims;
    ls >> c.name >> c.codec >> c.dtype >> c.eb >> dims >> c.input >> c.stream >>
        c.output;
    EXPECT_FALSE(ls.fail()) << line;
    std::string entropy;
    if (ls >> entropy)
      c.entropy = entropyOf(entropy);
    c.dims = dimsOf(dims);
    cases.push_back(c);
  }
  return cases;
}

inline comet_rt_codec codecOf(const std::string &s) {
  return s == "sz"     ? COMET_RT_CODEC_SZ
         : s == "mask" ? COMET_RT_CODEC_MASK
                       : COMET_RT_CODEC_RAW;
}
inline comet_rt_dtype dtypeOf(const std::string &s) {
  return s == "f16"    ? COMET_RT_DTYPE_F16
         : s == "bf16" ? COMET_RT_DTYPE_BF16
                       : COMET_RT_DTYPE_F32;
}

} // namespace comet::test

#endif
