//===- comet-compile.cpp - Compile a training step ahead of time ----------===//
//
//   comet-compile ARTIFACT_DIR|training_model.onnx -o step.so [--compress
//       none|static|adaptive] [--batch B] [--optimizer OPT.onnx|builtin]
//       [--weights CKPT] [--mcpu CPU]
//
// Compiles the training graph (and the eval graph beside it) with the
// folder's checkpoint and optimizer as comet-train does, through
// comet::Engine's pipeline to the LLVM dialect, then, instead of JIT-compiling,
// translates both to LLVM IR, adds a packed entry point for each and the data
// section that comet-run reads (comet/driver/aot.h: signatures, initial
// weights, optimizer, compress sites, memory prediction), and emits an object
// file with LLVM's code generator. An output not ending in .o is linked into a
// shared library by the system's C compiler driver. docs/aot.md describes the
// result.
//
//===----------------------------------------------------------------------===//
#include "EngineFlags.h"
#include "comet/Engine/Engine.h"
#include "comet/driver/aot.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace llvm;

static cl::OptionCategory cat("comet-compile options");
// The flags that shape the graph are comet-train's.
static comet::EngineFlags engineFlags(cat);
static cl::opt<std::string>
    inputPath(cl::Positional, cl::Required,
              cl::desc("<artifact folder|training_model.onnx|.mlir>"),
              cl::cat(cat));
static cl::opt<std::string>
    outputPath("o", cl::Required,
               cl::desc("Output: a shared library, or an object file (.o)"),
               cl::value_desc("file"), cl::cat(cat));
static cl::opt<std::string>
    mcpu("mcpu",
         cl::desc("Target CPU (default: this machine's, with its features, "
                  "as the JIT compiles; e.g. x86-64-v3 for another machine)"),
         cl::init(""), cl::cat(cat));
static cl::opt<unsigned> optLevel("opt-level",
                                  cl::desc("LLVM code generation level (0-3)"),
                                  cl::init(2), cl::cat(cat));
static cl::opt<std::string>
    linker("linker",
           cl::desc("C compiler driver that links the shared library"),
           cl::init("cc"), cl::cat(cat));

static int fail(const Twine &msg) {
  errs() << "comet-compile: error: " << msg << "\n";
  return 1;
}

/// Adds `void name(void **args)` that calls `f` with *args[i] and stores its
/// result through args[n], as mlir::ExecutionEngine's packed wrappers do,
/// so that a launcher calls any signature through one C type.
static Function *addPackedWrapper(Function *f, StringRef name) {
  Module &m = *f->getParent();
  LLVMContext &ctx = m.getContext();
  IRBuilder<> b(ctx);
  auto *fn =
      Function::Create(FunctionType::get(b.getVoidTy(), {b.getPtrTy()}, false),
                       GlobalValue::ExternalLinkage, name, m);
  b.SetInsertPoint(BasicBlock::Create(ctx, "entry", fn));
  Value *argList = fn->getArg(0);
  SmallVector<Value *> args;
  for (auto [i, arg] : enumerate(f->args())) {
    Value *slot = b.CreateLoad(b.getPtrTy(),
                               b.CreateConstGEP1_64(b.getPtrTy(), argList, i));
    args.push_back(b.CreateLoad(arg.getType(), slot));
  }
  Value *result = b.CreateCall(f, args);
  if (!result->getType()->isVoidTy()) {
    Value *slot = b.CreateLoad(
        b.getPtrTy(), b.CreateConstGEP1_64(b.getPtrTy(), argList, args.size()));
    b.CreateStore(result, slot);
  }
  b.CreateRetVoid();
  return fn;
}

