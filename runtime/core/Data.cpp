//===- Data.cpp - Datasets (IDX, arrays, synthetic) and the batch loader --===//

#include "comet/runtime/data.h"
#include "Errors.h"
#include "comet/runtime/alloc.h"

#include <zlib.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace comet::rt;

namespace {

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Uniform in [0, bound) without modulo bias (Lemire's method).
uint64_t bounded(uint64_t &state, uint64_t bound) {
  unsigned __int128 m = (unsigned __int128)splitmix64(state) * bound;
  uint64_t low = (uint64_t)m;
  if (low < bound) {
    uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      m = (unsigned __int128)splitmix64(state) * bound;
      low = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

const char *kDebianHint =
    "Fashion-MNIST comes from the Debian package dataset-fashion-mnist "
    "(apt-get install dataset-fashion-mnist)";

/// Reads a whole file, gunzipping it when it is gzipped (zlib reads plain
/// files through the same calls).
int32_t readFile(const std::string &path, std::vector<uint8_t> &out) {
  out.clear();
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    return fail(COMET_RT_ERROR_IO,
                concat("cannot open ", path, ": ", std::strerror(errno), ". ",
                       kDebianHint));
  uint8_t buf[1 << 16];
  for (;;) {
    int n = gzread(f, buf, sizeof(buf));
    if (n < 0) {
      int errnum = 0;
      std::string msg = gzerror(f, &errnum);
      gzclose(f);
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat(path, ": corrupt gzip stream (", msg, ")"));
    }
    if (n == 0)
      break;
    out.insert(out.end(), buf, buf + n);
  }
  // A gzip stream cut short reads as EOF with a Z_BUF_ERROR state.
  int errnum = 0;
  const char *msg = gzerror(f, &errnum);
  std::string msgCopy = msg ? msg : "";
  gzclose(f);
  if (errnum != Z_OK && errnum != Z_STREAM_END)
    return fail(
        COMET_RT_ERROR_TRUNCATED,
        concat(path, ": truncated or corrupt gzip stream (", msgCopy, ")"));
  return COMET_RT_SUCCESS;
}

} // namespace

namespace comet::rt {
/// What a stored dataset holds, shared by its slices. Counted as "other".
struct DatasetStorage {
  uint8_t *pixels = nullptr;   // IDX images, uint8
  float *samples = nullptr;    // arrays: float32 samples
  int64_t *ids = nullptr;      // arrays: int64 token ids
  uint8_t *labelsU8 = nullptr; // IDX labels
  int64_t *labels = nullptr;   // arrays: int64 labels
  DatasetStorage() = default;
  DatasetStorage(const DatasetStorage &) = delete;
  ~DatasetStorage() {
    comet_rt_free(pixels);
    comet_rt_free(samples);
    comet_rt_free(ids);
    comet_rt_free(labelsU8);
    comet_rt_free(labels);
  }
};
} // namespace comet::rt

struct comet_rt_dataset {
  int64_t n = 0, c = 1, h = 0, w = 0, numClasses = 10;
  /// The dims of one sample and their product.
  std::vector<int64_t> sampleDims;
  int64_t elems = 0;
  bool synthetic = false;
  // A token dataset: int64 ids, labelsPerSample labels per sample; the
  // synthetic one draws ids in [0, vocab).
  bool tokens = false;
  int64_t vocab = 0, labelsPerSample = 1;
  uint64_t seed = 0;
  /// Sample i is sample first + i of the storage (or of the synthetic
  /// stream): a slice.
  int64_t first = 0;
  std::shared_ptr<DatasetStorage> storage;
  std::string description, dataName, labelsName;

  void setImageShape(int64_t c_, int64_t h_, int64_t w_) {
    c = c_;
    h = h_;
    w = w_;
    sampleDims = {c, h, w};
    elems = c * h * w;
  }
};

struct comet_rt_loader {
  const comet_rt_dataset *ds;
  int64_t batch;
  bool shuffle, dropLast;
  uint64_t seed;
  int64_t pos = 0;
  std::vector<int64_t> order;
};

namespace {

/// A file mapped read-only, unmapped when destroyed. Arrays are converted
/// out of the mapping into the dataset's storage, so the file's bytes are
/// not held in memory besides (the page cache keeps them while it can).
class MappedFile {
public:
  MappedFile() = default;
  MappedFile(const MappedFile &) = delete;
  ~MappedFile() {
    if (addr)
      munmap(addr, len);
  }
  int32_t map(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return fail(COMET_RT_ERROR_IO,
                  concat("cannot open ", path, ": ", std::strerror(errno)));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return fail(COMET_RT_ERROR_IO, concat(path, " is not a regular file"));
    }
    len = size_t(st.st_size);
    if (len) {
      void *p = mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        int err = errno;
        ::close(fd);
        return fail(COMET_RT_ERROR_IO,
                    concat("cannot map ", path, ": ", std::strerror(err)));
      }
      addr = p;
    }
    ::close(fd);
    return ok();
  }
  const uint8_t *data() const { return static_cast<const uint8_t *>(addr); }
  size_t size() const { return len; }

private:
  void *addr = nullptr;
  size_t len = 0;
};

/// msg with its "npy: "/"npz: " prefix replaced by the file's name.
std::string named(const std::string &name, const char *msg) {
  std::string m = msg;
  if (m.rfind("npy: ", 0) == 0 || m.rfind("npz: ", 0) == 0)
    m.erase(0, 5);
  return name + ": " + m;
}

/// One array of a file: an .npy file or a member of an .npz archive.
struct ArrayFile {
  MappedFile file;
  comet_rt_npz *npz = nullptr;
  comet_rt_npy array;
  std::string name; // the path, and [key] for a member
  ArrayFile() = default;
  ArrayFile(const ArrayFile &) = delete;
  ~ArrayFile() { comet_rt_npz_free(npz); }

