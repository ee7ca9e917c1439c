//===- ONNXSavedActivations.h - Saved-activation families -------*- C++ -*-===//
//
// The families of backward ops whose reading of saved activations their
// family decides (ONNXTraits.td declares them for ODS). Each family trait
// implements SavedActivationOpInterface itself: it derives from the
// interface's trait, so an op that lists the family lists no interface, and
// what the op defines itself (a getSummedTerms) takes precedence over the
// family's. Included from ONNXOps.h, after the interfaces.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_DIALECT_ONNX_IR_ONNXSAVEDACTIVATIONS_H
#define COMET_DIALECT_ONNX_IR_ONNXSAVEDACTIVATIONS_H

#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>

namespace comet::onnx {

namespace family {
/// Batch times output pixels of an N x C x D1 x ... value: the terms that a
/// per-channel or per-weight gradient sums. Nullopt below `minRank` or for
/// an unranked value; a dynamic dim counts as `dyn`.
std::optional<double> batchAndPixels(mlir::Value v, int64_t minRank,
                                     int64_t dyn);
/// The product of all dims but the last (the rows of a [..., D] value).
std::optional<double> rows(mlir::Value v, int64_t dyn);
/// The contraction dimension of A in A x B (A' x B with `transA`).
std::optional<double> contraction(mlir::Value a, bool transA, int64_t dyn);

template <typename T> using HasTransA = decltype(std::declval<T>().getTransA());
} // namespace family

/// Backward ops that read operand 1 only as "greater than zero" (true for a
/// bool tensor), which a 1-bit mask stream holds exactly: ReluGrad's X,
/// DropoutGrad's mask, LeakyReluGrad's Y. They form no weight gradient.
template <typename ConcreteType>
class MaskGradient : public SavedActivationOpInterface::Trait<ConcreteType> {
public:
  std::optional<SavedActivationKind> getSavedActivationKind(unsigned i) {
    if (i == 1)
      return SavedActivationKind::ReluMask;
    return std::nullopt;
  }
};

/// The ops whose lowering reads their mask operand straight from a mask
/// handle (ActivationLiveness fuses the decompress away only for them):
/// ReluGrad and DropoutGrad. Another MaskGradient op reads the mask
/// decompressed (1.0 where it holds, 0.0 elsewhere).
template <typename ConcreteType>
class ReadsMaskHandle
    : public mlir::OpTrait::TraitBase<ConcreteType, ReadsMaskHandle> {};

/// Gemm, MatMul and FusedMatMul: in the backward pass (dW = A' x dY) A or B
/// is a saved activation and the other operand dY; the product is the
/// weight gradient, summing over op(A)'s contraction dimension.
template <typename ConcreteType>
class MatMulGradient : public SavedActivationOpInterface::Trait<ConcreteType> {
  ConcreteType op() { return llvm::cast<ConcreteType>(this->getOperation()); }

public:
  std::optional<SavedActivationKind> getSavedActivationKind(unsigned i) {
    if (i <= 1)
      return SavedActivationKind::WeightGradInput;
    return std::nullopt;
  }
  bool readsSavedActivationsOnlyInBackward() { return true; }
  std::optional<WeightGradForm> getWeightGradForm() {
    return WeightGradForm::Gemm;
  }
  std::optional<unsigned> getWeightGradResult() { return 0; }
  unsigned getOutputGradOperand(unsigned activationOperand) {
    return activationOperand == 0 ? 1 : 0;
  }
  std::optional<double> getSummedTerms(int64_t dynamicDimSize) {
    bool transA = false;
    if constexpr (llvm::is_detected<family::HasTransA, ConcreteType>::value)
      transA = op().getTransA() != 0;
    return family::contraction(op()->getOperand(0), transA, dynamicDimSize);
  }
};

/// Which terms an elementwise gradient's error reaches: the next weight
/// gradient sums over batch x pixels (N x C x ... activations) or over the
/// rows of a [..., D] activation.
enum class GradientTerms { BatchAndPixels, Rows };

/// dX = dY * f'(saved) elementwise, saved = operand 1 (SigmoidGrad's Y,
/// GeluGrad's X). It forms no weight gradient itself; an error E in the
/// saved value changes dX by dY f''(saved) E, which the next weight gradient
/// sums, so the bound takes the Gemm rule with N = terms x c^2, c the op's
/// getCurvatureBound() (max |f''| over the saved value,
/// docs/error-bounds.md). `Dense`: the saved value has no zeros whatever
/// the data (a sigmoid or tanh output).
template <GradientTerms Terms, bool Dense> struct ActivationGradient {
  template <typename ConcreteType>
  class Impl : public SavedActivationOpInterface::Trait<ConcreteType> {
  public:
    std::optional<SavedActivationKind> getSavedActivationKind(unsigned i) {
      if (i == 1)
        return SavedActivationKind::WeightGradInput;
      return std::nullopt;
    }
    std::optional<WeightGradForm> getWeightGradForm() {
      return WeightGradForm::Gemm;
    }
    std::optional<double> getSummedTerms(int64_t dynamicDimSize) {
      auto op = llvm::cast<ConcreteType>(this->getOperation());
      mlir::Value saved = op->getOperand(1);
      std::optional<double> n =
          Terms == GradientTerms::Rows
              ? family::rows(saved, dynamicDimSize)
              : family::batchAndPixels(saved, 2, dynamicDimSize);
      if (!n)
        return std::nullopt;
      double c = op.getCurvatureBound();
      return *n * c * c;
    }
    bool hasDenseSavedActivation() { return Dense; }
  };
};

/// BatchNormalizationGrad and LayerNormalizationGrad (dY, X, scale, mean,
/// inv_std): X is read through xhat = (X - mean) * inv_std, the weight
/// gradient dscale (result 1) sums dY * xhat, and an error in X reaches it
/// scaled by operand 4. The op gives the summed terms.
template <typename ConcreteType>
class NormalizationGradient
    : public SavedActivationOpInterface::Trait<ConcreteType> {
public:
  std::optional<SavedActivationKind> getSavedActivationKind(unsigned i) {
    if (i == 1)
      return SavedActivationKind::BatchNormInput;
    return std::nullopt;
  }
  std::optional<WeightGradForm> getWeightGradForm() {
    return WeightGradForm::BatchNorm;
  }
  std::optional<unsigned> getWeightGradResult() { return 1; }
  std::optional<unsigned> getInvStdOperand() { return 4; }
};

} // namespace comet::onnx

#endif // COMET_DIALECT_ONNX_IR_ONNXSAVEDACTIVATIONS_H
