//===- NpyTest.cpp - .npy/.npz readers and datasets from arrays -----------===//
//
// The valid inputs are the npy-parse fuzzer's seeds, written by numpy
// (test/fuzz-rt/make-npy-seeds.py); the broken ones are built here, by hand
// or by patching a seed at the offsets its format defines.
//
//===----------------------------------------------------------------------===//

#include "comet/runtime/data.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

using Bytes = std::vector<uint8_t>;

std::string seedPath(const std::string &name) {
  return std::string(COMET_NPY_SEED_DIR) + "/" + name;
}

Bytes readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return Bytes((std::istreambuf_iterator<char>(in)), {});
}

Bytes seed(const std::string &name) { return readFile(seedPath(name)); }

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/comet-npy-" + std::to_string(getpid()) + "-" +
         name;
}

std::string writeTemp(const std::string &name, const Bytes &b) {
  std::string path = tempPath(name);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size()));
  return path;
}

std::string lastError() { return comet_rt_last_error(); }

/// A .npy file with this header dict (padded as numpy pads it) and data.
Bytes npy(const std::string &dict, const Bytes &data = {}, int major = 1) {
  Bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(major), 0};
  size_t lenBytes = major == 1 ? 2 : 4;
  std::string h = dict;
  while ((8 + lenBytes + h.size() + 1) % 64)
    h += ' ';
  h += '\n';
  for (size_t i = 0; i < lenBytes; ++i)
    b.push_back(uint8_t(h.size() >> (8 * i)));
  b.insert(b.end(), h.begin(), h.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::string dict(const std::string &descr, const std::string &shape,
                 const std::string &fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran +
         ", 'shape': " + shape + ", }";
}

template <typename T> Bytes raw(std::initializer_list<T> v) {
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}

std::vector<float> toF32(const comet_rt_npy &a) {
  std::vector<float> v(size_t(a.num_elements));
  EXPECT_EQ(comet_rt_npy_to_f32(&a, v.data()), COMET_RT_SUCCESS) << lastError();
  return v;
}

std::vector<int64_t> toI64(const comet_rt_npy &a) {
  std::vector<int64_t> v(size_t(a.num_elements));
  EXPECT_EQ(comet_rt_npy_to_i64(&a, v.data()), COMET_RT_SUCCESS) << lastError();
  return v;
}

comet_rt_npy parseSeed(const Bytes &b) {
  comet_rt_npy a;
  EXPECT_EQ(comet_rt_npy_parse(b.data(), b.size(), &a), COMET_RT_SUCCESS)
      << lastError();
  return a;
}

std::vector<int64_t> dimsOf(const comet_rt_npy &a) {
  return std::vector<int64_t>(a.dims, a.dims + a.rank);
}

/// A ZIP archive of stored members, as numpy.savez writes it but without
/// ZIP64 records.
Bytes storedZip(const std::vector<std::pair<std::string, Bytes>> &members) {
  Bytes out, cd;
  auto put = [](Bytes &b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
      b.push_back(uint8_t(v >> (8 * i)));
  };
  for (const auto &[name, data] : members) {
    uint32_t crc = uint32_t(crc32(0, data.data(), uInt(data.size())));
    uint32_t offset = uint32_t(out.size());
    put(out, 0x04034b50, 4);
    put(out, 20, 2);
    put(out, 0, 2);
    put(out, 0, 2);
    put(out, 0, 4);
    put(out, crc, 4);
    put(out, data.size(), 4);
    put(out, data.size(), 4);
    put(out, name.size(), 2);
    put(out, 0, 2);
    out.insert(out.end(), name.begin(), name.end());
    out.insert(out.end(), data.begin(), data.end());
    put(cd, 0x02014b50, 4);
    put(cd, 20, 2);
    put(cd, 20, 2);
    put(cd, 0, 2);
    put(cd, 0, 2);
    put(cd, 0, 4);
    put(cd, crc, 4);
    put(cd, data.size(), 4);
    put(cd, data.size(), 4);
    put(cd, name.size(), 2);
    put(cd, 0, 2);
    put(cd, 0, 2);
    put(cd, 0, 2);
    put(cd, 0, 2);
    put(cd, 0, 4);
    put(cd, offset, 4);
    cd.insert(cd.end(), name.begin(), name.end());
  }
  uint32_t cdOffset = uint32_t(out.size());
  out.insert(out.end(), cd.begin(), cd.end());
  put(out, 0x06054b50, 4);
  put(out, 0, 4);
  put(out, members.size(), 2);
  put(out, members.size(), 2);
  put(out, cd.size(), 4);
  put(out, cdOffset, 4);
  put(out, 0, 2);
  return out;
}

/// The offset of the n-th (0-based) occurrence of a 4-byte signature.
size_t findSig(const Bytes &b, uint32_t sig, int n = 0) {
  for (size_t i = 0; i + 4 <= b.size(); ++i) {
    uint32_t v = uint32_t(b[i]) | uint32_t(b[i + 1]) << 8 |
                 uint32_t(b[i + 2]) << 16 | uint32_t(b[i + 3]) << 24;
    if (v == sig && n-- == 0)
      return i;
  }
  ADD_FAILURE() << "signature not found";
  return 0;
}

void put32(Bytes &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + i] = uint8_t(v >> (8 * i));
}
void put16(Bytes &b, size_t at, uint16_t v) {
  b[at] = uint8_t(v);
  b[at + 1] = uint8_t(v >> 8);
}

