//===- ShapeHelpers.h - Shape arithmetic for onnx verifiers/inference -----===//
#ifndef COMET_LIB_DIALECT_ONNX_IR_SHAPEHELPERS_H
#define COMET_LIB_DIALECT_ONNX_IR_SHAPEHELPERS_H

#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace comet::onnx::shape {

/// The shape of `v` when it is a ranked tensor.
inline std::optional<llvm::ArrayRef<int64_t>> shapeOf(mlir::Value v) {
  if (auto t = llvm::dyn_cast<mlir::RankedTensorType>(v.getType()))
    return t.getShape();
  return std::nullopt;
}

/// Whether `v` is a result the importer has not typed yet
/// (`tensor<*x!onnx.pending>`); checks that read result types skip it.
inline bool isPending(mlir::Value v) {
  auto t = llvm::dyn_cast<mlir::TensorType>(v.getType());
  return t && llvm::isa<PendingType>(t.getElementType());
}

/// The element type of a tensor value (null for none/sequences and for a
/// pending result).
inline mlir::Type elementTypeOf(mlir::Value v) {
  if (auto t = llvm::dyn_cast<mlir::TensorType>(v.getType());
      t && !llvm::isa<PendingType>(t.getElementType()))
    return t.getElementType();
  return {};
}

inline bool isDyn(int64_t d) { return mlir::ShapedType::isDynamic(d); }

/// numpy broadcasting; false when two static dims clash.
bool broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                     llvm::SmallVectorImpl<int64_t> &out);

/// Output spatial dims of a convolution or pooling window over `in`
/// (N x C x spatial...). `outChannels` is C of the result.
llvm::SmallVector<int64_t>
windowOutputShape(llvm::ArrayRef<int64_t> in, int64_t outChannels,
                  llvm::ArrayRef<int64_t> kernel,
                  std::optional<llvm::ArrayRef<int64_t>> pads,
                  std::optional<llvm::ArrayRef<int64_t>> strides,
                  std::optional<llvm::ArrayRef<int64_t>> dilations,
                  llvm::StringRef autoPad, bool ceilMode);

} // namespace comet::onnx::shape

#endif
