//===- ShapeHelpers.cpp - Shape arithmetic for onnx verifiers/inference ---===//
#include "ShapeHelpers.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <utility>

using namespace mlir;
using namespace comet::onnx;
using namespace comet::onnx::shape;

bool shape::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                            SmallVectorImpl<int64_t> &out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1)
      out[i] = y;
    else if (y == 1)
      out[i] = x;
    else if (isDyn(x))
      out[i] = y;
    else if (isDyn(y) || x == y)
      out[i] = x;
    else
      return false;
  }
  return true;
}

std::optional<std::pair<int64_t, int64_t>>
shape::sliceAxis(int64_t d, int64_t start, int64_t end, int64_t step) {
  __int128 b = start, e = end;
  if (b < 0)
    b += d;
  if (e < 0)
    e += d;
  if (step > 0) {
    b = std::clamp<__int128>(b, 0, d);
    e = std::clamp<__int128>(e, 0, d);
    return std::make_pair(int64_t(b),
                          e > b ? int64_t((e - b + step - 1) / step) : 0);
  }
  if (step < 0) {
    b = std::clamp<__int128>(b, 0, d - 1);
    e = std::clamp<__int128>(e, -1, d - 1);
    return std::make_pair(
        int64_t(b), b > e ? int64_t((b - e - step - 1) / -__int128(step)) : 0);
  }
  return std::nullopt;
}

SmallVector<int64_t>
shape::windowOutputShape(ArrayRef<int64_t> in, int64_t outChannels,
                         ArrayRef<int64_t> kernel,
                         std::optional<ArrayRef<int64_t>> pads,
                         std::optional<ArrayRef<int64_t>> strides,
                         std::optional<ArrayRef<int64_t>> dilations,
                         StringRef autoPad, bool ceilMode) {
  size_t spatial = kernel.size();
  SmallVector<int64_t> out{in[0], outChannels};
  // In 128 bits: dims and attributes come from untrusted files.
  for (size_t i = 0; i < spatial; ++i) {
    __int128 x = in[2 + i];
    __int128 s = strides && i < strides->size() ? (*strides)[i] : 1;
    __int128 d = dilations && i < dilations->size() ? (*dilations)[i] : 1;
    __int128 k = (__int128(kernel[i]) - 1) * d + 1;
    if (isDyn(in[2 + i]) || s <= 0 || d <= 0 || k <= 0) {
      out.push_back(ShapedType::kDynamic);
      continue;
    }
    __int128 r;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      r = (x + s - 1) / s;
    } else {
      __int128 p = 0, begin = 0;
      if (pads && autoPad != "VALID" && pads->size() == 2 * spatial) {
        begin = (*pads)[i];
        p = begin + (*pads)[i + spatial];
      }
      __int128 span = x + p - k;
      if (!ceilMode) {
        r = span < 0 ? -1 : span / s + 1;
      } else {
        // ceil(span / s) + 1, span < 0 included: a window wider than the
        // padded input still gives one output (GoogLeNet's last MaxPool at
        // 28x28 pools 1x1 with a 2x2 window). The last window must start
        // inside the input or its leading pad, as PyTorch and the runtime's
        // check require.
        r = (span >= 0 ? (span + s - 1) / s : -((-span) / s)) + 1;
        if (r > 1 && (r - 1) * s >= x + begin)
          --r;
        if (r < 1)
          r = -1;
      }
    }
    out.push_back(r < 0 || r > INT64_MAX / 2 ? ShapedType::kDynamic
                                             : int64_t(r));
  }
  return out;
}

int64_t shape::product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    if (isDyn(d) || d < 0 || __builtin_mul_overflow(p, d, &p))
      return ShapedType::kDynamic;
  return p;
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

LogicalResult checks::checkRankAtLeast(Operation *op, Value v, StringRef what,
                                       int64_t rank) {
  if (auto shape = shapeOf(v); shape && int64_t(shape->size()) < rank)
    return op->emitOpError() << what << " must have rank >= " << rank
                             << ", got " << shape->size();
  return success();
}

LogicalResult checks::checkRank(Operation *op, Value v, StringRef what,
                                int64_t rank) {
  if (auto shape = shapeOf(v); shape && int64_t(shape->size()) != rank)
    return op->emitOpError()
           << what << " must have rank " << rank << ", got " << shape->size();
  return success();
}

