//===- Pipelines.cpp - comet-lower-to-llvm and pass registration ----------===//
#include "comet/Conversion/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void comet::buildLowerToLLVMPipeline(OpPassManager &pm,
                                     const LowerToLLVMOptions &options) {
  CometLowerToRuntimeOptions rt;
  rt.batchSize = options.batchSize;
  pm.addPass(createCometLowerToRuntime(rt));
  buildRuntimeToLLVMPipeline(pm);
}

void comet::buildRuntimeToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  // Buffers come from comet_rt_buffer_alloc (counted per category), so no
  // memref.alloc is left to lower.
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void comet::registerConversionPasses() {
  registerCometConversionPasses();
  PassPipelineRegistration<LowerToLLVMOptions>(
      "comet-lower-to-llvm",
      "Lower a training graph to runtime calls and then to the LLVM dialect",
      buildLowerToLLVMPipeline);
}
