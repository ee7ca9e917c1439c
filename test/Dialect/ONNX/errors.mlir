// RUN: comet-opt %s -split-input-file -verify-diagnostics

// Conv: kernel_shape must match the spatial dims of W.
func.func @conv_kernel_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %none: none) {
  // expected-error @+1 {{kernel_shape [5, 5] does not match the spatial dims of W 'tensor<4x3x3x3xf32>'}}
  %y = onnx.Conv(%x, %w, %none) {kernel_shape = array<i64: 5, 5>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Conv: X's channels must equal W's input channels times group.
func.func @conv_channels(%x: tensor<1x2x8x8xf32>, %w: tensor<4x3x3x3xf32>, %none: none) {
  // expected-error @+1 {{X has 2 channels but W 'tensor<4x3x3x3xf32>' with group 1 expects 3}}
  %y = onnx.Conv(%x, %w, %none) : (tensor<1x2x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Conv: pads needs two values per spatial dim.
func.func @conv_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %none: none) {
  // expected-error @+1 {{pads has 2 values but the input has 2 spatial dims (expected 4)}}
  %y = onnx.Conv(%x, %w, %none) {pads = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  return
}

// -----

// Conv: the bias has one value per output channel.
func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{B has 5 elements but W has 4 output channels}}
  %y = onnx.Conv(%x, %w, %b) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<5xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Conv: X must have rank >= 3.
func.func @conv_rank(%x: tensor<3x8xf32>, %w: tensor<4x3x3x3xf32>, %none: none) {
  // expected-error @+1 {{X must have rank >= 3, got 2}}
  %y = onnx.Conv(%x, %w, %none) : (tensor<3x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

// Conv: unknown auto_pad values are rejected.
func.func @conv_auto_pad(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %none: none) {
  // expected-error @+1 {{unknown auto_pad 'SAME'}}
  %y = onnx.Conv(%x, %w, %none) {auto_pad = "SAME"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

// Conv: the operand count is fixed; a missing optional input is a none value.
func.func @conv_operands(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{expected 3 operands, but found 2}}
  %y = onnx.Conv(%x, %w) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<*xf32>
  return
}

// -----

// ConvGrad: dW has W's shape.
func.func @conv_grad_dw(%dy: tensor<1x4x6x6xf32>, %x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{shape mismatch: dW is 'tensor<4x3x5x5xf32>' but W is 'tensor<4x3x3x3xf32>'}}
  %dx, %dw, %db = onnx.ConvGrad(%dy, %x, %w) : (tensor<1x4x6x6xf32>, tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> (none, tensor<4x3x5x5xf32>, none)
  return
}

// -----

// MaxPool: kernel_shape has one value per spatial dim.
func.func @maxpool_kernel(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{kernel_shape has 3 values but the input has 2 spatial dims (expected 2)}}
  %y, %i = onnx.MaxPool(%x) {kernel_shape = array<i64: 2, 2, 2>} : (tensor<1x3x8x8xf32>) -> (tensor<*xf32>, none)
  return
}

// -----

// MaxPool: kernel_shape is required.
func.func @maxpool_no_kernel(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{requires attribute 'kernel_shape'}}
  %y, %i = onnx.MaxPool(%x) : (tensor<1x3x8x8xf32>) -> (tensor<*xf32>, none)
  return
}

// -----

// MaxPoolGrad: the indices are i64 (flat) or ui8 (window positions).
func.func @maxpool_grad_indices(%dy: tensor<1x3x4x4xf32>, %i: tensor<1x3x4x4xi32>) {
  // expected-error @+1 {{Indices must be a tensor of i64 (flat indices) or ui8 (window positions), got 'i32'}}
  %dx = onnx.MaxPoolGrad(%dy, %i) {kernel_shape = array<i64: 2, 2>} : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xi32>) -> tensor<*xf32>
  return
}

// -----

// MaxPool: window positions (ui8 Indices) only where a byte holds them.
func.func @maxpool_positions_window(%x: tensor<1x3x17x16xf32>) {
  // expected-error @+1 {{window positions (ui8 Indices) need a window of at most 256 elements, kernel_shape [17, 16] has more}}
  %y, %i = onnx.MaxPool(%x) {kernel_shape = array<i64: 17, 16>} : (tensor<1x3x17x16xf32>) -> (tensor<1x3x1x1xf32>, tensor<1x3x1x1xui8>)
  return
}

// -----

// MaxPoolGrad: the same rule for the positions it reads.
func.func @maxpool_grad_positions_window(%dy: tensor<1x3x1x1xf32>, %i: tensor<1x3x1x1xui8>) {
  // expected-error @+1 {{window positions (ui8 Indices) need a window of at most 256 elements, kernel_shape [17, 16] has more}}
  %dx = onnx.MaxPoolGrad(%dy, %i) {kernel_shape = array<i64: 17, 16>} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xui8>) -> tensor<*xf32>
  return
}

// -----

// Gemm: inner dims must agree after the transposes.
func.func @gemm_inner(%a: tensor<2x5xf32>, %b: tensor<4x3xf32>, %none: none) {
  // expected-error @+1 {{inner dims differ: A 'tensor<2x5xf32>' and B 'tensor<4x3xf32>'}}
  %y = onnx.Gemm(%a, %b, %none) : (tensor<2x5xf32>, tensor<4x3xf32>, none) -> tensor<2x3xf32>
  return
}

// -----

// Gemm: A and B are matrices.
func.func @gemm_rank(%a: tensor<2x5x1xf32>, %b: tensor<5x3xf32>, %none: none) {
  // expected-error @+1 {{A must have rank 2, got 3}}
  %y = onnx.Gemm(%a, %b, %none) : (tensor<2x5x1xf32>, tensor<5x3xf32>, none) -> tensor<2x3xf32>
  return
}

// -----

// Add: operands must share an element type.
func.func @add_types(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{element type mismatch: A has 'f32' but B has 'i64'}}
  %c = onnx.Add(%a, %b) : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

// Sum: operands must broadcast.
func.func @sum_broadcast(%a: tensor<3x4xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{operand #1 of type 'tensor<5xf32>' does not broadcast with the others}}
  %c = onnx.Sum(%a, %b) : (tensor<3x4xf32>, tensor<5xf32>) -> tensor<3x4xf32>
  return
}

// -----

// Flatten: axis within [-rank, rank].
func.func @flatten_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 3 is out of range for rank 2}}
  %y = onnx.Flatten(%x) {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

// Reshape: the shape operand is a 1-d i64 tensor.
func.func @reshape_shape(%x: tensor<2x3xf32>, %s: tensor<2xi32>) {
  // expected-error @+1 {{shape must be a tensor of i64, got 'i32'}}
  %y = onnx.Reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<*xf32>
  return
}

// -----

// BatchNormInternal: per-channel vectors have C elements.
func.func @bn_channels(%x: tensor<2x4x5x5xf32>, %s: tensor<3xf32>, %v: tensor<4xf32>) {
  // expected-error @+1 {{scale has 3 elements but X has 4 channels}}
  %y, %a, %b, %c, %d = onnx.BatchNormInternal(%x, %s, %v, %v, %v) : (tensor<2x4x5x5xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x5x5xf32>, none, none, none, none)
  return
}

// -----

// BatchNormalizationGrad: dY and X have one shape.
func.func @bn_grad_shape(%dy: tensor<2x4x5x5xf32>, %x: tensor<2x4x6x6xf32>, %v: tensor<4xf32>) {
  // expected-error @+1 {{shape mismatch: dY is 'tensor<2x4x5x5xf32>' but X is 'tensor<2x4x6x6xf32>'}}
  %dx, %ds, %db = onnx.BatchNormalizationGrad(%dy, %x, %v, %v, %v) : (tensor<2x4x5x5xf32>, tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x6x6xf32>, none, none)
  return
}

// -----

// ReluGrad: dY and X have one shape.
func.func @relu_grad_shape(%dy: tensor<2x4xf32>, %x: tensor<2x5xf32>) {
  // expected-error @+1 {{shape mismatch: dY is 'tensor<2x4xf32>' but X is 'tensor<2x5xf32>'}}
  %dx = onnx.ReluGrad(%dy, %x) : (tensor<2x4xf32>, tensor<2x5xf32>) -> tensor<2x4xf32>
  return
}

// -----

// SoftmaxCrossEntropyLoss: labels are integers with one dim less than scores.
func.func @loss_labels(%s: tensor<8x10xf32>, %l: tensor<8x10xi64>, %none: none) {
  // expected-error @+1 {{labels 'tensor<8x10xi64>' must have one dim less than scores 'tensor<8x10xf32>'}}
  %o, %lp = onnx.SoftmaxCrossEntropyLoss(%s, %l, %none) : (tensor<8x10xf32>, tensor<8x10xi64>, none) -> (tensor<f32>, none)
  return
}

// -----

// SoftmaxCrossEntropyLossGrad: reduction is none, sum or mean.
func.func @loss_reduction(%dy: tensor<f32>, %lp: tensor<8x10xf32>, %l: tensor<8xi64>, %none: none) {
  // expected-error @+1 {{reduction must be none, sum or mean, got 'max'}}
  %d = onnx.SoftmaxCrossEntropyLossGrad(%dy, %lp, %l, %none, %none) {reduction = "max"} : (tensor<f32>, tensor<8x10xf32>, tensor<8xi64>, none, none) -> tensor<8x10xf32>
  return
}

// -----

// InPlaceAccumulatorV2: the gradient has the buffer's shape.
func.func @accumulate_shape(%buf: tensor<3x4xf32>, %g: tensor<4x3xf32>, %f: tensor<1xi1>) {
  // expected-error @+1 {{shape mismatch: accumulation_buffer is 'tensor<3x4xf32>' but value is 'tensor<4x3xf32>'}}
  %flag, %out = onnx.InPlaceAccumulatorV2(%buf, %g, %f) : (tensor<3x4xf32>, tensor<4x3xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  return
}

// -----

// InPlaceAccumulatorV2: the overwrite flag is a one-element bool.
func.func @accumulate_flag(%buf: tensor<3x4xf32>, %g: tensor<3x4xf32>, %f: tensor<1xf32>) {
  // expected-error @+1 {{overwrite_flag must be a bool (i1) tensor, got 'f32'}}
  %flag, %out = onnx.InPlaceAccumulatorV2(%buf, %g, %f) : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<1xf32>) -> (tensor<1xi1>, none)
  return
}

// -----

// AdamWOptimizer: the learning rate holds one element.
func.func @adamw_lr(%lr: tensor<2xf32>, %step: tensor<1xi64>, %s: !onnx.seq<tensor<*xf32>>, %none: none) {
  // expected-error @+1 {{lr must hold one element, got 'tensor<2xf32>'}}
  %f, %a, %b, %c = onnx.AdamWOptimizer(%lr, %step, %s, %s, %s, %s, %none) : (tensor<2xf32>, tensor<1xi64>, !onnx.seq<tensor<*xf32>>, !onnx.seq<tensor<*xf32>>, !onnx.seq<tensor<*xf32>>, !onnx.seq<tensor<*xf32>>, none) -> (tensor<1xi1>, none, none, none)
  return
}

// -----

// SGDOptimizerV2: weights and gradients are both sequences or both tensors.
func.func @sgd_kinds(%lr: tensor<1xf32>, %w: tensor<4xf32>, %g: !onnx.seq<tensor<*xf32>>, %none: none) {
  // expected-error @+1 {{weights, gradients and moments must all be sequences or all tensors}}
  %f, %a, %b = onnx.SGDOptimizerV2(%lr, %w, %g, %none, %none) : (tensor<1xf32>, tensor<4xf32>, !onnx.seq<tensor<*xf32>>, none, none) -> (tensor<1xi1>, none, none)
  return
}

// -----

// Cast: the result element type is the one `to` names.
func.func @cast_to(%x: tensor<4xf32>) {
  // expected-error @+1 {{result element type 'f32' is not 'to' ('f64')}}
  %y = onnx.Cast(%x) {to = 11 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Constant: exactly one value attribute.
func.func @constant_values() {
  // expected-error @+1 {{needs exactly one value attribute, got 2}}
  %c = onnx.Constant {value_float = 1.0 : f32, value_int = 1 : i64} : tensor<f32>
  return
}

// -----

// Scale: the scale is a one-element tensor.
func.func @scale_one(%x: tensor<4xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{scale must hold one element, got 'tensor<2xf32>'}}
  %y = onnx.Scale(%x, %s) : (tensor<4xf32>, tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

// ONNX INT attributes are i64; other attribute kinds are rejected.
func.func @attr_kind(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{attribute 'axis' failed to satisfy constraint: 64-bit integer attribute}}
  %y = onnx.Flatten(%x) {axis = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

// Reshape: a constant target shape has no dims below -1.
func.func @reshape_negative(%x: tensor<2x3xf32>) {
  %s = onnx.Constant {value_ints = array<i64: 2, -3>} : tensor<2xi64>
  // expected-error @+1 {{shape has an invalid dim -3}}
  %y = onnx.Reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

// Transpose: perm must be a permutation of the data's dims.
func.func @transpose_perm(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{perm [0, 2, 2] is not a permutation}}
  %y = onnx.Transpose(%x) {perm = array<i64: 0, 2, 2>} : (tensor<2x3x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

// Transpose: perm has one entry per dim of the data.
func.func @transpose_perm_rank(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{data must have rank 2, got 3}}
  %y = onnx.Transpose(%x) {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  return
}

// -----

// Softmax: the axis lies in [-rank, rank).
func.func @softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %y = onnx.Softmax(%x) {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// LayerNormalization: the scale holds the normalized dims' elements.
func.func @layernorm_scale(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>, %none: none) {
  // expected-error @+1 {{Scale has 3 elements but the normalized dims of X hold 4}}
  %y, %m, %s = onnx.LayerNormalization(%x, %g, %none) : (tensor<2x3x4xf32>, tensor<3xf32>, none) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  return
}

// -----

// LayerNormalizationGrad: the axis lies in [-rank, rank).
func.func @layernorm_grad_axis(%dy: tensor<2x4xf32>, %x: tensor<2x4xf32>, %g: tensor<4xf32>, %m: tensor<2x1xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %dx, %dg, %db = onnx.LayerNormalizationGrad(%dy, %x, %g, %m, %m) {axis = 2 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// FusedMatMul: op(A)'s columns must equal op(B)'s rows.
func.func @fused_matmul_inner(%a: tensor<4x3x5xf32>, %b: tensor<4x6x5xf32>) {
  // expected-error @+1 {{inner dims differ: A 'tensor<4x3x5xf32>' and B 'tensor<4x6x5xf32>'}}
  %y = onnx.FusedMatMul(%a, %b) : (tensor<4x3x5xf32>, tensor<4x6x5xf32>) -> tensor<4x3x5xf32>
  return
}

// -----

// FusedMatMul: both operands have rank >= 2.
func.func @fused_matmul_rank(%a: tensor<5xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+1 {{A must have rank >= 2, got 1}}
  %y = onnx.FusedMatMul(%a, %b) : (tensor<5xf32>, tensor<5x6xf32>) -> tensor<6xf32>
  return
}

// -----

// BiasGelu: B spans A's last dim.
func.func @bias_gelu_bias(%a: tensor<2x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{B has 4 elements but A's last dim is 8}}
  %y = onnx.BiasGelu(%a, %b) : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Slice: constant axes are in range and distinct.
func.func @slice_axes(%x: tensor<2x8xf32>, %s: tensor<2xi64>, %e: tensor<2xi64>) {
  %axes = onnx.Initializer "axes" dense<[1, -1]> : tensor<2xi64>
  %none = onnx.NoValue
  // expected-error @+1 {{axis -1 appears twice}}
  %y = onnx.Slice(%x, %s, %e, %axes, %none) : (tensor<2x8xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, none) -> tensor<2x?xf32>
  return
}

// -----

// Slice: a constant step is never 0.
func.func @slice_step(%x: tensor<2x8xf32>, %s: tensor<1xi64>, %e: tensor<1xi64>, %a: tensor<1xi64>) {
  %steps = onnx.Initializer "steps" dense<0> : tensor<1xi64>
  // expected-error @+1 {{steps must not be 0}}
  %y = onnx.Slice(%x, %s, %e, %a, %steps) : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x?xf32>
  return
}

// -----

// Squeeze: only dims of size 1 can go.
func.func @squeeze_not_one(%x: tensor<2x3xf32>) {
  %axes = onnx.Initializer "axes" dense<[1]> : tensor<1xi64>
  // expected-error @+1 {{axis 1 has size 3, not 1}}
  %y = onnx.Squeeze(%x, %axes) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2xf32>
  return
}

// -----

// Unsqueeze: axes index the result, whose rank is the data's plus the axes'.
func.func @unsqueeze_axis(%x: tensor<2x3xf32>) {
  %axes = onnx.Initializer "axes" dense<[3]> : tensor<1xi64>
  // expected-error @+1 {{axis 3 is out of range for rank 3}}
  %y = onnx.Unsqueeze(%x, %axes) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
  return
}

// -----

// ReduceMean: attribute axes are in range.
func.func @reduce_mean_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = onnx.ReduceMean(%x) {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// SoftmaxGrad_13: dY and Y have one shape.
func.func @softmax_grad_shape(%dy: tensor<2x3xf32>, %y: tensor<2x4xf32>) {
  // expected-error @+1 {{shape mismatch: dY is 'tensor<2x3xf32>' but Y is 'tensor<2x4xf32>'}}
  %dx = onnx.SoftmaxGrad_13(%dy, %y) : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Dropout: the ratio is one float element.
func.func @dropout_ratio(%x: tensor<2x8xf32>, %r: tensor<2xf32>, %t: tensor<i1>) {
  // expected-error @+1 {{ratio must hold one element, got 'tensor<2xf32>'}}
  %y, %m = onnx.Dropout(%x, %r, %t) : (tensor<2x8xf32>, tensor<2xf32>, tensor<i1>) -> (tensor<2x8xf32>, tensor<2x8xi1>)
  return
}

// -----

// Dropout: training_mode is a bool.
func.func @dropout_training_mode(%x: tensor<2x8xf32>, %r: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{training_mode must be a bool (i1) tensor, got 'f32'}}
  %y, %m = onnx.Dropout(%x, %r, %t) : (tensor<2x8xf32>, tensor<f32>, tensor<f32>) -> (tensor<2x8xf32>, tensor<2x8xi1>)
  return
}

// -----

// Dropout: the mask has the input's shape.
func.func @dropout_mask_shape(%x: tensor<2x8xf32>, %r: tensor<f32>, %t: tensor<i1>) {
  // expected-error @+1 {{shape mismatch: data is 'tensor<2x8xf32>' but mask is 'tensor<2x4xi1>'}}
  %y, %m = onnx.Dropout(%x, %r, %t) : (tensor<2x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x8xf32>, tensor<2x4xi1>)
  return
}

// -----

// DropoutGrad: the mask is a bool tensor.
func.func @dropout_grad_mask_type(%dy: tensor<2x8xf32>, %m: tensor<2x8xf32>, %none: none) {
  // expected-error @+1 {{mask must be a bool (i1) tensor, got 'f32'}}
  %dx = onnx.DropoutGrad(%dy, %m, %none, %none) : (tensor<2x8xf32>, tensor<2x8xf32>, none, none) -> tensor<2x8xf32>
  return
}

// -----

// Clip: min is one element.
func.func @clip_min(%x: tensor<2x8xf32>, %lo: tensor<2xf32>, %none: none) {
  // expected-error @+1 {{min must hold one element, got 'tensor<2xf32>'}}
  %y = onnx.Clip(%x, %lo, %none) : (tensor<2x8xf32>, tensor<2xf32>, none) -> tensor<2x8xf32>
  return
}

// -----

// GreaterOrEqual: the result is bool.
func.func @compare_result(%a: tensor<2x8xf32>, %b: tensor<f32>) {
  // expected-error @+1 {{result must be a bool (i1) tensor, got 'f32'}}
  %c = onnx.GreaterOrEqual(%a, %b) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  return
}

// -----

// LessOrEqual: the operands broadcast.
func.func @compare_broadcast(%a: tensor<2x8xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{operands 'tensor<2x8xf32>' and 'tensor<3xf32>' do not broadcast}}
  %c = onnx.LessOrEqual(%a, %b) : (tensor<2x8xf32>, tensor<3xf32>) -> tensor<2x8xi1>
  return
}

// -----

// And: the operands are bool.
func.func @and_operands(%a: tensor<2xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{A must be a bool (i1) tensor, got 'f32'}}
  %c = onnx.And(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  return
}

// -----

// Sigmoid: the input is float.
func.func @sigmoid_int(%x: tensor<4xi64>) {
  // expected-error @+1 {{X must have a float element type, got 'i64'}}
  %y = onnx.Sigmoid(%x) : (tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// Tanh: the output has the input's shape.
func.func @tanh_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{shape mismatch: input is 'tensor<4xf32>' but output is 'tensor<5xf32>'}}
  %y = onnx.Tanh(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

// SigmoidGrad: dY and Y share a shape.
func.func @sigmoid_grad_shape(%dy: tensor<2x4xf32>, %y: tensor<2x5xf32>) {
  // expected-error @+1 {{shape mismatch: dY is 'tensor<2x4xf32>' but Y is 'tensor<2x5xf32>'}}
  %dx = onnx.SigmoidGrad(%dy, %y) : (tensor<2x4xf32>, tensor<2x5xf32>) -> tensor<2x4xf32>
  return
}

// -----

// TanhGrad: one element type.
func.func @tanh_grad_type(%dy: tensor<4xf16>, %y: tensor<4xf32>) {
  // expected-error @+1 {{element type mismatch: dY has 'f16' but Y has 'f32'}}
  %dx = onnx.TanhGrad(%dy, %y) : (tensor<4xf16>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// AveragePool: count_include_pad is 0 or 1.
func.func @avgpool_count_include_pad(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{count_include_pad must be 0 or 1, got 2}}
  %y = onnx.AveragePool(%x) {count_include_pad = 2 : i64, kernel_shape = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  return
}

// -----

// AveragePool: a pad is smaller than the kernel.
func.func @avgpool_pads(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{pads [2, 0, 0, 0] must be smaller than kernel_shape [2, 2]}}
  %y = onnx.AveragePool(%x) {kernel_shape = array<i64: 2, 2>, pads = array<i64: 2, 0, 0, 0>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x5x3xf32>
  return
}

// -----

// AveragePoolGrad: kernel_shape has one value per spatial dim.
func.func @avgpool_grad_kernel(%dy: tensor<1x2x2x2xf32>) {
  // expected-error @+1 {{kernel_shape has 1 values but the input has 2 spatial dims (expected 2)}}
  %dx = onnx.AveragePoolGrad(%dy) {kernel_shape = array<i64: 2>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  return
}

// -----

// Pad: two pads per dim.
func.func @pad_count(%x: tensor<2x3xf32>, %p: tensor<3xi64>, %none: none) {
  // expected-error @+1 {{pads has 3 values but data has rank 2 (expected 4)}}
  %y = onnx.Pad(%x, %p, %none, %none) : (tensor<2x3xf32>, tensor<3xi64>, none, none) -> tensor<2x3xf32>
  return
}

// -----

// Pad: a known mode.
func.func @pad_mode(%x: tensor<2x3xf32>, %p: tensor<4xi64>, %none: none) {
  // expected-error @+1 {{unknown mode 'mirror'}}
  %y = onnx.Pad(%x, %p, %none, %none) {mode = "mirror"} : (tensor<2x3xf32>, tensor<4xi64>, none, none) -> tensor<2x3xf32>
  return
}

// -----

// Pad: constant_value is one element of data's type.
func.func @pad_value(%x: tensor<2x3xf32>, %p: tensor<4xi64>, %v: tensor<2xf32>, %none: none) {
  // expected-error @+1 {{constant_value must hold one element, got 'tensor<2xf32>'}}
  %y = onnx.Pad(%x, %p, %v, %none) : (tensor<2x3xf32>, tensor<4xi64>, tensor<2xf32>, none) -> tensor<2x3xf32>
  return
}

// -----

// Neg: float or signed integer.
func.func @neg_bool(%x: tensor<4xi1>) {
  // expected-error @+1 {{X must have a float or signed integer element type, got 'i1'}}
  %y = onnx.Neg(%x) : (tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

// Pow: the operands broadcast.
func.func @pow_broadcast(%x: tensor<2x8xf32>, %y: tensor<3xf32>) {
  // expected-error @+1 {{operands 'tensor<2x8xf32>' and 'tensor<3xf32>' do not broadcast}}
  %z = onnx.Pow(%x, %y) : (tensor<2x8xf32>, tensor<3xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Sqrt: the input is float.
func.func @sqrt_int(%x: tensor<4xi64>) {
  // expected-error @+1 {{X must have a float element type, got 'i64'}}
  %y = onnx.Sqrt(%x) : (tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// Erf: the result keeps the input's shape.
func.func @erf_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{shape mismatch: input is 'tensor<4xf32>' but output is 'tensor<5xf32>'}}
  %y = onnx.Erf(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

// Exp: the input is float.
func.func @exp_int(%x: tensor<4xi64>) {
  // expected-error @+1 {{input must have a float element type, got 'i64'}}
  %y = onnx.Exp(%x) : (tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// Gelu: the result keeps X's shape.
func.func @gelu_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{shape mismatch: X is 'tensor<4xf32>' but Y is 'tensor<5xf32>'}}
  %y = onnx.Gelu(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

// GeluGrad: X is float.
func.func @gelu_grad_int(%dy: tensor<4xi64>, %x: tensor<4xi64>) {
  // expected-error @+1 {{X must have a float element type, got 'i64'}}
  %y = onnx.GeluGrad(%dy, %x) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// QuickGelu: alpha is finite.
func.func @quick_gelu_alpha(%x: tensor<4xf32>) {
  // expected-error @+1 {{alpha must be finite}}
  %y = onnx.QuickGelu(%x) {alpha = 0x7FC00000 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// QuickGelu: the result keeps X's shape.
func.func @quick_gelu_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{shape mismatch: X is 'tensor<4xf32>' but Y is 'tensor<5xf32>'}}
  %y = onnx.QuickGelu(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

// QuickGeluGrad: dX has X's shape.
func.func @quick_gelu_grad_shape(%dy: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{shape mismatch: dX is 'tensor<3xf32>' but X is 'tensor<4xf32>'}}
  %dx = onnx.QuickGeluGrad(%dy, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

// QuickGeluGrad: X is float.
func.func @quick_gelu_grad_int(%dy: tensor<4xi64>, %x: tensor<4xi64>) {
  // expected-error @+1 {{X must have a float element type, got 'i64'}}
  %dx = onnx.QuickGeluGrad(%dy, %x) {alpha = 1.0 : f32} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// ConstantOfShape: the input is a 1-d i64 shape.
func.func @constant_of_shape_input(%s: tensor<2x2xi64>) {
  // expected-error @+1 {{input must have rank 1, got 2}}
  %y = onnx.ConstantOfShape(%s) : (tensor<2x2xi64>) -> tensor<*xf32>
  return
}

// -----

// ConstantOfShape: value holds one element.
func.func @constant_of_shape_value(%s: tensor<2xi64>) {
  // expected-error @+1 {{value must hold one element, got 'tensor<2xf32>'}}
  %y = onnx.ConstantOfShape(%s) {value = dense<[1.0, 2.0]> : tensor<2xf32>} : (tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

// ConstantOfShape: the result takes value's element type (f32 without one).
func.func @constant_of_shape_type(%s: tensor<2xi64>) {
  // expected-error @+1 {{the result has element type 'i64' but value gives 'f32'}}
  %y = onnx.ConstantOfShape(%s) : (tensor<2xi64>) -> tensor<?x?xi64>
  return
}

// -----

// ConstantOfShape: the result's rank is the input's length.
func.func @constant_of_shape_rank(%s: tensor<3xi64>) {
  // expected-error @+1 {{the result 'tensor<?x?xf32>' must have rank 3, the length of input}}
  %y = onnx.ConstantOfShape(%s) : (tensor<3xi64>) -> tensor<?x?xf32>
  return
}

// -----

// ConstantOfShape: a constant input gives the result's dims.
func.func @constant_of_shape_dims() {
  %s = onnx.Constant {value = dense<[2, 3]> : tensor<2xi64>} : tensor<2xi64>
  // expected-error @+1 {{the result 'tensor<2x4xf32>' does not have the shape [2, 3] of input}}
  %y = onnx.ConstantOfShape(%s) : (tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

// ConstantOfShape: no negative dims.
func.func @constant_of_shape_negative() {
  %s = onnx.Constant {value = dense<[2, -1]> : tensor<2xi64>} : tensor<2xi64>
  // expected-error @+1 {{input has a negative dim -1}}
  %y = onnx.ConstantOfShape(%s) : (tensor<2xi64>) -> tensor<2x?xf32>
  return
}

// -----

// Gather: axis lies in [-rank, rank) of data.
func.func @gather_axis(%d: tensor<4x8xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = onnx.Gather(%d, %i) {axis = 2 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  return
}

// -----

// Gather: the result has rank r + q - 1.
func.func @gather_rank(%d: tensor<4x8xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{output must have rank 2 (data rank + indices rank - 1), got 3}}
  %y = onnx.Gather(%d, %i) {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8x1xf32>
  return
}

// -----

// Gather: indices are integers.
func.func @gather_indices(%d: tensor<4x8xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  %y = onnx.Gather(%d, %i) {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<3x8xf32>
  return
}

// -----

// Concat: the inputs agree on every dim but the axis.
func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{inputs differ in dim 0 (not the axis): 2 and 4}}
  %y = onnx.Concat(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

// Concat: the inputs share a rank.
func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+1 {{inputs differ in rank: 2 and 3}}
  %y = onnx.Concat(%a, %b) {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Concat: the inputs share an element type.
func.func @concat_dtype(%a: tensor<2xf32>, %b: tensor<2xi64>) {
  // expected-error @+1 {{element type mismatch: an input has 'f32' but an input has 'i64'}}
  %y = onnx.Concat(%a, %b) {axis = 0 : i64} : (tensor<2xf32>, tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

// ConcatTraining: one length per input.
func.func @concat_training_lengths(%a: tensor<2xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{per_input_length must have 2 elements, got 3}}
  %y, %l = onnx.ConcatTraining(%a, %b) {axis = 0 : i64} : (tensor<2xf32>, tensor<2xf32>) -> (tensor<4xf32>, tensor<3xi64>)
  return
}

// -----

// SplitTraining: split is a 1-d i64 tensor.
func.func @split_training_split(%x: tensor<4xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{split must be a tensor of i64, got 'f32'}}
  %a, %b = onnx.SplitTraining(%x, %s) {axis = 0 : i64} : (tensor<4xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

// GatherGrad: dY has rank r + q - 1.
func.func @gather_grad_rank(%s: tensor<2xi64>, %i: tensor<3xi64>, %dy: tensor<3xf32>) {
  // expected-error @+1 {{dY must have rank 2 (dX rank + indices rank - 1), got 1}}
  %dx = onnx.GatherGrad(%s, %i, %dy) {axis = 0 : i64} : (tensor<2xi64>, tensor<3xi64>, tensor<3xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Split: the constant lengths add up to the split dim.
func.func @split_sum(%x: tensor<2x10xf32>) {
  %s = onnx.Constant {value = dense<[4, 4]> : tensor<2xi64>} : tensor<2xi64>
  // expected-error @+1 {{split lengths sum to 8 but the input's dim 1 is 10}}
  %a, %b = onnx.Split(%x, %s) {axis = 1 : i64} : (tensor<2x10xf32>, tensor<2xi64>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  return
}

// -----

// Split: one length per output.
func.func @split_count(%x: tensor<2x10xf32>, %s: tensor<3xi64>) {
  // expected-error @+1 {{split must have 2 elements (one per output), got 3}}
  %a, %b = onnx.Split(%x, %s) {axis = 1 : i64} : (tensor<2x10xf32>, tensor<3xi64>) -> (tensor<2x5xf32>, tensor<2x5xf32>)
  return
}

// -----

// Split: num_outputs and the split input exclude each other.
func.func @split_both(%x: tensor<2x10xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{takes either the split input or num_outputs, not both}}
  %a, %b = onnx.Split(%x, %s) {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<2x10xf32>, tensor<2xi64>) -> (tensor<2x5xf32>, tensor<2x5xf32>)
  return
}

// -----

// Split: num_outputs is the number of results.
func.func @split_num_outputs(%x: tensor<2x10xf32>, %none: none) {
  // expected-error @+1 {{num_outputs is 3 but the op has 2 results}}
  %a, %b = onnx.Split(%x, %none) {axis = 1 : i64, num_outputs = 3 : i64} : (tensor<2x10xf32>, none) -> (tensor<2x5xf32>, tensor<2x5xf32>)
  return
}

// -----

// Split without lengths (opset 13-17): the dim divides evenly.
func.func @split_uneven(%x: tensor<2x10xf32>, %none: none) {
  // expected-error @+1 {{dim 1 of size 10 does not split into 3 equal pieces}}
  %a, %b, %c = onnx.Split(%x, %none) {axis = 1 : i64} : (tensor<2x10xf32>, none) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x4xf32>)
  return
}

// -----

// Split: each output is its piece of the input.
func.func @split_piece(%x: tensor<2x10xf32>, %none: none) {
  // expected-error @+1 {{output #1 'tensor<2x4xf32>' is not a piece of the input 'tensor<2x10xf32>' along axis 1}}
  %a, %b = onnx.Split(%x, %none) {axis = 1 : i64} : (tensor<2x10xf32>, none) -> (tensor<2x5xf32>, tensor<2x4xf32>)
  return
}

// -----

// Split: axis in range.
func.func @split_axis(%x: tensor<2x10xf32>, %none: none) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %a, %b = onnx.Split(%x, %none) {axis = 2 : i64} : (tensor<2x10xf32>, none) -> (tensor<2x5xf32>, tensor<2x5xf32>)
  return
}

// -----

// Equal: a bool result.
func.func @equal_result(%a: tensor<4xf32>, %b: tensor<f32>) {
  // expected-error @+1 {{result must be a bool (i1) tensor, got 'f32'}}
  %c = onnx.Equal(%a, %b) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Where: a bool condition.
func.func @where_cond(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{condition must be a bool (i1) tensor, got 'f32'}}
  %y = onnx.Where(%c, %x, %x) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Where: condition, X and Y broadcast together.
func.func @where_broadcast(%c: tensor<1x3xi1>, %x: tensor<f32>, %y: tensor<2x4xf32>) {
  // expected-error @+1 {{condition 'tensor<1x3xi1>', X 'tensor<f32>' and Y 'tensor<2x4xf32>' do not broadcast}}
  %o = onnx.Where(%c, %x, %y) : (tensor<1x3xi1>, tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Where: the output is the broadcast of the three.
func.func @where_output(%c: tensor<1x4xi1>, %x: tensor<f32>, %y: tensor<2x4xf32>) {
  // expected-error @+1 {{output 'tensor<4xf32>' is not the broadcast of condition, X and Y}}
  %o = onnx.Where(%c, %x, %y) : (tensor<1x4xi1>, tensor<f32>, tensor<2x4xf32>) -> tensor<4xf32>
  return
}

// -----

// Where: X and Y of one element type.
func.func @where_types(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{element type mismatch: X has 'f32' but Y has 'i64'}}
  %o = onnx.Where(%c, %x, %y) : (tensor<4xi1>, tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

// Range: scalar operands.
func.func @range_scalar(%s: tensor<1xi64>, %l: tensor<i64>) {
  // expected-error @+1 {{start must be a scalar, got 'tensor<1xi64>'}}
  %r = onnx.Range(%s, %l, %l) : (tensor<1xi64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

// Range: a zero delta never reaches the limit.
func.func @range_delta(%s: tensor<i64>, %l: tensor<i64>) {
  %d = onnx.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  // expected-error @+1 {{delta must not be 0}}
  %r = onnx.Range(%s, %l, %d) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

// Reciprocal: float.
func.func @reciprocal_int(%x: tensor<4xi64>) {
  // expected-error @+1 {{X must have a float element type, got 'i64'}}
  %y = onnx.Reciprocal(%x) : (tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// The family traits check every member alike; these checks are new for the
// ops below. Relu (UnaryElementwise): Y has X's shape.
func.func @relu_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{shape mismatch: X is 'tensor<4xf32>' but Y is 'tensor<5xf32>'}}
  %y = onnx.Relu(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

// BatchNormalizationGrad (ResultsLike<[1, 2, 2]>): dscale has scale's type.
func.func @bn_grad_dscale(%dy: tensor<2x4x5x5xf32>, %x: tensor<2x4x5x5xf32>, %v: tensor<4xf32>) {
  // expected-error @+1 {{shape mismatch: scale_grad is 'tensor<5xf32>' but scale is 'tensor<4xf32>'}}
  %dx, %ds, %db = onnx.BatchNormalizationGrad(%dy, %x, %v, %v, %v) : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x5x5xf32>, tensor<5xf32>, tensor<4xf32>)
  return
}

// -----

// Scale (ResultsLike<[0]>): the output has the input's element type.
func.func @scale_type(%x: tensor<4xf32>, %s: tensor<1xf32>) {
  // expected-error @+1 {{element type mismatch: output has 'f16' but input has 'f32'}}
  %y = onnx.Scale(%x, %s) : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf16>
  return
}

// -----

// ReluGrad (ElementwiseGradient): dX has the saved X's shape.
func.func @relu_grad_dx(%dy: tensor<2x4xf32>, %x: tensor<2x4xf32>) {
  // expected-error @+1 {{shape mismatch: dX is 'tensor<2x5xf32>' but X is 'tensor<2x4xf32>'}}
  %dx = onnx.ReluGrad(%dy, %x) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x5xf32>
  return
}

// -----

// ReduceSum (Reduction): the reduced tensor keeps the data's element type.
func.func @reduce_sum_type(%x: tensor<2x4xf32>) {
  %axes = onnx.Constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  // expected-error @+1 {{element type mismatch: data has 'f32' but reduced has 'i64'}}
  %y = onnx.ReduceSum(%x, %axes) : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xi64>
  return
}

// -----

// LeakyRelu (UnaryElementwise): float.
func.func @leaky_relu_int(%x: tensor<4xi64>) {
  // expected-error @+1 {{X must have a float element type, got 'i64'}}
  %y = onnx.LeakyRelu(%x) : (tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// LeakyReluGrad (ElementwiseGradient): dY and the saved Y have one shape.
func.func @leaky_relu_grad_shape(%dy: tensor<2x4xf32>, %y: tensor<2x5xf32>) {
  // expected-error @+1 {{shape mismatch: dY is 'tensor<2x4xf32>' but Y is 'tensor<2x5xf32>'}}
  %dx = onnx.LeakyReluGrad(%dy, %y) : (tensor<2x4xf32>, tensor<2x5xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Mod: ONNX defines a float Mod only as fmod.
func.func @mod_float_fmod0(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{fmod must be 1 for 'f32' operands (ONNX defines float Mod as fmod)}}
  %z = onnx.Mod(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Mod: fmod is 0 or 1.
func.func @mod_fmod(%x: tensor<4xi64>, %y: tensor<4xi64>) {
  // expected-error @+1 {{fmod must be 0 or 1, got 2}}
  %z = onnx.Mod(%x, %y) {fmod = 2 : i64} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// Mod: not of bools.
func.func @mod_bool(%x: tensor<4xi1>, %y: tensor<4xi1>) {
  // expected-error @+1 {{A must have an integer or float element type, got 'i1'}}
  %z = onnx.Mod(%x, %y) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

// Mod: the operands broadcast and have one element type.
func.func @mod_broadcast(%x: tensor<2x8xi64>, %y: tensor<3xi64>) {
  // expected-error @+1 {{operands 'tensor<2x8xi64>' and 'tensor<3xi64>' do not broadcast}}
  %z = onnx.Mod(%x, %y) : (tensor<2x8xi64>, tensor<3xi64>) -> tensor<2x8xi64>
  return
}