/// Translates a lowered graph and gives it the packed entry `entryName`;
/// everything else it defines becomes internal, so two graphs link into one
/// module without clashes. The entries stay external until the data
/// section refers to them (the linker drops unreferenced internals).
static Expected<std::unique_ptr<Module>> translate(mlir::ModuleOp m,
                                                   StringRef funcName,
                                                   StringRef entryName,
                                                   LLVMContext &ctx) {
  std::unique_ptr<Module> mod = mlir::translateModuleToLLVMIR(m, ctx, "comet");
  if (!mod)
    return createStringError("cannot translate @" + funcName + " to LLVM IR");
  Function *f = mod->getFunction(("_mlir_ciface_" + funcName).str());
  if (!f)
    return createStringError("@" + funcName + " has no C interface");
  Function *entry = addPackedWrapper(f, entryName);
  for (GlobalValue &g : mod->global_values())
    if (!g.isDeclaration() && &g != entry)
      g.setLinkage(GlobalValue::InternalLinkage);
  return std::move(mod);
}

namespace {
/// Builds the comet_aot_program constant: every field is an i64, a double
/// or a pointer, as comet/driver/aot.h lays them out.
class ProgramBuilder {
public:
  explicit ProgramBuilder(Module &m)
      : m(m), ctx(m.getContext()), i64(Type::getInt64Ty(ctx)),
        f64(Type::getDoubleTy(ctx)), ptr(PointerType::get(ctx, 0)) {}

  Constant *i(int64_t v) { return ConstantInt::get(i64, v); }
  Constant *d(double v) { return ConstantFP::get(f64, v); }
  Constant *str(StringRef s) {
    auto *init = ConstantDataArray::getString(ctx, s, /*AddNull=*/true);
    auto *g = new GlobalVariable(m, init->getType(), true,
                                 GlobalValue::PrivateLinkage, init, ".str");
    g->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
    return g;
  }
  Constant *bytes(StringRef data) {
    auto *init =
        ConstantDataArray::getRaw(data, data.size(), Type::getInt8Ty(ctx));
    auto *g = new GlobalVariable(m, init->getType(), true,
                                 GlobalValue::PrivateLinkage, init, ".weight");
    g->setAlignment(Align(64));
    return g;
  }
  Constant *i64s(ArrayRef<int64_t> v) {
    if (v.empty())
      return ConstantPointerNull::get(ptr);
    auto *init = ConstantDataArray::get(ctx, v);
    return new GlobalVariable(m, init->getType(), true,
                              GlobalValue::PrivateLinkage, init, ".shape");
  }
  /// A struct of the given fields.
  Constant *record(ArrayRef<Constant *> fields) {
    SmallVector<Type *> types;
    for (Constant *c : fields)
      types.push_back(c->getType()->isPointerTy() ? ptr : c->getType());
    return ConstantStruct::get(StructType::get(ctx, types), fields);
  }
  /// A pointer to an array of records (all of one type), or null.
  Constant *array(ArrayRef<Constant *> elems, const Twine &name) {
    if (elems.empty())
      return ConstantPointerNull::get(ptr);
    auto *ty = ArrayType::get(elems[0]->getType(), elems.size());
    return new GlobalVariable(m, ty, true, GlobalValue::PrivateLinkage,
                              ConstantArray::get(ty, elems), name);
  }
  Constant *entry(const comet::Entry &e, Function *packed) {
    SmallVector<Constant *> args;
    for (const comet::ArgInfo &a : e.args)
      args.push_back(
          record({str(a.name), i(a.shape.size()), i64s(a.shape), i(a.elemBytes),
                  i(a.isResult), i(a.isLabels), i(a.valueRange),
                  str(a.optimizerRole), str(a.optimizerParam)}));
    SmallVector<Constant *> entries;
    for (const std::string &name : e.runtimeEntries)
      entries.push_back(str(name));
    return record({str(e.funcName), packed, i(e.args.size()),
                   array(args, ".args"), i(entries.size()),
                   array(entries, ".runtime_entries"), str(e.fusedOptimizer)});
  }
  Constant *nullEntry() {
    Constant *null = ConstantPointerNull::get(ptr);
    return record({null, null, i(0), null, i(0), null, null});
  }

private:
  Module &m;
  LLVMContext &ctx;
  Type *i64, *f64;
  PointerType *ptr;
};
} // namespace

