//===- CompressActivations.cpp - Keep long-lived activations compressed ---===//
//
// Reads the candidates of ActivationLiveness, picks a codec from what the
// far consumers need, computes a static bound for lossy codecs, selects
// candidates by policy, and rewrites:
//
//   v = producer            v = producer
//   near uses of v    ->    near uses of v
//                           h = comet.compress v        (after the last near
//                           use)
//   ...                     ...
//   far uses of v           v' = comet.decompress h     (before the first far
//   use)
//                           far uses of v'
//
//===----------------------------------------------------------------------===//
#include "comet/Analysis/ActivationLiveness.h"
#include "comet/Analysis/ErrorBounds.h"
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <map>

namespace comet {
#define GEN_PASS_DEF_COMETCOMPRESSACTIVATIONS
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"
} // namespace comet

using namespace mlir;
using namespace comet;

namespace {

/// Measured statistics of one activation (profile=PATH).
struct Stats {
  std::optional<double> nonZero, meanAbsGrad, meanAbsMomentum, gwNormSq,
      gyNormSq, invStd, gradNoiseVar;
};

struct Profile {
  std::map<int64_t, Stats> bySlot;
  llvm::StringMap<Stats> byName;
};

/// Reads {"slots": {"<slot>": STATS}, "values": {"<name>": STATS}} with
/// STATS = {"R": .., "Lbar": .., "momentum": .., "gw_norm2": ..,
/// "gy_norm2": .., "inv_std": .., "noise": ..}, every field optional, every
/// number positive.
LogicalResult loadProfile(StringRef path, Profile &profile, std::string &err) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf) {
    err =
        "cannot read profile '" + path.str() + "': " + buf.getError().message();
    return failure();
  }
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buf)->getBuffer());
  if (!parsed) {
    err = "profile '" + path.str() +
          "' is not valid JSON: " + llvm::toString(parsed.takeError());
    return failure();
  }
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root) {
    err = "profile '" + path.str() + "': the top level must be an object";
    return failure();
  }
  for (const auto &kv : *root)
    if (kv.first != "slots" && kv.first != "values") {
      err = "profile '" + path.str() + "': unknown key '" + kv.first.str() +
            "' (expected 'slots' and/or 'values')";
      return failure();
    }
  auto readStats = [&](const llvm::json::Value &v, StringRef where,
                       Stats &s) -> LogicalResult {
    const llvm::json::Object *o = v.getAsObject();
    if (!o) {
      err =
          "profile '" + path.str() + "': " + where.str() + " must be an object";
      return failure();
    }
    for (const auto &f : *o) {
      std::optional<double> *dst =
          llvm::StringSwitch<std::optional<double> *>(f.first)
              .Case("R", &s.nonZero)
              .Case("Lbar", &s.meanAbsGrad)
              .Case("momentum", &s.meanAbsMomentum)
              .Case("gw_norm2", &s.gwNormSq)
              .Case("gy_norm2", &s.gyNormSq)
              .Case("inv_std", &s.invStd)
              .Case("noise", &s.gradNoiseVar)
              .Default(nullptr);
      if (!dst) {
        err = "profile '" + path.str() + "': " + where.str() +
              ": unknown field '" + f.first.str() +
              "' (expected R, Lbar, momentum, gw_norm2, gy_norm2, inv_std, "
              "noise)";
        return failure();
      }
      std::optional<double> num = f.second.getAsNumber();
      if (!num || !std::isfinite(*num) || *num <= 0) {
        err = "profile '" + path.str() + "': " + where.str() + "." +
              f.first.str() + " must be a positive number";
        return failure();
      }
      *dst = *num;
    }
    return success();
  };
  if (const llvm::json::Value *slots = root->get("slots")) {
    const llvm::json::Object *o = slots->getAsObject();
    if (!o) {
      err = "profile '" + path.str() + "': 'slots' must be an object";
      return failure();
    }
    for (const auto &kv : *o) {
      int64_t slot;
      if (StringRef(kv.first).getAsInteger(10, slot) || slot < 0) {
        err = "profile '" + path.str() + "': slot key '" + kv.first.str() +
              "' is not a non-negative integer";
        return failure();
      }
      if (failed(readStats(kv.second, "slots." + kv.first.str(),
                           profile.bySlot[slot])))
        return failure();
    }
  }
  if (const llvm::json::Value *vals = root->get("values")) {
    const llvm::json::Object *o = vals->getAsObject();
    if (!o) {
      err = "profile '" + path.str() + "': 'values' must be an object";
      return failure();
    }
    for (const auto &kv : *o)
      if (failed(readStats(kv.second, "values." + kv.first.str(),
                           profile.byName[kv.first])))
        return failure();
  }
  return success();
}

