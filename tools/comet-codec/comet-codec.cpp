//===- comet-codec.cpp - Compress, decompress and benchmark tensors -------===//
//
//   comet-codec compress IN -o OUT [--codec sz|mask|raw] [--eb E]
//                        [--dtype f32|f16|bf16] [--shape AxBxC]
//   comet-codec decompress IN -o OUT
//   comet-codec bench IN [--codec ...] [--eb E] [--threads N] [--repeat R]
//
// IN is a .npy file (little-endian f4/f2, C order) or raw elements of
// --dtype. decompress writes .npy when OUT ends in .npy, raw bytes otherwise.
// bench prints JSON (docs/benchmarks.md).
//
//===----------------------------------------------------------------------===//
#include "comet/runtime/codec.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace llvm;

namespace {

cl::SubCommand compressCmd("compress", "Compress a tensor to a codec stream");
cl::SubCommand decompressCmd("decompress", "Decompress a codec stream");
cl::SubCommand benchCmd("bench", "Measure ratio, error and throughput (JSON)");

cl::OptionCategory codecCat("comet-codec options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input>"),
                               cl::Required, cl::sub(compressCmd),
                               cl::sub(decompressCmd), cl::sub(benchCmd),
                               cl::cat(codecCat));
cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                cl::value_desc("file"), cl::Required,
                                cl::sub(compressCmd), cl::sub(decompressCmd),
                                cl::cat(codecCat));
cl::opt<std::string> codecName("codec", cl::desc("sz, mask or raw"),
                               cl::init("sz"), cl::sub(compressCmd),
                               cl::sub(benchCmd), cl::cat(codecCat));
cl::opt<std::string> ebText("eb", cl::desc("Absolute error bound (sz)"),
                            cl::init("1e-3"), cl::sub(compressCmd),
                            cl::sub(benchCmd), cl::cat(codecCat));
cl::opt<std::string> dtypeName("dtype",
                               cl::desc("Element type of raw input: f32, f16, "
                                        "bf16 (.npy files carry their own)"),
                               cl::init("f32"), cl::sub(compressCmd),
                               cl::sub(benchCmd), cl::cat(codecCat));
cl::opt<std::string> shapeText("shape",
                               cl::desc("Shape of raw input, e.g. 64x3x28x28 "
                                        "(default: flat)"),
                               cl::init(""), cl::sub(compressCmd),
                               cl::sub(benchCmd), cl::cat(codecCat));
cl::opt<int> threads("threads", cl::desc("Threads (0: all cores)"), cl::init(0),
                     cl::sub(compressCmd), cl::sub(decompressCmd),
                     cl::sub(benchCmd), cl::cat(codecCat));
cl::opt<unsigned> repeat("repeat", cl::desc("Timed runs; the median counts"),
                         cl::init(5), cl::sub(benchCmd), cl::cat(codecCat));

[[noreturn]] void fail(const Twine &msg) {
  WithColor::error(errs(), "comet-codec") << msg << "\n";
  exit(1);
}

struct Tensor {
  comet_rt_dtype dtype = COMET_RT_DTYPE_F32;
  SmallVector<uint64_t> dims;
  std::vector<uint8_t> bytes;
  uint64_t numElements() const {
    uint64_t n = 1;
    for (uint64_t d : dims)
      n *= d;
    return n;
  }
};

comet_rt_dtype parseDtype(StringRef s) {
  if (s == "f32" || s == "<f4")
    return COMET_RT_DTYPE_F32;
  if (s == "f16" || s == "<f2")
    return COMET_RT_DTYPE_F16;
  if (s == "bf16")
    return COMET_RT_DTYPE_BF16;
  fail("unknown dtype '" + s + "' (expected f32, f16 or bf16)");
}

comet_rt_codec parseCodec(StringRef s) {
  if (s == "sz")
    return COMET_RT_CODEC_SZ;
  if (s == "mask")
    return COMET_RT_CODEC_MASK;
  if (s == "raw")
    return COMET_RT_CODEC_RAW;
  fail("unknown codec '" + s + "' (expected sz, mask or raw)");
}

