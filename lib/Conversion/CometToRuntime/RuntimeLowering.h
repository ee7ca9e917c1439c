//===- RuntimeLowering.h - Patterns of comet-lower-to-runtime ---*- C++ -*-===//
//
// comet-lower-to-runtime rewrites each function into straight-line code on
// memrefs that calls the runtime (LowerToRuntime.cpp). The function's
// schedule, buffers and free points come from ActivationLiveness; each op
// of the schedule is lowered, once and in order, by the pattern registered
// for its op name, modelled on MLIR's RewritePatternSet: a pattern per op
// family, in a pattern set that populate functions fill, one file per
// family. RuntimeLowering is what a pattern lowers into: the buffers of the
// op's operands and results, and calls into the runtime.
//
// The ops whose lowering is one runtime call in abi.def's order (inputs,
// outputs, then attributes as scalars) name that call in their ODS
// definition (`runtimeCall`); comet-tblgen generates their patterns.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_LIB_CONVERSION_COMETTORUNTIME_RUNTIMELOWERING_H
#define COMET_LIB_CONVERSION_COMETTORUNTIME_RUNTIMELOWERING_H

#include "comet/Analysis/ActivationLiveness.h"
#include "comet/Conversion/RuntimeABI.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <memory>

namespace comet {

class RuntimeLoweringPatternSet;

/// The lowering of one function: its new body, the buffer of every value,
/// the runtime calls. Patterns use the public interface.
class RuntimeLowering {
public:
  RuntimeLowering(mlir::func::FuncOp f, mlir::ModuleOp module,
                  const RuntimeLoweringPatternSet &patterns, bool checkErrors,
                  bool tunerStatistics)
      : oldF(f), module(module), patterns(patterns), b(f.getContext()),
        checkErrors(checkErrors), tunerStatistics(tunerStatistics), la(f) {}

  /// Replaces the function by its lowered form.
  mlir::LogicalResult run();

  // --- for patterns ---
  mlir::OpBuilder &builder() { return b; }
  mlir::Location loc() { return curLoc; }
  const ActivationLiveness &liveness() const { return la; }
  /// Whether failed calls branch to the function's error exit.
  bool checksErrors() const { return checkErrors; }
  /// Whether comet.tune and comet.observe become the bound tuner's
  /// statistics calls (slot_observe_*).
  bool callsTunerStatistics() const { return tunerStatistics; }

  /// The buffer of an operand, or null when absent (`none`).
  mlir::Value operand(mlir::Value v) {
    if (!v || llvm::isa<mlir::NoneType>(v.getType()))
      return {};
    return buffers.lookup(v);
  }
  mlir::Value operand(mlir::Operation *op, unsigned i) {
    return operand(op->getOperand(i));
  }
  /// The buffer for an op result: its out argument when the function
  /// returns it, the buffer it is written over (dX over dY), else a fresh
  /// allocation. `none` results get no buffer.
  mlir::Value result(mlir::Value result);
  mlir::Value result(mlir::Operation *op, unsigned i) {
    return result(op->getResult(i));
  }
  /// Gives `v` the buffer (or handle) `m`; an owned one is freed at v's end.
  void bind(mlir::Value v, mlir::Value m, bool owned = false);
  bool hasBuffer(mlir::Value v) const { return buffers.count(v); }

  mlir::Value i32(int32_t v);
  mlir::Value i64(int64_t v);
  mlir::Value f32(float v);
  mlir::Value f64(double v);
  /// A read-only i64 / f32 memref of `values` in a private global: attribute
  /// arrays (perm, axes) that the runtime takes as tensors. Not allocated.
  mlir::Value constMemref(llvm::ArrayRef<int64_t> values);
  mlir::Value constMemref(float value);
  /// `result`'s buffer holding `data` (kept in a private global).
  mlir::LogicalResult materializeConstant(mlir::Value result,
                                          mlir::DenseElementsAttr data);
  /// An i64 or bool result that getConstantInts knows (shape arithmetic,
  /// static after specialization) as a constant.
  mlir::LogicalResult foldI64(mlir::Operation *op);

  /// Emits a call to the runtime function fn with the context and args,
  /// which follow its parameter kinds (a null memref is an absent optional
  /// operand); a status result is checked. Returns the call, or null after
  /// an error.
  mlir::func::CallOp emitCall(rtabi::Fn fn, llvm::ArrayRef<mlir::Value> args);
  mlir::LogicalResult call(rtabi::Fn fn, llvm::ArrayRef<mlir::Value> args) {
    return mlir::success(emitCall(fn, args) != nullptr);
  }
  /// Copies the memref from into to (same type) through the runtime.
  mlir::LogicalResult copy(mlir::Value from, mlir::Value to);
  /// Branches to the error exit unless `rc` is 0 (with checkErrors).
  void check(mlir::Value rc);

  /// The compressed handle a fused mask decompress stands for
  /// (ActivationLiveness::isFusedMaskDecompress); null for other values.
  mlir::Value fusedMaskHandle(mlir::Value v) const {
    return fusedHandle.lookup(v);
  }
  void setFusedMaskHandle(mlir::Value v, mlir::Value handle) {
    fusedHandle[v] = handle;
  }
  /// The next compress site's number (comet.sites).
  int64_t nextCompressSite() { return nextSite++; }

private:
  /// The declaration of a runtime function (abi.def), added once.
  mlir::func::FuncOp declare(rtabi::Fn fn);
  mlir::Value alloc(mlir::Value tensor);
  mlir::Value allocType(mlir::Type tensorType, int32_t category);
  mlir::Value unranked(mlir::Value memref, mlir::Type elt);
  /// A private constant global of `data` (a fresh __comet_const_N), read.
  mlir::Value global(mlir::DenseElementsAttr data);
  mlir::LogicalResult lower(mlir::Operation *op);
  mlir::LogicalResult lowerReturn(mlir::func::ReturnOp ret);
  /// The bound tuner's statistics calls (comet/runtime/slot_stats.h) for an
  /// op that compress-activations marked with comet.observe.
  mlir::LogicalResult emitObserves(mlir::Operation *op);