/// A candidate with its codec chosen.
struct Plan {
  Candidate cand;
  Codec codec;
  /// Consumer ops that form weight gradients from it (for the bound).
  SmallVector<Operation *, 2> gradConsumers;
  /// Weight gradients that read a value recomputed from it: that value's
  /// nonzero fraction, and the gain from this value's error to its error
  /// (0 for a BatchNorm output: |scale| / std, from the priors or the
  /// profile's 1/std).
  struct RecomputedConsumer {
    Operation *op;
    double nonZero;
    double gain;
  };
  SmallVector<RecomputedConsumer, 2> recomputedConsumers;
  int64_t bytes = 0;
  int64_t storedBytes = 0;
  /// The saving window is [cand.lastNear + 1, saveEnd): up to the first far
  /// use, or past the last one when the decompress is a fused mask one
  /// (ActivationLiveness::fusesMaskDecompress).
  int64_t saveEnd = 0;
  double eb = 0;
  std::optional<int64_t> slot;
  /// For the runtime's bound tuner: one comet.tune entry per consumer that
  /// got a bound, and those consumers (docs/tuning.md).
  SmallVector<Attribute> tune;
  SmallVector<onnx::SavedActivationOpInterface> tuneOps;
};

/// The parameter whose gradient `consumer` forms: the accumulation buffer
/// (`<param>_grad.accumulation.buffer`) that its weight-gradient result
/// reaches through a few ops, else "".
std::string weightGradParamOf(onnx::SavedActivationOpInterface consumer) {
  std::optional<unsigned> gradResult = consumer.getWeightGradResult();
  if (!gradResult || *gradResult >= consumer->getNumResults())
    return "";
  SmallVector<std::pair<Operation *, unsigned>> work;
  for (Operation *u : consumer->getResult(*gradResult).getUsers())
    work.push_back({u, 0});
  while (!work.empty()) {
    auto [op, depth] = work.pop_back_val();
    if (isa<onnx::InPlaceAccumulatorV2Op>(op)) {
      auto arg = dyn_cast<BlockArgument>(op->getOperand(0));
      if (!arg)
        continue;
      auto f = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
      if (!f)
        continue;
      auto name =
          f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "onnx.name");
      if (!name)
        continue;
      StringRef n = name.getValue();
      n.consume_back("_grad.accumulation.buffer");
      return n.str();
    }
    if (depth < 4)
      for (Value r : op->getResults())
        for (Operation *u : r.getUsers())
          work.push_back({u, depth + 1});
  }
  return "";
}

/// The parameter the error of `consumer`'s saved activation reaches first.
/// A weight-gradient op (Gemm, Conv...) forms it itself. An activation
/// gradient (BiasGeluGrad_dX, SoftmaxGrad_13, SigmoidGrad...) forms none:
/// its dX is the output gradient of the next weight gradient, the op that
/// reads dX (through layout ops) beside a saved activation that the
/// liveness analysis does not count as a parameter (the input gradient
/// reads dX beside the transposed weight); its
/// parameter is returned, else "". Errors that reach a weight only through
/// other gradients (the attention's softmax) keep "".
std::string paramOf(const ActivationLiveness &la,
                    onnx::SavedActivationOpInterface consumer) {
  auto isParameter = [&](Value v) {
    int id = la.getId(v);
    return id >= 0 && la.getValue(id).category == ValueCategory::Parameter;
  };
  if (consumer.getWeightGradResult())
    return weightGradParamOf(consumer);
  SmallVector<std::pair<Value, unsigned>> work;
  for (Value r : consumer->getResults())
    work.push_back({r, 0});
  llvm::SmallPtrSet<Operation *, 16> seen;
  for (size_t i = 0; i < work.size(); ++i) {
    auto [v, depth] = work[i];
    for (OpOperand &use : v.getUses()) {
      Operation *u = use.getOwner();
      if (!seen.insert(u).second)
        continue;
      auto next = dyn_cast<onnx::SavedActivationOpInterface>(u);
      if (next && next.getWeightGradResult()) {
        for (unsigned a = 0; a < u->getNumOperands(); ++a) {
          Value act = u->getOperand(a);
          if (a == use.getOperandNumber() || isParameter(act) ||
              !next.getSavedActivationKind(a) ||
              next.getOutputGradOperand(a) != use.getOperandNumber())
            continue;
          std::string p = weightGradParamOf(next);
          if (!p.empty())
            return p;
        }
      }
      if (depth < 4 && isLayoutOpType(getOpType(u)))
        for (Value r : u->getResults())
          work.push_back({r, depth + 1});
    }
  }
  return "";
}