const char *codecString(comet_rt_codec c) {
  return c == COMET_RT_CODEC_SZ     ? "sz"
         : c == COMET_RT_CODEC_MASK ? "mask"
                                    : "raw";
}

double parseEb(comet_rt_codec codec) {
  double eb;
  if (StringRef(ebText).trim().getAsDouble(eb))
    fail("--eb '" + ebText + "' is not a number");
  if (codec == COMET_RT_CODEC_SZ && !(std::isfinite(eb) && eb > 0))
    fail("--eb must be a positive finite number, got '" + ebText + "'");
  return eb;
}

std::unique_ptr<MemoryBuffer> readFile(StringRef path) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    fail("cannot open '" + path + "': " + buf.getError().message());
  return std::move(*buf);
}

// A minimal .npy reader: version 1-3 headers, little-endian f4/f2, C order.
bool parseNpy(StringRef data, Tensor &t, std::string &err) {
  if (data.size() < 10 || !data.starts_with("\x93NUMPY")) {
    err = "not a .npy file";
    return false;
  }
  uint8_t major = data[6];
  size_t hlen, off;
  if (major == 1) {
    hlen = uint8_t(data[8]) | size_t(uint8_t(data[9])) << 8;
    off = 10;
  } else {
    if (data.size() < 12) {
      err = "truncated .npy header";
      return false;
    }
    hlen = 0;
    for (int i = 0; i < 4; ++i)
      hlen |= size_t(uint8_t(data[8 + i])) << (8 * i);
    off = 12;
  }
  if (off + hlen > data.size()) {
    err = "truncated .npy header";
    return false;
  }
  StringRef header = data.substr(off, hlen);
  auto field = [&](StringRef key) -> StringRef {
    size_t k = header.find(key);
    if (k == StringRef::npos)
      return {};
    StringRef rest = header.substr(k + key.size()).ltrim(" :");
    return rest;
  };
  StringRef descr = field("'descr'");
  if (descr.consume_front("'")) {
    descr = descr.take_until([](char c) { return c == '\''; });
  }
  if (descr != "<f4" && descr != "<f2") {
    err = ("unsupported .npy dtype '" + descr + "' (need <f4 or <f2)").str();
    return false;
  }
  t.dtype = parseDtype(descr);
  if (field("'fortran_order'").starts_with("True")) {
    err = "Fortran-order .npy arrays are not supported";
    return false;
  }
  StringRef shape = field("'shape'");
  if (!shape.consume_front("(")) {
    err = "bad .npy shape";
    return false;
  }
  shape = shape.take_until([](char c) { return c == ')'; });
  SmallVector<StringRef> parts;
  shape.split(parts, ',', -1, /*KeepEmpty=*/false);
  t.dims.clear();
  for (StringRef p : parts) {
    uint64_t d;
    if (p.trim().getAsInteger(10, d)) {
      err = "bad .npy shape";
      return false;
    }
    t.dims.push_back(d);
  }
  size_t es = comet_rt_dtype_size(t.dtype);
  uint64_t n = t.numElements();
  StringRef body = data.substr(off + hlen);
  if (body.size() != n * es) {
    err = "the .npy data size does not match its shape";
    return false;
  }
  t.bytes.assign(body.begin(), body.end());
  return true;
}

Tensor readTensor(StringRef path) {
  auto buf = readFile(path);
  StringRef data = buf->getBuffer();
  Tensor t;
  if (data.starts_with("\x93NUMPY")) {
    std::string err;
    if (!parseNpy(data, t, err))
      fail("cannot read '" + path + "': " + err);
    return t;
  }
  t.dtype = parseDtype(dtypeName);
  size_t es = comet_rt_dtype_size(t.dtype);
  if (data.size() % es)
    fail("'" + path + "' has " + Twine(data.size()) +
         " bytes, not a whole number of " + dtypeName + " elements");
  if (!shapeText.empty()) {
    SmallVector<StringRef> parts;
    StringRef(shapeText).split(parts, 'x');
    for (StringRef p : parts) {
      uint64_t d;
      if (p.getAsInteger(10, d))
        fail("bad --shape '" + shapeText + "'");
      t.dims.push_back(d);
    }
    if (t.numElements() * es != data.size())
      fail("--shape " + shapeText + " does not match the " +
           Twine(data.size()) + " bytes of '" + path + "'");
  } else {
    t.dims.push_back(data.size() / es);
  }
  t.bytes.assign(data.begin(), data.end());
  return t;
}

