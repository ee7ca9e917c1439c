//===- TwoEnginesTest.cpp - Engines in one process do not see each other --===//
//
// Trains two different models with adaptive bounds, first each alone in a
// child process of its own, then both interleaved step by step in this
// process, and checks that every figure matches: the losses, the tuned
// bounds of every slot, the site statistics and the memory peaks. Shared
// runtime state (slots, sites, statistics, the allocator's accounting)
// would make the interleaved runs differ.
//
//===----------------------------------------------------------------------===//
#include "comet/Engine/Engine.h"
#include "comet/Tuner/EngineTuner.h"
#include "comet/runtime/handles.h"

#include "gtest/gtest.h"

#include <cstring>
#include <random>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

constexpr int kSteps = 24;
constexpr int64_t kBatch = 16;

/// Everything a run reports that must not depend on another engine.
struct Figures {
  std::vector<double> figures;
};

struct Trainer {
  std::unique_ptr<comet::Engine> engine;
  std::unique_ptr<comet::EngineTuner> tuner;
  std::mt19937 gen;
  Figures run;

  explicit Trainer(const char *model, unsigned seed) : gen(seed) {
    auto e = comet::Engine::load(std::string(COMET_FIXTURES) + "/" + model +
                                 "/training_model.onnx");
    if (!e)
      ADD_FAILURE() << llvm::toString(e.takeError());
    engine = std::move(*e);
    comet::EngineOptions o;
    o.batchSize = kBatch;
    o.compress = comet::CompressMode::Adaptive;
    o.compressOptions = "min-bytes=1024";
    o.learningRate = 0.02f;
    if (llvm::Error err = engine->compile(o))
      ADD_FAILURE() << llvm::toString(std::move(err));
    comet::tuner::TunerOptions to;
    to.retuneInterval = 8;
    to.statsInterval = 2;
    to.window = 4;
    auto t = comet::EngineTuner::create(*engine, to);
    if (!t)
      ADD_FAILURE() << llvm::toString(t.takeError());
    tuner = std::move(*t);
  }

  void step(int i) {
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<float> x(kBatch * 28 * 28);
    std::vector<int64_t> y(kBatch);
    for (float &v : x)
      v = u(gen) < 0.6f ? 0.0f : u(gen);
    for (int64_t &l : y)
      l = gen() % 10;
    tuner->beforeStep(i);
    auto loss = engine->step(x.data(), y.data());
    ASSERT_TRUE(static_cast<bool>(loss)) << llvm::toString(loss.takeError());
    tuner->afterStep(i);
    run.figures.push_back(*loss);
    comet_rt_context *rt = engine->runtimeContext();
    for (int64_t s = 0, n = comet_rt_num_sites(rt); s < n; ++s) {
      comet_rt_site_stats st;
      ASSERT_EQ(comet_rt_site_get_stats(rt, s, &st), 0);
      run.figures.push_back(st.last_eb);
      run.figures.push_back(double(st.last_bytes_out));
      run.figures.push_back(double(st.calls));
    }
  }

  void finish() {
    comet::EngineStats s = engine->stats();
    for (double v : {double(s.peakBytes), double(s.tensorPeakBytes),
                     double(s.activationBytesCompressed),
                     double(s.activationBytesUncompressed)})
      run.figures.push_back(v);
  }
};

/// Trains `model` alone in a child process and returns its figures.
Figures alone(const char *model, unsigned seed) {
  int fd[2];
  EXPECT_EQ(pipe(fd), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    Trainer t(model, seed);
    for (int i = 0; i < kSteps; ++i)
      t.step(i);
    t.finish();
    size_t n = t.run.figures.size();
    bool ok = write(fd[1], &n, sizeof n) == sizeof n &&
              write(fd[1], t.run.figures.data(), n * sizeof(double)) ==
                  static_cast<ssize_t>(n * sizeof(double));
    _exit(ok && !::testing::Test::HasFailure() ? 0 : 1);
  }
  close(fd[1]);
  Figures r;
  size_t n = 0;
  if (read(fd[0], &n, sizeof n) == sizeof n) {
    r.figures.resize(n);
    size_t got = 0;
    auto *p = reinterpret_cast<char *>(r.figures.data());
    while (got < n * sizeof(double)) {
      ssize_t k = read(fd[0], p + got, n * sizeof(double) - got);
      if (k <= 0)
        break;
      got += k;
    }
  }
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << model << " failed in its own process";
  return r;
}

TEST(TwoEngines, InterleavedMatchSeparateProcesses) {
  // The children first, before this process creates any engine.
  Figures lenetAlone = alone("lenet", 1);
  Figures mlpAlone = alone("mlp", 2);
  ASSERT_FALSE(lenetAlone.figures.empty());
  ASSERT_FALSE(mlpAlone.figures.empty());

  Trainer lenet("lenet", 1), mlp("mlp", 2);
  for (int i = 0; i < kSteps; ++i) {
    lenet.step(i);
    mlp.step(i);
  }
  lenet.finish();
  mlp.finish();
  EXPECT_EQ(lenet.run.figures, lenetAlone.figures);
  EXPECT_EQ(mlp.run.figures, mlpAlone.figures);
  // The tuner did re-tune, so the comparison covers the slot tables.
  EXPECT_GE(lenet.tuner->tuner().numRetunes(), 2);
}

} // namespace
