//===- CodecRobustnessTest.cpp - The decoder on hostile bytes -------------===//
//
// Truncated, bit-flipped and random streams must give an error code (or, for
// a flip that keeps the stream valid, a result), and the decoder must never
// write past the capacity it was given. The sanitizer tree runs these under
// ASan and UBSan; here a guard zone catches stray writes.
//
//===----------------------------------------------------------------------===//
#include "CodecTestUtil.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace comet::test;

namespace {

constexpr size_t kGuard = 256;
constexpr uint8_t kGuardByte = 0xA5;

// Decodes with a guard zone after `capacity` bytes and checks it.
comet_rt_status guardedDecode(const std::vector<uint8_t> &s, size_t capacity) {
  std::vector<uint8_t> out(capacity + kGuard, kGuardByte);
  comet_rt_status st =
      comet_rt_codec_decompress(s.data(), s.size(), out.data(), capacity);
  for (size_t i = capacity; i < out.size(); ++i)
    if (out[i] != kGuardByte) {
      ADD_FAILURE() << "decoder wrote past its capacity at +" << i - capacity;
      break;
    }
  return st;
}

// Small streams of every codec and dtype, with outliers, sparse, dense and
// raw blocks among them.
std::vector<std::vector<uint8_t>> sampleStreams() {
  std::mt19937 rng(17);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(200);
  for (size_t i = 0; i < x.size(); ++i) {
    float v = nd(rng);
    x[i] = i < 64 ? std::max(v, 0.0f) : (i < 128 ? v : v * 1e9f);
  }
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[70] = std::numeric_limits<float>::infinity();
  std::vector<std::vector<uint8_t>> streams;
  comet_rt_status st;
  streams.push_back(compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                                {10, 20}, 1e-2, &st));
  streams.push_back(compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F16, x.data(),
                                {399}, 1e-1, &st));
  streams.push_back(compressVec(COMET_RT_CODEC_MASK, COMET_RT_DTYPE_F32,
                                x.data(), {197}, 0.0, &st));
  streams.push_back(compressVec(COMET_RT_CODEC_RAW, COMET_RT_DTYPE_BF16,
                                x.data(), {33}, 0.0, &st));
  // Version 2 only: an all-zero chunk (size 0) before a chunk of a ramp
  // (dense), smooth data (Lorenzo Rice) and noise (plain Rice, sparse).
  std::vector<float> z(4096 + 300, 0.0f);
  float walk = 0;
  for (size_t i = 4096; i < z.size(); ++i)
    z[i] = i < 4096 + 64    ? 0.01f * float(i - 4096)
           : i < 4096 + 192 ? (walk = 0.95f * walk + 0.02f * nd(rng))
                            : nd(rng);
  streams.push_back(compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, z.data(),
                                {z.size()}, 1e-3, &st));
  // A smooth 2-D field: a coded chunk (mode 7, 2-D Lorenzo predictor), which
  // only ALWAYS tries on codes this wide.
  std::vector<float> field(24 * 32);
  for (size_t i = 0; i < 20; ++i)
    for (size_t j = 0; j < 30; ++j)
      field[i * 30 + j] = std::sin(0.3f * float(i)) * std::cos(0.2f * float(j));
  comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_ALWAYS);
  streams.push_back(compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32,
                                field.data(), {20, 30}, 1e-4, &st));
  comet_rt_codec_set_entropy(COMET_RT_CODEC_ENTROPY_AUTO);
  // The same field above two sparse blocks, which keep the chunk in block
  // modes: 2D Lorenzo Rice blocks (mode 6).
  for (size_t i = 0; i < 24; ++i)
    for (size_t j = 0; j < 32; ++j)
      field[i * 32 + j] =
          i < 20 ? std::sin(0.3f * float(i)) * std::cos(0.2f * float(j))
                 : (j % 16 == 0 ? 0.5f : 0.0f);
  streams.push_back(compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32,
                                field.data(), {24, 32}, 1e-4, &st));
  // A range-coded chunk (mode 7, coder 0), which AUTO writes for the
  // near-constant codes of attention rows.
  std::vector<float> att = makeAttention(1, 28, 5);
  streams.push_back(compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32,
                                att.data(), {28, 28}, 1e-2, &st));
  // Rice-coded chunks (mode 7, coder 1), which AUTO writes for dense
  // codes: a 2-D field with a per-column scale, a NaN and an outlier, and
  // the same at rank 1.
  std::vector<float> cols(32 * 32);
  for (size_t i = 0; i < cols.size(); ++i)
    cols[i] = nd(rng) * (0.1f + 0.3f * float(i % 5));
  cols[7] = std::numeric_limits<float>::quiet_NaN();
  cols[600] = 1e30f;
  streams.push_back(compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32,
                                cols.data(), {32, 32}, 1e-2, &st));
  streams.push_back(compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32,
                                cols.data(), {cols.size()}, 1e-2, &st));
  // The version 1 decoder stays reachable.
  streams.push_back(compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                                {10, 20}, 1e-2, &st, 1));
  return streams;
}