  mlir::func::FuncOp oldF, newF;
  mlir::ModuleOp module;
  const RuntimeLoweringPatternSet &patterns;
  mlir::OpBuilder b;
  bool checkErrors;
  bool tunerStatistics;
  ActivationLiveness la;
  mlir::Location curLoc = mlir::UnknownLoc::get(oldF.getContext());
  llvm::DenseMap<mlir::Value, mlir::Value> buffers;
  /// Fused mask decompresses -> the handle their readers take.
  llvm::DenseMap<mlir::Value, mlir::Value> fusedHandle;
  /// Results written straight into their out argument.
  llvm::DenseSet<mlir::Value> inOutArg;
  /// Values that own a buffer (or handle) this function must free.
  llvm::DenseSet<mlir::Value> owned;
  /// The memref<?xi8> from buffer_alloc behind each allocated view.
  llvm::DenseMap<mlir::Value, mlir::Value> rawBuffer;
  /// The runtime context: the lowered function's first argument.
  mlir::Value ctxArg;
  mlir::Block *failBlock = nullptr;
  int64_t nextSite = 0;
  unsigned constCounter = 0;
};

/// Lowers the ops of one name.
class RuntimeLoweringPattern {
public:
  explicit RuntimeLoweringPattern(mlir::TypeID opTypeID) : typeID(opTypeID) {}
  virtual ~RuntimeLoweringPattern() = default;
  /// Lowers `op` (of the pattern's op) into `rt`; an op it cannot lower is
  /// an error at the op.
  virtual mlir::LogicalResult lower(mlir::Operation *op,
                                    RuntimeLowering &rt) const = 0;
  mlir::TypeID getOpTypeID() const { return typeID; }

private:
  mlir::TypeID typeID;
};

/// A pattern for the ops of class OpTy.
template <typename OpTy>
class OpRuntimeLoweringPattern : public RuntimeLoweringPattern {
public:
  OpRuntimeLoweringPattern()
      : RuntimeLoweringPattern(mlir::TypeID::get<OpTy>()) {}
  mlir::LogicalResult lower(mlir::Operation *op,
                            RuntimeLowering &rt) const final {
    return lowerOp(llvm::cast<OpTy>(op), rt);
  }
  virtual mlir::LogicalResult lowerOp(OpTy op, RuntimeLowering &rt) const = 0;
};

/// One pattern per op; a second pattern for an op is a programming error.
class RuntimeLoweringPatternSet {
public:
  template <typename... Patterns> RuntimeLoweringPatternSet &add() {
    (insert(std::make_unique<Patterns>()), ...);
    return *this;
  }
  const RuntimeLoweringPattern *lookup(mlir::Operation *op) const;
  size_t size() const { return patterns.size(); }

private:
  void insert(std::unique_ptr<RuntimeLoweringPattern> pattern);
  llvm::DenseMap<mlir::TypeID, std::unique_ptr<RuntimeLoweringPattern>>
      patterns;
};

/// The op families, one file each.
/// NoValue, Initializer, Constant, and the shape facts that fold to
/// constants once shapes are static (Shape, Size, ConstantOfShape, Range).
void populateConstantLoweringPatterns(RuntimeLoweringPatternSet &patterns);
/// The ops whose ODS definition names their runtime call (`runtimeCall`;
/// generated by comet-tblgen -gen-onnx-runtime-calls).
void populateRuntimeCallLoweringPatterns(RuntimeLoweringPatternSet &patterns);
/// Add, Sub, Mul, Div (integer ones folded), Sum, Neg, the comparisons,
/// Cast, Scale, Identity.
void populateElementwiseLoweringPatterns(RuntimeLoweringPatternSet &patterns);
/// Conv, ConvGrad, MaxPool, MaxPoolGrad, AveragePool and AveragePoolGrad:
/// 2-D windows with explicit pads.
void populateConvLoweringPatterns(RuntimeLoweringPatternSet &patterns);
/// BatchNormInternal, BatchNormalization, LayerNormalization.
void populateNormalizationLoweringPatterns(RuntimeLoweringPatternSet &patterns);
/// FusedMatMul and ReduceMean.
void populateContractionLoweringPatterns(RuntimeLoweringPatternSet &patterns);
/// Transpose, Squeeze, Unsqueeze, Pad, Gather, GatherGrad, Concat,
/// ConcatTraining, Split, SplitTraining.
void populateDataMovementLoweringPatterns(RuntimeLoweringPatternSet &patterns);
/// SoftmaxCrossEntropyLoss and its gradient.
void populateLossLoweringPatterns(RuntimeLoweringPatternSet &patterns);
/// comet.compress and comet.decompress, and the gradients that read a mask
/// handle (ReluGrad, DropoutGrad).
void populateCompressionLoweringPatterns(RuntimeLoweringPatternSet &patterns);
/// comet.optimizer_update: the optimizer kernel of its kind.
void populateOptimizerLoweringPatterns(RuntimeLoweringPatternSet &patterns);

} // namespace comet

#endif
