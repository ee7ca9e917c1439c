//===- CometOptMain.h - mlir-opt's main with .onnx inputs -------*- C++ -*-===//
#ifndef COMET_TOOLS_COMETOPT_COMETOPTMAIN_H
#define COMET_TOOLS_COMETOPT_COMETOPTMAIN_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

namespace comet {

/// mlir-opt's main after registerAndParseCLIOptions: an input named *.onnx
/// is imported first and then goes through MlirOptMain like a .mlir file;
/// anything else is handed to MlirOptMain as is.
mlir::LogicalResult cometOptMain(int argc, char **argv,
                                 llvm::StringRef inputFilename,
                                 llvm::StringRef outputFilename,
                                 mlir::DialectRegistry &registry);

} // namespace comet

#endif // COMET_TOOLS_COMETOPT_COMETOPTMAIN_H