TEST(CodecRobustness, SamplesCoverEveryMode) {
  std::vector<bool> seen(8, false), coders(2, false);
  for (auto &s : sampleStreams()) {
    for (int m : v2Modes(s))
      seen[m] = true;
    for (int c : v2Coders(s))
      coders.at(c) = true;
  }
  for (int m = 0; m < 8; ++m)
    EXPECT_TRUE(seen[m]) << "no block of mode " << m;
  for (int c = 0; c < 2; ++c)
    EXPECT_TRUE(coders[c]) << "no coded chunk of coder " << c;
}

TEST(CodecRobustness, ValidSamplesDecode) {
  for (auto &s : sampleStreams()) {
    ASSERT_GT(s.size(), 128u);
    comet_rt_codec_info info;
    ASSERT_EQ(comet_rt_codec_get_info(s.data(), s.size(), &info), COMET_RT_SUCCESS);
    EXPECT_EQ(guardedDecode(s, info.decompressed_bytes), COMET_RT_SUCCESS);
    // One byte short of the output size is refused before any write.
    if (info.decompressed_bytes)
      EXPECT_EQ(guardedDecode(s, info.decompressed_bytes - 1),
                COMET_RT_ERROR_BUFFER_TOO_SMALL);
  }
}

TEST(CodecRobustness, EveryTruncationIsAnError) {
  for (auto &s : sampleStreams()) {
    comet_rt_codec_info info;
    ASSERT_EQ(comet_rt_codec_get_info(s.data(), s.size(), &info), COMET_RT_SUCCESS);
    for (size_t len = 0; len < s.size(); ++len) {
      std::vector<uint8_t> t(s.begin(), s.begin() + len);
      comet_rt_status st = guardedDecode(t, info.decompressed_bytes);
      ASSERT_NE(st, COMET_RT_SUCCESS) << "length " << len;
    }
    // A byte too many is an error as well: the sizes must add up.
    std::vector<uint8_t> longer = s;
    longer.push_back(0);
    EXPECT_EQ(guardedDecode(longer, info.decompressed_bytes),
              COMET_RT_ERROR_CORRUPT);
  }
}

TEST(CodecRobustness, EveryBitFlipIsSafe) {
  size_t errors = 0, flips = 0;
  for (auto &s : sampleStreams()) {
    comet_rt_codec_info info;
    ASSERT_EQ(comet_rt_codec_get_info(s.data(), s.size(), &info), COMET_RT_SUCCESS);
    for (size_t bit = 0; bit < s.size() * 8; ++bit) {
      std::vector<uint8_t> t = s;
      t[bit / 8] ^= uint8_t(1u << (bit % 8));
      comet_rt_codec_info ti;
      size_t cap = info.decompressed_bytes;
      if (comet_rt_codec_get_info(t.data(), t.size(), &ti) == COMET_RT_SUCCESS)
        cap = std::min<uint64_t>(ti.decompressed_bytes, 1 << 20);
      comet_rt_status st = guardedDecode(t, cap);
      errors += st != COMET_RT_SUCCESS;
      ++flips;
    }
  }
  // Payload flips may stay valid; header flips must not. A decoder that
  // accepted everything would fail this.
  EXPECT_GT(errors, flips / 10);
}

TEST(CodecRobustness, RandomBytesAreRejectedSafely) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(0, 255);
  auto samples = sampleStreams();
  for (int iter = 0; iter < 3000; ++iter) {
    // Keep a real header some of the time so the body checks are reached.
    std::vector<uint8_t> t(size_t(byte(rng)) * 3 + byte(rng));
    for (auto &b : t)
      b = uint8_t(byte(rng));
    const auto &base = samples[iter % samples.size()];
    if (iter % 2 && t.size() >= 128)
      std::copy(base.begin(), base.begin() + 128, t.begin());
    if (iter % 4 == 1)
      t.resize(base.size()); // the sizes add up, the body is noise
    guardedDecode(t, 4096);
  }
}

