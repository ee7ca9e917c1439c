//===- EngineTest.cpp - comet::Engine and the compressed-handle ABI -------===//
#include "comet/Engine/Engine.h"
#include "comet/Tuner/EngineTuner.h"
#include "comet/driver/Coverage.h"
#include "comet/runtime/alloc.h"
#include "comet/runtime/codec.h"
#include "comet/runtime/exec.h"
#include "comet/runtime/handles.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

std::string fixture(const char *model) {
  return std::string(COMET_FIXTURES) + "/" + model + "/training_model.onnx";
}

/// A rank-2 f32 memref over data.
struct Desc {
  std::vector<int64_t> d;
  comet_rt_memref m;
  Desc(float *data, int64_t rows, int64_t cols) {
    d = {reinterpret_cast<int64_t>(data),
         reinterpret_cast<int64_t>(data),
         0,
         rows,
         cols,
         cols,
         1};
    m = {2, d.data()};
  }
};

void batch(int64_t n, std::vector<float> &x, std::vector<int64_t> &y,
           unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(0, 1);
  x.resize(n * 28 * 28);
  y.resize(n);
  for (float &v : x)
    v = u(g);
  for (int64_t i = 0; i < n; ++i)
    y[i] = i % 10;
}

/// A contiguous rank-3 f32 memref [a, b, c] over data.
struct Desc3 {
  std::vector<int64_t> d;
  comet_rt_memref m;
  Desc3(float *data, int64_t a, int64_t b, int64_t c) {
    d = {reinterpret_cast<int64_t>(data),
         reinterpret_cast<int64_t>(data),
         0,
         a,
         b,
         c,
         b * c,
         c,
         1};
    m = {3, d.data()};
  }
};

