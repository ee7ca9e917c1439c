//===- CodecFormatTest.cpp - The shared format code against the CPU codec -===//
//
// comet/kernels/CodecFormat.h holds what both codecs compute per element and
// per header: the dtype conversions, the scalar quantizer, the header check
// and the eb range. It compiles for host and device alike; here it runs on
// the host and must agree with the CPU codec's streams: every element's
// decoded value is the dequantized code (or the input bits, for an outlier
// or a raw block), and every header, read from the 128-byte copy the CUDA
// decompress kernel makes, gets the CPU's status.
//
//===----------------------------------------------------------------------===//
#include "comet/kernels/CodecFormat.h"

#include "comet/runtime/codec.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace comet::kernels::format;

namespace {

std::vector<uint8_t> cpuCompress(int dtype, const void *x, uint64_t n,
                                 double eb) {
  std::vector<uint8_t> s(
      comet_rt_codec_max_compressed_size(COMET_RT_CODEC_SZ, dtype, n));
  size_t size = 0;
  EXPECT_EQ(comet_rt_codec_compress_version(1, COMET_RT_CODEC_SZ, dtype, x, &n,
                                            1, eb, s.data(), s.size(), &size),
            COMET_RT_SUCCESS);
  s.resize(size);
  return s;
}

// Element bits of a seeded mix: normal values at a scale that changes per
// 64-element block (so that most blocks quantize rather than go raw), 30 %
// zeros, and a few -0.0, NaN (with payloads), +-Inf, denormals and huge
// values.
std::vector<uint32_t> mixedBits(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 99);
  const double scales[] = {1e-6, 1e-2, 1.0, 30.0, 1e4, 1e9};
  std::vector<uint32_t> bits(n);
  for (size_t i = 0; i < n; ++i) {
    const double scale = scales[(i / 64) % 6];
    int r = pick(rng);
    float f;
    if (r < 30) {
      f = 0.0f;
    } else if (r == 30) {
      f = -0.0f;
    } else if (r == 31) {
      f = std::numeric_limits<float>::infinity() * (i % 2 ? 1 : -1);
    } else if (r == 32) {
      uint32_t nan =
          0x7FC00001u | uint32_t(i % 7) << 12 | uint32_t(i % 2) << 31;
      std::memcpy(&f, &nan, 4);
    } else if (r == 33) {
      f = float(nd(rng) * 1e-40);
    } else if (r == 34) {
      f = float(nd(rng) * 1e37);
    } else {
      f = float(nd(rng) * scale);
    }
    std::memcpy(&bits[i], &f, 4);
  }
  return bits;
}

// Decodes x per element with CodecFormat.h and compares with the CPU's
// decoding of its own stream.
template <typename E>
void checkAgainstCpu(int dtype, const std::vector<uint32_t> &bits, double eb) {
  const size_t n = bits.size();
  std::vector<uint8_t> input(n * E::size);
  for (size_t i = 0; i < n; ++i) {
    if (E::size == 4)
      std::memcpy(&input[4 * i], &bits[i], 4);
    else {
      uint16_t h = uint16_t(E::fromFloat(bitsFloat(bits[i])));
      std::memcpy(&input[2 * i], &h, 2);
    }
  }
  auto s = cpuCompress(dtype, input.data(), n, eb);
  ASSERT_GT(s.size(), kHeaderSize);
  std::vector<uint8_t> y(input.size());
  ASSERT_EQ(comet_rt_codec_decompress(s.data(), s.size(), y.data(), y.size()),
            COMET_RT_SUCCESS);
  QuantParams qp;
  ASSERT_TRUE(quantParams(eb, qp));
  size_t mismatches = 0, quantized = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t xb = 0, yb = 0;
    std::memcpy(&xb, &input[i * E::size], E::size);
    std::memcpy(&yb, &y[i * E::size], E::size);
    const bool rawBlock = (s[kHeaderSize + i / kBlockSize] >> 6) == kRawBlock;
    bool bad;
    int32_t q = quantize<E>(xb, qp, &bad);
    uint32_t want = bad || rawBlock ? xb : dequantize<E>(q, qp);
    quantized += !bad && !rawBlock;
    if (want != yb && ++mismatches <= 5)
      ADD_FAILURE() << "element " << i << " x=0x" << std::hex << xb << " cpu=0x"
                    << yb << " common=0x" << want << std::dec << " eb=" << eb;
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(quantized, n / 10); // the check is not all outliers
}

TEST(CodecFormat, QuantizerMatchesCpuF32) {
  for (double eb : {1e-7, 1e-4, 1e-3, 1e-2, 0.5, 1e3})
    checkAgainstCpu<F32>(COMET_RT_DTYPE_F32, mixedBits(20000, 11), eb);
}
TEST(CodecFormat, QuantizerMatchesCpuF16) {
  for (double eb : {1e-4, 1e-2, 0.5})
    checkAgainstCpu<F16>(COMET_RT_DTYPE_F16, mixedBits(20000, 12), eb);
}
TEST(CodecFormat, QuantizerMatchesCpuBf16) {
  for (double eb : {1e-4, 1e-2, 0.5})
    checkAgainstCpu<BF16>(COMET_RT_DTYPE_BF16, mixedBits(20000, 13), eb);
}

