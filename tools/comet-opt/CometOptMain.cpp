//===- CometOptMain.cpp - mlir-opt's main with .onnx inputs ---------------===//
#include "CometOptMain.h"
#include "comet/Import/ONNXImporter.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

LogicalResult comet::cometOptMain(int argc, char **argv,
                                  StringRef inputFilename,
                                  StringRef outputFilename,
                                  DialectRegistry &registry) {
  if (!inputFilename.ends_with(".onnx"))
    return MlirOptMain(argc, argv, inputFilename, outputFilename, registry);

  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &errorMessage);
  if (!file) {
    llvm::errs() << errorMessage << "\n";
    return failure();
  }

  // Import in a context of its own, then print with locations so that the
  // NameLocs survive the re-parse inside MlirOptMain.
  std::string text;
  {
    MLIRContext context(registry, MLIRContext::Threading::DISABLED);
    OwningOpRef<ModuleOp> module =
        importONNXModel(file->getBuffer(), inputFilename, &context);
    if (!module)
      return failure();
    llvm::raw_string_ostream os(text);
    OpPrintingFlags flags;
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
    module->print(os, flags);
  }
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      text, (inputFilename + ".mlir").str());

  auto output = openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return failure();
  }
  if (failed(MlirOptMain(output->os(), std::move(buffer), registry, config)))
    return failure();
  output->keep();
  return success();
}