/// Whether `v` is `root` or computed from it within a few ops.
bool derivesFrom(Value v, Value root, unsigned depth = 0) {
  if (v == root)
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || depth > 8)
    return false;
  return llvm::any_of(def->getOperands(),
                      [&](Value o) { return derivesFrom(o, root, depth + 1); });
}

/// The operand of `consumer` that reads the saved activation, which the
/// decompress `d` feeds: the first saved-activation operand computed from
/// it, else the last saved-activation operand.
unsigned activationOperand(onnx::SavedActivationOpInterface consumer, Value d) {
  std::optional<unsigned> last;
  for (unsigned i = 0, e = consumer->getNumOperands(); i < e; ++i) {
    if (!consumer.getSavedActivationKind(i))
      continue;
    if (derivesFrom(consumer->getOperand(i), d))
      return i;
    last = i;
  }
  return last.value_or(0);
}

WeightGradKind toWeightGradKind(onnx::WeightGradForm f) {
  switch (f) {
  case onnx::WeightGradForm::Conv:
    return WeightGradKind::conv;
  case onnx::WeightGradForm::Gemm:
    return WeightGradKind::gemm;
  case onnx::WeightGradForm::BatchNorm:
    return WeightGradKind::batchnorm;
  }
  llvm_unreachable("unknown weight-gradient form");
}

/// Follows layout ops (whose uses ActivationLiveness looks through) to the
/// ops that actually form the weight gradient.
void collectGradConsumers(Operation *user, SmallVectorImpl<Operation *> &out,
                          unsigned depth = 0) {
  auto sa = dyn_cast<onnx::SavedActivationOpInterface>(user);
  if ((sa && sa.getWeightGradForm()) || depth > 8) {
    out.push_back(user);
    return;
  }
  for (Operation *next : user->getUsers())
    collectGradConsumers(next, out, depth + 1);
}

struct CompressActivationsPass
    : public comet::impl::CometCompressActivationsBase<
          CompressActivationsPass> {
  using Base::Base;

  void runOnOperation() override;
  LogicalResult validateOptions(std::string &err);
  void runOnFunction(FunctionOpInterface func);
  std::optional<Codec> chooseCodec(const ActivationLiveness &la,
                                   const Candidate &c, Plan &plan);
  double boundFor(const ActivationLiveness &la, Plan &plan);
  SmallVector<unsigned> selectForBudget(const ActivationLiveness &la,
                                        ArrayRef<Plan> plans, bool &reachable);

  Profile profile;
  /// only= / except= names that matched a candidate (checked per module).
  llvm::StringSet<> matchedNames;
};

} // namespace

LogicalResult CompressActivationsPass::validateOptions(std::string &err) {
  if (minBytes < 0)
    err = "min-bytes must be non-negative, got " + std::to_string(minBytes);
  else if (minDistance < 1)
    err = "min-distance must be at least 1, got " + std::to_string(minDistance);
  else if (policy == CompressPolicy::Budget && memoryBudget < 0)
    err = "policy=budget needs memory-budget=BYTES";
  else if (policy == CompressPolicy::All && memoryBudget >= 0)
    err = "memory-budget is only used with policy=budget";
  else if (!(invStdPrior > 0))
    err = "inv-std-prior must be positive";
  else if (!(scalePrior > 0) || !std::isfinite(scalePrior))
    err = "scale-prior must be positive";
  else if (!(sigmaFactor > 0) || !(nonZeroPrior > 0) || nonZeroPrior > 1 ||
           !(gradPrior > 0) || !(momentumPrior > 0) || !(acgcEnergy > 0) ||
           !(acgcNormRatio > 0) || !(noiseFraction > 0) ||
           !std::isfinite(noiseFraction))
    err = "k, grad-prior, momentum-prior, acgc-e, acgc-norm-ratio and "
          "noise-fraction must be positive, and nonzero-prior in (0, 1]";
  else if (batchSize <= 0)
    err = "batch-size must be positive, got " + std::to_string(batchSize);
  else if (!(szRatio > 0))
    err = "sz-ratio must be positive";
  else if (!onlyNames.empty() && !exceptNames.empty())
    err = "only and except exclude each other";
  return success(err.empty());
}

