// RUN: comet-opt %s -split-input-file --comet-lower-to-runtime=batch-size=2 -cse | FileCheck %s

// A GPT's attention as ONNX Runtime's training graph has it: q, k and v by
// one Split of the qkv projection (a copy per output at offsets 0, 4 and 8
// of axis 2), the causal mask Where(Equal(mask, 0), -inf, scores) and its
// gradient Where(cond, 0, dY). The condition broadcasts from 1x1x4x4.
// CHECK-LABEL: func.func @attention(
// CHECK: call @comet_rt_split_part(%{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c0_i64)
// CHECK: call @comet_rt_split_part(%{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c4_i64)
// CHECK: call @comet_rt_split_part(%{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c8_i64)
// COMET_RT_COMPARE_EQ is 2.
// CHECK: call @comet_rt_compare(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i64)
// CHECK-SAME: (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xi1>, i64) -> i32
// CHECK: call @comet_rt_where(
// CHECK-SAME: (!llvm.ptr, memref<*xi1>, memref<*xf32>, memref<*xf32>, memref<*xf32>) -> i32
// CHECK: call @comet_rt_where(
func.func @attention(%qkv: tensor<?x4x12xf32>, %mask: tensor<1x1x4x4xf32>, %s: tensor<?x2x4x4xf32>, %dy: tensor<?x2x4x4xf32>) -> (tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>) {
  %split = onnx.Initializer "split" dense<4> : tensor<3xi64>
  %q, %k, %v = onnx.Split(%qkv, %split) {axis = 2 : i64} : (tensor<?x4x12xf32>, tensor<3xi64>) -> (tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x4x4xf32>)
  %zero = onnx.Initializer "zero" dense<0.0> : tensor<f32>
  %ninf = onnx.Initializer "ninf" dense<0xFF800000> : tensor<f32>
  %cond = onnx.Equal(%mask, %zero) : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xi1>
  %m = onnx.Where(%cond, %ninf, %s) : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32>
  %dx = onnx.Where(%cond, %zero, %dy) : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32>
  return %q, %k, %v, %m, %dx : tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>
}

// -----

// opset 18's num_outputs: pieces of ceil(10 / 4) = 3, the last one 1.
// CHECK-LABEL: func.func @num_outputs(
// CHECK: call @comet_rt_split_part(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i64, %c0_i64)
// CHECK: call @comet_rt_split_part(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i64, %c3_i64)
// CHECK: call @comet_rt_split_part(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i64, %c6_i64)
// CHECK: call @comet_rt_split_part(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i64, %c9_i64)
// CHECK-SAME: memref<*xf32>, memref<*xf32>, i64, i64) -> i32
func.func @num_outputs(%x: tensor<?x10xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x1xf32>) {
  %none = onnx.NoValue
  %a, %b, %c, %d = onnx.Split(%x, %none) {axis = 1 : i64, num_outputs = 4 : i64} : (tensor<?x10xf32>, none) -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x1xf32>)
  return %a, %b, %c, %d : tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x1xf32>
}

// -----

