//===- Trainer.cpp - A compiled training step's buffers and optimizer -----===//
//
// Binds the arguments of a compiled training graph, runs it and the
// optimizer, evaluates the eval graph and gathers the statistics, for
// comet::Engine (JIT) and comet-run (ahead of time) alike.
//
//===----------------------------------------------------------------------===//
#include "comet/driver/Trainer.h"
#include "comet/driver/Coverage.h"

#include "comet/runtime/codec.h"
#include "comet/runtime/device.h"
#include "comet/runtime/exec.h"
#include "comet/runtime/handles.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace comet {

bool Buffer::allocate(comet_rt_context *ctx) {
  numel = 1;
  for (int64_t d : shape)
    numel *= d;
  data = comet_rt_alloc_zeroed(ctx, numel * elemBytes, category);
  if (!data)
    return false;
  int64_t rank = shape.size();
  desc.assign(3 + 2 * rank, 0);
  desc[0] = desc[1] = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
  int64_t stride = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    desc[3 + i] = shape[i];
    desc[3 + rank + i] = stride;
    stride *= shape[i];
  }
  unranked = {rank, desc.data()};
  return true;
}

void Buffer::borrow(const void *p) {
  auto at = reinterpret_cast<intptr_t>(p ? p : data);
  desc[0] = desc[1] = static_cast<int64_t>(at);
}

std::string Entry::invoke(comet_rt_context *ctx,
                          const std::vector<Buffer *> &buffers) const {
  if (!packed)
    return "@" + funcName + " was not compiled to run";
  // The packed arguments: the context, each buffer's descriptor, the status.
  std::vector<void *> descPtrs(buffers.size());
  std::vector<void *> args(buffers.size() + 2);
  args[0] = &ctx;
  for (size_t i = 0; i < buffers.size(); ++i) {
    descPtrs[i] = buffers[i]->desc.data();
    args[i + 1] = &descPtrs[i];
  }
  int32_t rc = 0;
  args.back() = &rc;
  packed(args.data());
  if (rc == 0)
    return "";
  std::string msg = comet_rt_handles_last_error();
  if (msg.empty())
    msg = comet_rt_last_error();
  return "runtime error " + std::to_string(rc) + " in @" + funcName + ": " +
         msg;
}

Trainer::Trainer() : rt(comet_rt_context_create(), comet_rt_context_destroy) {
  setEntropyByPeak(entropyByPeak);
}

std::string Trainer::useDevice(const std::string &device) {
  if (device == "cpu")
    return "";
  if (device != "cuda")
    return "unknown device '" + device + "'";
  if (comet_rt_context_set_device(rt.get(), COMET_RT_DEVICE_CUDA) != 0)
    return std::string("--device cuda: ") + comet_rt_last_error();
  return "";
}

std::string Trainer::copy(void *dst, const void *src, size_t bytes) const {
  if (comet_rt_memcpy(rt.get(), dst, src, bytes) != 0)
    return std::string("copying to or from the device: ") +
           comet_rt_last_error();
  return "";
}

Trainer::~Trainer() = default;

Buffer *Trainer::newBuffer(const std::string &name,
                           const std::vector<int64_t> &shape, size_t elemBytes,
                           int32_t category) {
  auto b = std::make_unique<Buffer>();
  b->name = name;
  b->shape = shape;
  b->elemBytes = elemBytes;
  b->category = category;
  if (!b->allocate(rt.get()))
    return nullptr;
  Buffer *p = b.get();
  buffers[name] = std::move(b);
  return p;
}

Buffer *Trainer::buffer(const std::string &name) const {
  auto it = buffers.find(name);
  return it == buffers.end() ? nullptr : it->second.get();
}

Buffer *Trainer::gradient(const std::string &param) const {
  auto it = gradOf.find(param);
  return it == gradOf.end() ? nullptr : buffer(it->second);
}

Buffer *Trainer::optimizerState(const std::string &param) const {
  return optimizerState(param, 0);
}

Buffer *Trainer::optimizerState(const std::string &param, int k) const {
  const auto &states = k == 0 ? state1 : state2;
  if (k < 0 || k > 1)
    return nullptr;
  for (size_t i = 0; i < trainable.size() && i < states.size(); ++i)
    if (trainable[i] == param)
      return states[i].get();
  return nullptr;
}

int64_t Trainer::batchSize() const {
  return input && !input->shape.empty() ? input->shape[0] : 0;
}

/// "[4,1,5,5]" for messages.
static std::string dimsStr(const std::vector<int64_t> &dims) {
  std::string r = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    r += (i ? "," : "") + std::to_string(dims[i]);
  return r + "]";
}

