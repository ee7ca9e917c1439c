//===- ONNXSavedActivations.cpp - SavedActivationOpInterface --------------===//
//
// Which operands the backward ops read as saved activations, and the sizes
// that the error-bound rules of compress-activations take from them
// (docs/error-bounds.md).
//
//===----------------------------------------------------------------------===//
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

using namespace mlir;
using namespace comet::onnx;

static double dimOr(int64_t d, int64_t dyn) {
  return static_cast<double>(ShapedType::isDynamic(d) ? dyn : d);
}

/// Batch times output pixels of dY (N x C x D1 x ...): the terms that a
/// per-channel or per-weight gradient sums. Nullopt below `minRank`.
static std::optional<double> batchAndPixels(Value dy, int64_t minRank,
                                            int64_t dyn) {
  auto t = dyn_cast<RankedTensorType>(dy.getType());
  if (!t || t.getRank() < minRank)
    return std::nullopt;
  double n = dimOr(t.getDimSize(0), dyn);
  for (int64_t d : t.getShape().drop_front(2))
    n *= dimOr(d, dyn);
  return n;
}

/// The contraction dimension of A in A x B (A' x B with `transA`).
static std::optional<double> contraction(Value a, bool transA, int64_t dyn) {
  auto t = dyn_cast<RankedTensorType>(a.getType());
  if (!t || t.getRank() < 1)
    return std::nullopt;
  int64_t r = t.getRank();
  return dimOr(r >= 2 && transA ? t.getDimSize(r - 2) : t.getDimSize(r - 1),
               dyn);
}

//===----------------------------------------------------------------------===//
// ConvGrad(dY, X, W): dW sums dY * X over batch and output pixels.
//===----------------------------------------------------------------------===//

std::optional<SavedActivationKind>
ConvGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::WeightGradInput;
  return std::nullopt;
}
std::optional<WeightGradForm> ConvGradOp::getWeightGradForm() {
  return WeightGradForm::Conv;
}
std::optional<unsigned> ConvGradOp::getWeightGradResult() { return 1; }
std::optional<double> ConvGradOp::getSummedTerms(int64_t dynamicDimSize) {
  return batchAndPixels(getDY(), 3, dynamicDimSize);
}
double ConvGradOp::getKernelArea() {
  double area = 1;
  if (std::optional<ArrayRef<int64_t>> ks = getKernelShape();
      ks && !ks->empty()) {
    for (int64_t k : *ks)
      area *= k;
  } else if (auto w = dyn_cast<RankedTensorType>(getW().getType())) {
    for (int64_t d : w.getShape().drop_front(2))
      area *= dimOr(d, 1);
  }
  return area;
}
double ConvGradOp::getStrideProduct() {
  double s = 1;
  if (std::optional<ArrayRef<int64_t>> st = getStrides())
    for (int64_t v : *st)
      s *= std::max<int64_t>(v, 1);
  return s;
}

//===----------------------------------------------------------------------===//
// BatchNormalizationGrad(dY, X, scale, mean, inv_std): dscale sums dY * xhat.
//===----------------------------------------------------------------------===//

std::optional<SavedActivationKind>
BatchNormalizationGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::BatchNormInput;
  return std::nullopt;
}
std::optional<WeightGradForm> BatchNormalizationGradOp::getWeightGradForm() {
  return WeightGradForm::BatchNorm;
}
std::optional<unsigned> BatchNormalizationGradOp::getWeightGradResult() {
  return 1;
}
std::optional<unsigned> BatchNormalizationGradOp::getInvStdOperand() {
  return 4;
}
std::optional<double>
BatchNormalizationGradOp::getSummedTerms(int64_t dynamicDimSize) {
  return batchAndPixels(getDY(), 2, dynamicDimSize);
}

//===----------------------------------------------------------------------===//
// Gemm, MatMul: in the backward pass dW = A' x B with one of A, B the saved
// activation and the other dY.
//===----------------------------------------------------------------------===//

std::optional<SavedActivationKind>
GemmOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber <= 1)
    return SavedActivationKind::WeightGradInput;
  return std::nullopt;
}
bool GemmOp::readsSavedActivationsOnlyInBackward() { return true; }
std::optional<WeightGradForm> GemmOp::getWeightGradForm() {
  return WeightGradForm::Gemm;
}
std::optional<unsigned> GemmOp::getWeightGradResult() { return 0; }
unsigned GemmOp::getOutputGradOperand(unsigned activationOperand) {
  return activationOperand == 0 ? 1 : 0;
}
std::optional<double> GemmOp::getSummedTerms(int64_t dynamicDimSize) {
  return contraction(getA(), getTransA() != 0, dynamicDimSize);
}

std::optional<SavedActivationKind>
MatMulOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber <= 1)
    return SavedActivationKind::WeightGradInput;
  return std::nullopt;
}
bool MatMulOp::readsSavedActivationsOnlyInBackward() { return true; }
std::optional<WeightGradForm> MatMulOp::getWeightGradForm() {
  return WeightGradForm::Gemm;
}
std::optional<unsigned> MatMulOp::getWeightGradResult() { return 0; }
unsigned MatMulOp::getOutputGradOperand(unsigned activationOperand) {
  return activationOperand == 0 ? 1 : 0;
}
std::optional<double> MatMulOp::getSummedTerms(int64_t dynamicDimSize) {
  return contraction(getA(), /*transA=*/false, dynamicDimSize);
}

//===----------------------------------------------------------------------===//
// ReluGrad(dY, X), DropoutGrad(dY, mask, ...) and MaxPoolGrad(dY, Indices):
// no weight gradient.
//===----------------------------------------------------------------------===//

std::optional<SavedActivationKind>
ReluGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::ReluMask;
  return std::nullopt;
}

std::optional<SavedActivationKind>
MaxPoolGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::PoolIndices;
  return std::nullopt;
}

std::optional<SavedActivationKind>
DropoutGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::ReluMask;
  return std::nullopt;
}
