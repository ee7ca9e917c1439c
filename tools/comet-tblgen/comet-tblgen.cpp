//===- comet-tblgen.cpp - COMET's TableGen backends -----------------------===//
//
// mlir-tblgen's driver with COMET's own backends, which read the onnx
// dialect's ODS definitions (include/comet/Dialect/ONNX/IR/ONNXOps.td):
//
//   -gen-onnx-op-table      the importer's op table (comet::onnx::OpInfo):
//                           each op's ONNX op_type, domain, node arity and
//                           operand and result names
//   -gen-onnx-runtime-calls the lowering of every op that names a runtime
//                           function in `runtimeCall` (comet-lower-to-runtime)
//
//===----------------------------------------------------------------------===//
#include "ONNXBackends.h"

#include "mlir/TableGen/GenInfo.h"
#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"

static mlir::GenRegistration
    genOpTable("gen-onnx-op-table",
               "Generate the onnx dialect's import table (comet::onnx::OpInfo)",
               comet::tblgen::emitONNXOpTable);

static mlir::GenRegistration genRuntimeCalls(
    "gen-onnx-runtime-calls",
    "Generate the runtime-call lowering of the onnx ops with a runtimeCall",
    comet::tblgen::emitONNXRuntimeCalls);

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }
