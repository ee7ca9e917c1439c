//===- SupportedOps.h - The importer's op table as Markdown -----*- C++ -*-===//
#ifndef COMET_TOOLS_COMETOPT_SUPPORTEDOPS_H
#define COMET_TOOLS_COMETOPT_SUPPORTEDOPS_H

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

namespace comet {

/// Writes docs/supported-ops.md: every op type of the importer's table
/// (comet::onnx::getSupportedOps) with its domain, node arity and the
/// attributes of its ODS op, by domain then op type.
void printSupportedOps(mlir::MLIRContext &ctx, llvm::raw_ostream &os);

} // namespace comet

#endif // COMET_TOOLS_COMETOPT_SUPPORTEDOPS_H
