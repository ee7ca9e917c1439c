// RUN: comet-opt %s -split-input-file --comet-specialize-shapes=batch-size=2 | FileCheck %s
// RUN: comet-opt %s -split-input-file --comet-specialize-shapes=batch-size=2 --comet-memory-report="min-bytes=0 min-distance=1 batch-size=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: not comet-opt %s -split-input-file --comet-specialize-shapes=batch-size=0 2>&1 | FileCheck %s --check-prefix=ERR

// ERR: error: comet-specialize-shapes: batch-size must be positive, got 0

// A reshape of a constant shape: the rows are batch x heads (2 x 4), what
// Reshape's inference gives, not the batch; the function's result follows.
// CHECK-LABEL: func.func @heads(
// CHECK-SAME: %{{.*}}: tensor<2x4x3xf32>) -> tensor<8x3xf32>
// CHECK: onnx.Reshape(%{{.*}}, %{{.*}}) : (tensor<2x4x3xf32>, tensor<2xi64>) -> tensor<8x3xf32>
// CHECK: onnx.Relu(%{{.*}}) : (tensor<8x3xf32>) -> tensor<8x3xf32>
// The memory report sizes the reshaped value as 8 x 3 floats (96 B), not
// 2 x 3 (24 B).
// REPORT-LABEL: comet memory report: @heads
// REPORT: y activation 96 [1, 2]
func.func @heads(%x: tensor<?x4x3xf32>) -> tensor<?x3xf32> {
  %s = onnx.Initializer "s" dense<[-1, 3]> : tensor<2xi64>
  %y = onnx.Reshape(%x, %s) : (tensor<?x4x3xf32>, tensor<2xi64>) -> tensor<?x3xf32> loc("y")
  %r = onnx.Relu(%y) : (tensor<?x3xf32>) -> tensor<?x3xf32> loc("r")
  return %r : tensor<?x3xf32>
}

// -----

// A shape only known at run time: no inference, so `?` falls back to the
// batch.
// CHECK-LABEL: func.func @fallback(
// CHECK-SAME: %{{.*}}: tensor<2x12xf32>, %{{.*}}: tensor<2xi64>) -> tensor<2x3xf32>
// CHECK: onnx.Reshape(%{{.*}}, %{{.*}}) : (tensor<2x12xf32>, tensor<2xi64>) -> tensor<2x3xf32>
func.func @fallback(%x: tensor<?x12xf32>, %s: tensor<2xi64>) -> tensor<?x3xf32> {
  %y = onnx.Reshape(%x, %s) : (tensor<?x12xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// compress and decompress carry their operand's specialized shape.
// CHECK-LABEL: func.func @handles(
// CHECK: comet.compress %{{.*}} : tensor<8x3xf32> -> !comet.compressed<tensor<8x3xf32>, mask>
// CHECK: comet.decompress %{{.*}} : !comet.compressed<tensor<8x3xf32>, mask> -> tensor<8x3xf32>
func.func @handles(%x: tensor<?x4x3xf32>) -> tensor<?x3xf32> {
  %s = onnx.Initializer "s" dense<[-1, 3]> : tensor<2xi64>
  %y = onnx.Reshape(%x, %s) : (tensor<?x4x3xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  %c = comet.compress %y : tensor<?x3xf32> -> !comet.compressed<tensor<?x3xf32>, mask>
  %d = comet.decompress %c : !comet.compressed<tensor<?x3xf32>, mask> -> tensor<?x3xf32>
  return %d : tensor<?x3xf32>
}

// -----

// A static graph is left as it is.
// CHECK-LABEL: func.func @static(
// CHECK-SAME: %{{.*}}: tensor<5x3xf32>) -> tensor<5x3xf32>
func.func @static(%x: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %r = onnx.Relu(%x) : (tensor<5x3xf32>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}
