//===- ONNXSavedActivations.cpp - SavedActivationOpInterface --------------===//
//
// Which operands the backward ops read as saved activations, and the sizes
// that the error-bound rules of compress-activations take from them
// (docs/error-bounds.md).
//
//===----------------------------------------------------------------------===//
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include <cmath>

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

//===----------------------------------------------------------------------===//
// FusedMatMul: ORT's backward of MatMul, dA = dY x B' and dB = A' x dY; as
// MatMul, the non-gradient operand is a saved activation and the result
// sums over op(A)'s contraction dimension.
//===----------------------------------------------------------------------===//

std::optional<SavedActivationKind>
FusedMatMulOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber <= 1)
    return SavedActivationKind::WeightGradInput;
  return std::nullopt;
}
bool FusedMatMulOp::readsSavedActivationsOnlyInBackward() { return true; }
std::optional<WeightGradForm> FusedMatMulOp::getWeightGradForm() {
  return WeightGradForm::Gemm;
}
std::optional<unsigned> FusedMatMulOp::getWeightGradResult() { return 0; }
unsigned FusedMatMulOp::getOutputGradOperand(unsigned activationOperand) {
  return activationOperand == 0 ? 1 : 0;
}
std::optional<double> FusedMatMulOp::getSummedTerms(int64_t dynamicDimSize) {
  return contraction(getA(), getTransA() != 0, dynamicDimSize);
}

//===----------------------------------------------------------------------===//
// LayerNormalizationGrad(dY, X, scale, mean, inv_std): as batch norm, X is
// read through xhat = (X - mean) * inv_std, and dscale sums dY * xhat over
// the rows (the dims before axis).
//===----------------------------------------------------------------------===//

std::optional<SavedActivationKind>
LayerNormalizationGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::BatchNormInput;
  return std::nullopt;
}
std::optional<WeightGradForm> LayerNormalizationGradOp::getWeightGradForm() {
  return WeightGradForm::BatchNorm;
}
std::optional<unsigned> LayerNormalizationGradOp::getWeightGradResult() {
  return 1;
}
std::optional<unsigned> LayerNormalizationGradOp::getInvStdOperand() {
  return 4;
}
std::optional<double>
LayerNormalizationGradOp::getSummedTerms(int64_t dynamicDimSize) {
  auto t = dyn_cast<RankedTensorType>(getX().getType());
  if (!t)
    return std::nullopt;
  int64_t r = t.getRank(), axis = getAxis() < 0 ? getAxis() + r : getAxis();
  double rows = 1;
  for (int64_t i = 0; i < axis && i < r; ++i)
    rows *= dimOr(t.getDimSize(i), dynamicDimSize);
  return rows;
}

//===----------------------------------------------------------------------===//
// BiasGeluGrad_dX(dY, X, B), GeluGrad(dY, X) and SoftmaxGrad_13(dY, Y):
// elementwise and row-wise gradients. They form no weight gradient
// themselves; their bound takes the Gemm rule (an error times dY, summed
// over N terms) with the N that getSummedTerms derives
// (docs/error-bounds.md, "GELU and softmax").
//===----------------------------------------------------------------------===//

std::optional<SavedActivationKind>
BiasGeluGrad_dXOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::WeightGradInput;
  return std::nullopt;
}
std::optional<WeightGradForm> BiasGeluGrad_dXOp::getWeightGradForm() {
  return WeightGradForm::Gemm;
}
/// The rows of X (the terms the next weight gradient, linear1's
/// dW = X_in' x dX, sums) times |gelu''| <= 2 phi(0) ~= 0.798 squared,
/// which scales the error.
static std::optional<double> geluGradTerms(Value x, int64_t dynamicDimSize) {
  auto t = dyn_cast<RankedTensorType>(x.getType());
  if (!t || t.getRank() < 1)
    return std::nullopt;
  double rows = 1;
  for (int64_t d : t.getShape().drop_back())
    rows *= dimOr(d, dynamicDimSize);
  constexpr double kMaxGeluCurvature = 0.7978845608; // 2 / sqrt(2 pi)
  return rows * kMaxGeluCurvature * kMaxGeluCurvature;
}

std::optional<double>
BiasGeluGrad_dXOp::getSummedTerms(int64_t dynamicDimSize) {
  return geluGradTerms(getX(), dynamicDimSize);
}

// GeluGrad(dY, X): BiasGeluGrad_dX without the bias.
std::optional<SavedActivationKind>
GeluGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::WeightGradInput;
  return std::nullopt;
}
std::optional<WeightGradForm> GeluGradOp::getWeightGradForm() {
  return WeightGradForm::Gemm;
}
std::optional<double> GeluGradOp::getSummedTerms(int64_t dynamicDimSize) {
  return geluGradTerms(getX(), dynamicDimSize);
}

