//===- Npy.cpp - NumPy .npy and .npz readers ------------------------------===//
//
// .npy buffers (format 1.0, 2.0 and 3.0) and ZIP archives of them (.npz:
// numpy.savez stores its members, numpy.savez_compressed deflates them, and
// both write ZIP64 local headers), and the conversion of an array to C-order
// float32 or int64. The input is untrusted: every size and offset is checked
// against the buffer before it is used, and every product for overflow.
//
//===----------------------------------------------------------------------===//

#include "Errors.h"
#include "comet/runtime/data.h"

#include <zlib.h>

#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace comet::rt;

namespace {

uint16_t rd16(const uint8_t *p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t rd32(const uint8_t *p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) |
         (uint32_t(p[3]) << 24);
}
uint64_t rd64(const uint8_t *p) {
  return uint64_t(rd32(p)) | (uint64_t(rd32(p + 4)) << 32);
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

const char *typeName(int32_t type) {
  switch (type) {
  case COMET_RT_NPY_F16:
    return "float16";
  case COMET_RT_NPY_F32:
    return "float32";
  case COMET_RT_NPY_F64:
    return "float64";
  case COMET_RT_NPY_U8:
    return "uint8";
  case COMET_RT_NPY_I32:
    return "int32";
  case COMET_RT_NPY_I64:
    return "int64";
  }
  return "?";
}

/// The header's text, a Python dict literal as numpy writes it (and
/// ast.literal_eval reads it): {'descr': '<f4', 'fortran_order': False,
/// 'shape': (2, 3), } padded with spaces and a newline.
class HeaderParser {
public:
  HeaderParser(const char *p, const char *end) : begin(p), p(p), end(end) {}

  /// Set with an error about a valid header that COMET does not read.
  bool unsupported = false;

  /// Fills descr, fortranOrder and the dims; an error message, or "".
  std::string parse(std::string &descr, bool &fortranOrder,
                    std::vector<uint64_t> &dims) {
    bool seenDescr = false, seenFortran = false, seenShape = false;
    if (!eat('{'))
      return "the header is not a dict (it must start with '{')";
    while (!eat('}')) {
      std::string key;
      if (!string(key))
        return at("expected a quoted key or '}'");
      if (!eat(':'))
        return at("expected ':' after '" + key + "'");
      if (key == "descr") {
        if (seenDescr)
          return "the header has 'descr' twice";
        seenDescr = true;
        skipSpace();
        if (p < end && (*p == '[' || *p == '{')) {
          unsupported = true;
          return "structured arrays are not supported (descr is a list of "
                 "fields)";
        }
        if (!string(descr))
          return at("expected a quoted dtype for 'descr'");
      } else if (key == "fortran_order") {
        if (seenFortran)
          return "the header has 'fortran_order' twice";
        seenFortran = true;
        if (word("True"))
          fortranOrder = true;
        else if (word("False"))
          fortranOrder = false;
        else
          return at("'fortran_order' must be True or False");
      } else if (key == "shape") {
        if (seenShape)
          return "the header has 'shape' twice";
        seenShape = true;
        if (std::string e = shape(dims); !e.empty())
          return e;
      } else {
        return "unexpected key '" + key +
               "' (the header holds exactly descr, fortran_order and shape)";
      }
      // A comma, or the end of the dict.
      if (!eat(',')) {
        if (!eat('}'))
          return at("expected ',' or '}'");
        break;
      }
    }
    skipSpace();
    if (p != end)
      return at("unexpected text after the dict");
    if (!seenDescr || !seenFortran || !seenShape)
      return std::string("the header lacks '") +
             (!seenDescr     ? "descr"
              : !seenFortran ? "fortran_order"
                             : "shape") +
             "' (it must hold descr, fortran_order and shape)";
    return "";
  }

private:
  std::string at(const std::string &what) const {
    return concat(what, " at header byte ", size_t(p - begin));
  }
  void skipSpace() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
      ++p;
  }
  bool eat(char c) {
    skipSpace();
    if (p < end && *p == c) {
      ++p;
      return true;
    }
    return false;
  }
  bool word(const char *w) {
    skipSpace();
    size_t n = std::strlen(w);
    if (size_t(end - p) < n || std::memcmp(p, w, n) != 0)
      return false;
    // Not a prefix of a longer name (Truex).
    if (size_t(end - p) > n &&
        (std::isalnum((unsigned char)p[n]) || p[n] == '_'))
      return false;
    p += n;
    return true;
  }
  /// A quoted string without escapes (numpy writes none in these values).
  bool string(std::string &s) {
    skipSpace();
    if (p >= end || (*p != '\'' && *p != '"'))
      return false;
    char quote = *p;
    const char *b = p + 1;
    const char *q = b;
    while (q < end && *q != quote) {
      if (*q == '\\' || *q == '\n')
        return false;
      ++q;
    }
    if (q >= end)
      return false;
    s.assign(b, q);
    p = q + 1;
    return true;
  }
  /// A Python int literal: decimal digits without leading zeros.
  std::string integer(uint64_t &v) {
    skipSpace();
    const char *b = p;
    v = 0;
    while (p < end && *p >= '0' && *p <= '9') {
      uint64_t d = uint64_t(*p - '0');
      if (v > (uint64_t(INT64_MAX) - d) / 10)
        return at("a dim beyond int64");
      v = v * 10 + d;
      ++p;
    }
    if (p == b)
      return at(p < end && *p == '-' ? "a negative dim in 'shape'"
                                     : "expected a dim in 'shape'");
    if (p - b > 1 && *b == '0')
      return at("a dim with a leading zero");
    return "";
  }
  /// A tuple of ints: (), (3,), (2, 3) or (2, 3,).
  std::string shape(std::vector<uint64_t> &dims) {
    dims.clear();
    if (!eat('('))
      return at("'shape' must be a tuple");
    if (eat(')'))
      return "";
    for (;;) {
      uint64_t v;
      if (std::string e = integer(v); !e.empty())
        return e;
      if (dims.size() == COMET_RT_NPY_MAX_RANK)
        return concat("'shape' has more than ", COMET_RT_NPY_MAX_RANK, " dims");
      dims.push_back(v);
      bool comma = eat(',');
      if (eat(')')) {
        // (3) is an int in Python, not a tuple.
        if (dims.size() == 1 && !comma)
          return at("'shape' (n) is not a tuple: a 1-d shape is (n,)");
        return "";
      }
      if (!comma)
        return at("expected ',' or ')' in 'shape'");
    }
  }

  const char *begin, *p, *end;
};

/// descr: a byte order ('<' little, '>' big, '|' none: one byte only), a
/// kind and a size.
int32_t parseDescr(const std::string &d, comet_rt_npy &out) {
  if (d.size() >= 2 && (d[1] == 'O' || d[0] == 'O'))
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                concat("npy: dtype '", d,
                       "' is an object array (pickled Python objects), "
                       "which is not supported"));
  const char *supported = "float32, float64, float16, uint8, int32 or int64";
  if (d.size() < 3 ||
      (d[0] != '<' && d[0] != '>' && d[0] != '|' && d[0] != '='))
    return fail(
        COMET_RT_ERROR_CORRUPT,
        concat("npy: descr '", d, "' is not a byte order, a kind and a size"));
  char kind = d[1];
  std::string size = d.substr(2);
  int32_t type = 0;
  if (kind == 'f' && size == "2")
    type = COMET_RT_NPY_F16;
  else if (kind == 'f' && size == "4")
    type = COMET_RT_NPY_F32;
  else if (kind == 'f' && size == "8")
    type = COMET_RT_NPY_F64;
  else if (kind == 'u' && size == "1")
    type = COMET_RT_NPY_U8;
  else if (kind == 'i' && size == "4")
    type = COMET_RT_NPY_I32;
  else if (kind == 'i' && size == "8")
    type = COMET_RT_NPY_I64;
  if (!type)
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                concat("npy: dtype '", d, "' is not supported: ", supported));
  out.type = type;
  out.elem_bytes = type == COMET_RT_NPY_F16                               ? 2
                   : type == COMET_RT_NPY_U8                              ? 1
                   : type == COMET_RT_NPY_F32 || type == COMET_RT_NPY_I32 ? 4
                                                                          : 8;
  // '=' is the writer's native order, which a file cannot tell: numpy
  // writes '<' or '>'.
  if (d[0] == '=' || (d[0] == '|' && out.elem_bytes != 1))
    return fail(
        COMET_RT_ERROR_CORRUPT,
        concat("npy: descr '", d, "' gives no byte order ('<' or '>')"));
  out.big_endian = d[0] == '>' && out.elem_bytes > 1;
  return ok();
}

