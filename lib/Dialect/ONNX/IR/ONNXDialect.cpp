//===- ONNXDialect.cpp - The onnx dialect and its op table ----------------===//
#include "comet/Dialect/ONNX/IR/ONNXDialect.h"
#include "ShapeHelpers.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"
#include "comet/runtime/abi.h"

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

namespace {

/// The most elements a fold of an elementwise op or a ConstantOfShape
/// computes: shape arithmetic is small; a larger integer tensor is the
/// runtime's to compute.
constexpr int64_t kMaxFoldedElements = 1 << 16;

/// The integer elements of a dense or resource attribute (bools as 0 and
/// 1), or nullopt.
std::optional<SmallVector<int64_t>> intsOf(Attribute attr) {
  auto typed = dyn_cast<TypedAttr>(attr);
  auto type = typed ? dyn_cast<ShapedType>(typed.getType()) : ShapedType();
  if (!type || !type.hasStaticShape() || !type.getElementType().isInteger())
    return std::nullopt;
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  bool zext = width == 1 || type.getElementType().isUnsignedInteger();
  SmallVector<int64_t> out;
  if (auto dense = dyn_cast<DenseIntElementsAttr>(attr)) {
    for (const APInt &x : dense.getValues<APInt>())
      out.push_back(zext ? int64_t(x.getZExtValue()) : x.getSExtValue());
    return out;
  }
  auto res = dyn_cast<DenseResourceElementsAttr>(attr);
  if (!res)
    return std::nullopt;
  AsmResourceBlob *blob = res.getRawHandle().getBlob();
  // Bools are a byte each, as in an ONNX raw_data.
  unsigned bytes = width == 1 ? 1 : width / 8;
  if (!blob || (width != 1 && width != 8 && width != 32 && width != 64))
    return std::nullopt;
  ArrayRef<char> data = blob->getData();
  int64_t n = type.getNumElements();
  if (data.size() != size_t(n) * bytes)
    return std::nullopt;
  for (int64_t i = 0; i < n; ++i) {
    const char *p = data.data() + i * bytes;
    if (width == 64) {
      int64_t x;
      std::memcpy(&x, p, 8);
      out.push_back(x);
    } else if (width == 32) {
      int32_t x;
      std::memcpy(&x, p, 4);
      out.push_back(zext ? int64_t(uint32_t(x)) : x);
    } else if (width == 8) {
      out.push_back(zext ? int64_t(uint8_t(*p)) : int64_t(int8_t(*p)));
    } else {
      out.push_back(*p != 0);
    }
  }
  return out;
}

/// f of the operands' constant elements over their numpy broadcast (an
/// operand's shape is its static type's, or a scalar's when it holds one
/// element); nullopt when an operand is not constant, the shapes do not
/// broadcast, the result has more than kMaxFoldedElements or f gives
/// nothing for an element.
std::optional<SmallVector<int64_t>>
foldBroadcast(ValueRange operands,
              llvm::function_ref<std::optional<int64_t>(ArrayRef<int64_t>)> f) {
  SmallVector<SmallVector<int64_t>> values, shapes;
  SmallVector<int64_t> shape, next;
  for (Value v : operands) {
    auto x = getConstantInts(v);
    if (!x)
      return std::nullopt;
    auto t = dyn_cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> s;
    if (t && t.hasStaticShape() && t.getNumElements() == int64_t(x->size()))
      s.assign(t.getShape().begin(), t.getShape().end());
    else if (x->size() != 1)
      return std::nullopt;
    if (!shape::broadcastShapes(shape, s, next))
      return std::nullopt;
    shape = next;
    values.push_back(std::move(*x));
    shapes.push_back(std::move(s));
  }
  int64_t n = 1;
  for (int64_t d : shape)
    if (d > kMaxFoldedElements || (n *= d) > kMaxFoldedElements)
      return std::nullopt;
  // Each operand's strides over the result (0 along a broadcast dim).
  int64_t rank = shape.size();
  SmallVector<SmallVector<int64_t>> strides;
  for (const SmallVector<int64_t> &s : shapes) {
    SmallVector<int64_t> st(rank, 0);
    int64_t off = rank - int64_t(s.size()), step = 1;
    for (int64_t d = int64_t(s.size()) - 1; d >= 0; --d) {
      st[d + off] = s[d] == 1 ? 0 : step;
      step *= s[d];
    }
    strides.push_back(std::move(st));
  }
  SmallVector<int64_t> out, args(values.size());
  out.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    for (auto [k, st] : llvm::enumerate(strides)) {
      int64_t off = 0;
      for (int64_t d = rank - 1, rest = i; d >= 0; --d) {
        off += (rest % shape[d]) * st[d];
        rest /= shape[d];
      }
      args[k] = values[k][off];
    }
    std::optional<int64_t> r = f(args);
    if (!r)
      return std::nullopt;
    out.push_back(*r);
  }
  return out;
}