/// "'a', 'b'" for messages.
static std::string quoted(const std::vector<std::string> &names) {
  std::string r;
  for (const std::string &n : names)
    r += (r.empty() ? "'" : ", '") + n + "'";
  return r;
}

/// Of a graph's inputs that are no parameter, gradient buffer or flag
/// (`rest`, indices into args), the data and the labels: the labels are
/// the input the loss reads (isLabels) and the data the one other input;
/// in a graph without that mark, the one float input and the one int64
/// input. `graph` and `notParamsOf` name them in messages.
static std::string pickDataAndLabels(const std::vector<ArgInfo> &args,
                                     const std::vector<size_t> &rest,
                                     const std::string &graph,
                                     const std::string &notParamsOf,
                                     size_t &data, size_t &labels) {
  std::vector<std::string> dataNames, labelNames;
  std::vector<size_t> dataIdx, labelIdx;
  bool marked = false;
  for (size_t i : rest)
    marked |= args[i].isLabels;
  bool allFloat = true;
  for (size_t i : rest) {
    const ArgInfo &a = args[i];
    bool isLabels = marked ? a.isLabels : a.elemBytes == 8;
    bool isData = marked ? !a.isLabels : a.elemBytes == 4;
    if (isLabels) {
      labelIdx.push_back(i);
      labelNames.push_back(a.name);
    } else if (isData) {
      dataIdx.push_back(i);
      dataNames.push_back(a.name);
      allFloat &= a.elemBytes == 4;
    }
  }
  if (dataIdx.size() != 1)
    return dataIdx.empty()
               ? "the " + graph + " has no " + (marked ? "" : "float ") +
                     "input for the data: every " +
                     (marked ? "input but the labels" : "float input") +
                     " is a parameter of " + notParamsOf +
                     " or a gradient buffer"
               : "the " + graph + "'s data input is ambiguous: the " +
                     (allFloat ? "float " : "") + "inputs " +
                     quoted(dataNames) + " are not parameters of " +
                     notParamsOf + " (expected exactly one)";
  if (labelIdx.size() != 1)
    return labelIdx.empty()
               ? "the " + graph + " has no int64 input for the labels"
               : "the " + graph + "'s labels input is ambiguous: " +
                     (marked ? "the loss reads " : "int64 inputs ") +
                     quoted(labelNames) + " (expected exactly one)";
  data = dataIdx[0];
  labels = labelIdx[0];
  if (args[labels].elemBytes != 8)
    return "the " + graph + "'s labels input '" + args[labels].name +
           "' must be int64";
  if (args[data].elemBytes != 4 && args[data].elemBytes != 8)
    return "the " + graph + "'s data input '" + args[data].name +
           "' must be float32 or int64 (token ids)";
  return "";
}

std::string Trainer::deviceName() const {
  return comet_rt_context_get_device(rt.get()) == COMET_RT_DEVICE_CUDA ? "cuda"
                                                                       : "cpu";
}