  int32_t open(const std::string &path, const char *key,
               const char *defaultKey) {
    COMET_RT_TRY(file.map(path));
    const uint8_t *b = file.data();
    size_t n = file.size();
    // Told apart by their first bytes: "\x93NUMPY", or a ZIP record.
    bool npy = n >= 6 && std::memcmp(b, "\x93NUMPY", 6) == 0;
    bool zip = n >= 4 && b[0] == 'P' && b[1] == 'K' &&
               ((b[2] == 3 && b[3] == 4) || (b[2] == 5 && b[3] == 6));
    if (npy) {
      name = path;
      if (key)
        return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                    concat(path,
                           " is an .npy file, not an .npz archive: it "
                           "has no member '",
                           key, "'"));
      if (int32_t s = comet_rt_npy_parse(b, n, &array))
        return fail(s, named(path, comet_rt_last_error()));
      return ok();
    }
    if (!zip)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat(path, ": neither an .npy file (which starts with "
                               "\\x93NUMPY) nor an .npz archive (a ZIP "
                               "file)"));
    const char *k = key ? key : defaultKey;
    name = concat(path, "[", k, "]");
    if (int32_t s = comet_rt_npz_open(b, n, &npz))
      return fail(s, named(path, comet_rt_last_error()));
    if (int32_t s = comet_rt_npz_read(npz, k, &array))
      return fail(s, named(path, comet_rt_last_error()));
    return ok();
  }
};

std::string dimsStr(const comet_rt_npy &a, uint32_t from = 0) {
  std::string r;
  for (uint32_t i = from; i < a.rank; ++i)
    r += (i > from ? "x" : "") + std::to_string(a.dims[i]);
  return r.empty() ? "()" : r;
}

bool isInteger(int32_t type) {
  return type == COMET_RT_NPY_I64 || type == COMET_RT_NPY_I32 ||
         type == COMET_RT_NPY_U8;
}

