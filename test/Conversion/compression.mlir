// RUN: comet-opt %s -split-input-file --comet-lower-to-runtime=batch-size=2 -cse | FileCheck %s

// comet.compress and comet.decompress (populateCompressionLoweringPatterns),
// and the gradients that read a mask: ReluGrad and DropoutGrad.

// comet.compress becomes a runtime handle (codec sz = 1, the slot and its
// compiled bound, site 0); the original dies at the compress, the handle
// is freed after its decompress (its last use), and the decompressed copy
// after ReluGrad.
// CHECK-LABEL: func.func @saved(
// CHECK: %[[RRAW:.*]] = call @comet_rt_buffer_alloc(
// CHECK: call @comet_rt_relu(
// CHECK-DAG: %[[SZ:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[SLOT:.*]] = arith.constant 5 : i64
// CHECK-DAG: %[[EB:.*]] = arith.constant 1.000000e-03 : f64
// CHECK-DAG: %[[SITE:.*]] = arith.constant 0 : i64
// CHECK: %[[HANDLE:.*]] = call @comet_rt_compress(%arg0, %{{.*}}, %[[SZ]], %[[SLOT]], %[[EB]], %[[SITE]]) : (!llvm.ptr, memref<*xf32>, i32, i64, f64, i64) -> i64
// CHECK: arith.cmpi ne, %[[HANDLE]]
// CHECK: cf.cond_br
// CHECK: call @comet_rt_buffer_free(%arg0, %[[RRAW]])
// CHECK: %[[DRAW:.*]] = call @comet_rt_buffer_alloc(
// CHECK: call @comet_rt_decompress(%arg0, %[[HANDLE]], %{{.*}}) : (!llvm.ptr, i64, memref<*xf32>) -> i32
// CHECK: cf.cond_br
// CHECK: call @comet_rt_handle_free(%arg0, %[[HANDLE]]) : (!llvm.ptr, i64) -> ()
// CHECK: call @comet_rt_relu_grad(
// CHECK: call @comet_rt_buffer_free(%arg0, %[[DRAW]])
// CHECK: return
func.func @saved(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %r = onnx.Relu(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = comet.compress %r bound <abs = 1.0e-3, slot = 5> : tensor<2x8xf32> -> !comet.compressed<tensor<2x8xf32>, sz>
  %d = comet.decompress %c : !comet.compressed<tensor<2x8xf32>, sz> -> tensor<2x8xf32>
  %g = onnx.ReluGrad(%dy, %d) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

// The mask codec (2) has no slot (-1) and no bound; each compress gets
// its own site, and the lowered function lists the sites for the Engine.
// CHECK-LABEL: func.func @mask(
// CHECK-SAME: comet.sites = [#comet.site<value = "{{[^"]*}}", codec = mask, bytes = 64>, #comet.site<value = "{{[^"]*}}", codec = sz, bytes = 64, bound = #comet.bound<abs = 2.500000e-01, slot = 0>>]
// CHECK-DAG: %[[MASK:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[NOSLOT:.*]] = arith.constant -1 : i64
// CHECK: call @comet_rt_compress(%arg0, %{{.*}}, %[[MASK]], %[[NOSLOT]], %{{.*}}, %{{.*}})
// CHECK: %[[SITE1:.*]] = arith.constant 1 : i64
// CHECK: call @comet_rt_compress(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SITE1]])
func.func @mask(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %r = onnx.Relu(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = comet.compress %r : tensor<2x8xf32> -> !comet.compressed<tensor<2x8xf32>, mask>
  %c2 = comet.compress %x bound <abs = 0.25, slot = 0> : tensor<2x8xf32> -> !comet.compressed<tensor<2x8xf32>, sz>
  %d = comet.decompress %c : !comet.compressed<tensor<2x8xf32>, mask> -> tensor<2x8xf32>
  %d2 = comet.decompress %c2 : !comet.compressed<tensor<2x8xf32>, sz> -> tensor<2x8xf32>
  %g = onnx.ReluGrad(%dy, %d) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %g, %d2 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// A mask decompress read only as ReluGrad's X is fused: no buffer and no
// call at the decompress; each ReluGrad reads the bits from the handle
// (comet_rt_relu_grad_mask), and the handle is freed after the last one.
// CHECK-LABEL: func.func @fused_mask(
// CHECK: %[[RRAW:.*]] = call @comet_rt_buffer_alloc(
// CHECK: call @comet_rt_relu(
// CHECK: %[[HANDLE:.*]] = call @comet_rt_compress(
// CHECK: call @comet_rt_buffer_free(%arg0, %[[RRAW]])
// CHECK-NOT: comet_rt_decompress
// The one allocation before the first ReluGrad is its dX.
// CHECK: %[[GRAW:.*]] = call @comet_rt_buffer_alloc(
// CHECK-NOT: comet_rt_buffer_alloc
// CHECK: %[[G:.*]] = memref.view %[[GRAW]]
// CHECK: %[[GC:.*]] = memref.cast %[[G]]
// CHECK: call @comet_rt_relu_grad_mask(%arg0, %{{.*}}, %[[HANDLE]], %[[GC]]) : (!llvm.ptr, memref<*xf32>, i64, memref<*xf32>) -> i32
// CHECK-NOT: comet_rt_handle_free
// CHECK: call @comet_rt_relu_grad_mask(%arg0, %{{.*}}, %[[HANDLE]], %{{.*}}) : (!llvm.ptr, memref<*xf32>, i64, memref<*xf32>) -> i32
// CHECK: call @comet_rt_handle_free(%arg0, %[[HANDLE]]) : (!llvm.ptr, i64) -> ()
// CHECK-NOT: comet_rt_decompress
// CHECK: return
func.func @fused_mask(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %r = onnx.Relu(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = comet.compress %r : tensor<2x8xf32> -> !comet.compressed<tensor<2x8xf32>, mask>
  %d = comet.decompress %c : !comet.compressed<tensor<2x8xf32>, mask> -> tensor<2x8xf32>
  %g = onnx.ReluGrad(%dy, %d) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %g2 = onnx.ReluGrad(%g, %d) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %g2 : tensor<2x8xf32>
}

// -----

// Dropout and DropoutGrad (unfused: the mask is a plain i1 buffer, a byte
// per element) call the runtime with ratio and training_mode as memrefs.
// CHECK-LABEL: func.func @dropout(
// CHECK: call @comet_rt_dropout(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xi1>, memref<*xf32>, memref<*xi1>) -> i32
// CHECK: call @comet_rt_dropout_grad(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xi1>, memref<*xf32>, memref<*xi1>, memref<*xf32>) -> i32
func.func @dropout(%x: tensor<2x8xf32>, %r: tensor<f32>, %t: tensor<i1>, %dy: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %y, %m = onnx.Dropout(%x, %r, %t) : (tensor<2x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x8xf32>, tensor<2x8xi1>)
  %dx = onnx.DropoutGrad(%dy, %m, %r, %t) : (tensor<2x8xf32>, tensor<2x8xi1>, tensor<f32>, tensor<i1>) -> tensor<2x8xf32>
  return %y, %dx : tensor<2x8xf32>, tensor<2x8xf32>
}
