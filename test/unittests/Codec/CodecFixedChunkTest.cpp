//===- CodecFixedChunkTest.cpp - The GPU-friendly chunks on the host ------===//
//
// comet/kernels/CodecFixedChunk.h codes a version 2 chunk with the
// fixed-width block modes only; it is host/device code meant for the CUDA
// encoder. Here a serial host emulation of that encoder (every chunk through
// encodeFixedChunk, the sizes' prefix sum, the table and the header) must
// write, byte for byte, what the CPU encoder writes under
// COMET_RT_CODEC_ENTROPY_NONE, for every dtype, data class, bound and shape;
// and the CPU decoder must read it within the bound. The same header's
// decoder, run on the host in the CUDA decoder's order (decodeFixedStream),
// must decode those streams and the fixed-width test vectors to the CPU
// decoder's bits, refuse every stream with a Rice block or a coded chunk as
// unsupported (naming the first such mode) before writing any output, and
// give the CPU decoder's status on damaged streams.
//
//===----------------------------------------------------------------------===//
#include "CodecTestUtil.h"

#include "comet/kernels/CodecFixedChunk.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace comet::kernels::format;
using namespace comet::test;

namespace {

// The emulated encoder: chunk c coded on its own, then placed at the sum of
// the sizes before it, as a GPU would after a scan over chunk sizes.
template <typename E>
std::vector<uint8_t> emulate(int dtype, const std::vector<uint8_t> &x,
                             const std::vector<uint64_t> &dims, double eb) {
  QuantParams qp;
  EXPECT_TRUE(quantParams(eb, qp));
  Header h;
  h.version = kFormatVersion;
  h.codec = COMET_RT_CODEC_SZ;
  h.dtype = uint32_t(dtype);
  h.rank = uint32_t(dims.size());
  h.n = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    h.dims[i] = dims[i];
    h.n *= dims[i];
  }
  h.eb = eb;
  h.blockSize = kBlockSize;
  h.numBlocks = ceilDiv(h.n, kChunkElems);
  h.numSparse = kChunkBlocks;
  const uint64_t nc = h.numBlocks;
  std::vector<uint8_t> out(kHeaderSize + 4 * nc);
  std::vector<FixedBlock> blocks(kChunkBlocks);
  std::vector<uint8_t> chunk(worstFixedChunkBytes(kChunkElems, E::size));
  for (uint64_t c = 0; c < nc; ++c) {
    const uint32_t len = uint32_t(minU64(kChunkElems, h.n - c * kChunkElems));
    const uint64_t size =
        encodeFixedChunk<E>(x.data() + c * kChunkElems * E::size, len, qp,
                            blocks.data(), chunk.data(), &h.numOutliers);
    EXPECT_LE(size, worstFixedChunkBytes(len, E::size));
    storeU32(out.data() + kHeaderSize + 4 * c, uint32_t(size));
    out.insert(out.end(), chunk.begin(), chunk.begin() + size);
    h.payloadBytes += size;
  }
  encodeHeader(h, out.data());
  return out;
}

std::vector<uint8_t> toBytes(const std::vector<float> &x, int dtype) {
  const uint32_t es = dtypeSize(uint32_t(dtype));
  std::vector<uint8_t> b(x.size() * es);
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t bits = floatBits(x[i]);
    if (dtype == COMET_RT_DTYPE_F16)
      bits = F16::fromFloat(x[i]);
    else if (dtype == COMET_RT_DTYPE_BF16)
      bits = BF16::fromFloat(x[i]);
    std::memcpy(&b[i * es], &bits, es); // little-endian
  }
  return b;
}

// The host emulation of the CUDA decoder into capacity bytes, which start
// as kUntouched so that a refusal can be seen to write nothing.
constexpr uint8_t kUntouched = 0xA5;
struct HostDecoded {
  comet_rt_status st;
  std::vector<uint8_t> out;
  FixedRefusal refusal;
};
HostDecoded hostDecode(const std::vector<uint8_t> &s, size_t capacity) {
  HostDecoded d;
  d.out.assign(capacity, kUntouched);
  d.st =
      decodeFixedStream(s.data(), s.size(), d.out.data(), capacity, &d.refusal);
  return d;
}

struct Seen {
  size_t streams = 0, emptyChunks = 0, outliers = 0;
  size_t modes[4] = {};
};