LogicalResult
checks::checkSameElementType(Operation *op,
                             ArrayRef<std::pair<Value, StringRef>> vs) {
  Type first;
  StringRef firstName;
  for (auto [v, name] : vs) {
    Type t = elementTypeOf(v);
    if (!t)
      continue;
    if (!first) {
      first = t, firstName = name;
      continue;
    }
    if (t != first)
      return op->emitOpError()
             << "element type mismatch: " << firstName << " has " << first
             << " but " << name << " has " << t;
  }
  return success();
}

LogicalResult checks::checkFloat(Operation *op, Value v, StringRef what) {
  if (Type t = elementTypeOf(v); t && !isa<FloatType>(t))
    return op->emitOpError()
           << what << " must have a float element type, got " << t;
  return success();
}

LogicalResult checks::checkInteger(Operation *op, Value v, StringRef what) {
  if (Type t = elementTypeOf(v); t && !t.isSignlessInteger())
    return op->emitOpError()
           << what << " must have a signed integer element type, got " << t;
  return success();
}

LogicalResult checks::checkShapeTensor(Operation *op, Value v, StringRef what) {
  if (Type t = elementTypeOf(v); t && !t.isSignlessInteger(64))
    return op->emitOpError() << what << " must be a tensor of i64, got " << t;
  return checkRank(op, v, what, 1);
}

LogicalResult checks::checkCompatibleShapes(Operation *op, Value a,
                                            StringRef aName, Value b,
                                            StringRef bName) {
  auto sa = shapeOf(a), sb = shapeOf(b);
  if (!sa || !sb)
    return success();
  bool ok = sa->size() == sb->size();
  for (size_t i = 0; ok && i < sa->size(); ++i)
    ok = isDyn((*sa)[i]) || isDyn((*sb)[i]) || (*sa)[i] == (*sb)[i];
  if (!ok)
    return op->emitOpError()
           << "shape mismatch: " << aName << " is " << a.getType() << " but "
           << bName << " is " << b.getType();
  return success();
}

LogicalResult checks::checkOneElement(Operation *op, Value v, StringRef what) {
  auto s = shapeOf(v);
  if (!s)
    return success();
  for (int64_t d : *s)
    if (!isDyn(d) && d != 1)
      return op->emitOpError()
             << what << " must hold one element, got " << v.getType();
  return success();
}

LogicalResult checks::checkFlag(Operation *op, Value v, StringRef what) {
  if (Type t = elementTypeOf(v); t && !t.isInteger(1))
    return op->emitOpError()
           << what << " must be a bool (i1) tensor, got " << t;
  return checkOneElement(op, v, what);
}

LogicalResult checks::checkAxis(Operation *op, Value v, int64_t axis,
                                StringRef what) {
  if (auto s = shapeOf(v)) {
    int64_t r = s->size();
    if (axis < -r || axis >= r)
      return op->emitOpError()
             << what << " " << axis << " is out of range for rank " << r;
  }
  return success();
}

LogicalResult checks::checkAxesList(Operation *op, ArrayRef<int64_t> axes,
                                    int64_t rank) {
  SmallVector<bool> seen(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return op->emitOpError()
             << "axis " << a << " is out of range for rank " << rank;
    if (std::exchange(seen[a < 0 ? a + rank : a], true))
      return op->emitOpError() << "axis " << a << " appears twice";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Types for inference
//===----------------------------------------------------------------------===//

Type infer::tensorOf(std::optional<ArrayRef<int64_t>> shape, Type elt) {
  if (!elt)
    return {};
  if (!shape)
    return UnrankedTensorType::get(elt);
  return RankedTensorType::get(*shape, elt);
}

Type infer::sameAs(Value v) {
  if (isa<TensorType, SeqType>(v.getType()))
    return v.getType();
  return {};
}

Type infer::typeOfUnknownShape(Value shape, Type elt) {
  auto ss = shapeOf(shape);
  if (ss && ss->size() == 1 && !isDyn((*ss)[0]) && (*ss)[0] <= kMaxInferredRank)
    return RankedTensorType::get(SmallVector<int64_t>((*ss)[0], kDyn), elt);
  return tensorOf(std::nullopt, elt);
}

Type infer::broadcastType(ValueRange operands, Type elt) {
  SmallVector<int64_t> shape, next;
  for (auto [i, v] : llvm::enumerate(operands)) {
    auto s = shapeOf(v);
    if (!s || (i > 0 && !broadcastShapes(shape, *s, next)))
      return tensorOf(std::nullopt, elt);
    if (i == 0)
      shape.assign(s->begin(), s->end());
    else
      shape = next;
  }
  return tensorOf(ArrayRef<int64_t>(shape), elt);
}

void infer::init(Operation *op, SmallVectorImpl<Type> &types) {
  types.assign(op->getNumResults(), Type());
}
