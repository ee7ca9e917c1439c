//===- ONNXOps.h - onnx types, interfaces and ops ---------------*- C++ -*-===//
#ifndef COMET_DIALECT_ONNX_IR_ONNXOPS_H
#define COMET_DIALECT_ONNX_IR_ONNXOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

#include "comet/Dialect/ONNX/IR/ONNXDialect.h"

#define GET_TYPEDEF_CLASSES
#include "comet/Dialect/ONNX/IR/ONNXTypes.h.inc"

namespace comet::onnx {
/// How a backward op reads a saved activation (SavedActivationOpInterface).
enum class SavedActivationKind {
  /// The activation side of a weight gradient (ConvGrad's X, a backward
  /// Gemm/MatMul's non-gradient operand).
  WeightGradInput,
  /// BatchNormalizationGrad's X: read densely, its error scaled by 1/std.
  BatchNormInput,
  /// Only x > 0 (true, for a bool tensor) matters: ReluGrad's X,
  /// DropoutGrad's mask, LeakyReluGrad's Y (the MaskGradient family). A
  /// 1-bit mask stream holds it losslessly.
  ReluMask,
  /// Integer indices, read exactly (MaxPoolGrad's Indices).
  PoolIndices,
};

/// The weight gradient a backward op forms, as an error-bound rule sees it.
enum class WeightGradForm {
  /// dW sums dY * X over batch and output pixels, each X read by the
  /// kernel window.
  Conv,
  /// dW sums over the contraction dimension of a matrix product.
  Gemm,
  /// dscale sums dY * xhat over batch and pixels.
  BatchNorm,
};

/// The most positions a MaxPool window may have for its Indices to be kept
/// as positions in the window (ui8): what a byte holds.
constexpr int64_t kMaxPoolWindowPositions = 256;

/// Result 0 may take operand 0's buffer when operand 0 dies at the op (dX
/// written over dY): the runtime functions the op lowers to accept the
/// aliasing (comet/runtime/abi.def). ActivationLiveness decides where it
/// happens (ValueInfo::inPlaceOf); the lowering follows.
template <typename ConcreteType>
class InPlaceGradient
    : public mlir::OpTrait::TraitBase<ConcreteType, InPlaceGradient> {};

/// Result 0 may take operand 0's buffer in the forward when operand 0, an
/// activation this function allocated, dies at the op (Relu over its input,
/// BatchNormInternal's Y over X): the runtime entries accept the aliasing.
/// ActivationLiveness decides where (ValueInfo::inPlaceOf).
template <typename ConcreteType>
class InPlaceForward
    : public mlir::OpTrait::TraitBase<ConcreteType, InPlaceForward> {};
} // namespace comet::onnx

#include "comet/Dialect/ONNX/IR/ONNXInterfaces.h.inc"
#include "comet/Dialect/ONNX/IR/ONNXSavedActivations.h"
#include "comet/Dialect/ONNX/IR/ONNXTraits.h"

#define GET_OP_CLASSES
#include "comet/Dialect/ONNX/IR/ONNXOps.h.inc"

namespace comet::onnx {

/// What the importer needs to know about an ONNX op type: its domain, how
/// many inputs and outputs a node may have (trailing optional ones may be
/// left out of a node and become `none`), and the ODS names of its operands
/// and results. comet-tblgen generates the table from ONNXOps.td.
struct OpInfo {
  llvm::StringLiteral opType;
  llvm::StringLiteral domain;    ///< "" for ai.onnx, as written in files.
  unsigned minInputs, maxInputs; ///< maxInputs == ~0u: variadic.
  unsigned minOutputs, maxOutputs;
  /// One name per ODS operand and result (a variadic one's name once).
  llvm::ArrayRef<llvm::StringLiteral> inputNames, outputNames;
  llvm::StringLiteral summary; ///< The ODS summary, without the domain.
};

/// The supported op types, one entry per ODS op, sorted by op type. Null
/// when `opType` is not supported.
const OpInfo *lookupOpInfo(llvm::StringRef opType);
llvm::ArrayRef<OpInfo> getSupportedOps();

/// The name an onnx op's diagnostics give its operand `i`: the ODS name
/// ("dY"), or "operand #i" for a variadic operand or an op of no table.
std::string getOperandName(mlir::Operation *op, unsigned i);
/// The same for result `i` ("dX", "result #i").
std::string getResultName(mlir::Operation *op, unsigned i);

/// Whether two ONNX domain strings name the same domain ("" == "ai.onnx").
bool isSameDomain(llvm::StringRef a, llvm::StringRef b);

/// The ONNX domain of an onnx dialect op ("" for ai.onnx); null StringRef
/// for ops that are no ONNX node (onnx.NoValue, onnx.Initializer, others).
std::optional<llvm::StringRef> getONNXDomain(mlir::Operation *op);

/// The result types that `op`'s TypeInferenceOpInterface gives (null where
/// unknown), but only once the op's whole verifier (the ODS checks, then its
/// hand-written verify()) has passed on its current operands, which
/// inference relies on. Fails without inferring when `op` does not verify
/// (the verifier's diagnostics are emitted) or has no inference.
llvm::LogicalResult
inferVerifiedResultTypes(mlir::Operation *op,
                         llvm::SmallVectorImpl<mlir::Type> &types);

/// MLIR element type of an ONNX TensorProto.DataType, or null if COMET does
/// not support it. Signed integers are signless, unsigned ones `ui`, bool i1.
mlir::Type getElementType(mlir::MLIRContext *ctx, int64_t dataType);

/// The constant integer values of `v` (flat, row-major; bools as 0 and 1)
/// when it is defined by onnx.Initializer or onnx.Constant with integer
/// elements, by onnx.Shape or onnx.Size of a tensor with a static shape, by
/// i64 Add/Sub/Mul/Div/Mod, integer Equal or Where of constants (numpy
/// broadcasting, up to 65536 elements), by an integer ConstantOfShape or
/// Range of constants, or by the shape plumbing (Gather, Concat,
/// Unsqueeze, Squeeze, Reshape, Identity, an i64 Cast) of constants.
std::optional<llvm::SmallVector<int64_t>> getConstantInts(mlir::Value v);

/// The scores and labels operands of a softmax cross-entropy loss
/// (SoftmaxCrossEntropyLoss, ONNX Runtime's SoftmaxCrossEntropyLossInternal);
/// nullopt for any other op.
std::optional<std::pair<mlir::Value, mlir::Value>>
getLossScoresAndLabels(mlir::Operation *op);

} // namespace comet::onnx

#endif // COMET_DIALECT_ONNX_IR_ONNXOPS_H