void checkOne(int dtype, const std::vector<float> &xf,
              const std::vector<uint64_t> &dims, double eb, Seen &seen) {
  const std::vector<uint8_t> x = toBytes(xf, dtype);
  std::vector<uint8_t> want;
  if (dtype == COMET_RT_DTYPE_F32)
    want = emulate<F32>(dtype, x, dims, eb);
  else if (dtype == COMET_RT_DTYPE_F16)
    want = emulate<F16>(dtype, x, dims, eb);
  else
    want = emulate<BF16>(dtype, x, dims, eb);
  ASSERT_EQ(comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_NONE),
            COMET_RT_SUCCESS);
  comet_rt_status st;
  std::vector<uint8_t> got = compressVec(
      COMET_RT_CODEC_SZ, comet_rt_dtype(dtype), x.data(), dims, eb, &st);
  comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_AUTO);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "byte " << i << " of " << got.size();

  // The CPU decoder reads it: outliers bit-exact, the rest within eb.
  std::vector<uint8_t> y(x.size());
  ASSERT_EQ(
      comet_rt_codec_decompress(want.data(), want.size(), y.data(), y.size()),
      COMET_RT_SUCCESS);
  const uint32_t es = dtypeSize(uint32_t(dtype));
  for (size_t i = 0; i < xf.size(); ++i) {
    uint32_t a = 0, b = 0;
    std::memcpy(&a, &x[i * es], es);
    std::memcpy(&b, &y[i * es], es);
    const float fa = dtype == COMET_RT_DTYPE_F32   ? bitsFloat(a)
                     : dtype == COMET_RT_DTYPE_F16 ? F16::toFloat(a)
                                                   : BF16::toFloat(a);
    const float fb = dtype == COMET_RT_DTYPE_F32   ? bitsFloat(b)
                     : dtype == COMET_RT_DTYPE_F16 ? F16::toFloat(b)
                                                   : BF16::toFloat(b);
    if (!std::isfinite(fa))
      ASSERT_EQ(a, b) << i;
    else
      ASSERT_LE(std::fabs(double(fa) - double(fb)), eb) << i;
  }
  // The host emulation of the CUDA decoder gives the CPU decoder's bits.
  HostDecoded hd = hostDecode(want, y.size());
  ASSERT_EQ(hd.st, COMET_RT_SUCCESS);
  ASSERT_TRUE(hd.out == y) << "the GPU decoder's emulation differs";
  ++seen.streams;
  seen.outliers += loadU64(want.data() + 120);
  for (int m : v2Modes(want))
    ++seen.modes[m];
  const uint64_t nc = ceilDiv(xf.size(), kChunkElems);
  for (uint64_t c = 0; c < nc; ++c)
    seen.emptyChunks += loadU32(want.data() + kHeaderSize + 4 * c) == 0;
}

TEST(CodecFixedChunk, HostEmulationWritesTheCpuBytes) {
  Seen seen;
  const std::vector<std::vector<uint64_t>> shapes = {
      {1},    {63},   {64},           {65},          {4095},
      {4096}, {4097}, {3, 4096 + 77}, {2, 3, 28, 28}};
  uint32_t seed = 1;
  for (int dtype :
       {COMET_RT_DTYPE_F32, COMET_RT_DTYPE_F16, COMET_RT_DTYPE_BF16})
    for (Dist dist : {Dist::Uniform, Dist::Normal, Dist::Relu50, Dist::Relu95,
                      Dist::Constant, Dist::Smooth})
      for (double eb : {1e-4, 1e-2, 0.5, 1e3})
        for (const auto &dims : shapes) {
          uint64_t n = 1;
          for (uint64_t d : dims)
            n *= d;
          SCOPED_TRACE("dtype " + std::to_string(dtype) + " dist " +
                       std::to_string(int(dist)) + " eb " + std::to_string(eb) +
                       " n " + std::to_string(n));
          checkOne(dtype, makeData(dist, 1.0, n, (seed & 1) != 0, seed), dims,
                   eb, seen);
          ++seed;
          if (::testing::Test::HasFatalFailure())
            return;
        }
  // Every mode, absent chunks and outliers were reached.
  EXPECT_EQ(seen.streams, 3u * 6 * 4 * shapes.size());
  for (int m = 0; m < 4; ++m)
    EXPECT_GT(seen.modes[m], 0u) << "mode " << m;
  EXPECT_GT(seen.emptyChunks, 0u);
  EXPECT_GT(seen.outliers, 0u);
}

// Huge values and eb = FLT_MIN: outliers everywhere, raw blocks.
TEST(CodecFixedChunk, OutliersAndRawBlocks) {
  Seen seen;
  std::vector<float> x = makeData(Dist::Normal, 1e30, 5000, true, 7);
  for (size_t i = 0; i < x.size(); i += 97)
    x[i] = 1.0f; // a few quantizable values among the outliers
  for (int dtype : {COMET_RT_DTYPE_F32, COMET_RT_DTYPE_BF16})
    for (double eb : {double(FLT_MIN), 1e-3, 1e20})
      checkOne(dtype, x, {uint64_t(x.size())}, eb, seen);
  EXPECT_GT(seen.modes[kV2Raw], 0u);
}