static void addProgram(Module &mod, const comet::Trainer &t,
                       const comet::ArtifactPaths &files, Function *trainFn,
                       Function *evalFn) {
  ProgramBuilder b(mod);
  SmallVector<Constant *> weights;
  for (const comet::ArgInfo &a : t.trainEntry().args) {
    comet::Buffer *buf = a.isResult ? nullptr : t.buffer(a.name);
    if (buf && buf->category == COMET_RT_MEM_PARAMS)
      weights.push_back(
          b.record({b.str(a.name), b.i(buf->bytes()),
                    b.bytes(StringRef(static_cast<const char *>(buf->data),
                                      buf->bytes()))}));
  }
  SmallVector<Constant *> sites;
  for (const comet::SiteStats &s : t.sites()) {
    SmallVector<Constant *> consumers;
    for (const comet::SlotConsumer &c : s.consumers)
      consumers.push_back(
          b.record({b.str(c.kind), b.str(c.param), b.d(c.numTerms),
                    b.d(c.reuse), b.d(c.activationElements)}));
    sites.push_back(b.record({b.str(s.value), b.str(s.codec), b.i(s.slot),
                              b.d(s.eb), b.i(s.bytesIn), b.i(consumers.size()),
                              b.array(consumers, ".consumers")}));
  }
  const comet::MemoryPrediction &p = t.memoryPrediction();
  SmallVector<Constant *> intervals;
  for (const comet::MemoryPrediction::Interval &iv : p.intervals)
    intervals.push_back(
        b.record({b.i(iv.start), b.i(iv.end), b.i(iv.bytes),
                  b.i(iv.szTensorBytes), b.i(iv.activation), b.i(iv.slot)}));
  SmallVector<Constant *> recomputed;
  for (const std::string &n : p.recomputed)
    recomputed.push_back(b.str(n));
  const comet::OptimizerConfig &o = t.optimizerConfig();
  Constant *program = b.record({
      b.i(COMET_AOT_ABI_VERSION),
      b.str(files.training),
      b.str(files.weights),
      b.str(files.evalModel),
      b.str(files.optimizer),
      b.str(comet::wordOf(engineFlags.compress)),
      b.i(t.batchSize()),
      b.str(o.kind),
      b.d(o.adamAlpha),
      b.d(o.adamBeta),
      b.d(o.adamEps),
      b.d(o.adamWeightDecay),
      b.i(o.adamMode),
      b.i(o.adamCorrectBias),
      b.entry(t.trainEntry(), trainFn),
      b.i(evalFn != nullptr),
      evalFn ? b.entry(t.evalEntry(), evalFn) : b.nullEntry(),
      b.i(weights.size()),
      b.array(weights, ".weights"),
      b.i(sites.size()),
      b.array(sites, ".sites"),
      b.i(p.numSteps),
      b.d(p.szRatio),
      b.i(p.candidateBytes),
      b.i(intervals.size()),
      b.array(intervals, ".intervals"),
      b.i(p.workspace.size()),
      b.i64s(p.workspace),
      b.i(comet_rt_context_workspace_limit(t.context())),
      b.i(p.recomputed.size()),
      b.array(recomputed, ".recomputed"),
  });
  new GlobalVariable(mod, program->getType(), true,
                     GlobalValue::ExternalLinkage, program,
                     COMET_AOT_PROGRAM_SYMBOL);
}