// Every f16 and bf16 pattern through float and back, and float -> 16 bit
// rounding on the values between neighbouring halves: the CPU codec's raw
// path keeps the bits, so a mask stream's 1.0 and the conversions are
// checked against IEEE expectations directly.
TEST(CodecFormat, HalfConversionsRoundTrip) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    float f = F16::toFloat(h);
    bool nan = ((h >> 10) & 31) == 31 && (h & 0x3FF);
    if (nan)
      ASSERT_TRUE(std::isnan(f)) << h;
    else
      ASSERT_EQ(F16::fromFloat(f), h) << h;
    float g = BF16::toFloat(h);
    if (std::isnan(g))
      continue;
    ASSERT_EQ(BF16::fromFloat(g), h) << h;
  }
  // Halfway between 1.0 and the next half (1 + 2^-10): ties to even.
  EXPECT_EQ(F16::fromFloat(1.0f + 0.00048828125f), 0x3C00u);
  EXPECT_EQ(F16::fromFloat(1.0f + 3 * 0.00048828125f), 0x3C02u);
  EXPECT_EQ(F16::fromFloat(65520.0f), 0x7C00u); // rounds to infinity
  EXPECT_EQ(F16::fromFloat(65519.0f), 0x7BFFu);
  EXPECT_EQ(BF16::fromFloat(1.0f + 0.00390625f), 0x3F80u); // tie to even
}

// Headers: the status of parseHeader equals the CPU's for valid streams,
// every truncation and every single-bit flip of the header.
TEST(CodecFormat, HeaderStatusMatchesCpu) {
  std::vector<std::vector<uint8_t>> streams;
  std::vector<float> x(300);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (float &v : x)
    v = std::max(nd(rng), 0.0f);
  uint64_t dims[2] = {3, 100};
  for (int codec : {COMET_RT_CODEC_SZ, COMET_RT_CODEC_MASK, COMET_RT_CODEC_RAW})
    for (int dtype :
         {COMET_RT_DTYPE_F32, COMET_RT_DTYPE_F16, COMET_RT_DTYPE_BF16}) {
      std::vector<uint8_t> s(
          comet_rt_codec_max_compressed_size(codec, dtype, 300));
      size_t size;
      ASSERT_EQ(comet_rt_codec_compress_version(1, codec, dtype, x.data(), dims,
                                                2, 1e-2, s.data(), s.size(),
                                                &size),
                COMET_RT_SUCCESS);
      s.resize(size);
      streams.push_back(s);
    }
  size_t checked = 0;
  auto compare = [&](const std::vector<uint8_t> &t) {
    comet_rt_codec_info info;
    comet_rt_status cpu = comet_rt_codec_get_info(t.data(), t.size(), &info);
    uint8_t hb[kHeaderSize] = {};
    if (!t.empty()) // an empty vector's data() may be null
      std::memcpy(hb, t.data(), std::min<size_t>(t.size(), kHeaderSize));
    Header h;
    comet_rt_status common = parseHeader(hb, t.size(), h);
    ASSERT_EQ(common, cpu) << "size " << t.size();
    if (cpu == COMET_RT_SUCCESS) {
      EXPECT_EQ(h.totalBytes, info.compressed_bytes);
      EXPECT_EQ(h.numSparse, info.num_sparse_blocks);
      EXPECT_EQ(h.numOutliers, info.num_outliers);
      // Re-encoding the parsed header gives the same 128 bytes.
      uint8_t again[kHeaderSize];
      encodeHeader(h, again);
      EXPECT_EQ(std::memcmp(again, t.data(), kHeaderSize), 0);
    }
    ++checked;
  };
  for (const auto &s : streams) {
    compare(s);
    for (size_t len = 0; len < s.size(); len += len < 140 ? 1 : 37)
      compare(std::vector<uint8_t>(s.begin(), s.begin() + len));
    for (size_t bit = 0; bit < kHeaderSize * 8; ++bit) {
      auto t = s;
      t[bit / 8] ^= uint8_t(1u << (bit % 8));
      compare(t);
    }
  }
  EXPECT_GT(checked, streams.size() * kHeaderSize * 8);
}

TEST(CodecFormat, EbRangeMatchesCpu) {
  float x = 1.0f;
  uint64_t n = 1;
  std::vector<uint8_t> s(256);
  for (double eb : {0.0, -1.0, std::nan(""), HUGE_VAL, 1e-300, 1e300,
                    double(FLT_MIN), double(FLT_MIN) * 0.99,
                    double(FLT_MAX) / 2, double(FLT_MAX) / 1.99, 1e-3}) {
    size_t size;
    bool cpu = comet_rt_codec_compress_version(
                   1, COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, &x, &n, 1, eb,
                   s.data(), s.size(), &size) == COMET_RT_SUCCESS;
    QuantParams qp;
    EXPECT_EQ(quantParams(eb, qp), cpu) << eb;
  }
}

} // namespace
