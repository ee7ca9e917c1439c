//===- ActivationLiveness.cpp - Lifetimes and memory of a training graph --===//
#include "comet/Analysis/ActivationLiveness.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace comet;

StringRef comet::stringifyValueCategory(ValueCategory c) {
  switch (c) {
  case ValueCategory::Parameter:
    return "parameter";
  case ValueCategory::Gradient:
    return "gradient";
  case ValueCategory::OptimizerState:
    return "optimizer_state";
  case ValueCategory::Activation:
    return "activation";
  case ValueCategory::Other:
    return "other";
  }
  return "other";
}

StringRef comet::stringifyConsumerKind(ConsumerKind k) {
  switch (k) {
  case ConsumerKind::WeightGradInput:
    return "weight_grad_input";
  case ConsumerKind::ReluMask:
    return "relu_mask";
  case ConsumerKind::BatchNorm:
    return "batchnorm";
  case ConsumerKind::PoolIndices:
    return "pool_indices";
  case ConsumerKind::ShapeOnly:
    return "shape_only";
  case ConsumerKind::Compress:
    return "compress";
  case ConsumerKind::Recompute:
    return "recompute";
  case ConsumerKind::Other:
    return "other";
  }
  return "other";
}

int64_t comet::estimateStoredBytes(Codec codec, int64_t numElements,
                                   int64_t tensorBytes, double szRatio) {
  switch (codec) {
  case Codec::mask:
    return (numElements + 7) / 8;
  case Codec::sz:
    if (!(szRatio > 0))
      return tensorBytes;
    return static_cast<int64_t>(std::ceil(tensorBytes / szRatio));
  case Codec::raw:
    return tensorBytes;
  }
  return tensorBytes;
}

Timeline comet::buildTimeline(int64_t numSteps,
                              ArrayRef<TimelineInterval> ivs) {
  Timeline tl;
  if (numSteps <= 0)
    return tl;
  SmallVector<int64_t> dTotal(numSteps + 1, 0), dAct(numSteps + 1, 0);
  for (const TimelineInterval &iv : ivs) {
    int64_t s = std::clamp<int64_t>(iv.start, 0, numSteps - 1);
    int64_t e = std::clamp<int64_t>(iv.end, s, numSteps - 1);
    dTotal[s] += iv.bytes;
    dTotal[e + 1] -= iv.bytes;
    if (iv.activation) {
      dAct[s] += iv.bytes;
      dAct[e + 1] -= iv.bytes;
    }
  }
  tl.total.resize(numSteps);
  tl.activation.resize(numSteps);
  int64_t total = 0, act = 0;
  for (int64_t t = 0; t < numSteps; ++t) {
    total += dTotal[t];
    act += dAct[t];
    tl.total[t] = total;
    tl.activation[t] = act;
    if (total > tl.peak || t == 0) {
      tl.peak = total;
      tl.peakIndex = t;
      tl.activationAtPeak = act;
    }
    tl.activationPeak = std::max(tl.activationPeak, act);
  }
  return tl;
}

//===----------------------------------------------------------------------===//
// Classification: saved-activation reads by SavedActivationOpInterface, the
// rest (layout, shape and weighted forward ops, *Grad) by op name
//===----------------------------------------------------------------------===//

static constexpr llvm::StringLiteral kRecomputeSuffix = ".recompute";

Location comet::recomputeLoc(StringRef valueName, Location original) {
  return NameLoc::get(
      StringAttr::get(original->getContext(), valueName + kRecomputeSuffix),
      original);
}

std::optional<StringRef> comet::recomputedValueName(Operation *op) {
  auto nl = dyn_cast<NameLoc>(op->getLoc());
  StringRef n = nl ? nl.getName().getValue() : StringRef();
  if (!nl || op->getNumResults() != 1 || !n.consume_back(kRecomputeSuffix))
    return std::nullopt;
  return n;
}

