//===- CodecCudaTest.cpp - The CUDA codec against the CPU codec -----------===//
//
// Needs a CUDA device: without one, main() exits with 77 before any test
// runs and ctest reports the test as skipped. With one, the GPU codec must
//  - write the CPU codec's bytes for the same input, dtype and eb (so either
//    side decodes the other's streams), and the test vectors of
//    test/fixtures/codec/v1 byte for byte; as version 2, the CPU's bytes
//    under entropy none and the vectors of test/fixtures/codec/v2-fixed;
//  - decode the version 2 vectors of test/fixtures/codec (every mode);
//  - decode every stream, CPU-made or its own, to the CPU's bits;
//  - keep the guarantees of docs/codec-format.md (bound, zeros, NaN/Inf);
//  - be deterministic;
//  - give the CPU decoder's status for truncated, bit-flipped and random
//    streams, without writing past the output capacity.
//
//===----------------------------------------------------------------------===//
#include "CodecTestUtil.h"
#include "comet/kernels/CodecFixedChunk.h"
#include "comet/runtime/codec.h"
#include "comet/runtime/codec_cuda.h"

#include <cuda_runtime.h>

#include "gtest/gtest.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

using comet::test::bitsOf;
using comet::test::Dist;
using comet::test::makeData;
using comet::test::readFile;
using comet::test::readManifest;
namespace format = comet::kernels::format;

using Bytes = std::vector<uint8_t>;
constexpr size_t kGuard = 256;
constexpr uint8_t kGuardByte = 0xA5;

size_t elemSize(int dtype) { return comet_rt_dtype_size(dtype); }

uint64_t product(const std::vector<uint64_t> &dims) {
  uint64_t n = 1;
  for (uint64_t d : dims)
    n *= d;
  return n;
}

// A device allocation, freed on scope exit.
struct DevBuf {
  void *p = nullptr;
  explicit DevBuf(size_t bytes) {
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 1)), cudaSuccess);
  }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
  template <typename T> T *as() const { return static_cast<T *>(p); }
};

Bytes download(const void *d, size_t bytes) {
  Bytes h(bytes);
  if (bytes)
    EXPECT_EQ(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost),
              cudaSuccess);
  return h;
}

