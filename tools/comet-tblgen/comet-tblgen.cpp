//===- comet-tblgen.cpp - COMET's TableGen backends -----------------------===//
//
// mlir-tblgen's driver with COMET's own backends, which read the onnx
// dialect's ODS definitions (include/comet/Dialect/ONNX/IR/ONNXOps.td):
//
//   -gen-onnx-op-table      the importer's op table (comet::onnx::OpInfo):
//                           each op's ONNX op_type, domain, node arity and
//                           operand and result names
//
//===----------------------------------------------------------------------===//
#include "ONNXBackends.h"

#include "mlir/TableGen/GenInfo.h"
#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"

static mlir::GenRegistration
    genOpTable("gen-onnx-op-table",
               "Generate the onnx dialect's import table (comet::onnx::OpInfo)",
               comet::tblgen::emitONNXOpTable);

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }
