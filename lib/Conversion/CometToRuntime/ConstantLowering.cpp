//===- ConstantLowering.cpp - Constants and static shape facts ------------===//
//
// Initializers and constants become an allocated copy of a private global;
// Shape, Size, ConstantOfShape and integer Range are constants once shapes
// are static (comet-specialize-shapes has run).
//
//===----------------------------------------------------------------------===//
#include "RuntimeLowering.h"

#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;
using namespace comet;
using namespace comet::onnx;

namespace {

/// Raw little-endian data of an initializer/constant as a dense attribute.
DenseElementsAttr denseOf(ElementsAttr attr) {
  if (auto d = dyn_cast<DenseElementsAttr>(attr))
    return d;
  auto type = cast<ShapedType>(attr.getType());
  if (auto res = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return {};
    ArrayRef<char> data = blob->getData();
    unsigned width = type.getElementType().getIntOrFloatBitWidth();
    size_t elemBytes = width == 1 ? 1 : width / 8;
    if (data.size() != size_t(type.getNumElements()) * elemBytes)
      return {};
    if (width == 1) {
      SmallVector<bool> bits;
      for (char c : data)
        bits.push_back(c != 0);
      return DenseElementsAttr::get(type, bits);
    }
    return DenseElementsAttr::getFromRawBuffer(type, data);
  }
  return {};
}

struct NoValueLowering : OpRuntimeLoweringPattern<NoValueOp> {
  LogicalResult lowerOp(NoValueOp, RuntimeLowering &) const override {
    return success();
  }
};

struct InitializerLowering : OpRuntimeLoweringPattern<InitializerOp> {
  LogicalResult lowerOp(InitializerOp o, RuntimeLowering &rt) const override {
    DenseElementsAttr d = denseOf(o.getValue());
    if (!d)
      return o.emitError("comet-lower-to-runtime: cannot read the data "
                         "of initializer ")
             << o.getName();
    return rt.materializeConstant(o.getOutput(), d);
  }
};

struct ConstantLowering : OpRuntimeLoweringPattern<ConstantOp> {
  LogicalResult lowerOp(ConstantOp o, RuntimeLowering &rt) const override {
    DenseElementsAttr d;
    if (auto v = o.getValue())
      d = denseOf(*v);
    if (!d)
      return o.emitError(
          "comet-lower-to-runtime: only tensor-valued Constant is "
          "supported");
    return rt.materializeConstant(o.getOutput(), d);
  }
};

struct ShapeLowering : OpRuntimeLoweringPattern<ShapeOp> {
  LogicalResult lowerOp(ShapeOp o, RuntimeLowering &rt) const override {
    // Shapes are static after specialization: a constant.
    auto xt = cast<RankedTensorType>(o.getData().getType());
    int64_t r = xt.getRank();
    int64_t start = o.getStart(), end = o.getEnd() ? *o.getEnd() : r;
    if (start < 0)
      start += r;
    if (end < 0)
      end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, start, r);
    SmallVector<int64_t> dims(xt.getShape().begin() + start,
                              xt.getShape().begin() + end);
    auto t = RankedTensorType::get({int64_t(dims.size())},
                                   IntegerType::get(o.getContext(), 64));
    if (t != o.getShape().getType())
      return o.emitError("comet-lower-to-runtime: Shape result type ")
             << o.getShape().getType() << " does not match " << t;
    return rt.materializeConstant(o.getShape(),
                                  DenseElementsAttr::get(t, ArrayRef(dims)));
  }
};

struct SizeLowering : OpRuntimeLoweringPattern<SizeOp> {
  LogicalResult lowerOp(SizeOp o, RuntimeLowering &rt) const override {
    // Static after specialization: a constant.
    auto xt = cast<RankedTensorType>(o.getData().getType());
    auto t = cast<RankedTensorType>(o.getSize().getType());
    return rt.materializeConstant(
        o.getSize(), DenseElementsAttr::get(t, {xt.getNumElements()}));
  }
};

struct ConstantOfShapeLowering : OpRuntimeLoweringPattern<ConstantOfShapeOp> {
  LogicalResult lowerOp(ConstantOfShapeOp o,
                        RuntimeLowering &rt) const override {
    // The shape is static after specialization: a splat constant.
    auto t = cast<RankedTensorType>(o.getOutput().getType());
    Attribute fill = FloatAttr::get(Float32Type::get(o.getContext()), 0.0);
    if (auto v = o.getValue()) {
      DenseElementsAttr d = denseOf(*v);
      if (!d || d.getNumElements() != 1)
        return o.emitError("comet-lower-to-runtime: cannot read the "
                           "value of ConstantOfShape");
      fill = *d.value_begin<Attribute>();
    }
    return rt.materializeConstant(o.getOutput(),
                                  DenseElementsAttr::get(t, fill));
  }
};

struct RangeLowering : OpRuntimeLoweringPattern<RangeOp> {
  LogicalResult lowerOp(RangeOp o, RuntimeLowering &rt) const override {
    if (!getElementTypeOrSelf(o.getOutput().getType()).isInteger(64) ||
        !getConstantInts(o.getOutput()))
      return o.emitError("comet-lower-to-runtime: Range is only "
                         "supported on integer constants");
    return rt.foldI64(o);
  }
};

} // namespace

void comet::populateConstantLoweringPatterns(
    RuntimeLoweringPatternSet &patterns) {
  patterns.add<NoValueLowering, InitializerLowering, ConstantLowering,
               ShapeLowering, SizeLowering, ConstantOfShapeLowering,
               RangeLowering>();
}