/// x op y for an i64 Add, Sub, Mul, Div or Mod (wrapping as the runtime
/// would); nullopt for a zero divisor and INT64_MIN / -1, which stay
/// unknown: the runtime reports them if the value is computed.
std::optional<int64_t> arithmetic(Operation *op, int64_t x, int64_t y) {
  if (isa<AddOp>(op))
    return int64_t(uint64_t(x) + uint64_t(y));
  if (isa<SubOp>(op))
    return int64_t(uint64_t(x) - uint64_t(y));
  if (isa<MulOp>(op))
    return int64_t(uint64_t(x) * uint64_t(y));
  if (y == 0)
    return std::nullopt;
  if (auto mod = dyn_cast<ModOp>(op))
    return comet_rt_mod_i64(x, y, mod.getFmod());
  if (x == INT64_MIN && y == -1)
    return std::nullopt;
  return x / y;
}

/// The values of a constant with a static shape, and that shape.
std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>>
staticConstant(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  // Checked first: getConstantInts of float data would walk its producers.
  if (!t || !t.hasStaticShape() || !t.getElementType().isInteger() ||
      t.getNumElements() > kMaxFoldedElements)
    return std::nullopt;
  auto x = getConstantInts(v);
  if (!x || int64_t(x->size()) != t.getNumElements())
    return std::nullopt;
  return std::make_pair(std::move(*x), SmallVector<int64_t>(t.getShape()));
}

