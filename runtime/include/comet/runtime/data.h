/*===- comet/runtime/data.h - Training data sources -----------------------===*
 *
 * Fashion-MNIST in IDX form (the gzipped files of the Debian package
 * dataset-fashion-mnist, /usr/share/datasets/fashion-mnist), the user's own
 * arrays in NumPy's .npy and .npz files, a synthetic source of any shape for
 * memory and speed runs, synthetic token sequences for language models, and
 * a batch loader with a seeded, platform-independent shuffle.
 *
 * Samples come out as float32 (IDX images in [0, 1], NCHW) or as int64
 * token ids; labels as int64.
 * Every function reports failures through its return code and
 * comet_rt_last_error(); bad or truncated files never crash.
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_DATA_H
#define COMET_RUNTIME_DATA_H

#include "comet/runtime/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define COMET_RT_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define COMET_RT_IDX_MAX_RANK 8

/* The header of an IDX file parsed from memory. */
typedef struct comet_rt_idx {
  uint8_t type_code; /* 0x08 unsigned byte is the only one supported */
  uint32_t rank;
  int64_t dims[COMET_RT_IDX_MAX_RANK];
  int64_t num_elements;
  const uint8_t *data; /* points into the parsed buffer */
} comet_rt_idx;

/* Parses and checks an (already decompressed) IDX buffer: magic 0x0000,
 * type, rank 1..8, and a size that matches the dims exactly. Extra bytes
 * after the data are an error too. */
COMET_RT_API int32_t comet_rt_idx_parse(const void *bytes, size_t size,
                                        comet_rt_idx *out);

/* ---- NumPy arrays (.npy, and .npz archives of them) ---- */

#define COMET_RT_NPY_MAX_RANK 64

/* The element types read from .npy files; any other descr is
 * COMET_RT_ERROR_UNSUPPORTED. */
typedef enum comet_rt_npy_type {
  COMET_RT_NPY_F16 = 1, /* '<f2' */
  COMET_RT_NPY_F32 = 2, /* '<f4' */
  COMET_RT_NPY_F64 = 3, /* '<f8' */
  COMET_RT_NPY_U8 = 4,  /* '|u1' */
  COMET_RT_NPY_I32 = 5, /* '<i4' */
  COMET_RT_NPY_I64 = 6  /* '<i8' */
} comet_rt_npy_type;

/* The header of a .npy buffer and where its data are. */
typedef struct comet_rt_npy {
  uint8_t major, minor; /* format version 1.0, 2.0 or 3.0 */
  int32_t type;         /* comet_rt_npy_type */
  uint32_t elem_bytes;
  int32_t big_endian;    /* descr '>': swapped when converted */
  int32_t fortran_order; /* column-major: transposed when converted */
  uint32_t rank;         /* 0 for a scalar */
  int64_t dims[COMET_RT_NPY_MAX_RANK];
  int64_t num_elements;
  const uint8_t *data; /* num_elements * elem_bytes bytes, maybe unaligned */
} comet_rt_npy;

/* Parses and checks a .npy buffer: the magic "\x93NUMPY", version 1.0, 2.0
 * or 3.0, a header that is exactly a Python dict literal with the keys
 * descr (a type of comet_rt_npy_type, little- or big-endian), fortran_order
 * (True or False) and shape (a tuple of non-negative ints, rank <= 64), and
 * data of exactly the size the header gives. Structured, object and string
 * arrays are COMET_RT_ERROR_UNSUPPORTED. out->data points into bytes. */
COMET_RT_API int32_t comet_rt_npy_parse(const void *bytes, size_t size,
                                        comet_rt_npy *out);

/* "float32", "uint8", ...; "?" for an unknown type. */
COMET_RT_API const char *comet_rt_npy_type_name(int32_t type);

/* Writes a's num_elements elements to out as C-order (row-major) float32:
 * float32 and float16 exactly, float64 rounded to nearest (a finite value
 * beyond float32's range is an error naming it), uint8 as the floats 0 to
 * 255 (not scaled). Big-endian data are swapped and Fortran-order data
 * transposed. int32 and int64 are COMET_RT_ERROR_UNSUPPORTED. */
COMET_RT_API int32_t comet_rt_npy_to_f32(const comet_rt_npy *a, float *out);
/* The same to int64, exactly, from int64, int32 and uint8; the float
 * types are COMET_RT_ERROR_UNSUPPORTED. */
COMET_RT_API int32_t comet_rt_npy_to_i64(const comet_rt_npy *a, int64_t *out);

typedef struct comet_rt_npz comet_rt_npz;

/* Reads the central directory of a ZIP archive in memory (an .npz:
 * numpy.savez stores its members, numpy.savez_compressed deflates them),
 * with ZIP64 records. Every member must be stored (method 0) or deflated
 * (8), unencrypted, on one disk, with a local header that matches the
 * central directory and data before the directory; names are unique.
 * bytes must outlive the handle. */