uint32_t swap32(uint32_t v) { return __builtin_bswap32(v); }

template <typename T> T load(const uint8_t *p, bool swap) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 ||
                sizeof(T) == 8);
  if constexpr (sizeof(T) == 1) {
    T v;
    std::memcpy(&v, p, 1);
    return v;
  } else if constexpr (sizeof(T) == 2) {
    uint16_t b;
    std::memcpy(&b, p, 2);
    if (swap)
      b = __builtin_bswap16(b);
    T v;
    std::memcpy(&v, &b, 2);
    return v;
  } else if constexpr (sizeof(T) == 4) {
    uint32_t b;
    std::memcpy(&b, p, 4);
    if (swap)
      b = swap32(b);
    T v;
    std::memcpy(&v, &b, 4);
    return v;
  } else {
    uint64_t b;
    std::memcpy(&b, p, 8);
    if (swap)
      b = __builtin_bswap64(b);
    T v;
    std::memcpy(&v, &b, 8);
    return v;
  }
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu, bits;
  if (exp == 0 && man == 0) {
    bits = sign;
  } else if (exp == 0) {
    // Subnormal: man * 2^-24, normalized for float32.
    uint32_t e = 113;
    while (!(man & 0x400u)) {
      man <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((man & 0x3ffu) << 13);
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Calls f(c, s) for every element, c its index in C order and s in the
/// file's order, c ascending; stops when f returns false.
template <typename F> bool forEachElement(const comet_rt_npy &a, F f) {
  int64_t n = a.num_elements;
  if (!a.fortran_order || a.rank < 2) {
    for (int64_t i = 0; i < n; ++i)
      if (!f(i, i))
        return false;
    return true;
  }
  // Column-major: element (i_0, ..., i_{r-1}) is at sum_k i_k * s_k with
  // s_0 = 1 and s_k = s_{k-1} * d_{k-1}. n > 0 means every dim is >= 1.
  int64_t stride[COMET_RT_NPY_MAX_RANK], idx[COMET_RT_NPY_MAX_RANK];
  int r = int(a.rank);
  for (int k = 0; k < r; ++k) {
    stride[k] = k ? stride[k - 1] * a.dims[k - 1] : 1;
    idx[k] = 0;
  }
  int64_t s = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!f(i, s))
      return false;
    for (int k = r - 1; k >= 0; --k) {
      if (++idx[k] < a.dims[k]) {
        s += stride[k];
        break;
      }
      s -= (a.dims[k] - 1) * stride[k];
      idx[k] = 0;
    }
  }
  return true;
}

