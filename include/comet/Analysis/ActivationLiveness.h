//===- ActivationLiveness.h - Lifetimes and memory of a training graph ----===//
//
// The one source of truth for value lifetimes in COMET: the memory report,
// compress-activations and comet-lower-to-runtime's free points all read it.
// docs/liveness.md states the rules; in short:
//
// - The schedule is the op order of the function's entry block. An op with
//   regions counts as one step; a use inside it counts at that step.
// - A value lives from its definition to its last use, inclusive. Function
//   arguments start at step 0. Persistent values (arguments classified as
//   parameter, gradient or optimizer state) live to the last step.
// - live[t] = bytes of the values v with start(v) <= t <= end(v): the memory
//   while op t runs, its inputs and outputs both held. The peak is max live.
// - Saved-activation reads (ConvGrad's X, ReluGrad's X, ...) are what the
//   onnx ops' SavedActivationOpInterface says; layout, shape-only and
//   weighted forward ops and the gradient flow (`*Grad`) go by op name.
//
// Use it from a pass with getAnalysis<ActivationLiveness>() on a function, or
// getChildAnalysis<ActivationLiveness>(func) from a module pass. Sizes depend
// on LivenessOptions (the value of dynamic dims); setOptions recomputes them
// in linear time without redoing the structural part.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_ANALYSIS_ACTIVATIONLIVENESS_H
#define COMET_ANALYSIS_ACTIVATIONLIVENESS_H

#include "comet/Dialect/Comet/IR/CometOps.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace comet {

enum class ValueCategory {
  Parameter,
  Gradient,
  OptimizerState,
  Activation,
  Other
};

/// What a consumer needs from the value it reads.
enum class ConsumerKind {
  /// The value is the activation side of a weight gradient: ConvGrad's X, or
  /// the non-gradient operand of a Gemm/MatMul in the gradient flow.
  WeightGradInput,
  /// Only x > 0 matters (ReluGrad's second operand).
  ReluMask,
  /// BatchNormalizationGrad's X.
  BatchNorm,
  /// MaxPoolGrad's argmax indices: integers, read exactly.
  PoolIndices,
  /// Shape / Size: reads only the type.
  ShapeOnly,
  /// comet.compress.
  Compress,
  /// The first operand of a recompute (isRecomputeFromInput): the value
  /// recomputes another (a BatchNorm's, a Dropout's or a GELU's output)
  /// whose own readers set what error it may carry.
  Recompute,
  /// Anything else (forward ops, unknown ops).
  Other,
};

llvm::StringRef stringifyValueCategory(ValueCategory c);
llvm::StringRef stringifyConsumerKind(ConsumerKind k);

/// The op type that classifies an op by name: its name without the dialect
/// prefix ("onnx.Transpose" -> "Transpose").
llvm::StringRef getOpType(mlir::Operation *op);

/// comet-recompute-activations names each op that computes a value again
/// after that value: recomputeLoc gives the location, recomputedValueName
/// reads the value's name back from an op (nullopt for any other op). The
/// Engine lists the recomputed values from it.
mlir::Location recomputeLoc(llvm::StringRef valueName, mlir::Location original);
std::optional<llvm::StringRef> recomputedValueName(mlir::Operation *op);

/// Whether `op` recomputes a value from its first operand, a value the
/// backward keeps anyway: comet.batch_norm_apply, and the DropoutGrad
/// (the output from the input and the mask), BiasGelu and Gelu that
/// comet-recompute-activations places. That operand's use is a Recompute.
bool isRecomputeFromInput(mlir::Operation *op);
/// Of those, the ones whose runtime entry may write the result over the
/// first operand (ALIAS in abi.def): batch_norm_apply and dropout_grad.
bool recomputesInPlace(mlir::Operation *op);
/// Ops that only move data around (Transpose, Reshape, Flatten, Squeeze,
/// Unsqueeze, Identity): a use through them counts as the use of their
/// result, and a view of a parameter through them is a parameter.
bool isLayoutOpType(llvm::StringRef opType);

struct LivenessOptions {
  /// The size that every dynamic dimension (`?`) takes.
  int64_t dynamicDimSize = 32;
  /// Assumed compression ratio of the lossy sz codec (bytes / stored bytes).
  double szRatio = 8.0;
};

/// Estimated bytes of a tensor stored through `codec`: mask keeps one bit
/// per element (ceil(n/8) bytes, so 1/32 of f32), sz divides by szRatio
/// (rounded up), raw keeps all bytes.
int64_t estimateStoredBytes(Codec codec, int64_t numElements,
                            int64_t tensorBytes, double szRatio);

struct ValueUse {
  /// The schedule op that reads the value (the ancestor in the entry block).
  mlir::Operation *user;
  /// The op that owns the operand (== user unless nested in a region).
  mlir::Operation *directUser;
  unsigned operandNumber;
  int64_t index;
  ConsumerKind kind;
};

struct ValueInfo {
  mlir::Value value;
  /// The ONNX value name (onnx.name, onnx.output_names) or a derived one.
  std::string name;
  /// The producing node's name (NameLoc); empty for function arguments.
  std::string producer;
  /// The producing op's name, or "func.arg".
  std::string producerOp;
  /// Step of the producing op; -1 for function arguments.
  int64_t def = -1;
  /// Step of the last reader; def if none.
  int64_t lastUse = -1;
  /// Live interval [start, end], inclusive.
  int64_t start = 0, end = 0;
  ValueCategory category = ValueCategory::Other;
  /// Lives through the whole function (persistent parameter/grad/state).
  bool persistent = false;
  /// Computed by the backward pass (a *Grad op or downstream of one).
  bool gradientFlow = false;
  /// Readers, sorted by step.
  llvm::SmallVector<ValueUse, 2> uses;

