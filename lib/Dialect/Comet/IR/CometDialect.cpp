//===- CometDialect.cpp - The comet dialect -------------------------------===//
#include "comet/Dialect/Comet/IR/CometDialect.h"
#include "comet/Dialect/Comet/IR/CometOps.h"

#include "comet/runtime/codec.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
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
// ConsumerAttr, ObserveAttr, SiteAttr
//===----------------------------------------------------------------------===//

static bool isPositiveFinite(const APFloat &f) {
  return f.isFinite() && !f.isNegative() && !f.isZero();
}

LogicalResult ConsumerAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   WeightGradKind, StringRef, APFloat terms,
                                   APFloat reuse, int64_t elements) {
  if (!isPositiveFinite(terms))
    return emitError() << "terms must be positive and finite, got "
                       << terms.convertToDouble();
  if (!isPositiveFinite(reuse))
    return emitError() << "reuse must be positive and finite, got "
                       << reuse.convertToDouble();
  if (elements <= 0)
    return emitError() << "elements must be positive, got " << elements;
  return success();
}

LogicalResult ObserveAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t slot, int64_t consumer, int64_t grad,
                                  std::optional<int64_t> aux) {
  if (slot < 0)
    return emitError() << "slot must be non-negative, got " << slot;
  if (consumer < 0)
    return emitError() << "consumer must be non-negative, got " << consumer;
  if (grad < 0)
    return emitError() << "grad operand must be non-negative, got " << grad;
  if (aux && *aux < 0)
    return emitError() << "aux operand must be non-negative, got " << *aux;
  return success();
}

LogicalResult SiteAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               StringRef, Codec codec, int64_t bytes,
                               BoundAttr bound,
                               ArrayRef<ConsumerAttr> consumers) {
  if (bytes < 0)
    return emitError() << "bytes must be non-negative, got " << bytes;
  if (isLossy(codec) != static_cast<bool>(bound))
    return emitError() << "codec '" << stringifyCodec(codec) << "' "
                       << (bound ? "takes no bound" : "needs a bound");
  if (!consumers.empty() && (!bound || !bound.getSlot()))
    return emitError() << "consumers need a slot in the bound";
  return success();
}

/// The array attribute `attr` of `op`, each element of type `AttrT`.
template <typename AttrT>
static FailureOr<SmallVector<AttrT>> arrayOf(Operation *op, NamedAttribute attr,
                                             StringRef what) {
  auto arr = dyn_cast<ArrayAttr>(attr.getValue());
  SmallVector<AttrT> out;
  if (arr)
    for (Attribute a : arr)
      if (auto e = dyn_cast<AttrT>(a))
        out.push_back(e);
  if (!arr || out.size() != arr.size() || out.empty())
    return op->emitOpError("'") << attr.getName().getValue()
                                << "' must be a non-empty array of " << what;
  return out;
}

LogicalResult CometDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kTuneAttrName) {
    auto c = dyn_cast<CompressOp>(op);
    if (!c || !c.getBound() || !c.getBound()->getSlot())
      return op->emitOpError("'")
             << name << "' belongs on a comet.compress with a slotted bound";
    return arrayOf<ConsumerAttr>(op, attr, "#comet.consumer");
  }
  if (name == kObserveAttrName) {
    auto entries = arrayOf<ObserveAttr>(op, attr, "#comet.observe");
    if (failed(entries))
      return failure();
    int64_t n = op->getNumOperands();
    for (ObserveAttr e : *entries)
      if (e.getGrad() >= n || (e.getAux() && *e.getAux() >= n))
        return op->emitOpError("'")
               << name << "' names operand "
               << (e.getGrad() >= n ? e.getGrad() : *e.getAux())
               << " but the op has " << n << " operands";
    return success();
  }
  if (name == kSitesAttrName) {
    if (!isa<FunctionOpInterface>(op))
      return op->emitOpError("'") << name << "' belongs on a function";
    auto sites = arrayOf<SiteAttr>(op, attr, "#comet.site");
    if (failed(sites))
      return failure();
    llvm::SmallDenseSet<int64_t> slots;
    for (SiteAttr s : *sites)
      if (s.getBound() && s.getBound().getSlot() &&
          !slots.insert(*s.getBound().getSlot()).second)
        return op->emitOpError("'")
               << name << "' uses slot " << *s.getBound().getSlot() << " twice";
    return success();
  }
  if (name == kBudgetAttrName) {
    auto d = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !d)
      return op->emitOpError("'")
             << name << "' must be a dictionary on a function";
    for (StringRef key : {"bytes", "predicted_peak", "compressed"})
      if (!d.getAs<IntegerAttr>(key))
        return op->emitOpError("'")
               << name << "' needs an integer '" << key << "'";
    if (!d.getAs<FloatAttr>("sz_ratio"))
      return op->emitOpError("'") << name << "' needs a float 'sz_ratio'";
    auto names = d.getAs<ArrayAttr>("not_selected");
    if (!names || !llvm::all_of(names, llvm::IsaPred<StringAttr>))
      return op->emitOpError("'")
             << name << "' needs 'not_selected', an array of strings";
    return success();
  }
  if (name == kFusedOptimizerAttrName) {
    auto kind = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !kind ||
        OptimizerUpdateOp::numStates(kind.getValue()) < 0)
      return op->emitOpError("'")
             << name
             << "' must be adamw, sgd_v2 or sgd_momentum, on a function";
    return success();
  }
  return op->emitOpError("unknown comet attribute '") << name << "'";
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