std::string Trainer::bindTrain(Entry entry, const WeightLookup &weights,
                               const std::string &weightsName) {
  if (std::string e = checkDeviceCoverage(deviceName(), entry.runtimeEntries);
      !e.empty())
    return e;
  train = std::move(entry);
  static const std::string gradSuffix = "_grad.accumulation.buffer";
  // Each input's role comes from the graph's own input list: gradient
  // buffers and lazy_reset_grad by ORT's names, parameters by the weights,
  // and what is left must be the data batch and the labels.
  for (const ArgInfo &a : train.args) {
    size_t pos = a.name.find(gradSuffix);
    if (pos != std::string::npos)
      gradOf[a.name.substr(0, pos)] = a.name;
  }
  std::vector<size_t> rest;
  for (size_t i = 0; i < train.args.size(); ++i) {
    const ArgInfo &a = train.args[i];
    std::string name = a.isResult ? "result:" + std::to_string(i) : a.name;
    if (name.empty())
      return "argument " + std::to_string(i) +
             " of the training graph has no onnx.name";
    int32_t cat = COMET_RT_MEM_OTHER;
    InitialWeight init;
    bool isParam = false;
    const std::string &role = a.optimizerRole;
    if (!role.empty() && role != "weight") {
      // The optimizer's state, learning rate and step count: bound by
      // setupOptimizer.
      if (train.fusedOptimizer.empty())
        return "training graph input '" + name + "' has the optimizer role '" +
               role + "' but the step does not apply the optimizer";
      optimizerArgs.push_back(i);
      trainArgs.push_back(nullptr);
      continue;
    }
    if (a.isResult || name == "lazy_reset_grad") {
    } else if (name.find(gradSuffix) != std::string::npos) {
      cat = COMET_RT_MEM_GRADS;
    } else if (a.elemBytes == 4 && weights(name, init)) {
      cat = COMET_RT_MEM_PARAMS;
      isParam = true;
    } else if (gradOf.count(name) || role == "weight") {
      return "no initial value for parameter '" + name + "' in " + weightsName;
    } else if (a.elemBytes == 4 || a.elemBytes == 8) {
      rest.push_back(i);
    } else {
      return "training graph input '" + name + "' is neither a parameter of " +
             weightsName +
             ", a gradient buffer, lazy_reset_grad, float data nor int64 "
             "labels";
    }
    Buffer *b = newBuffer(name, a.shape, a.elemBytes, cat);
    if (!b)
      return "out of memory allocating " + name;
    trainArgs.push_back(b);
    if (!isParam)
      continue;
    if (init.dims && *init.dims != a.shape)
      return "parameter '" + name + "' has shape " + dimsStr(*init.dims) +
             " in " + weightsName + " but the graph wants " + dimsStr(a.shape);
    if (init.bytes != b->bytes())
      return "parameter '" + name + "' has " + std::to_string(init.bytes) +
             " bytes in " + weightsName + ", the graph wants " +
             std::to_string(b->bytes());
    if (std::string e = copy(b->data, init.data, init.bytes); !e.empty())
      return e;
    if (gradOf.count(name) || role == "weight")
      trainable.push_back(name);
    else
      frozen.push_back(name);
  }
  size_t dataArg = 0, labelsArg = 0;
  if (std::string e = pickDataAndLabels(train.args, rest, "training graph",
                                        weightsName, dataArg, labelsArg);
      !e.empty())
    return e;
  input = trainArgs[dataArg];
  labels = trainArgs[labelsArg];
  if (input->shape.size() < 2)
    return "the training graph's data input '" + input->name +
           "' must be a batch of samples (rank >= 2)";
  sample.assign(input->shape.begin() + 1, input->shape.end());
  // One label per sample, or several (a language model's: one per token).
  int64_t B = input->shape[0];
  if (B <= 0 || labels->numel % B != 0 || labels->numel == 0)
    return "the training graph's labels input '" + labels->name + "' " +
           dimsStr(labels->shape) +
           " does not hold the same number of "
           "labels for each of the " +
           std::to_string(B) + " samples of '" + input->name + "'";
  perSampleLabels = labels->numel / B;
  labelClasses = train.args[labelsArg].valueRange;
  dataValues = input->elemBytes == 8 ? train.args[dataArg].valueRange : 0;
  lazyReset = buffer("lazy_reset_grad");
  for (size_t i = 0; i < train.args.size(); ++i)
    if (train.args[i].isResult) {
      loss = trainArgs[i];
      break;
    }
  if (!loss || loss->numel != 1 || loss->elemBytes != 4)
    return "the first result of the training graph must be the loss";
  return "";
}

std::vector<std::string> Trainer::parameters() const {
  std::vector<std::string> names;
  for (Buffer *b : trainArgs)
    if (b && b->category == COMET_RT_MEM_PARAMS)
      names.push_back(b->name);
  return names;
}

float defaultLearningRate(const std::string &kind) {
  return kind == "AdamWOptimizer" ? 1e-3f : 0.05f;
}

int optimizerStatesPerParameter(const std::string &kind) {
  return kind == "AdamWOptimizer" ? 2 : kind == "builtin-sgd-momentum" ? 1 : 0;
}