COMET_RT_API int32_t comet_rt_npz_open(const void *bytes, size_t size,
                                       comet_rt_npz **out);
COMET_RT_API void comet_rt_npz_free(comet_rt_npz *npz);
COMET_RT_API int64_t comet_rt_npz_num_members(const comet_rt_npz *npz);
/* The name of member index ("x.npy"); NULL out of range. */
COMET_RT_API const char *comet_rt_npz_member_name(const comet_rt_npz *npz,
                                                  int64_t index);
/* Parses the member of key: the exact name, else "key.npy". A deflated
 * member is inflated into memory the handle owns; either way its CRC-32 is
 * checked. out->data stays valid until the handle is freed. A missing key
 * is an error that lists the members. */
COMET_RT_API int32_t comet_rt_npz_read(comet_rt_npz *npz, const char *key,
                                       comet_rt_npy *out);

typedef struct comet_rt_dataset comet_rt_dataset;

/* Opens an image file (rank 3, N x H x W, uint8) and a label file (rank 1,
 * N, uint8, values < num_classes = 10) in IDX form, gzipped or not. */
COMET_RT_API int32_t comet_rt_dataset_open_idx(const char *images_path,
                                               const char *labels_path,
                                               comet_rt_dataset **out);

/* Fashion-MNIST's train (train != 0, 60000 images) or test (10000) split
 * from dir (NULL: COMET_RT_FASHION_MNIST_DIR). */
COMET_RT_API int32_t comet_rt_dataset_open_fashion_mnist(
    const char *dir, int32_t train, comet_rt_dataset **out);

/* n samples of shape c x h x w with labels in [0, num_classes); sample i
 * is a pure function of (seed, i), generated on demand (no storage). */
COMET_RT_API int32_t comet_rt_dataset_synthetic(int64_t n, int64_t c, int64_t h,
                                                int64_t w, int64_t num_classes,
                                                uint64_t seed,
                                                comet_rt_dataset **out);

/* n token sequences for a language model: sample i (a pure function of
 * (seed, i)) is seq_len int64 ids in [0, vocab) and labels_per_sample int64
 * labels in [0, num_classes), 1 <= labels_per_sample <= seq_len. The ids
 * walk s_{k+1} = (s_k + 1, 2 or 3) mod vocab from a uniform s_0, and label
 * j is the id that follows position seq_len - labels_per_sample + j,
 * modulo num_classes: next-token prediction that a model can learn (its
 * best loss is log 3). comet_rt_dataset_get and comet_rt_loader_next refuse
 * such a dataset; read it with the _tokens functions. Its sample shape is
 * seq_len (1, 1, seq_len as comet_rt_dataset_sample_shape). */
COMET_RT_API int32_t comet_rt_dataset_synthetic_tokens(
    int64_t n, int64_t seq_len, int64_t vocab, int64_t labels_per_sample,
    int64_t num_classes, uint64_t seed, comet_rt_dataset **out);
/* 1 for a token dataset (synthetic or from arrays), else 0. */
COMET_RT_API int32_t comet_rt_dataset_is_tokens(const comet_rt_dataset *ds);
/* Labels per sample: 1 for images. */
COMET_RT_API int64_t
comet_rt_dataset_labels_per_sample(const comet_rt_dataset *ds);
/* Writes sample index of a token dataset: its ids (seq_len, or the
 * sample's elements for arrays) and labels_per_sample labels. */
COMET_RT_API int32_t comet_rt_dataset_get_tokens(const comet_rt_dataset *ds,
                                                 int64_t index,
                                                 int64_t *tokens,
                                                 int64_t *labels);

/* A dataset from arrays: data of N samples of any shape (data->dims[0] =
 * N, rank >= 1) and labels of N x L (rank >= 1; L, the product of the
 * dims after the first, labels per sample). tokens == 0: float32 samples,
 * read from float32, float16, float64 or uint8 arrays as
 * comet_rt_npy_to_f32 converts them, every value finite; tokens != 0:
 * int64 token ids from int64, int32 or uint8 arrays, in [0, vocab) when
 * vocab > 0. Labels are int64, int32 or uint8, in [0, num_classes) when
 * num_classes > 0. N, the sample and L must be at least 1. The arrays are
 * converted into storage the dataset owns (C order, 4 or 8 bytes per
 * element). */
COMET_RT_API int32_t comet_rt_dataset_from_npy(
    const comet_rt_npy *data, const comet_rt_npy *labels, int32_t tokens,
    int64_t num_classes, int64_t vocab, comet_rt_dataset **out);

/* comet_rt_dataset_from_npy on files. Each path is an .npy file or an .npz
 * archive (told by its first bytes, not its name); an archive's member is
 * the key (NULL: "x" for the data, "y" for the labels), a key for an .npy
 * file is an error. labels_path NULL: the labels are in data_path's
 * archive. Files are mapped read-only while they are converted, and every
 * error names the file (and member). */
