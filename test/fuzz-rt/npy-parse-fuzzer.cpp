//===- npy-parse-fuzzer.cpp - Fuzz the .npy and .npz readers --------------===//
//
// Any bytes are tried as an .npy buffer and as an .npz archive. What is
// accepted is read in full: every byte the header claims, its conversion
// to float32 and int64 into buffers of exactly the claimed size, and (for
// an archive) every member, then a dataset of its first two arrays. ASan
// then sees a reader that accepted a size or offset the buffer lacks.
//
//===----------------------------------------------------------------------===//
#include "comet/runtime/data.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

unsigned sink;

void readArray(const comet_rt_npy &a) {
  int64_t n = 1;
  for (uint32_t i = 0; i < a.rank; ++i)
    n *= a.dims[i];
  if (n != a.num_elements || a.rank > COMET_RT_NPY_MAX_RANK)
    abort(); // the header and the count must agree
  for (int64_t i = 0; i < n * int64_t(a.elem_bytes); ++i)
    sink += a.data[i];
  std::vector<float> f(static_cast<size_t>(n));
  std::vector<int64_t> l(static_cast<size_t>(n));
  // One of the two converts each type; the other refuses it.
  int32_t sf = comet_rt_npy_to_f32(&a, f.data());
  int32_t si = comet_rt_npy_to_i64(&a, l.data());
  if (n > 0 && (sf == COMET_RT_SUCCESS) == (si == COMET_RT_SUCCESS) &&
      a.type != COMET_RT_NPY_U8 && a.type != COMET_RT_NPY_F64)
    abort();
  for (int64_t i = 0; i < n; ++i)
    sink += unsigned(l[size_t(i)]) + (f[size_t(i)] > 0);
}

void tryDataset(const comet_rt_npy &x, const comet_rt_npy &y, int32_t tokens) {
  comet_rt_dataset *ds = nullptr;
  if (comet_rt_dataset_from_npy(&x, &y, tokens, 10, 256, &ds) !=
      COMET_RT_SUCCESS)
    return;
  int64_t n = comet_rt_dataset_size(ds);
  int64_t perSample = x.num_elements / n;
  int64_t perLabel = comet_rt_dataset_labels_per_sample(ds);
  std::vector<float> f(static_cast<size_t>(perSample));
  std::vector<int64_t> ids(static_cast<size_t>(perSample)),
      labels(static_cast<size_t>(perLabel));
  int32_t s =
      tokens ? comet_rt_dataset_get_tokens(ds, n - 1, ids.data(), labels.data())
             : comet_rt_dataset_get(ds, n - 1, f.data(), labels.data());
  if (s != COMET_RT_SUCCESS)
    abort();
  comet_rt_dataset_free(ds);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A copy of exactly size bytes, so reads past the end are caught.
  std::vector<uint8_t> buf(data, data + size);
  comet_rt_npy a;
  if (comet_rt_npy_parse(buf.data(), buf.size(), &a) == COMET_RT_SUCCESS) {
    if (a.data < buf.data() ||
        a.data + a.num_elements * a.elem_bytes != buf.data() + buf.size())
      abort(); // the data must end the buffer exactly
    readArray(a);
    tryDataset(a, a, size & 1);
  }
  comet_rt_npz *z = nullptr;
  if (comet_rt_npz_open(buf.data(), buf.size(), &z) != COMET_RT_SUCCESS)
    return 0;
  std::vector<comet_rt_npy> arrays;
  for (int64_t i = 0, n = comet_rt_npz_num_members(z); i < n; ++i)
    if (comet_rt_npz_read(z, comet_rt_npz_member_name(z, i), &a) ==
        COMET_RT_SUCCESS) {
      readArray(a);
      arrays.push_back(a);
    }
  if (arrays.size() >= 2)
    tryDataset(arrays[0], arrays[1], size & 1);
  comet_rt_npz_free(z);
  return 0;
}
