//===- Symbols.cpp - The runtime symbols the JIT binds --------------------===//
//
// Every function of comet/runtime/abi.def, bound by address: linking them
// here keeps the runtime loaded and makes the lookup independent of dlsym.
// The list is the table itself, so a new runtime function needs no edit
// here.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

#include "comet/runtime/abi.h"

namespace comet {

llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner mangle) {
  llvm::orc::SymbolMap m;
#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args)                                         \
  m[mangle("_mlir_ciface_comet_rt_" #name)] = {                                \
      llvm::orc::ExecutorAddr::fromPtr(&_mlir_ciface_comet_rt_##name),         \
      llvm::JITSymbolFlags::Exported};
#include "comet/runtime/abi.def"
  return m;
}

} // namespace comet