void upload(void *d, const void *h, size_t bytes) {
  if (bytes)
    EXPECT_EQ(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

Bytes cpuCompress(int codec, int dtype, const void *x,
                  std::vector<uint64_t> dims, double eb, comet_rt_status *st) {
  Bytes out(comet_rt_codec_max_compressed_size(codec, dtype, product(dims)));
  size_t size = 0;
  *st = comet_rt_codec_compress_version(1, codec, dtype, x, dims.data(),
                                        uint32_t(dims.size()), eb, out.data(),
                                        out.size(), &size);
  out.resize(*st == COMET_RT_SUCCESS ? size : 0);
  return out;
}

Bytes gpuCompress(int codec, int dtype, const void *x,
                  std::vector<uint64_t> dims, double eb, comet_rt_status *st,
                  cudaStream_t stream = nullptr, int version = 1) {
  const uint64_t n = product(dims);
  DevBuf dx(n * elemSize(dtype));
  upload(dx.p, x, n * elemSize(dtype));
  const size_t cap = comet_rt_codec_cuda_max_compressed_size(codec, dtype, n);
  DevBuf dout(cap);
  size_t size = 0;
  *st = comet_rt_codec_cuda_compress_version(version, codec, dtype, dx.p,
                                             dims.data(), uint32_t(dims.size()),
                                             eb, dout.p, cap, &size, stream);
  if (*st != COMET_RT_SUCCESS)
    return {};
  EXPECT_LE(size, cap);
  return download(dout.p, size);
}

struct Decoded {
  comet_rt_status st;
  Bytes out;    // capacity bytes
  int mode = 0; // the GPU's comet_rt_codec_cuda_last_unsupported_mode
};

Decoded cpuDecompress(const Bytes &s, size_t capacity) {
  Decoded d;
  d.out.assign(capacity, 0);
  d.st = comet_rt_codec_decompress(s.data(), s.size(), d.out.data(), capacity);
  return d;
}

// Decodes on the device into capacity bytes followed by a guard zone, and
// checks that the guard is untouched.
Decoded gpuDecompress(const Bytes &s, size_t capacity) {
  DevBuf din(s.size());
  upload(din.p, s.data(), s.size());
  DevBuf dout(capacity + kGuard);
  EXPECT_EQ(cudaMemset(dout.p, kGuardByte, capacity + kGuard), cudaSuccess);
  Decoded d;
  d.st = comet_rt_codec_cuda_decompress(din.p, s.size(), dout.p, capacity,
                                        nullptr);
  d.mode = comet_rt_codec_cuda_last_unsupported_mode();
  Bytes all = download(dout.p, capacity + kGuard);
  for (size_t i = capacity; i < all.size(); ++i)
    if (all[i] != kGuardByte) {
      ADD_FAILURE() << "GPU decoder wrote past its capacity at +"
                    << i - capacity;
      break;
    }
  all.resize(capacity);
  d.out = std::move(all);
  return d;
}

//===----------------------------------------------------------------------===//
// Data.
//===----------------------------------------------------------------------===//

// The guarantees of docs/codec-format.md on a decoding y of x.
size_t guaranteeViolations(const std::vector<float> &x, const Bytes &yBytes,
                           double eb) {
  size_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    float y;
    std::memcpy(&y, &yBytes[4 * i], 4);
    bool ok;
    if (!std::isfinite(x[i]))
      ok = bitsOf(x[i]) == bitsOf(y);
    else if (bitsOf(x[i]) == 0u)
      ok = bitsOf(y) == 0u;
    else if (x[i] == 0.0f)
      ok = y == 0.0f;
    else
      ok = std::isfinite(y) && std::fabs(double(x[i]) - double(y)) <= eb;
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << "element " << i << ": x=" << x[i] << " y=" << y
                    << " eb=" << eb;
  }
  return bad;
}

// Compresses on both sides, checks the bytes agree, decodes each stream on
// the other side, and checks the decodings agree bit for bit.
void crossCheck(int codec, int dtype, const void *x, std::vector<uint64_t> dims,
                double eb, Bytes *decoded = nullptr) {
  comet_rt_status st;
  Bytes cpu = cpuCompress(codec, dtype, x, dims, eb, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  Bytes gpu = gpuCompress(codec, dtype, x, dims, eb, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  ASSERT_EQ(gpu.size(), cpu.size());
  ASSERT_TRUE(gpu == cpu) << "GPU and CPU streams differ";
  const size_t outBytes = product(dims) * elemSize(dtype);
  Decoded onCpu = cpuDecompress(gpu, outBytes); // CPU decodes the GPU stream
  Decoded onGpu = gpuDecompress(cpu, outBytes); // GPU decodes the CPU stream
  ASSERT_EQ(onCpu.st, COMET_RT_SUCCESS);
  ASSERT_EQ(onGpu.st, COMET_RT_SUCCESS);
  ASSERT_TRUE(onCpu.out == onGpu.out) << "decodings differ";
  // Deterministic: the same bytes again.
  Bytes again = gpuCompress(codec, dtype, x, dims, eb, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  ASSERT_TRUE(again == gpu);
  if (decoded)
    *decoded = std::move(onGpu.out);
}

//===----------------------------------------------------------------------===//
// Tests.
//===----------------------------------------------------------------------===//

// The vectors of one folder of test/fixtures/codec: with compress, the GPU
// encoder (format version) must write each stream byte for byte; the GPU
// decoder must decode each to the vector's bits.
void checkFixtures(const std::string &dir, int version, bool compress,
                   size_t minCases) {
  size_t cases = 0;
  for (const comet::test::Case &c : readManifest(dir)) {
    SCOPED_TRACE(dir + "/" + c.name);
    Bytes input = readFile(dir + "/" + c.input);
    Bytes expected = readFile(dir + "/" + c.stream);
    Bytes output = readFile(dir + "/" + c.output);
    if (compress) {
      comet_rt_status st;
      Bytes s = gpuCompress(comet::test::codecOf(c.codec),
                            comet::test::dtypeOf(c.dtype), input.data(), c.dims,
                            c.eb, &st, nullptr, version);
      ASSERT_EQ(st, COMET_RT_SUCCESS);
      ASSERT_TRUE(s == expected) << "GPU stream differs from the test vector";
    }
    Decoded d = gpuDecompress(expected, output.size());
    ASSERT_EQ(d.st, COMET_RT_SUCCESS);
    ASSERT_TRUE(d.out == output) << "GPU decoding differs from the vector";
    ++cases;
  }
  EXPECT_GE(cases, minCases);
}

// What the host emulation of the GPU decoder (format::decodeFixedStream)
// says of t: its status and, for a refusal, the mode it names.
std::pair<comet_rt_status, int> hostEmulation(const Bytes &t, size_t capacity) {
  Bytes out(capacity);
  format::FixedRefusal r;
  comet_rt_status st =
      format::decodeFixedStream(t.data(), t.size(), out.data(), capacity, &r);
  return {st, int(r.mode)};
}

TEST(CodecCudaFixtures, CompressAndDecompressByteExact) {
  checkFixtures(std::string(COMET_CODEC_FIXTURE_DIR) + "/v1", 1, true, 8);
}

// Version 2 in the fixed-width modes: the GPU's version 2 encoder writes
// these vectors (the CPU's under entropy none) and its decoder reads them.
TEST(CodecCudaFixtures, Version2FixedByteExact) {
  checkFixtures(std::string(COMET_CODEC_FIXTURE_DIR) + "/v2-fixed", 2, true,
                16);
}

// The CPU's default version 2 vectors: those in the fixed-width modes decode
// to their bits; one with a Rice block or a coded chunk is refused as
// unsupported, naming the mode the host emulation names, with nothing
// written (the guard pattern stays).
TEST(CodecCudaFixtures, Version2StreamsDecodeOrAreRefused) {
  const std::string dir = COMET_CODEC_FIXTURE_DIR;
  size_t decoded = 0, refused = 0;
  for (const comet::test::Case &c : readManifest(dir)) {
    SCOPED_TRACE(c.name);
    Bytes stream = readFile(dir + "/" + c.stream);
    Bytes output = readFile(dir + "/" + c.output);
    Decoded d = gpuDecompress(stream, output.size());
    auto [hostSt, hostMode] = hostEmulation(stream, output.size());
    if (c.codec == "sz" && hostSt == COMET_RT_ERROR_UNSUPPORTED) {
      ASSERT_EQ(d.st, COMET_RT_ERROR_UNSUPPORTED);
      EXPECT_EQ(d.mode, hostMode) << format::v2ModeName(uint32_t(hostMode));
      EXPECT_TRUE(std::all_of(d.out.begin(), d.out.end(), [](uint8_t b) {
        return b == kGuardByte;
      })) << "a refused stream wrote output";
      ++refused;
      continue;
    }
    ASSERT_EQ(d.st, COMET_RT_SUCCESS);
    ASSERT_EQ(d.mode, 0);
    ASSERT_TRUE(d.out == output) << "GPU decoding differs from the vector";
    ++decoded;
  }
  EXPECT_GE(refused, 8u);
  EXPECT_GE(decoded, 5u);
}

// Streams with one bound per channel are the CPU codec's: the GPU refuses
// them, as its host emulation does, with nothing written.
TEST(CodecCudaFixtures, ChannelBoundStreamsAreRefused) {
  const std::string dir = std::string(COMET_CODEC_FIXTURE_DIR) + "/channels";
  size_t refused = 0;
  for (const char *name :
       {"ch_f32_bn", "ch_f32_wide", "ch_bf16_rank2", "ch_f16_post_relu"}) {
    SCOPED_TRACE(name);
    Bytes stream = readFile(dir + "/" + name + ".cmtc");
    Bytes output = readFile(dir + "/" + name + ".out");
    Decoded d = gpuDecompress(stream, output.size());
    ASSERT_EQ(hostEmulation(stream, output.size()).first,
              COMET_RT_ERROR_UNSUPPORTED);
    ASSERT_EQ(d.st, COMET_RT_ERROR_UNSUPPORTED);
    EXPECT_TRUE(std::all_of(d.out.begin(), d.out.end(),
                            [](uint8_t b) { return b == kGuardByte; }));
    ++refused;
  }
  EXPECT_EQ(refused, 4u);
}

// The GPU decodes the CPU's streams under entropy none, and its own version
// 2 streams, to the CPU decoder's bits: every dtype and data class, partial
// and many chunks.
TEST(CodecCuda, Version2DecodesCpuAndGpuStreams) {
  ASSERT_EQ(comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_NONE),
            COMET_RT_SUCCESS);
  const std::vector<std::vector<uint64_t>> shapes = {
      {1}, {4095}, {3, 4096 + 33}, {70001}, {64, 16411}};
  uint32_t seed = 900;
  for (int dtype :
       {COMET_RT_DTYPE_F32, COMET_RT_DTYPE_F16, COMET_RT_DTYPE_BF16})
    for (Dist dist : {Dist::Uniform, Dist::Normal, Dist::Relu50, Dist::Relu95,
                      Dist::Constant, Dist::Smooth})
      for (double eb : {1e-4, 1e-2, 1e3})
        for (const auto &dims : shapes) {
          const uint64_t n = product(dims);
          std::vector<float> xf = makeData(dist, 1.0, n, true, seed++);
          Bytes x(n * elemSize(dtype));
          for (uint64_t i = 0; i < n; ++i) {
            uint32_t bits = bitsOf(xf[i]);
            if (dtype == COMET_RT_DTYPE_F16)
              bits = format::F16::fromFloat(xf[i]);
            else if (dtype == COMET_RT_DTYPE_BF16)
              bits = format::BF16::fromFloat(xf[i]);
            std::memcpy(&x[i * elemSize(dtype)], &bits, elemSize(dtype));
          }
          SCOPED_TRACE("dtype " + std::to_string(dtype) + " dist " +
                       std::to_string(int(dist)) + " eb " + std::to_string(eb) +
                       " n " + std::to_string(n));
          Bytes cpu(
              comet_rt_codec_max_compressed_size(COMET_RT_CODEC_SZ, dtype, n));
          size_t size = 0;
          ASSERT_EQ(comet_rt_codec_compress_version(
                        2, COMET_RT_CODEC_SZ, dtype, x.data(), dims.data(),
                        uint32_t(dims.size()), eb, cpu.data(), cpu.size(),
                        &size),
                    COMET_RT_SUCCESS);
          cpu.resize(size);
          Decoded want = cpuDecompress(cpu, x.size());
          ASSERT_EQ(want.st, COMET_RT_SUCCESS);
          Decoded got = gpuDecompress(cpu, x.size());
          ASSERT_EQ(got.st, COMET_RT_SUCCESS);
          ASSERT_TRUE(got.out == want.out) << "GPU decodes a CPU stream wrong";
          comet_rt_status st;
          Bytes gpu = gpuCompress(COMET_RT_CODEC_SZ, dtype, x.data(), dims, eb,
                                  &st, nullptr, 2);
          ASSERT_EQ(st, COMET_RT_SUCCESS);
          ASSERT_TRUE(gpu == cpu);
          got = gpuDecompress(gpu, x.size());
          ASSERT_EQ(got.st, COMET_RT_SUCCESS);
          ASSERT_TRUE(got.out == want.out) << "GPU decodes its stream wrong";
        }
  comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_AUTO);
}

// The GPU's version 2 streams are the CPU's under entropy none, for every
// distribution, dtype and a partial last chunk.
TEST(CodecCuda, Version2MatchesCpuEntropyNone) {
  ASSERT_EQ(comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_NONE),
            COMET_RT_SUCCESS);
  uint32_t seed = 40;
  for (Dist dist : {Dist::Uniform, Dist::Normal, Dist::Relu50, Dist::Relu95,
                    Dist::Constant, Dist::Smooth})
    for (double eb : {1e-4, 1e-2, 1e3}) {
      std::vector<float> x = makeData(dist, 1.0, 3 * 4096 + 100, true, seed++);
      std::vector<uint64_t> dims = {3, 4096 + 33};
      comet_rt_status st;
      Bytes want(comet_rt_codec_max_compressed_size(
          COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.size()));
      size_t size = 0;
      ASSERT_EQ(comet_rt_codec_compress_version(
                    2, COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                    dims.data(), 2, eb, want.data(), want.size(), &size),
                COMET_RT_SUCCESS);
      want.resize(size);
      Bytes got = gpuCompress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                              dims, eb, &st, nullptr, 2);
      ASSERT_EQ(st, COMET_RT_SUCCESS);
      ASSERT_TRUE(got == want) << "dist " << int(dist) << " eb " << eb;
    }
  comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_AUTO);
}