/// The dataset of comet_rt_dataset_from_npy; errors name the arrays
/// dataName and labelsName.
int32_t makeArrayDataset(const comet_rt_npy &data, const std::string &dataName,
                         const comet_rt_npy &labels,
                         const std::string &labelsName, bool tokens,
                         int64_t numClasses, int64_t vocab,
                         comet_rt_dataset **out) {
  *out = nullptr;
  if (data.rank < 1)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat(dataName, ": a scalar holds no samples (the data "
                                 "must be N samples, N x ...)"));
  if (labels.rank < 1)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat(labelsName, ": a scalar holds no labels (the labels "
                                   "must be N or N x L)"));
  int64_t n = data.dims[0];
  if (n < 1 || data.num_elements == 0)
    return fail(
        COMET_RT_ERROR_INVALID_ARGUMENT,
        concat(dataName, ": shape ", dimsStr(data),
               n < 1 ? " holds no samples" : " holds samples of no elements"));
  if (labels.dims[0] != n)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat(dataName, " has ", n, " samples but ", labelsName,
                       " has ", labels.dims[0], " (shape ", dimsStr(labels),
                       ")"));
  int64_t elems = data.num_elements / n, perSample = labels.num_elements / n;
  if (perSample < 1)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat(labelsName, ": shape ", dimsStr(labels),
                       " holds no labels per sample"));
  if (tokens && !isInteger(data.type))
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                concat(dataName, " holds ", comet_rt_npy_type_name(data.type),
                       "; token ids are read from int64, int32 or uint8 "
                       "arrays"));
  if (!tokens && isInteger(data.type) && data.type != COMET_RT_NPY_U8)
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                concat(dataName, " holds ", comet_rt_npy_type_name(data.type),
                       "; float32 samples are read from float32, float64, "
                       "float16 or uint8 arrays (cast with "
                       "astype(numpy.float32))"));
  if (!isInteger(labels.type))
    return fail(COMET_RT_ERROR_UNSUPPORTED,
                concat(labelsName, " holds ",
                       comet_rt_npy_type_name(labels.type),
                       "; labels are read from int64, int32 or uint8 "
                       "arrays"));
  auto ds = std::make_unique<comet_rt_dataset>();
  ds->storage = std::make_shared<DatasetStorage>();
  DatasetStorage &st = *ds->storage;
  // Element counts are bounded by the files' bytes: these cannot wrap.
  size_t dataBytes = size_t(data.num_elements) * (tokens ? 8 : 4);
  size_t labelBytes = size_t(labels.num_elements) * 8;
  void *d = comet_rt_alloc(nullptr, dataBytes, COMET_RT_MEM_OTHER);
  if (tokens)
    st.ids = static_cast<int64_t *>(d);
  else
    st.samples = static_cast<float *>(d);
  st.labels = static_cast<int64_t *>(
      comet_rt_alloc(nullptr, labelBytes, COMET_RT_MEM_OTHER));
  if (!d || !st.labels)
    return fail(COMET_RT_ERROR_OUT_OF_MEMORY,
                concat("dataset: no memory for ", dataName, " (",
                       dataBytes + labelBytes, " bytes)"));
  if (int32_t s = tokens ? comet_rt_npy_to_i64(&data, st.ids)
                         : comet_rt_npy_to_f32(&data, st.samples))
    return fail(s, named(dataName, comet_rt_last_error()));
  if (int32_t s = comet_rt_npy_to_i64(&labels, st.labels))
    return fail(s, named(labelsName, comet_rt_last_error()));
  // Values the model cannot take: NaN samples, ids outside its table,
  // labels outside its classes.
  for (int64_t i = 0; i < data.num_elements; ++i) {
    if (!tokens && !std::isfinite(st.samples[i]))
      return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                  concat(dataName, ": element ", i % elems, " of sample ",
                         i / elems, " is ",
                         std::isnan(st.samples[i]) ? "NaN" : "infinite",
                         "; the samples must be finite"));
    if (tokens && vocab > 0 && (st.ids[i] < 0 || st.ids[i] >= vocab))
      return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                  concat(dataName, ": token id ", st.ids[i], " at sample ",
                         i / elems, ", position ", i % elems, " is not in [0, ",
                         vocab, ")"));
  }
  if (numClasses > 0)
    for (int64_t i = 0; i < labels.num_elements; ++i)
      if (st.labels[i] < 0 || st.labels[i] >= numClasses)
        return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                    concat(labelsName, ": label ", st.labels[i], " at sample ",
                           i / perSample,
                           perSample > 1 ? concat(", position ", i % perSample)
                                         : std::string(),
                           " is not in [0, ", numClasses, ")"));
  ds->n = n;
  ds->sampleDims.assign(data.dims + 1, data.dims + data.rank);
  ds->elems = elems;
  ds->tokens = tokens;
  ds->vocab = vocab;
  ds->numClasses = numClasses;
  ds->labelsPerSample = perSample;
  ds->dataName = dataName;
  ds->labelsName = labelsName;
  ds->description =
      concat(dataName, " (", comet_rt_npy_type_name(data.type), " ",
             dimsStr(data), ") and ", labelsName, " (",
             comet_rt_npy_type_name(labels.type), " ", dimsStr(labels), ")");
  *out = ds.release();
  return ok();
}

} // namespace