void CompressActivationsPass::runOnOperation() {
  std::string err;
  if (failed(validateOptions(err))) {
    getOperation().emitError("comet-compress-activations: ") << err;
    return signalPassFailure();
  }
  profile = Profile();
  if (!profilePath.empty() && failed(loadProfile(profilePath, profile, err))) {
    getOperation().emitError("comet-compress-activations: ") << err;
    return signalPassFailure();
  }
  matchedNames.clear();
  for (Operation &op : getOperation().getBody()->getOperations())
    if (auto func = dyn_cast<FunctionOpInterface>(op))
      if (!func.isExternal())
        runOnFunction(func);
  // A misspelt name would silently compress everything (except=) or
  // nothing (only=).
  for (const std::string &n : onlyNames.empty() ? exceptNames : onlyNames)
    if (!matchedNames.contains(n)) {
      getOperation().emitError("comet-compress-activations: '")
          << n << "' names no candidate";
      return signalPassFailure();
    }
}

std::optional<Codec>
CompressActivationsPass::chooseCodec(const ActivationLiveness &la,
                                     const Candidate &c, Plan &plan) {
  const ValueInfo &v = la.getValue(c.valueId);
  bool mask = false, grad = false, other = false;
  for (unsigned ui : c.farUses) {
    const ValueUse &u = v.uses[ui];
    switch (u.kind) {
    case ConsumerKind::ReluMask:
      mask = true;
      break;
    case ConsumerKind::WeightGradInput:
      grad = true;
      collectGradConsumers(u.directUser, plan.gradConsumers);
      break;
    case ConsumerKind::BatchNorm:
      if (batchNorm == BatchNormPolicy::Keep)
        other = true;
      grad = true;
      plan.gradConsumers.push_back(u.directUser);
      break;
    case ConsumerKind::ShapeOnly:
      break;
    case ConsumerKind::Recompute: {
      // The recomputed value's readers decide: weight gradients bound it,
      // masks and shapes read it as they would the original.
      Operation *r = u.directUser;
      int rid = la.getId(r->getResult(0));
      std::optional<double> gain = 0.0; // a BatchNorm's: its statistics'
      double nonZero = 1.0;
      if (auto apply = dyn_cast<BatchNormApplyOp>(r)) {
        nonZero = apply.getActivation() == "none" ? 1.0 : nonZeroPrior;
      } else {
        gain = recomputeGain(r);
        // A Dropout's output keeps 1 - ratio of a dense input's values.
        if (gain && isa<onnx::DropoutGradOp>(r))
          nonZero = 1.0 / *gain;
      }
      if (rid < 0 || !gain) {
        other = true;
        break;
      }
      for (const ValueUse &ru : la.getValue(rid).uses) {
        if (ru.kind == ConsumerKind::WeightGradInput) {
          SmallVector<Operation *> ops;
          collectGradConsumers(ru.directUser, ops);
          for (Operation *op : ops)
            plan.recomputedConsumers.push_back({op, nonZero, *gain});
        } else if (ru.kind != ConsumerKind::ReluMask &&
                   ru.kind != ConsumerKind::ShapeOnly) {
          other = true;
        }
      }
      grad = true;
      break;
    }
    default: // PoolIndices, Other: kept (docs/liveness.md).
      other = true;
      break;
    }
  }
  if (other)
    return std::nullopt;
  Type elt = cast<RankedTensorType>(v.value.getType()).getElementType();
  std::optional<Codec> chosen;
  if (mask && !grad && codec != CodecChoice::Sz)
    chosen = Codec::mask;
  else if (grad && codec != CodecChoice::Mask)
    chosen = Codec::sz;
  if (chosen && !codecSupportsElementType(*chosen, elt))
    return std::nullopt;
  return chosen;
}