bool comet::isRecomputeFromInput(Operation *op) {
  if (isa<BatchNormApplyOp>(op))
    return true;
  return isa<onnx::DropoutGradOp, onnx::BiasGeluOp, onnx::GeluOp>(op) &&
         recomputedValueName(op);
}

bool comet::recomputesInPlace(Operation *op) {
  return isRecomputeFromInput(op) &&
         isa<BatchNormApplyOp, onnx::DropoutGradOp>(op);
}

/// Any dialect prefix works, so the analysis reads the same names from a
/// registered or an unregistered onnx dialect.
StringRef comet::getOpType(Operation *op) {
  StringRef name = op->getName().getStringRef();
  size_t dot = name.find('.');
  return dot == StringRef::npos ? name : name.drop_front(dot + 1);
}

// ReluGrad, ConvGrad, but also BiasGeluGrad_dX and SoftmaxGrad_13.
static bool isGradOpType(StringRef t) { return t.contains("Grad"); }

bool comet::isLayoutOpType(StringRef t) {
  return t == "Transpose" || t == "Reshape" || t == "Flatten" ||
         t == "Squeeze" || t == "Unsqueeze" || t == "Identity";
}

/// The saved-activation kind with which `op` reads operand `i`, if any.
static std::optional<onnx::SavedActivationKind>
savedActivationKind(Operation *op, unsigned i) {
  auto sa = dyn_cast<onnx::SavedActivationOpInterface>(op);
  return sa ? sa.getSavedActivationKind(i) : std::nullopt;
}

/// A direct read as a ReLU mask (ReluGrad's X): only X > 0 matters, which a
/// mask handle answers without decompressing, by an op whose lowering reads
/// the handle (onnx::ReadsMaskHandle).
static bool isFusableMaskUse(const ValueUse &u) {
  return u.user == u.directUser && u.user->hasTrait<onnx::ReadsMaskHandle>() &&
         savedActivationKind(u.user, u.operandNumber) ==
             onnx::SavedActivationKind::ReluMask;
}

static ConsumerKind toConsumerKind(onnx::SavedActivationKind k) {
  switch (k) {
  case onnx::SavedActivationKind::WeightGradInput:
    return ConsumerKind::WeightGradInput;
  case onnx::SavedActivationKind::BatchNormInput:
    return ConsumerKind::BatchNorm;
  case onnx::SavedActivationKind::ReluMask:
    return ConsumerKind::ReluMask;
  case onnx::SavedActivationKind::PoolIndices:
    return ConsumerKind::PoolIndices;
  }
  return ConsumerKind::Other;
}

static bool isShapeOnlyOp(StringRef t) { return t == "Shape" || t == "Size"; }

/// Forward ops whose operands >= 1 are weights: the parameter fallback.
static bool isWeightedForwardOp(StringRef t) {
  return t == "Conv" || t == "ConvTranspose" || t == "Gemm" ||
         t == "BatchNormalization" || t == "BatchNormInternal" ||
         t == "MatMul" || t == "FusedMatMul";
}

/// Base name of a gradient name: "w_grad.accumulation.buffer" -> "w",
/// "w_grad" -> "w"; nullopt when it is not a gradient name.
static std::optional<StringRef> gradBase(StringRef name) {
  size_t pos = name.find("_grad.");
  if (pos != StringRef::npos && pos > 0)
    return name.take_front(pos);
  if (name.ends_with("_grad") && name.size() > 5)
    return name.drop_back(5);
  return std::nullopt;
}

static bool isOptimizerStateName(StringRef name) {
  std::string lower = name.lower();
  StringRef l(lower);
  return l.contains("momentum") || l.contains("exp_avg") ||
         l.contains("moment_") || l.contains(".moment") ||
         l.contains("velocity");
}

static bool isFloatTensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && isa<FloatType>(rt.getElementType());
}

static std::string locName(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations()) {
      std::string s = locName(l);
      if (!s.empty())
        return s;
    }
  if (auto c = dyn_cast<CallSiteLoc>(loc))
    return locName(c.getCallee());
  return "";
}

