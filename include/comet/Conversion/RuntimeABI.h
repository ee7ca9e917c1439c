//===- RuntimeABI.h - The runtime's C interface as MLIR types ---*- C++ -*-===//
//
// comet/runtime/abi.def, the one declaration of the runtime's C interface,
// seen from the compiler: an enumerator per function, its parameter kinds,
// and the MLIR function type the lowering declares for it. The runtime's
// pure-C enums (codec, allocation category) come from the runtime headers,
// so one numbering holds from the passes to the kernels.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_CONVERSION_RUNTIMEABI_H
#define COMET_CONVERSION_RUNTIMEABI_H

#include "comet/runtime/alloc.h"
#include "comet/runtime/codec.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace comet::rtabi {

/// What a parameter or result is (abi.def's kinds).
enum class Kind { tf32, ti64, ti1, tu8, buffer, handle, i64, i32, f32, f64 };
/// What a function returns.
enum class Ret { status, handle, none, buffer };

/// One enumerator per function of abi.def.
enum class Fn {
#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args) name,
#include "comet/runtime/abi.def"
};

namespace detail {
/// The number of parameters of each function, in Fn order.
inline constexpr unsigned kNumParams[] = {
#define COMET_RT_ARG(kind, name) +1
#define COMET_RT_FUNC(name, ret, args) 0 args,
#include "comet/runtime/abi.def"
};
/// All functions' parameter kinds, one function after the other.
inline constexpr Kind kParamKinds[] = {
#define COMET_RT_ARG(kind, name) Kind::kind,
#define COMET_RT_FUNC(name, ret, args) args
#include "comet/runtime/abi.def"
};
} // namespace detail

/// The number of parameters of fn (after the context), at compile time: the
/// lowering's generated calls check their arguments against abi.def.
constexpr unsigned numParams(Fn fn) {
  return detail::kNumParams[static_cast<unsigned>(fn)];
}
/// The kind of fn's parameter i (i < numParams(fn)).
constexpr Kind paramKind(Fn fn, unsigned i) {
  unsigned offset = 0;
  for (unsigned f = 0; f < static_cast<unsigned>(fn); ++f)
    offset += detail::kNumParams[f];
  return detail::kParamKinds[offset + i];
}
/// Whether a parameter of this kind is a tensor (an unranked memref).
constexpr bool isTensorKind(Kind k) {
  return k == Kind::tf32 || k == Kind::ti64 || k == Kind::ti1 || k == Kind::tu8;
}

struct FnInfo {
  llvm::StringRef name; ///< without the comet_rt_ prefix
  Ret ret;
  llvm::ArrayRef<Kind> params; ///< after the leading context
};

const FnInfo &info(Fn fn);

/// "comet_rt_<name>": the func.func the lowering declares; its C-interface
/// wrapper is _mlir_ciface_comet_rt_<name>.
std::string symbolName(Fn fn);

/// The MLIR type of a kind; the context is `!llvm.ptr`.
mlir::Type typeOf(mlir::MLIRContext *ctx, Kind kind);
mlir::Type contextType(mlir::MLIRContext *ctx);

/// The function type of fn, context first.
mlir::FunctionType functionType(mlir::MLIRContext *ctx, Fn fn);

} // namespace comet::rtabi

#endif // COMET_CONVERSION_RUNTIMEABI_H
