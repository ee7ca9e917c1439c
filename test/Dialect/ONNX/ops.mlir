// RUN: comet-opt %s | comet-opt | FileCheck %s

// Valid ops parse, verify and print back in the generic ONNX form.
// CHECK-LABEL: func.func @forward
func.func @forward(%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<?x4x4x4xf32> {
  // CHECK: onnx.Conv(%{{.*}}, %{{.*}}, %{{.*}}) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>}
  %y = onnx.Conv(%x, %w, %b) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
  %r = onnx.Relu(%y) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  // CHECK: onnx.MaxPool
  %p, %i = onnx.MaxPool(%r) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x4x8x8xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xi64>)
  return %p : tensor<?x4x4x4xf32>
}

// Absent optional values are `none`; sequences have their own type.
// CHECK-LABEL: func.func @optional_and_sequences
func.func @optional_and_sequences(%dy: tensor<2x4x6x6xf32>, %x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %lr: tensor<1xf32>, %ps: !onnx.seq<tensor<*xf32>>, %gs: !onnx.seq<tensor<*xf32>>) -> tensor<1xi1> {
  // CHECK: onnx.ConvGrad({{.*}}) -> (none, tensor<4x3x3x3xf32>, tensor<4xf32>)
  %dx, %dw, %db = onnx.ConvGrad(%dy, %x, %w) {kernel_shape = array<i64: 3, 3>} : (tensor<2x4x6x6xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> (none, tensor<4x3x3x3xf32>, tensor<4xf32>)
  // CHECK: %[[NONE:.*]] = onnx.NoValue
  %none = onnx.NoValue
  // CHECK: onnx.SGDOptimizerV2(%{{.*}}, %{{.*}}, %{{.*}}, %[[NONE]], %[[NONE]]) : (tensor<1xf32>, !onnx.seq<tensor<*xf32>>, !onnx.seq<tensor<*xf32>>, none, none)
  %done, %nw, %nm = onnx.SGDOptimizerV2(%lr, %ps, %gs, %none, %none) : (tensor<1xf32>, !onnx.seq<tensor<*xf32>>, !onnx.seq<tensor<*xf32>>, none, none) -> (tensor<1xi1>, none, none)
  return %done : tensor<1xi1>
}

// Initializers hold dense_resource data.
// CHECK-LABEL: func.func @initializer
func.func @initializer() -> tensor<2xi64> {
  // CHECK: onnx.Initializer "axes" dense_resource<axes> : tensor<2xi64>
  %a = onnx.Initializer "axes" dense_resource<axes> : tensor<2xi64>
  return %a : tensor<2xi64>
}


// Reshape to a constant shape with 0 (copy) and -1 (infer).
// CHECK-LABEL: func.func @reshape_constant
func.func @reshape_constant(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  // CHECK: onnx.Constant {value_ints = array<i64: 0, -1>} : tensor<2xi64>
  %s = onnx.Constant {value_ints = array<i64: 0, -1>} : tensor<2xi64>
  %y = onnx.Reshape(%x, %s) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  return %y : tensor<2x12xf32>
}

{-#
  dialect_resources: {
    builtin: {
      axes: "0x080000000000000000000000FFFFFFFFFFFFFFFF"
    }
  }
#-}

// Dropout with its mask and DropoutGrad (ratio and training_mode are
// one-element inputs; absent ones are none).
// CHECK-LABEL: func.func @dropout
func.func @dropout(%x: tensor<?x16xf32>, %r: tensor<f32>, %t: tensor<i1>, %dy: tensor<?x16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  // CHECK: onnx.Dropout(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x16xf32>, tensor<f32>, tensor<i1>) -> (tensor<?x16xf32>, tensor<?x16xi1>)
  %y, %m = onnx.Dropout(%x, %r, %t) : (tensor<?x16xf32>, tensor<f32>, tensor<i1>) -> (tensor<?x16xf32>, tensor<?x16xi1>)
  %none = onnx.NoValue
  // CHECK: onnx.DropoutGrad(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x16xf32>, tensor<?x16xi1>, none, none) -> tensor<?x16xf32>
  %dx = onnx.DropoutGrad(%dy, %m, %none, %none) : (tensor<?x16xf32>, tensor<?x16xi1>, none, none) -> tensor<?x16xf32>
  return %y, %dx : tensor<?x16xf32>, tensor<?x16xf32>
}

// ReLU6 as MobileNetV2 exports it, and the gradient ORT builds for it.
// CHECK-LABEL: func.func @clip_and_its_gradient
func.func @clip_and_its_gradient(%x: tensor<?x8x4x4xf32>, %lo: tensor<f32>, %hi: tensor<f32>, %dy: tensor<?x8x4x4xf32>) -> (tensor<?x8x4x4xf32>, tensor<?x8x4x4xf32>) {
  // CHECK: onnx.Clip(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x8x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<?x8x4x4xf32>
  %y = onnx.Clip(%x, %lo, %hi) : (tensor<?x8x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<?x8x4x4xf32>
  // CHECK: onnx.GreaterOrEqual({{.*}}) -> tensor<?x8x4x4xi1>
  %ge = onnx.GreaterOrEqual(%x, %lo) : (tensor<?x8x4x4xf32>, tensor<f32>) -> tensor<?x8x4x4xi1>
  // CHECK: onnx.LessOrEqual({{.*}}) -> tensor<?x8x4x4xi1>
  %le = onnx.LessOrEqual(%x, %hi) : (tensor<?x8x4x4xf32>, tensor<f32>) -> tensor<?x8x4x4xi1>
  // CHECK: onnx.And({{.*}}) : (tensor<?x8x4x4xi1>, tensor<?x8x4x4xi1>) -> tensor<?x8x4x4xi1>
  %m = onnx.And(%ge, %le) : (tensor<?x8x4x4xi1>, tensor<?x8x4x4xi1>) -> tensor<?x8x4x4xi1>
  %f = onnx.Cast(%m) {to = 1 : i64} : (tensor<?x8x4x4xi1>) -> tensor<?x8x4x4xf32>
  %dx = onnx.Mul(%dy, %f) : (tensor<?x8x4x4xf32>, tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32>
  return %y, %dx : tensor<?x8x4x4xf32>, tensor<?x8x4x4xf32>
}

// Sigmoid, Tanh and AveragePool as torch exports them (nn.AvgPool2d with
// count_include_pad as a Pad and an unpadded AveragePool), and the gradients
// ORT builds for them: AveragePoolGrad, Pad by the Neg'ed pads, SigmoidGrad
// and TanhGrad reading the forward outputs.
// CHECK-LABEL: func.func @activations_and_average_pool
func.func @activations_and_average_pool(%x: tensor<?x4x8x8xf32>, %pads: tensor<8xi64>, %dy: tensor<?x4x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x8x8xf32>) {
  %none = onnx.NoValue
  // CHECK: %[[S:.*]] = onnx.Sigmoid(%{{.*}}) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  %s = onnx.Sigmoid(%x) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  // CHECK: %[[T:.*]] = onnx.Tanh(%[[S]]) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  %t = onnx.Tanh(%s) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  // CHECK: onnx.Pad(%[[T]], %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x4x8x8xf32>, tensor<8xi64>, none, none) -> tensor<?x4x8x8xf32>
  %p = onnx.Pad(%t, %pads, %none, %none) : (tensor<?x4x8x8xf32>, tensor<8xi64>, none, none) -> tensor<?x4x8x8xf32>
  // CHECK: onnx.AveragePool(%{{.*}}) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x4x8x8xf32>) -> tensor<?x4x4x4xf32>
  %y = onnx.AveragePool(%p) {count_include_pad = 0 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x4x8x8xf32>) -> tensor<?x4x4x4xf32>
  // CHECK: onnx.AveragePoolGrad(%{{.*}}) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x4x4x4xf32>) -> tensor<?x4x8x8xf32>
  %dp = onnx.AveragePoolGrad(%dy) {count_include_pad = 0 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x4x4x4xf32>) -> tensor<?x4x8x8xf32>
  // CHECK: onnx.Neg(%{{.*}}) : (tensor<8xi64>) -> tensor<8xi64>
  %np = onnx.Neg(%pads) : (tensor<8xi64>) -> tensor<8xi64>
  %dt = onnx.Pad(%dp, %np, %none, %none) : (tensor<?x4x8x8xf32>, tensor<8xi64>, none, none) -> tensor<?x4x8x8xf32>
  // CHECK: onnx.TanhGrad(%{{.*}}, %[[T]]) : (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  %ds = onnx.TanhGrad(%dt, %t) : (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  // CHECK: onnx.SigmoidGrad(%{{.*}}, %[[S]]) : (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  %dx = onnx.SigmoidGrad(%ds, %s) : (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  return %y, %dx : tensor<?x4x4x4xf32>, tensor<?x4x8x8xf32>
}

// EfficientNet's SiLU as ORT fuses it (QuickGelu with alpha 1, its
// gradient reading X) and ORT's default alpha (no attribute).
// CHECK-LABEL: func.func @quick_gelu
func.func @quick_gelu(%x: tensor<?x4x8x8xf32>, %dy: tensor<?x4x8x8xf32>) -> (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) {
  // CHECK: onnx.QuickGelu(%{{.*}}) {alpha = 1.000000e+00 : f32} : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  %y = onnx.QuickGelu(%x) {alpha = 1.0 : f32} : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  // CHECK: onnx.QuickGelu(%{{.*}}) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  %y2 = onnx.QuickGelu(%y) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  // CHECK: onnx.QuickGeluGrad(%{{.*}}, %{{.*}}) {alpha = 1.000000e+00 : f32} : (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  %dx = onnx.QuickGeluGrad(%dy, %x) {alpha = 1.0 : f32} : (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  return %y2, %dx : tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>
}

// torch's LeakyReLU and the gradient ORT builds from its output, with ONNX's
// default slope (no attribute) and torch's 0.1.
// CHECK-LABEL: func.func @leaky_relu
func.func @leaky_relu(%x: tensor<?x4x8x8xf32>, %dy: tensor<?x4x8x8xf32>) -> (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) {
  // CHECK: %[[Y:.*]] = onnx.LeakyRelu(%{{.*}}) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  %y = onnx.LeakyRelu(%x) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  // CHECK: onnx.LeakyReluGrad(%{{.*}}, %[[Y]]) {alpha = 1.000000e-01 : f32} : (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  %dx = onnx.LeakyReluGrad(%dy, %y) {alpha = 0.1 : f32} : (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  return %y, %dx : tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>
}

// ConstantOfShape: the stochastic depth's noise, ones over [batch, 1, 1, 1],
// and an i64 fill of a constant shape.
// CHECK-LABEL: func.func @constant_of_shape
func.func @constant_of_shape(%dims: tensor<4xi64>) -> (tensor<?x1x1x1xf32>, tensor<2x3xi64>) {
  // CHECK: onnx.ConstantOfShape(%{{.*}}) {value = dense<1.000000e+00> : tensor<1xf32>} : (tensor<4xi64>) -> tensor<?x1x1x1xf32>
  %ones = onnx.ConstantOfShape(%dims) {value = dense<1.0> : tensor<1xf32>} : (tensor<4xi64>) -> tensor<?x1x1x1xf32>
  %shape = onnx.Constant {value = dense<[2, 3]> : tensor<2xi64>} : tensor<2xi64>
  // CHECK: onnx.ConstantOfShape(%{{.*}}) {value = dense<7> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<2x3xi64>
  %sevens = onnx.ConstantOfShape(%shape) {value = dense<7> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<2x3xi64>
  return %ones, %sevens : tensor<?x1x1x1xf32>, tensor<2x3xi64>
}

// LayerNorm and GELU as torch exports them for eval (Pow, Sqrt, Erf), the
// attention's shape plumbing (Gather of a shape entry, Concat), an
// embedding (Gather of rows), ORT's Gelu/GeluGrad and the gradients ORT
// builds for them.
// CHECK-LABEL: func.func @eval_and_embedding_ops
func.func @eval_and_embedding_ops(%x: tensor<?x28x64xf32>, %two: tensor<f32>, %w: tensor<16x8xf32>, %ids: tensor<?x28xi64>, %h: tensor<?x28x8xf32>, %i0: tensor<i64>, %u: tensor<1xi64>, %shape: tensor<2xi64>) -> (tensor<?x28x64xf32>, tensor<3xi64>, tensor<16x8xf32>, tensor<?x28x8xf32>) {
  // CHECK: onnx.Pow(%{{.*}}, %{{.*}}) : (tensor<?x28x64xf32>, tensor<f32>) -> tensor<?x28x64xf32>
  %p = onnx.Pow(%x, %two) : (tensor<?x28x64xf32>, tensor<f32>) -> tensor<?x28x64xf32>
  // CHECK: onnx.Sqrt({{.*}}) -> tensor<?x28x64xf32>
  %s = onnx.Sqrt(%p) : (tensor<?x28x64xf32>) -> tensor<?x28x64xf32>
  // CHECK: onnx.Erf({{.*}}) -> tensor<?x28x64xf32>
  %e = onnx.Erf(%s) : (tensor<?x28x64xf32>) -> tensor<?x28x64xf32>
  // CHECK: onnx.Exp({{.*}}) -> tensor<?x28x64xf32>
  %ex = onnx.Exp(%e) : (tensor<?x28x64xf32>) -> tensor<?x28x64xf32>
  %sh = onnx.Shape(%x) : (tensor<?x28x64xf32>) -> tensor<3xi64>
  // CHECK: onnx.Gather({{.*}}) : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %g = onnx.Gather(%sh, %i0) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %gu = onnx.Unsqueeze(%g, %u) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  // CHECK: onnx.Concat({{.*}}) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %c = onnx.Concat(%gu, %u, %gu) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  // CHECK: onnx.Gather({{.*}}) : (tensor<16x8xf32>, tensor<?x28xi64>) -> tensor<?x28x8xf32>
  %emb = onnx.Gather(%w, %ids) {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x28xi64>) -> tensor<?x28x8xf32>
  // CHECK: onnx.Gelu({{.*}}) : (tensor<?x28x8xf32>) -> tensor<?x28x8xf32>
  %ge = onnx.Gelu(%emb) : (tensor<?x28x8xf32>) -> tensor<?x28x8xf32>
  // CHECK: onnx.GeluGrad({{.*}}) : (tensor<?x28x8xf32>, tensor<?x28x8xf32>) -> tensor<?x28x8xf32>
  %dge = onnx.GeluGrad(%ge, %emb) : (tensor<?x28x8xf32>, tensor<?x28x8xf32>) -> tensor<?x28x8xf32>
  // CHECK: onnx.ConcatTraining({{.*}}) {axis = 2 : i64} : (tensor<?x28x8xf32>, tensor<?x28x8xf32>) -> (tensor<?x28x16xf32>, tensor<2xi64>)
  %cat, %len = onnx.ConcatTraining(%emb, %h) {axis = 2 : i64} : (tensor<?x28x8xf32>, tensor<?x28x8xf32>) -> (tensor<?x28x16xf32>, tensor<2xi64>)
  // CHECK: onnx.SplitTraining({{.*}}) {axis = 2 : i64} : (tensor<?x28x16xf32>, tensor<2xi64>) -> (tensor<?x28x8xf32>, tensor<?x28x8xf32>)
  %d0, %d1 = onnx.SplitTraining(%cat, %len) {axis = 2 : i64} : (tensor<?x28x16xf32>, tensor<2xi64>) -> (tensor<?x28x8xf32>, tensor<?x28x8xf32>)
  // CHECK: onnx.GatherGrad({{.*}}) : (tensor<2xi64>, tensor<?x28xi64>, tensor<?x28x8xf32>) -> tensor<16x8xf32>
  %dw = onnx.GatherGrad(%shape, %ids, %d0) {axis = 0 : i64} : (tensor<2xi64>, tensor<?x28xi64>, tensor<?x28x8xf32>) -> tensor<16x8xf32>
  return %e, %c, %dw, %d1 : tensor<?x28x64xf32>, tensor<3xi64>, tensor<16x8xf32>, tensor<?x28x8xf32>
}

// A GPT-style decoder: q/k/v split by a constant `split` (opset 13) or into
// equal pieces (opset 18's num_outputs, the last one smaller), the causal
// mask (Equal of the mask to 0, Where -inf) and its gradient, the
// positions (Range) and the scale (Reciprocal) of the eval graph.
// CHECK-LABEL: func.func @gpt_ops
func.func @gpt_ops(%qkv: tensor<?x32x192xf32>, %mask: tensor<1x1x32x32xf32>, %att: tensor<?x4x32x32xf32>, %zero: tensor<f32>, %ninf: tensor<f32>, %n: tensor<i64>, %d: tensor<f32>, %w: tensor<?x10xf32>) -> (tensor<?x4x32x32xf32>, tensor<?xi64>, tensor<f32>) {
  %split = onnx.Constant {value = dense<64> : tensor<3xi64>} : tensor<3xi64>
  // CHECK: onnx.Split(%{{.*}}, %{{.*}}) {axis = 2 : i64} : (tensor<?x32x192xf32>, tensor<3xi64>) -> (tensor<?x32x64xf32>, tensor<?x32x64xf32>, tensor<?x32x64xf32>)
  %q, %k, %v = onnx.Split(%qkv, %split) {axis = 2 : i64} : (tensor<?x32x192xf32>, tensor<3xi64>) -> (tensor<?x32x64xf32>, tensor<?x32x64xf32>, tensor<?x32x64xf32>)
  %none = onnx.NoValue
  // CHECK: onnx.Split(%{{.*}}, %{{.*}}) {axis = -1 : i64, num_outputs = 4 : i64} : (tensor<?x10xf32>, none) -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x1xf32>)
  %a, %b, %c, %e = onnx.Split(%w, %none) {axis = -1 : i64, num_outputs = 4 : i64} : (tensor<?x10xf32>, none) -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x1xf32>)
  // CHECK: onnx.Equal(%{{.*}}, %{{.*}}) : (tensor<1x1x32x32xf32>, tensor<f32>) -> tensor<1x1x32x32xi1>
  %cond = onnx.Equal(%mask, %zero) : (tensor<1x1x32x32xf32>, tensor<f32>) -> tensor<1x1x32x32xi1>
  // CHECK: onnx.Where(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<1x1x32x32xi1>, tensor<f32>, tensor<?x4x32x32xf32>) -> tensor<?x4x32x32xf32>
  %m = onnx.Where(%cond, %ninf, %att) : (tensor<1x1x32x32xi1>, tensor<f32>, tensor<?x4x32x32xf32>) -> tensor<?x4x32x32xf32>
  %dm = onnx.Where(%cond, %zero, %m) : (tensor<1x1x32x32xi1>, tensor<f32>, tensor<?x4x32x32xf32>) -> tensor<?x4x32x32xf32>
  %s0 = onnx.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %s1 = onnx.Constant {value = dense<1> : tensor<i64>} : tensor<i64>
  // CHECK: onnx.Range(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %pos = onnx.Range(%s0, %n, %s1) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  // CHECK: onnx.Reciprocal(%{{.*}}) : (tensor<f32>) -> tensor<f32>
  %r = onnx.Reciprocal(%d) : (tensor<f32>) -> tensor<f32>
  return %dm, %pos, %r : tensor<?x4x32x32xf32>, tensor<?xi64>, tensor<f32>
}

// Mod as torch exports it: `%` of integer shape values (fmod 0, Swin's
// window padding), broadcast i64 tensors, and `torch.fmod` of floats
// (fmod 1).
// CHECK-LABEL: func.func @mod_ops
func.func @mod_ops(%h: tensor<i64>, %w: tensor<i64>, %a: tensor<2x3xi64>, %b: tensor<3xi64>, %x: tensor<?x4xf32>, %y: tensor<f32>) -> (tensor<i64>, tensor<2x3xi64>, tensor<?x4xf32>) {
  // CHECK: onnx.Mod(%{{.*}}, %{{.*}}) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %r = onnx.Mod(%h, %w) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  // CHECK: onnx.Mod(%{{.*}}, %{{.*}}) {fmod = 1 : i64} : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %c = onnx.Mod(%a, %b) {fmod = 1 : i64} : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  // CHECK: onnx.Mod(%{{.*}}, %{{.*}}) {fmod = 1 : i64} : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x4xf32>
  %f = onnx.Mod(%x, %y) {fmod = 1 : i64} : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x4xf32>
  return %r, %c, %f : tensor<i64>, tensor<2x3xi64>, tensor<?x4xf32>
}
