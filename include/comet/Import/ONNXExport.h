//===- ONNXExport.h - An inference model from a trained graph ---*- C++ -*-===//
//
// Writes the ONNX inference model that ONNX Runtime's
// Module.export_model_for_inferencing writes: a graph cut to the nodes that
// the requested outputs need, its parameters made initializers holding the
// trained values. Plain C++ at the interface, like ONNXModel.h: the
// protobuf work happens in the exception-enabled library behind it.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_IMPORT_ONNXEXPORT_H
#define COMET_IMPORT_ONNXEXPORT_H

#include "comet/Import/Checkpoint.h"

#include <cstddef>
#include <string>
#include <vector>

namespace comet::onnx_export {

/// The inference model cut from `model` (the bytes of an ONNX model: an
/// eval graph, or a training graph when `trainingGraph`), serialized into
/// `bytes`:
/// - its outputs are `outputs`, in that order, each a value of the graph
///   (typed by ONNX shape inference where it can);
/// - its nodes are those the outputs need, in the graph's order (a node
///   whose subgraphs read outer values needs those too);
/// - each graph input or initializer named like one of `parameters` becomes
///   an initializer with the parameter's values, when needed;
/// - its inputs are the remaining graph inputs that are needed (the data),
///   its other initializers those needed;
/// - value_info is kept for the values that remain; opsets, IR version,
///   producer and graph name are the model's.
/// With `trainingGraph`, the forward part runs as inference: Dropout loses
/// its training_mode input and BatchNormalization's training_mode becomes
/// 0 with only its first output. On failure returns false and sets `error`
/// (an unknown output names it).
bool writeInferenceModel(const void *model, size_t size,
                         const std::vector<std::string> &outputs,
                         const std::vector<checkpoint::Parameter> &parameters,
                         bool trainingGraph, std::string &bytes,
                         std::string &error);

} // namespace comet::onnx_export

#endif // COMET_IMPORT_ONNXEXPORT_H
