//===- CodecChannelTest.cpp - sz streams with one bound per channel -------===//
//
// comet_rt_codec_compress_channels (docs/codec-format.md, "Bounds per
// channel"): every element within its channel's bound, each block at the
// smallest bound of its channels, the bytes of a one-bound stream where all
// channels agree, the test vectors of test/fixtures/codec/channels, and
// the checks a decoder makes on the table.
//
//===----------------------------------------------------------------------===//
#include "CodecTestUtil.h"

#include "gtest/gtest.h"

#include <string>

using namespace comet::test;

namespace {

std::vector<uint8_t>
compressChannels(comet_rt_dtype dtype, const void *data,
                 std::vector<uint64_t> dims, const std::vector<double> &eb,
                 comet_rt_status *st,
                 int entropy = COMET_RT_CODEC_ENTROPY_AUTO) {
  uint64_t n = 1;
  for (uint64_t d : dims)
    n *= d;
  std::vector<uint8_t> out(
      comet_rt_codec_max_compressed_size(COMET_RT_CODEC_SZ, dtype, n) +
      8 * (dims.size() > 1 ? dims[1] : 0));
  size_t size = 0;
  *st = comet_rt_codec_compress_channels(entropy, dtype, data, dims.data(),
                                         uint32_t(dims.size()), eb.data(),
                                         out.data(), out.size(), &size);
  out.resize(*st == COMET_RT_SUCCESS ? size : 0);
  return out;
}

uint64_t innerOf(const std::vector<uint64_t> &dims) {
  uint64_t inner = 1;
  for (size_t i = 2; i < dims.size(); ++i)
    inner *= dims[i];
  return inner;
}

// Per-channel data: channel c scaled by scale[c] (a BatchNorm input whose
// channels differ in spread), with the specials of makeData.
std::vector<float> channelData(const std::vector<uint64_t> &dims,
                               const std::vector<double> &scale, uint32_t seed,
                               bool specials = true) {
  uint64_t n = 1;
  for (uint64_t d : dims)
    n *= d;
  auto x = makeData(Dist::Normal, 1.0, n, specials, seed);
  const uint64_t inner = innerOf(dims);
  for (uint64_t i = 0; i < n; ++i)
    if (std::isfinite(x[i]) && std::fabs(x[i]) < 1e30f)
      x[i] = float(x[i] * scale[(i / inner) % dims[1]]);
  return x;
}

TEST(CodecChannels, EveryElementWithinItsChannelsBound) {
  // inner 1 (rank 2), 25 (channels shorter than a block), 64, 100 and
  // 1600 (channels across chunks).
  const std::vector<std::vector<uint64_t>> shapes = {
      {40, 7}, {3, 6, 5, 5}, {2, 5, 8, 8}, {4, 3, 10, 10}, {2, 3, 40, 40}};
  for (const auto &dims : shapes) {
    const uint64_t c = dims[1];
    std::vector<double> eb(c), scale(c);
    for (uint64_t k = 0; k < c; ++k) {
      scale[k] = 0.1 * double(1 + 3 * k);
      eb[k] = 1e-3 * scale[k];
    }
    auto x = channelData(dims, scale, 7 + uint32_t(c));
    for (int entropy :
         {COMET_RT_CODEC_ENTROPY_AUTO, COMET_RT_CODEC_ENTROPY_OFF,
          COMET_RT_CODEC_ENTROPY_ALWAYS, COMET_RT_CODEC_ENTROPY_NONE}) {
      SCOPED_TRACE(::testing::Message()
                   << "dims[1]=" << c << " inner=" << innerOf(dims)
                   << " entropy=" << entropy);
      comet_rt_status st;
      auto s = compressChannels(COMET_RT_DTYPE_F32, x.data(), dims, eb, &st,
                                entropy);
      ASSERT_EQ(st, COMET_RT_SUCCESS);
      comet_rt_codec_info info;
      ASSERT_EQ(comet_rt_codec_get_info(s.data(), s.size(), &info),
                COMET_RT_SUCCESS);
      EXPECT_EQ(info.channel_bounds, 1u);
      EXPECT_EQ(info.eb, *std::max_element(eb.begin(), eb.end()));
      std::vector<float> y(x.size());
      ASSERT_EQ(
          comet_rt_codec_decompress(s.data(), s.size(), y.data(), y.size() * 4),
          COMET_RT_SUCCESS);
      const uint64_t inner = innerOf(dims);
      for (size_t i = 0; i < x.size(); ++i) {
        if (!std::isfinite(x[i])) {
          ASSERT_EQ(bitsOf(x[i]), bitsOf(y[i])) << i;
          continue;
        }
        ASSERT_LE(std::fabs(double(x[i]) - double(y[i])), eb[(i / inner) % c])
            << "element " << i;
      }
    }
  }
}

TEST(CodecChannels, WiderChannelsAreStoredSmaller) {
  // Channels of 128 elements (no block spans two), values of spread
  // 0.3 * scale[c], bounds 1e-3 * scale[c]: each channel's codes need the
  // same bits, where the tightest bound costs log2(scale[c] / 0.2) more a
  // value (2.7 on average, on about 10.5): about 0.8 of the one-bound
  // stream at the tightest, and more than the one at the loosest.
  const std::vector<uint64_t> dims = {8, 6, 8, 16};
  const std::vector<double> scale = {0.2, 1, 3, 0.5, 2, 8};
  std::vector<double> eb(6);
  for (int k = 0; k < 6; ++k)
    eb[k] = 1e-3 * scale[k];
  auto x = channelData(dims, scale, 11, /*specials=*/false);
  comet_rt_status st;
  auto s = compressChannels(COMET_RT_DTYPE_F32, x.data(), dims, eb, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  auto tight = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                           dims, 2e-4, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  auto loose = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                           dims, 8e-3, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  EXPECT_LT(double(s.size()), 0.85 * double(tight.size()));
  EXPECT_GT(s.size(), loose.size());
}

TEST(CodecChannels, EqualBoundsGiveTheOneBoundChunks) {
  // The same bound in every channel: the header differs in byte 9 (the
  // flag), the table follows it, and every chunk is the one-bound stream's.
  const std::vector<uint64_t> dims = {3, 4, 30, 30};
  auto x = makeData(Dist::Smooth, 2.0, 3 * 4 * 900, true, 3);
  for (int dt = 0; dt < 3; ++dt) {
    SCOPED_TRACE(dt);
    std::vector<uint8_t> in(x.size() * 4);
    // f16/bf16 from the float's upper bits are valid elements too.
    if (dt == 0)
      std::memcpy(in.data(), x.data(), in.size());
    else
      for (size_t i = 0; i < x.size(); ++i) {
        uint16_t h = uint16_t(bitsOf(x[i]) >> 16);
        std::memcpy(&in[2 * i], &h, 2);
      }
    comet_rt_status st;
    auto one = compressVec(COMET_RT_CODEC_SZ, comet_rt_dtype(dt), in.data(),
                           dims, 1e-3, &st);
    ASSERT_EQ(st, COMET_RT_SUCCESS);
    auto ch = compressChannels(comet_rt_dtype(dt), in.data(), dims,
                               std::vector<double>(4, 1e-3), &st);
    ASSERT_EQ(st, COMET_RT_SUCCESS);
    ASSERT_EQ(ch.size(), one.size() + 32);
    EXPECT_EQ(ch[9], 1);
    ch[9] = 0;
    EXPECT_TRUE(std::equal(one.begin(), one.begin() + 128, ch.begin()));
    EXPECT_TRUE(std::equal(one.begin() + 128, one.end(), ch.begin() + 160));
    for (int k = 0; k < 4; ++k) {
      double e;
      std::memcpy(&e, &ch[128 + 8 * k], 8);
      EXPECT_EQ(e, 1e-3);
    }
  }
}

TEST(CodecChannels, ABlockTakesTheSmallestBoundOfItsChannels) {
  // dims {1, 2, 32}: the one block holds both channels, so it is stored at
  // the smaller bound: it decodes as a one-bound stream at 1e-3 does.
  const std::vector<uint64_t> dims = {1, 2, 32};
  auto x = makeData(Dist::Normal, 1.0, 64, false, 5);
  comet_rt_status st;
  auto ch =
      compressChannels(COMET_RT_DTYPE_F32, x.data(), dims, {1e-2, 1e-3}, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  auto one = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(), dims,
                         1e-3, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  std::vector<float> a(64), b(64);
  ASSERT_EQ(comet_rt_codec_decompress(ch.data(), ch.size(), a.data(), 256),
            COMET_RT_SUCCESS);
  ASSERT_EQ(comet_rt_codec_decompress(one.data(), one.size(), b.data(), 256),
            COMET_RT_SUCCESS);
  EXPECT_EQ(a, b);
  // {1, 2, 64}: one block per channel, each at its own bound.
  auto x2 = makeData(Dist::Normal, 1.0, 128, false, 6);
  auto ch2 = compressChannels(COMET_RT_DTYPE_F32, x2.data(), {1, 2, 64},
                              {1e-2, 1e-3}, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  std::vector<float> y(128);
  ASSERT_EQ(comet_rt_codec_decompress(ch2.data(), ch2.size(), y.data(), 512),
            COMET_RT_SUCCESS);
  double worst0 = 0;
  for (int i = 0; i < 64; ++i)
    worst0 = std::max(worst0, std::fabs(double(x2[i]) - double(y[i])));
  EXPECT_GT(worst0, 1e-3); // looser than the second channel's bound
  EXPECT_LE(worst0, 1e-2);
}

TEST(CodecChannels, WhereTheyPay) {
  auto pays = [](std::vector<uint64_t> d) {
    return comet_rt_codec_channel_bounds_pay(d.data(), uint32_t(d.size()));
  };
  EXPECT_EQ(pays({64, 32, 4, 4}), 1); // 16 a channel and sample
  EXPECT_EQ(pays({64, 32, 16}), 1);
  EXPECT_EQ(pays({64, 32, 28, 28}), 1);
  EXPECT_EQ(pays({64, 960, 1, 1}), 0); // a block spans 64 channels
  EXPECT_EQ(pays({64, 32, 2, 2}), 0);
  EXPECT_EQ(pays({64, 32, 3, 5}), 0);
  EXPECT_EQ(pays({64, 32}), 0);
  EXPECT_EQ(pays({64, 1, 32, 32}), 0); // one channel: nothing to vary
  EXPECT_EQ(pays({4096}), 0);
  EXPECT_EQ(comet_rt_codec_channel_bounds_pay(nullptr, 4), 0);
  const uint64_t nine[9] = {1, 2, 16, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(comet_rt_codec_channel_bounds_pay(nine, 9), 0); // rank > 8
}

TEST(CodecChannels, BadArgumentsAreRefused) {
  std::vector<float> x(24, 1.0f);
  std::vector<uint8_t> out(4096);
  size_t size = 0;
  const uint64_t dims[] = {2, 3, 4};
  const double good[] = {1e-3, 1e-2, 1e-3};
  const double nan = std::nan("");
  auto call = [&](const uint64_t *d, uint32_t rank, const double *eb,
                  int entropy = 0) {
    return comet_rt_codec_compress_channels(entropy, COMET_RT_DTYPE_F32,
                                            x.data(), d, rank, eb, out.data(),
                                            out.size(), &size);
  };
  EXPECT_EQ(call(dims, 3, good), COMET_RT_SUCCESS);
  EXPECT_EQ(call(dims, 1, good), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(call(nullptr, 3, good), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(call(dims, 3, nullptr), COMET_RT_ERROR_INVALID_ARGUMENT);
  const uint64_t noChannels[] = {2, 0, 4};
  EXPECT_EQ(call(noChannels, 3, good), COMET_RT_ERROR_INVALID_ARGUMENT);
  for (double bad : {0.0, -1e-3, nan, HUGE_VAL, 1e-300, DBL_MAX}) {
    const double eb[] = {1e-3, bad, 1e-3};
    EXPECT_EQ(call(dims, 3, eb), COMET_RT_ERROR_INVALID_ARGUMENT) << bad;
  }
  EXPECT_EQ(call(dims, 3, good, 4), COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(call(dims, 3, good, -1), COMET_RT_ERROR_INVALID_ARGUMENT);
  // Too small: the size to ask for, which then fits exactly.
  ASSERT_EQ(comet_rt_codec_compress_channels(0, COMET_RT_DTYPE_F32, x.data(),
                                             dims, 3, good, nullptr, 0, &size),
            COMET_RT_ERROR_BUFFER_TOO_SMALL);
  std::vector<uint8_t> exact(size);
  size_t got = 0;
  EXPECT_EQ(comet_rt_codec_compress_channels(0, COMET_RT_DTYPE_F32, x.data(),
                                             dims, 3, good, exact.data(),
                                             exact.size(), &got),
            COMET_RT_SUCCESS);
  EXPECT_EQ(got, size);
}

TEST(CodecChannels, CorruptTablesAndFlagsAreRejected) {
  const std::vector<uint64_t> dims = {2, 3, 8, 8};
  auto x = makeData(Dist::Normal, 1.0, 384, false, 9);
  comet_rt_status st;
  const auto good = compressChannels(COMET_RT_DTYPE_F32, x.data(), dims,
                                     {1e-3, 4e-3, 2e-3}, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  std::vector<float> y(384);
  auto decode = [&](const std::vector<uint8_t> &s) {
    return comet_rt_codec_decompress(s.data(), s.size(), y.data(), 384 * 4);
  };
  ASSERT_EQ(decode(good), COMET_RT_SUCCESS);
  auto setTable = [&](std::vector<uint8_t> s, int k, double v) {
    std::memcpy(&s[128 + 8 * k], &v, 8);
    return s;
  };
  // A bound above the header's, none equal to it, an invalid one.
  EXPECT_EQ(decode(setTable(good, 0, 5e-3)), COMET_RT_ERROR_CORRUPT);
  EXPECT_EQ(decode(setTable(good, 1, 3e-3)), COMET_RT_ERROR_CORRUPT);
  for (double bad : {0.0, -1e-3, std::nan(""), 1e-300})
    EXPECT_EQ(decode(setTable(good, 2, bad)), COMET_RT_ERROR_CORRUPT) << bad;
  // Other flag bits; the flag on rank 1, on version 1, on raw and mask.
  for (int bit = 1; bit < 8; ++bit) {
    auto s = good;
    s[9] |= uint8_t(1u << bit);
    EXPECT_EQ(decode(s), COMET_RT_ERROR_CORRUPT) << bit;
  }
  auto flagged = [&](comet_rt_codec codec, std::vector<uint64_t> d,
                     int version) {
    auto s =
        compressVec(codec, COMET_RT_DTYPE_F32, x.data(), d, 1e-3, &st, version);
    s[9] = 1;
    return s;
  };
  EXPECT_EQ(decode(flagged(COMET_RT_CODEC_SZ, {384}, 2)),
            COMET_RT_ERROR_CORRUPT);
  EXPECT_EQ(decode(flagged(COMET_RT_CODEC_SZ, dims, 1)),
            COMET_RT_ERROR_CORRUPT);
  EXPECT_EQ(decode(flagged(COMET_RT_CODEC_RAW, dims, 2)),
            COMET_RT_ERROR_CORRUPT);
  EXPECT_EQ(decode(flagged(COMET_RT_CODEC_MASK, dims, 2)),
            COMET_RT_ERROR_CORRUPT);
  // The flag cleared: the table is read as chunk sizes (wrong length).
  auto cleared = good;
  cleared[9] = 0;
  EXPECT_NE(decode(cleared), COMET_RT_SUCCESS);
  // Every truncation, into the table too, is an error.
  for (size_t len = 0; len < good.size(); ++len)
    EXPECT_NE(comet_rt_codec_decompress(good.data(), len, y.data(), 384 * 4),
              COMET_RT_SUCCESS)
        << len;
  // dims[1] so large that the table's size overflows.
  auto huge = good;
  const uint64_t big = uint64_t(1) << 61, zero = 0;
  std::memcpy(&huge[32 + 8], &big, 8);
  std::memcpy(&huge[32], &zero, 8); // n = 0 keeps the dims consistent
  std::memcpy(&huge[24], &zero, 8);
  EXPECT_NE(decode(huge), COMET_RT_SUCCESS);
}

TEST(CodecChannels, TestVectors) {
  const std::string dir = std::string(COMET_CODEC_FIXTURE_DIR) + "/channels";
  std::ifstream f(dir + "/manifest.txt");
  ASSERT_TRUE(f.good());
  std::string line;
  int cases = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream ls(line);
    std::string name, dtype, dimStr, ebFile, input, stream, output, entropy;
    ls >> name >> dtype >> dimStr >> ebFile >> input >> stream >> output >>
        entropy;
    ASSERT_FALSE(ls.fail()) << line;
    SCOPED_TRACE(name);
    const std::vector<uint64_t> dims = dimsOf(dimStr);
    auto ebBytes = readFile(dir + "/" + ebFile);
    ASSERT_EQ(ebBytes.size(), 8 * dims[1]);
    std::vector<double> eb(dims[1]);
    std::memcpy(eb.data(), ebBytes.data(), ebBytes.size());
    auto in = readFile(dir + "/" + input);
    auto expected = readFile(dir + "/" + stream);
    auto decoded = readFile(dir + "/" + output);
    const int mode = entropyOf(entropy);
    atEveryIsaAndThreadCount([&] {
      comet_rt_status st;
      auto s = compressChannels(dtypeOf(dtype), in.data(), dims, eb, &st, mode);
      ASSERT_EQ(st, COMET_RT_SUCCESS);
      ASSERT_EQ(s, expected) << "compressed bytes differ";
      std::vector<uint8_t> y(decoded.size());
      ASSERT_EQ(comet_rt_codec_decompress(expected.data(), expected.size(),
                                          y.data(), y.size()),
                COMET_RT_SUCCESS);
      ASSERT_EQ(y, decoded) << "decompressed bytes differ";
    });
    if (::testing::Test::HasFatalFailure())
      return;
    ++cases;
  }
  EXPECT_EQ(cases, 4);
}

} // namespace