/// A parameter whose optimizer update the step applies
/// (comet.optimizer_update): it has no gradient buffer to be named after.
static bool updatedInStep(Value arg) {
  return llvm::any_of(arg.getUses(), [](OpOperand &u) {
    auto up = dyn_cast<OptimizerUpdateOp>(u.getOwner());
    return up && u.get() == up.getWeight();
  });
}

//===----------------------------------------------------------------------===//
// ActivationLiveness
//===----------------------------------------------------------------------===//

ActivationLiveness::ActivationLiveness(Operation *op) : op(op) {
  build();
  computeSizes();
  computeTimelines();
}

void ActivationLiveness::setOptions(const LivenessOptions &opts) {
  options = opts;
  computeSizes();
  computeTimelines();
}

int64_t ActivationLiveness::getStep(Operation *scheduleOp) const {
  auto it = stepOf.find(scheduleOp);
  return it == stepOf.end() ? -1 : it->second;
}

int ActivationLiveness::getId(Value v) const {
  auto it = idOf.find(v);
  return it == idOf.end() ? -1 : it->second;
}

void ActivationLiveness::build() {
  auto func = dyn_cast_or_null<FunctionOpInterface>(op);
  if (!func || func.isExternal())
    return;
  Block &entry = func.getFunctionBody().front();
  for (Operation &o : entry) {
    stepOf[&o] = schedule.size();
    schedule.push_back(&o);
  }
  int64_t lastStep = static_cast<int64_t>(schedule.size()) - 1;
  backwardStart = schedule.size();

  // Values: arguments, then the results of each op in order.
  for (BlockArgument arg : entry.getArguments()) {
    ValueInfo vi;
    vi.value = arg;
    vi.def = -1;
    vi.producerOp = "func.arg";
    unsigned i = arg.getArgNumber();
    if (i < func.getNumArguments())
      if (auto n = func.getArgAttrOfType<StringAttr>(i, "onnx.name"))
        vi.name = n.getValue().str();
    if (vi.name.empty())
      vi.name = "arg" + std::to_string(i);
    idOf[arg] = values.size();
    values.push_back(std::move(vi));
  }
  for (auto [step, o] : llvm::enumerate(schedule)) {
    std::string producer = locName(o->getLoc());
    auto outNames = o->getAttrOfType<ArrayAttr>("onnx.output_names");
    for (OpResult r : o->getResults()) {
      ValueInfo vi;
      vi.value = r;
      vi.def = step;
      vi.producer = producer;
      vi.producerOp = o->getName().getStringRef().str();
      unsigned i = r.getResultNumber();
      if (outNames && i < outNames.size())
        if (auto s = dyn_cast<StringAttr>(outNames[i]))
          vi.name = s.getValue().str();
      if (vi.name.empty()) {
        if (!producer.empty())
          vi.name = o->getNumResults() > 1 ? producer + ":" + std::to_string(i)
                                           : producer;
        else
          vi.name = "%" + std::to_string(values.size());
      }
      idOf[r] = values.size();
      values.push_back(std::move(vi));
    }
  }

  // Function results name the values that the terminator returns.
  Operation *term = entry.empty() ? nullptr : &entry.back();
  llvm::StringSet<> gradBases;
  for (ValueInfo &vi : values)
    if (vi.def < 0)
      if (auto base = gradBase(vi.name))
        gradBases.insert(*base);
  if (term && term->hasTrait<OpTrait::IsTerminator>())
    for (auto [i, v] : llvm::enumerate(term->getOperands())) {
      if (i >= func.getNumResults())
        break;
      auto n = func.getResultAttrOfType<StringAttr>(i, "onnx.name");
      if (!n)
        continue;
      if (auto base = gradBase(n.getValue()))
        gradBases.insert(*base);
      int id = getId(v);
      if (id >= 0 && values[id].def >= 0)
        values[id].name = n.getValue().str();
    }
  // Values the function returns are its outputs, not saved activations.
  SmallVector<bool> returned(values.size(), false);
  if (term && term->hasTrait<OpTrait::IsTerminator>())
    for (Value v : term->getOperands())
      if (int id = getId(v); id >= 0)
        returned[id] = true;

  // Uses, sorted by step. Each use is visited once: O(#uses log).
  for (ValueInfo &vi : values) {
    for (OpOperand &use : vi.value.getUses()) {
      Operation *top = entry.findAncestorOpInBlock(*use.getOwner());
      if (!top)
        continue;
      vi.uses.push_back({top, use.getOwner(), use.getOperandNumber(),
                         stepOf.lookup(top), ConsumerKind::Other});
    }
    llvm::sort(vi.uses, [](const ValueUse &a, const ValueUse &b) {
      return std::tie(a.index, a.operandNumber) <
             std::tie(b.index, b.operandNumber);
    });
  }

  // Argument categories, from names first, then from how they are used.
  for (ValueInfo &vi : values) {
    if (vi.def >= 0)
      break;
    Type t = vi.value.getType();
    if (!isFloatTensor(t)) {
      vi.category = ValueCategory::Other;
    } else if (gradBase(vi.name)) {
      vi.category = ValueCategory::Gradient;
    } else if (isOptimizerStateName(vi.name)) {
      vi.category = ValueCategory::OptimizerState;
    } else if (gradBases.contains(vi.name) || updatedInStep(vi.value)) {
      vi.category = ValueCategory::Parameter;
    } else {
      bool weightUse = llvm::any_of(vi.uses, [](const ValueUse &u) {
        return u.user == u.directUser && u.operandNumber >= 1 &&
               isWeightedForwardOp(getOpType(u.user));
      });
      vi.category = weightUse ? ValueCategory::Parameter : ValueCategory::Other;
    }
    vi.persistent = vi.category != ValueCategory::Other;
  }

  // Gradient flow, in schedule order: a *Grad op, or an op that reads a
  // gradient, computes a gradient. A recompute's DropoutGrad computes an
  // activation.
  SmallVector<bool> opGradFlow(schedule.size(), false);
  for (auto [step, o] : llvm::enumerate(schedule)) {
    bool g = isGradOpType(getOpType(o)) && !isRecomputeFromInput(o);
    for (Value v : o->getOperands()) {
      int id = getId(v);
      if (id < 0)
        continue;
      const ValueInfo &in = values[id];
      if (in.gradientFlow ||
          (in.def < 0 && in.category == ValueCategory::Gradient))
        g = true;
    }
    opGradFlow[step] = g;
    if (g && backwardStart > static_cast<int64_t>(step))
      backwardStart = step;
    for (OpResult r : o->getResults())
      values[getId(r)].gradientFlow = g;
  }

  // Result categories and compression links.
  for (ValueInfo &vi : values) {
    if (vi.def < 0)
      continue;
    Operation *o = schedule[vi.def];
    Type t = vi.value.getType();
    if (auto c = dyn_cast<CompressOp>(o)) {
      int in = getId(c.getInput());
      vi.category = ValueCategory::Activation;
      vi.codec = c.getCodec();
      if (auto b = c.getBound()) {
        vi.eb = b->getAbsValue();
        vi.slot = b->getSlot();
      }
      if (in >= 0) {
        vi.rootId = values[in].rootId >= 0 ? values[in].rootId : in;
        values[in].compressedId = getId(vi.value);
        vi.category = values[in].category;
      }
      continue;
    }
    if (auto d = dyn_cast<DecompressOp>(o)) {
      int h = getId(d.getInput());
      vi.category = ValueCategory::Activation;
      if (h >= 0) {
        vi.rootId = values[h].rootId >= 0 ? values[h].rootId : h;
        vi.category = values[h].category;
      }
      continue;
    }
    if (auto base = gradBase(vi.name); base && isFloatTensor(t))
      vi.category = ValueCategory::Gradient;
    else if (!isa<RankedTensorType>(t) || o->getNumOperands() == 0 ||
             returned[getId(vi.value)])
      vi.category = ValueCategory::Other;
    else if (vi.gradientFlow)
      vi.category = ValueCategory::Gradient;
    else if (int in = getId(o->getOperand(0));
             isLayoutOpType(getOpType(o)) && in >= 0 &&
             values[in].category == ValueCategory::Parameter)
      // A weight seen through a layout op (ORT transposes weights for the
      // input gradient's MatMul): not an activation to compress.
      vi.category = ValueCategory::Parameter;
    else
      vi.category = ValueCategory::Activation;
  }

  // Consumer kinds, in reverse schedule order so that a layout op's result
  // is classified before the uses that look through it.
  DenseMap<Value, ConsumerKind> throughLayout;
  auto kindOf = [&](const ValueInfo &vi, const ValueUse &u) -> ConsumerKind {
    if (u.user != u.directUser)
      return ConsumerKind::Other;
    Operation *user = u.user;
    if (isa<CompressOp>(user))
      return ConsumerKind::Compress;
    if (u.operandNumber == 0 && isRecomputeFromInput(user))
      return ConsumerKind::Recompute;
    if (isa<BatchNormApplyOp>(user))
      return ConsumerKind::Other;
    StringRef t = getOpType(user);
    unsigned i = u.operandNumber;
    if (isShapeOnlyOp(t))
      return ConsumerKind::ShapeOnly;
    if (auto sa = dyn_cast<onnx::SavedActivationOpInterface>(user)) {
      // ORT writes the backward of Gemm/MatMul as Gemm/MatMul ops: one that
      // computes a gradient from a non-gradient operand reads an activation
      // to form dW.
      std::optional<onnx::SavedActivationKind> k = sa.getSavedActivationKind(i);
      if (k && (!sa.readsSavedActivationsOnlyInBackward() ||
                (opGradFlow[u.index] && !vi.gradientFlow)))
        return toConsumerKind(*k);
      return ConsumerKind::Other;
    }
    if (isLayoutOpType(t) && i == 0 && user->getNumResults() == 1) {
      auto it = throughLayout.find(user->getResult(0));
      if (it != throughLayout.end())
        return it->second;
    }
    return ConsumerKind::Other;
  };
  for (ValueInfo &vi : llvm::reverse(values)) {
    std::optional<ConsumerKind> common;
    bool mixed = false;
    for (ValueUse &u : vi.uses) {
      u.kind = kindOf(vi, u);
      if (u.kind == ConsumerKind::ShapeOnly)
        continue;
      if (common && *common != u.kind)
        mixed = true;
      common = u.kind;
    }
    if (vi.def >= 0 && isLayoutOpType(getOpType(schedule[vi.def])))
      throughLayout[vi.value] =
          (!common || mixed) ? ConsumerKind::Other : *common;
  }

  // Intervals.
  for (ValueInfo &vi : values) {
    vi.lastUse = vi.uses.empty() ? vi.def : vi.uses.back().index;
    vi.start = std::max<int64_t>(vi.def, 0);
    vi.end = vi.persistent ? lastStep : std::max(vi.lastUse, vi.start);
  }

  // Fused mask decompresses: the handle stays live through the last
  // ReluGrad that reads its bits.
  for (ValueInfo &vi : values) {
    if (vi.def < 0)
      continue;
    auto d = dyn_cast<DecompressOp>(schedule[vi.def]);
    if (!d || d.getInput().getType().getCodec() != Codec::mask ||
        vi.uses.empty() || !llvm::all_of(vi.uses, isFusableMaskUse))
      continue;
    vi.fusedMaskDecompress = true;
    int h = getId(d.getInput());
    if (h >= 0 && !values[h].persistent)
      values[h].end = std::max(values[h].end, vi.end);
  }

  // In place: dX takes dY's buffer where dY, a gradient this function
  // allocated, dies at the op and has dX's type; in the forward, Y takes
  // X's buffer (Relu, BatchNormInternal) where X, an activation, does.
  for (auto [step, o] : llvm::enumerate(schedule)) {
    bool grad = o->hasTrait<onnx::InPlaceGradient>();
    bool fwd = o->hasTrait<onnx::InPlaceForward>();
    if ((!grad && !fwd) || o->getNumOperands() == 0 || o->getNumResults() == 0)
      continue;
    Value dy = o->getOperand(0), dx = o->getResult(0);
    int in = getId(dy), out = getId(dx);
    if (in < 0 || out < 0 || dy.getType() != dx.getType() ||
        llvm::count(o->getOperands(), dy) != 1)
      continue;
    const ValueInfo &src = values[in];
    ValueInfo &dst = values[out];
    auto returned = [](const ValueInfo &v) {
      return llvm::any_of(v.uses, [](const ValueUse &u) {
        return isa<func::ReturnOp>(u.user);
      });
    };
    bool kindOk =
        grad ? src.gradientFlow
             : src.category == ValueCategory::Activation && !src.gradientFlow;
    if (src.def < 0 || src.persistent || !kindOk ||
        src.end != static_cast<int64_t>(step) || src.isCompressedHandle() ||
        src.fusedMaskDecompress || src.rootId >= 0 || returned(src) ||
        dst.persistent || returned(dst) || !isFloatTensor(dy.getType()))
      continue;
    int root = src.inPlaceOf >= 0 ? src.inPlaceOf : in;
    dst.inPlaceOf = root;
    values[root].end = std::max(values[root].end, dst.end);
  }

  // A value recomputed from a decompressed copy of its input that nothing
  // else reads (compress-activations gives each recompute its own
  // decompress) is written over that copy, where the runtime allows it.
  for (auto [step, o] : llvm::enumerate(schedule)) {
    if (!recomputesInPlace(o) || o->getNumResults() != 1)
      continue;
    Value x = o->getOperand(0), y = o->getResult(0);
    int in = getId(x), out = getId(y);
    if (in < 0 || out < 0 || x.getType() != y.getType())
      continue;
    ValueInfo &src = values[in];
    ValueInfo &dst = values[out];
    if (src.def < 0 || src.rootId < 0 || src.isCompressedHandle() ||
        src.fusedMaskDecompress || src.inPlaceOf >= 0 || src.uses.size() != 1 ||
        src.end != static_cast<int64_t>(step) || dst.persistent ||
        llvm::any_of(dst.uses, [](const ValueUse &u) {
          return isa<func::ReturnOp>(u.user);
        }))
      continue;
    dst.inPlaceOf = in;
    src.end = std::max(src.end, dst.end);
  }
}