void writeFile(StringRef path, ArrayRef<uint8_t> bytes, StringRef prefix = {}) {
  std::error_code ec;
  ToolOutputFile out(path, ec, sys::fs::OF_None);
  if (ec)
    fail("cannot write '" + path + "': " + ec.message());
  out.os() << prefix;
  out.os().write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  out.keep();
}

std::vector<uint8_t> compressTensor(const Tensor &t, comet_rt_codec codec,
                                    double eb) {
  std::vector<uint8_t> out(
      comet_rt_codec_max_compressed_size(codec, t.dtype, t.numElements()));
  size_t size = 0;
  comet_rt_status st =
      comet_rt_codec_compress(codec, t.dtype, t.bytes.data(), t.dims.data(),
                              t.dims.size(), eb, out.data(), out.size(), &size);
  if (st != COMET_RT_SUCCESS)
    fail(Twine("cannot compress: ") + comet_rt_status_string(st));
  out.resize(size);
  return out;
}

comet_rt_codec_info streamInfo(ArrayRef<uint8_t> s, StringRef path) {
  comet_rt_codec_info info;
  comet_rt_status st = comet_rt_codec_get_info(s.data(), s.size(), &info);
  if (st != COMET_RT_SUCCESS)
    fail("cannot decompress '" + path + "': " + comet_rt_status_string(st));
  return info;
}

std::string npyHeader(comet_rt_dtype dtype, ArrayRef<uint64_t> dims) {
  std::string shape;
  for (uint64_t d : dims)
    shape += std::to_string(d) + ",";
  if (dims.size() > 1)
    shape.pop_back();
  std::string dict = "{'descr': '" +
                     std::string(dtype == COMET_RT_DTYPE_F32 ? "<f4" : "<f2") +
                     "', 'fortran_order': False, 'shape': (" + shape + "), }";
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += char(1);
  h += char(0);
  h += char(dict.size() & 0xFF);
  h += char(dict.size() >> 8);
  return h + dict;
}

int runCompress() {
  comet_rt_codec codec = parseCodec(codecName);
  double eb = parseEb(codec);
  Tensor t = readTensor(inputFile);
  writeFile(outputFile, compressTensor(t, codec, eb));
  return 0;
}

int runDecompress() {
  auto buf = readFile(inputFile);
  ArrayRef<uint8_t> s(reinterpret_cast<const uint8_t *>(buf->getBufferStart()),
                      buf->getBufferSize());
  comet_rt_codec_info info = streamInfo(s, inputFile);
  if (info.dtype == COMET_RT_DTYPE_BF16 &&
      StringRef(outputFile).ends_with(".npy"))
    fail("bf16 has no .npy dtype; write raw bytes instead");
  std::vector<uint8_t> out(info.decompressed_bytes);
  comet_rt_status st =
      comet_rt_codec_decompress(s.data(), s.size(), out.data(), out.size());
  if (st != COMET_RT_SUCCESS)
    fail("cannot decompress '" + inputFile +
         "': " + comet_rt_status_string(st));
  std::string prefix;
  if (StringRef(outputFile).ends_with(".npy"))
    prefix = npyHeader(comet_rt_dtype(info.dtype),
                       ArrayRef<uint64_t>(info.dims, info.rank));
  writeFile(outputFile, out, prefix);
  return 0;
}

