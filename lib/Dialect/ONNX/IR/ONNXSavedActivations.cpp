//===- ONNXSavedActivations.cpp - SavedActivationOpInterface --------------===//
//
// Which operands the backward ops read as saved activations, and the sizes
// that the error-bound rules of compress-activations take from them
// (docs/error-bounds.md). The families (ONNXSavedActivations.h) decide it
// for their ops: MaskGradient (ReluGrad, DropoutGrad), MatMulGradient (Gemm,
// MatMul, FusedMatMul), ActivationGradient (SigmoidGrad, TanhGrad,
// QuickGeluGrad, GeluGrad, BiasGeluGrad_dX) and NormalizationGradient
// (BatchNormalizationGrad, LayerNormalizationGrad, which give their summed
// terms here). ConvGrad, MaxPoolGrad and SoftmaxGrad_13 are their own.
//
//===----------------------------------------------------------------------===//
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include <cmath>

using namespace mlir;
using namespace comet::onnx;

static double dimOr(int64_t d, int64_t dyn) {
  return static_cast<double>(ShapedType::isDynamic(d) ? dyn : d);
}

std::optional<double> family::batchAndPixels(Value v, int64_t minRank,
                                             int64_t dyn) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() < minRank)
    return std::nullopt;
  double n = dimOr(t.getDimSize(0), dyn);
  for (int64_t d : t.getShape().drop_front(2))
    n *= dimOr(d, dyn);
  return n;
}

std::optional<double> family::rows(Value v, int64_t dyn) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() < 1)
    return std::nullopt;
  double rows = 1;
  for (int64_t d : t.getShape().drop_back())
    rows *= dimOr(d, dyn);
  return rows;
}

std::optional<double> family::contraction(Value a, bool transA, int64_t dyn) {
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
  return family::batchAndPixels(getDY(), 3, dynamicDimSize);
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
// The normalization gradients' summed terms: BatchNormalizationGrad's dscale
// sums over batch and pixels, LayerNormalizationGrad's over the rows (the
// dims before axis).
//===----------------------------------------------------------------------===//

std::optional<double>
BatchNormalizationGradOp::getSummedTerms(int64_t dynamicDimSize) {
  return family::batchAndPixels(getDY(), 2, dynamicDimSize);
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
// MaxPoolGrad(dY, Indices): the indices are read exactly; no weight
// gradient.
//===----------------------------------------------------------------------===//

std::optional<SavedActivationKind>
MaxPoolGradOp::getSavedActivationKind(unsigned operandNumber) {
  if (operandNumber == 1)
    return SavedActivationKind::PoolIndices;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// SoftmaxGrad_13(dY, Y): a row-wise gradient. It forms no weight gradient
// itself; its bound takes the Gemm rule (an error times dY, summed over N
// terms) with the N below (docs/error-bounds.md, "GELU and softmax").
//===----------------------------------------------------------------------===//

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