static int64_t elementBytes(Type t) {
  if (t.isIndex())
    return 8;
  if (auto c = dyn_cast<ComplexType>(t))
    return 2 * elementBytes(c.getElementType());
  if (t.isIntOrFloat())
    return (t.getIntOrFloatBitWidth() + 7) / 8;
  return 4;
}

void ActivationLiveness::computeSizes() {
  for (ValueInfo &vi : values) {
    Type t = vi.value.getType();
    RankedTensorType rt;
    if (auto c = dyn_cast<CompressedType>(t))
      rt = c.getTensorType();
    else
      rt = dyn_cast<RankedTensorType>(t);
    vi.hasDynamicDim = false;
    if (rt) {
      int64_t n = 1;
      for (int64_t d : rt.getShape()) {
        if (ShapedType::isDynamic(d)) {
          vi.hasDynamicDim = true;
          d = options.dynamicDimSize;
        }
        n *= d;
      }
      vi.numElements = n;
      vi.tensorBytes = n * elementBytes(rt.getElementType());
    } else if (t.isIntOrIndexOrFloat()) {
      vi.numElements = 1;
      vi.tensorBytes = elementBytes(t);
    } else {
      vi.numElements = 0;
      vi.tensorBytes = 0;
    }
    vi.bytes = vi.fusedMaskDecompress || vi.inPlaceOf >= 0 ? 0
               : vi.codec ? estimateStoredBytes(*vi.codec, vi.numElements,
                                                vi.tensorBytes, options.szRatio)
                          : vi.tensorBytes;
  }
}