std::optional<SavedActivationKind>
SoftmaxGrad_13Op::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::WeightGradInput;
  return std::nullopt;
}
std::optional<WeightGradForm> SoftmaxGrad_13Op::getWeightGradForm() {
  return WeightGradForm::Gemm;
}
std::optional<double> SoftmaxGrad_13Op::getSummedTerms(int64_t dynamicDimSize) {
  auto t = dyn_cast<RankedTensorType>(getY().getType());
  if (!t || t.getRank() < 1)
    return std::nullopt;
  int64_t r = t.getRank(), axis = getAxis() < 0 ? getAxis() + r : getAxis();
  if (axis < 0 || axis >= r)
    return std::nullopt;
  // dX_i = E_i (dY_i - s) + Y_i sum_j dY_j E_j: one term plus a sum of L
  // terms weighted by Y_i <= 1, so sigma <= a eb Lbar (1 + sqrt(L)).
  double l = dimOr(t.getDimSize(axis), dynamicDimSize);
  return (1 + std::sqrt(l)) * (1 + std::sqrt(l));
}

// DropoutGrad's mask is read only as "true or not", as ReluGrad's X.
std::optional<SavedActivationKind>
DropoutGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::ReluMask;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// SigmoidGrad(dY, Y) and TanhGrad(dY, Y): dX = dY * f'(Y) with f'(Y) =
// Y (1 - Y) or 1 - Y^2. An error E in Y changes dX by dY * f''(Y) E, where
// |d(Y (1 - Y))/dY| = |1 - 2Y| <= 1 and |d(1 - Y^2)/dY| = |2Y| <= 2. As for
// BiasGeluGrad_dX, the Gemm rule with N = (the terms the next weight
// gradient sums: batch x pixels) x that factor squared
// (docs/error-bounds.md, "Sigmoid, tanh and QuickGelu"). Their outputs are
// dense.
//===----------------------------------------------------------------------===//

/// Batch times pixels of an N x C x ... activation (the rows of a 2-d one)
/// times `factor`^2.
static std::optional<double> activationGradTerms(Value y, double factor,
                                                 int64_t dyn) {
  std::optional<double> n = batchAndPixels(y, 2, dyn);
  if (!n)
    return std::nullopt;
  return *n * factor * factor;
}

std::optional<SavedActivationKind>
SigmoidGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::WeightGradInput;
  return std::nullopt;
}
std::optional<WeightGradForm> SigmoidGradOp::getWeightGradForm() {
  return WeightGradForm::Gemm;
}
std::optional<double> SigmoidGradOp::getSummedTerms(int64_t dynamicDimSize) {
  return activationGradTerms(getY(), 1.0, dynamicDimSize);
}
bool SigmoidGradOp::hasDenseSavedActivation() { return true; }

std::optional<SavedActivationKind>
TanhGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::WeightGradInput;
  return std::nullopt;
}
std::optional<WeightGradForm> TanhGradOp::getWeightGradForm() {
  return WeightGradForm::Gemm;
}
std::optional<double> TanhGradOp::getSummedTerms(int64_t dynamicDimSize) {
  return activationGradTerms(getY(), 2.0, dynamicDimSize);
}
bool TanhGradOp::hasDenseSavedActivation() { return true; }

//===----------------------------------------------------------------------===//
// QuickGeluGrad(dY, X): dX = dY * f'(X) for f(x) = x sigmoid(alpha x), which
// reads the forward input X. An error E in X gives dY * f''(X) E with
// |f''(x)| = |alpha| s (1 - s) |2 + u (1 - 2 s)| <= |alpha| / 2 (u = alpha x,
// s = sigmoid(u); the maximum is at u = 0). As for SigmoidGrad, dX is the
// output gradient of the layer below: N = batch x pixels x (alpha / 2)^2
// (docs/error-bounds.md, "Sigmoid, tanh and QuickGelu").
//===----------------------------------------------------------------------===//

std::optional<SavedActivationKind>
QuickGeluGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::WeightGradInput;
  return std::nullopt;
}
std::optional<WeightGradForm> QuickGeluGradOp::getWeightGradForm() {
  return WeightGradForm::Gemm;
}
std::optional<double> QuickGeluGradOp::getSummedTerms(int64_t dynamicDimSize) {
  return activationGradTerms(getX(), std::abs(getAlpha().convertToDouble()) / 2,
                             dynamicDimSize);
}