extern "C" {

int32_t comet_rt_idx_parse(const void *bytes, size_t size, comet_rt_idx *out) {
  if (!out || (!bytes && size))
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "idx: null argument");
  std::memset(out, 0, sizeof(*out));
  auto *p = static_cast<const uint8_t *>(bytes);
  if (size < 4)
    return fail(COMET_RT_ERROR_TRUNCATED,
                concat("idx: ", size, " bytes, shorter than the 4-byte magic"));
  if (p[0] != 0 || p[1] != 0)
    return fail(COMET_RT_ERROR_CORRUPT,
                "idx: bad magic (the first two bytes must be zero)");
  if (p[2] != 0x08)
    return fail(p[2] == 0x09 || (p[2] >= 0x0B && p[2] <= 0x0E)
                    ? COMET_RT_ERROR_UNSUPPORTED
                    : COMET_RT_ERROR_CORRUPT,
                concat("idx: element type 0x", std::to_string(p[2]),
                       " is not unsigned byte (0x08)"));
  uint32_t rank = p[3];
  if (rank < 1 || rank > COMET_RT_IDX_MAX_RANK)
    return fail(COMET_RT_ERROR_CORRUPT, concat("idx: bad rank ", rank));
  size_t headerBytes = 4 + 4 * (size_t)rank;
  if (size < headerBytes)
    return fail(COMET_RT_ERROR_TRUNCATED, "idx: truncated header");
  uint64_t n = 1;
  for (uint32_t i = 0; i < rank; ++i) {
    const uint8_t *d = p + 4 + 4 * i;
    uint64_t dim = ((uint64_t)d[0] << 24) | ((uint64_t)d[1] << 16) |
                   ((uint64_t)d[2] << 8) | (uint64_t)d[3];
    out->dims[i] = (int64_t)dim;
    // Checked before multiplying: 8 factors below 2^32 can wrap uint64.
    const uint64_t limit = (uint64_t)1 << 40;
    if (dim != 0 && n > limit / dim)
      return fail(COMET_RT_ERROR_CORRUPT, "idx: dims too large");
    n *= dim;
  }
  size_t payload = size - headerBytes;
  if (payload < n)
    return fail(COMET_RT_ERROR_TRUNCATED,
                concat("idx: truncated: the header says ", n,
                       " elements, the file has ", payload));
  if (payload > n)
    return fail(COMET_RT_ERROR_CORRUPT,
                concat("idx: ", payload - n, " trailing bytes after the data"));
  out->type_code = p[2];
  out->rank = rank;
  out->num_elements = (int64_t)n;
  out->data = p + headerBytes;
  return ok();
}

