//===- CodecFixedChunkTest.cpp - The GPU-friendly chunks on the host ------===//
//
// comet/kernels/CodecFixedChunk.h codes a version 2 chunk with the
// fixed-width block modes only; it is host/device code meant for the CUDA
// encoder. Here a serial host emulation of that encoder (every chunk through
// encodeFixedChunk, the sizes' prefix sum, the table and the header) must
// write, byte for byte, what the CPU encoder writes under
// COMET_RT_CODEC_ENTROPY_NONE, for every dtype, data class, bound and shape;
// and the CPU decoder must read it within the bound.
//
//===----------------------------------------------------------------------===//
#include "CodecTestUtil.h"

#include "comet/kernels/CodecFixedChunk.h"

#include "gtest/gtest.h"

#include <cfloat>
#include <cmath>
#include <cstring>
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

} // namespace