// Hand-made inconsistencies in a version 2 stream (one chunk at offset 132:
// bitmap, outlier count, descriptors, ...), each with the error it must give.
TEST(CodecRobustness, SpecificCorruptionsV2) {
  auto s = sampleStreams()[0];
  comet_rt_codec_info info;
  ASSERT_EQ(comet_rt_codec_get_info(s.data(), s.size(), &info), COMET_RT_SUCCESS);
  ASSERT_EQ(info.version, 2u);
  ASSERT_GT(info.num_outliers, 0u);
  size_t cap = info.decompressed_bytes;
  auto expectStatus = [&](std::vector<uint8_t> t, comet_rt_status want,
                          const char *what) {
    EXPECT_EQ(guardedDecode(t, cap), want) << what;
  };
  auto t = s;
  t[4] = 3;
  expectStatus(t, COMET_RT_ERROR_UNSUPPORTED, "version");
  t = s;
  t[104] = 32;
  expectStatus(t, COMET_RT_ERROR_UNSUPPORTED, "blocks per chunk");
  t = s;
  t[96] = 2;
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "chunk count");
  t = s;
  t[128] += 1; // the chunk's size no longer matches the payload
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "chunk size");
  t = s;
  t[132 + 3] = 0x01; // a block past the chunk's 4 is present
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "bitmap");
  t = s;
  t[142] = 7 << 5; // mode 7
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "mode");
  t = s;
  t[142] = 25; // dense, width 25
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "width");
  t = s;
  t[142] = 3 << 5 | 1; // raw with a width
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "raw param");
  // Outlier indices (u16, then the 4-byte values): past the end.
  t = s;
  size_t outIdx = s.size() - 6 * info.num_outliers;
  t[outIdx] = 0xFF;
  t[outIdx + 1] = 0xFF;
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "outlier index");
  t = s;
  t[132 + 8] += 1; // outlier count
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "outlier count");
  t = s;
  t[120] += 1; // the header's outlier total
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "outlier total");
}

// Hand-made inconsistencies in a coded chunk (mode 7; one chunk: bitmap
// at 132, outlier count at 140, descriptor at 142, the range coder's byte
// count at 143, its bytes from 145, the raw bits, then the outliers).
TEST(CodecRobustness, SpecificCorruptionsCoded) {
  std::vector<float> x = makeAttention(4, 28, 3); // 3136: 49 blocks
  std::fill(x.begin(), x.begin() + 64, 0.0f);     // block 0 absent
  x[100] = std::numeric_limits<float>::quiet_NaN();
  comet_rt_status st;
  auto s = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                       {4, 28, 28}, 1e-2, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  ASSERT_EQ(v2Modes(s), std::vector<int>{7});
  ASSERT_EQ(s[141], 0x80); // the flag; one outlier
  ASSERT_EQ(s[140], 1);
  const size_t cap = x.size() * 4;
  ASSERT_EQ(guardedDecode(s, cap), COMET_RT_SUCCESS);
  auto expectStatus = [&](std::vector<uint8_t> t, comet_rt_status want,
                          const char *what) {
    EXPECT_EQ(guardedDecode(t, cap), want) << what;
  };
  auto t = s;
  t[142] = uint8_t(7 << 5 | 2 << 2); // coder 2
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "coder");
  t[142] = uint8_t(7 << 5 | 4 << 2); // coder 4 (bit 4 of the param)
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "coder 4");
  t = s;
  t[142] = uint8_t(6 << 5 | (s[142] & 31)); // not mode 7
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "coded chunk's mode");
  t = s;
  t[141] = 0; // flag cleared: block descriptors (the first is mode 7)
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "flag");
  t = s;
  t[145] = 1; // the range coder's first byte is always 0
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "first byte");
  t = s;
  t[144] = 0xFF; // more range coder bytes than the chunk holds
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "range coder's byte count");
  t = s;
  t[143] += 1; // one of them taken from the raw bits
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "range coder's byte count + 1");
  t = s;
  t[140] = 0; // no outlier: the index and value become coder bytes
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "outlier count");
  t = s;
  size_t idx = s.size() - 6;
  t[idx] = 0x40; // 3136 + 0: index past the chunk
  t[idx + 1] = 0x0C;
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "outlier index");
  t = s;
  ASSERT_EQ(s[132] & 1, 0); // block 0 absent; the outlier moves there
  t[idx] = 10;
  t[idx + 1] = 0;
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "outlier in an absent block");
  t = s;
  t.insert(t.begin() + idx, 0); // a trailing raw byte
  t[128] += 1;
  t[112] += 1;
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "trailing byte");
  // The 2-D predictors need rank >= 2.
  auto r1 = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                        {x.size()}, 1e-2, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  ASSERT_EQ(v2Modes(r1), std::vector<int>{7});
  EXPECT_EQ(guardedDecode(r1, cap), COMET_RT_SUCCESS);
  for (uint8_t pred : {2, 3}) {
    t = r1;
    t[142] = uint8_t(7 << 5 | pred);
    expectStatus(t, COMET_RT_ERROR_CORRUPT, "2-D predictor at rank 1");
  }
}