double CompressActivationsPass::boundFor(const ActivationLiveness &la,
                                         Plan &plan) {
  const ValueInfo &v = la.getValue(plan.cand.valueId);
  int64_t dyn = la.getOptions().dynamicDimSize;
  Stats s;
  if (auto it = profile.byName.find(v.name); it != profile.byName.end())
    s = it->second;
  if (plan.slot)
    if (auto it = profile.bySlot.find(*plan.slot); it != profile.bySlot.end()) {
      // Slot entries win field by field over name entries.
      const Stats &b = it->second;
      for (auto [dst, src] : {std::pair{&s.nonZero, &b.nonZero},
                              std::pair{&s.meanAbsGrad, &b.meanAbsGrad},
                              std::pair{&s.meanAbsMomentum, &b.meanAbsMomentum},
                              std::pair{&s.gwNormSq, &b.gwNormSq},
                              std::pair{&s.gyNormSq, &b.gyNormSq},
                              std::pair{&s.gradNoiseVar, &b.gradNoiseVar}})
        if (*src)
          *dst = *src;
    }

  double eb = 0;
  // Direct readers first, then those of a recomputed value.
  SmallVector<std::pair<Operation *, std::optional<Plan::RecomputedConsumer>>>
      consumers;
  for (Operation *op : plan.gradConsumers)
    consumers.push_back({op, std::nullopt});
  for (const Plan::RecomputedConsumer &rc : plan.recomputedConsumers)
    consumers.push_back({rc.op, rc});
  for (auto [op, recomputed] : consumers) {
    auto consumer = dyn_cast<onnx::SavedActivationOpInterface>(op);
    std::optional<onnx::WeightGradForm> form =
        consumer ? consumer.getWeightGradForm() : std::nullopt;
    // N: terms summed per weight-gradient element.
    std::optional<double> terms =
        form ? consumer.getSummedTerms(dyn) : std::nullopt;
    if (!terms || !(*terms > 0))
      continue;
    double numTerms = *terms;
    // u: reuse of each input element (AC-GC).
    double reuse = consumer.getKernelArea() / consumer.getStrideProduct();
    if (!(reuse > 0))
      reuse = 1;
    // Sigmoid and tanh outputs have no zeros: R = 1 unless measured.
    double nonZero = s.nonZero.value_or(
        consumer.hasDenseSavedActivation() ? 1.0 : nonZeroPrior);
    // Error in x reaches xhat = (x - mean) * inv_std scaled by inv_std;
    // batch-norm inputs are dense.
    double gain = 1;
    if (consumer.getInvStdOperand()) {
      nonZero = 1;
      gain = s.invStd.value_or(invStdPrior);
    }
    if (recomputed) {
      // A BatchNorm's reader sees scale * (x - mean) * inv_std (+ bias,
      // then the activation, 1-Lipschitz): this value's error times
      // |scale| / std. A Dropout's, x / (1 - ratio) or 0; a GELU's, at
      // most 1.13 times it. The sparsity is the recomputed value's.
      nonZero = recomputed->nonZero;
      gain = recomputed->gain > 0 ? recomputed->gain
                                  : s.invStd.value_or(invStdPrior) * scalePrior;
    } else {
      // The tuner re-bounds from the direct readers' statistics only
      // (Engine keeps recompute off under --compress adaptive).
      plan.tune.push_back(ConsumerAttr::get(
          consumer->getContext(), toWeightGradKind(*form),
          paramOf(la, consumer), numTerms, reuse, v.numElements));
      plan.tuneOps.push_back(consumer);
    }
    double e;
    if (rule == BoundRule::Acgc) {
      AcgcBoundParams p;
      p.energyFraction = acgcEnergy;
      p.weightGradNormSq = s.gwNormSq.value_or(acgcNormRatio);
      p.outputGradNormSq = s.gyNormSq.value_or(1.0);
      p.activationElements = static_cast<double>(v.numElements);
      p.reuse = reuse;
      e = acgcErrorBound(p) / gain;
    } else {
      CometBoundParams p;
      p.numTerms = numTerms;
      p.nonZeroFraction = std::min(1.0, nonZero);
      p.meanAbsGrad = s.meanAbsGrad.value_or(gradPrior);
      p.meanAbsMomentum = s.meanAbsMomentum.value_or(momentumPrior);
      p.sigmaFactor = sigmaFactor;
      // The noise rule's sigma where the profile measured the noise; COMET's
      // prior otherwise (nothing is known of the noise before training).
      if (rule == BoundRule::Noise && s.gradNoiseVar) {
        p.meanAbsMomentum = noiseTargetSigma(noiseFraction, *s.gradNoiseVar);
        p.sigmaFactor = 1;
      }
      e = cometErrorBound(p) / gain;
    }
    if (e > 0 && (eb == 0 || e < eb))
      eb = e; // The tightest consumer decides.
  }
  return eb;
}

