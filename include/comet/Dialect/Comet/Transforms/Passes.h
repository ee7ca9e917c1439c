//===- Passes.h - comet dialect passes --------------------------*- C++ -*-===//
#ifndef COMET_DIALECT_COMET_TRANSFORMS_PASSES_H
#define COMET_DIALECT_COMET_TRANSFORMS_PASSES_H

#include "comet/Dialect/Comet/IR/CometOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace comet {

/// comet-compress-activations' `policy`.
enum class CompressPolicy { All, Budget };
/// comet-compress-activations' `codec`.
enum class CodecChoice { Auto, Sz, Mask };
/// comet-compress-activations' `rule`.
enum class BoundRule { Comet, Acgc, Noise };
/// comet-compress-activations' `batchnorm`.
enum class BatchNormPolicy { Sz, Keep };

/// What specializeShapes did: op results given static types, and
/// arguments whose leading `?` dim took the batch.
struct ShapeSpecialization {
  int64_t inferred = 0;
  int64_t batch = 0;
};

/// Whether `t` (a tensor or a compressed handle) has a dynamic dim.
bool hasDynamicDim(mlir::Type t);

/// Gives every value of `f` a static shape: an argument's leading `?` dim
/// takes `batch`, each op's results the static dims that its inference
/// gives from the specialized operands together with those their type
/// already has, and `f`'s results their returned values' types. Fails, with
/// an error, where a dim stays unknown (any `?` of an argument but the
/// leading one, a result dim that neither inference nor the type gives),
/// where the two contradict each other, and where an op does not verify
/// with its specialized operands. comet-specialize-shapes runs it on each
/// function; the lowering runs it too, so a graph that skipped the pass
/// still lowers.
mlir::FailureOr<ShapeSpecialization> specializeShapes(mlir::func::FuncOp f,
                                                      int64_t batch);

/// recomputeLoc and recomputedValueName, which name the ops of
/// comet-recompute-activations, are in comet/Analysis/ActivationLiveness.h.

/// How much a recompute (isRecomputeFromInput) other than
/// comet.batch_norm_apply scales an error in its first operand, at most:
/// 1 / (1 - ratio) for a Dropout's output, GELU's largest slope (1.1289)
/// for a GELU's; nullopt for any other op or a ratio that is not a
/// constant.
std::optional<double> recomputeGain(mlir::Operation *op);

#define GEN_PASS_DECL
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"

} // namespace comet

#endif // COMET_DIALECT_COMET_TRANSFORMS_PASSES_H