bool plainLayout(const comet_rt_npy &a) {
  return !a.big_endian && (!a.fortran_order || a.rank < 2);
}

int32_t checkArray(const comet_rt_npy *a, const void *out) {
  if (!a || (!out && a->num_elements))
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "npy: null argument");
  if (a->num_elements && !a->data)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "npy: array without data");
  return ok();
}

//===----------------------------------------------------------------------===//
// ZIP
//===----------------------------------------------------------------------===//

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50,
                   kEndSig = 0x06054b50, kEnd64Sig = 0x06064b50,
                   kEnd64LocSig = 0x07064b50;
/// Deflate expands at most 1032:1; a member that claims more is corrupt,
/// and this bounds what inflating it allocates.
constexpr uint64_t kMaxDeflateRatio = 1032;

struct Member {
  std::string name;
  uint16_t method;
  uint32_t crc;
  uint64_t compressed, size, offset; // offset of the data
  std::unique_ptr<uint8_t, decltype(&std::free)> inflated{nullptr, std::free};
};

/// Reads the ZIP64 extended information of a central directory entry: the
/// fields whose 32-bit value is saturated, in this order.
int32_t zip64Extra(const std::string &name, const uint8_t *p, size_t n,
                   uint64_t &size, uint64_t &compressed, uint64_t &offset,
                   uint32_t &disk, bool needDisk) {
  bool needSize = size == 0xFFFFFFFFu, needComp = compressed == 0xFFFFFFFFu,
       needOff = offset == 0xFFFFFFFFu;
  size_t i = 0;
  bool found = false;
  while (i < n) {
    if (n - i < 4)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: member '", name,
                         "': an extra field header runs past its extra data"));
    uint16_t id = rd16(p + i), len = rd16(p + i + 2);
    if (len > n - i - 4)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: member '", name, "': extra field ", id, " of ",
                         len, " bytes runs past its extra data"));
    if (id == 1 && !found) {
      found = true;
      const uint8_t *f = p + i + 4;
      size_t left = len;
      auto take = [&](uint64_t &v, size_t bytes, const char *what) {
        if (left < bytes)
          return fail(COMET_RT_ERROR_CORRUPT,
                      concat("npz: member '", name,
                             "': the ZIP64 extra field lacks the ", what));
        v = bytes == 8 ? rd64(f) : rd32(f);
        f += bytes;
        left -= bytes;
        return ok();
      };
      if (needSize)
        COMET_RT_TRY(take(size, 8, "uncompressed size"));
      if (needComp)
        COMET_RT_TRY(take(compressed, 8, "compressed size"));
      if (needOff)
        COMET_RT_TRY(take(offset, 8, "local header offset"));
      if (needDisk) {
        uint64_t d;
        COMET_RT_TRY(take(d, 4, "disk number"));
        disk = uint32_t(d);
      }
    }
    i += 4 + size_t(len);
  }
  if (!found && (needSize || needComp || needOff || needDisk))
    return fail(COMET_RT_ERROR_CORRUPT,
                concat("npz: member '", name,
                       "': a size or offset of 0xFFFFFFFF without a ZIP64 "
                       "extra field"));
  return ok();
}

