// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-hoist-masks="min-bytes=0 min-distance=3" | FileCheck %s
// RUN: comet-opt %s -split-input-file --comet-hoist-masks="min-bytes=0 min-distance=3" --comet-compress-activations="min-bytes=0 min-distance=3" --comet-lower-to-runtime | FileCheck %s --check-prefix=LOWER
// RUN: comet-opt %s -split-input-file --comet-hoist-masks="min-bytes=0 min-distance=3" --comet-memory-report 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT
// RUN: comet-opt %s -split-input-file --comet-memory-report 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE

// ReLU6 as ONNX Runtime differentiates it: the backward compares %a, the
// Clip's input, with min and max. The comparisons and their And move next
// to %a, so %a dies at the Clip; Mul(dY, Cast(mask)) becomes DropoutGrad
// with ratio 0, which reads the mask as a mask.
// CHECK-LABEL: func.func @relu6
// CHECK: %[[ZERO:.*]] = onnx.Constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
// CHECK-NEXT: %[[TRUE:.*]] = onnx.Constant {value = dense<true> : tensor<i1>} : tensor<i1>
// CHECK: %[[A:.*]] = onnx.Relu(%arg0)
// CHECK-NEXT: %[[GE:.*]] = onnx.GreaterOrEqual(%[[A]], %[[LO:.*]]) :
// CHECK-NEXT: %[[LE:.*]] = onnx.LessOrEqual(%[[A]], %[[HI:.*]]) :
// CHECK-NEXT: %[[M:.*]] = onnx.And(%[[GE]], %[[LE]]) :
// CHECK-NEXT: onnx.Clip(%[[A]], %[[LO]], %[[HI]])
// CHECK-NOT: onnx.Cast
// CHECK-NOT: onnx.Mul
// CHECK: onnx.DropoutGrad(%{{.*}}, %[[M]], %[[ZERO]], %[[TRUE]]) : (tensor<64x32xf32>, tensor<64x32xi1>, tensor<f32>, tensor<i1>) -> tensor<64x32xf32>
// Compressed, the mask is a 1-bit stream that DropoutGrad reads directly.
// LOWER-LABEL: func.func @relu6
// LOWER: %[[H:.*]] = call @comet_rt_compress_i1(
// LOWER: call @comet_rt_dropout_grad_mask(%arg0, %{{.*}}, %[[H]],
// The 8 KiB float %a no longer lives to the backward, and the cast's float
// tensor is gone: the peak moves from the Mul to the forward's Clip.
// REPORT-LABEL: comet memory report: @relu6
// REPORT: predicted peak: 22285 B ({{.*}}) at step 8 (onnx.Clip)
// BEFORE-LABEL: comet memory report: @relu6
// BEFORE: predicted peak: 28416 B ({{.*}}) at step 14 (onnx.Mul)
func.func @relu6(%x: tensor<64x32xf32>, %w: tensor<10x32xf32>, %dl: tensor<64x10xf32>) -> (tensor<64x10xf32>, tensor<64x32xf32>) {
  %lo = onnx.Constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %hi = onnx.Constant {value = dense<6.0> : tensor<f32>} : tensor<f32>
  %a = onnx.Relu(%x) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = onnx.Clip(%a, %lo, %hi) : (tensor<64x32xf32>, tensor<f32>, tensor<f32>) -> tensor<64x32xf32>
  %none = onnx.NoValue
  %z = onnx.Gemm(%y, %w, %none) {transB = 1 : i64} : (tensor<64x32xf32>, tensor<10x32xf32>, none) -> tensor<64x10xf32>
  %r = onnx.Relu(%z) : (tensor<64x10xf32>) -> tensor<64x10xf32>
  %s = onnx.Relu(%r) : (tensor<64x10xf32>) -> tensor<64x10xf32>
  %dz = onnx.ReluGrad(%dl, %z) : (tensor<64x10xf32>, tensor<64x10xf32>) -> tensor<64x10xf32>
  %dy = onnx.Gemm(%dz, %w, %none) {beta = 0.0 : f32} : (tensor<64x10xf32>, tensor<10x32xf32>, none) -> tensor<64x32xf32>
  %le = onnx.LessOrEqual(%a, %hi) : (tensor<64x32xf32>, tensor<f32>) -> tensor<64x32xi1>
  %ge = onnx.GreaterOrEqual(%a, %lo) : (tensor<64x32xf32>, tensor<f32>) -> tensor<64x32xi1>
  %m = onnx.And(%ge, %le) : (tensor<64x32xi1>, tensor<64x32xi1>) -> tensor<64x32xi1>
  %c = onnx.Cast(%m) {to = 1 : i64} : (tensor<64x32xi1>) -> tensor<64x32xf32>
  %dx = onnx.Mul(%dy, %c) : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  return %s, %dx : tensor<64x10xf32>, tensor<64x32xf32>
}

// -----