int32_t comet_rt_dataset_open_idx(const char *imagesPath,
                                  const char *labelsPath,
                                  comet_rt_dataset **out) {
  if (!imagesPath || !labelsPath || !out)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "dataset: null argument");
  *out = nullptr;
  std::vector<uint8_t> imgBytes, lblBytes;
  COMET_RT_TRY(readFile(imagesPath, imgBytes));
  COMET_RT_TRY(readFile(labelsPath, lblBytes));
  comet_rt_idx img, lbl;
  if (int32_t s = comet_rt_idx_parse(imgBytes.data(), imgBytes.size(), &img))
    return fail(s, concat(imagesPath, ": ", comet_rt_last_error()));
  if (int32_t s = comet_rt_idx_parse(lblBytes.data(), lblBytes.size(), &lbl))
    return fail(s, concat(labelsPath, ": ", comet_rt_last_error()));
  if (img.rank != 3)
    return fail(
        COMET_RT_ERROR_CORRUPT,
        concat(imagesPath, ": images must have rank 3, not ", img.rank));
  if (lbl.rank != 1)
    return fail(COMET_RT_ERROR_CORRUPT,
                concat(labelsPath, ": labels must have rank 1"));
  // A zero dim would make an empty dataset or zero-pixel samples, which the
  // loader and the model cannot use.
  if (img.num_elements == 0)
    return fail(COMET_RT_ERROR_CORRUPT,
                concat(imagesPath, ": images are ", img.dims[0], " x ",
                       img.dims[1], " x ", img.dims[2],
                       "; every dim must be at least 1"));
  if (img.dims[0] != lbl.dims[0])
    return fail(COMET_RT_ERROR_CORRUPT,
                concat(imagesPath, " has ", img.dims[0], " images but ",
                       labelsPath, " has ", lbl.dims[0], " labels"));
  for (int64_t i = 0; i < lbl.num_elements; ++i)
    if (lbl.data[i] >= 10)
      return fail(COMET_RT_ERROR_CORRUPT,
                  concat(labelsPath, ": label ", (int)lbl.data[i], " at ", i,
                         " is not in [0, 10)"));
  auto ds = std::make_unique<comet_rt_dataset>();
  ds->n = img.dims[0];
  ds->setImageShape(1, img.dims[1], img.dims[2]);
  ds->storage = std::make_shared<DatasetStorage>();
  DatasetStorage &st = *ds->storage;
  st.pixels = static_cast<uint8_t *>(
      comet_rt_alloc(nullptr, (size_t)img.num_elements, COMET_RT_MEM_OTHER));
  st.labelsU8 = static_cast<uint8_t *>(
      comet_rt_alloc(nullptr, (size_t)lbl.num_elements, COMET_RT_MEM_OTHER));
  if (!st.pixels || !st.labelsU8)
    return fail(COMET_RT_ERROR_OUT_OF_MEMORY, "dataset: out of memory");
  std::memcpy(st.pixels, img.data, (size_t)img.num_elements);
  std::memcpy(st.labelsU8, lbl.data, (size_t)lbl.num_elements);
  ds->description = concat(imagesPath, " and ", labelsPath);
  *out = ds.release();
  return ok();
}

int32_t comet_rt_dataset_open_fashion_mnist(const char *dir, int32_t train,
                                            comet_rt_dataset **out) {
  std::string d = dir ? dir : COMET_RT_FASHION_MNIST_DIR;
  std::string prefix = d + "/" + (train ? "train" : "t10k");
  return comet_rt_dataset_open_idx((prefix + "-images-idx3-ubyte.gz").c_str(),
                                   (prefix + "-labels-idx1-ubyte.gz").c_str(),
                                   out);
}

int32_t comet_rt_dataset_from_npy(const comet_rt_npy *data,
                                  const comet_rt_npy *labels, int32_t tokens,
                                  int64_t numClasses, int64_t vocab,
                                  comet_rt_dataset **out) {
  if (!data || !labels || !out)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "dataset: null argument");
  return makeArrayDataset(*data, "data", *labels, "labels", tokens != 0,
                          numClasses, vocab, out);
}