std::string Trainer::setupOptimizer(const OptimizerConfig &config) {
  // A device that lacks the new optimizer's entry is refused before the
  // optimizer in place is touched.
  if (std::string e =
          checkDeviceCoverage(deviceName(), optimizerEntries(config.kind));
      !e.empty())
    return e;
  // A step that applies the optimizer was compiled for one kernel, with
  // its hyperparameters.
  if (optimizerFused() &&
      optimizerEntries(config.kind).front() != train.fusedOptimizer)
    return "the training step applies the optimizer '" + train.fusedOptimizer +
           "' (compiled in); it cannot run " + config.kind;
  // Called again, it replaces the optimizer and starts its state afresh.
  state1.clear();
  state2.clear();
  stateBytes = 0;
  steps = 0;
  optimizer = config;
  if (optimizer.learningRate <= 0)
    optimizer.learningRate = defaultLearningRate(optimizer.kind);
  lrBuf = std::make_unique<Buffer>();
  lrBuf->shape = {1};
  lrBuf->category = COMET_RT_MEM_OTHER;
  stepBuf = std::make_unique<Buffer>();
  stepBuf->shape = {1};
  stepBuf->elemBytes = 8;
  if (!lrBuf->allocate(rt.get()) || !stepBuf->allocate(rt.get()))
    return "out of memory";
  if (std::string e = copy(lrBuf->data, &optimizer.learningRate, sizeof(float));
      !e.empty())
    return e;
  stateBytes += lrBuf->bytes() + stepBuf->bytes();
  int nState = optimizerStatesPerParameter(optimizer.kind);
  for (const std::string &p : trainable) {
    Buffer *w = buffers[p].get();
    for (int k = 0; k < nState; ++k) {
      auto s = std::make_unique<Buffer>();
      s->name = p + (k == 0 ? ".momentum1" : ".momentum2");
      s->shape = w->shape;
      s->category = COMET_RT_MEM_OPTIMIZER_STATE;
      if (!s->allocate(rt.get()))
        return "out of memory";
      stateBytes += s->bytes();
      (k == 0 ? state1 : state2).push_back(std::move(s));
    }
  }
  // A fused step's arguments are these buffers.
  for (size_t i : optimizerArgs) {
    const ArgInfo &a = train.args[i];
    Buffer *b = nullptr;
    if (a.optimizerRole == "lr")
      b = lrBuf.get();
    else if (a.optimizerRole == "step")
      b = stepBuf.get();
    else if (a.optimizerRole == "state0" || a.optimizerRole == "state1")
      b = optimizerState(a.optimizerParam, a.optimizerRole == "state0" ? 0 : 1);
    if (!b || b->shape != a.shape || b->elemBytes != a.elemBytes)
      return "training graph input '" + a.name + "' (optimizer role '" +
             a.optimizerRole + "'" +
             (a.optimizerParam.empty() ? ""
                                       : " of '" + a.optimizerParam + "'") +
             ") has no " + dimsStr(a.shape) + " buffer in " + optimizer.kind;
    trainArgs[i] = b;
  }
  return "";
}

std::string Trainer::runOptimizer() {
  if (optimizerFused())
    return "the training step applies the optimizer itself (compiled with "
           "the update fused in): there is no separate optimizer step";
  ++steps;
  if (std::string e = copy(stepBuf->data, &steps, sizeof(int64_t)); !e.empty())
    return e;
  const OptimizerConfig &o = optimizer;
  for (size_t i = 0; i < trainable.size(); ++i) {
    const std::string &p = trainable[i];
    Buffer *w = buffers[p].get();
    Buffer *g = buffers[gradOf[p]].get();
    int32_t rc;
    if (o.kind == "AdamWOptimizer") {
      rc = _mlir_ciface_comet_rt_adamw(
          rt.get(), &lrBuf->unranked, &stepBuf->unranked, &w->unranked,
          &g->unranked, &state1[i]->unranked, &state2[i]->unranked, nullptr,
          nullptr, o.adamAlpha, o.adamBeta, o.adamEps, o.adamWeightDecay,
          o.adamMode, o.adamCorrectBias);
    } else if (o.kind == "SGDOptimizerV2") {
      rc =
          _mlir_ciface_comet_rt_sgd_v2(rt.get(), &lrBuf->unranked, &w->unranked,
                                       &g->unranked, nullptr, nullptr);
    } else {
      rc = _mlir_ciface_comet_rt_sgd_momentum(
          rt.get(), &lrBuf->unranked, &w->unranked, &g->unranked,
          &state1[i]->unranked, o.momentum, o.weightDecay, 0);
    }
    if (rc != 0)
      return "optimizer " + o.kind + " failed on " + p + ": " +
             comet_rt_last_error();
  }
  return "";
}

std::string Trainer::bindEval(Entry entry, const std::string &evalName) {
  if (std::string e = checkDeviceCoverage(deviceName(), entry.runtimeEntries);
      !e.empty())
    return e;
  // Inputs by role, as in the training graph: the training graph's
  // parameters are shared, and what is left must be the data batch and the
  // labels.
  std::vector<size_t> rest;
  for (size_t i = 0; i < entry.args.size(); ++i) {
    const ArgInfo &a = entry.args[i];
    if (a.isResult)
      continue;
    Buffer *b = buffer(a.name);
    if (b && b->category == COMET_RT_MEM_PARAMS)
      continue;
    if (a.elemBytes != 4 && a.elemBytes != 8)
      return evalName + ": input '" + a.name +
             "' is neither a parameter of the training graph, data nor "
             "int64 labels";
    rest.push_back(i);
  }
  size_t data = 0, lab = 0;
  if (std::string e = pickDataAndLabels(entry.args, rest, "eval graph",
                                        "the training graph", data, lab);
      !e.empty())
    return evalName + ": " + e;
  const ArgInfo &d = entry.args[data];
  if (d.shape.empty() || d.shape[0] != batchSize() ||
      std::vector<int64_t>(d.shape.begin() + 1, d.shape.end()) != sample ||
      d.elemBytes != input->elemBytes)
    return evalName + ": the data input '" + d.name +
           "' must be a batch of the training graph's samples";
  int64_t numLabels = 1;
  for (int64_t x : entry.args[lab].shape)
    numLabels *= x;
  if (numLabels != batchSize() * perSampleLabels)
    return evalName + ": the labels input '" + entry.args[lab].name + "' " +
           dimsStr(entry.args[lab].shape) + " must hold " +
           std::to_string(perSampleLabels) +
           " label(s) per sample, as in "
           "training";
  const ArgInfo &logits = entry.args.back();
  if (!logits.isResult || logits.shape.size() != 2 ||
      logits.shape[0] != numLabels)
    return evalName + ": the last result must be the 2-D logits, one row "
                      "per label";
  evalData = data;
  evalLabels = lab;
  eval = std::move(entry);
  return "";
}