class CodecCudaSz : public ::testing::TestWithParam<Dist> {};

TEST_P(CodecCudaSz, MatchesCpuAndKeepsGuarantees) {
  const Dist dist = GetParam();
  const double scales[] = {1e-40, 1e-6, 1.0, 1e6, 1e38};
  const double ebs[] = {1e-7, 1e-3, 1e-1, 1e2};
  const size_t lengths[] = {0, 1, 7, 63, 64, 65, 1001, 70001};
  uint32_t seed = 100 * uint32_t(dist);
  for (double scale : scales)
    for (bool specials : {false, true})
      for (size_t n : lengths) {
        std::vector<float> x = makeData(dist, scale, n, specials, ++seed);
        for (double eb : ebs) {
          SCOPED_TRACE("scale=" + std::to_string(scale) +
                       " n=" + std::to_string(n) + " eb=" + std::to_string(eb) +
                       (specials ? " specials" : ""));
          Bytes y;
          crossCheck(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(), {n}, eb,
                     &y);
          if (HasFatalFailure())
            return;
          ASSERT_EQ(guaranteeViolations(x, y, eb), 0u);
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Distributions, CodecCudaSz,
                         ::testing::Values(Dist::Uniform, Dist::Normal,
                                           Dist::Relu50, Dist::Relu95,
                                           Dist::Constant));

TEST(CodecCuda, SixteenBitDtypesMatchCpu) {
  std::vector<float> src = makeData(Dist::Relu50, 40.0, 20011, true, 9);
  std::vector<uint16_t> bf(src.size()), h(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    bf[i] = uint16_t(bitsOf(src[i]) >> 16);
    // Some bit pattern per element that is a valid f16 of varied kinds.
    h[i] = uint16_t(bitsOf(src[i]) >> 13) ^ uint16_t(i * 2654435761u >> 20);
  }
  for (double eb : {1e-4, 1e-2, 0.5})
    for (auto [dtype, data] :
         {std::pair<int, const void *>{COMET_RT_DTYPE_BF16, bf.data()},
          std::pair<int, const void *>{COMET_RT_DTYPE_F16, h.data()}}) {
      SCOPED_TRACE("dtype " + std::to_string(dtype) + " eb " +
                   std::to_string(eb));
      crossCheck(COMET_RT_CODEC_SZ, dtype, data, {src.size()}, eb);
      crossCheck(COMET_RT_CODEC_SZ, dtype, data, {7, 13}, eb);
    }
}

TEST(CodecCuda, MaskAndRawMatchCpu) {
  std::vector<float> x = makeData(Dist::Normal, 1.0, 100003, true, 4);
  std::vector<uint16_t> x16(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    x16[i] = uint16_t(bitsOf(x[i]) >> 16);
  for (uint64_t n :
       {uint64_t(0), uint64_t(1), uint64_t(9), uint64_t(33), uint64_t(100003)})
    for (int codec : {COMET_RT_CODEC_MASK, COMET_RT_CODEC_RAW}) {
      SCOPED_TRACE("n " + std::to_string(n) + " codec " +
                   std::to_string(codec));
      Bytes y;
      crossCheck(codec, COMET_RT_DTYPE_F32, x.data(), {n}, 0.0, &y);
      crossCheck(codec, COMET_RT_DTYPE_BF16, x16.data(), {n}, 0.0);
      crossCheck(codec, COMET_RT_DTYPE_F16, x16.data(), {n}, 0.0);
      for (uint64_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, &y[4 * i], 4);
        if (codec == COMET_RT_CODEC_MASK)
          ASSERT_EQ(bitsOf(v), bitsOf(x[i] > 0.0f ? 1.0f : 0.0f)) << i;
        else
          ASSERT_EQ(bitsOf(v), bitsOf(x[i])) << i;
      }
    }
}

TEST(CodecCuda, ZerosCostOneByteAndStayZero) {
  std::vector<float> zeros(64 * 1000, 0.0f);
  comet_rt_status st;
  Bytes s = gpuCompress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, zeros.data(),
                        {zeros.size()}, 1e-3, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  EXPECT_EQ(s.size(), 128u + 1000u);
  Decoded d = gpuDecompress(s, zeros.size() * 4);
  ASSERT_EQ(d.st, COMET_RT_SUCCESS);
  EXPECT_TRUE(std::all_of(d.out.begin(), d.out.end(),
                          [](uint8_t b) { return b == 0; }));
}

// Many CTAs, many chunks per CTA and a partial last block: the grid-wide
// scan is exercised. 256 MiB of post-ReLU data like the CPU's large test.
TEST(CodecCuda, LargeMatchesCpu) {
  for (size_t n : {size_t(64) * 100003 + 17, size_t(64) << 20}) {
    std::vector<float> x(n);
    std::mt19937 rng(2024);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (size_t i = 0; i < n; ++i) {
      float r = u(rng);
      x[i] = r < 0.6f ? 0.0f : (r - 0.6f) * 10.0f;
    }
    x[12345] = std::numeric_limits<float>::quiet_NaN();
    x[n - 1] = -std::numeric_limits<float>::infinity();
    x[n / 2] = 1e30f; // an outlier in a dense or sparse block
    SCOPED_TRACE("n " + std::to_string(n));
    Bytes y;
    crossCheck(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(), {n}, 1e-3, &y);
    if (HasFatalFailure())
      return;
    ASSERT_EQ(guaranteeViolations(x, y, 1e-3), 0u);
  }
}

// The async calls on a caller's stream: nothing is read back until the test
// synchronises once.
TEST(CodecCuda, AsyncOnCallerStream) {
  std::vector<float> x = makeData(Dist::Relu50, 1.0, 123457, true, 77);
  const uint64_t n = x.size();
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  DevBuf dx(n * 4), dy(n * 4), dsize(sizeof(uint64_t)),
      dstatus(sizeof(int32_t));
  const size_t cap = comet_rt_codec_cuda_max_compressed_size(
      COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, n);
  DevBuf ds(cap);
  ASSERT_EQ(
      cudaMemcpyAsync(dx.p, x.data(), n * 4, cudaMemcpyHostToDevice, stream),
      cudaSuccess);
  ASSERT_EQ(comet_rt_codec_cuda_compress_async(
                COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, dx.p, &n, 1, 1e-2, ds.p,
                cap, dsize.as<uint64_t>(), stream),
            COMET_RT_SUCCESS);
  // The decoder needs the stream's length: the one word read back.
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  uint64_t size = 0;
  ASSERT_EQ(cudaMemcpy(&size, dsize.p, 8, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(comet_rt_codec_cuda_decompress_async(ds.p, size, dy.p, n * 4,
                                                 dstatus.as<int32_t>(), stream),
            COMET_RT_SUCCESS);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  int32_t status = -1;
  ASSERT_EQ(cudaMemcpy(&status, dstatus.p, 4, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(status, COMET_RT_SUCCESS);
  comet_rt_status st;
  Bytes cpu = cpuCompress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(), {n},
                          1e-2, &st);
  ASSERT_EQ(size, cpu.size());
  EXPECT_TRUE(download(ds.p, size) == cpu);
  EXPECT_TRUE(download(dy.p, n * 4) == cpuDecompress(cpu, n * 4).out);
  cudaStreamDestroy(stream);
}

TEST(CodecCuda, RejectsBadArguments) {
  std::vector<float> x(4, 1.0f);
  DevBuf dx(16), dout(4096);
  uint64_t dims[1] = {4};
  size_t size;
  auto compress = [&](int codec, int dtype, const uint64_t *d, uint32_t rank,
                      double eb, size_t cap) {
    return comet_rt_codec_cuda_compress(codec, dtype, dx.p, d, rank, eb, dout.p,
                                        cap, &size, nullptr);
  };
  for (double eb : {0.0, -1.0, std::nan(""), HUGE_VAL, 1e-300, 1e300})
    EXPECT_EQ(
        compress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, dims, 1, eb, 4096),
        COMET_RT_ERROR_INVALID_ARGUMENT)
        << eb;
  EXPECT_EQ(compress(9, COMET_RT_DTYPE_F32, dims, 1, 1.0, 4096),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(compress(COMET_RT_CODEC_RAW, 7, dims, 1, 1.0, 4096),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(compress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, dims, 9, 1.0, 4096),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  uint64_t overflow[2] = {uint64_t(1) << 40, uint64_t(1) << 40};
  EXPECT_EQ(
      compress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, overflow, 2, 1.0, 4096),
      COMET_RT_ERROR_INVALID_ARGUMENT);
  // The output must hold the worst case, which *out_size reports.
  const size_t worst = comet_rt_codec_cuda_max_compressed_size(
      COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, 4);
  EXPECT_EQ(worst, comet_rt_codec_max_compressed_size(COMET_RT_CODEC_SZ,
                                                      COMET_RT_DTYPE_F32, 4));
  EXPECT_EQ(
      compress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, dims, 1, 1.0, worst - 1),
      COMET_RT_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(size, worst);
  EXPECT_EQ(comet_rt_codec_cuda_compress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32,
                                         dx.p, dims, 1, 1.0, dout.p, 4096,
                                         nullptr, nullptr),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(comet_rt_codec_cuda_decompress(nullptr, 10, dout.p, 16, nullptr),
            COMET_RT_ERROR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// Hostile bytes: the GPU decoder's status is the CPU decoder's.
//===----------------------------------------------------------------------===//

std::vector<Bytes> sampleStreams() {
  std::mt19937 rng(17);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(200);
  for (size_t i = 0; i < x.size(); ++i) {
    float v = nd(rng);
    x[i] = i < 64 ? std::max(v, 0.0f) : (i < 128 ? v : v * 1e9f);
  }
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[70] = std::numeric_limits<float>::infinity();
  std::vector<Bytes> streams;
  comet_rt_status st;
  streams.push_back(cpuCompress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                                {10, 20}, 1e-2, &st));
  streams.push_back(cpuCompress(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F16, x.data(),
                                {399}, 1e-1, &st));
  streams.push_back(cpuCompress(COMET_RT_CODEC_MASK, COMET_RT_DTYPE_F32,
                                x.data(), {197}, 0.0, &st));
  streams.push_back(cpuCompress(COMET_RT_CODEC_RAW, COMET_RT_DTYPE_BF16,
                                x.data(), {33}, 0.0, &st));
  // Version 2: in the fixed-width modes (entropy none), which the GPU
  // decodes, and as the CPU writes by default (a Rice-coded chunk), which
  // it refuses.
  for (int entropy : {COMET_RT_CODEC_ENTROPY_NONE, COMET_RT_CODEC_ENTROPY_AUTO})
    for (auto [dtype, dims, eb] :
         {std::tuple<int, std::vector<uint64_t>, double>{
              COMET_RT_DTYPE_F32, {10, 20}, 1e-2},
          {COMET_RT_DTYPE_F16, {199}, 1e-3}}) {
      std::vector<float> smooth = makeData(Dist::Smooth, 1.0, 200, true, 5);
      const std::vector<float> &src =
          entropy == COMET_RT_CODEC_ENTROPY_NONE ? x : smooth;
      std::vector<uint16_t> half(src.size());
      for (size_t i = 0; i < src.size(); ++i)
        half[i] = uint16_t(format::F16::fromFloat(src[i]));
      const void *data = dtype == COMET_RT_DTYPE_F32
                             ? static_cast<const void *>(src.data())
                             : half.data();
      Bytes out(comet_rt_codec_max_compressed_size(COMET_RT_CODEC_SZ, dtype,
                                                   product(dims)));
      size_t size = 0;
      EXPECT_EQ(comet_rt_codec_set_entropy(entropy), COMET_RT_SUCCESS);
      EXPECT_EQ(comet_rt_codec_compress_version(
                    2, COMET_RT_CODEC_SZ, dtype, data, dims.data(),
                    uint32_t(dims.size()), eb, out.data(), out.size(), &size),
                COMET_RT_SUCCESS);
      comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_AUTO);
      out.resize(size);
      streams.push_back(out);
    }
  return streams;
}

// Decodes t on both sides into capacity bytes: same status, and on success
// the same output. The GPU may instead refuse a version 2 stream with a
// Rice block or coded chunk, exactly where its host emulation does.
void sameAsCpu(const Bytes &t, size_t capacity, const std::string &what,
               comet_rt_status *gpuStatus = nullptr) {
  Decoded c = cpuDecompress(t, capacity), g = gpuDecompress(t, capacity);
  if (gpuStatus)
    *gpuStatus = g.st;
  if (g.st == COMET_RT_ERROR_UNSUPPORTED && c.st != g.st) {
    auto [hostSt, hostMode] = hostEmulation(t, capacity);
    ASSERT_EQ(hostSt, COMET_RT_ERROR_UNSUPPORTED) << what;
    ASSERT_EQ(g.mode, hostMode) << what;
    return;
  }
  ASSERT_EQ(g.st, c.st) << what;
  if (c.st != COMET_RT_SUCCESS)
    return;
  // The same decoded bytes, and nothing written after them: a stream may
  // decode to less than the capacity (the CPU's buffer starts zeroed, the
  // GPU's with the guard pattern).
  comet_rt_codec_info info;
  ASSERT_EQ(comet_rt_codec_get_info(t.data(), t.size(), &info),
            COMET_RT_SUCCESS)
      << what;
  size_t n = std::min<size_t>(capacity, info.decompressed_bytes);
  ASSERT_TRUE(std::equal(g.out.begin(), g.out.begin() + n, c.out.begin()))
      << what;
  ASSERT_TRUE(std::all_of(g.out.begin() + n, g.out.end(),
                          [](uint8_t b) { return b == kGuardByte; }))
      << what << ": the GPU wrote past the " << n << " decoded bytes";
}

TEST(CodecCudaRobustness, TruncationsAndFlipsGiveTheCpuStatus) {
  size_t errors = 0, flips = 0;
  for (const Bytes &s : sampleStreams()) {
    comet_rt_codec_info info;
    ASSERT_EQ(comet_rt_codec_get_info(s.data(), s.size(), &info),
              COMET_RT_SUCCESS);
    const size_t cap = info.decompressed_bytes;
    sameAsCpu(s, cap, "valid");
    if (cap)
      sameAsCpu(s, cap - 1, "one byte short");
    for (size_t len = 0; len < s.size(); ++len) {
      sameAsCpu(Bytes(s.begin(), s.begin() + len), cap,
                "length " + std::to_string(len));
      if (HasFatalFailure())
        return;
    }
    Bytes longer = s;
    longer.push_back(0);
    sameAsCpu(longer, cap, "one byte too many");
    for (size_t bit = 0; bit < s.size() * 8; ++bit) {
      Bytes t = s;
      t[bit / 8] ^= uint8_t(1u << (bit % 8));
      comet_rt_codec_info ti;
      size_t c = cap;
      if (comet_rt_codec_get_info(t.data(), t.size(), &ti) == COMET_RT_SUCCESS)
        c = std::min<uint64_t>(ti.decompressed_bytes, 1 << 20);
      comet_rt_status g;
      sameAsCpu(t, c, "bit " + std::to_string(bit), &g);
      if (HasFatalFailure())
        return;
      errors += g != COMET_RT_SUCCESS;
      ++flips;
    }
  }
  EXPECT_GT(errors, flips / 10);
}

TEST(CodecCudaRobustness, RandomBytesGiveTheCpuStatus) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(0, 255);
  auto samples = sampleStreams();
  for (int iter = 0; iter < 1500; ++iter) {
    Bytes t(size_t(byte(rng)) * 3 + byte(rng));
    for (auto &b : t)
      b = uint8_t(byte(rng));
    const Bytes &base = samples[iter % samples.size()];
    if (iter % 2 && t.size() >= 128)
      std::copy(base.begin(), base.begin() + 128, t.begin());
    if (iter % 4 == 1)
      t.resize(base.size());
    sameAsCpu(t, 4096, "iteration " + std::to_string(iter));
    if (HasFatalFailure())
      return;
  }
}

TEST(CodecCudaRobustness, SpecificCorruptions) {
  Bytes s = sampleStreams()[0];
  comet_rt_codec_info info;
  ASSERT_EQ(comet_rt_codec_get_info(s.data(), s.size(), &info),
            COMET_RT_SUCCESS);
  ASSERT_GT(info.num_outliers, 0u);
  const size_t cap = info.decompressed_bytes;
  auto expectStatus = [&](Bytes t, comet_rt_status want, const char *what) {
    EXPECT_EQ(gpuDecompress(t, cap).st, want) << what;
  };
  Bytes t = s;
  t[0] = 'X';
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "magic");
  t = s;
  t[4] = 2;
  expectStatus(t, COMET_RT_ERROR_UNSUPPORTED, "version");
  t = s;
  t[12] = 32;
  expectStatus(t, COMET_RT_ERROR_UNSUPPORTED, "block size");
  t = s;
  t[128] = 0x3F;
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "width");
  t = s;
  uint64_t big = 1000;
  std::memcpy(&t[s.size() - 12 * info.num_outliers], &big, 8);
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "outlier index");
  t = s;
  t[40] = 99;
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "dims");
  expectStatus({}, COMET_RT_ERROR_TRUNCATED, "empty");
}

} // namespace

int main(int argc, char **argv) {
  // Only the absence of a device skips: no GPU driver on the machine, or a
  // driver that reports no device. Any other error (a broken driver, a
  // device that cannot be used) fails with its message.
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  bool noDriver = e == cudaErrorInsufficientDriver &&
                  !dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) &&
                  !dlopen("libcuda.so.1", RTLD_NOW);
  if ((e == cudaSuccess && count == 0) || e == cudaErrorNoDevice || noDriver) {
    std::printf("CometCodecCudaTests: no CUDA device (%s); skipping\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77; // SKIP_RETURN_CODE
  }
  if (e != cudaSuccess) {
    std::fprintf(stderr, "CometCodecCudaTests: cudaGetDeviceCount: %s (%s)\n",
                 cudaGetErrorString(e), cudaGetErrorName(e));
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