TEST(Handles, ChannelScalesGiveEachChannelItsBound) {
  comet_rt_slots_reset(nullptr);
  // [2, 3, 128]: channel c of both samples within 1e-3 * scale[c], 128
  // elements a channel, so no block spans two.
  const double scale[] = {1, 4, 10};
  std::vector<float> x(2 * 3 * 128), y(x.size(), -1);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(0.37f * i) * float(1 + (i / 128) % 3);
  Desc3 dx(x.data(), 2, 3, 128), dy(y.data(), 2, 3, 128);
  ASSERT_EQ(comet_rt_slot_set_eb(nullptr, 5, 1e-3), 0);
  ASSERT_EQ(comet_rt_slot_set_channel_scale(nullptr, 5, scale, 3), 0);
  double got[3] = {};
  EXPECT_EQ(comet_rt_slot_get_channel_scale(nullptr, 5, got, 3), 3);
  EXPECT_EQ(got[2], 10.0);
  int64_t h = _mlir_ciface_comet_rt_compress(nullptr, &dx.m, COMET_RT_CODEC_SZ,
                                             5, 1e-4, /*site=*/0);
  ASSERT_NE(h, 0) << comet_rt_handles_last_error();
  ASSERT_EQ(_mlir_ciface_comet_rt_decompress(nullptr, h, &dy.m), 0);
  double worst[3] = {};
  for (size_t i = 0; i < x.size(); ++i) {
    size_t c = (i / 128) % 3;
    double e = std::fabs(double(x[i]) - double(y[i]));
    EXPECT_LE(e, 1e-3 * scale[c]) << i;
    worst[c] = std::max(worst[c], e);
  }
  // The looser channels use their room: more than the slot's bound.
  EXPECT_GT(worst[1], 1e-3);
  EXPECT_GT(worst[2], 4e-3);
  comet_rt_site_stats st;
  ASSERT_EQ(comet_rt_site_get_stats(nullptr, 0, &st), 0);
  EXPECT_DOUBLE_EQ(st.last_eb, 1e-3); // the slot's bound, the tightest
  const int64_t oneBound = st.last_bytes_out;
  _mlir_ciface_comet_rt_handle_free(nullptr, h);
  // Back to one bound: a larger stream, every element within 1e-3.
  ASSERT_EQ(comet_rt_slot_set_channel_scale(nullptr, 5, nullptr, 0), 0);
  EXPECT_EQ(comet_rt_slot_get_channel_scale(nullptr, 5, nullptr, 0), 0);
  h = _mlir_ciface_comet_rt_compress(nullptr, &dx.m, COMET_RT_CODEC_SZ, 5, 1e-4,
                                     /*site=*/0);
  ASSERT_NE(h, 0);
  ASSERT_EQ(comet_rt_site_get_stats(nullptr, 0, &st), 0);
  EXPECT_GT(st.last_bytes_out, oneBound);
  _mlir_ciface_comet_rt_handle_free(nullptr, h);
  // 2 elements a channel and sample: the table would cost more than it
  // saves (comet_rt_codec_channel_bounds_pay), so one bound, 1e-3, though
  // the slot has channel scales again.
  ASSERT_EQ(comet_rt_slot_set_channel_scale(nullptr, 5, scale, 3), 0);
  {
    std::vector<float> s(2 * 3 * 2), t(s.size(), -1);
    for (size_t i = 0; i < s.size(); ++i)
      s[i] = 0.3f * float(i);
    Desc3 ds(s.data(), 2, 3, 2), dt(t.data(), 2, 3, 2);
    int64_t hs = _mlir_ciface_comet_rt_compress(
        nullptr, &ds.m, COMET_RT_CODEC_SZ, 5, 1e-4, /*site=*/1);
    ASSERT_NE(hs, 0) << comet_rt_handles_last_error();
    ASSERT_EQ(_mlir_ciface_comet_rt_decompress(nullptr, hs, &dt.m), 0);
    for (size_t i = 0; i < s.size(); ++i)
      EXPECT_LE(std::fabs(double(s[i]) - double(t[i])), 1e-3) << i;
    // The handle holds the one-bound stream, no channel table: the bytes of
    // a slot at the same bound without channel scales.
    ASSERT_EQ(comet_rt_slot_set_eb(nullptr, 6, 1e-3), 0);
    int64_t ho = _mlir_ciface_comet_rt_compress(
        nullptr, &ds.m, COMET_RT_CODEC_SZ, 6, 1e-4, /*site=*/2);
    ASSERT_NE(ho, 0) << comet_rt_handles_last_error();
    EXPECT_EQ(comet_rt_handle_bytes(hs), comet_rt_handle_bytes(ho));
    _mlir_ciface_comet_rt_handle_free(nullptr, ho);
    _mlir_ciface_comet_rt_handle_free(nullptr, hs);
  }
  // Scales that do not match the tensor's channels: an error, no handle.
  ASSERT_EQ(comet_rt_slot_set_channel_scale(nullptr, 5, scale, 2), 0);
  EXPECT_EQ(_mlir_ciface_comet_rt_compress(nullptr, &dx.m, COMET_RT_CODEC_SZ, 5,
                                           1e-4, /*site=*/0),
            0);
  EXPECT_NE(std::string(comet_rt_handles_last_error()).find("2 channel bounds"),
            std::string::npos)
      << comet_rt_handles_last_error();
  // Bad scales are refused and leave the slot as it was.
  const double below[] = {1, 0.5, 2};
  const double nan[] = {1, std::nan(""), 2};
  EXPECT_NE(comet_rt_slot_set_channel_scale(nullptr, 5, below, 3), 0);
  EXPECT_NE(comet_rt_slot_set_channel_scale(nullptr, 5, nan, 3), 0);
  EXPECT_NE(comet_rt_slot_set_channel_scale(nullptr, -1, scale, 3), 0);
  EXPECT_NE(comet_rt_slot_set_channel_scale(nullptr, 5, nullptr, 3), 0);
  EXPECT_EQ(comet_rt_slot_get_channel_scale(nullptr, 5, nullptr, 0), 2);
  comet_rt_slots_reset(nullptr);
  EXPECT_EQ(comet_rt_slot_get_channel_scale(nullptr, 5, nullptr, 0), 0);
}

