//===- ONNXDialect.cpp - The onnx dialect and its op table ----------------===//
#include "comet/Dialect/ONNX/IR/ONNXDialect.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cstdint>

using namespace mlir;
using namespace comet::onnx;

#include "comet/Dialect/ONNX/IR/ONNXDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "comet/Dialect/ONNX/IR/ONNXTypes.cpp.inc"

#include "comet/Dialect/ONNX/IR/ONNXInterfaces.cpp.inc"

void ONNXDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "comet/Dialect/ONNX/IR/ONNXTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "comet/Dialect/ONNX/IR/ONNXOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// The op table: each supported op_type with its domain, node arity and ODS
// names, generated from ONNXOps.td (comet-tblgen -gen-onnx-op-table).
//===----------------------------------------------------------------------===//

static constexpr unsigned kVariadic = ~0u;
#include "comet/Dialect/ONNX/IR/ONNXOpTable.inc"

ArrayRef<OpInfo> comet::onnx::getSupportedOps() { return kOpInfos; }

const OpInfo *comet::onnx::lookupOpInfo(StringRef opType) {
  const OpInfo *it = llvm::partition_point(
      kOpInfos, [&](const OpInfo &info) { return info.opType < opType; });
  return it != std::end(kOpInfos) && it->opType == opType ? it : nullptr;
}

/// The ODS name of value `i` of `names` (one per ODS value), unless a
/// variadic value makes the position ambiguous.
static std::string odsName(ArrayRef<StringLiteral> names, unsigned count,
                           unsigned i, StringRef what) {
  if (names.size() == count && i < names.size())
    return names[i].str();
  return (what + " #" + Twine(i)).str();
}

std::string comet::onnx::getOperandName(Operation *op, unsigned i) {
  const OpInfo *info = lookupOpInfo(op->getName().stripDialect());
  return odsName(info && info->maxInputs != kVariadic
                     ? info->inputNames
                     : ArrayRef<StringLiteral>(),
                 op->getNumOperands(), i, "operand");
}

std::string comet::onnx::getResultName(Operation *op, unsigned i) {
  const OpInfo *info = lookupOpInfo(op->getName().stripDialect());
  return odsName(info && info->maxOutputs != kVariadic
                     ? info->outputNames
                     : ArrayRef<StringLiteral>(),
                 op->getNumResults(), i, "result");
}

bool comet::onnx::isSameDomain(StringRef a, StringRef b) {
  auto norm = [](StringRef d) { return d == "ai.onnx" ? StringRef() : d; };
  return norm(a) == norm(b);
}

std::optional<StringRef> comet::onnx::getONNXDomain(Operation *op) {
  if (!isa_and_nonnull<ONNXDialect>(op->getDialect()))
    return std::nullopt;
  if (const OpInfo *info = lookupOpInfo(op->getName().stripDialect()))
    return StringRef(info->domain);
  return std::nullopt;
}

Type comet::onnx::getElementType(MLIRContext *ctx, int64_t dataType) {
  Builder b(ctx);
  switch (dataType) {
  case 1:
    return b.getF32Type();
  case 2:
    return b.getIntegerType(8, /*isSigned=*/false);
  case 3:
    return b.getIntegerType(8);
  case 4:
    return b.getIntegerType(16, /*isSigned=*/false);
  case 5:
    return b.getIntegerType(16);
  case 6:
    return b.getIntegerType(32);
  case 7:
    return b.getIntegerType(64);
  case 9:
    return b.getI1Type();
  case 10:
    return b.getF16Type();
  case 11:
    return b.getF64Type();
  case 12:
    return b.getIntegerType(32, /*isSigned=*/false);
  case 13:
    return b.getIntegerType(64, /*isSigned=*/false);
  case 16:
    return b.getBF16Type();
  default:
    return {};
  }
}

std::optional<std::pair<Value, Value>>
comet::onnx::getLossScoresAndLabels(Operation *op) {
  if (auto l = dyn_cast<SoftmaxCrossEntropyLossOp>(op))
    return std::make_pair(l.getScores(), l.getLabels());
  if (auto l = dyn_cast<SoftmaxCrossEntropyLossInternalOp>(op))
    return std::make_pair(l.getScores(), l.getLabels());
  return std::nullopt;
}