void ActivationLiveness::computeTimelines() {
  int64_t n = schedule.size();
  SmallVector<TimelineInterval> ivs;
  ivs.reserve(values.size());
  for (const ValueInfo &vi : values)
    ivs.push_back(
        {vi.start, vi.end, vi.bytes, vi.category == ValueCategory::Activation});
  timeline = buildTimeline(n, ivs);

  // Fold compress/decompress away: an original lives until the last use of
  // its decompressed copies; handles and copies take no memory.
  SmallVector<int64_t> extendedEnd(values.size());
  for (auto [id, vi] : llvm::enumerate(values))
    extendedEnd[id] = vi.end;
  for (const ValueInfo &vi : values)
    if (vi.rootId >= 0 && !vi.isCompressedHandle())
      extendedEnd[vi.rootId] = std::max(extendedEnd[vi.rootId], vi.end);
  ivs.clear();
  for (auto [id, vi] : llvm::enumerate(values)) {
    if (vi.rootId >= 0)
      continue;
    // The original's uses now include the compress op; that is no real use.
    ivs.push_back({vi.start, extendedEnd[id], vi.tensorBytes,
                   vi.category == ValueCategory::Activation});
  }
  uncompressed = buildTimeline(n, ivs);
}

SmallVector<Candidate>
ActivationLiveness::getCandidates(int64_t minBytes, int64_t minDistance) const {
  SmallVector<Candidate> out;
  for (auto [id, vi] : llvm::enumerate(values)) {
    if (vi.def < 0 || vi.persistent || vi.category != ValueCategory::Activation)
      continue;
    // A value written over its input (in place) holds that buffer: it is
    // what compressing or recomputing it would free.
    int64_t held = vi.inPlaceOf >= 0 ? vi.tensorBytes : vi.bytes;
    if (vi.rootId >= 0 || vi.compressedId >= 0 ||
        !isa<RankedTensorType>(vi.value.getType()) || held < minBytes ||
        held == 0)
      continue;
    Candidate c{static_cast<int>(id), vi.def, -1, {}};
    bool compressed = false;
    for (auto [ui, u] : llvm::enumerate(vi.uses)) {
      if (u.kind == ConsumerKind::Compress)
        compressed = true;
      // A forward reader, however far, reads the value before the backward
      // starts: the value is compressed after it, not kept raw for it.
      // A recompute is a backward reader wherever it sits: it is placed
      // just before the gradient that reads its result, which may be the
      // first gradient op.
      if (u.index - vi.def >= minDistance &&
          (u.index >= backwardStart || u.kind == ConsumerKind::Recompute)) {
        if (c.firstFar < 0)
          c.firstFar = u.index;
        c.farUses.push_back(ui);
      } else {
        c.lastNear = std::max(c.lastNear, u.index);
      }
    }
    // Something must lie between the compress and the decompress.
    if (compressed || c.firstFar < 0 || c.firstFar <= c.lastNear + 1)
      continue;
    out.push_back(std::move(c));
  }
  return out;
}

bool ActivationLiveness::onlyMaskUses(const Candidate &c) const {
  const ValueInfo &vi = values[c.valueId];
  bool sawMask = false;
  for (unsigned ui : c.farUses) {
    ConsumerKind k = vi.uses[ui].kind;
    if (k == ConsumerKind::ReluMask)
      sawMask = true;
    else if (k != ConsumerKind::ShapeOnly)
      return false;
  }
  return sawMask;
}

bool ActivationLiveness::isFusedMaskDecompress(Value v) const {
  int id = getId(v);
  return id >= 0 && values[id].fusedMaskDecompress;
}

bool ActivationLiveness::fusesMaskDecompress(const Candidate &c) const {
  const ValueInfo &vi = values[c.valueId];
  return !c.farUses.empty() && llvm::all_of(c.farUses, [&](unsigned ui) {
    return isFusableMaskUse(vi.uses[ui]);
  });
}