/// Inflates raw deflate data into exactly `size` bytes.
int32_t inflateMember(const Member &m, const uint8_t *src, uint8_t *dst) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
    return fail(COMET_RT_ERROR_OUT_OF_MEMORY, "npz: cannot start zlib");
  uint64_t inLeft = m.compressed, outLeft = m.size;
  zs.next_in = const_cast<uint8_t *>(src);
  zs.next_out = dst;
  enum { Done, Corrupt, CutShort, TooLong } outcome;
  for (;;) {
    // zlib counts in 32 bits: members over 4 GiB go in pieces.
    if (zs.avail_in == 0 && inLeft) {
      zs.avail_in = uInt(inLeft < UINT_MAX ? inLeft : UINT_MAX);
      inLeft -= zs.avail_in;
    }
    if (zs.avail_out == 0 && outLeft) {
      zs.avail_out = uInt(outLeft < UINT_MAX ? outLeft : UINT_MAX);
      outLeft -= zs.avail_out;
    }
    uInt inBefore = zs.avail_in, outBefore = zs.avail_out;
    int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      outcome = Done;
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      outcome = Corrupt;
      break;
    }
    // No progress: out of input, or out of room for what remains.
    if (zs.avail_in == inBefore && zs.avail_out == outBefore) {
      outcome = zs.avail_out == 0 && !outLeft ? TooLong : CutShort;
      break;
    }
  }
  uint64_t produced = zs.total_out, consumed = zs.total_in;
  std::string msg = zs.msg ? zs.msg : "";
  inflateEnd(&zs);
  switch (outcome) {
  case Done:
    if (produced != m.size)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: member '", m.name, "' inflates to ", produced,
                         " bytes, its header says ", m.size));
    if (consumed != m.compressed)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: member '", m.name, "': its deflate stream ends ",
                         m.compressed - consumed,
                         " bytes before its compressed size"));
    return ok();
  case TooLong:
    return fail(COMET_RT_ERROR_CORRUPT,
                concat("npz: member '", m.name, "' inflates to more than the ",
                       m.size, " bytes its header says"));
  case CutShort:
    return fail(
        COMET_RT_ERROR_TRUNCATED,
        concat("npz: member '", m.name, "': the deflate stream is cut short"));
  case Corrupt:
    break;
  }
  return fail(COMET_RT_ERROR_CORRUPT,
              concat("npz: member '", m.name, "': corrupt deflate stream",
                     msg.empty() ? "" : " (" + msg + ")"));
}

} // namespace

struct comet_rt_npz {
  const uint8_t *bytes = nullptr;
  size_t size = 0;
  std::vector<Member> members;
};