std::string Trainer::computeGradients(const void *images, const int64_t *lab,
                                      float &lossOut) {
  if (optimizerFused())
    return "the training step applies the optimizer and keeps no gradient: "
           "compile it without fusing the optimizer to compute gradients";
  return runTrain(images, lab, lossOut);
}

std::string Trainer::runTrain(const void *images, const int64_t *lab,
                              float &lossOut) {
  if (!loss)
    return "the training graph is not bound";
  for (const Buffer *b : trainArgs)
    if (!b)
      return "the optimizer is not set up: the training step applies it";
  const uint8_t reset = resetGrad ? 1 : 0;
  if (lazyReset)
    if (std::string e = copy(lazyReset->data, &reset, 1); !e.empty())
      return e;
  // On the host the graph reads the batch where the caller holds it (a
  // graph never writes its inputs); a device's memory takes a copy.
  bool host = comet_rt_context_get_device(rt.get()) == COMET_RT_DEVICE_CPU;
  if (host) {
    input->borrow(images);
    labels->borrow(lab);
  } else {
    for (std::string e : {copy(input->data, images, input->bytes()),
                          copy(labels->data, lab, labels->bytes())})
      if (!e.empty())
        return e;
  }
  if (recordNext)
    comet_rt_alloc_record_timeline(rt.get(), 1);
  std::string e = train.invoke(rt.get(), trainArgs);
  if (host) {
    input->borrow(nullptr);
    labels->borrow(nullptr);
  }
  if (recordNext) {
    comet_rt_alloc_record_timeline(rt.get(), 0);
    timeline.resize(comet_rt_alloc_timeline(rt.get(), nullptr, 0));
    comet_rt_alloc_timeline(rt.get(), timeline.data(), timeline.size());
    recordNext = false;
  }
  if (!e.empty())
    return e;
  noteStreams();
  if (entropyByPeak && !entropyChosen) {
    entropyChosen = true;
    chooseSiteEntropy();
  }
  resetGrad = false;
  return copy(&lossOut, loss->data, sizeof(float));
}

std::string Trainer::step(const void *images, const int64_t *lab,
                          float &lossOut) {
  resetGrad = true;
  bool fused = optimizerFused();
  if (fused) {
    // The step reads its optimizer step count, as runOptimizer writes it.
    if (!lrBuf)
      return "the optimizer is not set up";
    ++steps;
    if (std::string e = copy(stepBuf->data, &steps, sizeof(int64_t));
        !e.empty())
      return e;
  }
  std::string e = runTrain(images, lab, lossOut);
  if (!e.empty())
    return e;
  if (!std::isfinite(lossOut))
    return std::string("the loss is ") + (std::isnan(lossOut) ? "NaN" : "Inf") +
           " at step " + std::to_string(fused ? steps : steps + 1) +
           "; training stopped";
  return fused ? "" : runOptimizer();
}

