/*===- comet/runtime/data.h - Training data sources -----------------------===*
 *
 * Fashion-MNIST in IDX form (the gzipped files of the Debian package
 * dataset-fashion-mnist, /usr/share/datasets/fashion-mnist), a synthetic
 * source of any shape for memory and speed runs, synthetic token sequences
 * for language models, and a batch loader with a seeded,
 * platform-independent shuffle.
 *
 * Images come out as float32 in [0, 1], NCHW; labels as int64.
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
 * 1, 1, seq_len. */
COMET_RT_API int32_t comet_rt_dataset_synthetic_tokens(
    int64_t n, int64_t seq_len, int64_t vocab, int64_t labels_per_sample,
    int64_t num_classes, uint64_t seed, comet_rt_dataset **out);
/* 1 for a token dataset, else 0. */
COMET_RT_API int32_t comet_rt_dataset_is_tokens(const comet_rt_dataset *ds);
/* Labels per sample: 1 for images. */
COMET_RT_API int64_t
comet_rt_dataset_labels_per_sample(const comet_rt_dataset *ds);
/* Writes sample index of a token dataset: seq_len ids and
 * labels_per_sample labels. */
COMET_RT_API int32_t comet_rt_dataset_get_tokens(const comet_rt_dataset *ds,
                                                 int64_t index,
                                                 int64_t *tokens,
                                                 int64_t *labels);

COMET_RT_API void comet_rt_dataset_free(comet_rt_dataset *ds);
COMET_RT_API int64_t comet_rt_dataset_size(const comet_rt_dataset *ds);
/* dims[0..2] = C, H, W of one sample. */
COMET_RT_API void comet_rt_dataset_sample_shape(const comet_rt_dataset *ds,
                                                int64_t dims[3]);
COMET_RT_API int64_t comet_rt_dataset_num_classes(const comet_rt_dataset *ds);

/* Writes sample index (C*H*W floats) and its label. */
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

/* Fills images (batch*C*H*W floats) and labels (batch int64) with the next
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
