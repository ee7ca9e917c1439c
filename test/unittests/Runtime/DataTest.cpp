//===- DataTest.cpp - IDX reader, synthetic source, loader ----------------===//

#include "comet/runtime/data.h"
#include "comet/runtime/alloc.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/comet-rt-" + std::to_string(getpid()) + "-" +
         name;
}

void writeFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

void writeGz(const std::string &path, const std::vector<uint8_t> &bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), (unsigned)bytes.size());
  gzclose(f);
}

std::vector<uint8_t> idx(std::vector<uint32_t> dims, uint8_t fill = 7) {
  std::vector<uint8_t> b = {0, 0, 0x08, (uint8_t)dims.size()};
  size_t n = 1;
  for (uint32_t d : dims) {
    b.push_back(d >> 24);
    b.push_back(d >> 16);
    b.push_back(d >> 8);
    b.push_back(d);
    n *= d;
  }
  for (size_t i = 0; i < n; ++i)
    b.push_back((uint8_t)(fill + i) % 10);
  return b;
}

TEST(Idx, ParsesAndRejectsMalformedBuffers) {
  std::vector<uint8_t> good = idx({2, 3, 4});
  comet_rt_idx info;
  ASSERT_EQ(comet_rt_idx_parse(good.data(), good.size(), &info),
            COMET_RT_SUCCESS);
  EXPECT_EQ(info.rank, 3u);
  EXPECT_EQ(info.dims[0], 2);
  EXPECT_EQ(info.dims[2], 4);
  EXPECT_EQ(info.num_elements, 24);
  EXPECT_EQ(info.data, good.data() + 16);

  std::vector<uint8_t> badMagic = good;
  badMagic[0] = 1;
  EXPECT_EQ(comet_rt_idx_parse(badMagic.data(), badMagic.size(), &info),
            COMET_RT_ERROR_CORRUPT);
  EXPECT_NE(std::string(comet_rt_last_error()).find("magic"),
            std::string::npos);
  std::vector<uint8_t> floatType = good;
  floatType[2] = 0x0D;
  EXPECT_EQ(comet_rt_idx_parse(floatType.data(), floatType.size(), &info),
            COMET_RT_ERROR_UNSUPPORTED);
  std::vector<uint8_t> rank0 = good;
  rank0[3] = 0;
  EXPECT_EQ(comet_rt_idx_parse(rank0.data(), rank0.size(), &info),
            COMET_RT_ERROR_CORRUPT);
  for (size_t cut : {0, 3, 8, 15, 39}) // inside magic, dims, data
    EXPECT_EQ(comet_rt_idx_parse(good.data(), cut, &info),
              COMET_RT_ERROR_TRUNCATED)
        << "cut at " << cut;
  std::vector<uint8_t> trailing = good;
  trailing.push_back(0);
  EXPECT_EQ(comet_rt_idx_parse(trailing.data(), trailing.size(), &info),
            COMET_RT_ERROR_CORRUPT);
  // Dims whose product is huge must not overflow into a small size.
  std::vector<uint8_t> huge = {0, 0, 8, 4};
  for (int i = 0; i < 4; ++i)
    for (uint8_t v : {0xFF, 0xFF, 0xFF, 0xFF})
      huge.push_back(v);
  EXPECT_EQ(comet_rt_idx_parse(huge.data(), huge.size(), &info),
            COMET_RT_ERROR_CORRUPT);
  // 2^20 * 2^20 * 2^24: the prefix 2^40 passes a size cap, and the full
  // product wraps to 0 in uint64 if multiplied unchecked, which would accept
  // an empty payload (found by the fuzzer).
  std::vector<uint8_t> wrap = {0, 0,  8, 3, 0, 16, 0, 0,
                               0, 16, 0, 0, 1, 0,  0, 0};
  EXPECT_EQ(comet_rt_idx_parse(wrap.data(), wrap.size(), &info),
            COMET_RT_ERROR_CORRUPT);
}

