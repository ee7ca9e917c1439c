//===- ShapeHelpers.h - Shape arithmetic for onnx verifiers/inference -----===//
//
// What the verifiers (ONNXOps.cpp), the family traits (ONNXTraits.cpp) and
// type inference (ONNXTypeInference.cpp) share: shape arithmetic, the
// checks behind the verifiers' diagnostics, and the types inference builds.
// Every function treats an unranked tensor, and a result the importer has
// not typed yet, as unknown.
//
//===----------------------------------------------------------------------===//
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

/// Whether `v` is an absent optional operand or result (`none`).
inline bool isNone(mlir::Value v) {
  return llvm::isa<mlir::NoneType>(v.getType());
}

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

/// A Slice along a dim of static size d: the first index and the count
/// that starts, ends and step give (ONNX's clamping; negative bounds count
/// from the end); nullopt for a zero step.
std::optional<std::pair<int64_t, int64_t>> sliceAxis(int64_t d, int64_t start,
                                                     int64_t end, int64_t step);

/// The product of static dims; `?` if any is dynamic or it overflows.
int64_t product(llvm::ArrayRef<int64_t> dims);

} // namespace comet::onnx::shape

//===----------------------------------------------------------------------===//
// Checks: each emits the op's diagnostic and fails, or passes when what it
// reads is unknown.
//===----------------------------------------------------------------------===//

namespace comet::onnx::checks {

mlir::LogicalResult checkRankAtLeast(mlir::Operation *op, mlir::Value v,
                                     llvm::StringRef what, int64_t rank);
mlir::LogicalResult checkRank(mlir::Operation *op, mlir::Value v,
                              llvm::StringRef what, int64_t rank);
/// All given tensor values have the same element type.
mlir::LogicalResult checkSameElementType(
    mlir::Operation *op,
    llvm::ArrayRef<std::pair<mlir::Value, llvm::StringRef>> vs);
mlir::LogicalResult checkFloat(mlir::Operation *op, mlir::Value v,
                               llvm::StringRef what);
mlir::LogicalResult checkInteger(mlir::Operation *op, mlir::Value v,
                                 llvm::StringRef what);
/// A 1-d i64 tensor such as Reshape's shape.
mlir::LogicalResult checkShapeTensor(mlir::Operation *op, mlir::Value v,
                                     llvm::StringRef what);
/// Same rank, and static dims that agree.
mlir::LogicalResult checkCompatibleShapes(mlir::Operation *op, mlir::Value a,
                                          llvm::StringRef aName, mlir::Value b,
                                          llvm::StringRef bName);
mlir::LogicalResult checkOneElement(mlir::Operation *op, mlir::Value v,
                                    llvm::StringRef what);
/// A one-element bool (i1) tensor.
mlir::LogicalResult checkFlag(mlir::Operation *op, mlir::Value v,
                              llvm::StringRef what);
/// `axis` lies in [-rank, rank) of v (when v is ranked).
mlir::LogicalResult checkAxis(mlir::Operation *op, mlir::Value v, int64_t axis,
                              llvm::StringRef what = "axis");
/// Constant axes: each in [-rank, rank), none twice.
mlir::LogicalResult checkAxesList(mlir::Operation *op,
                                  llvm::ArrayRef<int64_t> axes, int64_t rank);

} // namespace comet::onnx::checks

//===----------------------------------------------------------------------===//
// Types for inference
//===----------------------------------------------------------------------===//

namespace comet::onnx::infer {

inline constexpr int64_t kDyn = mlir::ShapedType::kDynamic;
/// Above this rank a shape operand's length is taken as unknown rather than
/// allocated as dims: it comes from the file.
inline constexpr int64_t kMaxInferredRank = 1024;

/// A tensor of `elt`, unranked without a shape; null without `elt`.
mlir::Type tensorOf(std::optional<llvm::ArrayRef<int64_t>> shape,
                    mlir::Type elt);
/// The type of `v` if it is a tensor or sequence, else null.
mlir::Type sameAs(mlir::Value v);
/// The type a 1-d shape operand `shape` gives when its values are not
/// known: its length as the rank, every dim `?` (unranked past
/// kMaxInferredRank: the length comes from the file).
mlir::Type typeOfUnknownShape(mlir::Value shape, mlir::Type elt);
/// The numpy broadcast of the shapes of `operands` with element type `elt`
/// (unranked when one is unranked or they do not broadcast).
mlir::Type broadcastType(mlir::ValueRange operands, mlir::Type elt);
/// One null type per result of `op`.
void init(mlir::Operation *op, llvm::SmallVectorImpl<mlir::Type> &types);

} // namespace comet::onnx::infer

#endif
