// RUN: comet-opt %s -split-input-file --comet-specialize-shapes=batch-size=2 -verify-diagnostics

// A Reshape target only known at run time: nothing tells the rows (24
// elements make 8 rows of 3, not the batch's 2), so the pass says so
// rather than guess.
func.func @runtime_shape(%x: tensor<?x12xf32>, %s: tensor<2xi64>) -> tensor<?x3xf32> {
  // expected-error @+1 {{comet-specialize-shapes: at batch size 2, dim 0 of result #0 is unknown; only an argument's leading dim takes the batch (the graph's type is 'tensor<?x3xf32>'; type inference from the specialized operands gives 'tensor<?x?xf32>')}}
  %y = onnx.Reshape(%x, %s) : (tensor<?x12xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// Only an argument's leading dim is the batch; a dynamic sequence length
// is not.
// expected-error @+1 {{comet-specialize-shapes: argument #0 ('tokens') of @seq: dim 1 of 'tensor<?x?x8xf32>' is dynamic; only an argument's leading dim takes the batch}}
func.func @seq(%x: tensor<?x?x8xf32> {onnx.name = "tokens"}) -> tensor<?x?x8xf32> {
  %r = onnx.Relu(%x) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}

// -----

// Inference from the specialized operands contradicts a dim the graph
// states: the target [-1, 4] makes 2 x 12 into 6 x 4, not ? x 6.
func.func @contradiction(%x: tensor<?x12xf32>) -> tensor<?x6xf32> {
  %s = onnx.Constant {value = dense<[-1, 4]> : tensor<2xi64>} : tensor<2xi64>
  // expected-error @+1 {{comet-specialize-shapes: at batch size 2, dim 1 of result #0: inference contradicts the graph's size (the graph's type is 'tensor<?x6xf32>'; type inference from the specialized operands gives 'tensor<6x4xf32>')}}
  %y = onnx.Reshape(%x, %s) : (tensor<?x12xf32>, tensor<2xi64>) -> tensor<?x6xf32>
  return %y : tensor<?x6xf32>
}

// -----

// An op that no longer verifies once its operands are specialized is
// reported at the op, with the verifier's message: here the Reshape makes
// 16 channels where the Conv's weight expects 24.
func.func @no_longer_verifies(%x: tensor<?x32x2x2xf32>, %w: tensor<24x24x1x1xf32>) -> tensor<?x24x?x?xf32> {
  %none = onnx.NoValue
  %s = onnx.Constant {value = dense<[0, 16, -1, 2]> : tensor<4xi64>} : tensor<4xi64>
  %y = onnx.Reshape(%x, %s) : (tensor<?x32x2x2xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  // expected-error @+1 {{comet-specialize-shapes: with the operands specialized at batch size 2, 'onnx.Conv' op X has 16 channels but W 'tensor<24x24x1x1xf32>' with group 1 expects 24}}
  %z = onnx.Conv(%y, %w, %none) {kernel_shape = array<i64: 1, 1>} : (tensor<?x?x?x?xf32>, tensor<24x24x1x1xf32>, none) -> tensor<?x24x?x?xf32>
  return %z : tensor<?x24x?x?xf32>
}