TEST(Idx, EveryTruncationIsReportedAsTruncated) {
  // A file cut anywhere (magic, rank, dims, data) is TRUNCATED with a message
  // that says so, never a parse of fewer elements.
  std::vector<uint8_t> good = idx({3, 2, 5});
  comet_rt_idx info;
  for (size_t cut = 0; cut < good.size(); ++cut) {
    std::vector<uint8_t> part(good.begin(), good.begin() + cut);
    ASSERT_EQ(comet_rt_idx_parse(part.data(), part.size(), &info),
              COMET_RT_ERROR_TRUNCATED)
        << "cut at " << cut;
    std::string msg = comet_rt_last_error();
    EXPECT_TRUE(msg.find("truncated") != std::string::npos ||
                msg.find("shorter than") != std::string::npos)
        << "cut at " << cut << ": " << msg;
  }
  std::vector<uint8_t> cutData(good.begin(), good.end() - 1);
  comet_rt_idx_parse(cutData.data(), cutData.size(), &info);
  EXPECT_NE(std::string(comet_rt_last_error())
                .find("the header says 30 elements, the file has 29"),
            std::string::npos)
      << comet_rt_last_error();
}

TEST(FashionMnist, ReadsTheDebianTestSplit) {
  comet_rt_dataset *ds = nullptr;
  ASSERT_EQ(
      comet_rt_dataset_open_fashion_mnist(COMET_FASHION_MNIST_DIR, 0, &ds),
      COMET_RT_SUCCESS)
      << comet_rt_last_error();
  EXPECT_EQ(comet_rt_dataset_size(ds), 10000);
  int64_t shape[3];
  comet_rt_dataset_sample_shape(ds, shape);
  EXPECT_EQ(shape[0], 1);
  EXPECT_EQ(shape[1], 28);
  EXPECT_EQ(shape[2], 28);
  std::vector<int64_t> counts(10, 0);
  std::vector<float> img(784);
  float lo = 1, hi = 0;
  for (int64_t i = 0; i < 10000; ++i) {
    int64_t label = -1;
    ASSERT_EQ(comet_rt_dataset_get(ds, i, img.data(), &label),
              COMET_RT_SUCCESS);
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 10);
    ++counts[label];
    for (float v : img) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  // The test split is balanced: 1000 per class.
  for (int64_t c : counts)
    EXPECT_EQ(c, 1000);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);
  // Its first label is 9 (ankle boot), as published with the dataset.
  int64_t first;
  comet_rt_dataset_get(ds, 0, img.data(), &first);
  EXPECT_EQ(first, 9);
  EXPECT_EQ(comet_rt_dataset_get(ds, 10000, img.data(), &first),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  comet_rt_dataset_free(ds);
}

TEST(FashionMnist, MissingFileNamesTheDebianPackage) {
  comet_rt_dataset *ds = nullptr;
  EXPECT_EQ(comet_rt_dataset_open_fashion_mnist("/nonexistent/dir", 1, &ds),
            COMET_RT_ERROR_IO);
  EXPECT_EQ(ds, nullptr);
  std::string msg = comet_rt_last_error();
  EXPECT_NE(msg.find("dataset-fashion-mnist"), std::string::npos) << msg;
  EXPECT_NE(msg.find("/nonexistent/dir/train-images-idx3-ubyte.gz"),
            std::string::npos)
      << msg;
}

