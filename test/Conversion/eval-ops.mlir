// RUN: comet-opt %s --comet-lower-to-runtime=batch-size=2 -cse | FileCheck %s

// The module's constants come first: the folded Reshape targets of
// @attention_shape and @shuffle_shape, the ConcatTraining lengths of
// @shuffle_shape and @embedding, and the constants of @stochastic_depth
// (below).
// CHECK-DAG: memref.global "private" constant @[[TARGET:__comet_const_[0-9]+]] : memref<3xi64> = dense<[2, 8, 4]>
// CHECK-DAG: memref.global "private" constant @[[LEN:__comet_const_[0-9]+]] : memref<2xi64> = dense<[8, 4]>
// CHECK-DAG: memref.global "private" constant @[[SHUFFLE:__comet_const_[0-9]+]] : memref<3xi64> = dense<[2, 6, -1]>
// CHECK-DAG: memref.global "private" constant @[[SHUFFLE_LEN:__comet_const_[0-9]+]] : memref<3xi64> = dense<1>
// CHECK-DAG: memref.global "private" constant @[[ONES:__comet_const_[0-9]+]] : memref<2x1x1x1xf32> = dense<1.000000e+00>
// CHECK-DAG: memref.global "private" constant @[[DIMS:__comet_const_[0-9]+]] : memref<4xi64> = dense<[2, 1, 1, 1]>
// CHECK-DAG: memref.global "private" constant @[[LENS:__comet_const_[0-9]+]] : memref<4xi64> = dense<1>