TEST(Handles, SzRoundTripWithinTheSlotBound) {
  comet_rt_slots_reset(nullptr);
  std::vector<float> x(64 * 32), y(64 * 32, -1);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(0.01f * i) * (i % 7 == 0 ? 0.0f : 1.0f);
  Desc dx(x.data(), 64, 32), dy(y.data(), 64, 32);
  // The slot's value wins over the compiled bound once defined.
  ASSERT_EQ(comet_rt_slot_set_eb(nullptr, 3, 1e-2), 0);
  int64_t h =
      _mlir_ciface_comet_rt_compress(nullptr, &dx.m, COMET_RT_CODEC_SZ, 3, 1e-4,
                                     /*site=*/0);
  ASSERT_NE(h, 0) << comet_rt_handles_last_error();
  comet_rt_alloc_stats s;
  comet_rt_alloc_get_stats(nullptr, &s);
  EXPECT_EQ(s.current[COMET_RT_MEM_COMPRESSED], comet_rt_handle_bytes(h));
  ASSERT_EQ(_mlir_ciface_comet_rt_decompress(nullptr, h, &dy.m), 0);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::fabs(x[i] - y[i]), 1e-2) << i;
    if (x[i] == 0) {
      EXPECT_EQ(y[i], 0.0f) << i;
    }
  }
  comet_rt_site_stats st;
  ASSERT_EQ(comet_rt_site_get_stats(nullptr, 0, &st), 0);
  EXPECT_EQ(st.calls, 1);
  EXPECT_EQ(st.slot, 3);
  EXPECT_DOUBLE_EQ(st.last_eb, 1e-2);
  EXPECT_EQ(st.last_bytes_in, int64_t(x.size() * 4));
  _mlir_ciface_comet_rt_handle_free(nullptr, h);
  comet_rt_alloc_get_stats(nullptr, &s);
  EXPECT_EQ(s.current[COMET_RT_MEM_COMPRESSED], 0);
}

// A site's first sz compression measures its fixed-width size; a site set
// to the fixed-width codec (comet_rt_site_set_entropy) then takes exactly
// that, the others follow the process-wide setting.
TEST(Handles, SiteEntropyAndItsFixedWidthSize) {
  comet_rt_slots_reset(nullptr);
  comet_rt_sites_measure_fixed_width(nullptr, 1);
  std::vector<float> x(64 * 256);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(0.003f * i) + 0.01f * std::cos(0.7f * i);
  Desc dx(x.data(), 64, 256);
  EXPECT_EQ(comet_rt_site_get_entropy(nullptr, 5), -1);
  EXPECT_EQ(comet_rt_site_get_fixed_width_bytes(nullptr, 5), 0);
  int64_t h = _mlir_ciface_comet_rt_compress(nullptr, &dx.m, COMET_RT_CODEC_SZ,
                                             7, 1e-4, /*site=*/5);
  ASSERT_NE(h, 0) << comet_rt_handles_last_error();
  const int64_t entropyCoded = comet_rt_handle_bytes(h);
  const int64_t fixed = comet_rt_site_get_fixed_width_bytes(nullptr, 5);
  EXPECT_GT(fixed, entropyCoded); // the Rice-coded chunks pay here
  _mlir_ciface_comet_rt_handle_free(nullptr, h);
  ASSERT_EQ(comet_rt_site_set_entropy(nullptr, 5, COMET_RT_CODEC_ENTROPY_NONE),
            0);
  EXPECT_EQ(comet_rt_site_get_entropy(nullptr, 5), COMET_RT_CODEC_ENTROPY_NONE);
  h = _mlir_ciface_comet_rt_compress(nullptr, &dx.m, COMET_RT_CODEC_SZ, 7, 1e-4,
                                     5);
  ASSERT_NE(h, 0) << comet_rt_handles_last_error();
  EXPECT_EQ(comet_rt_handle_bytes(h), fixed);
  std::vector<float> y(x.size());
  Desc dy(y.data(), 64, 256);
  ASSERT_EQ(_mlir_ciface_comet_rt_decompress(nullptr, h, &dy.m), 0);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_LE(std::fabs(x[i] - y[i]), 1e-4) << i;
  _mlir_ciface_comet_rt_handle_free(nullptr, h);
  EXPECT_NE(comet_rt_site_set_entropy(nullptr, 5, 4), 0);
  EXPECT_NE(comet_rt_site_set_entropy(nullptr, -1, 0), 0);
  comet_rt_sites_measure_fixed_width(nullptr, 0);
  comet_rt_slots_reset(nullptr);
  EXPECT_EQ(comet_rt_site_get_entropy(nullptr, 5), -1);
  EXPECT_EQ(comet_rt_site_get_fixed_width_bytes(nullptr, 5), 0);
}

