//===- Data.cpp - IDX reader, synthetic sources and batch loader ----------===//

#include "comet/runtime/data.h"
#include "Internal.h"
#include "comet/runtime/alloc.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
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

struct comet_rt_dataset {
  int64_t n = 0, c = 1, h = 0, w = 0, numClasses = 10;
  bool synthetic = false;
  // A token dataset (comet_rt_dataset_synthetic_tokens): w = the sequence
  // length, ids in [0, vocab), labelsPerSample labels per sample.
  bool tokens = false;
  int64_t vocab = 0, labelsPerSample = 1;
  uint64_t seed = 0;
  uint8_t *images = nullptr; // n*h*w, counted as "other"
  uint8_t *labels = nullptr; // n
  ~comet_rt_dataset() {
    comet_rt_free(images);
    comet_rt_free(labels);
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
  auto ds = new comet_rt_dataset();
  ds->n = img.dims[0];
  ds->h = img.dims[1];
  ds->w = img.dims[2];
  ds->images = static_cast<uint8_t *>(
      comet_rt_alloc(nullptr, (size_t)img.num_elements, COMET_RT_MEM_OTHER));
  ds->labels = static_cast<uint8_t *>(
      comet_rt_alloc(nullptr, (size_t)lbl.num_elements, COMET_RT_MEM_OTHER));
  if (!ds->images || !ds->labels) {
    delete ds;
    return fail(COMET_RT_ERROR_OUT_OF_MEMORY, "dataset: out of memory");
  }
  std::memcpy(ds->images, img.data, (size_t)img.num_elements);
  std::memcpy(ds->labels, lbl.data, (size_t)lbl.num_elements);
  *out = ds;
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
  ds->c = c;
  ds->h = h;
  ds->w = w;
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
  // A walk s_0, s_1, ... with s_{k+1} = s_k + 1, 2 or 3 (mod vocab): the
  // sequence is s_0..s_{T-1}, label j the next id after position
  // T - L + j, modulo the classes.
  uint64_t state = ds->seed * 0x9E3779B97F4A7C15ull + (uint64_t)index;
  splitmix64(state);
  int64_t T = ds->w, L = ds->labelsPerSample;
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
  dims[0] = ds->c;
  dims[1] = ds->h;
  dims[2] = ds->w;
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
  int64_t sample = ds->c * ds->h * ds->w;
  if (ds->synthetic) {
    uint64_t state = ds->seed * 0x9E3779B97F4A7C15ull + (uint64_t)index;
    splitmix64(state);
    *label = (int64_t)bounded(state, (uint64_t)ds->numClasses);
    for (int64_t i = 0; i < sample; ++i)
      image[i] = (float)(splitmix64(state) >> 40) * (1.0f / 16777216.0f);
    return ok();
  }
  const uint8_t *src = ds->images + index * sample;
  for (int64_t i = 0; i < sample; ++i)
    image[i] = (float)src[i] / 255.0f;
  *label = ds->labels[index];
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

int64_t comet_rt_loader_next(comet_rt_loader *ld, float *images,
                             int64_t *labels) {
  if (!ld || !images || !labels || ld->ds->tokens)
    return 0;
  int64_t left = ld->ds->n - ld->pos;
  int64_t count = left < ld->batch ? left : ld->batch;
  if (count <= 0 || (ld->dropLast && count < ld->batch))
    return 0;
  int64_t sample = ld->ds->c * ld->ds->h * ld->ds->w;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i)
    comet_rt_dataset_get(ld->ds, ld->order[ld->pos + i], images + i * sample,
                         labels + i);
  ld->pos += count;
  return count;
}

int64_t comet_rt_loader_next_tokens(comet_rt_loader *ld, int64_t *tokens,
                                    int64_t *labels) {
  if (!ld || !tokens || !labels || !ld->ds->tokens)
    return 0;
  int64_t left = ld->ds->n - ld->pos;
  int64_t count = left < ld->batch ? left : ld->batch;
  if (count <= 0 || (ld->dropLast && count < ld->batch))
    return 0;
  int64_t T = ld->ds->w, L = ld->ds->labelsPerSample;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i)
    comet_rt_dataset_get_tokens(ld->ds, ld->order[ld->pos + i], tokens + i * T,
                                labels + i * L);
  ld->pos += count;
  return count;
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
