//===- CometAttrs.td - comet attributes --------------------*- tablegen -*-===//
#ifndef COMET_DIALECT_COMET_IR_COMETATTRS_TD
#define COMET_DIALECT_COMET_IR_COMETATTRS_TD

include "comet/Dialect/Comet/IR/CometBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def Comet_BoundAttr : AttrDef<Comet_Dialect, "Bound"> {
  let mnemonic = "bound";
  let summary = "Absolute error bound of a lossy codec, and its tuning slot";
  let description = [{
    `abs` is the absolute error bound: every finite element x comes back as x'
    with |x - x'| <= abs. It must be positive and finite.

    `slot`, when present, names the runtime cell that holds this bound while
    training. The compiler writes `abs` as the slot's initial value; the
    runtime's tuner may change it. Slots are unique within a function.

    ```mlir
    #comet.bound<abs = 1.000000e-03, slot = 7>
    #comet.bound<abs = 5.000000e-02>
    ```
  }];
  let parameters = (ins
    APFloatParameter<"absolute error bound">:$abs,
    OptionalParameter<"std::optional<int64_t>", "tuning slot">:$slot);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "double":$abs, CArg<"std::optional<int64_t>", "std::nullopt">:$slot), [{
      return $_get($_ctxt, ::llvm::APFloat(abs), slot);
    }]>
  ];
  let extraClassDeclaration = [{
    double getAbsValue() const { return getAbs().convertToDouble(); }
  }];
}

// A double, written as a float literal.
// APFloat, as in #comet.bound, so that the attribute storage can hash it.
class Comet_F64Parameter<string desc> : APFloatParameter<desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double v;
    if ($_parser.parseFloat(v))
      return ::mlir::failure();
    return ::llvm::APFloat(v);
  }() }];
  let printer = [{ $_printer.printFloat($_self) }];
}

def Comet_ConsumerAttr : AttrDef<Comet_Dialect, "Consumer"> {
  let mnemonic = "consumer";
  let summary = "A weight-gradient consumer of a lossy slot, for the tuner";
  let description = [{
    compress-activations writes one per consumer that got a bound, in the
    `comet.tune` array of the `comet.compress`; the bound tuner re-derives
    the slot's bound from them and from the statistics that the consumer's
    `#comet.observe` feeds.

    - `kind`: the bound rule's form of the weight gradient (`conv`, `gemm`,
      `batchnorm`);
    - `param`: the parameter whose gradient it forms, or "" when unknown;
    - `terms`: N, the terms summed per weight-gradient element (positive);
    - `reuse`: u, how many outputs read each input element (AC-GC, positive);
    - `elements`: the activation's number of elements (positive).

    ```mlir
    #comet.consumer<kind = conv, param = "conv2.weight", terms = 6.400000e+03,
                    reuse = 2.500000e+01, elements = 50176>
    ```
  }];
  let parameters = (ins
    EnumParameter<Comet_WeightGradKind>:$kind,
    StringRefParameter<"parameter name">:$param,
    Comet_F64Parameter<"summed terms N">:$terms,
    Comet_F64Parameter<"reuse u">:$reuse,
    "int64_t":$elements);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "WeightGradKind":$kind, "::llvm::StringRef":$param,
                     "double":$terms, "double":$reuse, "int64_t":$elements), [{
      return $_get($_ctxt, kind, param, ::llvm::APFloat(terms),
                   ::llvm::APFloat(reuse), elements);
    }]>
  ];
  let extraClassDeclaration = [{
    double getTermsValue() const { return getTerms().convertToDouble(); }
    double getReuseValue() const { return getReuse().convertToDouble(); }
  }];
}

def Comet_ObserveAttr : AttrDef<Comet_Dialect, "Observe"> {
  let mnemonic = "observe";
  let summary = "Which operands of a consumer feed a slot's statistics";
  let description = [{
    compress-activations puts one per (slot, consumer) in the `comet.observe`
    array of the consumer op; comet-lower-to-runtime turns it into the
    slot-statistics calls before the op: mean |dY| of operand `grad`, and,
    when `aux` is given, the largest element of operand `aux` (a
    BatchNormalizationGrad's saved 1/std). `consumer` is the index of the
    matching `#comet.consumer` in the slot's `comet.tune`. The op's verifier
    checks that both operands exist.

    ```mlir
    #comet.observe<slot = 0, consumer = 0, grad = 1>
    #comet.observe<slot = 2, consumer = 0, grad = 0, aux = 4>
    ```
  }];
  let parameters = (ins "int64_t":$slot, "int64_t":$consumer, "int64_t":$grad,
                        OptionalParameter<"std::optional<int64_t>">:$aux);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

// Nested attributes print in full (#comet.bound<...>) so that a site reads
// the same as the attributes elsewhere.
def Comet_OptionalBoundParameter
    : OptionalParameter<"::comet::BoundAttr", "static bound and slot"> {
  let printer = [{ $_printer << $_self }];
}
def Comet_ConsumerListParameter
    : OptionalArrayRefParameter<"::comet::ConsumerAttr", "tuner consumers"> {
  let printer = [{ ::llvm::interleaveComma($_self, $_printer) }];
}

def Comet_SiteAttr : AttrDef<Comet_Dialect, "Site"> {
  let mnemonic = "site";
  let summary = "One compress site of a lowered function, for the Engine";
  let description = [{
    comet-lower-to-runtime records one per `comet.compress`, in schedule
    order, in the `comet.sites` array of the function it writes; the Engine
    reads them for its per-site report and the tuner's slot table.

    - `value`: the ONNX name of the compressed tensor;
    - `codec`: its codec;
    - `bytes`: the tensor's bytes before compression;
    - `bound`: the static bound and slot, for a lossy codec (required
      there, absent otherwise);
    - `consumers`: the slot's `comet.tune` consumers, when it has any (they
      need a slot).

    ```mlir
    #comet.site<value = "relu1.out", codec = mask, bytes = 64>
    #comet.site<value = "fc1.in", codec = sz, bytes = 256,
                bound = #comet.bound<abs = 2.500000e-01, slot = 0>,
                consumers = [#comet.consumer<kind = gemm, param = "fc1.weight",
                  terms = 2.000000e+00, reuse = 1.000000e+00, elements = 64>]>
    ```
  }];
  let parameters = (ins
    StringRefParameter<"ONNX value name">:$value,
    EnumParameter<Comet_Codec>:$codec,
    "int64_t":$bytes,
    Comet_OptionalBoundParameter:$bound,
    Comet_ConsumerListParameter:$consumers);
  let assemblyFormat = [{
    `<` `value` `=` $value `,` `codec` `=` $codec `,` `bytes` `=` $bytes
    (`,` `bound` `=` $bound^)? (`,` `consumers` `=` `[` $consumers^ `]`)? `>`
  }];
  let genVerifyDecl = 1;
}

#endif // COMET_DIALECT_COMET_IR_COMETATTRS_TD