TEST(Handles, UndefinedSlotTakesTheCompiledBound) {
  comet_rt_slots_reset(nullptr);
  std::vector<float> x(128, 0.5f);
  Desc dx(x.data(), 2, 64);
  int64_t h = _mlir_ciface_comet_rt_compress(nullptr, &dx.m, COMET_RT_CODEC_SZ,
                                             9, 2.5e-3, 0);
  ASSERT_NE(h, 0);
  EXPECT_DOUBLE_EQ(comet_rt_slot_get_eb(nullptr, 9), 2.5e-3);
  _mlir_ciface_comet_rt_handle_free(nullptr, h);
}

TEST(Handles, BadInputIsAnErrorNotACrash) {
  comet_rt_slots_reset(nullptr);
  std::vector<float> x(16, 1.0f), y(8);
  Desc dx(x.data(), 4, 4), dy(y.data(), 2, 4);
  EXPECT_EQ(_mlir_ciface_comet_rt_compress(nullptr, &dx.m, 7, -1, 0, 0), 0);
  EXPECT_NE(std::string(comet_rt_handles_last_error()), "");
  EXPECT_EQ(_mlir_ciface_comet_rt_compress(nullptr, &dx.m, COMET_RT_CODEC_SZ,
                                           -1, -1.0, 0),
            0);
  int64_t h = _mlir_ciface_comet_rt_compress(nullptr, &dx.m,
                                             COMET_RT_CODEC_MASK, -1, 0, 0);
  ASSERT_NE(h, 0);
  // A destination of the wrong size is refused.
  EXPECT_NE(_mlir_ciface_comet_rt_decompress(nullptr, h, &dy.m), 0);
  EXPECT_NE(_mlir_ciface_comet_rt_decompress(nullptr, 0, &dy.m), 0);
  _mlir_ciface_comet_rt_handle_free(nullptr, h);
}