std::string Trainer::evaluate(const void *images, const int64_t *lab, int64_t n,
                              double &meanLoss, int64_t &numCorrect) {
  if (!hasEval())
    return "no eval graph was compiled";
  // The eval graph's last out argument is the logits. Eval buffers live
  // only during the evaluation, so that they do not count in the training
  // step's memory.
  std::vector<std::unique_ptr<Buffer>> own;
  std::vector<Buffer *> args;
  Buffer *in = nullptr, *labBuf = nullptr, *logits = nullptr;
  for (size_t i = 0; i < eval.args.size(); ++i) {
    const ArgInfo &a = eval.args[i];
    if (!a.isResult && i != evalData && i != evalLabels) {
      args.push_back(buffer(a.name)); // a parameter (bindEval)
      continue;
    }
    auto b = std::make_unique<Buffer>();
    b->name = a.name;
    b->shape = a.shape;
    b->elemBytes = a.elemBytes;
    b->category = COMET_RT_MEM_OTHER;
    if (!b->allocate(rt.get()))
      return "out of memory";
    if (i == evalData)
      in = b.get();
    else if (i == evalLabels)
      labBuf = b.get();
    args.push_back(b.get());
    own.push_back(std::move(b));
  }
  logits = args.back();
  // Each row of the logits is one label's prediction: L rows per sample.
  int64_t B = batchSize(), classes = logits->shape[1], L = perSampleLabels;
  size_t per = (in->numel / B) * in->elemBytes;
  const auto *bytes = static_cast<const uint8_t *>(images);
  std::vector<float> host(logits->numel);
  double lossSum = 0;
  numCorrect = 0;
  for (int64_t start = 0; start < n; start += B) {
    int64_t m = std::min(B, n - start);
    comet_rt_memset(rt.get(), in->data, 0, in->bytes());
    comet_rt_memset(rt.get(), labBuf->data, 0, labBuf->bytes());
    for (std::string e :
         {copy(in->data, bytes + start * per, m * per),
          copy(labBuf->data, lab + start * L, m * L * sizeof(int64_t))})
      if (!e.empty())
        return e;
    std::string e = eval.invoke(rt.get(), args);
    if (!e.empty())
      return e;
    if (e = copy(host.data(), logits->data, logits->bytes()); !e.empty())
      return e;
    const float *z = host.data();
    for (int64_t r = 0; r < m * L; ++r) {
      const float *row = z + r * classes;
      int64_t best = 0;
      float mx = row[0];
      for (int64_t c = 1; c < classes; ++c)
        if (row[c] > mx) {
          mx = row[c];
          best = c;
        }
      double s = 0;
      for (int64_t c = 0; c < classes; ++c)
        s += std::exp(double(row[c]) - mx);
      int64_t y = lab[start * L + r];
      if (y >= 0 && y < classes)
        lossSum += std::log(s) + mx - row[y];
      numCorrect += best == y;
    }
  }
  meanLoss = n > 0 ? lossSum / (n * L) : 0;
  return "";
}

// ---- ONNX Runtime's Module and Optimizer ----

std::string Trainer::setLearningRate(float lr) {
  if (!lrBuf)
    return "the optimizer is not set up";
  if (std::string e = copy(lrBuf->data, &lr, sizeof(float)); !e.empty())
    return e;
  optimizer.learningRate = lr;
  return "";
}

std::string Trainer::evalBatch(const void *data, const int64_t *lab,
                               const std::vector<void *> &outputs) {
  if (!hasEval())
    return "no eval graph was compiled";
  if (outputs.size() != eval.args.size())
    return "evalBatch: one output pointer per argument of the eval graph";
  // As in evaluate(): the eval graph's own buffers live only during the
  // call; the data and labels are the caller's on the host.
  bool host = comet_rt_context_get_device(rt.get()) == COMET_RT_DEVICE_CPU;
  std::vector<std::unique_ptr<Buffer>> own;
  std::vector<Buffer *> args;
  for (size_t i = 0; i < eval.args.size(); ++i) {
    const ArgInfo &a = eval.args[i];
    if (!a.isResult && i != evalData && i != evalLabels) {
      args.push_back(buffer(a.name)); // a parameter (bindEval)
      continue;
    }
    auto b = std::make_unique<Buffer>();
    b->name = a.name;
    b->shape = a.shape;
    b->elemBytes = a.elemBytes;
    b->category = COMET_RT_MEM_OTHER;
    if (!b->allocate(rt.get()))
      return "out of memory allocating " + a.name;
    if (!a.isResult) {
      const void *src = i == evalData ? data : static_cast<const void *>(lab);
      if (host)
        b->borrow(src);
      else if (std::string e = copy(b->data, src, b->bytes()); !e.empty())
        return e;
    }
    args.push_back(b.get());
    own.push_back(std::move(b));
  }
  if (std::string e = eval.invoke(rt.get(), args); !e.empty())
    return e;
  for (size_t i = 0; i < eval.args.size(); ++i)
    if (eval.args[i].isResult && outputs[i])
      if (std::string e = copy(outputs[i], args[i]->data, args[i]->bytes());
          !e.empty())
        return e;
  return "";
}