/// Peak of the original timeline with `chosen` compressed, in the original
/// step numbering: a compressed value is absent strictly between its last
/// near use and its first far use (through its last far use when the mask
/// decompress is fused), where its handle lives instead.
static int64_t peakWith(ArrayRef<int64_t> base, ArrayRef<Plan> plans,
                        ArrayRef<unsigned> chosen, SmallVectorImpl<int64_t> &d,
                        int64_t *argmax = nullptr) {
  d.assign(base.size() + 1, 0);
  for (unsigned i : chosen) {
    const Plan &p = plans[i];
    int64_t s = p.cand.lastNear + 1, e = p.saveEnd; // [s, e)
    d[s] += p.storedBytes - p.bytes;
    d[e] -= p.storedBytes - p.bytes;
  }
  int64_t run = 0, peak = 0, at = 0;
  for (size_t t = 0; t < base.size(); ++t) {
    run += d[t];
    if (t == 0 || base[t] + run > peak) {
      peak = base[t] + run;
      at = t;
    }
  }
  if (argmax)
    *argmax = at;
  return peak;
}

/// The fewest candidates that bring the peak to the budget. Exact (by
/// increasing subset size, lowest peak among the smallest) up to 12
/// candidates; beyond, greedy: while over budget, compress the candidate
/// that saves most at the current peak step (only candidates spanning the
/// peak step can lower it).
SmallVector<unsigned> CompressActivationsPass::selectForBudget(
    const ActivationLiveness &la, ArrayRef<Plan> plans, bool &reachable) {
  ArrayRef<int64_t> base = la.getTimeline().total;
  SmallVector<int64_t> scratch;
  reachable = true;
  if (base.empty() || peakWith(base, plans, {}, scratch) <= memoryBudget)
    return {};
  unsigned k = plans.size();
  if (k <= 12) {
    std::optional<uint32_t> best;
    int64_t bestPeak = 0;
    SmallVector<unsigned> set;
    for (uint32_t mask = 1; mask < (1u << k); ++mask) {
      unsigned pop = llvm::popcount(mask);
      if (best && pop > static_cast<unsigned>(llvm::popcount(*best)))
        continue;
      set.clear();
      for (unsigned i = 0; i < k; ++i)
        if (mask & (1u << i))
          set.push_back(i);
      int64_t pk = peakWith(base, plans, set, scratch);
      if (pk > memoryBudget)
        continue;
      if (!best || pop < static_cast<unsigned>(llvm::popcount(*best)) ||
          pk < bestPeak) {
        best = mask;
        bestPeak = pk;
      }
    }
    SmallVector<unsigned> out;
    if (!best) {
      reachable = false;
      for (unsigned i = 0; i < k; ++i)
        out.push_back(i);
      return out;
    }
    for (unsigned i = 0; i < k; ++i)
      if (*best & (1u << i))
        out.push_back(i);
    return out;
  }
  SmallVector<unsigned> chosen;
  SmallVector<bool> used(k, false);
  while (true) {
    int64_t at = 0;
    int64_t pk = peakWith(base, plans, chosen, scratch, &at);
    if (pk <= memoryBudget)
      break;
    int bestIdx = -1;
    int64_t bestSave = 0;
    for (unsigned i = 0; i < k; ++i) {
      const Plan &p = plans[i];
      if (used[i] || !(p.cand.lastNear < at && at < p.saveEnd))
        continue;
      int64_t save = p.bytes - p.storedBytes;
      if (save > bestSave) {
        bestSave = save;
        bestIdx = i;
      }
    }
    if (bestIdx < 0) {
      reachable = false;
      break;
    }
    used[bestIdx] = true;
    chosen.push_back(bestIdx);
  }
  if (!reachable) {
    chosen.clear();
    for (unsigned i = 0; i < k; ++i)
      chosen.push_back(i);
  }
  llvm::sort(chosen);
  return chosen;
}