extern "C" {

const char *comet_rt_npy_type_name(int32_t type) { return typeName(type); }

int32_t comet_rt_npy_parse(const void *bytes, size_t size, comet_rt_npy *out) {
  if (!out || (!bytes && size))
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "npy: null argument");
  std::memset(out, 0, sizeof(*out));
  auto *p = static_cast<const uint8_t *>(bytes);
  static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size && std::memcmp(p, magic, size < 6 ? size : 6) != 0)
    return fail(COMET_RT_ERROR_CORRUPT,
                "npy: bad magic (an .npy file starts with \\x93NUMPY)");
  if (size < 8)
    return fail(COMET_RT_ERROR_TRUNCATED,
                concat("npy: truncated: ", size,
                       " bytes, shorter than the magic and version"));
  uint8_t major = p[6], minor = p[7];
  if (major < 1 || major > 3 || minor != 0)
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                concat("npy: format version ", int(major), ".", int(minor),
                       " (1.0, 2.0 and 3.0 are read)"));
  // 1.0: a 2-byte header length; 2.0 and 3.0 (3.0: a UTF-8 header): 4.
  size_t lenBytes = major == 1 ? 2 : 4;
  if (size < 8 + lenBytes)
    return fail(COMET_RT_ERROR_TRUNCATED,
                "npy: truncated before the header length");
  uint64_t headerLen = major == 1 ? rd16(p + 8) : rd32(p + 8);
  size_t headerStart = 8 + lenBytes;
  if (headerLen > size - headerStart)
    return fail(COMET_RT_ERROR_TRUNCATED,
                concat("npy: the header says ", headerLen,
                       " bytes, the file has ", size - headerStart,
                       " after the length"));
  const char *h = reinterpret_cast<const char *>(p + headerStart);
  std::string descr;
  bool fortran = false;
  std::vector<uint64_t> dims;
  HeaderParser header(h, h + headerLen);
  if (std::string e = header.parse(descr, fortran, dims); !e.empty())
    return fail(header.unsupported ? COMET_RT_ERROR_UNSUPPORTED
                                   : COMET_RT_ERROR_CORRUPT,
                "npy: " + e);
  COMET_RT_TRY(parseDescr(descr, *out));
  uint64_t n = 1;
  for (uint64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n) || n > uint64_t(INT64_MAX))
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npy: the shape's element count overflows int64"));
  uint64_t dataBytes;
  if (__builtin_mul_overflow(n, uint64_t(out->elem_bytes), &dataBytes))
    return fail(COMET_RT_ERROR_CORRUPT,
                concat("npy: ", n, " elements of ", out->elem_bytes,
                       " bytes overflow 64 bits"));
  size_t payload = size - headerStart - size_t(headerLen);
  if (payload < dataBytes)
    return fail(COMET_RT_ERROR_TRUNCATED,
                concat("npy: truncated: the header says ", n, " elements of ",
                       out->elem_bytes, " bytes (", dataBytes,
                       " bytes), the file has ", payload));
  if (payload > dataBytes)
    return fail(
        COMET_RT_ERROR_CORRUPT,
        concat("npy: ", payload - dataBytes, " trailing bytes after the data"));
  out->major = major;
  out->minor = minor;
  out->fortran_order = fortran;
  out->rank = uint32_t(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    out->dims[i] = int64_t(dims[i]);
  out->num_elements = int64_t(n);
  out->data = p + headerStart + headerLen;
  return ok();
}