/// x > 0 decides; dY flows where it holds, NaN and infinities included.
TEST(Handles, ReluGradFromMaskEqualsTheUnfusedPath) {
  comet_rt_slots_reset(nullptr);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // 3 x 37: the last byte of the mask is partly used.
  for (unsigned seed : {1u, 2u, 3u}) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> u(-2, 2);
    std::uniform_int_distribution<int> pick(0, 9);
    const int64_t rows = 3, cols = 37, n = rows * cols;
    std::vector<float> x(n), dy(n);
    const float specials[] = {0.0f, -0.0f, nan, inf, -inf, 1e-30f, -1e-30f};
    for (int64_t i = 0; i < n; ++i) {
      x[i] = pick(g) < 3 ? specials[pick(g) % 7] : u(g);
      dy[i] = pick(g) < 2 ? specials[pick(g) % 7] : u(g);
    }
    Desc mx(x.data(), rows, cols), mdy(dy.data(), rows, cols);
    int64_t h = _mlir_ciface_comet_rt_compress(nullptr, &mx.m,
                                               COMET_RT_CODEC_MASK, -1, 0, 0);
    ASSERT_NE(h, 0) << comet_rt_handles_last_error();

    // Unfused: decompress to f32, then the ReluGrad kernel.
    std::vector<float> xd(n), ref(n, 7.0f), out(n, 7.0f);
    Desc mxd(xd.data(), rows, cols), mref(ref.data(), rows, cols),
        mout(out.data(), rows, cols);
    ASSERT_EQ(_mlir_ciface_comet_rt_decompress(nullptr, h, &mxd.m), 0);
    ASSERT_EQ(_mlir_ciface_comet_rt_relu_grad(nullptr, &mdy.m, &mxd.m, &mref.m),
              0);

    comet_rt_alloc_stats before, after;
    comet_rt_alloc_get_stats(nullptr, &before);
    ASSERT_EQ(_mlir_ciface_comet_rt_relu_grad_mask(nullptr, &mdy.m, h, &mout.m),
              0)
        << comet_rt_handles_last_error();
    comet_rt_alloc_get_stats(nullptr, &after);
    EXPECT_EQ(after.num_allocs, before.num_allocs);
    // Bit for bit, so NaN payloads and signed zeros count.
    EXPECT_EQ(std::memcmp(out.data(), ref.data(), n * sizeof(float)), 0);
    for (int64_t i = 0; i < n; ++i) {
      // dY's bits where x > 0 (false for NaN), else +0.0f.
      uint32_t got, want = 0;
      std::memcpy(&got, &out[i], 4);
      if (x[i] > 0)
        std::memcpy(&want, &dy[i], 4);
      EXPECT_EQ(got, want) << "seed " << seed << " element " << i;
    }

    // In place (dX aliasing dY) gives the same.
    std::vector<float> inplace = dy;
    Desc mip(inplace.data(), rows, cols);
    ASSERT_EQ(_mlir_ciface_comet_rt_relu_grad_mask(nullptr, &mip.m, h, &mip.m),
              0);
    EXPECT_EQ(std::memcmp(inplace.data(), ref.data(), n * sizeof(float)), 0);
    _mlir_ciface_comet_rt_handle_free(nullptr, h);
  }
}

TEST(Handles, ReluGradFromMaskRefusesBadInput) {
  comet_rt_slots_reset(nullptr);
  std::vector<float> x(16, 1.0f), dy(16, 1.0f), dx(16), small(8);
  Desc mx(x.data(), 4, 4), mdy(dy.data(), 4, 4), mdx(dx.data(), 4, 4),
      mflat(dx.data(), 2, 8), msmall(small.data(), 2, 4);
  int64_t sz = _mlir_ciface_comet_rt_compress(nullptr, &mx.m, COMET_RT_CODEC_SZ,
                                              -1, 1e-3, 0);
  ASSERT_NE(sz, 0);
  EXPECT_NE(_mlir_ciface_comet_rt_relu_grad_mask(nullptr, &mdy.m, sz, &mdx.m),
            0);
  EXPECT_NE(std::string(comet_rt_handles_last_error()), "");
  _mlir_ciface_comet_rt_handle_free(nullptr, sz);
  int64_t h = _mlir_ciface_comet_rt_compress(nullptr, &mx.m,
                                             COMET_RT_CODEC_MASK, -1, 0, 1);
  ASSERT_NE(h, 0);
  EXPECT_NE(_mlir_ciface_comet_rt_relu_grad_mask(nullptr, &mdy.m, h, &msmall.m),
            0);
  EXPECT_NE(_mlir_ciface_comet_rt_relu_grad_mask(nullptr, &mdy.m, h, &mflat.m),
            0);
  EXPECT_NE(_mlir_ciface_comet_rt_relu_grad_mask(nullptr, &mdy.m, 0, &mdx.m),
            0);
  EXPECT_EQ(_mlir_ciface_comet_rt_relu_grad_mask(nullptr, &mdy.m, h, &mdx.m),
            0);
  _mlir_ciface_comet_rt_handle_free(nullptr, h);
}

TEST(Engine, LoadErrorsNameTheFile) {
  auto e = comet::Engine::load("/nonexistent/model.onnx");
  ASSERT_FALSE(e);
  EXPECT_NE(llvm::toString(e.takeError()).find("/nonexistent/model.onnx"),
            std::string::npos);
}