// The fixed-width vectors decode to their recorded bits; raw and mask
// streams are not this decoder's (the CUDA codec's other kernel reads them).
TEST(CodecFixedChunk, HostDecoderReadsTheFixedVectors) {
  const std::string dir = std::string(COMET_CODEC_FIXTURE_DIR) + "/v2-fixed";
  size_t decoded = 0;
  for (const Case &c : readManifest(dir)) {
    SCOPED_TRACE(c.name);
    const auto stream = readFile(dir + "/" + c.stream);
    const auto output = readFile(dir + "/" + c.output);
    HostDecoded d = hostDecode(stream, output.size());
    if (c.codec != "sz") {
      EXPECT_EQ(d.st, COMET_RT_ERROR_UNSUPPORTED);
      continue;
    }
    ASSERT_EQ(d.st, COMET_RT_SUCCESS);
    ASSERT_TRUE(d.out == output) << "decoding differs from the vector";
    ++decoded;
  }
  EXPECT_GE(decoded, 18u);
}

// The CPU's default vectors: a stream with a Rice block or a coded chunk is
// refused, naming the first such mode, with nothing written; the others
// decode to their recorded bits.
TEST(CodecFixedChunk, HostDecoderRefusesEntropyCodedVectors) {
  const std::string dir = COMET_CODEC_FIXTURE_DIR;
  size_t refused = 0, decoded = 0;
  bool modeSeen[8] = {};
  for (const Case &c : readManifest(dir)) {
    if (c.codec != "sz")
      continue;
    SCOPED_TRACE(c.name);
    const auto stream = readFile(dir + "/" + c.stream);
    const auto output = readFile(dir + "/" + c.output);
    int first = 0;
    for (int m : v2Modes(stream))
      if (m >= kV2RiceLorenzo && !first)
        first = m;
    HostDecoded d = hostDecode(stream, output.size());
    if (!first) {
      ASSERT_EQ(d.st, COMET_RT_SUCCESS);
      ASSERT_TRUE(d.out == output);
      ++decoded;
      continue;
    }
    ASSERT_EQ(d.st, COMET_RT_ERROR_UNSUPPORTED);
    EXPECT_EQ(d.refusal.mode, uint32_t(first)) << v2ModeName(first);
    EXPECT_TRUE(std::all_of(d.out.begin(), d.out.end(), [](uint8_t b) {
      return b == kUntouched;
    })) << "a refused stream wrote output";
    modeSeen[first] = true;
    ++refused;
  }
  EXPECT_GE(refused, 8u);
  EXPECT_GE(decoded, 1u);
  EXPECT_TRUE(modeSeen[kV2RiceLorenzo] || modeSeen[kV2RicePlain]);
  EXPECT_TRUE(modeSeen[kV2Coded]);
  EXPECT_STREQ(v2ModeName(kV2Coded), "coded chunk");
}

// Streams with one bound per channel (even those in the fixed-width modes,
// ch_bf16_rank2) are the CPU decoder's alone: refused, mode 0, nothing
// written.
TEST(CodecFixedChunk, HostDecoderRefusesChannelBounds) {
  const std::string dir = std::string(COMET_CODEC_FIXTURE_DIR) + "/channels";
  for (const char *name :
       {"ch_f32_bn", "ch_f32_wide", "ch_bf16_rank2", "ch_f16_post_relu"}) {
    SCOPED_TRACE(name);
    const auto stream = readFile(dir + "/" + name + ".cmtc");
    const auto output = readFile(dir + "/" + name + ".out");
    HostDecoded d = hostDecode(stream, output.size());
    ASSERT_EQ(d.st, COMET_RT_ERROR_UNSUPPORTED);
    EXPECT_EQ(d.refusal.mode, 0u);
    EXPECT_TRUE(std::all_of(d.out.begin(), d.out.end(),
                            [](uint8_t b) { return b == kUntouched; }));
  }
}