static Expected<std::unique_ptr<TargetMachine>> hostTargetMachine() {
  Triple triple(sys::getDefaultTargetTriple());
  std::string error;
  const Target *target = TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return createStringError(error);
  // As mlir::ExecutionEngine does: the host CPU and all its features,
  // unless --mcpu names another CPU.
  std::string cpu = mcpu.empty() ? sys::getHostCPUName().str() : mcpu;
  SubtargetFeatures features;
  if (mcpu.empty())
    for (auto &f : sys::getHostCPUFeatures())
      features.AddFeature(f.first(), f.second);
  std::unique_ptr<MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, cpu, ""));
  if (!sti || !sti->isCPUStringValid(cpu))
    return createStringError("unknown --mcpu '" + cpu + "'");
  std::unique_ptr<TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features.getString(), TargetOptions(), Reloc::PIC_,
      std::nullopt, static_cast<CodeGenOptLevel>(std::min(optLevel + 0, 3u))));
  if (!tm)
    return createStringError("no target machine for " + triple.str());
  return std::move(tm);
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(cat);
  cl::ParseCommandLineOptions(
      argc, argv, "comet-compile: compile a training step ahead of time\n");
  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();
  if (engineFlags.batch <= 0)
    return fail("--batch must be positive");
  if (std::string why = engineFlags.validate(); !why.empty())
    return fail(why);

  if (!sys::fs::exists(inputPath))
    return fail("cannot read " + inputPath + ": no such file");

  // An artifact folder or a training graph, as comet-train takes it.
  auto engineOr = comet::Engine::load(inputPath);
  if (!engineOr)
    return fail(toString(engineOr.takeError()));
  comet::Engine &engine = **engineOr;
  comet::EngineOptions opts = engineFlags.options();
  opts.optLevel = optLevel;
  opts.jit = false;
  if (Error e = engine.compile(opts))
    return fail(toString(std::move(e)));
  const comet::Trainer &trainer = engine.trainer();

  auto tm = hostTargetMachine();
  if (!tm)
    return fail(toString(tm.takeError()));
  LLVMContext ctx;
  auto mod = translate(engine.loweredModule(), trainer.trainEntry().funcName,
                       "comet_aot_train", ctx);
  if (!mod)
    return fail(toString(mod.takeError()));
  if (mlir::ModuleOp evalModule = engine.loweredModule(/*eval=*/true)) {
    auto evalMod = translate(evalModule, trainer.evalEntry().funcName,
                             "comet_aot_eval", ctx);
    if (!evalMod)
      return fail(toString(evalMod.takeError()));
    if (Linker::linkModules(**mod, std::move(*evalMod)))
      return fail("cannot link the eval graph with the training graph");
  }
  Module &m = **mod;
  Function *trainFn = m.getFunction("comet_aot_train");
  Function *evalFn = m.getFunction("comet_aot_eval");
  addProgram(m, trainer, engine.artifacts(), trainFn, evalFn);
  // The library exports its data section alone.
  for (Function *f : {trainFn, evalFn})
    if (f)
      f->setLinkage(GlobalValue::InternalLinkage);
  m.setTargetTriple((*tm)->getTargetTriple());
  m.setDataLayout((*tm)->createDataLayout());
  std::string verifyMsg;
  raw_string_ostream vos(verifyMsg);
  if (verifyModule(m, &vos))
    return fail("invalid LLVM IR: " + verifyMsg);

  // The object file: the output itself, or a temporary one to link.
  bool linkShared = !StringRef(outputPath).ends_with(".o");
  SmallString<128> objPath(outputPath);
  if (linkShared) {
    int fd;
    if (std::error_code ec =
            sys::fs::createTemporaryFile("comet-compile", "o", fd, objPath))
      return fail("cannot create a temporary file: " + ec.message());
    sys::Process::SafelyCloseFileDescriptor(fd);
  }
  FileRemover removeObj(objPath, linkShared);
  {
    std::error_code ec;
    ToolOutputFile out(objPath, ec, sys::fs::OF_None);
    if (ec)
      return fail("cannot write " + objPath + ": " + ec.message());
    legacy::PassManager pm;
    if ((*tm)->addPassesToEmitFile(pm, out.os(), nullptr,
                                   CodeGenFileType::ObjectFile))
      return fail("the target cannot emit object files");
    pm.run(m);
    out.keep();
  }
  if (!linkShared)
    return 0;
  auto cc = sys::findProgramByName(linker);
  if (!cc)
    return fail("cannot find the linker driver '" + linker +
                "': " + cc.getError().message());
  StringRef args[] = {*cc, "-shared", "-o", outputPath, objPath};
  std::string msg;
  if (sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0, &msg) != 0)
    return fail("linking " + outputPath + " with " + *cc + " failed" +
                (msg.empty() ? "" : ": " + msg));
  return 0;
}