int32_t comet_rt_npy_to_f32(const comet_rt_npy *a, float *out) {
  COMET_RT_TRY(checkArray(a, out));
  if (a->num_elements == 0)
    return ok();
  const uint8_t *d = a->data;
  bool swap = a->big_endian;
  switch (a->type) {
  case COMET_RT_NPY_F32:
    if (plainLayout(*a)) {
      std::memcpy(out, d, size_t(a->num_elements) * 4);
      return ok();
    }
    forEachElement(*a, [&](int64_t c, int64_t s) {
      out[c] = load<float>(d + 4 * s, swap);
      return true;
    });
    return ok();
  case COMET_RT_NPY_F16:
    forEachElement(*a, [&](int64_t c, int64_t s) {
      out[c] = halfToFloat(load<uint16_t>(d + 2 * s, swap));
      return true;
    });
    return ok();
  case COMET_RT_NPY_U8:
    forEachElement(*a, [&](int64_t c, int64_t s) {
      out[c] = float(d[s]);
      return true;
    });
    return ok();
  case COMET_RT_NPY_F64: {
    int64_t bad = -1;
    double badValue = 0;
    forEachElement(*a, [&](int64_t c, int64_t s) {
      double v = load<double>(d + 8 * s, swap);
      out[c] = float(v);
      if (std::isfinite(v) && !std::isfinite(out[c])) {
        bad = c;
        badValue = v;
        return false;
      }
      return true;
    });
    if (bad >= 0) {
      char value[32];
      std::snprintf(value, sizeof(value), "%g", badValue);
      return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                  concat("npy: float64 element ", bad, " (", value,
                         ") is beyond float32's range"));
    }
    return ok();
  }
  case COMET_RT_NPY_I32:
  case COMET_RT_NPY_I64:
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                concat("npy: ", typeName(a->type),
                       " is not converted to float32 (float32, float64, "
                       "float16 and uint8 are)"));
  }
  return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
              concat("npy: unknown element type ", a->type));
}

int32_t comet_rt_npy_to_i64(const comet_rt_npy *a, int64_t *out) {
  COMET_RT_TRY(checkArray(a, out));
  if (a->num_elements == 0)
    return ok();
  const uint8_t *d = a->data;
  bool swap = a->big_endian;
  switch (a->type) {
  case COMET_RT_NPY_I64:
    if (plainLayout(*a)) {
      std::memcpy(out, d, size_t(a->num_elements) * 8);
      return ok();
    }
    forEachElement(*a, [&](int64_t c, int64_t s) {
      out[c] = load<int64_t>(d + 8 * s, swap);
      return true;
    });
    return ok();
  case COMET_RT_NPY_I32:
    forEachElement(*a, [&](int64_t c, int64_t s) {
      out[c] = load<int32_t>(d + 4 * s, swap);
      return true;
    });
    return ok();
  case COMET_RT_NPY_U8:
    forEachElement(*a, [&](int64_t c, int64_t s) {
      out[c] = d[s];
      return true;
    });
    return ok();
  case COMET_RT_NPY_F16:
  case COMET_RT_NPY_F32:
  case COMET_RT_NPY_F64:
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                concat("npy: ", typeName(a->type),
                       " is not converted to int64 (int64, int32 and uint8 "
                       "are)"));
  }
  return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
              concat("npy: unknown element type ", a->type));
}