// Outliers where the format allows none, or out of order: corrupt to both
// decoders (random damage rarely builds these).
TEST(CodecFixedChunk, HostDecoderRejectsMisplacedOutliers) {
  // Block 0 raw (every element an outlier), block 1 coded with outliers at
  // 70 and 100, block 2 absent.
  std::vector<float> x(192, 0.0f);
  for (size_t i = 0; i < 64; ++i)
    x[i] = 1e30f * float(i + 1);
  for (size_t i = 64; i < 128; ++i)
    x[i] = float(i % 5);
  x[70] = 3e30f;
  x[100] = 4e30f;
  ASSERT_EQ(comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_NONE),
            COMET_RT_SUCCESS);
  comet_rt_status st;
  const std::vector<uint8_t> s = compressVec(
      COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(), {x.size()}, 1e-2, &st);
  comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_AUTO);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  const std::vector<int> modes = v2Modes(s);
  ASSERT_EQ(modes.size(), 2u);
  ASSERT_EQ(modes[0], kV2Raw);
  ASSERT_NE(modes[1], kV2Raw);
  ASSERT_EQ(loadU64(s.data() + 120), 2u);
  const size_t idx = s.size() - 2 * (2 + 4); // the two u16 indices
  ASSERT_EQ(loadU32(s.data() + idx) & 0xFFFF, 70u);
  ASSERT_EQ(hostDecode(s, 4 * x.size()).st, COMET_RT_SUCCESS);
  const std::pair<uint16_t, uint16_t> bad[] = {
      {5, 100},   // into the raw block
      {70, 150},  // into the absent block
      {70, 192},  // past the chunk's length
      {100, 100}, // repeated
      {100, 70},  // decreasing
  };
  for (auto [a, b] : bad) {
    std::vector<uint8_t> t = s;
    t[idx] = uint8_t(a);
    t[idx + 1] = uint8_t(a >> 8);
    t[idx + 2] = uint8_t(b);
    t[idx + 3] = uint8_t(b >> 8);
    std::vector<uint8_t> y(4 * x.size());
    EXPECT_EQ(comet_rt_codec_decompress(t.data(), t.size(), y.data(), y.size()),
              COMET_RT_ERROR_CORRUPT)
        << a << " " << b;
    EXPECT_EQ(hostDecode(t, y.size()).st, COMET_RT_ERROR_CORRUPT)
        << a << " " << b;
  }
}

// Damaged fixed-width streams: the emulation gives the CPU decoder's
// status, or refuses where the damage made a Rice descriptor or a coded
// chunk; where both decode, the same bits.
TEST(CodecFixedChunk, HostDecoderAgreesOnDamagedStreams) {
  std::mt19937 rng(99);
  size_t agreedOk = 0, agreedErr = 0, refused = 0;
  uint32_t seed = 500;
  for (int dtype : {COMET_RT_DTYPE_F32, COMET_RT_DTYPE_F16})
    for (Dist dist : {Dist::Normal, Dist::Relu95, Dist::Smooth}) {
      const std::vector<float> xf =
          makeData(dist, 1.0, 2 * 4096 + 300, true, seed++);
      const std::vector<uint8_t> x = toBytes(xf, dtype);
      const std::vector<uint64_t> dims = {2, 4096 + 150};
      ASSERT_EQ(comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_NONE),
                COMET_RT_SUCCESS);
      comet_rt_status st;
      const std::vector<uint8_t> s = compressVec(
          COMET_RT_CODEC_SZ, comet_rt_dtype(dtype), x.data(), dims, 1e-2, &st);
      comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_AUTO);
      ASSERT_EQ(st, COMET_RT_SUCCESS);
      for (int trial = 0; trial < 400; ++trial) {
        std::vector<uint8_t> t = s;
        // One to three bytes past the header changed, or a cut.
        if (trial % 10 == 9) {
          t.resize(rng() % t.size());
        } else {
          for (uint32_t k = 0, m = 1 + rng() % 3; k < m; ++k)
            t[kHeaderSize + rng() % (t.size() - kHeaderSize)] ^=
                uint8_t(1 + rng() % 255);
        }
        std::vector<uint8_t> y(x.size(), kUntouched);
        const comet_rt_status cpu =
            comet_rt_codec_decompress(t.data(), t.size(), y.data(), y.size());
        HostDecoded d = hostDecode(t, x.size());
        SCOPED_TRACE("trial " + std::to_string(trial));
        if (d.st == COMET_RT_ERROR_UNSUPPORTED &&
            cpu != COMET_RT_ERROR_UNSUPPORTED) {
          ASSERT_NE(d.refusal.mode, 0u);
          ++refused;
          continue;
        }
        ASSERT_EQ(d.st, cpu);
        if (cpu == COMET_RT_SUCCESS) {
          ASSERT_TRUE(d.out == y) << "both decode, to different bits";
          ++agreedOk;
        } else {
          ++agreedErr;
        }
      }
    }
  EXPECT_GT(agreedOk, 600u);
  EXPECT_GT(agreedErr, 500u);
  EXPECT_GT(refused, 30u);
}

} // namespace