// The eval graph's positions and scale: Range(0, Cast(Gather(Shape(ids),
// 1)), 1) folds to the constant [0, 1, 2, 3] once the ids are 2x4, and
// 1 / sqrt(head_dim) from the i64 head_dim 4 (Div of shape entries) made
// float: the Cast folds to the constant 4.0, Reciprocal is a kernel. The
// mask's condition cast to bool is a copy. ConcatTraining of i64
// constants (a Reshape target in the training graph) folds, lengths too.
// CHECK-DAG: memref.global "private" constant @[[POS:__comet_const_[0-9]+]] : memref<4xi64> = dense<[0, 1, 2, 3]>
// CHECK-DAG: memref.global "private" constant @[[HD:__comet_const_[0-9]+]] : memref<f32> = dense<4.000000e+00>
// CHECK-DAG: memref.global "private" constant @[[CAT:__comet_const_[0-9]+]] : memref<2xi64> = dense<[2, 4]>
// CHECK-DAG: memref.global "private" constant @[[LEN:__comet_const_[0-9]+]] : memref<2xi64> = dense<1>
// CHECK-LABEL: func.func @eval_positions(
// CHECK-NOT: call @comet_rt_gather
// CHECK: memref.get_global @[[POS]] : memref<4xi64>
// CHECK: call @comet_rt_gather(
// CHECK: memref.get_global @[[HD]] : memref<f32>
// CHECK: call @comet_rt_reciprocal(
// CHECK: call @comet_rt_identity_i1(
// CHECK: memref.get_global @[[CAT]] : memref<2xi64>
// CHECK: memref.get_global @[[LEN]] : memref<2xi64>
func.func @eval_positions(%ids: tensor<?x4xi64>, %pe: tensor<4x8xf32>, %c: tensor<1x1x4x4xi1>) -> (tensor<1x4x8xf32>, tensor<f32>, tensor<1x1x4x4xi1>, tensor<2xi64>, tensor<2xi64>) {
  %sh = onnx.Shape(%ids) : (tensor<?x4xi64>) -> tensor<2xi64>
  %one = onnx.Constant {value = dense<1> : tensor<i64>} : tensor<i64>
  %zero = onnx.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %t = onnx.Gather(%sh, %one) {axis = 0 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %tc = onnx.Cast(%t) {to = 7 : i64} : (tensor<i64>) -> tensor<i64>
  %pos = onnx.Range(%zero, %tc, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %ax = onnx.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %pu = onnx.Unsqueeze(%pos, %ax) : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %e = onnx.Gather(%pe, %pu) {axis = 0 : i64} : (tensor<4x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %hd = onnx.Cast(%t) {to = 1 : i64} : (tensor<i64>) -> tensor<f32>
  %r = onnx.Reciprocal(%hd) : (tensor<f32>) -> tensor<f32>
  %cb = onnx.Cast(%c) {to = 9 : i64} : (tensor<1x1x4x4xi1>) -> tensor<1x1x4x4xi1>
  %b = onnx.Gather(%sh, %zero) {axis = 0 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %bu = onnx.Unsqueeze(%b, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %tu = onnx.Unsqueeze(%t, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %cat, %len = onnx.ConcatTraining(%bu, %tu) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> (tensor<2xi64>, tensor<2xi64>)
  %ec = onnx.Identity(%e) : (tensor<1x?x8xf32>) -> tensor<1x4x8xf32>
  return %ec, %r, %cb, %cat, %len : tensor<1x4x8xf32>, tensor<f32>, tensor<1x1x4x4xi1>, tensor<2xi64>, tensor<2xi64>
}

// -----

// The roles the driver binds inputs by: the loss's labels are marked with
// the number of classes (the scores' dim 1) and take the scores' rows, 2 x
// 4 tokens = 8, not the batch; the token ids that the embedding Gather
// reads are marked with the table's rows.
// CHECK-LABEL: func.func @language_model(
// CHECK-SAME: %{{.*}}: memref<2x4xi64> {comet.index_range = 16 : i64, onnx.name = "input"}
// CHECK-SAME: %{{.*}}: memref<8xi64> {comet.labels = 10 : i64, onnx.name = "labels"}
// CHECK-SAME: %{{.*}}: memref<16x10xf32> {onnx.name = "emb"}
func.func @language_model(%ids: tensor<?x4xi64> {onnx.name = "input"}, %labels: tensor<?xi64> {onnx.name = "labels"}, %emb: tensor<16x10xf32> {onnx.name = "emb"}) -> tensor<f32> {
  %x = onnx.Gather(%emb, %ids) {axis = 0 : i64} : (tensor<16x10xf32>, tensor<?x4xi64>) -> tensor<?x4x10xf32>
  %s = onnx.Initializer "s" dense<[-1, 10]> : tensor<2xi64>
  %scores = onnx.Reshape(%x, %s) : (tensor<?x4x10xf32>, tensor<2xi64>) -> tensor<?x10xf32>
  %none = onnx.NoValue
  %loss, %lp = onnx.SoftmaxCrossEntropyLoss(%scores, %labels, %none) : (tensor<?x10xf32>, tensor<?xi64>, none) -> (tensor<f32>, none)
  return %loss : tensor<f32>
}