// Hand-made inconsistencies in a Rice-coded chunk (mode 7, coder 1; one
// chunk: bitmap at 132, outlier count at 140, descriptor at 142, the k
// table at 143-152, the codes from 153, then the outliers).
TEST(CodecRobustness, SpecificCorruptionsRice) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(40 * 64);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = nd(rng) * (0.1f + 0.3f * float(i % 5));
  x[100] = std::numeric_limits<float>::quiet_NaN();
  comet_rt_status st;
  auto s = compressVec(COMET_RT_CODEC_SZ, COMET_RT_DTYPE_F32, x.data(),
                       {40, 64}, 1e-2, &st);
  ASSERT_EQ(st, COMET_RT_SUCCESS);
  ASSERT_EQ(v2Coders(s), std::vector<int>{1});
  ASSERT_EQ(s[141], 0x80); // the flag; one outlier
  ASSERT_EQ(s[140], 1);
  const size_t cap = x.size() * 4;
  ASSERT_EQ(guardedDecode(s, cap), COMET_RT_SUCCESS);
  auto expectStatus = [&](std::vector<uint8_t> t, comet_rt_status want,
                          const char *what) {
    EXPECT_EQ(guardedDecode(t, cap), want) << what;
  };
  auto t = s;
  t[143] |= 31; // context 0's k: 31 > 24
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "k above 24");
  t = s;
  size_t idx = s.size() - 6;    // the outlier's index, then its value
  t.insert(t.begin() + idx, 0); // a trailing code byte
  t[128] += 1;
  t[112] += 1;
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "trailing byte");
  t = s;
  t.erase(t.begin() + idx - 1); // the last code byte
  t[128] -= 1;
  t[112] -= 1;
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "codes cut short");
  t = s;
  t[140] = 0; // no outlier: its index and value become code bytes
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "outlier count");
  // The header alone, with codes of all zeros: a unary part past 2^25.
  t = s;
  std::fill(t.begin() + 153, t.begin() + idx, 0);
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "all-zero codes");
}

// The same for a version 1 stream.
TEST(CodecRobustness, SpecificCorruptions) {
  auto s = sampleStreams().back();
  comet_rt_codec_info info;
  ASSERT_EQ(comet_rt_codec_get_info(s.data(), s.size(), &info), COMET_RT_SUCCESS);
  ASSERT_GT(info.num_outliers, 0u);
  size_t cap = info.decompressed_bytes;
  auto expectStatus = [&](std::vector<uint8_t> t, comet_rt_status want,
                          const char *what) {
    EXPECT_EQ(guardedDecode(t, cap), want) << what;
  };
  auto t = s;
  t[0] = 'X';
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "magic");
  ASSERT_EQ(info.version, 1u);
  t = s;
  t[4] = 3;
  expectStatus(t, COMET_RT_ERROR_UNSUPPORTED, "version");
  t = s;
  t[6] = 3;
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "codec");
  t = s;
  t[12] = 32;
  expectStatus(t, COMET_RT_ERROR_UNSUPPORTED, "block size");
  t = s;
  double badEb = -1;
  std::memcpy(&t[16], &badEb, 8);
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "eb");
  t = s;
  t[128] = 0x3F; // dense, width 63
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "width");
  // Outlier indices: the first index points past the end.
  t = s;
  size_t outIdx = s.size() - 12 * info.num_outliers;
  uint64_t big = 1000;
  std::memcpy(&t[outIdx], &big, 8);
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "outlier index");
  t = s;
  t[40] = 99; // dims[1] no longer matches the element count
  expectStatus(t, COMET_RT_ERROR_CORRUPT, "dims");
  expectStatus({}, COMET_RT_ERROR_TRUNCATED, "empty");
  EXPECT_EQ(comet_rt_codec_decompress(nullptr, 10, nullptr, 0),
            COMET_RT_ERROR_INVALID_ARGUMENT);
}

} // namespace
