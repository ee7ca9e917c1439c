// RUN: comet-opt %s -split-input-file --comet-lower-to-runtime=batch-size=2 -cse | FileCheck %s

// Layout, gathers, joins and splits (populateDataMovementLoweringPatterns);
// eval-ops.mlir and gpt-ops.mlir have the Gather, Concat and Split of
// exported models.

// Transpose without perm reverses the dims (the perm as a constant i64
// memref); Unsqueeze is a copy; Pad of some axes spreads its pads over all
// dims (begin pads, then end pads).
// CHECK-DAG: memref.global "private" constant @[[PERM:__comet_const_[0-9]+]] : memref<3xi64> = dense<[2, 1, 0]>
// CHECK-DAG: memref.global "private" constant @[[PADS:__comet_const_[0-9]+]] : memref<6xi64> = dense<[0, 1, 0, 0, 2, 0]>
// CHECK-LABEL: func.func @layout(
// CHECK: %[[P:.*]] = memref.get_global @[[PERM]] : memref<3xi64>
// CHECK: %[[PU:.*]] = memref.cast %[[P]] : memref<3xi64> to memref<*xi64>
// CHECK: call @comet_rt_transpose(%arg0, %{{.*}}, %{{.*}}, %[[PU]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xi64>) -> i32
// CHECK: call @comet_rt_identity(%arg0, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>) -> i32
// CHECK: %[[Q:.*]] = memref.get_global @[[PADS]] : memref<6xi64>
// CHECK: %[[QU:.*]] = memref.cast %[[Q]] : memref<6xi64> to memref<*xi64>
// CHECK: call @comet_rt_pad(%arg0, %{{.*}}, %[[QU]], %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xi64>, memref<*xf32>, memref<*xf32>) -> i32
func.func @layout(%x: tensor<2x3x4xf32>) -> (tensor<4x3x2xf32>, tensor<2x1x3x4xf32>, tensor<2x6x4xf32>) {
  %none = onnx.NoValue
  %t = onnx.Transpose(%x) : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %ax = onnx.Constant {value = dense<[1]> : tensor<1xi64>} : tensor<1xi64>
  %u = onnx.Unsqueeze(%x, %ax) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x1x3x4xf32>
  %pads = onnx.Constant {value = dense<[1, 2]> : tensor<2xi64>} : tensor<2xi64>
  %axes = onnx.Constant {value = dense<[-2]> : tensor<1xi64>} : tensor<1xi64>
  %p = onnx.Pad(%x, %pads, %none, %axes) : (tensor<2x3x4xf32>, tensor<2xi64>, none, tensor<1xi64>) -> tensor<2x6x4xf32>
  return %t, %u, %p : tensor<4x3x2xf32>, tensor<2x1x3x4xf32>, tensor<2x6x4xf32>
}
