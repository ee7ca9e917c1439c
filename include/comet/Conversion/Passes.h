//===- Passes.h - COMET conversion passes -----------------------*- C++ -*-===//
#ifndef COMET_CONVERSION_PASSES_H
#define COMET_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace comet {

#define GEN_PASS_DECL
#include "comet/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "comet/Conversion/Passes.h.inc"

/// Options of the comet-lower-to-llvm pipeline.
struct LowerToLLVMOptions
    : public mlir::PassPipelineOptions<LowerToLLVMOptions> {
  Option<int64_t> batchSize{*this, "batch-size",
                            llvm::cl::desc("Size of every dynamic dimension"),
                            llvm::cl::init(0)};
};

/// comet-lower-to-runtime, then memref/func/arith/cf to the LLVM dialect
/// (memref.alloc through the runtime allocator's generic functions).
void buildLowerToLLVMPipeline(mlir::OpPassManager &pm,
                              const LowerToLLVMOptions &options);

/// The part of comet-lower-to-llvm after comet-lower-to-runtime: memref,
/// arith, cf and func to the LLVM dialect.
void buildRuntimeToLLVMPipeline(mlir::OpPassManager &pm);

/// Registers the passes and the comet-lower-to-llvm pipeline.
void registerConversionPasses();

} // namespace comet

#endif // COMET_CONVERSION_PASSES_H