  // Sizes, recomputed by setOptions.
  bool hasDynamicDim = false;
  int64_t numElements = 0;
  /// Bytes of the tensor itself (for a compressed handle: of the tensor it
  /// stores).
  int64_t tensorBytes = 0;
  /// Bytes it occupies: tensorBytes, or the estimate for a compressed handle.
  int64_t bytes = 0;

  // Compression links (ids into getValues()).
  /// For a compressed handle: its codec and bound.
  std::optional<Codec> codec;
  std::optional<double> eb;
  std::optional<int64_t> slot;
  /// For a compressed handle or a decompressed tensor: the original tensor.
  int rootId = -1;
  /// For an original tensor: the handle it is compressed into.
  int compressedId = -1;
  /// A comet.decompress of a mask handle whose every reader is ReluGrad's X
  /// operand: it is never materialised (ReluGrad reads the bits from the
  /// handle), so it owns no buffer (bytes = 0) and its handle lives until
  /// its last reader.
  bool fusedMaskDecompress = false;
  /// For result 0 of an InPlaceGradient op (ReluGrad, DropoutGrad,
  /// BatchNormalizationGrad) whose dY dies there: the value whose buffer it
  /// is written into (dY, or the value dY itself was written over). It owns
  /// no buffer (bytes = 0); that value's buffer lives until its end. Also
  /// for a comet.batch_norm_apply written over the decompressed copy of its
  /// input that only it reads.
  int inPlaceOf = -1;

  bool isCompressedHandle() const { return codec.has_value(); }
};

struct Timeline {
  /// Live bytes at each step.
  llvm::SmallVector<int64_t> total;
  /// Live bytes of activations (incl. compressed handles) at each step.
  llvm::SmallVector<int64_t> activation;
  int64_t peak = 0;
  int64_t peakIndex = 0;
  int64_t activationAtPeak = 0;
  int64_t activationPeak = 0;
};

/// One live interval for buildTimeline.
struct TimelineInterval {
  int64_t start, end, bytes;
  bool activation;
};

/// A sweep over difference arrays: O(#steps + #intervals).
Timeline buildTimeline(int64_t numSteps, llvm::ArrayRef<TimelineInterval> ivs);

/// A value worth compressing: read in the backward at least minDistance steps
/// after its definition. Near uses (closer than that, or in the forward,
/// however far) keep reading the original.
struct Candidate {
  int valueId;
  /// The last near use (or the definition, if none): compress after it.
  int64_t lastNear;
  /// The first far use: decompress before it.
  int64_t firstFar;
  /// Indices into ValueInfo::uses of the far uses.
  llvm::SmallVector<unsigned, 2> farUses;
};

class ActivationLiveness {
public:
  /// `op` is a function (FunctionOpInterface); anything else gives an empty
  /// analysis.
  explicit ActivationLiveness(mlir::Operation *op);

  void setOptions(const LivenessOptions &opts);
  const LivenessOptions &getOptions() const { return options; }

  mlir::Operation *getOperation() const { return op; }
  llvm::ArrayRef<mlir::Operation *> getSchedule() const { return schedule; }
  int64_t getNumSteps() const { return schedule.size(); }
  /// Step of a schedule op, or -1.
  int64_t getStep(mlir::Operation *scheduleOp) const;
  /// The first step in the gradient flow (getNumSteps() if none): uses from
  /// there on are the backward's.
  int64_t getBackwardStart() const { return backwardStart; }

  llvm::ArrayRef<ValueInfo> getValues() const { return values; }
  const ValueInfo &getValue(int id) const { return values[id]; }
  /// Id of a tracked value (function argument or result of a schedule op),
  /// or -1.
  int getId(mlir::Value v) const;

  /// The timeline of the IR as it stands.
  const Timeline &getTimeline() const { return timeline; }
  /// The timeline with every compress/decompress pair folded away: each
  /// original tensor lives until its decompressed copies' last use.
  const Timeline &getUncompressedTimeline() const { return uncompressed; }

  /// Candidates in definition order. O(#values + #uses).
  llvm::SmallVector<Candidate> getCandidates(int64_t minBytes,
                                             int64_t minDistance) const;

  /// Whether the consumer kinds of these far uses all allow the mask codec.
  bool onlyMaskUses(const Candidate &c) const;

  /// Whether v is a fused mask decompress (ValueInfo::fusedMaskDecompress):
  /// the memory report, the lowering and the Engine all read this.
  bool isFusedMaskDecompress(mlir::Value v) const;

  /// Whether compressing candidate c with the mask codec gives a fused
  /// decompress: every far use reads it directly as ReluGrad's X. Then the
  /// handle replaces the tensor through the far uses too.
  bool fusesMaskDecompress(const Candidate &c) const;

private:
  void build();
  void computeSizes();
  void computeTimelines();

  mlir::Operation *op;
  LivenessOptions options;
  llvm::SmallVector<mlir::Operation *> schedule;
  llvm::DenseMap<mlir::Operation *, int64_t> stepOf;
  std::vector<ValueInfo> values;
  llvm::DenseMap<mlir::Value, int> idOf;
  Timeline timeline, uncompressed;
  int64_t backwardStart = 0;
};

} // namespace comet

#endif // COMET_ANALYSIS_ACTIVATIONLIVENESS_H