std::optional<SmallVector<int64_t>> comet::onnx::getConstantInts(Value v) {
  Attribute attr;
  // The shape of a static tensor is known: once the lowering has
  // specialized the batch, Reshape/Expand/SliceGrad targets fold.
  if (auto shape = v.getDefiningOp<ShapeOp>()) {
    auto t = dyn_cast<RankedTensorType>(shape.getData().getType());
    if (!t || !t.hasStaticShape())
      return std::nullopt;
    int64_t r = t.getRank();
    auto clamp = [&](int64_t x) {
      return std::clamp<int64_t>(x < 0 ? x + r : x, 0, r);
    };
    int64_t start = clamp(shape.getStart()),
            end = shape.getEnd() ? clamp(*shape.getEnd()) : r;
    return SmallVector<int64_t>(t.getShape().begin() + start,
                                t.getShape().begin() + std::max(start, end));
  }
  if (auto size = v.getDefiningOp<SizeOp>()) {
    auto t = dyn_cast<RankedTensorType>(size.getData().getType());
    if (!t || !t.hasStaticShape())
      return std::nullopt;
    return SmallVector<int64_t>{t.getNumElements()};
  }
  // Negated constant pads (the gradient of a Pad).
  if (auto neg = v.getDefiningOp<NegOp>()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    auto x = getConstantInts(neg.getX());
    if (!t || !t.getElementType().isInteger(64) || !x)
      return std::nullopt;
    for (int64_t &e : *x)
      e = int64_t(0 - uint64_t(e));
    return x;
  }
  // Integer arithmetic on one-element constants (Size / Size in the
  // gradient of a mean).
  if (Operation *def = v.getDefiningOp();
      def && isa<AddOp, SubOp, MulOp, DivOp>(def)) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !t.getElementType().isInteger(64))
      return std::nullopt;
    auto a = getConstantInts(def->getOperand(0)),
         c = getConstantInts(def->getOperand(1));
    if (!a || !c || a->size() != 1 || c->size() != 1)
      return std::nullopt;
    int64_t x = (*a)[0], y = (*c)[0], r;
    if (isa<AddOp>(def))
      r = int64_t(uint64_t(x) + uint64_t(y));
    else if (isa<SubOp>(def))
      r = int64_t(uint64_t(x) - uint64_t(y));
    else if (isa<MulOp>(def))
      r = int64_t(uint64_t(x) * uint64_t(y));
    else if (y == 0 || (x == INT64_MIN && y == -1))
      return std::nullopt;
    else
      r = x / y;
    return SmallVector<int64_t>{r};
  }
  // The shape plumbing of exported attention: a shape entry taken by
  // Gather, re-ranked by Unsqueeze/Squeeze, kept by an i64 Cast, joined by
  // Concat; and the lengths ConcatTraining records for SplitTraining.
  if (Operation *def = v.getDefiningOp();
      def && isa<UnsqueezeOp, SqueezeOp, CastOp>(def)) {
    if (!getElementTypeOrSelf(v.getType()).isInteger(64) ||
        !getElementTypeOrSelf(def->getOperand(0).getType()).isInteger(64))
      return std::nullopt;
    return getConstantInts(def->getOperand(0));
  }
  if (auto gather = v.getDefiningOp<GatherOp>()) {
    auto t = dyn_cast<RankedTensorType>(gather.getData().getType());
    auto data = getConstantInts(gather.getData()),
         idx = getConstantInts(gather.getIndices());
    if (!t || t.getRank() != 1 || !data || !idx)
      return std::nullopt;
    int64_t n = data->size();
    SmallVector<int64_t> out;
    for (int64_t i : *idx) {
      if (i < -n || i >= n)
        return std::nullopt;
      out.push_back((*data)[i < 0 ? i + n : i]);
    }
    return out;
  }
  // Concat, and ConcatTraining, which ORT's training graphs put in place of
  // every Concat, the shape-building ones included. The values are flat
  // (row-major), so only a concatenation along axis 0 is their joining.
  auto concatenated = [](ValueRange inputs,
                         int64_t axis) -> std::optional<SmallVector<int64_t>> {
    SmallVector<int64_t> out;
    for (Value in : inputs) {
      if (axis < 0) {
        auto t = dyn_cast<RankedTensorType>(in.getType());
        if (!t || axis + t.getRank() != 0)
          return std::nullopt;
      } else if (axis != 0) {
        return std::nullopt;
      }
      auto part = getConstantInts(in);
      if (!part)
        return std::nullopt;
      out.append(*part);
    }
    return out;
  };
  if (auto cat = v.getDefiningOp<ConcatOp>())
    return concatenated(cat.getInputs(), cat.getAxis());
  if (auto cat = v.getDefiningOp<ConcatTrainingOp>();
      cat && v == cat.getConcatResult())
    return concatenated(cat.getInputs(), cat.getAxis());
  if (auto cat = v.getDefiningOp<ConcatTrainingOp>();
      cat && v == cat.getPerInputLength()) {
    SmallVector<int64_t> out;
    for (Value in : cat.getInputs()) {
      auto t = dyn_cast<RankedTensorType>(in.getType());
      if (!t)
        return std::nullopt;
      int64_t r = t.getRank(),
              a = cat.getAxis() < 0 ? cat.getAxis() + r : cat.getAxis();
      if (a < 0 || a >= r || t.isDynamicDim(a))
        return std::nullopt;
      out.push_back(t.getDimSize(a));
    }
    return out;
  }
  // Positions (torch.arange) once the sequence length is static. Counts
  // come from the file: a range longer than kMaxFoldedRange stays unknown.
  if (auto range = v.getDefiningOp<RangeOp>()) {
    constexpr int64_t kMaxFoldedRange = 1 << 24;
    if (!getElementTypeOrSelf(range.getStart().getType()).isInteger(64))
      return std::nullopt;
    auto start = getConstantInts(range.getStart()),
         limit = getConstantInts(range.getLimit()),
         delta = getConstantInts(range.getDelta());
    if (!start || !limit || !delta || start->size() != 1 ||
        limit->size() != 1 || delta->size() != 1 || (*delta)[0] == 0)
      return std::nullopt;
    __int128 s0 = (*start)[0], l = (*limit)[0], d = (*delta)[0];
    __int128 span = l - s0;
    // ceil(span / d), and 0 when the range is empty.
    __int128 count = span / d + (span % d != 0 && ((span > 0) == (d > 0)));
    if (count < 0)
      count = 0;
    if (count > kMaxFoldedRange)
      return std::nullopt;
    SmallVector<int64_t> out;
    for (__int128 i = 0; i < count; ++i)
      out.push_back(int64_t(s0 + i * d));
    return out;
  }
  if (auto init = v.getDefiningOp<InitializerOp>())
    attr = init.getValue();
  else if (auto cst = v.getDefiningOp<ConstantOp>()) {
    if (auto ints = cst.getValueIntsAttr())
      return SmallVector<int64_t>(ints.asArrayRef());
    if (auto one = cst.getValueIntAttr())
      return SmallVector<int64_t>{one.getValue().getSExtValue()};
    attr = cst.getValueAttr();
  }
  if (!attr)
    return std::nullopt;
  auto type = cast<ShapedType>(cast<TypedAttr>(attr).getType());
  if (!type.hasStaticShape() || !type.getElementType().isInteger())
    return std::nullopt;
  SmallVector<int64_t> out;
  if (auto dense = dyn_cast<DenseIntElementsAttr>(attr)) {
    for (const APInt &x : dense.getValues<APInt>())
      out.push_back(x.getSExtValue());
    return out;
  }
  auto res = dyn_cast<DenseResourceElementsAttr>(attr);
  if (!res)
    return std::nullopt;
  AsmResourceBlob *blob = res.getRawHandle().getBlob();
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  if (!blob || (width != 32 && width != 64))
    return std::nullopt;
  ArrayRef<char> data = blob->getData();
  int64_t n = type.getNumElements();
  if (data.size() != size_t(n) * (width / 8))
    return std::nullopt;
  for (int64_t i = 0; i < n; ++i) {
    if (width == 64) {
      int64_t x;
      std::memcpy(&x, data.data() + i * 8, 8);
      out.push_back(x);
    } else {
      int32_t x;
      std::memcpy(&x, data.data() + i * 4, 4);
      out.push_back(x);
    }
  }
  return out;
}