std::string Trainer::copyStateFrom(const Trainer &other) {
  if (&other == this)
    return "";
  if (other.trainable != trainable || other.frozen != frozen ||
      other.optimizer.kind != optimizer.kind ||
      other.state1.size() != state1.size() ||
      other.state2.size() != state2.size())
    return "copyStateFrom: the trainers hold different parameters or "
           "optimizers";
  // Every pair below was checked to have the same size.
  auto copyBuffer = [&](Buffer *dst, const Buffer *src) -> std::string {
    if (!dst || !src || dst->bytes() != src->bytes())
      return "copyStateFrom: " + (dst ? dst->name : std::string("a buffer")) +
             " differs in size";
    return comet_rt_memcpy(rt.get(), dst->data, src->data, dst->bytes()) == 0
               ? ""
               : std::string("copyStateFrom: ") + comet_rt_last_error();
  };
  for (const std::string &p : parameters())
    if (std::string e = copyBuffer(buffer(p), other.buffer(p)); !e.empty())
      return e;
  // A step that applies the optimizer keeps no gradients.
  for (const std::string &p : trainable)
    if (gradient(p) && other.gradient(p))
      if (std::string e = copyBuffer(gradient(p), other.gradient(p));
          !e.empty())
        return e;
  for (size_t i = 0; i < state1.size(); ++i)
    if (std::string e = copyBuffer(state1[i].get(), other.state1[i].get());
        !e.empty())
      return e;
  for (size_t i = 0; i < state2.size(); ++i)
    if (std::string e = copyBuffer(state2[i].get(), other.state2[i].get());
        !e.empty())
      return e;
  if (std::string e = setLearningRate(other.optimizer.learningRate); !e.empty())
    return e;
  steps = other.steps;
  resetGrad = other.resetGrad;
  return "";
}

void Trainer::resetPeaks() {
  comet_rt_alloc_reset_peaks(rt.get());
  slotLargest.clear();
}

Trainer::Sweep
Trainer::sweep(const std::map<int64_t, int64_t> &fixedWidth) const {
  // A sweep over difference arrays: O(#steps + #intervals).
  Sweep w;
  const int64_t n = prediction.numSteps;
  if (n <= 0)
    return w;
  std::vector<int64_t> dTotal(n + 1, 0), dAct(n + 1, 0);
  for (const MemoryPrediction::Interval &iv : prediction.intervals) {
    int64_t bytes = iv.bytes;
    auto measured = slotLargest.find(iv.slot);
    if (iv.szTensorBytes > 0 && measured != slotLargest.end() &&
        measured->second.first > 0) {
      auto fw = fixedWidth.find(iv.slot);
      int64_t out =
          fw != fixedWidth.end() ? fw->second : measured->second.second;
      bytes = static_cast<int64_t>(
          std::ceil(double(iv.szTensorBytes) * out / measured->second.first));
    } else if (iv.szTensorBytes > 0 && szRatio > 0) {
      bytes = static_cast<int64_t>(std::ceil(iv.szTensorBytes / szRatio));
    }
    int64_t b = std::clamp<int64_t>(iv.start, 0, n - 1);
    int64_t e = std::clamp<int64_t>(iv.end, b, n - 1);
    dTotal[b] += bytes;
    dTotal[e + 1] -= bytes;
    if (iv.activation) {
      dAct[b] += bytes;
      dAct[e + 1] -= bytes;
    }
  }
  int64_t total = 0, act = 0;
  for (int64_t t = 0; t < n; ++t) {
    total += dTotal[t];
    act += dAct[t];
    w.timeline.push_back(total);
    w.tensorPeak = t == 0 ? total : std::max(w.tensorPeak, total);
    int64_t ws =
        t < int64_t(prediction.workspace.size()) ? prediction.workspace[t] : 0;
    if (total + ws > w.peak || t == 0) {
      w.peak = total + ws;
      w.at = t;
      w.actAtPeak = act;
      w.wsAtPeak = ws;
    }
  }
  return w;
}

void Trainer::setEntropyByPeak(bool on) {
  entropyByPeak = on;
  // The fixed-width sizes are measured until the choice is made.
  comet_rt_sites_measure_fixed_width(rt.get(), on && !entropyChosen);
}