int32_t comet_rt_dataset_open_arrays(const char *dataPath, const char *dataKey,
                                     const char *labelsPath,
                                     const char *labelsKey, int32_t tokens,
                                     int64_t numClasses, int64_t vocab,
                                     comet_rt_dataset **out) {
  if (!dataPath || !out)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "dataset: null argument");
  *out = nullptr;
  ArrayFile data, labels;
  COMET_RT_TRY(data.open(dataPath, dataKey, "x"));
  if (!labelsPath && !data.npz)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat(dataPath, " is an .npy file, which holds one "
                                 "array: the labels need a file of their "
                                 "own"));
  COMET_RT_TRY(labels.open(labelsPath ? labelsPath : dataPath, labelsKey, "y"));
  return makeArrayDataset(data.array, data.name, labels.array, labels.name,
                          tokens != 0, numClasses, vocab, out);
}

int32_t comet_rt_dataset_slice(const comet_rt_dataset *ds, int64_t first,
                               int64_t count, comet_rt_dataset **out) {
  if (!ds || !out)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "dataset_slice: null argument");
  *out = nullptr;
  if (first < 0 || count < 1 || first > ds->n - count)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat("dataset_slice: ", count, " samples from ", first,
                       " are not within the dataset's ", ds->n));
  auto *s = new comet_rt_dataset(*ds);
  s->first = ds->first + first;
  s->n = count;
  *out = s;
  return ok();
}

int32_t comet_rt_dataset_synthetic(int64_t n, int64_t c, int64_t h, int64_t w,
                                   int64_t numClasses, uint64_t seed,
                                   comet_rt_dataset **out) {
  if (!out)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "synthetic: null out");
  *out = nullptr;
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0 || numClasses <= 0)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat("synthetic: bad shape n=", n, " c=", c, " h=", h,
                       " w=", w, " classes=", numClasses));
  auto ds = new comet_rt_dataset();
  ds->n = n;
  ds->setImageShape(c, h, w);
  ds->numClasses = numClasses;
  ds->synthetic = true;
  ds->seed = seed;
  *out = ds;
  return ok();
}

int32_t comet_rt_dataset_synthetic_tokens(int64_t n, int64_t seqLen,
                                          int64_t vocab,
                                          int64_t labelsPerSample,
                                          int64_t numClasses, uint64_t seed,
                                          comet_rt_dataset **out) {
  if (!out)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "synthetic tokens: null out");
  *out = nullptr;
  if (n <= 0 || seqLen <= 0 || vocab <= 0 || numClasses <= 0 ||
      labelsPerSample <= 0 || labelsPerSample > seqLen)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat("synthetic tokens: bad shape n=", n,
                       " seq_len=", seqLen, " vocab=", vocab,
                       " labels_per_sample=", labelsPerSample,
                       " classes=", numClasses,
                       " (labels_per_sample must be in [1, seq_len])"));
  // A synthetic source of n samples of 1 x 1 x seqLen, drawn as tokens.
  COMET_RT_TRY(
      comet_rt_dataset_synthetic(n, 1, 1, seqLen, numClasses, seed, out));
  (*out)->tokens = true;
  (*out)->vocab = vocab;
  (*out)->labelsPerSample = labelsPerSample;
  (*out)->sampleDims = {seqLen};
  return ok();
}

int32_t comet_rt_dataset_is_tokens(const comet_rt_dataset *ds) {
  return ds && ds->tokens ? 1 : 0;
}

int64_t comet_rt_dataset_labels_per_sample(const comet_rt_dataset *ds) {
  return ds ? ds->labelsPerSample : 0;
}

