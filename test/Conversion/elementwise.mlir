// RUN: comet-opt %s -split-input-file --comet-lower-to-runtime=batch-size=2 -cse | FileCheck %s

// Arithmetic, comparisons, casts (populateElementwiseLoweringPatterns).

// ReLU6 and its gradient: Clip, the compares (predicates 0 = >=, 1 = <=),
// And, Cast from bool and Mul.
// CHECK-LABEL: func.func @clip_grad(
// CHECK: call @comet_rt_clip(%arg0,
// CHECK: %[[GE:.*]] = arith.constant 0 : i64
// CHECK: call @comet_rt_compare(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[GE]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xi1>, i64) -> i32
// CHECK: %[[LE:.*]] = arith.constant 1 : i64
// CHECK: call @comet_rt_compare(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[LE]])
// CHECK: call @comet_rt_and_i1(
// CHECK: call @comet_rt_cast_i1_f32(
// CHECK: call @comet_rt_mul(%arg0, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>) -> i32
func.func @clip_grad(%x: tensor<2x8xf32>, %lo: tensor<f32>, %hi: tensor<f32>, %dy: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %y = onnx.Clip(%x, %lo, %hi) : (tensor<2x8xf32>, tensor<f32>, tensor<f32>) -> tensor<2x8xf32>
  %ge = onnx.GreaterOrEqual(%x, %lo) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xi1>
  %le = onnx.LessOrEqual(%x, %hi) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xi1>
  %m = onnx.And(%ge, %le) : (tensor<2x8xi1>, tensor<2x8xi1>) -> tensor<2x8xi1>
  %f = onnx.Cast(%m) {to = 1 : i64} : (tensor<2x8xi1>) -> tensor<2x8xf32>
  %dx = onnx.Mul(%dy, %f) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y, %dx : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// A float Neg multiplies by -1 (Scale, scale_down 0).
// CHECK: memref.global "private" constant @[[M1:__comet_const_[0-9]+]] : memref<1xf32> = dense<-1.000000e+00>
// CHECK-LABEL: func.func @neg(
// CHECK: memref.get_global @[[M1]] : memref<1xf32>
// CHECK: %[[C0:.*]] = arith.constant 0 : i64
// CHECK: call @comet_rt_scale(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[C0]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64) -> i32
func.func @neg(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %n = onnx.Neg(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %n : tensor<2x3xf32>
}

// -----

// Sum adds pairwise into its output (x0 + x1, then + x2, broadcasting); an
// integer Div of one-element constants (Size / 2) folds to a constant.
// CHECK-DAG: memref.global "private" constant @[[Q:__comet_const_[0-9]+]] : memref<i64> = dense<3>
// CHECK-LABEL: func.func @sum_and_shape_arith(
// CHECK-SAME: %[[A:arg1]]: memref<2x3xf32>, %[[B:arg2]]: memref<3xf32>, %[[C:arg3]]: memref<2x3xf32>, %[[OUT:arg4]]: memref<2x3xf32>
// CHECK-DAG: %[[AU:.*]] = memref.cast %[[A]] : memref<2x3xf32> to memref<*xf32>
// CHECK-DAG: %[[BU:.*]] = memref.cast %[[B]] : memref<3xf32> to memref<*xf32>
// CHECK-DAG: %[[OU:.*]] = memref.cast %[[OUT]] : memref<2x3xf32> to memref<*xf32>
// CHECK: call @comet_rt_add(%arg0, %[[AU]], %[[BU]], %[[OU]])
// CHECK: call @comet_rt_add(%arg0, %[[OU]], %{{.*}}, %[[OU]])
// CHECK-NOT: call @comet_rt_div
// CHECK: memref.get_global @[[Q]] : memref<i64>
// CHECK-NOT: call @comet_rt_div
func.func @sum_and_shape_arith(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<i64>) {
  %s = onnx.Sum(%a, %b, %c) : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %n = onnx.Size(%a) : (tensor<2x3xf32>) -> tensor<i64>
  %two = onnx.Constant {value = dense<2> : tensor<i64>} : tensor<i64>
  %q = onnx.Div(%n, %two) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  return %s, %q : tensor<2x3xf32>, tensor<i64>
}

// -----

// ORT's Scale by an integer element count (a mean's gradient) scales by
// the f32 constant it is once shapes are static.
// CHECK-DAG: memref.global "private" constant @[[SIX:__comet_const_[0-9]+]] : memref<1xf32> = dense<6.000000e+00>
// CHECK-LABEL: func.func @scale_int(
// CHECK: memref.get_global @[[SIX]] : memref<1xf32>
// CHECK: %[[DOWN:.*]] = arith.constant 1 : i64
// CHECK: call @comet_rt_scale(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[DOWN]])
func.func @scale_int(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %n = onnx.Size(%x) : (tensor<2x3xf32>) -> tensor<i64>
  %y = onnx.Scale(%x, %n) {scale_down = 1 : i64} : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Mod of i64 tensors the graph computes is mod_i64 with its fmod; a Mod of
// constants (Swin's window padding: (7 - 4 % 7) % 7 = 3, broadcast over
// [4, -3]: fmod 0 takes the divisor's sign, so [3 mod 4, 3 mod -3] =
// [3, 0]) folds to a constant.
// CHECK-DAG: memref.global "private" constant @[[P:__comet_const_[0-9]+]] : memref<2xi64> = dense<[3, 0]>
// CHECK-LABEL: func.func @mod_i64(
// CHECK: %[[F:.*]] = arith.constant 1 : i64
// CHECK: call @comet_rt_mod_i64(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[F]]) : (!llvm.ptr, memref<*xi64>, memref<*xi64>, memref<*xi64>, i64) -> i32
// CHECK-NOT: call @comet_rt_mod_i64
// CHECK: memref.get_global @[[P]] : memref<2xi64>
// CHECK-NOT: call @comet_rt_mod_i64
func.func @mod_i64(%a: tensor<2x3xi64>, %b: tensor<3xi64>) -> (tensor<2x3xi64>, tensor<2xi64>) {
  %m = onnx.Mod(%a, %b) {fmod = 1 : i64} : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %win = onnx.Constant {value = dense<7> : tensor<i64>} : tensor<i64>
  %four = onnx.Constant {value = dense<4> : tensor<i64>} : tensor<i64>
  %r = onnx.Mod(%four, %win) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %s = onnx.Sub(%win, %r) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %p = onnx.Mod(%s, %win) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %d = onnx.Constant {value = dense<[4, -3]> : tensor<2xi64>} : tensor<2xi64>
  %q = onnx.Mod(%p, %d) : (tensor<i64>, tensor<2xi64>) -> tensor<2xi64>
  return %m, %q : tensor<2x3xi64>, tensor<2xi64>
}

// -----

// ViT's expand target: Equal and Where of i64 constants fold to constants
// (the runtime compares and selects only f32), Expand gets [2, 1, 8].
// CHECK-DAG: memref.global "private" constant @[[T:__comet_const_[0-9]+]] : memref<3xi64> = dense<[2, 1, 1]>
// CHECK-DAG: memref.global "private" constant @[[E:__comet_const_[0-9]+]] : memref<3xi1> = dense<[false, true, true]>
// CHECK-LABEL: func.func @expand_target(
// CHECK-NOT: call @comet_rt_compare
// CHECK-NOT: call @comet_rt_where
// CHECK: call @comet_rt_expand(
func.func @expand_target(%cls: tensor<1x1x8xf32>) -> tensor<2x1x8xf32> {
  %target = onnx.Constant {value = dense<[2, -1, -1]> : tensor<3xi64>} : tensor<3xi64>
  %neg = onnx.Constant {value = dense<-1> : tensor<3xi64>} : tensor<3xi64>
  %ones = onnx.Constant {value = dense<1> : tensor<3xi64>} : tensor<3xi64>
  %eq = onnx.Equal(%target, %neg) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %shape = onnx.Where(%eq, %ones, %target) : (tensor<3xi1>, tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %e = onnx.Expand(%cls, %shape) : (tensor<1x1x8xf32>, tensor<3xi64>) -> tensor<2x1x8xf32>
  return %e : tensor<2x1x8xf32>
}

// -----

// A Mod of constants by zero does not fold: mod_i64 reports the zero
// divisor when the step runs.
// CHECK-LABEL: func.func @mod_by_zero(
// CHECK: call @comet_rt_mod_i64(
func.func @mod_by_zero() -> tensor<i64> {
  %four = onnx.Constant {value = dense<4> : tensor<i64>} : tensor<i64>
  %zero = onnx.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %r = onnx.Mod(%four, %zero) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  return %r : tensor<i64>
}