TEST(Engine, ArtifactFolderGivesEveryFile) {
  // A folder: its training graph, checkpoint, eval graph and AdamW.
  std::string dir = std::string(COMET_FIXTURES) + "/resnet";
  auto e = comet::Engine::load(dir);
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  comet::EngineOptions o;
  o.batchSize = 4;
  ASSERT_FALSE(static_cast<bool>((*e)->compile(o)));
  const comet::ArtifactPaths &a = (*e)->artifacts();
  EXPECT_EQ(a.training, dir + "/training_model.onnx");
  EXPECT_EQ(a.weights, dir + "/checkpoint");
  EXPECT_EQ(a.evalModel, dir + "/eval_model.onnx");
  EXPECT_EQ(a.optimizer, dir + "/optimizer_model.onnx");
  EXPECT_EQ((*e)->optimizerName(), "AdamWOptimizer");
  EXPECT_FLOAT_EQ((*e)->learningRate(), 1e-3f);
  EXPECT_TRUE((*e)->hasEval());
  // Trainable and frozen parameters; BN statistics start at 0 and 1.
  EXPECT_EQ((*e)->trainableParameters().size(), 20u);
  EXPECT_EQ((*e)->parameters().size(), 32u);
  EXPECT_EQ((*e)->parameter("bn6.running_var").vec(),
            std::vector<float>(16, 1.0f));

  auto missing = comet::Engine::load(std::string(COMET_FIXTURES));
  ASSERT_FALSE(missing);
  EXPECT_EQ(llvm::toString(missing.takeError()),
            std::string(COMET_FIXTURES) +
                " is a folder without training_model.onnx");
}

