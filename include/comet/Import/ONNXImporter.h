//===- ONNXImporter.h - ONNX model to the onnx dialect ----------*- C++ -*-===//
#ifndef COMET_IMPORT_ONNXIMPORTER_H
#define COMET_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace comet {

/// Imports a serialized ONNX ModelProto into a module with one func.func:
/// arguments are the graph inputs, results the graph outputs (each with an
/// `onnx.name` attribute), one `onnx.<op_type>` op per node located at
/// NameLoc(node name), one `onnx.Initializer` per initializer with its data
/// as a dense_resource blob. `filename` only names the file in locations.
/// On bad input, emits an error naming the node at fault and returns null.
/// Loads the onnx and func dialects into `context`.
mlir::OwningOpRef<mlir::ModuleOp> importONNXModel(llvm::StringRef bytes,
                                                  llvm::StringRef filename,
                                                  mlir::MLIRContext *context);

/// Registers the dialects that imported modules use.
void registerONNXImportDialects(mlir::DialectRegistry &registry);

} // namespace comet

#endif // COMET_IMPORT_ONNXIMPORTER_H