TEST(FashionMnist, CorruptFilesAreErrors) {
  std::string img = tempPath("img.gz"), lbl = tempPath("lbl.gz");
  comet_rt_dataset *ds = nullptr;
  // A valid pair first, so the failures below are about the corruption.
  writeGz(img, idx({5, 4, 3}));
  writeGz(lbl, idx({5}));
  ASSERT_EQ(comet_rt_dataset_open_idx(img.c_str(), lbl.c_str(), &ds),
            COMET_RT_SUCCESS)
      << comet_rt_last_error();
  EXPECT_EQ(comet_rt_dataset_size(ds), 5);
  comet_rt_dataset_free(ds);
  ds = nullptr;

  // Truncated IDX payload inside a valid gzip stream.
  std::vector<uint8_t> shortImg = idx({5, 4, 3});
  shortImg.resize(shortImg.size() - 10);
  writeGz(img, shortImg);
  EXPECT_EQ(comet_rt_dataset_open_idx(img.c_str(), lbl.c_str(), &ds),
            COMET_RT_ERROR_TRUNCATED);
  EXPECT_NE(std::string(comet_rt_last_error()).find(img), std::string::npos);

  // A gzip stream cut in the middle.
  writeGz(img, idx({50, 28, 28}));
  std::ifstream in(img, std::ios::binary);
  std::vector<uint8_t> gz((std::istreambuf_iterator<char>(in)), {});
  gz.resize(gz.size() / 2);
  writeFile(img, gz);
  EXPECT_EQ(comet_rt_dataset_open_idx(img.c_str(), lbl.c_str(), &ds),
            COMET_RT_ERROR_TRUNCATED);
  EXPECT_NE(std::string(comet_rt_last_error()).find("truncated"),
            std::string::npos)
      << comet_rt_last_error();

  // Bad magic, plain (not gzipped) file.
  std::vector<uint8_t> bad = idx({5, 4, 3});
  bad[1] = 0x42;
  writeFile(img, bad);
  EXPECT_EQ(comet_rt_dataset_open_idx(img.c_str(), lbl.c_str(), &ds),
            COMET_RT_ERROR_CORRUPT);

  // Counts that disagree, labels out of range, wrong rank.
  writeGz(img, idx({4, 4, 3}));
  EXPECT_EQ(comet_rt_dataset_open_idx(img.c_str(), lbl.c_str(), &ds),
            COMET_RT_ERROR_CORRUPT);
  writeGz(img, idx({5, 4, 3}));
  std::vector<uint8_t> badLabel = idx({5});
  badLabel.back() = 200;
  writeGz(lbl, badLabel);
  EXPECT_EQ(comet_rt_dataset_open_idx(img.c_str(), lbl.c_str(), &ds),
            COMET_RT_ERROR_CORRUPT);
  writeGz(lbl, idx({5, 1}));
  EXPECT_EQ(comet_rt_dataset_open_idx(img.c_str(), lbl.c_str(), &ds),
            COMET_RT_ERROR_CORRUPT);

  // Well-formed IDX with a zero dim: no images, or images of no pixels.
  writeGz(lbl, idx({0}));
  writeGz(img, idx({0, 4, 3}));
  EXPECT_EQ(comet_rt_dataset_open_idx(img.c_str(), lbl.c_str(), &ds),
            COMET_RT_ERROR_CORRUPT);
  EXPECT_NE(std::string(comet_rt_last_error()).find("0 x 4 x 3"),
            std::string::npos)
      << comet_rt_last_error();
  writeGz(lbl, idx({5}));
  writeGz(img, idx({5, 0, 3}));
  EXPECT_EQ(comet_rt_dataset_open_idx(img.c_str(), lbl.c_str(), &ds),
            COMET_RT_ERROR_CORRUPT);
  EXPECT_NE(std::string(comet_rt_last_error()).find("at least 1"),
            std::string::npos)
      << comet_rt_last_error();
  EXPECT_EQ(ds, nullptr);
  std::remove(img.c_str());
  std::remove(lbl.c_str());
}

// start_epoch then seek reads on as a loader that read that far: what a
// resumed run's loader does.
TEST(Loader, SeekContinuesWhereAnotherStood) {
  comet_rt_dataset *ds = nullptr;
  ASSERT_EQ(comet_rt_dataset_synthetic(50, 1, 2, 2, 5, 7, &ds),
            COMET_RT_SUCCESS);
  comet_rt_loader *a = nullptr, *b = nullptr;
  ASSERT_EQ(comet_rt_loader_create(ds, 8, 1, 3, 1, &a), COMET_RT_SUCCESS);
  ASSERT_EQ(comet_rt_loader_create(ds, 8, 1, 3, 1, &b), COMET_RT_SUCCESS);
  std::vector<float> xa(8 * 4), xb(8 * 4);
  std::vector<int64_t> ya(8), yb(8);
  comet_rt_loader_start_epoch(a, 2);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(comet_rt_loader_next(a, xa.data(), ya.data()), 8);
  EXPECT_EQ(comet_rt_loader_position(a), 24);
  comet_rt_loader_start_epoch(b, 2);
  ASSERT_EQ(comet_rt_loader_seek(b, comet_rt_loader_position(a)),
            COMET_RT_SUCCESS);
  int64_t na, nb;
  do {
    na = comet_rt_loader_next(a, xa.data(), ya.data());
    nb = comet_rt_loader_next(b, xb.data(), yb.data());
    EXPECT_EQ(na, nb);
    EXPECT_EQ(xa, xb);
    EXPECT_EQ(ya, yb);
  } while (na > 0);
  // The end of the epoch is a position; past it is not.
  EXPECT_EQ(comet_rt_loader_seek(b, 50), COMET_RT_SUCCESS);
  EXPECT_EQ(comet_rt_loader_next(b, xb.data(), yb.data()), 0);
  EXPECT_NE(comet_rt_loader_seek(b, 51), COMET_RT_SUCCESS);
  EXPECT_NE(std::string(comet_rt_last_error()).find("outside the epoch"),
            std::string::npos);
  EXPECT_NE(comet_rt_loader_seek(b, -1), COMET_RT_SUCCESS);
  comet_rt_loader_free(a);
  comet_rt_loader_free(b);
  comet_rt_dataset_free(ds);
}