void CompressActivationsPass::runOnFunction(FunctionOpInterface func) {
  auto &la = getChildAnalysis<ActivationLiveness>(func);
  LivenessOptions opts;
  opts.dynamicDimSize = batchSize;
  opts.szRatio = szRatio;
  la.setOptions(opts);

  // Slots continue after any the function already uses.
  int64_t nextSlot = 0;
  func->walk([&](CompressOp c) {
    if (c.getBound() && c.getBound()->getSlot())
      nextSlot = std::max(nextSlot, *c.getBound()->getSlot() + 1);
  });

  std::vector<Plan> plans;
  for (const Candidate &c : la.getCandidates(minBytes, minDistance)) {
    ++numCandidates;
    StringRef name = la.getValue(c.valueId).name;
    bool listed = llvm::is_contained(onlyNames, name) ||
                  llvm::is_contained(exceptNames, name);
    if (listed)
      matchedNames.insert(name);
    if (onlyNames.empty() ? listed : !listed) {
      ++numExcluded;
      continue;
    }
    Plan p;
    p.cand = c;
    std::optional<Codec> cd = chooseCodec(la, c, p);
    if (!cd) {
      ++numKept;
      continue;
    }
    const ValueInfo &v = la.getValue(c.valueId);
    p.codec = *cd;
    p.bytes = v.inPlaceOf >= 0 ? v.tensorBytes : v.bytes;
    p.storedBytes =
        estimateStoredBytes(p.codec, v.numElements, v.tensorBytes, szRatio);
    p.saveEnd = p.codec == Codec::mask && la.fusesMaskDecompress(c)
                    ? v.uses[c.farUses.back()].index + 1
                    : c.firstFar;
    plans.push_back(std::move(p));
  }

  SmallVector<unsigned> selected;
  bool reachable = true;
  if (policy == CompressPolicy::Budget)
    selected = selectForBudget(la, plans, reachable);
  else
    for (unsigned i = 0; i < plans.size(); ++i)
      selected.push_back(i);
  numNotSelected += plans.size() - selected.size();
  // The candidates a budget leaves raw, for the comet.budget record.
  SmallVector<Attribute> notSelected;
  if (policy == CompressPolicy::Budget) {
    SmallVector<bool> isSelected(plans.size(), false);
    for (unsigned i : selected)
      isSelected[i] = true;
    for (auto [i, p] : llvm::enumerate(plans))
      if (!isSelected[i])
        notSelected.push_back(StringAttr::get(
            func->getContext(), la.getValue(p.cand.valueId).name));
  }

  // Bounds and slots, in definition order of the selected values.
  SmallVector<Plan *> toRewrite;
  for (unsigned i : selected) {
    Plan &p = plans[i];
    if (isLossy(p.codec)) {
      p.slot = nextSlot;
      p.eb = boundFor(la, p);
      if (!(p.eb > 0)) {
        emitRemark(la.getValue(p.cand.valueId).value.getLoc())
            << "not compressed: no error bound could be derived";
        ++numNoBound;
        continue;
      }
      ++nextSlot;
    }
    toRewrite.push_back(&p);
    ++(p.codec == Codec::mask ? numMask : numSz);
    bytesSaved += p.bytes - p.storedBytes;
  }

  // Collect the far operands first: the rewrite adds uses.
  MLIRContext *ctx = func->getContext();
  OpBuilder b(ctx);
  DenseMap<Operation *, Operation *> lastInsertedAfter;
  for (Plan *p : toRewrite) {
    const ValueInfo &v = la.getValue(p->cand.valueId);
    // A recompute reads its own decompressed copy and writes over it
    // (ActivationLiveness::ValueInfo::inPlaceOf), so the shared copy is
    // made only before the first other far reader.
    SmallVector<OpOperand *> far, recomputed;
    Operation *firstOther = nullptr;
    for (unsigned ui : p->cand.farUses) {
      const ValueUse &u = v.uses[ui];
      OpOperand *o = &u.directUser->getOpOperand(u.operandNumber);
      if (u.kind == ConsumerKind::Recompute) {
        recomputed.push_back(o);
        continue;
      }
      far.push_back(o);
      if (!firstOther)
        firstOther = u.user;
    }
    auto tensorType = cast<RankedTensorType>(v.value.getType());
    auto ctype = CompressedType::get(ctx, tensorType, p->codec);
    BoundAttr bound;
    if (isLossy(p->codec))
      bound = BoundAttr::get(ctx, p->eb, p->slot);

    // Several compresses after one op keep definition order. Where the
    // last near reader may write its result over the value (Relu,
    // BatchNormInternal: ActivationLiveness's in-place rule), the compress
    // goes before it instead, so that the value dies there.
    Operation *after = la.getSchedule()[p->cand.lastNear];
    Location loc = NameLoc::get(StringAttr::get(ctx, v.name + ".compress"),
                                v.value.getLoc());
    CompressOp c;
    if (p->cand.lastNear > v.def && after->hasTrait<onnx::InPlaceForward>() &&
        after->getOperand(0) == v.value &&
        llvm::count(after->getOperands(), v.value) == 1) {
      b.setInsertionPoint(after);
      c = CompressOp::create(b, loc, ctype, v.value, bound);
    } else {
      Operation *&anchor = lastInsertedAfter[after];
      b.setInsertionPointAfter(anchor ? anchor : after);
      c = CompressOp::create(b, loc, ctype, v.value, bound);
      anchor = c;
    }

    Location dloc = NameLoc::get(StringAttr::get(ctx, v.name + ".decompress"),
                                 v.value.getLoc());
    for (OpOperand *o : recomputed) {
      b.setInsertionPoint(o->getOwner());
      o->set(DecompressOp::create(b, dloc, tensorType, c.getResult()));
    }
    if (far.empty())
      continue;
    b.setInsertionPoint(firstOther);
    auto d = DecompressOp::create(b, dloc, tensorType, c.getResult());
    for (OpOperand *o : far)
      o->set(d.getResult());

    // Where the tuner's statistics come from: comet.tune on the compress,
    // comet.observe (dY and 1/std operands) on each consumer.
    if (p->slot && !p->tune.empty()) {
      c->setAttr(CometDialect::kTuneAttrName, b.getArrayAttr(p->tune));
      for (auto [ci, op] : llvm::enumerate(p->tuneOps)) {
        unsigned dy =
            op.getOutputGradOperand(activationOperand(op, d.getResult()));
        std::optional<int64_t> aux;
        if (std::optional<unsigned> invStd = op.getInvStdOperand())
          aux = *invStd;
        SmallVector<Attribute> entries;
        if (auto old =
                op->getAttrOfType<ArrayAttr>(CometDialect::kObserveAttrName))
          entries.assign(old.begin(), old.end());
        entries.push_back(
            ObserveAttr::get(ctx, *p->slot, static_cast<int64_t>(ci), dy, aux));
        op->setAttr(CometDialect::kObserveAttrName, b.getArrayAttr(entries));
      }
    }
  }

  if (policy == CompressPolicy::Budget) {
    // Check the rewritten function: this is the peak the report will show.
    ActivationLiveness after(func);
    after.setOptions(opts);
    int64_t peak = after.getTimeline().peak;
    // What was chosen and why, for the Engine's report.
    MLIRContext *ctx = func->getContext();
    Builder b(ctx);
    func->setAttr(
        CometDialect::kBudgetAttrName,
        b.getDictionaryAttr(
            {b.getNamedAttr("bytes", b.getI64IntegerAttr(memoryBudget)),
             b.getNamedAttr("predicted_peak", b.getI64IntegerAttr(peak)),
             b.getNamedAttr("sz_ratio", b.getF64FloatAttr(szRatio)),
             b.getNamedAttr("compressed",
                            b.getI64IntegerAttr(toRewrite.size())),
             b.getNamedAttr("not_selected", b.getArrayAttr(notSelected))}));
    if (!reachable || peak > memoryBudget)
      func.emitWarning() << "memory-budget of "
                         << static_cast<int64_t>(memoryBudget)
                         << " bytes is not reachable: compressing "
                         << toRewrite.size() << " of " << plans.size()
                         << " candidates gives a predicted peak of " << peak
                         << " bytes";
  }
}