// A constant that the backward defines late moves up with the comparison
// that reads it.
// CHECK-LABEL: func.func @late_constant
// CHECK: %[[A:.*]] = onnx.Relu(%arg0)
// CHECK-NEXT: %[[HI:.*]] = onnx.Constant {value = dense<6.000000e+00> : tensor<f32>}
// CHECK-NEXT: onnx.LessOrEqual(%[[A]], %[[HI]])
// CHECK-NEXT: onnx.Clip(%[[A]]
func.func @late_constant(%x: tensor<64x32xf32>, %w: tensor<10x32xf32>, %dl: tensor<64x10xf32>) -> (tensor<64x10xf32>, tensor<64x32xf32>) {
  %lo = onnx.Constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %max = onnx.Constant {value = dense<6.0> : tensor<f32>} : tensor<f32>
  %a = onnx.Relu(%x) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = onnx.Clip(%a, %lo, %max) : (tensor<64x32xf32>, tensor<f32>, tensor<f32>) -> tensor<64x32xf32>
  %none = onnx.NoValue
  %z = onnx.Gemm(%y, %w, %none) {transB = 1 : i64} : (tensor<64x32xf32>, tensor<10x32xf32>, none) -> tensor<64x10xf32>
  %r = onnx.Relu(%z) : (tensor<64x10xf32>) -> tensor<64x10xf32>
  %s = onnx.Relu(%r) : (tensor<64x10xf32>) -> tensor<64x10xf32>
  %dz = onnx.ReluGrad(%dl, %z) : (tensor<64x10xf32>, tensor<64x10xf32>) -> tensor<64x10xf32>
  %dy = onnx.Gemm(%dz, %w, %none) {beta = 0.0 : f32} : (tensor<64x10xf32>, tensor<10x32xf32>, none) -> tensor<64x32xf32>
  %hi = onnx.Constant {value = dense<6.0> : tensor<f32>} : tensor<f32>
  %le = onnx.LessOrEqual(%a, %hi) : (tensor<64x32xf32>, tensor<f32>) -> tensor<64x32xi1>
  %c = onnx.Cast(%le) {to = 1 : i64} : (tensor<64x32xi1>) -> tensor<64x32xf32>
  %dx = onnx.Mul(%c, %dy) : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  return %s, %dx : tensor<64x10xf32>, tensor<64x32xf32>
}

// -----

// Nothing moves when the backward also reads the value itself (here as a
// weight-gradient input): the float stays live either way. A comparison
// with a gradient is in the gradient flow and stays too; the Mul whose
// cast mask broadcasts is no DropoutGrad.
// CHECK-LABEL: func.func @kept
// CHECK: onnx.ReluGrad
// CHECK: onnx.LessOrEqual(%{{.*}}, %{{.*}}) : (tensor<64x32xf32>, tensor<f32>)
// CHECK: onnx.Gemm
// CHECK: onnx.LessOrEqual(%{{.*}}, %{{.*}}) : (tensor<64x32xf32>, tensor<f32>)
// CHECK: onnx.Mul(%{{.*}}, %{{.*}}) : (tensor<64x32xf32>, tensor<32xf32>)
// CHECK-NOT: onnx.DropoutGrad
func.func @kept(%x: tensor<64x32xf32>, %w: tensor<10x32xf32>, %dl: tensor<64x10xf32>, %b: tensor<32xi1>) -> (tensor<64x10xf32>, tensor<64x32xf32>, tensor<10x32xf32>, tensor<64x32xi1>, tensor<64x32xi1>) {
  %hi = onnx.Constant {value = dense<6.0> : tensor<f32>} : tensor<f32>
  %a = onnx.Relu(%x) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %none = onnx.NoValue
  %z = onnx.Gemm(%a, %w, %none) {transB = 1 : i64} : (tensor<64x32xf32>, tensor<10x32xf32>, none) -> tensor<64x10xf32>
  %r = onnx.Relu(%z) : (tensor<64x10xf32>) -> tensor<64x10xf32>
  %s = onnx.Relu(%r) : (tensor<64x10xf32>) -> tensor<64x10xf32>
  %dz = onnx.ReluGrad(%dl, %z) : (tensor<64x10xf32>, tensor<64x10xf32>) -> tensor<64x10xf32>
  %le = onnx.LessOrEqual(%a, %hi) : (tensor<64x32xf32>, tensor<f32>) -> tensor<64x32xi1>
  %dw = onnx.Gemm(%dz, %a, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<64x10xf32>, tensor<64x32xf32>, none) -> tensor<10x32xf32>
  %dy = onnx.Gemm(%dz, %w, %none) {beta = 0.0 : f32} : (tensor<64x10xf32>, tensor<10x32xf32>, none) -> tensor<64x32xf32>
  %gle = onnx.LessOrEqual(%dy, %hi) : (tensor<64x32xf32>, tensor<f32>) -> tensor<64x32xi1>
  %c = onnx.Cast(%b) {to = 1 : i64} : (tensor<32xi1>) -> tensor<32xf32>
  %dx = onnx.Mul(%dy, %c) : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  return %s, %dx, %dw, %le, %gle : tensor<64x10xf32>, tensor<64x32xf32>, tensor<10x32xf32>, tensor<64x32xi1>, tensor<64x32xi1>
}