int32_t comet_rt_npz_open(const void *bytes, size_t size, comet_rt_npz **out) {
  if (!out || (!bytes && size))
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "npz: null argument");
  *out = nullptr;
  auto *p = static_cast<const uint8_t *>(bytes);
  // The end of central directory record: 22 bytes and a comment that ends
  // the archive, found from the back.
  if (size < 22)
    return fail(size >= 4 && rd32(p) == kLocalSig ? COMET_RT_ERROR_TRUNCATED
                                                  : COMET_RT_ERROR_CORRUPT,
                concat("npz: ", size,
                       " bytes, too short for a ZIP archive's end record"));
  size_t end = SIZE_MAX;
  size_t lowest = size - 22 > 0xFFFF ? size - 22 - 0xFFFF : 0;
  for (size_t i = size - 22 + 1; i-- > lowest;)
    if (rd32(p + i) == kEndSig && i + 22 + rd16(p + i + 20) == size) {
      end = i;
      break;
    }
  if (end == SIZE_MAX)
    return fail(rd32(p) == kLocalSig ? COMET_RT_ERROR_TRUNCATED
                                     : COMET_RT_ERROR_CORRUPT,
                rd32(p) == kLocalSig
                    ? "npz: truncated ZIP archive (no end of central "
                      "directory record)"
                    : "npz: not a ZIP archive (no end of central directory "
                      "record)");
  const uint8_t *e = p + end;
  uint64_t disk = rd16(e + 4), cdDisk = rd16(e + 6), entriesHere = rd16(e + 8),
           entries = rd16(e + 10), cdSize = rd32(e + 12),
           cdOffset = rd32(e + 16);
  // The records end where the ZIP64 end record starts, if there is one.
  uint64_t recordsEnd = end;
  if (end >= 20 && rd32(p + end - 20) == kEnd64LocSig) {
    const uint8_t *loc = p + end - 20;
    uint64_t at = rd64(loc + 8);
    if (rd32(loc + 4) != 0 || rd32(loc + 16) != 1)
      return fail(COMET_RT_ERROR_UNSUPPORTED,
                  "npz: multi-disk ZIP archives are not supported");
    if (at > end - 20 || end - 20 - at < 56)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: the ZIP64 end record at ", at,
                         " does not fit before its locator"));
    const uint8_t *z = p + at;
    if (rd32(z) != kEnd64Sig)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: no ZIP64 end record at ", at,
                         " where the locator points"));
    uint64_t recSize = rd64(z + 4);
    if (recSize < 44 || recSize > end - 20 - at - 12)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: the ZIP64 end record's size ", recSize,
                         " does not fit before its locator"));
    disk = rd32(z + 16);
    cdDisk = rd32(z + 20);
    entriesHere = rd64(z + 24);
    entries = rd64(z + 32);
    cdSize = rd64(z + 40);
    cdOffset = rd64(z + 48);
    recordsEnd = at;
  } else if (entries == 0xFFFF || cdSize == 0xFFFFFFFFu ||
             cdOffset == 0xFFFFFFFFu) {
    return fail(COMET_RT_ERROR_CORRUPT,
                "npz: the end record defers to a ZIP64 record that is not "
                "there");
  }
  if (disk != 0 || cdDisk != 0 || entriesHere != entries)
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                "npz: multi-disk ZIP archives are not supported");
  if (cdOffset > recordsEnd || cdSize > recordsEnd - cdOffset)
    return fail(COMET_RT_ERROR_CORRUPT,
                concat("npz: the central directory (", cdSize, " bytes at ",
                       cdOffset, ") runs past its end record at ", recordsEnd));
  if (entries > cdSize / 46)
    return fail(COMET_RT_ERROR_CORRUPT,
                concat("npz: ", entries,
                       " entries do not fit in a central "
                       "directory of ",
                       cdSize, " bytes"));
  auto npz = std::make_unique<comet_rt_npz>();
  npz->bytes = p;
  npz->size = size;
  npz->members.reserve(size_t(entries));
  const uint8_t *c = p + cdOffset, *cdEnd = p + cdOffset + cdSize;
  std::set<std::string> names;
  for (uint64_t i = 0; i < entries; ++i) {
    if (size_t(cdEnd - c) < 46 || rd32(c) != kCentralSig)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: central directory entry ", i,
                         size_t(cdEnd - c) < 46 ? " runs past the directory"
                                                : " has a bad signature"));
    uint16_t flags = rd16(c + 8), method = rd16(c + 10);
    uint32_t crc = rd32(c + 16);
    uint64_t compressed = rd32(c + 20), usize = rd32(c + 24);
    size_t nameLen = rd16(c + 28), extraLen = rd16(c + 30),
           commentLen = rd16(c + 32);
    uint32_t diskStart = rd16(c + 34);
    uint64_t local = rd32(c + 42);
    if (46 + nameLen + extraLen + commentLen > size_t(cdEnd - c))
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: central directory entry ", i,
                         " runs past the directory"));
    Member m;
    m.name.assign(reinterpret_cast<const char *>(c + 46), nameLen);
    if (m.name.empty() || m.name.find('\0') != std::string::npos)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: central directory entry ", i,
                         " has an empty name or one with a NUL byte"));
    COMET_RT_TRY(zip64Extra(m.name, c + 46 + nameLen, extraLen, usize,
                            compressed, local, diskStart, diskStart == 0xFFFF));
    c += 46 + nameLen + extraLen + commentLen;
    if (diskStart != 0)
      return fail(COMET_RT_ERROR_UNSUPPORTED,
                  "npz: multi-disk ZIP archives are not supported");
    if (flags & 0x41)
      return fail(COMET_RT_ERROR_UNSUPPORTED,
                  concat("npz: member '", m.name, "' is encrypted"));
    if (method != 0 && method != 8)
      return fail(COMET_RT_ERROR_UNSUPPORTED,
                  concat("npz: member '", m.name, "' uses compression method ",
                         method,
                         "; stored (0, numpy.savez) and deflated (8, "
                         "numpy.savez_compressed) are read"));
    if (method == 0 && compressed != usize)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: stored member '", m.name, "' has ", compressed,
                         " bytes but claims ", usize));
    uint64_t maxSize;
    if (method == 8 &&
        !__builtin_mul_overflow(compressed, kMaxDeflateRatio, &maxSize) &&
        usize > maxSize + 64)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: member '", m.name, "' claims ", usize,
                         " bytes from ", compressed,
                         " compressed, more than deflate can expand"));
    // The local header: its signature and name, then the data, which must
    // end before the central directory.
    if (local > cdOffset || cdOffset - local < 30 ||
        rd32(p + local) != kLocalSig)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: member '", m.name,
                         "': no local header at offset ", local));
    const uint8_t *lh = p + local;
    uint64_t lname = rd16(lh + 26), lextra = rd16(lh + 28);
    uint64_t dataAt = local + 30 + lname + lextra;
    if (dataAt > cdOffset || compressed > cdOffset - dataAt)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: member '", m.name, "': its ", compressed,
                         " bytes at ", dataAt,
                         " run into the central directory at ", cdOffset));
    if (lname != nameLen || std::memcmp(lh + 30, m.name.data(), nameLen) != 0)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: member '", m.name,
                         "': its local header names another file"));
    if (!names.insert(m.name).second)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat("npz: two members named '", m.name, "'"));
    m.method = method;
    m.crc = crc;
    m.compressed = compressed;
    m.size = usize;
    m.offset = dataAt;
    npz->members.push_back(std::move(m));
  }
  if (c != cdEnd)
    return fail(COMET_RT_ERROR_CORRUPT,
                concat("npz: ", size_t(cdEnd - c),
                       " bytes left in the central directory after its ",
                       entries, " entries"));
  *out = npz.release();
  return ok();
}