float loadFloat(comet_rt_dtype dt, const uint8_t *p) {
  uint32_t u = 0;
  if (dt == COMET_RT_DTYPE_F32) {
    std::memcpy(&u, p, 4);
  } else {
    uint16_t h;
    std::memcpy(&h, p, 2);
    if (dt == COMET_RT_DTYPE_BF16) {
      u = uint32_t(h) << 16;
    } else {
      int exp = (h >> 10) & 31, mant = h & 1023;
      float sign = (h & 0x8000) ? -1.0f : 1.0f;
      if (exp == 31)
        return mant ? NAN : sign * INFINITY;
      if (exp == 0)
        return sign * std::ldexp(float(mant), -24);
      return sign * std::ldexp(float(mant + 1024), exp - 25);
    }
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <typename F> double medianSeconds(unsigned runs, F &&f) {
  std::vector<double> t;
  for (unsigned i = 0; i < std::max(1u, runs); ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double>(b - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int runBench() {
  comet_rt_codec codec = parseCodec(codecName);
  double eb = parseEb(codec);
  Tensor t = readTensor(inputFile);
  std::vector<uint8_t> s = compressTensor(t, codec, eb); // warm-up
  std::vector<uint8_t> buf(
      comet_rt_codec_max_compressed_size(codec, t.dtype, t.numElements()));
  size_t size = 0;
  double tc = medianSeconds(repeat, [&] {
    comet_rt_codec_compress(codec, t.dtype, t.bytes.data(), t.dims.data(),
                            t.dims.size(), eb, buf.data(), buf.size(), &size);
  });
  std::vector<uint8_t> y(t.bytes.size());
  comet_rt_status st = COMET_RT_SUCCESS;
  double td = medianSeconds(repeat, [&] {
    st = comet_rt_codec_decompress(s.data(), s.size(), y.data(), y.size());
  });
  if (st != COMET_RT_SUCCESS)
    fail(Twine("cannot decompress: ") + comet_rt_status_string(st));

  size_t es = comet_rt_dtype_size(t.dtype);
  double maxErr = 0;
  bool zerosPreserved = true, specialsExact = true;
  for (uint64_t i = 0, n = t.numElements(); i < n; ++i) {
    float x = loadFloat(t.dtype, &t.bytes[i * es]);
    float v = loadFloat(t.dtype, &y[i * es]);
    if (!std::isfinite(x)) {
      specialsExact &= std::memcmp(&t.bytes[i * es], &y[i * es], es) == 0;
      continue;
    }
    if (x == 0.0f)
      zerosPreserved &= v == 0.0f;
    maxErr = std::max(maxErr, std::fabs(double(x) - double(v)));
  }
  double in = double(t.bytes.size());
  json::Object obj{
      {"codec", codecString(codec)},
      {"eb", codec == COMET_RT_CODEC_SZ ? eb : 0.0},
      {"dtype", t.dtype == COMET_RT_DTYPE_F32   ? "f32"
                : t.dtype == COMET_RT_DTYPE_F16 ? "f16"
                                                : "bf16"},
      {"num_elements", int64_t(t.numElements())},
      {"bytes_in", int64_t(t.bytes.size())},
      {"bytes_out", int64_t(s.size())},
      {"ratio", s.empty() ? 0.0 : in / double(s.size())},
      {"max_abs_err", maxErr},
      {"zeros_preserved", zerosPreserved},
      {"specials_exact", specialsExact},
      {"threads", int64_t(threads)},
      {"compress_gbps", tc > 0 ? in / tc / 1e9 : 0.0},
      {"decompress_gbps", td > 0 ? in / td / 1e9 : 0.0},
  };
  outs() << formatv("{0:2}", json::Value(std::move(obj))) << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::HideUnrelatedOptions(codecCat);
  cl::ParseCommandLineOptions(
      argc, argv,
      "COMET activation codec: compress, decompress and bench "
      "(format: docs/codec-format.md)\n");
  comet_rt_codec_set_num_threads(threads);
  if (compressCmd)
    return runCompress();
  if (decompressCmd)
    return runDecompress();
  if (benchCmd)
    return runBench();
  fail("expected a subcommand: compress, decompress or bench (see --help)");
}
