// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-accumulate-early | FileCheck %s
// RUN: comet-opt %s -split-input-file --comet-accumulate-early --comet-memory-report 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT
// RUN: comet-opt %s -split-input-file --comet-memory-report 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE

// Two weight gradients that ORT accumulates after the whole backward: each
// accumulator moves to just after its gradient, so dW1 no longer lives
// while dW0 is formed.
// CHECK-LABEL: func.func @two_layers
// CHECK: %[[DW1:.*]] = onnx.Gemm(%{{.*}}, %{{.*}}, %{{.*}}) {beta = 0.000000e+00 : f32, transA = 1 : i64}
// CHECK-NEXT: onnx.InPlaceAccumulatorV2(%arg4, %[[DW1]], %arg6)
// CHECK: %[[DW0:.*]] = onnx.Gemm(%{{.*}}, %arg0, %{{.*}}) {beta = 0.000000e+00 : f32, transA = 1 : i64}
// CHECK-NEXT: onnx.InPlaceAccumulatorV2(%arg3, %[[DW0]], %arg6)
// The buffer that the graph also returns is read by something else: its
// accumulator stays where ORT put it.
// CHECK: %[[DB:.*]] = onnx.ReduceSum
// CHECK: onnx.Relu
// CHECK-NEXT: onnx.InPlaceAccumulatorV2(%arg5, %[[DB]], %arg6)
// CHECK-NEXT: return
// REPORT-LABEL: comet memory report: @two_layers
// REPORT: predicted peak: 147714 B ({{.*}}) at step 6 (onnx.Gemm)
// BEFORE-LABEL: comet memory report: @two_layers
// BEFORE: predicted peak: 164097 B ({{.*}}) at step 5 (onnx.Gemm)
func.func @two_layers(%x: tensor<64x64xf32> {onnx.name = "input"}, %w0: tensor<64x64xf32> {onnx.name = "fc0.weight"}, %w1: tensor<64x64xf32> {onnx.name = "fc1.weight"},
                      %g0: tensor<64x64xf32> {onnx.name = "fc0.weight_grad.accumulation.buffer"}, %g1: tensor<64x64xf32> {onnx.name = "fc1.weight_grad.accumulation.buffer"}, %gb: tensor<64xf32> {onnx.name = "fc1.bias_grad.accumulation.buffer"},
                      %reset: tensor<1xi1> {onnx.name = "lazy_reset_grad"}, %dl: tensor<64x64xf32> {onnx.name = "dl"})
    -> (tensor<64x64xf32>, tensor<1xi1>, tensor<1xi1>, tensor<1xi1>, tensor<64xf32>) {
  %none = onnx.NoValue
  %h = onnx.Gemm(%x, %w0, %none) {transB = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>, none) -> tensor<64x64xf32>
  %y = onnx.Gemm(%h, %w1, %none) {transB = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>, none) -> tensor<64x64xf32>
  %dw1 = onnx.Gemm(%dl, %h, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<64x64xf32>, tensor<64x64xf32>, none) -> tensor<64x64xf32>
  %dh = onnx.Gemm(%dl, %w1, %none) {beta = 0.0 : f32} : (tensor<64x64xf32>, tensor<64x64xf32>, none) -> tensor<64x64xf32>
  %dw0 = onnx.Gemm(%dh, %x, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<64x64xf32>, tensor<64x64xf32>, none) -> tensor<64x64xf32>
  %axes = onnx.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %db = onnx.ReduceSum(%dl, %axes) {keepdims = 0 : i64} : (tensor<64x64xf32>, tensor<1xi64>) -> tensor<64xf32>
  %r = onnx.Relu(%y) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %f0, %n0 = onnx.InPlaceAccumulatorV2(%g0, %dw0, %reset) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  %f1, %n1 = onnx.InPlaceAccumulatorV2(%g1, %dw1, %reset) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  %f2, %n2 = onnx.InPlaceAccumulatorV2(%gb, %db, %reset) : (tensor<64xf32>, tensor<64xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  return %r, %f0, %f1, %f2, %gb : tensor<64x64xf32>, tensor<1xi1>, tensor<1xi1>, tensor<1xi1>, tensor<64xf32>
}