int32_t comet_rt_dataset_get_tokens(const comet_rt_dataset *ds,
                                    int64_t index, int64_t *tokens,
                                    int64_t *labels) {
  if (!ds || !tokens || !labels)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "dataset_get_tokens: null argument");
  if (!ds->tokens)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "dataset_get_tokens: not a token dataset");
  if (index < 0 || index >= ds->n)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                concat("dataset_get_tokens: index ", index, " out of [0, ",
                       ds->n, ")"));
  index += ds->first;
  int64_t T = ds->elems, L = ds->labelsPerSample;
  if (ds->storage) {
    std::memcpy(tokens, ds->storage->ids + index * T, size_t(T) * 8);
    std::memcpy(labels, ds->storage->labels + index * L, size_t(L) * 8);
    return ok();
  }
  // A walk s_0, s_1, ... with s_{k+1} = s_k + 1, 2 or 3 (mod vocab): the
  // sequence is s_0..s_{T-1}, label j the next id after position
  // T - L + j, modulo the classes.
  uint64_t state = ds->seed * 0x9E3779B97F4A7C15ull + (uint64_t)index;
  splitmix64(state);
  uint64_t s = bounded(state, (uint64_t)ds->vocab);
  for (int64_t k = 0; k < T; ++k) {
    tokens[k] = (int64_t)s;
    s = (s + 1 + bounded(state, 3)) % (uint64_t)ds->vocab;
    if (k >= T - L)
      labels[k - (T - L)] = (int64_t)(s % (uint64_t)ds->numClasses);
  }
  return ok();
}

void comet_rt_dataset_free(comet_rt_dataset *ds) { delete ds; }

int64_t comet_rt_dataset_size(const comet_rt_dataset *ds) {
  return ds ? ds->n : 0;
}

void comet_rt_dataset_sample_shape(const comet_rt_dataset *ds,
                                   int64_t dims[3]) {
  if (!ds || !dims)
    return;
  // The dims padded with 1 in front; leading ones fold into dims[0].
  dims[0] = dims[1] = dims[2] = 1;
  size_t r = ds->sampleDims.size();
  for (size_t i = 0; i < r; ++i) {
    size_t at = i + 3 < r ? 0 : i + 3 - r;
    dims[at] *= ds->sampleDims[i];
  }
}

int32_t comet_rt_dataset_sample_rank(const comet_rt_dataset *ds) {
  return ds ? int32_t(ds->sampleDims.size()) : 0;
}

void comet_rt_dataset_sample_dims(const comet_rt_dataset *ds, int64_t *dims) {
  if (!ds || !dims)
    return;
  for (size_t i = 0; i < ds->sampleDims.size(); ++i)
    dims[i] = ds->sampleDims[i];
}

const char *comet_rt_dataset_array_name(const comet_rt_dataset *ds,
                                        int32_t which) {
  if (!ds)
    return "";
  return which ? ds->labelsName.c_str() : ds->dataName.c_str();
}

const char *comet_rt_dataset_description(const comet_rt_dataset *ds) {
  return ds ? ds->description.c_str() : "";
}

int64_t comet_rt_dataset_num_classes(const comet_rt_dataset *ds) {
  return ds ? ds->numClasses : 0;
}

int32_t comet_rt_dataset_get(const comet_rt_dataset *ds, int64_t index,
                             float *image, int64_t *label) {
  if (!ds || !image || !label)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "dataset_get: null argument");
  if (ds->tokens)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "dataset_get: a token dataset (comet_rt_dataset_get_tokens)");
  if (index < 0 || index >= ds->n)
    return fail(
        COMET_RT_ERROR_INVALID_ARGUMENT,
        concat("dataset_get: index ", index, " out of [0, ", ds->n, ")"));
  index += ds->first;
  int64_t sample = ds->elems;
  if (ds->synthetic) {
    uint64_t state = ds->seed * 0x9E3779B97F4A7C15ull + (uint64_t)index;
    splitmix64(state);
    *label = (int64_t)bounded(state, (uint64_t)ds->numClasses);
    for (int64_t i = 0; i < sample; ++i)
      image[i] = (float)(splitmix64(state) >> 40) * (1.0f / 16777216.0f);
    return ok();
  }
  const DatasetStorage &st = *ds->storage;
  if (st.samples) {
    std::memcpy(image, st.samples + index * sample, size_t(sample) * 4);
    std::memcpy(label, st.labels + index * ds->labelsPerSample,
                size_t(ds->labelsPerSample) * 8);
    return ok();
  }
  const uint8_t *src = st.pixels + index * sample;
  for (int64_t i = 0; i < sample; ++i)
    image[i] = (float)src[i] / 255.0f;
  *label = st.labelsU8[index];
  return ok();
}