COMET_RT_API int32_t comet_rt_dataset_open_arrays(
    const char *data_path, const char *data_key, const char *labels_path,
    const char *labels_key, int32_t tokens, int64_t num_classes, int64_t vocab,
    comet_rt_dataset **out);

/* Samples [first, first + count) of ds as a dataset of their own that
 * shares ds's storage (ds may be freed first). */
COMET_RT_API int32_t comet_rt_dataset_slice(const comet_rt_dataset *ds,
                                            int64_t first, int64_t count,
                                            comet_rt_dataset **out);

/* The rank of one sample and its dims (dims holds COMET_RT_NPY_MAX_RANK):
 * C, H, W for IDX and synthetic images, seq_len for token sequences, the
 * data array's dims after the first for arrays. */
COMET_RT_API int32_t comet_rt_dataset_sample_rank(const comet_rt_dataset *ds);
COMET_RT_API void comet_rt_dataset_sample_dims(const comet_rt_dataset *ds,
                                               int64_t *dims);
/* The name of the data (which = 0) or labels (1) array of a dataset from
 * arrays, as its errors name it: the path, and the key in brackets for an
 * archive's member ("d.npz[x]"); "" for the other datasets. */
COMET_RT_API const char *comet_rt_dataset_array_name(const comet_rt_dataset *ds,
                                                     int32_t which);
/* What the dataset was read from: for arrays the files (and members), the
 * type in the file and the shape, e.g. "x.npy (uint8 60000x1x28x28) and
 * y.npy (int64 60000)"; "" for the synthetic sources. */
COMET_RT_API const char *
comet_rt_dataset_description(const comet_rt_dataset *ds);

COMET_RT_API void comet_rt_dataset_free(comet_rt_dataset *ds);
COMET_RT_API int64_t comet_rt_dataset_size(const comet_rt_dataset *ds);
/* dims[0..2] = C, H, W of one sample (a sample of another rank: its dims
 * padded with 1 in front, the leading ones multiplied into dims[0]). */
COMET_RT_API void comet_rt_dataset_sample_shape(const comet_rt_dataset *ds,
                                                int64_t dims[3]);
COMET_RT_API int64_t comet_rt_dataset_num_classes(const comet_rt_dataset *ds);

/* Writes sample index (its elements as floats) and its labels
 * (labels_per_sample of them). */
COMET_RT_API int32_t comet_rt_dataset_get(const comet_rt_dataset *ds,
                                          int64_t index, float *image,
                                          int64_t *label);

typedef struct comet_rt_loader comet_rt_loader;

/* Batches of batch samples. shuffle != 0 permutes the order every epoch
 * with a permutation that depends only on (seed, epoch). drop_last != 0
 * skips a last partial batch. The loader does not own ds. */
COMET_RT_API int32_t comet_rt_loader_create(const comet_rt_dataset *ds,
                                            int64_t batch, int32_t shuffle,
                                            uint64_t seed, int32_t drop_last,
                                            comet_rt_loader **out);
COMET_RT_API void comet_rt_loader_free(comet_rt_loader *loader);

/* Starts epoch (0-based): rewinds and draws that epoch's order. A new
 * loader starts at epoch 0. */
COMET_RT_API void comet_rt_loader_start_epoch(comet_rt_loader *loader,
                                              int64_t epoch);

/* Batches in one epoch. */
COMET_RT_API int64_t comet_rt_loader_num_batches(const comet_rt_loader *ld);

/* Fills images (batch samples of floats) and labels (batch *
 * labels_per_sample int64) with the next
 * batch; returns how many samples it wrote, 0 at the end of the epoch (and
 * for a token dataset). */
COMET_RT_API int64_t comet_rt_loader_next(comet_rt_loader *loader,
                                          float *images, int64_t *labels);
/* The same for a token dataset: tokens (batch*seq_len int64) and labels
 * (batch*labels_per_sample int64); 0 for an image dataset. */
COMET_RT_API int64_t comet_rt_loader_next_tokens(comet_rt_loader *loader,
                                                 int64_t *tokens,
                                                 int64_t *labels);

/* The sample index at position pos of the current epoch's order. */
COMET_RT_API int64_t comet_rt_loader_order(const comet_rt_loader *loader,
                                           int64_t pos);

/* Samples of the current epoch already returned. */
COMET_RT_API int64_t comet_rt_loader_position(const comet_rt_loader *loader);

/* Moves to position pos of the current epoch's order (0 <= pos <= the
 * dataset's size), as if pos samples had been returned: a run resumed at
 * (epoch, pos) with start_epoch then seek reads what it would have read.
 * Fails for a position outside the epoch. */
COMET_RT_API int32_t comet_rt_loader_seek(comet_rt_loader *loader, int64_t pos);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_DATA_H */