TEST(Engine, TrainsLeNetAndAccountsExactly) {
  // A fresh Engine has its own runtime context: no reset needed.
  auto e = comet::Engine::load(fixture("lenet"));
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  comet::Engine &engine = **e;
  comet::EngineOptions o;
  o.batchSize = 16;
  o.compress = comet::CompressMode::Static;
  o.compressOptions = "min-bytes=1024";
  o.learningRate = 0.02f;
  o.optimizerPath = comet::EngineOptions::kBuiltinOptimizer;
  ASSERT_FALSE(static_cast<bool>(engine.compile(o)));
  EXPECT_EQ(engine.sampleShape(), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(engine.trainableParameters().size(), 10u);
  EXPECT_EQ(engine.optimizerName(), "builtin-sgd-momentum");
  EXPECT_EQ(engine.artifacts().optimizer, "");

  // The same batch over and over: the loss must fall.
  std::vector<float> x;
  std::vector<int64_t> y;
  batch(16, x, y, 1);
  std::vector<float> w0(engine.parameter("fc3.weight").begin(),
                        engine.parameter("fc3.weight").end());
  float first = 0, last = 0;
  for (int i = 0; i < 60; ++i) {
    auto loss = engine.step(x.data(), y.data());
    ASSERT_TRUE(static_cast<bool>(loss)) << llvm::toString(loss.takeError());
    (i == 0 ? first : last) = *loss;
  }
  EXPECT_LT(last, 0.6f * first);
  EXPECT_NE(std::vector<float>(engine.parameter("fc3.weight").begin(),
                               engine.parameter("fc3.weight").end()),
            w0);

  comet::EngineStats s = engine.stats();
  EXPECT_EQ(s.steps, 60);
  EXPECT_GT(s.tensorPeakBytes, 0);
  EXPECT_LE(s.tensorPeakBytes, s.peakBytes);
  EXPECT_LE(std::llabs(s.predictedPeakBytes - s.tensorPeakBytes),
            s.tensorPeakBytes / 20);
  ASSERT_FALSE(s.sites.empty());
  for (const comet::SiteStats &site : s.sites) {
    EXPECT_EQ(site.calls, 60) << site.value;
    EXPECT_GT(site.ratio, 1.0) << site.value;
  }
  EXPECT_LT(s.activationBytesCompressed, s.activationBytesUncompressed);
  // Nothing of the step is left behind but the Engine's own buffers.
  EXPECT_EQ(s.categories[COMET_RT_MEM_ACTIVATIONS].current, 0);
  EXPECT_EQ(s.categories[COMET_RT_MEM_COMPRESSED].current, 0);

  double meanLoss = 0;
  int64_t correct = -1;
  ASSERT_FALSE(static_cast<bool>(
      engine.evaluate(x.data(), y.data(), 11, meanLoss, correct)));
  EXPECT_GE(correct, 0);
  EXPECT_LE(correct, 11);
  EXPECT_TRUE(std::isfinite(meanLoss));
}

// The bound tuner's statistics calls are compiled in only where something
// reads them: a static graph calls none, so the CUDA backend, which does not
// gather them, covers it; an adaptive graph, or a static one compiled with
// tunerStatistics (--measure-error-model), calls them.
TEST(Engine, TunerStatisticsOnlyWhereRead) {
  struct Compiled {
    std::unique_ptr<comet::Engine> engine;
    std::vector<std::string> entries;
  };
  auto compile = [](comet::CompressMode mode, bool statistics,
                    bool fuse = false) {
    Compiled c;
    auto e = comet::Engine::load(fixture("lenet"));
    EXPECT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
    c.engine = std::move(*e);
    comet::EngineOptions o;
    o.batchSize = 16;
    o.compress = mode;
    o.compressOptions = "min-bytes=1024";
    o.tunerStatistics = statistics;
    o.jit = false;
    o.optimizerPath = comet::EngineOptions::kBuiltinOptimizer;
    o.fuseOptimizer = fuse;
    llvm::Error err = c.engine->compile(o);
    EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
    c.entries = c.engine->trainer().trainEntry().runtimeEntries;
    return c;
  };
  auto calls = [](const Compiled &c, const char *entry) {
    return std::find(c.entries.begin(), c.entries.end(), entry) !=
           c.entries.end();
  };

  Compiled plain = compile(comet::CompressMode::Static, false);
  EXPECT_TRUE(calls(plain, "compress"));
  EXPECT_FALSE(calls(plain, "slot_observe_act"));
  EXPECT_FALSE(calls(plain, "slot_observe_grad"));
  EXPECT_EQ(comet::checkDeviceCoverage("cuda", plain.entries), "");
  // The site table keeps the consumers; a tuner on this engine would read
  // nothing and is refused.
  comet::EngineStats s = plain.engine->stats();
  EXPECT_TRUE(std::any_of(s.sites.begin(), s.sites.end(),
                          [](const comet::SiteStats &site) {
                            return site.slot >= 0 && !site.consumers.empty();
                          }));
  auto tuner = comet::EngineTuner::create(*plain.engine, {});
  ASSERT_FALSE(static_cast<bool>(tuner));
  EXPECT_NE(llvm::toString(tuner.takeError())
                .find("does not gather the bound tuner's statistics"),
            std::string::npos);

  for (bool adaptive : {false, true}) {
    Compiled c = adaptive ? compile(comet::CompressMode::Adaptive, false)
                          : compile(comet::CompressMode::Static, true);
    EXPECT_TRUE(calls(c, "slot_observe_act"));
    EXPECT_TRUE(calls(c, "slot_observe_grad"));
    EXPECT_NE(comet::checkDeviceCoverage("cuda", c.entries)
                  .find("comet_rt_slot_observe_act"),
              std::string::npos);
    auto t = comet::EngineTuner::create(*c.engine, {});
    EXPECT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  }
  // The tuner reads each step's gradients, which a step that applies the
  // optimizer does not keep.
  Compiled fused = compile(comet::CompressMode::Static, true, true);
  ASSERT_TRUE(fused.engine->trainer().optimizerFused());
  auto refused = comet::EngineTuner::create(*fused.engine, {});
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("keeps no gradient"),
            std::string::npos);
}