TEST(Loader, SeededShuffleIsAPermutationAndReproducible) {
  comet_rt_dataset *ds = nullptr;
  ASSERT_EQ(comet_rt_dataset_synthetic(103, 2, 3, 4, 7, 42, &ds),
            COMET_RT_SUCCESS);
  comet_rt_loader *a = nullptr, *b = nullptr, *c = nullptr;
  ASSERT_EQ(comet_rt_loader_create(ds, 10, 1, 5, 0, &a), COMET_RT_SUCCESS);
  ASSERT_EQ(comet_rt_loader_create(ds, 10, 1, 5, 0, &b), COMET_RT_SUCCESS);
  ASSERT_EQ(comet_rt_loader_create(ds, 10, 1, 6, 1, &c), COMET_RT_SUCCESS);
  EXPECT_EQ(comet_rt_loader_num_batches(a), 11);
  EXPECT_EQ(comet_rt_loader_num_batches(c), 10);
  std::set<int64_t> seen;
  bool differs = false, sameAsSeed = true;
  for (int64_t i = 0; i < 103; ++i) {
    seen.insert(comet_rt_loader_order(a, i));
    sameAsSeed &= comet_rt_loader_order(a, i) == comet_rt_loader_order(b, i);
    differs |= comet_rt_loader_order(a, i) != comet_rt_loader_order(c, i);
  }
  EXPECT_EQ(seen.size(), 103u);
  EXPECT_TRUE(sameAsSeed);
  EXPECT_TRUE(differs);
  std::vector<int64_t> epoch0(103);
  for (int64_t i = 0; i < 103; ++i)
    epoch0[i] = comet_rt_loader_order(a, i);
  comet_rt_loader_start_epoch(a, 1);
  bool epochDiffers = false;
  for (int64_t i = 0; i < 103; ++i)
    epochDiffers |= epoch0[i] != comet_rt_loader_order(a, i);
  EXPECT_TRUE(epochDiffers);

  // Batches carry exactly the samples of the order.
  comet_rt_loader_start_epoch(b, 0);
  std::vector<float> imgs(10 * 24), one(24);
  std::vector<int64_t> labels(10);
  int64_t total = 0, got;
  while ((got = comet_rt_loader_next(b, imgs.data(), labels.data())) > 0) {
    for (int64_t i = 0; i < got; ++i) {
      int64_t lbl;
      comet_rt_dataset_get(ds, comet_rt_loader_order(b, total + i), one.data(),
                           &lbl);
      EXPECT_EQ(lbl, labels[i]);
      EXPECT_GE(lbl, 0);
      EXPECT_LT(lbl, 7);
      for (int j = 0; j < 24; ++j) {
        EXPECT_EQ(one[j], imgs[i * 24 + j]);
        EXPECT_GE(one[j], 0.0f);
        EXPECT_LT(one[j], 1.0f);
      }
    }
    total += got;
  }
  EXPECT_EQ(total, 103);
  int64_t dropped = 0;
  while ((got = comet_rt_loader_next(c, imgs.data(), labels.data())) > 0)
    dropped += got;
  EXPECT_EQ(dropped, 100);
  comet_rt_loader_free(a);
  comet_rt_loader_free(b);
  comet_rt_loader_free(c);
  comet_rt_dataset_free(ds);
  EXPECT_EQ(comet_rt_dataset_synthetic(0, 1, 1, 1, 1, 0, &ds),
            COMET_RT_ERROR_INVALID_ARGUMENT);
}

