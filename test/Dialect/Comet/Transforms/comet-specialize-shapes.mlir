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

// -----

// Labels hold one label per row of the loss's scores: a language model's
// scores are batch x tokens rows (2 x 4 = 8), so its labels take 8, not the
// batch, though ONNX Runtime declares them with the batch's symbol. ORT's
// internal loss and its gradient read the same argument.
// CHECK-LABEL: func.func @token_labels(
// CHECK-SAME: %{{.*}}: tensor<2x4x6xf32>, %{{.*}}: tensor<8xi64>) -> (tensor<f32>, tensor<8x6xf32>)
// CHECK: onnx.SoftmaxCrossEntropyLossInternal(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<8x6xf32>, tensor<8xi64>, none, none) -> (tensor<f32>, tensor<8x6xf32>)
// CHECK: onnx.SoftmaxCrossEntropyLossInternalGrad({{.*}}) : (tensor<f32>, tensor<8x6xf32>, tensor<8xi64>, none, none, none) -> tensor<8x6xf32>
func.func @token_labels(%x: tensor<?x4x6xf32>, %labels: tensor<?xi64>) -> (tensor<f32>, tensor<?x6xf32>) {
  %s = onnx.Initializer "s" dense<[-1, 6]> : tensor<2xi64>
  %scores = onnx.Reshape(%x, %s) : (tensor<?x4x6xf32>, tensor<2xi64>) -> tensor<?x6xf32>
  %none = onnx.NoValue
  %loss, %lp = onnx.SoftmaxCrossEntropyLossInternal(%scores, %labels, %none, %none) : (tensor<?x6xf32>, tensor<?xi64>, none, none) -> (tensor<f32>, tensor<?x6xf32>)
  %one = onnx.Initializer "one" dense<1.0> : tensor<f32>
  %d = onnx.SoftmaxCrossEntropyLossInternalGrad(%one, %lp, %labels, %none, %none, %none) : (tensor<f32>, tensor<?x6xf32>, tensor<?xi64>, none, none, none) -> tensor<?x6xf32>
  return %loss, %d : tensor<f32>, tensor<?x6xf32>
}

// -----

// A classifier's labels are the batch (its scores' rows) as before; labels
// of higher rank drop the class dim of scores N x C x d1 (here 2 x 3 x 5).
// CHECK-LABEL: func.func @image_labels(
// CHECK-SAME: %{{.*}}: tensor<2x3xf32>, %{{.*}}: tensor<2xi64>, %{{.*}}: tensor<2x3x5xf32>, %{{.*}}: tensor<2x5xi64>)
func.func @image_labels(%scores: tensor<?x3xf32>, %labels: tensor<?xi64>, %s2: tensor<?x3x5xf32>, %l2: tensor<?x?xi64>) -> (tensor<f32>, tensor<f32>) {
  %none = onnx.NoValue
  %loss, %lp = onnx.SoftmaxCrossEntropyLoss(%scores, %labels, %none) : (tensor<?x3xf32>, tensor<?xi64>, none) -> (tensor<f32>, none)
  %loss2, %lp2 = onnx.SoftmaxCrossEntropyLoss(%s2, %l2, %none) : (tensor<?x3x5xf32>, tensor<?x?xi64>, none) -> (tensor<f32>, none)
  return %loss, %loss2 : tensor<f32>, tensor<f32>
}

// -----

// Labels whose scores stay unknown (a Reshape to a run-time shape) fall
// back to the batch like any other argument.
// CHECK-LABEL: func.func @labels_fallback(
// CHECK-SAME: %{{.*}}: tensor<2xi64>)
func.func @labels_fallback(%x: tensor<?x12xf32>, %t: tensor<2xi64>, %labels: tensor<?xi64>) -> tensor<f32> {
  %scores = onnx.Reshape(%x, %t) : (tensor<?x12xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %none = onnx.NoValue
  %loss, %lp = onnx.SoftmaxCrossEntropyLoss(%scores, %labels, %none) : (tensor<?x?xf32>, tensor<?xi64>, none) -> (tensor<f32>, none)
  return %loss : tensor<f32>
}
