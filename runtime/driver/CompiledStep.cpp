//===- CompiledStep.cpp - Load a step compiled ahead of time --------------===//
//
// The library's undefined runtime symbols (_mlir_ciface_comet_rt_*) resolve
// against the CometRuntime that the launcher links, so it is opened with
// RTLD_NOW: a missing one is an error here, not in the middle of a step.
//
//===----------------------------------------------------------------------===//
#include "comet/driver/CompiledStep.h"
#include "comet/driver/Coverage.h"
#include "comet/runtime/alloc.h"

#include <cstring>
#include <dlfcn.h>
#include <map>

namespace comet {

CompiledStep::~CompiledStep() {
  if (handle)
    dlclose(handle);
}

std::string CompiledStep::load(const std::string &path,
                               std::unique_ptr<CompiledStep> &out) {
  // dlopen searches the library path for a name without a slash.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void *h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return "cannot load " + path + ": " + dlerror();
  std::unique_ptr<CompiledStep> s(new CompiledStep());
  s->handle = h;
  s->prog = static_cast<const comet_aot_program *>(
      dlsym(h, COMET_AOT_PROGRAM_SYMBOL));
  if (!s->prog)
    return path + " is not a step compiled by comet-compile (no " +
           COMET_AOT_PROGRAM_SYMBOL + ")";
  if (s->prog->abi_version != COMET_AOT_ABI_VERSION)
    return path + " was compiled for data section version " +
           std::to_string(s->prog->abi_version) + ", this launcher reads " +
           std::to_string(COMET_AOT_ABI_VERSION);
  if (!s->prog->train.packed)
    return path + " has no training step";
  out = std::move(s);
  return "";
}

static Entry entryOf(const comet_aot_entry &e) {
  Entry out;
  out.funcName = e.func_name;
  out.packed = e.packed;
  out.fusedOptimizer = e.fused_optimizer ? e.fused_optimizer : "";
  for (int64_t i = 0; i < e.num_args; ++i) {
    const comet_aot_arg &a = e.args[i];
    ArgInfo info;
    info.name = a.name;
    info.shape.assign(a.shape, a.shape + a.rank);
    info.elemBytes = a.elem_bytes;
    info.isResult = a.is_result != 0;
    info.isLabels = a.is_labels != 0;
    info.valueRange = a.value_range;
    info.optimizerRole = a.optimizer_role ? a.optimizer_role : "";
    info.optimizerParam = a.optimizer_param ? a.optimizer_param : "";
    out.args.push_back(std::move(info));
  }
  for (int64_t i = 0; i < e.num_runtime_entries; ++i)
    out.runtimeEntries.push_back(e.runtime_entries[i]);
  return out;
}

std::vector<std::string> CompiledStep::runtimeEntries() const {
  std::vector<std::string> out = entryOf(prog->train).runtimeEntries;
  if (prog->has_eval)
    for (std::string &e : entryOf(prog->eval).runtimeEntries)
      out.push_back(std::move(e));
  for (std::string &e : optimizerEntries(prog->optimizer))
    out.push_back(std::move(e));
  return out;
}

ArtifactPaths CompiledStep::artifacts() const {
  return {prog->model, prog->weights_file, prog->eval_model,
          prog->optimizer_model};
}

std::string CompiledStep::bind(Trainer &trainer, float learningRate,
                               float momentum, float weightDecay) const {
  const comet_aot_program &p = *prog;
  std::map<std::string, const comet_aot_weight *> weights;
  for (int64_t i = 0; i < p.num_weights; ++i)
    weights[p.weights[i].name] = &p.weights[i];
  // The weights comet-compile embedded are the parameters it bound, shaped
  // as the graph wants.
  std::string e = trainer.bindTrain(
      entryOf(p.train),
      [&](const std::string &name, InitialWeight &out) {
        auto it = weights.find(name);
        if (it == weights.end())
          return false;
        out.data = it->second->data;
        out.bytes = it->second->bytes;
        return true;
      },
      p.weights_file);
  if (!e.empty())
    return e;
  std::vector<SiteStats> sites;
  for (int64_t i = 0; i < p.num_sites; ++i) {
    const comet_aot_site &s = p.sites[i];
    SiteStats st;
    st.value = s.value;
    st.codec = s.codec;
    st.slot = s.slot;
    st.eb = s.eb;
    st.bytesIn = s.bytes_in;
    for (int64_t k = 0; k < s.num_consumers; ++k) {
      const comet_aot_consumer &c = s.consumers[k];
      st.consumers.push_back(
          {c.kind, c.num_terms, c.reuse, c.activation_elements, c.param});
    }
    sites.push_back(std::move(st));
  }
  trainer.setSites(std::move(sites));
  MemoryPrediction pred;
  pred.valid = true;
  pred.numSteps = p.num_steps;
  pred.szRatio = p.sz_ratio;
  pred.candidateBytes = p.candidate_bytes;
  for (int64_t i = 0; i < p.num_intervals; ++i) {
    const comet_aot_interval &iv = p.intervals[i];
    pred.intervals.push_back({iv.start, iv.end, iv.bytes, iv.sz_tensor_bytes,
                              iv.activation != 0, iv.slot});
  }
  pred.workspace.assign(p.workspace, p.workspace + p.num_workspace);
  for (int64_t i = 0; i < p.num_recomputed; ++i)
    pred.recomputed.push_back(p.recomputed[i]);
  comet_rt_context_set_workspace_limit(trainer.context(), p.workspace_limit);
  trainer.setPrediction(std::move(pred));
  OptimizerConfig c;
  c.kind = p.optimizer;
  c.learningRate = learningRate;
  c.momentum = momentum;
  c.weightDecay = weightDecay;
  c.adamAlpha = p.adam_alpha;
  c.adamBeta = p.adam_beta;
  c.adamEps = p.adam_eps;
  c.adamWeightDecay = p.adam_weight_decay;
  c.adamMode = p.adam_mode;
  c.adamCorrectBias = p.adam_correct_bias;
  e = trainer.setupOptimizer(c);
  if (!e.empty())
    return e;
  if (p.has_eval) {
    e = trainer.bindEval(entryOf(p.eval), p.eval_model);
    if (!e.empty())
      return e;
  }
  trainer.resetPeaks();
  return "";
}

} // namespace comet
