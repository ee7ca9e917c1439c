// RUN: comet-opt %s -split-input-file --comet-lower-to-runtime -verify-diagnostics

// Without batch-size, a dynamic dimension cannot be given a buffer.
// expected-error @+1 {{@dyn has dynamic dimensions; give batch-size=N to specialize them}}
func.func @dyn(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %r = onnx.Relu(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// A Cast with no runtime kernel (only bool to f32 has one) names both types.
func.func @cast(%x: tensor<2x8xf32>) -> tensor<2x8xf64> {
  // expected-error @+1 {{Cast from 'f32' to 'f64' is not supported}}
  %r = onnx.Cast(%x) {to = 11 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf64>
  return %r : tensor<2x8xf64>
}

// -----

// auto_pad must already be resolved to explicit pads.
func.func @same(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32> {
  %none = onnx.NoValue
  // expected-error @+1 {{auto_pad SAME_UPPER is not supported; give explicit pads}}
  %y = onnx.Conv(%x, %w, %none) {auto_pad = "SAME_UPPER"} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, none) -> tensor<1x1x4x4xf32>
  return %y : tensor<1x1x4x4xf32>
}

// -----

// A bool mask decompressed into a buffer (not read by DropoutGrad alone) has
// no kernel.
func.func @bool_decompress(%m: tensor<2x8xi1>) -> tensor<2x8xi1> {
  %c = comet.compress %m : tensor<2x8xi1> -> !comet.compressed<tensor<2x8xi1>, mask>
  // expected-error @+1 {{only f32 tensors can be decompressed into a buffer}}
  %d = comet.decompress %c : !comet.compressed<tensor<2x8xi1>, mask> -> tensor<2x8xi1>
  return %d : tensor<2x8xi1>
}

// -----

// A bool tensor is stored only as a mask.
func.func @bool_raw(%m: tensor<2x8xi1>) -> tensor<2x8xi1> {
  // expected-error @+1 {{a bool tensor can only be compressed as a mask}}
  %c = comet.compress %m : tensor<2x8xi1> -> !comet.compressed<tensor<2x8xi1>, raw>
  %d = comet.decompress %c : !comet.compressed<tensor<2x8xi1>, raw> -> tensor<2x8xi1>
  return %d : tensor<2x8xi1>
}

// -----

// AveragePool: ceil_mode 1 is refused.
func.func @avgpool_ceil(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{comet-lower-to-runtime: onnx.AveragePool with ceil_mode 1 is not supported}}
  %y = onnx.AveragePool(%x) {ceil_mode = 1 : i64, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// AveragePoolGrad: only 2-D.
func.func @avgpool_grad_1d(%dy: tensor<1x2x2xf32>) -> tensor<1x2x4xf32> {
  // expected-error @+1 {{comet-lower-to-runtime: only 2-D onnx.AveragePoolGrad is supported}}
  %dx = onnx.AveragePoolGrad(%dy) {kernel_shape = array<i64: 2>, strides = array<i64: 2>} : (tensor<1x2x2xf32>) -> tensor<1x2x4xf32>
  return %dx : tensor<1x2x4xf32>
}

// -----

// Pad: only constant mode.
func.func @pad_reflect(%x: tensor<2x3xf32>) -> tensor<2x5xf32> {
  %none = onnx.NoValue
  %pads = onnx.Constant {value = dense<[0, 1, 0, 1]> : tensor<4xi64>} : tensor<4xi64>
  // expected-error @+1 {{comet-lower-to-runtime: Pad mode 'reflect' is not supported (only 'constant')}}
  %y = onnx.Pad(%x, %pads, %none, %none) {mode = "reflect"} : (tensor<2x3xf32>, tensor<4xi64>, none, none) -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

// Pad: the pads are constant.
func.func @pad_dynamic(%x: tensor<2x3xf32>, %pads: tensor<4xi64>) -> tensor<2x5xf32> {
  %none = onnx.NoValue
  // expected-error @+1 {{comet-lower-to-runtime: Pad needs constant pads}}
  %y = onnx.Pad(%x, %pads, %none, %none) : (tensor<2x3xf32>, tensor<4xi64>, none, none) -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

// Split needs its lengths when lowered: a split known only at run time has
// none.
func.func @split_dynamic(%x: tensor<2x8xf32>, %s: tensor<2xi64>) -> tensor<2x4xf32> {
  // expected-error @+1 {{Split needs a constant split or a static dim to divide}}
  %a, %b = onnx.Split(%x, %s) {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2xi64>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  return %a : tensor<2x4xf32>
}

// -----

// Equal compares f32 tensors (the causal mask); other types have no kernel.
func.func @equal_i64(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{Equal of 'tensor<4xi64>' is not supported (f32)}}
  %c = onnx.Equal(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  return %c : tensor<4xi1>
}

// -----

// A Range whose limit is only known at run time does not fold.
func.func @range_dynamic(%l: tensor<i64>) -> tensor<4xi64> {
  %z = onnx.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %o = onnx.Constant {value = dense<1> : tensor<i64>} : tensor<i64>
  // expected-error @+1 {{Range is only supported on integer constants}}
  %r = onnx.Range(%z, %l, %o) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  return %r : tensor<4xi64>
}

// -----

// An op that names its runtime call in ODS gets the call's operand checks:
// comet_rt_where takes f32 X and Y.
func.func @where_i64(%c: tensor<4xi1>, %a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{comet-lower-to-runtime: comet_rt_where takes an operand of element type 'f32', got 'memref<4xi64>'}}
  %w = onnx.Where(%c, %a, %b) : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %w : tensor<4xi64>
}

// -----

// The runtime has no float Mod.
func.func @mod_f32(%x: tensor<2x8xf32>, %y: tensor<f32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{Mod of 'tensor<2x8xf32>' is not supported (i64)}}
  %r = onnx.Mod(%x, %y) {fmod = 1 : i64} : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}