/// The elements of `from` at offset(index) for every index of `dims`, in
/// row-major order.
SmallVector<int64_t>
gatherStrided(ArrayRef<int64_t> from, ArrayRef<int64_t> dims,
              llvm::function_ref<int64_t(ArrayRef<int64_t>)> offset) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  SmallVector<int64_t> out, idx(dims.size(), 0);
  out.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(from[offset(idx)]);
    for (int64_t d = int64_t(dims.size()) - 1; d >= 0; --d) {
      if (++idx[d] < dims[d])
        break;
      idx[d] = 0;
    }
  }
  return out;
}

} // namespace

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
  // Integer arithmetic, comparison and selection on constants, with numpy
  // broadcasting: a mean's Size / Size, the padding Swin computes with Mod,
  // the target ViT's `class_token.expand(n, -1, -1)` builds with Equal and
  // Where.
  if (Operation *def = v.getDefiningOp();
      def && isa<AddOp, SubOp, MulOp, DivOp, ModOp>(def)) {
    if (!getElementTypeOrSelf(v.getType()).isInteger(64))
      return std::nullopt;
    return foldBroadcast(def->getOperands(),
                         [&](ArrayRef<int64_t> xs) -> std::optional<int64_t> {
                           return arithmetic(def, xs[0], xs[1]);
                         });
  }
  if (auto eq = v.getDefiningOp<EqualOp>()) {
    if (!getElementTypeOrSelf(eq.getA().getType()).isInteger())
      return std::nullopt;
    return foldBroadcast(eq->getOperands(),
                         [](ArrayRef<int64_t> xs) -> std::optional<int64_t> {
                           return xs[0] == xs[1];
                         });
  }
  if (auto where = v.getDefiningOp<WhereOp>()) {
    if (!getElementTypeOrSelf(v.getType()).isInteger())
      return std::nullopt;
    return foldBroadcast(where->getOperands(),
                         [](ArrayRef<int64_t> xs) -> std::optional<int64_t> {
                           return xs[0] ? xs[1] : xs[2];
                         });
  }
  // torch's F.pad puts its pads in ONNX's order by a Reshape to [n, 2], a
  // reversing Slice and a Transpose of constants.
  if (auto tr = v.getDefiningOp<TransposeOp>()) {
    auto in = staticConstant(tr.getData());
    if (!in)
      return std::nullopt;
    int64_t r = in->second.size();
    SmallVector<int64_t> perm;
    if (auto p = tr.getPerm())
      perm.assign(p->begin(), p->end());
    else
      for (int64_t d = r - 1; d >= 0; --d)
        perm.push_back(d);
    if (int64_t(perm.size()) != r)
      return std::nullopt;
    SmallVector<int64_t> strides(r, 1), outDims;
    for (int64_t d = r - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * in->second[d + 1];
    for (int64_t p : perm) {
      if (p < 0 || p >= r)
        return std::nullopt;
      outDims.push_back(in->second[p]);
    }
    return gatherStrided(in->first, outDims, [&](ArrayRef<int64_t> idx) {
      int64_t off = 0;
      for (int64_t d = 0; d < r; ++d)
        off += idx[d] * strides[perm[d]];
      return off;
    });
  }
  if (auto sl = v.getDefiningOp<SliceOp>()) {
    auto in = staticConstant(sl.getData());
    auto st = getConstantInts(sl.getStarts()),
         en = getConstantInts(sl.getEnds());
    bool noAxes = isa<NoneType>(sl.getAxes().getType()),
         noSteps = isa<NoneType>(sl.getSteps().getType());
    std::optional<SmallVector<int64_t>> ax, sp;
    if (!noAxes)
      ax = getConstantInts(sl.getAxes());
    if (!noSteps)
      sp = getConstantInts(sl.getSteps());
    if (!in || !st || !en || st->size() != en->size() ||
        (!noAxes && (!ax || ax->size() != st->size())) ||
        (!noSteps && (!sp || sp->size() != st->size())))
      return std::nullopt;
    const SmallVector<int64_t> &dims = in->second;
    int64_t r = dims.size();
    // Per dim: first index, step and count (whole dims where no axis says).
    SmallVector<int64_t> first(r, 0), step(r, 1), count(dims);
    for (size_t i = 0; i < st->size(); ++i) {
      int64_t a = ax ? (*ax)[i] : int64_t(i);
      if (a < 0)
        a += r;
      if (a < 0 || a >= r)
        return std::nullopt;
      int64_t s = sp ? (*sp)[i] : 1;
      auto w = shape::sliceAxis(dims[a], (*st)[i], (*en)[i], s);
      if (!w)
        return std::nullopt;
      first[a] = w->first;
      step[a] = s;
      count[a] = w->second;
    }
    SmallVector<int64_t> strides(r, 1);
    for (int64_t d = r - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * dims[d + 1];
    return gatherStrided(in->first, count, [&](ArrayRef<int64_t> idx) {
      int64_t off = 0;
      for (int64_t d = 0; d < r; ++d)
        off += (first[d] + idx[d] * step[d]) * strides[d];
      return off;
    });
  }
  // torch.ones_like of a shape (ORT usually folds it, not always).
  if (auto cos = v.getDefiningOp<ConstantOfShapeOp>()) {
    // Without a value it is f32 zeros.
    std::optional<SmallVector<int64_t>> fill;
    if (auto value = cos.getValue())
      fill = intsOf(*value);
    auto dims = getConstantInts(cos.getInput());
    if (!fill || fill->size() != 1 || !dims)
      return std::nullopt;
    int64_t n = 1;
    for (int64_t d : *dims)
      if (d < 0 || d > kMaxFoldedElements || (n *= d) > kMaxFoldedElements)
        return std::nullopt;
    return SmallVector<int64_t>(n, (*fill)[0]);
  }
  // The shape plumbing of exported attention: a shape entry taken by
  // Gather, re-ranked by Unsqueeze/Squeeze/Reshape, kept by an i64 Cast or
  // an Identity, joined by Concat; and the lengths ConcatTraining records for
  // SplitTraining.
  if (Operation *def = v.getDefiningOp();
      def && isa<UnsqueezeOp, SqueezeOp, CastOp, ReshapeOp, IdentityOp>(def)) {
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
  return intsOf(attr);
}