int32_t comet_rt_loader_create(const comet_rt_dataset *ds, int64_t batch,
                               int32_t shuffle, uint64_t seed, int32_t dropLast,
                               comet_rt_loader **out) {
  if (!ds || !out || batch <= 0)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "loader_create: null dataset/out or batch <= 0");
  auto *ld = new comet_rt_loader{ds, batch, shuffle != 0, dropLast != 0, seed};
  comet_rt_loader_start_epoch(ld, 0);
  *out = ld;
  return ok();
}

void comet_rt_loader_free(comet_rt_loader *loader) { delete loader; }

void comet_rt_loader_start_epoch(comet_rt_loader *ld, int64_t epoch) {
  if (!ld)
    return;
  ld->pos = 0;
  ld->order.resize((size_t)ld->ds->n);
  for (int64_t i = 0; i < ld->ds->n; ++i)
    ld->order[i] = i;
  if (!ld->shuffle)
    return;
  uint64_t state = ld->seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(epoch + 1));
  for (int64_t i = ld->ds->n - 1; i > 0; --i) {
    int64_t j = (int64_t)bounded(state, (uint64_t)(i + 1));
    std::swap(ld->order[i], ld->order[j]);
  }
}

int64_t comet_rt_loader_num_batches(const comet_rt_loader *ld) {
  if (!ld)
    return 0;
  return ld->dropLast ? ld->ds->n / ld->batch
                      : (ld->ds->n + ld->batch - 1) / ld->batch;
}

} // extern "C"

namespace {
/// Fills the next batch of images or tokens (get: the dataset's per-sample
/// reader) and their labels; 0 at the end of the epoch, or where a short
/// last batch is dropped.
template <typename T, typename Get>
int64_t nextBatch(comet_rt_loader *ld, T *x, int64_t *labels, Get get) {
  int64_t left = ld->ds->n - ld->pos;
  int64_t count = left < ld->batch ? left : ld->batch;
  if (count <= 0 || (ld->dropLast && count < ld->batch))
    return 0;
  int64_t sample = ld->ds->elems, L = ld->ds->labelsPerSample;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i)
    get(ld->ds, ld->order[ld->pos + i], x + i * sample, labels + i * L);
  ld->pos += count;
  return count;
}
} // namespace

extern "C" {

int64_t comet_rt_loader_next(comet_rt_loader *ld, float *images,
                             int64_t *labels) {
  if (!ld || !images || !labels || ld->ds->tokens)
    return 0;
  return nextBatch(ld, images, labels, comet_rt_dataset_get);
}

int64_t comet_rt_loader_next_tokens(comet_rt_loader *ld, int64_t *tokens,
                                    int64_t *labels) {
  if (!ld || !tokens || !labels || !ld->ds->tokens)
    return 0;
  return nextBatch(ld, tokens, labels, comet_rt_dataset_get_tokens);
}

int64_t comet_rt_loader_order(const comet_rt_loader *ld, int64_t pos) {
  if (!ld || pos < 0 || pos >= (int64_t)ld->order.size())
    return -1;
  return ld->order[pos];
}

int64_t comet_rt_loader_position(const comet_rt_loader *ld) {
  return ld ? ld->pos : 0;
}

int32_t comet_rt_loader_seek(comet_rt_loader *ld, int64_t pos) {
  if (!ld)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT, "loader_seek: null loader");
  if (pos < 0 || pos > ld->ds->n)
    return fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                "loader_seek: position " + std::to_string(pos) +
                    " is outside the epoch of " + std::to_string(ld->ds->n) +
                    " samples");
  ld->pos = pos;
  return ok();
}

} // extern "C"
