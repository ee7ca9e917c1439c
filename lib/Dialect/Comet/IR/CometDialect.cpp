//===- CometDialect.cpp - The comet dialect -------------------------------===//
#include "comet/Dialect/Comet/IR/CometDialect.h"
#include "comet/Dialect/Comet/IR/CometOps.h"

#include "comet/runtime/codec.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace comet;

#include "comet/Dialect/Comet/IR/CometDialect.cpp.inc"
#include "comet/Dialect/Comet/IR/CometEnums.cpp.inc"

// The dialect's codec numbers are the runtime's, so the lowering passes them
// through unchanged.
static_assert(static_cast<int32_t>(comet::Codec::raw) == COMET_RT_CODEC_RAW);
static_assert(static_cast<int32_t>(comet::Codec::sz) == COMET_RT_CODEC_SZ);
static_assert(static_cast<int32_t>(comet::Codec::mask) == COMET_RT_CODEC_MASK);

#define GET_ATTRDEF_CLASSES
#include "comet/Dialect/Comet/IR/CometAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "comet/Dialect/Comet/IR/CometTypes.cpp.inc"

void CometDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "comet/Dialect/Comet/IR/CometAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "comet/Dialect/Comet/IR/CometTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "comet/Dialect/Comet/IR/CometOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Codecs
//===----------------------------------------------------------------------===//

bool comet::codecSupportsElementType(Codec codec, Type elementType) {
  switch (codec) {
  case Codec::sz:
    // The quantizer works in the float's own arithmetic.
    return elementType.isF32() || elementType.isF16() || elementType.isBF16();
  case Codec::mask:
    return isa<FloatType>(elementType) || elementType.isSignlessInteger();
  case Codec::raw:
    return elementType.isIntOrIndexOrFloat();
  }
  return false;
}

//===----------------------------------------------------------------------===//
// BoundAttr
//===----------------------------------------------------------------------===//

LogicalResult BoundAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                APFloat abs, std::optional<int64_t> slot) {
  if (!abs.isFinite() || abs.isNegative() || abs.isZero())
    return emitError() << "error bound must be positive and finite, got "
                       << abs.convertToDouble();
  if (slot && *slot < 0)
    return emitError() << "slot must be non-negative, got " << *slot;
  return success();
}

// #comet.bound<abs = 1.0e-03, slot = 7>
Attribute BoundAttr::parse(AsmParser &parser, Type) {
  double abs = 0;
  std::optional<int64_t> slot;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword("abs") || parser.parseEqual() ||
      parser.parseFloat(abs))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    int64_t s;
    if (parser.parseKeyword("slot") || parser.parseEqual() ||
        parser.parseInteger(s))
      return {};
    slot = s;
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<BoundAttr>(loc, parser.getContext(), APFloat(abs),
                                      slot);
}

void BoundAttr::print(AsmPrinter &printer) const {
  printer << "<abs = ";
  printer.printFloat(getAbs());
  if (getSlot())
    printer << ", slot = " << *getSlot();
  printer << ">";
}

//===----------------------------------------------------------------------===//
// CompressedType
//===----------------------------------------------------------------------===//

LogicalResult
CompressedType::verify(function_ref<InFlightDiagnostic()> emitError,
                       RankedTensorType tensorType, Codec codec) {
  if (!codecSupportsElementType(codec, tensorType.getElementType()))
    return emitError() << "codec '" << stringifyCodec(codec)
                       << "' cannot store elements of type "
                       << tensorType.getElementType();
  return success();
}
