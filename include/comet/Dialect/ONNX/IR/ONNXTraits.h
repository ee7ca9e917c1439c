//===- ONNXTraits.h - Op families of the onnx dialect -----------*- C++ -*-===//
//
// The common forms of verification and result-type inference, one trait per
// family (ONNXTraits.td declares them for ODS). A family trait checks what
// the family's ops share, before the op's own verify(), and gives the op its
// inferResultTypes (TypeInferenceOpInterface), which may rely on everything
// the trait has checked. An op has one family trait at most; an op without
// one writes inferResultTypes itself.
//
// Diagnostics name operands and results by their ODS names
// (getOperandName), and skip results the importer has not typed yet.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_DIALECT_ONNX_IR_ONNXTRAITS_H
#define COMET_DIALECT_ONNX_IR_ONNXTRAITS_H

#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <type_traits>

namespace comet::onnx {

/// The element types an elementwise family accepts for its input.
enum class ElementKind { Any, Float, FloatOrSignedInt };

/// The result element type of a broadcasting family.
enum class BroadcastResult {
  Same, ///< the operands' element type (Add, Sum)
  Bool, ///< i1 (GreaterOrEqual, Equal, And)
};

namespace family {
mlir::LogicalResult verifyUnaryElementwise(mlir::Operation *op,
                                           ElementKind kind);
mlir::LogicalResult verifyElementwiseGradient(mlir::Operation *op);
mlir::LogicalResult verifyBroadcast(mlir::Operation *op, BroadcastResult r);
mlir::LogicalResult inferBroadcast(mlir::Operation *op, BroadcastResult r,
                                   llvm::SmallVectorImpl<mlir::Type> &types);
mlir::LogicalResult verifyResultsLike(mlir::Operation *op,
                                      llvm::ArrayRef<unsigned> operands);
/// Result i takes the type of operand operands[i] (null where that is no
/// tensor or sequence).
mlir::LogicalResult inferResultsLike(mlir::Operation *op,
                                     llvm::ArrayRef<unsigned> operands,
                                     llvm::SmallVectorImpl<mlir::Type> &types);

/// The axes of a reduction as its op gives them.
struct ReductionAxes {
  enum Kind {
    All,      ///< every dim (no axes, or empty ones)
    Listed,   ///< `axes`
    Unknown,  ///< an axes operand that is no constant
    Identity, ///< no axes with noop_with_empty_axes: the data unchanged
  } kind;
  llvm::SmallVector<int64_t> axes;
  /// The 1-d axes operand (checked as one), null for an attribute.
  mlir::Value operand;
};
mlir::LogicalResult verifyReduction(mlir::Operation *op,
                                    const ReductionAxes &axes);
mlir::LogicalResult inferReduction(mlir::Operation *op,
                                   const ReductionAxes &axes, bool keepdims,
                                   llvm::SmallVectorImpl<mlir::Type> &types);
ReductionAxes reductionAxes(mlir::Value axesOperand, bool noopWithEmptyAxes);
ReductionAxes reductionAxes(std::optional<llvm::ArrayRef<int64_t>> axesAttr);

template <typename T>
using HasNoopWithEmptyAxes = decltype(std::declval<T>().getNoopWithEmptyAxes());
} // namespace family

/// Y = f(X) elementwise: one result with X's shape and element type, X of
/// element kind K. Relu, Sigmoid, Tanh, Sqrt, Neg, ...
template <ElementKind K> struct UnaryElementwise {
  template <typename ConcreteType>
  class Impl : public mlir::OpTrait::TraitBase<ConcreteType, Impl> {
  public:
    static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
      return family::verifyUnaryElementwise(op, K);
    }
    mlir::LogicalResult
    inferResultTypes(llvm::SmallVectorImpl<mlir::Type> &types) {
      return family::inferResultsLike(this->getOperation(), {0}, types);
    }
  };
};

/// dX = dY * f'(saved) elementwise: operand 0 is dY, operand 1 the saved
/// float activation of dY's shape and element type, result 0 dX like them;
/// inference gives dX the type of operand `Like`. SigmoidGrad, GeluGrad, ...
template <unsigned Like> struct ElementwiseGradient {
  template <typename ConcreteType>
  class Impl : public mlir::OpTrait::TraitBase<ConcreteType, Impl> {
  public:
    static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
      return family::verifyElementwiseGradient(op);
    }
    mlir::LogicalResult
    inferResultTypes(llvm::SmallVectorImpl<mlir::Type> &types) {
      return family::inferResultsLike(this->getOperation(), {Like}, types);
    }
  };
};

/// numpy broadcasting of all operands (one element type) into result 0.
/// Add, Sum, Equal, ...
template <BroadcastResult R> struct Broadcast {
  template <typename ConcreteType>
  class Impl : public mlir::OpTrait::TraitBase<ConcreteType, Impl> {
  public:
    static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
      return family::verifyBroadcast(op, R);
    }
    mlir::LogicalResult
    inferResultTypes(llvm::SmallVectorImpl<mlir::Type> &types) {
      return family::inferBroadcast(this->getOperation(), R, types);
    }
  };
};

/// Result i has the type of operand Operands[i]: the gradients whose
/// results take their inputs' shapes (BatchNormalizationGrad's dX, dscale
/// and dbias are X's, scale's and scale's) and the ops that keep their
/// input's type (Identity, Scale). An absent (`none`) result is skipped.
template <unsigned... Operands> struct ResultsLike {
  template <typename ConcreteType>
  class Impl : public mlir::OpTrait::TraitBase<ConcreteType, Impl> {
    static constexpr unsigned operands[] = {Operands...};

  public:
    static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
      return family::verifyResultsLike(op, operands);
    }
    mlir::LogicalResult
    inferResultTypes(llvm::SmallVectorImpl<mlir::Type> &types) {
      return family::inferResultsLike(this->getOperation(), operands, types);
    }
  };
};

/// A reduction of operand 0 over axes into result 0, which keeps the element
/// type: the axes are an operand (`getAxes()` a Value, opset 18; none is
/// every dim unless `noop_with_empty_axes`) or an attribute (an optional
/// i64 array). `keepdims` keeps the reduced dims as 1. ReduceSum, ReduceMean.
template <typename ConcreteType>
class Reduction : public mlir::OpTrait::TraitBase<ConcreteType, Reduction> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return family::verifyReduction(op, axesOf(llvm::cast<ConcreteType>(op)));
  }
  mlir::LogicalResult
  inferResultTypes(llvm::SmallVectorImpl<mlir::Type> &types) {
    auto op = llvm::cast<ConcreteType>(this->getOperation());
    return family::inferReduction(op, axesOf(op), op.getKeepdims() != 0, types);
  }

private:
  static family::ReductionAxes axesOf(ConcreteType op) {
    if constexpr (std::is_convertible_v<decltype(op.getAxes()), mlir::Value>) {
      bool noop = false;
      if constexpr (llvm::is_detected<family::HasNoopWithEmptyAxes,
                                      ConcreteType>::value)
        noop = op.getNoopWithEmptyAxes() != 0;
      return family::reductionAxes(op.getAxes(), noop);
    } else {
      return family::reductionAxes(op.getAxes());
    }
  }
};

} // namespace comet::onnx

#endif // COMET_DIALECT_ONNX_IR_ONNXTRAITS_H