// Synthetic token sequences: ids in [0, vocab) that step by 1, 2 or 3
// (mod vocab), label j the id after position T - L + j (mod the classes),
// the same for the same (seed, index), and a loader that batches them.
TEST(TokenData, NextTokenSequencesAndTheirLoader) {
  const int64_t n = 50, T = 6, vocab = 11, classes = 7;
  for (int64_t L : {T, int64_t(1)}) {
    comet_rt_dataset *ds = nullptr;
    ASSERT_EQ(comet_rt_dataset_synthetic_tokens(n, T, vocab, L, classes, 3,
                                                &ds),
              COMET_RT_SUCCESS)
        << comet_rt_last_error();
    EXPECT_EQ(comet_rt_dataset_is_tokens(ds), 1);
    EXPECT_EQ(comet_rt_dataset_labels_per_sample(ds), L);
    EXPECT_EQ(comet_rt_dataset_size(ds), n);
    int64_t shape[3];
    comet_rt_dataset_sample_shape(ds, shape);
    EXPECT_EQ(shape[2], T);
    std::set<int64_t> firsts;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> tok(T), lab(L), tok2(T), lab2(L);
      ASSERT_EQ(comet_rt_dataset_get_tokens(ds, i, tok.data(), lab.data()),
                COMET_RT_SUCCESS);
      ASSERT_EQ(comet_rt_dataset_get_tokens(ds, i, tok2.data(), lab2.data()),
                COMET_RT_SUCCESS);
      EXPECT_EQ(tok, tok2);
      EXPECT_EQ(lab, lab2);
      firsts.insert(tok[0]);
      for (int64_t k = 0; k < T; ++k) {
        EXPECT_GE(tok[k], 0);
        EXPECT_LT(tok[k], vocab);
        if (k > 0) {
          int64_t step = (tok[k] - tok[k - 1] + vocab) % vocab;
          EXPECT_TRUE(step >= 1 && step <= 3) << i << " " << k;
        }
      }
      for (int64_t j = 0; j < L; ++j) {
        EXPECT_GE(lab[j], 0);
        EXPECT_LT(lab[j], classes);
        // The label of position T - L + j is the next id: the one stored
        // at the following position, when there is one.
        int64_t pos = T - L + j;
        if (pos + 1 < T)
          EXPECT_EQ(lab[j], tok[pos + 1] % classes) << i << " " << j;
        int64_t step = 0;
        for (int64_t s = 1; s <= 3; ++s)
          if ((tok[pos] + s) % vocab % classes == lab[j])
            step = s;
        EXPECT_NE(step, 0) << i << " " << j;
      }
    }
    EXPECT_GT(firsts.size(), 5u); // s_0 is drawn, not fixed

    // The loader gives the same samples in its order; the image calls
    // refuse a token dataset.
    comet_rt_loader *ld = nullptr;
    ASSERT_EQ(comet_rt_loader_create(ds, 8, 1, 9, 1, &ld), COMET_RT_SUCCESS);
    std::vector<int64_t> toks(8 * T), labs(8 * L), one(T), oneLab(L);
    int64_t total = 0, got;
    while ((got = comet_rt_loader_next_tokens(ld, toks.data(), labs.data())) >
           0) {
      for (int64_t i = 0; i < got; ++i) {
        comet_rt_dataset_get_tokens(ds, comet_rt_loader_order(ld, total + i),
                                    one.data(), oneLab.data());
        for (int64_t k = 0; k < T; ++k)
          EXPECT_EQ(toks[i * T + k], one[k]);
        for (int64_t j = 0; j < L; ++j)
          EXPECT_EQ(labs[i * L + j], oneLab[j]);
      }
      total += got;
    }
    EXPECT_EQ(total, 48);
    std::vector<float> img(8 * T);
    comet_rt_loader_start_epoch(ld, 0);
    EXPECT_EQ(comet_rt_loader_next(ld, img.data(), labs.data()), 0);
    int64_t lbl;
    EXPECT_NE(comet_rt_dataset_get(ds, 0, img.data(), &lbl), COMET_RT_SUCCESS);
    comet_rt_loader_free(ld);
    comet_rt_dataset_free(ds);
  }
  // An image dataset is no token dataset.
  comet_rt_dataset *img = nullptr;
  ASSERT_EQ(comet_rt_dataset_synthetic(4, 1, 2, 2, 3, 0, &img),
            COMET_RT_SUCCESS);
  EXPECT_EQ(comet_rt_dataset_is_tokens(img), 0);
  EXPECT_EQ(comet_rt_dataset_labels_per_sample(img), 1);
  std::vector<int64_t> t(4), l(1);
  EXPECT_NE(comet_rt_dataset_get_tokens(img, 0, t.data(), l.data()),
            COMET_RT_SUCCESS);
  comet_rt_dataset_free(img);
  comet_rt_dataset *bad = nullptr;
  EXPECT_EQ(comet_rt_dataset_synthetic_tokens(4, 6, 11, 7, 5, 0, &bad),
            COMET_RT_ERROR_INVALID_ARGUMENT); // more labels than tokens
  EXPECT_EQ(comet_rt_dataset_synthetic_tokens(4, 6, 0, 6, 5, 0, &bad),
            COMET_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bad, nullptr);
}

} // namespace
