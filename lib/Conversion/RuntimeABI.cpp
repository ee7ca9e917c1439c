//===- RuntimeABI.cpp - abi.def's functions as MLIR function types --------===//
#include "comet/Conversion/RuntimeABI.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/Builders.h"

#include <vector>

using namespace mlir;

namespace comet::rtabi {

const FnInfo &info(Fn fn) {
  struct Entry {
    const char *name;
    Ret ret;
    std::vector<Kind> params;
  };
  static const std::vector<Entry> entries = {
#define COMET_RT_ARG(kind, name) Kind::kind,
#define COMET_RT_FUNC(name, ret, args) {#name, Ret::ret, {args}},
#include "comet/runtime/abi.def"
  };
  static const std::vector<FnInfo> infos = [] {
    std::vector<FnInfo> v;
    for (const Entry &e : entries)
      v.push_back({e.name, e.ret, e.params});
    return v;
  }();
  return infos[static_cast<size_t>(fn)];
}

std::string symbolName(Fn fn) { return ("comet_rt_" + info(fn).name).str(); }

Type contextType(MLIRContext *ctx) { return LLVM::LLVMPointerType::get(ctx); }

Type typeOf(MLIRContext *ctx, Kind kind) {
  Builder b(ctx);
  switch (kind) {
  case Kind::tf32:
    return UnrankedMemRefType::get(b.getF32Type(), 0);
  case Kind::ti64:
    return UnrankedMemRefType::get(b.getI64Type(), 0);
  case Kind::ti1:
    return UnrankedMemRefType::get(b.getI1Type(), 0);
  case Kind::tu8:
    return UnrankedMemRefType::get(b.getIntegerType(8, /*isSigned=*/false), 0);
  case Kind::buffer:
    return MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
  case Kind::handle:
  case Kind::i64:
    return b.getI64Type();
  case Kind::i32:
    return b.getI32Type();
  case Kind::f32:
    return b.getF32Type();
  case Kind::f64:
    return b.getF64Type();
  }
  llvm_unreachable("unknown kind");
}

FunctionType functionType(MLIRContext *ctx, Fn fn) {
  const FnInfo &fi = info(fn);
  SmallVector<Type> ins = {contextType(ctx)};
  for (Kind k : fi.params)
    ins.push_back(typeOf(ctx, k));
  SmallVector<Type> outs;
  switch (fi.ret) {
  case Ret::status:
    outs.push_back(IntegerType::get(ctx, 32));
    break;
  case Ret::handle:
    outs.push_back(IntegerType::get(ctx, 64));
    break;
  case Ret::buffer:
    outs.push_back(typeOf(ctx, Kind::buffer));
    break;
  case Ret::none:
    break;
  }
  return FunctionType::get(ctx, ins, outs);
}

} // namespace comet::rtabi