void comet_rt_npz_free(comet_rt_npz *npz) { delete npz; }

int64_t comet_rt_npz_num_members(const comet_rt_npz *npz) {
  return npz ? int64_t(npz->members.size()) : 0;
}

const char *comet_rt_npz_member_name(const comet_rt_npz *npz, int64_t index) {
  if (!npz || index < 0 || index >= int64_t(npz->members.size()))
    return nullptr;
  return npz->members[size_t(index)].name.c_str();
}

int32_t comet_rt_npz_read(comet_rt_npz *npz, const char *key,
                          comet_rt_npy *out) {
  if (!npz || !key || !out)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "npz: null argument");
  std::memset(out, 0, sizeof(*out));
  // The exact name first, then key.npy, as numpy's NpzFile looks them up.
  std::string withSuffix = std::string(key) + ".npy";
  Member *m = nullptr;
  for (Member &c : npz->members)
    if (c.name == key)
      m = &c;
  if (!m)
    for (Member &c : npz->members)
      if (c.name == withSuffix)
        m = &c;
  if (!m) {
    std::string names;
    for (const Member &c : npz->members)
      names += (names.empty() ? "" : ", ") + c.name;
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat("npz: no member '", withSuffix, "' (the archive holds ",
                       names.empty() ? "none" : names, ")"));
  }
  const uint8_t *data = npz->bytes + m->offset;
  if (m->method == 8) {
    if (!m->inflated) {
      std::unique_ptr<uint8_t, decltype(&std::free)> buf(
          static_cast<uint8_t *>(std::malloc(m->size ? size_t(m->size) : 1)),
          std::free);
      if (!buf)
        return fail(COMET_RT_ERROR_OUT_OF_MEMORY,
                    concat("npz: no memory to inflate member '", m->name, "' (",
                           m->size, " bytes)"));
      COMET_RT_TRY(inflateMember(*m, data, buf.get()));
      m->inflated = std::move(buf);
    }
    data = m->inflated.get();
  }
  // crc32_z counts in size_t, so members over 4 GiB need no pieces.
  uint32_t crc = uint32_t(crc32_z(0L, data, size_t(m->size)));
  if (crc != m->crc)
    return fail(COMET_RT_ERROR_CORRUPT, concat("npz: member '", m->name,
                                               "': CRC-32 mismatch (the "
                                               "archive is corrupt)"));
  if (int32_t s = comet_rt_npy_parse(data, size_t(m->size), out))
    return fail(s,
                concat("npz: member '", m->name, "': ", comet_rt_last_error()));
  return ok();
}

} // extern "C"
