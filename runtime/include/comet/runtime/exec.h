/*===- comet/runtime/exec.h - CPU execution kernels, C ABI ----------------===*
 *
 * The kernels that lowered onnx/comet ops call, on MLIR memrefs. Their
 * prototypes come from comet/runtime/abi.def (through abi.h), the one
 * declaration of the runtime's C interface; that file also states the
 * calling convention. docs/runtime.md has each op's semantics and the ONNX
 * Runtime source it was checked against.
 *
 * Example: ConvGrad with no dX, as the lowering emits it:
 *
 *   func.func private @comet_rt_conv_grad2d(!llvm.ptr, memref<*xf32>,
 *       memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>,
 *       memref<*xf32>, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> i32
 *       attributes {llvm.emit_c_interface}
 *   ...
 *   %rc = func.call @comet_rt_conv_grad2d(%ctx, %dy, %x, %w, %none, %dw,
 *       %db, %c1, %c1, %c2, %c2, %c2, %c2, %c1, %c1, %c1) : (...) -> i32
 *
 * Kernels are thread-safe; oneDNN primitives are cached by shape and
 * attributes, and their scratchpads come from comet_rt_alloc (category
 * workspace of the calling context).
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_EXEC_H
#define COMET_RUNTIME_EXEC_H

#include "comet/runtime/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* omp_set_num_threads(num_threads) on the calling thread: the thread count
 * of the glue kernels and of oneDNN (built on the same OpenMP runtime);
 * num_threads <= 0 leaves it as it is. */
COMET_RT_API void comet_rt_set_num_threads(int num_threads);

/* Number of oneDNN primitives in the cache (for tests). */
COMET_RT_API int64_t comet_rt_primitive_cache_size(void);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_EXEC_H */
