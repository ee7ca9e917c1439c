//===- ONNXSavedActivationsTest.cpp - The saved-activation families -------===//
//
// The family traits implement SavedActivationOpInterface for their ops;
// these are the answers the error-bound rules read (docs/error-bounds.md).
//
//===----------------------------------------------------------------------===//
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace comet::onnx;

namespace {

struct SavedActivations : ::testing::Test {
  SavedActivations() { ctx.loadDialect<ONNXDialect, func::FuncDialect>(); }

  /// The first op named `name` of the function in `body`.
  SavedActivationOpInterface get(StringRef body, StringRef name) {
    module = parseSourceString<ModuleOp>(body, &ctx);
    EXPECT_TRUE(module);
    Operation *found = nullptr;
    module->walk([&](Operation *op) {
      if (!found && op->getName().getStringRef() == name)
        found = op;
    });
    EXPECT_NE(found, nullptr) << name.str();
    return dyn_cast_or_null<SavedActivationOpInterface>(found);
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};

TEST_F(SavedActivations, MaskGradient) {
  auto relu = get(R"mlir(
    func.func @f(%dy: tensor<2x8xf32>, %x: tensor<2x8xf32>) {
      %dx = onnx.ReluGrad(%dy, %x) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
      return
    })mlir",
                  "onnx.ReluGrad");
  ASSERT_TRUE(relu);
  EXPECT_EQ(relu.getSavedActivationKind(1), SavedActivationKind::ReluMask);
  EXPECT_EQ(relu.getSavedActivationKind(0), std::nullopt);
  EXPECT_EQ(relu.getWeightGradForm(), std::nullopt);
  EXPECT_TRUE(relu->hasTrait<ReadsMaskHandle>());
}

TEST_F(SavedActivations, MatMulGradientSumsOverOpA) {
  auto gemm = get(R"mlir(
    func.func @f(%x: tensor<5x3xf32>, %dy: tensor<5x4xf32>) {
      %none = onnx.NoValue
      %dw = onnx.Gemm(%x, %dy, %none) {transA = 1 : i64} : (tensor<5x3xf32>, tensor<5x4xf32>, none) -> tensor<3x4xf32>
      return
    })mlir",
                  "onnx.Gemm");
  ASSERT_TRUE(gemm);
  EXPECT_EQ(gemm.getSavedActivationKind(0),
            SavedActivationKind::WeightGradInput);
  EXPECT_EQ(gemm.getSavedActivationKind(2), std::nullopt);
  EXPECT_TRUE(gemm.readsSavedActivationsOnlyInBackward());
  EXPECT_EQ(gemm.getWeightGradForm(), WeightGradForm::Gemm);
  EXPECT_EQ(gemm.getWeightGradResult(), 0u);
  EXPECT_EQ(gemm.getOutputGradOperand(0), 1u);
  // transA: A' is 3 x 5, the contraction is A's dim 0.
  EXPECT_EQ(gemm.getSummedTerms(1), 5.0);

  auto matmul = get(R"mlir(
    func.func @f(%a: tensor<2x6x3xf32>, %b: tensor<3x4xf32>) {
      %y = onnx.MatMul(%a, %b) : (tensor<2x6x3xf32>, tensor<3x4xf32>) -> tensor<2x6x4xf32>
      return
    })mlir",
                    "onnx.MatMul");
  ASSERT_TRUE(matmul);
  EXPECT_EQ(matmul.getSummedTerms(1), 3.0);
}

// N = terms x c^2: batch x pixels for SigmoidGrad (c = 1) and TanhGrad
// (c = 2), rows for GeluGrad (c = sqrt(2 / pi)), alpha / 2 for
// QuickGeluGrad.
TEST_F(SavedActivations, ActivationGradientTerms) {
  const char *body = R"mlir(
    func.func @f(%dy: tensor<?x3x4x5xf32>, %y: tensor<?x3x4x5xf32>, %g: tensor<2x7x8xf32>) {
      %s = onnx.SigmoidGrad(%dy, %y) : (tensor<?x3x4x5xf32>, tensor<?x3x4x5xf32>) -> tensor<?x3x4x5xf32>
      %t = onnx.TanhGrad(%dy, %y) : (tensor<?x3x4x5xf32>, tensor<?x3x4x5xf32>) -> tensor<?x3x4x5xf32>
      %q = onnx.QuickGeluGrad(%dy, %y) {alpha = -3.0 : f32} : (tensor<?x3x4x5xf32>, tensor<?x3x4x5xf32>) -> tensor<?x3x4x5xf32>
      %e = onnx.GeluGrad(%g, %g) : (tensor<2x7x8xf32>, tensor<2x7x8xf32>) -> tensor<2x7x8xf32>
      return
    })mlir";
  auto sigmoid = get(body, "onnx.SigmoidGrad");
  ASSERT_TRUE(sigmoid);
  EXPECT_EQ(sigmoid.getSavedActivationKind(1),
            SavedActivationKind::WeightGradInput);
  EXPECT_EQ(sigmoid.getWeightGradForm(), WeightGradForm::Gemm);
  EXPECT_EQ(sigmoid.getWeightGradResult(), std::nullopt);
  EXPECT_TRUE(sigmoid.hasDenseSavedActivation());
  EXPECT_EQ(sigmoid.getSummedTerms(16), 16.0 * 4 * 5);
  auto tanh = get(body, "onnx.TanhGrad");
  EXPECT_EQ(tanh.getSummedTerms(16), 16.0 * 4 * 5 * 4);
  auto quick = get(body, "onnx.QuickGeluGrad");
  EXPECT_FALSE(quick.hasDenseSavedActivation());
  EXPECT_EQ(quick.getSummedTerms(16), 16.0 * 4 * 5 * 1.5 * 1.5);
  auto gelu = get(body, "onnx.GeluGrad");
  EXPECT_NEAR(*gelu.getSummedTerms(1), 14.0 * 2 / M_PI, 1e-6);
}

TEST_F(SavedActivations, NormalizationGradient) {
  auto bn = get(R"mlir(
    func.func @f(%dy: tensor<8x3x4x4xf32>, %v: tensor<3xf32>) {
      %dx, %ds, %db = onnx.BatchNormalizationGrad(%dy, %dy, %v, %v, %v) : (tensor<8x3x4x4xf32>, tensor<8x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<8x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
      return
    })mlir",
                "onnx.BatchNormalizationGrad");
  ASSERT_TRUE(bn);
  EXPECT_EQ(bn.getSavedActivationKind(1), SavedActivationKind::BatchNormInput);
  EXPECT_EQ(bn.getWeightGradForm(), WeightGradForm::BatchNorm);
  EXPECT_EQ(bn.getWeightGradResult(), 1u);
  EXPECT_EQ(bn.getInvStdOperand(), 4u);
  EXPECT_EQ(bn.getSummedTerms(1), 8.0 * 4 * 4);
}

} // namespace