void Trainer::chooseSiteEntropy() {
  comet_rt_sites_measure_fixed_width(rt.get(), 0);
  if (!prediction.valid || prediction.numSteps <= 0)
    return;
  // Each measured slot's fixed-width block (its first compression's), and
  // its sites.
  std::map<int64_t, int64_t> fixedOf;
  std::map<int64_t, std::vector<int64_t>> sitesOf;
  for (size_t i = 0; i < siteInfo.size(); ++i) {
    int64_t slot = siteInfo[i].slot;
    int64_t fw = comet_rt_site_get_fixed_width_bytes(rt.get(), int64_t(i));
    if (siteInfo[i].codec != "sz" || slot < 0 || fw <= 0 ||
        !slotLargest.count(slot))
      continue;
    fixedOf[slot] = std::max(fixedOf[slot], fw);
    sitesOf[slot].push_back(int64_t(i));
  }
  const Sweep base = sweep({});
  auto livesAt = [&](int64_t slot, int64_t step) {
    const auto &ivs = prediction.intervals;
    return std::any_of(ivs.begin(), ivs.end(), [&](const auto &iv) {
      return iv.slot == slot && iv.szTensorBytes > 0 && iv.start <= step &&
             step <= iv.end;
    });
  };
  // The slots not live at the peak, then, while their larger streams make
  // a higher peak somewhere, less those live there.
  std::map<int64_t, int64_t> fast;
  for (auto [slot, fw] : fixedOf)
    if (!livesAt(slot, base.at))
      fast[slot] = fw;
  while (!fast.empty()) {
    const Sweep with = sweep(fast);
    if (with.peak <= base.peak)
      break;
    size_t before = fast.size();
    for (auto it = fast.begin(); it != fast.end();)
      it = livesAt(it->first, with.at) ? fast.erase(it) : std::next(it);
    if (fast.size() == before)
      fast.clear();
  }
  for (auto [slot, fw] : fast)
    for (int64_t site : sitesOf[slot])
      if (comet_rt_site_set_entropy(rt.get(), site,
                                    COMET_RT_CODEC_ENTROPY_NONE) == 0)
        ++fixedWidthSites;
}

void Trainer::noteStreams() {
  for (size_t i = 0; i < siteInfo.size(); ++i) {
    comet_rt_site_stats rs;
    if (siteInfo[i].codec != "sz" || siteInfo[i].slot < 0 ||
        comet_rt_site_get_stats(rt.get(), i, &rs) != 0 || rs.calls == 0)
      continue;
    auto [it, fresh] = slotLargest.try_emplace(
        siteInfo[i].slot, rs.last_bytes_in, rs.last_bytes_out);
    if (!fresh && rs.last_bytes_out > it->second.second)
      it->second = {rs.last_bytes_in, rs.last_bytes_out};
  }
}

EngineStats Trainer::stats() const {
  EngineStats s;
  s.budget = prediction.budget;
  s.recomputed = prediction.recomputed;
  s.fixedWidthSites = fixedWidthSites;
  comet_rt_alloc_stats a;
  comet_rt_alloc_get_stats(rt.get(), &a);
  for (int c = 0; c < COMET_RT_MEM_NUM_CATEGORIES; ++c)
    s.categories.push_back({comet_rt_alloc_category_name(c), a.current[c],
                            a.peak[c], a.at_peak[c]});
  s.peakBytes = a.peak_total;
  s.tensorPeakBytes = a.tensor_peak;
  s.steps = steps;
  // Measured sizes calibrate the analysis's estimate of sz handles: each
  // handle its slot's largest stream, the overall ratio for one not
  // measured.
  int64_t szIn = 0, szOut = 0;
  for (size_t i = 0; i < siteInfo.size(); ++i) {
    const SiteStats &info = siteInfo[i];
    SiteStats st = info;
    comet_rt_site_stats rs;
    if (comet_rt_site_get_stats(rt.get(), i, &rs) == 0 && rs.calls > 0) {
      st.bytesIn = rs.last_bytes_in;
      st.bytesOut = rs.last_bytes_out;
      st.eb = rs.last_eb;
      st.calls = rs.calls;
      st.ratio = rs.last_bytes_out > 0
                     ? double(rs.last_bytes_in) / rs.last_bytes_out
                     : 0;
      if (info.codec == "sz") {
        szIn += rs.last_bytes_in;
        szOut += rs.last_bytes_out;
      }
    }
    s.activationBytesUncompressed += st.bytesIn;
    s.activationBytesCompressed += st.bytesOut;
    s.sites.push_back(st);
  }
  if (siteInfo.empty()) {
    s.activationBytesUncompressed = prediction.candidateBytes;
    s.activationBytesCompressed = prediction.candidateBytes;
  }
  if (!prediction.valid)
    return s;
  s.measuredTimeline = timeline;
  // The optimizer state beside the graph's tensors: a step that applies
  // the optimizer has it among its arguments, in the intervals.
  const int64_t outside = optimizerFused() ? 0 : stateBytes;
  s.predictedPeakBytes = s.predictedTensorPeakBytes = outside;
  if (szOut > 0)
    szRatio = double(szIn) / szOut;
  const Sweep w = sweep({});
  if (w.timeline.empty())
    return s;
  for (int64_t t : w.timeline)
    s.predictedTimeline.push_back(t + outside);
  s.predictedPeakBytes = w.peak + outside;
  s.predictedActivationBytesAtPeak = w.actAtPeak;
  s.predictedWorkspaceBytesAtPeak = w.wsAtPeak;
  s.predictedTensorPeakBytes = w.tensorPeak + outside;
  return s;
}

} // namespace comet
