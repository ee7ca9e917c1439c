//===- comet-opt.cpp - COMET's optimizer driver ---------------------------===//
//
// mlir-opt with COMET's dialects and passes registered, plus the upstream
// dialects that COMET's pipelines produce.
//
//===----------------------------------------------------------------------===//

#include "CometOptMain.h"
#include "SupportedOps.h"
#include "comet/Conversion/Passes.h"
#include "comet/Dialect/Comet/IR/CometDialect.h"
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Import/ONNXImporter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"

static llvm::cl::opt<bool> printSupportedOps(
    "print-supported-ops",
    llvm::cl::desc("Print the ONNX op types the importer supports as "
                   "Markdown (docs/supported-ops.md) and exit"),
    llvm::cl::init(false));

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  comet::registerCometPasses();
  comet::registerConversionPasses();

  mlir::DialectRegistry registry;
  registry.insert<
      comet::CometDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect,
      mlir::tensor::TensorDialect, mlir::memref::MemRefDialect,
      mlir::bufferization::BufferizationDialect, mlir::scf::SCFDialect,
      mlir::cf::ControlFlowDialect, mlir::LLVM::LLVMDialect>();

  comet::registerONNXImportDialects(registry);

  // An input named *.onnx is imported into the onnx dialect first.
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "COMET optimizer driver\n", registry);
  if (printSupportedOps) {
    mlir::MLIRContext ctx(registry);
    comet::printSupportedOps(ctx, llvm::outs());
    return 0;
  }
  return mlir::asMainReturnCode(
      comet::cometOptMain(argc, argv, inputFilename, outputFilename, registry));
}