constexpr uint32_t kLocal = 0x04034b50, kCentral = 0x02014b50,
                   kEnd = 0x06054b50;

/// comet_rt_npz_open then comet_rt_npz_read(key): the first failure's
/// status, or success.
int32_t openAndRead(const Bytes &b, const char *key,
                    comet_rt_npy *out = nullptr) {
  comet_rt_npz *z = nullptr;
  int32_t s = comet_rt_npz_open(b.data(), b.size(), &z);
  if (s != COMET_RT_SUCCESS) {
    EXPECT_EQ(z, nullptr);
    return s;
  }
  comet_rt_npy a;
  s = comet_rt_npz_read(z, key, out ? out : &a);
  comet_rt_npz_free(z);
  return s;
}

#define EXPECT_ERROR(expr, code, text)                                         \
  do {                                                                         \
    EXPECT_EQ((expr), (code)) << lastError();                                  \
    EXPECT_NE(lastError().find(text), std::string::npos)                       \
        << "message: " << lastError();                                         \
  } while (0)

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

TEST(Npy, ReadsEveryFormatVersion) {
  const std::vector<float> want = {-1, -0.5f, 0, 0.5f, 1, 1.5f};
  for (int v = 1; v <= 3; ++v) {
    Bytes b = seed("f32-v" + std::to_string(v) + ".npy");
    comet_rt_npy a = parseSeed(b);
    EXPECT_EQ(a.major, v);
    EXPECT_EQ(a.minor, 0);
    EXPECT_EQ(a.type, COMET_RT_NPY_F32);
    EXPECT_EQ(a.elem_bytes, 4u);
    EXPECT_EQ(dimsOf(a), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(a.num_elements, 6);
    EXPECT_EQ(a.data, b.data() + b.size() - 24);
    EXPECT_EQ(toF32(a), want);
  }
  EXPECT_STREQ(comet_rt_npy_type_name(COMET_RT_NPY_F32), "float32");
  EXPECT_STREQ(comet_rt_npy_type_name(0), "?");
}

TEST(Npy, ConvertsEachTypeAsDocumented) {
  // float64 rounds to nearest.
  comet_rt_npy a;
  Bytes f64 = seed("f64.npy");
  a = parseSeed(f64);
  EXPECT_EQ(a.type, COMET_RT_NPY_F64);
  EXPECT_EQ(toF32(a), (std::vector<float>{1.5f, -2.25f, float(1e-3), 3e38f}));
  // float16 exactly, subnormals and specials included.
  Bytes f16 = seed("f16.npy");
  a = parseSeed(f16);
  std::vector<float> h = toF32(a);
  ASSERT_EQ(h.size(), 8u);
  EXPECT_EQ(h[0], 0.0f);
  EXPECT_EQ(h[1], 1.0f);
  EXPECT_EQ(h[2], -2.0f);
  EXPECT_EQ(h[3], 65504.0f);
  EXPECT_EQ(h[4], std::ldexp(1.0f, -24));
  EXPECT_EQ(h[5], std::numeric_limits<float>::infinity());
  EXPECT_EQ(h[6], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(h[7]));
  // uint8 as 0..255, not scaled; and as int64.
  Bytes u8 = seed("u8.npy");
  a = parseSeed(u8);
  EXPECT_EQ(dimsOf(a), (std::vector<int64_t>{2, 1, 2, 2}));
  EXPECT_EQ(toF32(a), (std::vector<float>{0, 32, 64, 96, 128, 160, 192, 224}));
  EXPECT_EQ(toI64(a),
            (std::vector<int64_t>{0, 32, 64, 96, 128, 160, 192, 224}));
  // The integer types to int64.
  Bytes i64 = seed("i64.npy");
  a = parseSeed(i64);
  EXPECT_EQ(toI64(a), (std::vector<int64_t>{0, 1, 2, -3, int64_t(1) << 40,
                                            -(int64_t(1) << 62)}));
  std::vector<float> sink(6);
  EXPECT_ERROR(comet_rt_npy_to_f32(&a, sink.data()), COMET_RT_ERROR_UNSUPPORTED,
               "int64 is not converted to float32");
  Bytes i32 = seed("i32.npy");
  a = parseSeed(i32);
  EXPECT_EQ(toI64(a), (std::vector<int64_t>{7, -8, 2147483647}));
  a = parseSeed(f64);
  std::vector<int64_t> isink(4);
  EXPECT_ERROR(comet_rt_npy_to_i64(&a, isink.data()),
               COMET_RT_ERROR_UNSUPPORTED, "float64 is not converted to int64");
  // A scalar, an empty array, rank 5.
  Bytes scalar = seed("scalar.npy");
  a = parseSeed(scalar);
  EXPECT_EQ(a.rank, 0u);
  EXPECT_EQ(a.num_elements, 1);
  EXPECT_EQ(toF32(a), std::vector<float>{3.5f});
  Bytes empty = seed("empty.npy");
  a = parseSeed(empty);
  EXPECT_EQ(dimsOf(a), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(a.num_elements, 0);
  EXPECT_EQ(comet_rt_npy_to_f32(&a, nullptr), COMET_RT_SUCCESS);
  Bytes rank5 = seed("rank5.npy");
  a = parseSeed(rank5);
  EXPECT_EQ(a.rank, 5u);
  std::vector<int64_t> r5 = toI64(a);
  for (int64_t i = 0; i < 32; ++i)
    EXPECT_EQ(r5[size_t(i)], i);
}

TEST(Npy, TransposesFortranOrderAndSwapsBigEndian) {
  Bytes f = seed("f32-fortran.npy");
  comet_rt_npy a = parseSeed(f);
  EXPECT_TRUE(a.fortran_order);
  EXPECT_EQ(dimsOf(a), (std::vector<int64_t>{2, 3, 4}));
  std::vector<float> v = toF32(a);
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(v[size_t(i)], float(i)) << i;
  Bytes be = seed("f32-big-endian.npy");
  a = parseSeed(be);
  EXPECT_TRUE(a.big_endian);
  EXPECT_EQ(toF32(a), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  Bytes bf = seed("i64-big-endian-fortran.npy");
  a = parseSeed(bf);
  EXPECT_TRUE(a.big_endian && a.fortran_order);
  EXPECT_EQ(toI64(a), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  // Hand-written: a 2x3 Fortran array stores its columns one after another.
  Bytes hand =
      npy(dict("<i4", "(2, 3)", "True"), raw<int32_t>({1, 4, 2, 5, 3, 6}));
  a = parseSeed(hand);
  EXPECT_EQ(toI64(a), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(Npy, RefusesWhatItDoesNotRead) {
  comet_rt_npy a;
  Bytes b = seed("object.npy");
  EXPECT_ERROR(comet_rt_npy_parse(b.data(), b.size(), &a),
               COMET_RT_ERROR_UNSUPPORTED, "object array");
  b = seed("structured.npy");
  EXPECT_ERROR(comet_rt_npy_parse(b.data(), b.size(), &a),
               COMET_RT_ERROR_UNSUPPORTED,
               "structured arrays are not supported");
  b = seed("int16.npy");
  EXPECT_ERROR(comet_rt_npy_parse(b.data(), b.size(), &a),
               COMET_RT_ERROR_UNSUPPORTED,
               "dtype '<i2' is not supported: float32, float64, float16, "
               "uint8, int32 or int64");
  b = seed("unicode.npy");
  EXPECT_ERROR(comet_rt_npy_parse(b.data(), b.size(), &a),
               COMET_RT_ERROR_UNSUPPORTED, "dtype '<U2' is not supported");
}

TEST(Npy, HeaderIsParsedStrictly) {
  Bytes six = raw<float>({1, 2, 3, 4, 5, 6});
  struct Case {
    std::string header;
    int32_t code;
    const char *message;
  };
  const int32_t C = COMET_RT_ERROR_CORRUPT, U = COMET_RT_ERROR_UNSUPPORTED;
  std::vector<Case> cases = {
      {"{'descr': '<f4', 'fortran_order': False, }", C,
       "the header lacks 'shape'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': "
       "(6,)}",
       C, "'descr' twice"},
      {dict("<f4", "(6,)") + "x", C, "unexpected text after the dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'foo': 1}", C,
       "unexpected key 'foo' (the header holds exactly descr, fortran_order "
       "and shape)"},
      {dict("<f4", "(6)"), C,
       "'shape' (n) is not a tuple: a 1-d shape is (n,)"},
      {dict("<f4", "[6]"), C, "'shape' must be a tuple"},
      {dict("<f4", "(-6,)"), C, "a negative dim in 'shape'"},
      {dict("<f4", "(06,)"), C, "a dim with a leading zero"},
      {dict("<f4", "(2 3)"), C, "expected ',' or ')' in 'shape'"},
      {dict("<f4", "(6,)", "'no'"), C, "'fortran_order' must be True or False"},
      {dict("<f4", "(6,)", "Truely"), C,
       "'fortran_order' must be True or False"},
      {dict("|f4", "(6,)"), C, "descr '|f4' gives no byte order"},
      {dict("=f4", "(6,)"), C, "descr '=f4' gives no byte order"},
      {dict("f4", "(6,)"), C,
       "descr 'f4' is not a byte order, a kind and a size"},
      {dict("|O", "(6,)"), U, "object array"},
      {dict("<c8", "(6,)"), U, "dtype '<c8' is not supported"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,)}", U,
       "structured arrays are not supported"},
      {"'descr': '<f4'", C, "the header is not a dict"},
      {"{'descr' '<f4'}", C, "expected ':' after 'descr'"},
      {"{'descr: '<f4'}", C, "expected ':' after 'descr: '"},
      {"{descr: '<f4'}", C, "expected a quoted key or '}' at header byte 1"},
      {"{'descr': '<f4' 'x'}", C, "expected ',' or '}'"},
      {dict("<f4", "(99999999999999999999,)"), C, "a dim beyond int64"},
      {dict("<f4", "(4294967296, 4294967296)"), C,
       "the shape's element count overflows int64"},
      {dict("<f4", "(2147483648, 2147483648)"), C,
       "4611686018427387904 elements of 4 bytes overflow 64 bits"},
  };
  std::string ones = "(";
  for (int i = 0; i < 65; ++i)
    ones += "1, ";
  cases.push_back(
      {dict("<f4", ones + ")"), C, "'shape' has more than 64 dims"});
  for (const Case &c : cases) {
    Bytes b = npy(c.header, six);
    comet_rt_npy a;
    EXPECT_EQ(comet_rt_npy_parse(b.data(), b.size(), &a), c.code) << c.header;
    EXPECT_NE(lastError().find(c.message), std::string::npos)
        << c.header << " gave: " << lastError();
    EXPECT_EQ(lastError().rfind("npy: ", 0), 0u) << lastError();
  }
  // What Python's literal syntax allows is read: keys in any order, double
  // quotes, no trailing comma, spaces anywhere, version 2.0.
  for (const std::string &ok :
       {std::string("{\"shape\": (2, 3,), \"fortran_order\": False, "
                    "\"descr\": \"<f4\"}"),
        std::string("{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' "
                    ": ( 2 , 3 ) }")}) {
    for (int major : {1, 2}) {
      Bytes b = npy(ok, six, major);
      comet_rt_npy a;
      ASSERT_EQ(comet_rt_npy_parse(b.data(), b.size(), &a), COMET_RT_SUCCESS)
          << ok << ": " << lastError();
      EXPECT_EQ(dimsOf(a), (std::vector<int64_t>{2, 3}));
    }
  }
}

TEST(Npy, FileLevelErrors) {
  comet_rt_npy a;
  Bytes good = seed("f32-v1.npy");
  Bytes bad = good;
  bad[1] = 'X';
  EXPECT_ERROR(comet_rt_npy_parse(bad.data(), bad.size(), &a),
               COMET_RT_ERROR_CORRUPT, "bad magic");
  bad = good;
  bad[6] = 4;
  EXPECT_ERROR(comet_rt_npy_parse(bad.data(), bad.size(), &a),
               COMET_RT_ERROR_UNSUPPORTED,
               "format version 4.0 (1.0, 2.0 and 3.0 are read)");
  bad = good;
  bad[7] = 1;
  EXPECT_ERROR(comet_rt_npy_parse(bad.data(), bad.size(), &a),
               COMET_RT_ERROR_UNSUPPORTED, "format version 1.1");
  bad = good;
  bad.push_back(0);
  EXPECT_ERROR(comet_rt_npy_parse(bad.data(), bad.size(), &a),
               COMET_RT_ERROR_CORRUPT, "1 trailing bytes after the data");
  bad = good;
  bad[8] = 0xFF;
  bad[9] = 0xFF;
  EXPECT_ERROR(comet_rt_npy_parse(bad.data(), bad.size(), &a),
               COMET_RT_ERROR_TRUNCATED,
               "the header says 65535 bytes, the file has 142 after the "
               "length");
  EXPECT_ERROR(comet_rt_npy_parse(good.data(), good.size() - 1, &a),
               COMET_RT_ERROR_TRUNCATED,
               "truncated: the header says 6 elements of 4 bytes (24 bytes), "
               "the file has 23");
  EXPECT_EQ(comet_rt_npy_parse(nullptr, 1, &a),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  // Cut at every byte, each version: always TRUNCATED.
  for (int v = 1; v <= 3; ++v) {
    Bytes b = seed("f32-v" + std::to_string(v) + ".npy");
    for (size_t cut = 0; cut < b.size(); ++cut) {
      Bytes part(b.begin(), b.begin() + ptrdiff_t(cut));
      ASSERT_EQ(comet_rt_npy_parse(part.data(), part.size(), &a),
                COMET_RT_ERROR_TRUNCATED)
          << "v" << v << " cut at " << cut << ": " << lastError();
    }
  }
}

TEST(Npy, Float64BeyondFloat32IsAnError) {
  Bytes b = npy(dict("<f8", "(3,)"), raw<double>({1.0, -1e39, 2.0}));
  comet_rt_npy a = parseSeed(b);
  std::vector<float> v(3);
  EXPECT_ERROR(comet_rt_npy_to_f32(&a, v.data()),
               COMET_RT_ERROR_INVALID_ARGUMENT,
               "float64 element 1 (-1e+39) is beyond float32's range");
  // The largest double that rounds to FLT_MAX is not an error.
  b = npy(dict("<f8", "(1,)"), raw<double>({3.4028235e38}));
  a = parseSeed(b);
  EXPECT_EQ(toF32(a), std::vector<float>{std::numeric_limits<float>::max()});
}

//===----------------------------------------------------------------------===//
// .npz
//===----------------------------------------------------------------------===//

TEST(Npz, ReadsWhatNumpyWrites) {
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i)
    x[size_t(i)] = float(i) / 10.0f;
  // savez (stored), savez_compressed (deflated), savez to a stream (data
  // descriptors), and ZIP64 central directory and end records.
  for (const char *name :
       {"savez.npz", "savez-compressed.npz", "stream.npz", "zip64.npz"}) {
    SCOPED_TRACE(name);
    Bytes b = seed(name);
    comet_rt_npz *z = nullptr;
    ASSERT_EQ(comet_rt_npz_open(b.data(), b.size(), &z), COMET_RT_SUCCESS)
        << lastError();
    ASSERT_EQ(comet_rt_npz_num_members(z), 2);
    EXPECT_STREQ(comet_rt_npz_member_name(z, 0), "x.npy");
    EXPECT_STREQ(comet_rt_npz_member_name(z, 1), "y.npy");
    EXPECT_EQ(comet_rt_npz_member_name(z, 2), nullptr);
    comet_rt_npy a;
    ASSERT_EQ(comet_rt_npz_read(z, "x", &a), COMET_RT_SUCCESS) << lastError();
    EXPECT_EQ(dimsOf(a), (std::vector<int64_t>{4, 1, 2, 2}));
    EXPECT_EQ(toF32(a), x);
    ASSERT_EQ(comet_rt_npz_read(z, "y.npy", &a), COMET_RT_SUCCESS)
        << lastError();
    EXPECT_EQ(toI64(a), (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_ERROR(comet_rt_npz_read(z, "z", &a), COMET_RT_ERROR_INVALID_ARGUMENT,
                 "no member 'z.npy' (the archive holds x.npy, y.npy)");
    comet_rt_npz_free(z);
  }
  Bytes b = seed("u8-fortran-i32.npz");
  comet_rt_npy a;
  ASSERT_EQ(openAndRead(b, "x", &a), COMET_RT_SUCCESS);
  EXPECT_EQ(a.type, COMET_RT_NPY_U8);
  // The members point into memory the handle owns: read them before freeing.
  comet_rt_npz *z = nullptr;
  ASSERT_EQ(comet_rt_npz_open(b.data(), b.size(), &z), COMET_RT_SUCCESS);
  ASSERT_EQ(comet_rt_npz_read(z, "x", &a), COMET_RT_SUCCESS);
  EXPECT_TRUE(a.fortran_order);
  std::vector<float> u = toF32(a);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(u[size_t(i)], float(i));
  ASSERT_EQ(comet_rt_npz_read(z, "y", &a), COMET_RT_SUCCESS);
  EXPECT_EQ(toI64(a), (std::vector<int64_t>{1, 0, 1}));
  comet_rt_npz_free(z);
  // An archive with no members.
  Bytes none = storedZip({});
  ASSERT_EQ(comet_rt_npz_open(none.data(), none.size(), &z), COMET_RT_SUCCESS)
      << lastError();
  EXPECT_ERROR(comet_rt_npz_read(z, "x", &a), COMET_RT_ERROR_INVALID_ARGUMENT,
               "(the archive holds none)");
  comet_rt_npz_free(z);
}

TEST(Npz, EveryTruncationIsAnError) {
  for (const char *name : {"savez.npz", "savez-compressed.npz", "zip64.npz"}) {
    Bytes b = seed(name);
    for (size_t cut = 0; cut < b.size(); ++cut) {
      Bytes part(b.begin(), b.begin() + ptrdiff_t(cut));
      comet_rt_npz *z = nullptr;
      ASSERT_NE(comet_rt_npz_open(part.data(), part.size(), &z),
                COMET_RT_SUCCESS)
          << name << " cut at " << cut;
      ASSERT_EQ(z, nullptr);
    }
    // The start of an archive: reported as truncated.
    Bytes head(b.begin(), b.begin() + 100);
    comet_rt_npz *z = nullptr;
    EXPECT_ERROR(comet_rt_npz_open(head.data(), head.size(), &z),
                 COMET_RT_ERROR_TRUNCATED, "truncated ZIP archive");
  }
  comet_rt_npz *z = nullptr;
  Bytes notZip = seed("f32-v1.npy");
  EXPECT_ERROR(comet_rt_npz_open(notZip.data(), notZip.size(), &z),
               COMET_RT_ERROR_CORRUPT, "not a ZIP archive");
}

TEST(Npz, CorruptArchivesAreErrors) {
  const Bytes stored = seed("savez.npz"),
              deflated = seed("savez-compressed.npz");
  const int32_t C = COMET_RT_ERROR_CORRUPT, U = COMET_RT_ERROR_UNSUPPORTED;
  size_t cd = findSig(stored, kCentral), end = findSig(stored, kEnd);
  size_t cdZ = findSig(deflated, kCentral);
  Bytes b;

  // A changed byte of a stored member's data: its CRC-32 no longer fits.
  b = stored;
  b[findSig(b, kCentral) - 1] ^= 1; // the last byte of y.npy's data
  EXPECT_ERROR(openAndRead(b, "y"), C, "member 'y.npy': CRC-32 mismatch");
  // Of a deflated one: the stream breaks or the CRC-32 does not fit.
  b = deflated;
  b[findSig(b, kLocal) + 30 + 5 + 20 + 10] ^= 0x55;
  EXPECT_NE(openAndRead(b, "x"), COMET_RT_SUCCESS);
  EXPECT_NE(lastError().find("member 'x.npy'"), std::string::npos)
      << lastError();
  b = stored;
  put16(b, cd + 10, 12);
  EXPECT_ERROR(
      openAndRead(b, "x"), U,
      "member 'x.npy' uses compression method 12; stored (0, "
      "numpy.savez) and deflated (8, numpy.savez_compressed) are read");
  b = stored;
  put16(b, cd + 8, 1);
  EXPECT_ERROR(openAndRead(b, "x"), U, "member 'x.npy' is encrypted");
  b = stored;
  b[findSig(b, kLocal) + 30] = 'z';
  EXPECT_ERROR(openAndRead(b, "x"), C,
               "member 'x.npy': its local header names another file");
  b = stored;
  b[cd + 46] = 'y';
  b[findSig(b, kLocal) + 30] = 'y';
  EXPECT_ERROR(openAndRead(b, "y"), C, "two members named 'y.npy'");
  b = stored;
  put32(b, end + 16, uint32_t(stored.size()));
  EXPECT_ERROR(openAndRead(b, "x"), C, "runs past its end record");
  b = stored;
  put16(b, end + 8, 1000);
  put16(b, end + 10, 1000);
  EXPECT_ERROR(openAndRead(b, "x"), C,
               "1000 entries do not fit in a central directory of");
  b = stored;
  put16(b, end + 8, 1);
  put16(b, end + 10, 1);
  EXPECT_ERROR(openAndRead(b, "x"), C,
               "bytes left in the central directory after its 1 entries");
  b = stored;
  put16(b, end + 4, 1);
  EXPECT_ERROR(openAndRead(b, "x"), U, "multi-disk ZIP archives");
  b = stored;
  put32(b, end + 16, 0xFFFFFFFF);
  EXPECT_ERROR(openAndRead(b, "x"), C,
               "the end record defers to a ZIP64 record that is not there");
  b = stored;
  put32(b, cd + 42, 7);
  EXPECT_ERROR(openAndRead(b, "x"), C,
               "member 'x.npy': no local header at offset 7");
  b = stored;
  put32(b, cd + 20, 100000);
  EXPECT_ERROR(openAndRead(b, "x"), C, "has 100000 bytes but claims");
  b = stored;
  put32(b, cd + 20, 100000);
  put32(b, cd + 24, 100000);
  EXPECT_ERROR(openAndRead(b, "x"), C, "run into the central directory");
  // A deflated member that claims more than deflate can give, fewer bytes
  // than it inflates to, or more.
  b = deflated;
  put32(b, cdZ + 24, 0x7FFFFFFF);
  EXPECT_ERROR(openAndRead(b, "x"), C, "more than deflate can expand");
  uint32_t size = uint32_t(deflated[cdZ + 24]) | deflated[cdZ + 25] << 8;
  b = deflated;
  put32(b, cdZ + 24, size + 1);
  EXPECT_ERROR(openAndRead(b, "x"), C,
               "member 'x.npy' inflates to " + std::to_string(size) +
                   " bytes, its header says " + std::to_string(size + 1));
  b = deflated;
  put32(b, cdZ + 24, size - 1);
  EXPECT_ERROR(openAndRead(b, "x"), C, "inflates to more than the");
  b = deflated;
  put32(b, cdZ + 20, 10);
  EXPECT_ERROR(openAndRead(b, "x"), COMET_RT_ERROR_TRUNCATED,
               "member 'x.npy': the deflate stream is cut short");
  // ZIP64: a saturated size whose extra field is gone.
  Bytes z64 = seed("zip64.npz");
  size_t cd64 = findSig(z64, kCentral);
  put16(z64, cd64 + 46 + 5, 0x9999);
  EXPECT_ERROR(openAndRead(z64, "x"), C,
               "a size or offset of 0xFFFFFFFF without a ZIP64 extra field");
  z64 = seed("zip64.npz");
  put16(z64, cd64 + 46 + 5 + 2, 8);
  put16(z64, cd64 + 30, 12); // the field holds 8 bytes of the 24 it needs
  EXPECT_NE(openAndRead(z64, "x"), COMET_RT_SUCCESS);
  // A member that is no .npy: the npy error, named.
  Bytes bad = storedZip({{"x.npy", {1, 2, 3}}});
  EXPECT_ERROR(openAndRead(bad, "x"), C, "npz: member 'x.npy': npy: bad magic");
}

//===----------------------------------------------------------------------===//
// Datasets from arrays
//===----------------------------------------------------------------------===//

TEST(ArrayDataset, FromNpzFilesAndSlices) {
  std::string npz = writeTemp("savez.npz", seed("savez.npz"));
  comet_rt_dataset *ds = nullptr;
  ASSERT_EQ(comet_rt_dataset_open_arrays(npz.c_str(), nullptr, nullptr, nullptr,
                                         0, 10, 0, &ds),
            COMET_RT_SUCCESS)
      << lastError();
  EXPECT_EQ(comet_rt_dataset_size(ds), 4);
  EXPECT_EQ(comet_rt_dataset_is_tokens(ds), 0);
  EXPECT_EQ(comet_rt_dataset_labels_per_sample(ds), 1);
  ASSERT_EQ(comet_rt_dataset_sample_rank(ds), 3);
  int64_t dims[COMET_RT_NPY_MAX_RANK];
  comet_rt_dataset_sample_dims(ds, dims);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + 3),
            (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(std::string(comet_rt_dataset_description(ds)),
            npz + "[x] (float32 4x1x2x2) and " + npz + "[y] (int64 4)");
  float sample[4];
  int64_t label = -1;
  ASSERT_EQ(comet_rt_dataset_get(ds, 2, sample, &label), COMET_RT_SUCCESS);
  EXPECT_EQ(label, 2);
  EXPECT_EQ(sample[0], 8 / 10.0f);
  EXPECT_EQ(sample[3], 11 / 10.0f);

  // A slice shares the storage and outlives its parent.
  comet_rt_dataset *tail = nullptr;
  EXPECT_ERROR(comet_rt_dataset_slice(ds, 2, 3, &tail),
               COMET_RT_ERROR_INVALID_ARGUMENT,
               "3 samples from 2 are not within the dataset's 4");
  ASSERT_EQ(comet_rt_dataset_slice(ds, 1, 3, &tail), COMET_RT_SUCCESS);
  comet_rt_dataset_free(ds);
  EXPECT_EQ(comet_rt_dataset_size(tail), 3);
  ASSERT_EQ(comet_rt_dataset_get(tail, 1, sample, &label), COMET_RT_SUCCESS);
  EXPECT_EQ(label, 2);
  EXPECT_EQ(sample[0], 8 / 10.0f);
  EXPECT_EQ(comet_rt_dataset_get(tail, 3, sample, &label),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  // The loader's order depends on the count and the seed only: the same as
  // for a synthetic dataset of 3.
  comet_rt_dataset *syn = nullptr;
  ASSERT_EQ(comet_rt_dataset_synthetic(3, 1, 2, 2, 10, 0, &syn),
            COMET_RT_SUCCESS);
  comet_rt_loader *la = nullptr, *lb = nullptr;
  ASSERT_EQ(comet_rt_loader_create(tail, 2, 1, 42, 0, &la), COMET_RT_SUCCESS);
  ASSERT_EQ(comet_rt_loader_create(syn, 2, 1, 42, 0, &lb), COMET_RT_SUCCESS);
  for (int64_t ep = 0; ep < 3; ++ep) {
    comet_rt_loader_start_epoch(la, ep);
    comet_rt_loader_start_epoch(lb, ep);
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_EQ(comet_rt_loader_order(la, i), comet_rt_loader_order(lb, i));
  }
  float batch[8];
  int64_t labels[2];
  comet_rt_loader_start_epoch(la, 0);
  ASSERT_EQ(comet_rt_loader_next(la, batch, labels), 2);
  EXPECT_EQ(labels[0], 1 + comet_rt_loader_order(la, 0));
  EXPECT_EQ(labels[1], 1 + comet_rt_loader_order(la, 1));
  comet_rt_loader_free(la);
  comet_rt_loader_free(lb);
  comet_rt_dataset_free(syn);
  comet_rt_dataset_free(tail);
}

TEST(ArrayDataset, TokensWithALabelPerPosition) {
  std::string npz = writeTemp("tokens.npz", seed("tokens.npz"));
  comet_rt_dataset *ds = nullptr;
  ASSERT_EQ(comet_rt_dataset_open_arrays(npz.c_str(), nullptr, nullptr, nullptr,
                                         1, 50, 50, &ds),
            COMET_RT_SUCCESS)
      << lastError();
  EXPECT_EQ(comet_rt_dataset_is_tokens(ds), 1);
  EXPECT_EQ(comet_rt_dataset_labels_per_sample(ds), 8);
  int64_t shape[3];
  comet_rt_dataset_sample_shape(ds, shape);
  EXPECT_EQ(std::vector<int64_t>(shape, shape + 3),
            (std::vector<int64_t>{1, 1, 8}));
  comet_rt_loader *ld = nullptr;
  ASSERT_EQ(comet_rt_loader_create(ds, 3, 0, 0, 1, &ld), COMET_RT_SUCCESS);
  int64_t ids[24], labels[24];
  float f[24];
  EXPECT_EQ(comet_rt_loader_next(ld, f, labels), 0);
  ASSERT_EQ(comet_rt_loader_next_tokens(ld, ids, labels), 3);
  for (int64_t i = 0; i < 24; ++i) {
    EXPECT_EQ(ids[i], i * 7 % 50);
    EXPECT_EQ(labels[i], (i * 7 % 50 + 1) % 50);
  }
  comet_rt_loader_free(ld);
  comet_rt_dataset_free(ds);
  // An id the model's table does not have.
  EXPECT_ERROR(comet_rt_dataset_open_arrays(npz.c_str(), nullptr, nullptr,
                                            nullptr, 1, 0, 42, &ds),
               COMET_RT_ERROR_INVALID_ARGUMENT,
               npz + "[x]: token id 42 at sample 0, position 6 is not in [0, "
                     "42)");
  EXPECT_ERROR(comet_rt_dataset_open_arrays(npz.c_str(), nullptr, nullptr,
                                            nullptr, 1, 45, 0, &ds),
               COMET_RT_ERROR_INVALID_ARGUMENT,
               npz + "[y]: label 49 at sample 1, position 6 is not in [0, 45)");
  EXPECT_EQ(ds, nullptr);
}

TEST(ArrayDataset, ErrorsNameTheFileAndWhatIsWrong) {
  comet_rt_dataset *ds = nullptr;
  std::string x = writeTemp("x.npy", seed("u8.npy"));    // 2x1x2x2 uint8
  std::string y3 = writeTemp("y3.npy", seed("i32.npy")); // 3 labels
  std::string y =
      writeTemp("y.npy", npy(dict("<i8", "(2,)"), raw<int64_t>({1, 0})));
  std::string npz = writeTemp("d.npz", seed("savez.npz"));
  ASSERT_EQ(comet_rt_dataset_open_arrays(x.c_str(), nullptr, y.c_str(), nullptr,
                                         0, 2, 0, &ds),
            COMET_RT_SUCCESS)
      << lastError();
  float img[4];
  int64_t label;
  ASSERT_EQ(comet_rt_dataset_get(ds, 1, img, &label), COMET_RT_SUCCESS);
  EXPECT_EQ(img[3], 224.0f); // uint8 is not scaled
  EXPECT_EQ(label, 0);
  comet_rt_dataset_free(ds);
  ds = nullptr;
  struct Case {
    std::string data, dataKey, labels, labelsKey;
    int32_t tokens;
    int64_t classes;
    int32_t code;
    std::string message;
  };
  const int32_t I = COMET_RT_ERROR_INVALID_ARGUMENT,
                U = COMET_RT_ERROR_UNSUPPORTED;
  std::string f16 = writeTemp("f16.npy", seed("f16.npy"));
  std::string f16y =
      writeTemp("f16y.npy", npy(dict("<i8", "(8,)"),
                                raw<int64_t>({0, 0, 0, 0, 0, 0, 0, 0})));
  std::string scalar = writeTemp("scalar.npy", seed("scalar.npy"));
  std::string empty = writeTemp("empty.npy", seed("empty.npy"));
  std::string f32 = writeTemp("f32.npy", seed("f32-v1.npy"));
  std::string i64 = writeTemp("i64.npy", seed("i64.npy"));
  std::string yLabels = writeTemp("y2.npy", npy(dict("<i8", "(2, 0)"), {}));
  std::string text = writeTemp("text.npy", {'h', 'e', 'l', 'l', 'o', '!'});
  std::vector<Case> cases = {
      {x, "", y3, "", 0, 0, I,
       x + " has 2 samples but " + y3 + " has 3 (shape 3)"},
      {x, "", y, "", 0, 1, I, y + ": label 1 at sample 0 is not in [0, 1)"},
      {x, "", "", "", 0, 0, I,
       x + " is an .npy file, which holds one array: the labels need a file "
           "of their own"},
      {x, "x", y, "", 0, 0, I,
       x + " is an .npy file, not an .npz archive: it has no member 'x'"},
      {npz, "images", "", "", 0, 0, I,
       npz + ": no member 'images.npy' (the archive holds x.npy, y.npy)"},
      {npz, "", "", "", 1, 0, U,
       npz + "[x] holds float32; token ids are read from int64, int32 or "
             "uint8 arrays"},
      {i64, "", y, "", 0, 0, U,
       i64 + " holds int64; float32 samples are read from float32, float64, "
             "float16 or uint8 arrays (cast with astype(numpy.float32))"},
      {x, "", f32, "", 0, 0, U,
       f32 + " holds float32; labels are read from int64, int32 or uint8 "
             "arrays"},
      {f16, "", f16y, "", 0, 0, I,
       f16 + ": element 0 of sample 5 is infinite; the samples must be finite"},
      {scalar, "", y, "", 0, 0, I, scalar + ": a scalar holds no samples"},
      {empty, "", y, "", 0, 0, I, empty + ": shape 0x3 holds no samples"},
      {x, "", yLabels, "", 0, 0, I,
       yLabels + ": shape 2x0 holds no labels per sample"},
      {text, "", y, "", 0, 0, COMET_RT_ERROR_CORRUPT,
       text + ": neither an .npy file (which starts with \\x93NUMPY) nor an "
              ".npz archive (a ZIP file)"},
      {tempPath("missing.npy"), "", y, "", 0, 0, COMET_RT_ERROR_IO,
       "cannot open " + tempPath("missing.npy") + ": No such file"},
      {::testing::TempDir(), "", y, "", 0, 0, COMET_RT_ERROR_IO,
       "is not a regular file"},
  };
  for (const Case &c : cases) {
    int32_t s = comet_rt_dataset_open_arrays(
        c.data.c_str(), c.dataKey.empty() ? nullptr : c.dataKey.c_str(),
        c.labels.empty() ? nullptr : c.labels.c_str(),
        c.labelsKey.empty() ? nullptr : c.labelsKey.c_str(), c.tokens,
        c.classes, 0, &ds);
    EXPECT_EQ(s, c.code) << c.message << "\ngave: " << lastError();
    EXPECT_NE(lastError().find(c.message), std::string::npos)
        << "expected: " << c.message << "\ngave: " << lastError();
    EXPECT_EQ(ds, nullptr);
  }
  // A NaN: the element and sample it is in.
  std::string nan = writeTemp(
      "nan.npy", npy(dict("<f4", "(2, 2)"), raw<float>({0, 1, 2, NAN})));
  EXPECT_ERROR(comet_rt_dataset_open_arrays(nan.c_str(), nullptr, y.c_str(),
                                            nullptr, 0, 0, 0, &ds),
               I, nan + ": element 1 of sample 1 is NaN");
  // A corrupt file: the parser's message, named.
  Bytes cut = seed("f32-v1.npy");
  cut.pop_back();
  std::string cutPath = writeTemp("cut.npy", cut);
  EXPECT_ERROR(comet_rt_dataset_open_arrays(cutPath.c_str(), nullptr, y.c_str(),
                                            nullptr, 0, 0, 0, &ds),
               COMET_RT_ERROR_TRUNCATED,
               cutPath + ": truncated: the header says 6 elements");
}

TEST(ArrayDataset, FromParsedArrays) {
  Bytes xb = seed("f32-fortran.npy"); // 2x3x4
  Bytes yb = npy(dict("<i4", "(2, 2)"), raw<int32_t>({0, 1, 2, 3}));
  comet_rt_npy x = parseSeed(xb), y = parseSeed(yb);
  comet_rt_dataset *ds = nullptr;
  ASSERT_EQ(comet_rt_dataset_from_npy(&x, &y, 0, 4, 0, &ds), COMET_RT_SUCCESS)
      << lastError();
  EXPECT_EQ(comet_rt_dataset_labels_per_sample(ds), 2);
  int64_t shape[3];
  comet_rt_dataset_sample_shape(ds, shape);
  EXPECT_EQ(std::vector<int64_t>(shape, shape + 3),
            (std::vector<int64_t>{1, 3, 4}));
  float s[12];
  int64_t l[2];
  ASSERT_EQ(comet_rt_dataset_get(ds, 1, s, l), COMET_RT_SUCCESS);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(s[i], float(12 + i));
  EXPECT_EQ(l[0], 2);
  EXPECT_EQ(l[1], 3);
  comet_rt_dataset_free(ds);
  EXPECT_ERROR(comet_rt_dataset_from_npy(&x, &y, 0, 3, 0, &ds),
               COMET_RT_ERROR_INVALID_ARGUMENT,
               "labels: label 3 at sample 1, position 1 is not in [0, 3)");
}

} // namespace