// A step that fails part-way (the loss kernel rejects a label) frees every
// buffer and handle the step had allocated, and the next step trains.
TEST(Engine, FailedStepFreesItsBuffers) {
  auto e = comet::Engine::load(fixture("lenet"));
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  comet::Engine &engine = **e;
  comet::EngineOptions o;
  o.batchSize = 8;
  o.compress = comet::CompressMode::Static;
  o.compressOptions = "min-bytes=1024";
  ASSERT_FALSE(static_cast<bool>(engine.compile(o)));
  std::vector<float> x;
  std::vector<int64_t> y;
  batch(8, x, y, 3);
  comet::EngineStats before = engine.stats();
  y[5] = 99; // out of range for 10 classes
  auto bad = engine.step(x.data(), y.data());
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("runtime error"),
            std::string::npos);
  comet::EngineStats after = engine.stats();
  // The forward pass had compressed activations before the loss failed.
  EXPECT_GT(after.categories[COMET_RT_MEM_COMPRESSED].peak, 0);
  for (int c = 0; c < COMET_RT_MEM_NUM_CATEGORIES; ++c)
    EXPECT_EQ(after.categories[c].current, before.categories[c].current)
        << after.categories[c].name;
  y[5] = 5;
  auto good = engine.step(x.data(), y.data());
  EXPECT_TRUE(static_cast<bool>(good)) << llvm::toString(good.takeError());
}

// The measured peak is the worst step's since resetPeaks(), so the
// prediction sizes each handle by its slot's largest stream, not its last:
// a tuner that loosens the bounds after the first steps leaves the peak of
// those steps standing.
TEST(Engine, PredictionFollowsTheWorstStepsStreams) {
  auto e = comet::Engine::load(fixture("resnet"));
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  comet::Engine &engine = **e;
  comet::EngineOptions o;
  o.batchSize = 64;
  o.compress = comet::CompressMode::Static;
  o.compressOptions = "min-bytes=1024";
  ASSERT_FALSE(static_cast<bool>(engine.compile(o)));
  std::vector<float> x;
  std::vector<int64_t> y;
  batch(64, x, y, 5);
  auto setAll = [&](double eb) {
    for (const comet::SiteStats &site : engine.stats().sites) {
      if (site.slot >= 0) {
        ASSERT_EQ(comet_rt_slot_set_eb(engine.runtimeContext(), site.slot, eb),
                  0);
      }
    }
  };
  auto stepOnce = [&] {
    auto loss = engine.step(x.data(), y.data());
    ASSERT_TRUE(static_cast<bool>(loss)) << llvm::toString(loss.takeError());
  };
  auto near = [](int64_t predicted, int64_t measured) {
    return std::llabs(predicted - measured) <= measured / 50;
  };
  stepOnce(); // defines the slots
  engine.resetPeaks();
  setAll(1e-6);
  stepOnce();
  comet::EngineStats tight = engine.stats();
  setAll(0.5);
  stepOnce();
  stepOnce();
  comet::EngineStats loose = engine.stats();
  // The loose steps store far less; the tight step still holds the peak.
  ASSERT_LT(loose.activationBytesCompressed,
            tight.activationBytesCompressed / 2);
  EXPECT_EQ(loose.tensorPeakBytes, tight.tensorPeakBytes);
  EXPECT_TRUE(near(loose.predictedTensorPeakBytes, loose.tensorPeakBytes))
      << loose.predictedTensorPeakBytes << " vs " << loose.tensorPeakBytes;
  // After a reset only the loose steps count, on both sides.
  engine.resetPeaks();
  stepOnce();
  comet::EngineStats after = engine.stats();
  EXPECT_LT(after.tensorPeakBytes, tight.tensorPeakBytes);
  EXPECT_TRUE(near(after.predictedTensorPeakBytes, after.tensorPeakBytes))
      << after.predictedTensorPeakBytes << " vs " << after.tensorPeakBytes;
}

} // namespace
