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

// A channel shuffle and a channel split as torch exports them
// (torchvision's ShuffleNetV2, here 3 groups of 4 channels): the Reshape
// targets and the Slice bounds are computed from Shape at run time, and
// the exporter left every dim of the results `?`. Once the argument is
// specialized, Shape, Gather, Div, Unsqueeze, Concat and ConcatTraining
// (ORT's training graphs write every Concat so) fold, and so do the
// split point (C + 1) / 2 and its end: channels and spatial dims come out
// exact, not the batch, and the Conv after the split sees its 6 channels.
// CHECK-LABEL: func.func @channel_shuffle(
// CHECK-SAME: %{{.*}}: tensor<2x12x5x7xf32>, %{{.*}}: tensor<16x6x1x1xf32>) -> (tensor<2x6x5x7xf32>, tensor<2x16x5x7xf32>)
// CHECK: onnx.Reshape(%{{.*}}, %{{.*}}) : (tensor<2x12x5x7xf32>, tensor<5xi64>) -> tensor<2x3x4x5x7xf32>
// CHECK: onnx.Transpose(%{{.*}}) {{.*}} : (tensor<2x3x4x5x7xf32>) -> tensor<2x4x3x5x7xf32>
// CHECK: onnx.Reshape(%{{.*}}, %{{.*}}) : (tensor<2x4x3x5x7xf32>, tensor<4xi64>) -> tensor<2x12x5x7xf32>
// CHECK: onnx.Slice({{.*}}) : (tensor<2x12x5x7xf32>, {{.*}}) -> tensor<2x6x5x7xf32>
// CHECK: onnx.Slice({{.*}}) : (tensor<2x12x5x7xf32>, {{.*}}) -> tensor<2x6x5x7xf32>
// CHECK: onnx.Conv({{.*}}) {{.*}} : (tensor<2x6x5x7xf32>, tensor<16x6x1x1xf32>, none) -> tensor<2x16x5x7xf32>
// The memory report sizes the shuffled value as 2 x 12 x 5 x 7 floats.
// REPORT-LABEL: comet memory report: @channel_shuffle
// REPORT: shuffled activation 3360 [
func.func @channel_shuffle(%x: tensor<?x12x5x7xf32>, %w: tensor<16x6x1x1xf32>) -> (tensor<?x?x?x?xf32>, tensor<?x16x?x?xf32>) {
  %none = onnx.NoValue
  %i0 = onnx.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %i1 = onnx.Constant {value = dense<1> : tensor<i64>} : tensor<i64>
  %i2 = onnx.Constant {value = dense<2> : tensor<i64>} : tensor<i64>
  %i3 = onnx.Constant {value = dense<3> : tensor<i64>} : tensor<i64>
  %ax = onnx.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %one = onnx.Constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %two = onnx.Constant {value = dense<2> : tensor<1xi64>} : tensor<1xi64>
  %g = onnx.Constant {value = dense<3> : tensor<1xi64>} : tensor<1xi64>
  %gs = onnx.Constant {value = dense<3> : tensor<i64>} : tensor<i64>
  %m1 = onnx.Constant {value = dense<-1> : tensor<1xi64>} : tensor<1xi64>
  // x.view(b, groups, c // groups, h, w)
  %sh = onnx.Shape(%x) : (tensor<?x12x5x7xf32>) -> tensor<4xi64>
  %b = onnx.Gather(%sh, %i0) {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %c = onnx.Gather(%sh, %i1) {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %h = onnx.Gather(%sh, %i2) {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %wd = onnx.Gather(%sh, %i3) {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %cg = onnx.Div(%c, %gs) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %bu = onnx.Unsqueeze(%b, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %cgu = onnx.Unsqueeze(%cg, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %hu = onnx.Unsqueeze(%h, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %wu = onnx.Unsqueeze(%wd, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %t5 = onnx.Concat(%bu, %g, %cgu, %hu, %wu) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %r = onnx.Reshape(%x, %t5) : (tensor<?x12x5x7xf32>, tensor<5xi64>) -> tensor<?x?x?x?x?xf32>
  // transpose(1, 2), then view(b, -1, h, w)
  %tr = onnx.Transpose(%r) {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<?x?x?x?x?xf32>) -> tensor<?x?x?x?x?xf32>
  %t4, %len = onnx.ConcatTraining(%bu, %m1, %hu, %wu) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> (tensor<4xi64>, tensor<4xi64>)
  %y = onnx.Reshape(%tr, %t4) : (tensor<?x?x?x?x?xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32> loc("shuffled")
  // y.chunk(2, dim=1): split at (C + 1) // 2, the second part ends at twice that.
  %sy = onnx.Shape(%y) : (tensor<?x?x?x?xf32>) -> tensor<4xi64>
  %cy = onnx.Gather(%sy, %one) {axis = 0 : i64} : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %cy1 = onnx.Add(%cy, %one) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %half = onnx.Div(%cy1, %two) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %end = onnx.Mul(%half, %two) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %x1 = onnx.Slice(%y, %ax, %half, %one, %none) : (tensor<?x?x?x?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x?x?x?xf32>
  %x2 = onnx.Slice(%y, %half, %end, %one, %none) : (tensor<?x?x?x?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x?x?x?xf32>
  %z = onnx.Conv(%x2, %w, %none) {kernel_shape = array<i64: 1, 1>} : (tensor<?x?x?x?xf32>, tensor<16x6x1x1xf32>, none) -> tensor<?x16x?x?xf32>
  return %x1, %z : tensor<?x?x?x?xf32>, tensor<?x16x?x?xf32>
}

// -----

// A pooling gradient's dX: batch and channels are dY's, the spatial dims
// (which dY does not tell) the graph's type states.
// CHECK-LABEL: func.func @pool_grad(
// CHECK: onnx.MaxPoolGrad(%{{.*}}, %{{.*}}) {{.*}} : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xi64>) -> tensor<2x4x7x7xf32>
func.func @pool_grad(%dy: tensor<?x4x3x3xf32>, %i: tensor<?x4x3x3xi64>) -> tensor<?x?x7x7xf32> {
  %dx = onnx.MaxPoolGrad(%dy, %i) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<?x4x3x3xf32>, tensor<?x4x3x3xi64>) -> tensor<?x?x7x7xf32>
  return %dx : tensor<?x?x7x7xf32>
}

// -----

// MaxPool in ceil mode: a 2x2 window over a 1x1 map still gives one output
// (span < 0), and a last window that would start past the input is
// dropped (4 -> 2, not 3, for kernel 1 and stride 2); the Indices result
// gets the same shape as Y.
// CHECK-LABEL: func.func @maxpool_ceil(
// CHECK: onnx.MaxPool(%{{.*}}) {{.*}} : (tensor<2x8x1x1xf32>) -> (tensor<2x8x1x1xf32>, tensor<2x8x1x1xi64>)
// CHECK: onnx.MaxPool(%{{.*}}) {{.*}} : (tensor<2x8x4x4xf32>) -> (tensor<2x8x2x2xf32>, tensor<2x8x2x2xi64>)
func.func @maxpool_ceil(%x: tensor<?x8x1x1xf32>, %z: tensor<?x8x4x4xf32>) -> (tensor<?x8x1x1xf32>, tensor<?x8x?x?xi64>, tensor<?x8x?x?xf32>, tensor<?x8x?x?xi64>) {
  %y, %i = onnx.MaxPool(%x) {ceil_mode = 1 : i64, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x8x1x1xf32>) -> (tensor<?x8x1x1xf32>, tensor<?x8x?x?xi64>)
  %y2, %i2 = onnx.MaxPool(%z) {ceil_mode = 1 : i64, kernel_shape = array<i64: 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x8x4x4xf32>) -> (tensor<?x8x?x?xf32>, tensor<?x8x?x?xi64>)
  return %y, %i, %y2, %i2 : tensor<?x8x1x1xf32>, tensor<?x8x?x?xi64>, tensor<?x8x?x?xf32>, tensor<?x8x?x?xi64>
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

// ViT's class token, `class_token.expand(n, -1, -1)` as torch 1.13 exports
// it and ONNX Runtime leaves it in vit_b_16's training graph: the target
// [n, -1, -1] joins the batch (Shape, Gather, Unsqueeze) and two -1s, and
// Where(Equal(target, -1), 1, target) turns the -1s into 1s. Once the
// argument is specialized, Reshape, Equal and Where of i64 constants fold:
// the Expand is [2, 1, 8] and the tokens after the Concat [2, 5, 8].
// CHECK-LABEL: func.func @vit_class_token(
// CHECK-SAME: -> tensor<2x5x8xf32>
// CHECK: onnx.Equal(%{{.*}}, %{{.*}}) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
// CHECK: onnx.Where(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<3xi1>, tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
// CHECK: onnx.Expand(%{{.*}}, %{{.*}}) : (tensor<1x1x8xf32>, tensor<3xi64>) -> tensor<2x1x8xf32>
// CHECK: onnx.ConcatTraining(%{{.*}}, %{{.*}}) {axis = 1 : i64} : (tensor<2x1x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x5x8xf32>, tensor<2xi64>)
func.func @vit_class_token(%x: tensor<?x8x4xf32>, %cls: tensor<1x1x8xf32>) -> tensor<?x?x8xf32> {
  %i0 = onnx.Initializer "i0" dense<0> : tensor<i64>
  %ax = onnx.Initializer "ax" dense<0> : tensor<1xi64>
  %m1 = onnx.Initializer "m1" dense<-1> : tensor<1xi64>
  %neg = onnx.Initializer "neg" dense<-1> : tensor<3xi64>
  %ones = onnx.Initializer "ones" dense<1> : tensor<3xi64>
  %t = onnx.Transpose(%x) {perm = array<i64: 0, 2, 1>} : (tensor<?x8x4xf32>) -> tensor<?x4x8xf32>
  %sh = onnx.Shape(%t) : (tensor<?x4x8xf32>) -> tensor<3xi64>
  %n = onnx.Gather(%sh, %i0) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %n1 = onnx.Unsqueeze(%n, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %cat, %len = onnx.ConcatTraining(%n1, %m1, %m1) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> (tensor<3xi64>, tensor<3xi64>)
  %target = onnx.Reshape(%cat, %m1) : (tensor<3xi64>, tensor<1xi64>) -> tensor<3xi64>
  %eq = onnx.Equal(%target, %neg) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %shape = onnx.Where(%eq, %ones, %target) : (tensor<3xi1>, tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %e = onnx.Expand(%cls, %shape) : (tensor<1x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %c, %l = onnx.ConcatTraining(%e, %t) {axis = 1 : i64} : (tensor<?x?x8xf32>, tensor<?x4x8xf32>) -> (tensor<?x?x8xf32>, tensor<2xi64>)
  return %c : tensor<?x?x8xf32>
}

// -----

// Swin's window padding, F.pad(x, (0, 0, 0, pad_r, 0, pad_b)) with
// pad_b = (window - H % window) % window, as torch exports it for a 4x4
// map and window 7 (swin_t's third stage at 28x28): Mod and Sub of i64
// constants, then torch's pad list put in ONNX's order by a Reshape to
// [4, 2], a reversing Slice, a Transpose and a Reshape. All of it folds:
// pads [0, 0, 0, 0, 0, 3, 3, 0], a 7x7 result.
// CHECK-LABEL: func.func @swin_window_pad(
// CHECK-SAME: -> tensor<2x7x7x8xf32>
// CHECK: onnx.Mod(%{{.*}}, %{{.*}}) : (tensor<i64>, tensor<i64>) -> tensor<i64>
// CHECK: onnx.Slice({{.*}}) : (tensor<4x2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x2xi64>
// CHECK: onnx.Transpose(%{{.*}}) {perm = array<i64: 1, 0>} : (tensor<4x2xi64>) -> tensor<2x4xi64>
// CHECK: onnx.Pad({{.*}}) : (tensor<2x4x4x8xf32>, tensor<8xi64>, none, none) -> tensor<2x7x7x8xf32>
func.func @swin_window_pad(%x: tensor<?x4x4x8xf32>) -> tensor<?x?x?x?xf32> {
  %none = onnx.NoValue
  %win = onnx.Initializer "win" dense<7> : tensor<i64>
  %i1 = onnx.Initializer "i1" dense<1> : tensor<i64>
  %i2 = onnx.Initializer "i2" dense<2> : tensor<i64>
  %ax = onnx.Initializer "ax" dense<0> : tensor<1xi64>
  %z1 = onnx.Initializer "z1" dense<0> : tensor<1xi64>
  %z2 = onnx.Initializer "z2" dense<0> : tensor<2xi64>
  %pairs = onnx.Initializer "pairs" dense<[-1, 2]> : tensor<2xi64>
  %m1 = onnx.Initializer "m1" dense<-1> : tensor<1xi64>
  %end = onnx.Initializer "end" dense<-9223372036854775807> : tensor<1xi64>
  %sh = onnx.Shape(%x) : (tensor<?x4x4x8xf32>) -> tensor<4xi64>
  %h = onnx.Gather(%sh, %i1) {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %w = onnx.Gather(%sh, %i2) {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %hm = onnx.Mod(%h, %win) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %hs = onnx.Sub(%win, %hm) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %pb = onnx.Mod(%hs, %win) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %wm = onnx.Mod(%w, %win) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %ws = onnx.Sub(%win, %wm) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %pr = onnx.Mod(%ws, %win) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %pb1 = onnx.Unsqueeze(%pb, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %pr1 = onnx.Unsqueeze(%pr, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %p6, %l6 = onnx.ConcatTraining(%z1, %z1, %z1, %pr1, %z1, %pb1) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> (tensor<6xi64>, tensor<6xi64>)
  %p8, %l8 = onnx.ConcatTraining(%p6, %z2) {axis = 0 : i64} : (tensor<6xi64>, tensor<2xi64>) -> (tensor<8xi64>, tensor<2xi64>)
  %r = onnx.Reshape(%p8, %pairs) : (tensor<8xi64>, tensor<2xi64>) -> tensor<4x2xi64>
  %s = onnx.Slice(%r, %m1, %end, %ax, %m1) : (tensor<4x2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x2xi64>
  %t = onnx.Transpose(%s) {perm = array<i64: 1, 0>} : (tensor<4x2xi64>) -> tensor<2x4xi64>
  %pads = onnx.Reshape(%t, %m1) : (tensor<2x4xi64>, tensor<1xi64>) -> tensor<8xi64>
  %y = onnx.Pad(%x, %pads, %none, %none) : (tensor<?x4x4x8xf32>, tensor<8xi64>, none, none) -> tensor<?x?x?x?xf32>
  return %y : tensor<?x?x?x?xf32>
}
