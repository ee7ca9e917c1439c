//===- ONNXBackends.h - TableGen backends for the onnx dialect --*- C++ -*-===//
#ifndef COMET_TOOLS_COMET_TBLGEN_ONNXBACKENDS_H
#define COMET_TOOLS_COMET_TBLGEN_ONNXBACKENDS_H

#include "llvm/Support/raw_ostream.h"
#include "llvm/TableGen/Record.h"

namespace comet::tblgen {

/// The importer's op table: one comet::onnx::OpInfo per ONNX_Op, sorted by
/// op_type.
bool emitONNXOpTable(const llvm::RecordKeeper &records, llvm::raw_ostream &os);

/// One lowering function per ONNX_Op with a `runtimeCall`, and the list of
/// those ops (comet-lower-to-runtime's generated patterns).
bool emitONNXRuntimeCalls(const llvm::RecordKeeper &records,
                          llvm::raw_ostream &os);

} // namespace comet::tblgen

#endif
