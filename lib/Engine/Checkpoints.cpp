//===- Checkpoints.cpp - comet::Engine's state as an ORT checkpoint -------===//
//
// The parameters and optimizer state of an engine to and from ONNX
// Runtime's checkpoint layout (comet/Import/Checkpoint.h,
// docs/checkpoint-format.md), and the inference model with the trained
// parameters (comet/Import/ONNXExport.h). The trainer's buffers are read
// and written through Trainer::copy, so a CUDA engine's state travels too.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

#include "comet/Import/Checkpoint.h"
#include "comet/Import/ONNXExport.h"

#include "llvm/Support/MemoryBuffer.h"

using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

namespace comet {

namespace {

/// ONNX Runtime's group and momentum names.
constexpr const char *kGroupName = "group0";

std::string momentumName(int k) { return "momentum" + std::to_string(k); }

std::string dimsStr(const std::vector<int64_t> &dims) {
  std::string r = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    r += (i ? "," : "") + std::to_string(dims[i]);
  return r + "]";
}

/// A buffer's values as a checkpoint tensor named `name`.
Expected<checkpoint::Parameter> tensorOf(const Trainer &t, const Buffer &b,
                                         const std::string &name) {
  checkpoint::Parameter p;
  p.name = name;
  p.dims = b.shape;
  p.values.resize(b.numel);
  if (Error e = toError(t.copy(p.values.data(), b.data, b.bytes())))
    return std::move(e);
  return p;
}

/// What the optimizer calls itself in messages.
std::string optimizerWords(const std::string &kind) {
  return kind == "builtin-sgd-momentum" ? "the built-in SGD" : kind;
}

} // namespace

Expected<checkpoint::Checkpoint>
Engine::checkpointState(bool includeOptimizerState) const {
  const Trainer &t = impl->trainer;
  if (!impl->compiled)
    return err("Engine::compile has not run");
  checkpoint::Checkpoint c;
  // Trainable parameters first, as a checkpoint lists them.
  for (const auto *names : {&t.trainableParameters(), &t.frozenParameters()})
    for (const std::string &name : *names) {
      auto p = tensorOf(t, *t.buffer(name), name);
      if (!p)
        return p.takeError();
      p->trainable = names == &t.trainableParameters();
      c.parameters.push_back(std::move(*p));
    }
  if (!includeOptimizerState)
    return c;
  checkpoint::OptimizerGroup g;
  g.name = kGroupName;
  g.step = t.optimizerSteps();
  g.initialLearningRate = t.optimizerConfig().learningRate;
  int n = optimizerStatesPerParameter(t.optimizerConfig().kind);
  for (const std::string &name : t.trainableParameters()) {
    checkpoint::ParameterOptimizerState s;
    s.param = name;
    for (int k = 0; k < n; ++k) {
      auto m = tensorOf(t, *t.optimizerState(name, k), momentumName(k));
      if (!m)
        return m.takeError();
      s.momentums.push_back(std::move(*m));
    }
    if (n == 0) {
      // SGDOptimizerV2 keeps no state, but its graph takes
      // first_order_moments, which ONNX Runtime saves (as zeros).
      const Buffer &w = *t.buffer(name);
      s.momentums.push_back(
          {momentumName(0), w.shape, std::vector<float>(w.numel, 0.0f)});
    }
    g.states.push_back(std::move(s));
  }
  c.optimizerGroups.push_back(std::move(g));
  return c;
}

Error Engine::saveCheckpoint(StringRef path, bool includeOptimizerState,
                             const checkpoint::PropertyBag &properties) const {
  auto c = checkpointState(includeOptimizerState);
  if (!c)
    return c.takeError();
  c->properties = properties;
  std::string error;
  if (!checkpoint::writeCheckpointFile(path.str(), *c, error))
    return err(error);
  return Error::success();
}

Error Engine::loadCheckpointState(const checkpoint::Checkpoint &c) {
  if (!impl->compiled)
    return err("Engine::compile has not run");
  return impl->loadState(c);
}

Error Engine::Impl::loadState(const checkpoint::Checkpoint &c) {
  // Everything is checked before anything is written.
  for (const checkpoint::Parameter &p : c.parameters) {
    Buffer *b = trainer.buffer(p.name);
    if (!b || b->category != COMET_RT_MEM_PARAMS)
      return err("the checkpoint's parameter '" + p.name +
                 "' is not a parameter of the training graph");
    if (p.dims != b->shape || p.values.size() != static_cast<size_t>(b->numel))
      return err("parameter '" + p.name + "' has shape " + dimsStr(p.dims) +
                 " in the checkpoint but the graph wants " + dimsStr(b->shape));
  }
  if (c.optimizerGroups.size() > 1)
    return err("the checkpoint has " + llvm::Twine(c.optimizerGroups.size()) +
               " optimizer groups; COMET runs one");
  const checkpoint::OptimizerGroup *g =
      c.optimizerGroups.empty() ? nullptr : &c.optimizerGroups[0];
  const std::string &kind = trainer.optimizerConfig().kind;
  int n = optimizerStatesPerParameter(kind);
  if (g) {
    std::string where = "optimizer group '" + g->name + "'";
    if (g->step < 0)
      return err(where + " has a negative step");
    const auto &trainable = trainer.trainableParameters();
    for (const checkpoint::ParameterOptimizerState &s : g->states)
      if (!llvm::is_contained(trainable, s.param))
        return err(where + " has a state for '" + s.param +
                   "', which is not a trainable parameter of the training "
                   "graph");
    for (const std::string &name : trainable) {
      const checkpoint::ParameterOptimizerState *s = g->find(name);
      if (!s)
        return err(where + " has no state for the trainable parameter '" +
                   name + "'");
      const Buffer &w = *trainer.buffer(name);
      for (const checkpoint::Parameter &m : s->momentums) {
        // SGDOptimizerV2's unused first_order_moments, as ORT saves them.
        bool known =
            m.name == momentumName(0) || (n == 2 && m.name == momentumName(1));
        if (!known)
          return err(where + ": parameter '" + name + "' has momentum '" +
                     m.name + "', which " + optimizerWords(kind) +
                     " does not keep (" + llvm::Twine(n) +
                     " per parameter): the checkpoint comes from another "
                     "optimizer");
        if (m.dims != w.shape || m.values.size() != size_t(w.numel))
          return err(where + ": momentum '" + m.name + "' of parameter '" +
                     name + "' has shape " + dimsStr(m.dims) +
                     ", the parameter " + dimsStr(w.shape));
      }
      for (int k = 0; k < n; ++k)
        if (!s->find(momentumName(k)))
          return err(where + ": parameter '" + name + "' has no momentum '" +
                     momentumName(k) + "', which " + optimizerWords(kind) +
                     " keeps");
    }
  }
  for (const checkpoint::Parameter &p : c.parameters) {
    Buffer *b = trainer.buffer(p.name);
    if (Error e = toError(trainer.copy(b->data, p.values.data(), b->bytes())))
      return e;
  }
  if (!g)
    return Error::success();
  for (const std::string &name : trainer.trainableParameters()) {
    const checkpoint::ParameterOptimizerState *s = g->find(name);
    for (int k = 0; k < n; ++k) {
      Buffer *b = trainer.optimizerState(name, k);
      const checkpoint::Parameter *m = s->find(momentumName(k));
      if (Error e =
              toError(trainer.copy(b->data, m->values.data(), b->bytes())))
        return e;
    }
  }
  trainer.setOptimizerSteps(g->step);
  return Error::success();
}

Error Engine::exportInferenceModel(
    StringRef path, llvm::ArrayRef<std::string> outputNames) const {
  auto state = checkpointState(false);
  if (!state)
    return state.takeError();
  // The eval graph; without one, the training graph's forward part.
  bool training = impl->paths.evalModel.empty();
  const std::string &graph =
      training ? impl->paths.training : impl->paths.evalModel;
  if (!StringRef(graph).ends_with(".onnx"))
    return err("exporting an inference model needs the graph as ONNX; " +
               graph + " is not");
  auto buf = llvm::MemoryBuffer::getFile(graph);
  if (!buf)
    return err("cannot read " + graph + ": " + buf.getError().message());
  std::string bytes, error;
  if (!onnx_export::writeInferenceModel(
          (*buf)->getBufferStart(), (*buf)->getBufferSize(), outputNames,
          state->parameters, training, bytes, error))
    return err(graph + ": " + error);
  if (!checkpoint::writeFileAtomically(path.str(), bytes, error))
    return err(error);
  return Error::success();
}

} // namespace comet