// The attention's Reshape target as torch exports it: Shape of a tensor
// with a batch dim, Gather of its entries (a negative index too), an i64
// Cast, Unsqueeze and Concat. Once the batch is specialized the target
// folds to the constant [2, 8, 4]; no integer Gather or Concat kernel runs.
// CHECK-LABEL: func.func @attention_shape(
// CHECK-SAME: %{{.*}}: memref<2x8x4xf32> {comet.result = 0 : i64}
// CHECK-NOT: call @comet_rt_gather
// CHECK-NOT: call @comet_rt_concat_part
// CHECK: memref.get_global @[[TARGET]] : memref<3xi64>
// CHECK-NOT: call @comet_rt_gather
// CHECK-NOT: call @comet_rt_concat_part
// CHECK: call @comet_rt_reshape(
func.func @attention_shape(%x: tensor<?x4x8xf32>) -> tensor<?x8x4xf32> {
  %sh = onnx.Shape(%x) : (tensor<?x4x8xf32>) -> tensor<3xi64>
  %i0 = onnx.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %im1 = onnx.Constant {value = dense<-1> : tensor<i64>} : tensor<i64>
  %ax = onnx.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %four = onnx.Constant {value = dense<4> : tensor<1xi64>} : tensor<1xi64>
  %b = onnx.Gather(%sh, %i0) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %n = onnx.Gather(%sh, %im1) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %nc = onnx.Cast(%n) {to = 7 : i64} : (tensor<i64>) -> tensor<i64>
  %bu = onnx.Unsqueeze(%b, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %nu = onnx.Unsqueeze(%nc, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %t = onnx.Concat(%bu, %nu, %four) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %y = onnx.Reshape(%x, %t) : (tensor<?x4x8xf32>, tensor<3xi64>) -> tensor<?x8x4xf32>
  return %y : tensor<?x8x4xf32>
}

// ORT's training graphs write every Concat as ConcatTraining, those that
// build a Reshape target too (a channel shuffle's): the target folds as
// with Concat, and its per-input lengths are a constant as well.
// CHECK-LABEL: func.func @shuffle_shape(
// CHECK-SAME: %{{.*}}: memref<2x6x2xf32> {comet.result = 0 : i64}, %{{.*}}: memref<3xi64> {comet.result = 1 : i64}
// CHECK-NOT: call @comet_rt_concat_part
// CHECK: memref.get_global @[[SHUFFLE:__comet_const_[0-9]+]] : memref<3xi64>
// CHECK: memref.get_global @[[SHUFFLE_LEN:__comet_const_[0-9]+]] : memref<3xi64>
// CHECK: call @comet_rt_reshape(
func.func @shuffle_shape(%x: tensor<?x3x4xf32>) -> (tensor<?x?x?xf32>, tensor<3xi64>) {
  %sh = onnx.Shape(%x) : (tensor<?x3x4xf32>) -> tensor<3xi64>
  %i0 = onnx.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %ax = onnx.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %six = onnx.Constant {value = dense<6> : tensor<1xi64>} : tensor<1xi64>
  %m1 = onnx.Constant {value = dense<-1> : tensor<1xi64>} : tensor<1xi64>
  %b = onnx.Gather(%sh, %i0) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %bu = onnx.Unsqueeze(%b, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %t, %len = onnx.ConcatTraining(%bu, %six, %m1) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> (tensor<3xi64>, tensor<3xi64>)
  %y = onnx.Reshape(%x, %t) : (tensor<?x3x4xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  return %y, %len : tensor<?x?x?xf32>, tensor<3xi64>
}

// The decomposed LayerNorm and GELU of an exported eval graph: Pow by a
// scalar and by a tensor, Sqrt and Erf each one kernel; Exp (of an
// unfused GELU's gradient) too.
// CHECK-LABEL: func.func @layer_norm_gelu(
// CHECK: call @comet_rt_pow(%arg0,
// CHECK: call @comet_rt_pow(%arg0,
// CHECK: call @comet_rt_sqrt(%arg0,
// CHECK: call @comet_rt_erf(%arg0,
// CHECK: call @comet_rt_exp(%arg0,
func.func @layer_norm_gelu(%x: tensor<?x8xf32>, %two: tensor<f32>, %e: tensor<8xf32>) -> tensor<?x8xf32> {
  %p = onnx.Pow(%x, %two) : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %q = onnx.Pow(%p, %e) : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %s = onnx.Sqrt(%q) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = onnx.Erf(%s) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %x2 = onnx.Exp(%r) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %x2 : tensor<?x8xf32>
}

// ORT's Gelu and GeluGrad (a GELU with no bias Add to fuse): one kernel
// each.
// CHECK-LABEL: func.func @gelu(
// CHECK: call @comet_rt_gelu(%arg0,
// CHECK: call @comet_rt_gelu_grad(%arg0,
func.func @gelu(%x: tensor<?x8xf32>, %dy: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %y = onnx.Gelu(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %dx = onnx.GeluGrad(%dy, %x) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y, %dx : tensor<?x8xf32>, tensor<?x8xf32>
}

// EfficientNet's SiLU (ORT's QuickGelu, alpha 1) and the stochastic
// depth's per-sample noise: ConstantOfShape over [batch, 1, 1, 1] as torch
// builds the shape (Shape, Gather, Unsqueeze) and ORT concatenates it
// (ConcatTraining). Once the batch is specialized the shape folds to
// [2, 1, 1, 1] (and its lengths to [1, 1, 1, 1]), and the noise is a
// constant of ones; QuickGeluGrad without an attribute takes ORT's default
// alpha 1.702.
// CHECK-LABEL: func.func @stochastic_depth(
// CHECK: %[[A1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: call @comet_rt_quick_gelu(%arg0, %{{.*}}, %{{.*}}, %[[A1]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, f32) -> i32
// CHECK-NOT: call @comet_rt_concat_part
// CHECK: memref.get_global @[[DIMS]] : memref<4xi64>
// CHECK: memref.get_global @[[LENS]] : memref<4xi64>
// CHECK: memref.get_global @[[ONES]] : memref<2x1x1x1xf32>
// CHECK: call @comet_rt_mul(
// CHECK: %[[A2:.*]] = arith.constant 1.702000e+00 : f32
// CHECK: call @comet_rt_quick_gelu_grad(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[A2]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, f32) -> i32
func.func @stochastic_depth(%x: tensor<?x4x3x3xf32>, %dy: tensor<?x4x3x3xf32>) -> (tensor<?x4x3x3xf32>, tensor<?x4x3x3xf32>, tensor<4xi64>) {
  %none = onnx.NoValue
  %q = onnx.QuickGelu(%x) {alpha = 1.0 : f32} : (tensor<?x4x3x3xf32>) -> tensor<?x4x3x3xf32>
  %sh = onnx.Shape(%q) : (tensor<?x4x3x3xf32>) -> tensor<4xi64>
  %i0 = onnx.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %ax = onnx.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %one = onnx.Constant {value = dense<1> : tensor<i64>} : tensor<i64>
  %n = onnx.Gather(%sh, %i0) {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %n1 = onnx.Unsqueeze(%n, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %one1 = onnx.Unsqueeze(%one, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %dims, %len = onnx.ConcatTraining(%n1, %one1, %one1, %one1) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> (tensor<4xi64>, tensor<4xi64>)
  %ones = onnx.ConstantOfShape(%dims) {value = dense<1.0> : tensor<1xf32>} : (tensor<4xi64>) -> tensor<?x1x1x1xf32>
  %y = onnx.Mul(%q, %ones) : (tensor<?x4x3x3xf32>, tensor<?x1x1x1xf32>) -> tensor<?x4x3x3xf32>
  %dx = onnx.QuickGeluGrad(%dy, %x) : (tensor<?x4x3x3xf32>, tensor<?x4x3x3xf32>) -> tensor<?x4x3x3xf32>
  return %y, %dx, %len : tensor<?x4x3x3xf32>, tensor<?x4x3x3xf32>, tensor<4xi64>
}

// An embedding and the gradients ORT builds for it: Gather of rows by i64
// ids (token ids cast from f32), ConcatTraining as one copy per input at
// offsets 0 and 8 of axis 2 plus the constant lengths [8, 4],
// SplitTraining as one copy per output, GatherGrad into the table.
// CHECK-LABEL: func.func @embedding(
// CHECK: call @comet_rt_cast_f32_i64(%arg0,
// CHECK: %[[C0:.*]] = arith.constant 0 : i64
// CHECK: call @comet_rt_gather(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[C0]]) : (!llvm.ptr, memref<*xf32>, memref<*xi64>, memref<*xf32>, i64) -> i32
// CHECK: %[[AX:.*]] = arith.constant 2 : i64
// CHECK: call @comet_rt_concat_part(%arg0, %[[EMB:.*]], %[[CAT:.*]], %[[AX]], %[[C0]])
// CHECK: %[[C8:.*]] = arith.constant 8 : i64
// CHECK: call @comet_rt_concat_part(%arg0, %{{.*}}, %[[CAT]], %[[AX]], %[[C8]])
// CHECK: memref.get_global @[[LEN]] : memref<2xi64>
// CHECK: call @comet_rt_split_part(%arg0, %[[DCAT:.*]], %[[DEMB:.*]], %[[AX]], %[[C0]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64) -> i32
// CHECK: call @comet_rt_split_part(%arg0, %[[DCAT]], %{{.*}}, %[[AX]], %[[C8]])
// CHECK: call @comet_rt_gather_grad(%arg0, %{{.*}}, %[[DEMB]], %{{.*}}, %[[C0]]) : (!llvm.ptr, memref<*xi64>, memref<*xf32>, memref<*xf32>, i64) -> i32
func.func @embedding(%tok: tensor<?x6xf32>, %w: tensor<16x8xf32>, %h: tensor<?x6x4xf32>, %dcat: tensor<?x6x12xf32>) -> (tensor<?x6x12xf32>, tensor<16x8xf32>, tensor<?x6x4xf32>) {
  %ids = onnx.Cast(%tok) {to = 7 : i64} : (tensor<?x6xf32>) -> tensor<?x6xi64>
  %emb = onnx.Gather(%w, %ids) {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x6xi64>) -> tensor<?x6x8xf32>
  %cat, %len = onnx.ConcatTraining(%emb, %h) {axis = 2 : i64} : (tensor<?x6x8xf32>, tensor<?x6x4xf32>) -> (tensor<?x6x12xf32>, tensor<2xi64>)
  %demb, %dh = onnx.SplitTraining(%dcat, %len) {axis = 2 : i64} : (tensor<?x6x12xf32>, tensor<2xi64>) -> (tensor<?x6x8xf32>, tensor<?x6x4xf32>)
  %shape = onnx.Shape(%w) : (tensor<16x8xf32>) -> tensor<2xi64>
  %dw = onnx.GatherGrad(%shape, %ids, %demb) {axis = 0 : i64} : (tensor<2xi64>, tensor<?x6xi64>, tensor<?x6x8xf32>) -> tensor<16x8xf32>
  return %cat, %dw, %dh : tensor<?x6x12xf32>, tensor<16x8xf32>, tensor<?x6x4xf32>
}
