//===- Engine.cpp - Compile and train a training graph in process ---------===//
//
// comet::Engine's load, compile, step and statistics. The optimizer is in
// Optimizer.cpp, evaluation in Evaluation.cpp and the JIT's runtime symbols
// in Symbols.cpp; EngineImpl.h has the state they share.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

#include "comet/Conversion/Passes.h"
#include "comet/Dialect/Comet/IR/CometDialect.h"
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"
#include "comet/Import/Checkpoint.h"
#include "comet/Import/ONNXImporter.h"
#include "comet/driver/Coverage.h"
#include "comet/runtime/device.h"
#include "comet/runtime/handles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <mutex>
#include <set>

using namespace mlir;
using llvm::Error;
using llvm::Expected;

namespace comet {

namespace {

size_t elemBytesOf(Type t) {
  if (t.isInteger(1))
    return 1;
  return (t.getIntOrFloatBitWidth() + 7) / 8;
}

/// TensorProto.DataType of an element type (0: none fits).
int32_t onnxTypeOf(Type t) {
  if (t.isF32())
    return 1;
  if (t.isF64())
    return 11;
  if (t.isF16())
    return 10;
  if (t.isBF16())
    return 16;
  if (t.isInteger(1))
    return 9;
  if (auto i = dyn_cast<IntegerType>(t)) {
    bool u = i.isUnsigned();
    switch (i.getWidth()) {
    case 8:
      return u ? 2 : 3;
    case 16:
      return u ? 4 : 5;
    case 32:
      return u ? 12 : 6;
    case 64:
      return u ? 13 : 7;
    }
  }
  return 0;
}

std::string dirOf(StringRef path) {
  SmallString<256> d(path);
  llvm::sys::path::remove_filename(d);
  if (d.empty())
    d = ".";
  return std::string(d);
}

} // namespace

Expected<onnx_import::Model> readModel(StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return err("cannot read " + path + ": " + buf.getError().message());
  onnx_import::Model model;
  std::string error;
  if (!onnx_import::readONNXModel((*buf)->getBufferStart(),
                                  (*buf)->getBufferSize(), model, error))
    return err(path + ": " + error);
  return model;
}

Expected<llvm::StringMap<InitialValue>> readInitialWeights(StringRef path) {
  llvm::StringMap<InitialValue> out;
  if (path.ends_with(".onnx")) {
    auto model = readModel(path);
    if (!model)
      return model.takeError();
    for (const onnx_import::Tensor &t : model->graph.initializers) {
      if (t.dataType != 1) // float
        continue;
      InitialValue &v = out[t.name];
      v.dims = t.dims;
      v.values.resize(t.bytes.size() / sizeof(float));
      std::memcpy(v.values.data(), t.bytes.data(), t.bytes.size());
    }
    return out;
  }
  checkpoint::Checkpoint cp;
  std::string error;
  if (!checkpoint::readCheckpointFile(path.str(), cp, error))
    return err(error);
  for (checkpoint::Parameter &p : cp.parameters)
    out[p.name] = {std::move(p.dims), std::move(p.values)};
  return out;
}

Engine::Impl::Impl() {
  DialectRegistry registry;
  registry.insert<CometDialect, func::FuncDialect, arith::ArithDialect,
                  memref::MemRefDialect, cf::ControlFlowDialect,
                  LLVM::LLVMDialect>();
  registerONNXImportDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
}

Expected<OwningOpRef<ModuleOp>> Engine::Impl::loadModule(StringRef file) {
  auto buf = llvm::MemoryBuffer::getFile(file);
  if (!buf)
    return err("cannot read " + file + ": " + buf.getError().message());
  std::string diag;
  llvm::raw_string_ostream os(diag);
  llvm::SourceMgr sm;
  SourceMgrDiagnosticHandler handler(sm, &ctx, os);
  OwningOpRef<ModuleOp> m;
  if (file.ends_with(".onnx")) {
    m = importONNXModel((*buf)->getBuffer(), file, &ctx);
  } else {
    sm.AddNewSourceBuffer(std::move(*buf), llvm::SMLoc());
    m = parseSourceFile<ModuleOp>(sm, &ctx);
  }
  if (!m)
    return err("cannot load " + file + ": " + diag);
  return std::move(m);
}

Error Engine::Impl::runPipeline(ModuleOp m, StringRef pipeline) {
  std::string diag;
  llvm::raw_string_ostream os(diag);
  llvm::SourceMgr sm;
  SourceMgrDiagnosticHandler handler(sm, &ctx, os);
  PassManager pm(&ctx);
  if (failed(parsePassPipeline(pipeline, pm, os)))
    return err("bad pipeline '" + pipeline + "': " + diag);
  if (failed(pm.run(m)))
    return err("'" + pipeline + "' failed: " + diag);
  return Error::success();
}

std::string Engine::Impl::resolveOptimizerPath(StringRef optimizerPath) const {
  if (optimizerPath == EngineOptions::kBuiltinOptimizer)
    return "";
  if (!optimizerPath.empty())
    return optimizerPath.str();
  std::string guess = dirOf(path) + "/optimizer_model.onnx";
  return llvm::sys::fs::exists(guess) ? guess : "";
}

func::FuncOp Engine::Impl::mainFunc(ModuleOp m) {
  for (auto f : m.getOps<func::FuncOp>())
    if (!f.isExternal())
      return f;
  return {};
}

Error Engine::Impl::lower(ModuleOp m, int64_t batch, Entry &out,
                          std::unique_ptr<ExecutionEngine> &jit,
                          std::vector<SiteStats> *sites, StringRef dumpPath,
                          bool tunerStatistics) {
  if (Error e = runPipeline(
          m, "comet-lower-to-runtime{batch-size=" + std::to_string(batch) +
                 (tunerStatistics ? "" : " tuner-statistics=false") + "}"))
    return e;
  func::FuncOp f = mainFunc(m);
  if (!f)
    return err("the graph has no function");
  out.funcName = f.getName().str();
  if (auto k =
          f->getAttrOfType<StringAttr>(CometDialect::kFusedOptimizerAttrName))
    out.fusedOptimizer = k.str();
  // The runtime entries the graph calls: what its device must implement.
  std::set<std::string> entries;
  f.walk([&](func::CallOp call) {
    StringRef callee = call.getCallee();
    if (callee.consume_front("comet_rt_"))
      entries.insert(callee.str());
  });
  out.runtimeEntries.assign(entries.begin(), entries.end());
  // Argument 0 is the runtime context (comet.context).
  for (unsigned i = 1; i < f.getNumArguments(); ++i) {
    auto mt = cast<MemRefType>(f.getArgumentTypes()[i]);
    ArgInfo a;
    if (auto n = f.getArgAttrOfType<StringAttr>(i, "onnx.name"))
      a.name = n.getValue().str();
    a.shape.assign(mt.getShape().begin(), mt.getShape().end());
    a.elemBytes = elemBytesOf(mt.getElementType());
    a.onnxType = onnxTypeOf(mt.getElementType());
    a.isResult = static_cast<bool>(f.getArgAttr(i, "comet.result"));
    // Roles the lowering marks (include/comet/Conversion/Passes.td).
    if (auto c = f.getArgAttrOfType<IntegerAttr>(i, "comet.labels")) {
      a.isLabels = true;
      a.valueRange = c.getInt();
    }
    if (auto r = f.getArgAttrOfType<IntegerAttr>(i, "comet.index_range"))
      a.valueRange = r.getInt();
    if (auto r = f.getArgAttrOfType<StringAttr>(
            i, CometDialect::kOptimizerRoleAttrName))
      a.optimizerRole = r.str();
    if (auto p = f.getArgAttrOfType<StringAttr>(
            i, CometDialect::kOptimizerParamAttrName))
      a.optimizerParam = p.str();
    out.args.push_back(std::move(a));
  }
  if (auto siteAttrs =
          f->getAttrOfType<ArrayAttr>(CometDialect::kSitesAttrName);
      siteAttrs && sites)
    for (auto site : siteAttrs.getAsRange<SiteAttr>()) {
      SiteStats st;
      st.value = site.getValue().str();
      st.codec = stringifyCodec(site.getCodec()).str();
      if (BoundAttr bound = site.getBound()) {
        st.eb = bound.getAbsValue();
        st.slot = bound.getSlot().value_or(-1);
      }
      st.bytesIn = site.getBytes();
      for (ConsumerAttr c : site.getConsumers()) {
        SlotConsumer sc;
        sc.kind = stringifyWeightGradKind(c.getKind()).str();
        sc.param = c.getParam().str();
        sc.numTerms = c.getTermsValue();
        sc.reuse = c.getReuseValue();
        sc.activationElements = static_cast<double>(c.getElements());
        st.consumers.push_back(std::move(sc));
      }
      sites->push_back(st);
    }
  if (!dumpPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(dumpPath, ec);
    if (ec)
      return err("cannot write " + dumpPath + ": " + ec.message());
    m.print(os);
  }
  PassManager pm(&ctx);
  buildRuntimeToLLVMPipeline(pm);
  std::string diag;
  {
    llvm::raw_string_ostream os(diag);
    llvm::SourceMgr sm;
    SourceMgrDiagnosticHandler handler(sm, &ctx, os);
    if (failed(pm.run(m)))
      return err("lowering to LLVM failed: " + diag);
  }
  if (!opts.jit)
    return Error::success();
  ExecutionEngineOptions eo;
  eo.jitCodeGenOptLevel =
      static_cast<llvm::CodeGenOptLevel>(std::min(opts.optLevel, 3u));
  auto created = ExecutionEngine::create(m, eo);
  if (!created)
    return created.takeError();
  jit = std::move(*created);
  jit->registerSymbols(runtimeSymbols);
  jit->initialize();
  // The packed wrapper ExecutionEngine adds to every C interface function.
  auto packed = jit->lookupPacked("_mlir_ciface_" + out.funcName);
  if (!packed)
    return packed.takeError();
  out.packed = *packed;
  return Error::success();
}

void Engine::Impl::returnDropoutMasks(ModuleOp m) {
  func::FuncOp f = mainFunc(m);
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  SmallVector<onnx::DropoutOp> drops;
  f.walk([&](onnx::DropoutOp d) {
    if (!isa<NoneType>(d.getMask().getType()) && isa<NameLoc>(d.getLoc()))
      drops.push_back(d);
  });
  Builder b(f.getContext());
  for (onnx::DropoutOp d : drops) {
    // The analysis's name for the second result of the node.
    std::string name = cast<NameLoc>(d.getLoc()).getName().str() + ":1";
    unsigned i = f.getNumResults();
    if (failed(f.insertResult(i, d.getMask().getType(),
                              b.getDictionaryAttr(b.getNamedAttr(
                                  "onnx.name", b.getStringAttr(name))))))
      return;
    ret.getOperandsMutable().append(d.getMask());
    maskNames.push_back(name);
  }
}

std::vector<std::pair<std::string, ArrayRef<uint8_t>>>
Engine::dropoutMasks() const {
  std::vector<std::pair<std::string, ArrayRef<uint8_t>>> out;
  const Trainer &t = impl->trainer;
  // Device memory is not host-readable: a CUDA engine shows no masks.
  if (comet_rt_context_get_device(t.context()) != COMET_RT_DEVICE_CPU)
    return out;
  const std::vector<ArgInfo> &args = t.trainEntry().args;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].isResult || !llvm::is_contained(impl->maskNames, args[i].name))
      continue;
    // The trainer names result buffers by position.
    if (const Buffer *b = t.buffer("result:" + std::to_string(i)))
      out.push_back(
          {args[i].name,
           ArrayRef(static_cast<const uint8_t *>(b->data), b->bytes())});
  }
  return out;
}

Engine::Engine() : impl(std::make_unique<Impl>()) {}
Engine::~Engine() = default;

Expected<std::unique_ptr<Engine>> Engine::load(StringRef path) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // The Engine builds its pipelines from text, like comet-opt.
    registerCometPasses();
    registerConversionPasses();
  });
  std::unique_ptr<Engine> e(new Engine());
  // An artifact folder: its training graph, with the siblings found later.
  std::string file = path.str();
  if (llvm::sys::fs::is_directory(path)) {
    file = (path + "/training_model.onnx").str();
    if (!llvm::sys::fs::exists(file))
      return err(path + " is a folder without training_model.onnx");
  }
  e->impl->path = file;
  e->impl->paths.training = file;
  auto m = e->impl->loadModule(file);
  if (!m)
    return m.takeError();
  e->impl->source = std::move(*m);
  if (!Impl::mainFunc(*e->impl->source))
    return err(file + ": no function to train");
  return std::move(e);
}

Expected<std::string>
Engine::Impl::budgetOptions(ModuleOp specialized,
                            const OptimizerConfig &optimizer) {
  if (opts.memoryBudget == 0)
    return std::string();
  if (opts.memoryBudget < 0)
    return err("the memory budget must be positive, got " +
               std::to_string(opts.memoryBudget) + " bytes");
  if (opts.compress == CompressMode::None)
    return err("a memory budget needs compression: --compress static or "
               "adaptive");
  if (!(opts.assumedSzRatio >= 1.0))
    return err("the assumed sz ratio must be at least 1");
  // The optimizer state the trainer will allocate: one buffer per state
  // and trainable parameter (each the size of its gradient buffer), plus
  // the learning rate and step count. A step that applies the optimizer
  // has them among its arguments (comet.optimizer): the graph sees them,
  // and its budget is the whole one.
  func::FuncOp f = mainFunc(specialized);
  bool fused = f->hasAttr(CometDialect::kFusedOptimizerAttrName);
  ActivationLiveness la(f);
  LivenessOptions lo;
  lo.dynamicDimSize = opts.batchSize;
  la.setOptions(lo);
  int64_t gradBytes = 0, argStateBytes = 0;
  for (const ValueInfo &vi : la.getValues()) {
    if (vi.def >= 0)
      continue;
    auto role = f.getArgAttrOfType<StringAttr>(
        cast<BlockArgument>(vi.value).getArgNumber(),
        CometDialect::kOptimizerRoleAttrName);
    if (role && role.getValue() != "weight")
      argStateBytes += vi.tensorBytes;
    if (vi.category == ValueCategory::Gradient)
      gradBytes += vi.tensorBytes;
  }
  int64_t state =
      fused ? argStateBytes
            : sizeof(float) + sizeof(int64_t) +
                  optimizerStatesPerParameter(optimizer.kind) * gradBytes;
  int64_t graph = opts.memoryBudget - (fused ? 0 : state);
  if (opts.memoryBudget - state <= 0)
    return err("the memory budget of " + std::to_string(opts.memoryBudget) +
               " bytes is below the optimizer state alone (" +
               std::to_string(state) + " bytes)");
  llvm::SmallString<32> ratio;
  llvm::raw_svector_ostream(ratio) << opts.assumedSzRatio;
  return "policy=budget memory-budget=" + std::to_string(graph) +
         " sz-ratio=" + std::string(ratio);
}

/// The workspace ctx's backend reports for a ConvGrad of the specialized
/// graph; 0 when its shapes are not static or the backend cannot say.
static int64_t convGradWorkspace(comet_rt_context *ctx,
                                 comet::onnx::ConvGradOp o) {
  auto dims = [](Value v, int64_t out[4]) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() != 4 || !t.hasStaticShape())
      return false;
    llvm::copy(t.getShape(), out);
    return true;
  };
  int64_t x[4], w[4], dy[4];
  StringRef autoPad = o.getAutoPad();
  if (!dims(o.getX(), x) || !dims(o.getW(), w) || !dims(o.getDY(), dy) ||
      (autoPad != "NOTSET" && autoPad != "VALID"))
    return 0;
  // The window as the lowering passes it (ConvLowering's windowArgs).
  SmallVector<int64_t> p = {0, 0, 0, 0}, s = {1, 1}, d = {1, 1};
  if (auto pads = o.getPads(); pads && pads->size() == 4 && autoPad == "NOTSET")
    p.assign(pads->begin(), pads->end());
  if (auto st = o.getStrides(); st && st->size() == 2)
    s.assign(st->begin(), st->end());
  if (auto dl = o.getDilations(); dl && dl->size() == 2)
    d.assign(dl->begin(), dl->end());
  auto present = [](Value v) { return v && !isa<NoneType>(v.getType()); };
  int32_t outputs = (present(o.getDX()) ? COMET_RT_CONV_GRAD_DX : 0) |
                    (present(o.getDW()) ? COMET_RT_CONV_GRAD_DW : 0) |
                    (present(o.getDB()) ? COMET_RT_CONV_GRAD_DB : 0);
  int64_t bytes = comet_rt_conv_grad2d_workspace(ctx, x, w, dy, s[0], s[1],
                                                 p[0], p[1], p[2], p[3], d[0],
                                                 d[1], o.getGroup(), outputs);
  return std::max<int64_t>(bytes, 0);
}

/// comet-fuse-optimizer with the optimizer's kernel and hyperparameters
/// (floats printed to round-trip exactly).
static std::string fuseOptimizerPass(const OptimizerConfig &c) {
  std::string kind = optimizerEntries(c.kind).front();
  auto f = [](float v) { return llvm::formatv("{0:e9}", v).str(); };
  std::string s = "comet-fuse-optimizer{kind=" + kind;
  if (kind == "adamw")
    s += " alpha=" + f(c.adamAlpha) + " beta=" + f(c.adamBeta) +
         " epsilon=" + f(c.adamEps) + " weight-decay=" + f(c.adamWeightDecay) +
         " adam-mode=" + std::to_string(c.adamMode) +
         " correct-bias=" + std::to_string(c.adamCorrectBias);
  else if (kind == "sgd_momentum")
    s += " momentum=" + f(c.momentum) + " weight-decay=" + f(c.weightDecay);
  return s + "}";
}

/// Pass pipeline stages joined with ",", empty ones left out.
static std::string joinStages(ArrayRef<std::string> stages) {
  std::string out;
  for (const std::string &s : stages)
    if (!s.empty())
      out += (out.empty() ? "" : ",") + s;
  return out;
}

std::string Engine::Impl::recomputeStage(ArrayRef<std::string> only) const {
  // ReluGrad reads a recomputed value only when the input stays raw
  // (exact); compressed, it keeps a 1-bit mask.
  std::string s = "comet-recompute-activations{exact-masks=";
  s += opts.compress == CompressMode::None ? "false" : "true";
  if (!only.empty())
    s += " only=" + llvm::join(only, ",");
  return s + "}";
}

std::string Engine::Impl::compressStage(StringRef batch,
                                        StringRef budgetOptions) const {
  std::string o = opts.compressOptions;
  if (!budgetOptions.empty())
    o += (o.empty() ? "" : " ") + budgetOptions.str();
  return "comet-compress-activations{batch-size=" + batch.str() +
         (o.empty() ? "" : " " + o) + "}";
}

/// The values to recompute under a memory budget: of the values the pass
/// would recompute (largest first), the fewest that, with the fewest
/// compressions compress-activations then picks, fit the budget, fewer
/// compressions winning over fewer recomputes (recompute is exact,
/// compression lossy). Each choice is tried on a copy of the graph.
Expected<RecomputeChoice>
Engine::Impl::chooseRecompute(ModuleOp specialized, StringRef fuse,
                              const OptimizerConfig &optimizer,
                              StringRef batch) {
  // What the pass recomputes, with each value's size.
  OwningOpRef<ModuleOp> all = specialized.clone();
  if (Error e = runPipeline(*all, recomputeStage({})))
    return std::move(e);
  SmallVector<std::pair<int64_t, std::string>> values;
  ActivationLiveness la(mainFunc(*all));
  LivenessOptions lo;
  lo.dynamicDimSize = opts.batchSize;
  la.setOptions(lo);
  for (Operation *op : la.getSchedule())
    if (std::optional<StringRef> n = recomputedValueName(op))
      values.push_back(
          {la.getValue(la.getId(op->getResult(0))).tensorBytes, n->str()});
  llvm::stable_sort(
      values, [](const auto &a, const auto &b) { return a.first > b.first; });
  struct Trial {
    size_t k;
    int64_t compressed;
    bool fits;
  };
  std::optional<Trial> best;
  std::vector<std::string> names;
  for (size_t k = 0; k <= values.size(); ++k) {
    if (k > 0)
      names.push_back(values[k - 1].second);
    OwningOpRef<ModuleOp> trial = specialized.clone();
    std::string pipeline =
        joinStages({k > 0 ? recomputeStage(names) : "", fuse.str()});
    if (!pipeline.empty())
      if (Error e = runPipeline(*trial, pipeline))
        return std::move(e);
    auto budget = budgetOptions(*trial, optimizer);
    if (!budget)
      return budget.takeError();
    // The pass warns when the budget is out of reach: the trial's business.
    ScopedDiagnosticHandler quiet(trial->getContext(),
                                  [](Diagnostic &) { return success(); });
    if (Error e = runPipeline(*trial, compressStage(batch, *budget)))
      return std::move(e);
    auto rec = mainFunc(*trial)->getAttrOfType<DictionaryAttr>(
        CometDialect::kBudgetAttrName);
    if (!rec)
      return err("the memory budget's trial left no comet.budget record");
    Trial t{k, rec.getAs<IntegerAttr>("compressed").getInt(),
            rec.getAs<IntegerAttr>("predicted_peak").getInt() <=
                rec.getAs<IntegerAttr>("bytes").getInt()};
    if (!best || (t.fits && !best->fits) ||
        (t.fits == best->fits && t.compressed < best->compressed))
      best = t;
    // More recomputes cannot need fewer than no compression.
    if (t.fits && t.compressed == 0)
      break;
  }
  // Out of reach: everything, as compression does.
  size_t k = best && best->fits ? best->k : values.size();
  RecomputeChoice out;
  out.candidates = values.size();
  for (size_t i = 0; i < k; ++i)
    out.names.push_back(values[i].second);
  return out;
}

Error Engine::compile(const EngineOptions &options) {
  Impl &I = *impl;
  if (I.compiled)
    return err("Engine::compile called twice");
  if (options.batchSize <= 0)
    return err("the batch size must be positive");
  I.opts = options;
  comet_rt_context_set_seed(I.trainer.context(), options.seed);
  if (options.workspaceLimit < 0)
    return err("the workspace limit must be 0 (none) or positive, not " +
               std::to_string(options.workspaceLimit));
  comet_rt_context_set_workspace_limit(I.trainer.context(),
                                       options.workspaceLimit);
  OwningOpRef<ModuleOp> m = I.source->clone();
  if (options.returnDropoutMasks)
    I.returnDropoutMasks(*m);
  std::string b = std::to_string(options.batchSize);
  // One set of sizes for the compression policy, the bounds, the memory
  // prediction and the buffers.
  // Gradients accumulated where they are formed, masks instead of the
  // floats the backward only compares, and MaxPool's argmax as a byte in
  // its window: all exact, so in every mode, `none` included.
  // The optimizer first: its state is part of what a budget must fit, and
  // the step may apply it.
  std::string dir = dirOf(I.path);
  I.paths.optimizer = I.resolveOptimizerPath(options.optimizerPath);
  auto optimizer = I.readOptimizerConfig(I.paths.optimizer);
  if (!optimizer)
    return optimizer.takeError();
  std::string specialize = "comet-specialize-shapes{batch-size=" + b +
                           "},comet-accumulate-early,comet-hoist-masks";
  if (options.compactPoolIndices)
    specialize += ",comet-compact-pool-indices";
  // Recomputed outputs read the scale and bias: before the optimizer's
  // updates are placed.
  bool recompute =
      options.recompute && options.compress != CompressMode::Adaptive;
  std::string fuse = options.fuseOptimizer ? fuseOptimizerPass(*optimizer) : "";
  // With a budget, which values to recompute is the budget's choice too.
  std::optional<RecomputeChoice> choice;
  if (recompute && options.memoryBudget > 0 &&
      options.compress != CompressMode::None) {
    if (Error e = I.runPipeline(*m, specialize))
      return e;
    auto c = I.chooseRecompute(*m, fuse, *optimizer, b);
    if (!c)
      return c.takeError();
    choice = std::move(*c);
    std::string rest = joinStages(
        {choice->names.empty() ? "" : I.recomputeStage(choice->names), fuse});
    if (!rest.empty())
      if (Error e = I.runPipeline(*m, rest))
        return e;
  } else if (Error e = I.runPipeline(
                 *m,
                 joinStages({specialize, recompute ? I.recomputeStage({}) : "",
                             fuse}))) {
    return e;
  }
  auto budget = I.budgetOptions(*m, *optimizer);
  if (!budget)
    return budget.takeError();
  // compress-activations at this batch, with the caller's options and
  // any budget's.
  std::string compress = I.compressStage(b, *budget);
  // With compression off, what it would compress is measured on a copy of
  // the specialized graph.
  OwningOpRef<ModuleOp> probe;
  if (options.compress == CompressMode::None)
    probe = m->clone();
  else if (Error e = I.runPipeline(*m, compress))
    return e;
  // The analysis on the graph as it will be lowered (same op order).
  OwningOpRef<ModuleOp> analysisModule = m->clone();
  ActivationLiveness liveness(Impl::mainFunc(*analysisModule));
  LivenessOptions lo;
  lo.dynamicDimSize = options.batchSize;
  liveness.setOptions(lo);
  int64_t candidateBytes = 0;
  if (options.compress == CompressMode::None) {
    // What compress-activations would store compressed: the baseline's
    // side of the activation comparison.
    if (Error e = I.runPipeline(*probe, compress))
      return e;
    ActivationLiveness pl(Impl::mainFunc(*probe));
    pl.setOptions(lo);
    for (const ValueInfo &vi : pl.getValues())
      if (vi.isCompressedHandle())
        candidateBytes += vi.tensorBytes;
  }

  // The analysis's intervals, with the caller's view of ownership: the
  // trainer holds every argument and result buffer for the whole step.
  MemoryPrediction pred;
  pred.valid = true;
  pred.numSteps = liveness.getNumSteps();
  pred.szRatio = lo.szRatio;
  pred.candidateBytes = candidateBytes;
  if (auto rec = Impl::mainFunc(*m)->getAttrOfType<DictionaryAttr>(
          CometDialect::kBudgetAttrName)) {
    BudgetChoice &bc = pred.budget;
    bc.bytes = options.memoryBudget;
    bc.graphBytes = rec.getAs<IntegerAttr>("bytes").getInt();
    // The graph's predicted peak plus what the graph does not see.
    bc.predictedPeakBytes = rec.getAs<IntegerAttr>("predicted_peak").getInt() +
                            (bc.bytes - bc.graphBytes);
    bc.assumedSzRatio = rec.getAs<FloatAttr>("sz_ratio").getValueAsDouble();
    bc.compressed = rec.getAs<IntegerAttr>("compressed").getInt();
    for (Attribute a : rec.getAs<ArrayAttr>("not_selected"))
      bc.notSelected.push_back(cast<StringAttr>(a).str());
    if (choice) {
      bc.recomputeCandidates = choice->candidates;
      bc.recomputed = choice->names.size();
    }
  }
  // What comet-recompute-activations computes again in the backward.
  for (Operation *op : liveness.getSchedule())
    if (std::optional<StringRef> n = recomputedValueName(op))
      pred.recomputed.push_back(n->str());
  // What the graph does not see at a step: the workspace its kernel takes,
  // as the context's backend reports it for a ConvGrad (under the
  // workspace limit); other kernels' scratchpads are left out.
  pred.workspace.assign(pred.numSteps, 0);
  for (auto [step, op] : llvm::enumerate(liveness.getSchedule()))
    if (auto cg = dyn_cast<comet::onnx::ConvGradOp>(op))
      pred.workspace[step] = convGradWorkspace(I.trainer.context(), cg);
  for (const ValueInfo &vi : liveness.getValues()) {
    bool returned = llvm::any_of(
        vi.uses, [](const ValueUse &u) { return isa<func::ReturnOp>(u.user); });
    MemoryPrediction::Interval iv;
    iv.start = returned ? 0 : vi.start;
    iv.end = vi.def < 0 || returned ? pred.numSteps - 1 : vi.end;
    iv.bytes = vi.bytes;
    if (vi.codec == Codec::sz && !vi.fusedMaskDecompress) {
      iv.szTensorBytes = vi.tensorBytes;
      iv.slot = vi.slot.value_or(-1);
    }
    iv.activation = vi.category == ValueCategory::Activation;
    pred.intervals.push_back(iv);
  }

  Entry train;
  std::vector<SiteStats> sites;
  I.trainLowered = std::move(m);
  // The tuner's statistics calls only where something reads them: a
  // device that cannot gather them (CUDA) then runs a static graph.
  bool statistics =
      options.compress == CompressMode::Adaptive || options.tunerStatistics;
  if (Error e = I.lower(*I.trainLowered, options.batchSize, train, I.trainJit,
                        &sites, options.dumpLoweredIRPath, statistics))
    return e;
  // The artifact folder's files unless the options name others, or the
  // initial state.
  I.paths.weights = options.weightsPath;
  llvm::StringMap<InitialValue> initial;
  if (options.initialState) {
    if (I.paths.weights.empty())
      I.paths.weights = "the initial state";
  } else {
    if (I.paths.weights.empty()) {
      I.paths.weights = dir + "/checkpoint";
      if (!llvm::sys::fs::exists(I.paths.weights))
        I.paths.weights = dir + "/model.onnx";
    }
    auto weights = readInitialWeights(I.paths.weights);
    if (!weights)
      return weights.takeError();
    initial = std::move(*weights);
  }
  // Before any device work: a device that lacks an entry the graph or its
  // optimizer calls refuses the graph, naming each such entry.
  std::vector<std::string> needed = train.runtimeEntries;
  for (const std::string &e : optimizerEntries(optimizer->kind))
    needed.push_back(e);
  if (Error e = toError(checkDeviceCoverage(options.device, needed)))
    return e;
  if (Error e = toError(I.trainer.useDevice(options.device)))
    return e;
  if (Error e = toError(I.trainer.bindTrain(
          std::move(train),
          [&](const std::string &name, InitialWeight &out) {
            const std::vector<int64_t> *dims = nullptr;
            const std::vector<float> *values = nullptr;
            if (options.initialState) {
              const checkpoint::Parameter *p = options.initialState->find(name);
              if (!p)
                return false;
              dims = &p->dims;
              values = &p->values;
            } else {
              auto it = initial.find(name);
              if (it == initial.end())
                return false;
              dims = &it->second.dims;
              values = &it->second.values;
            }
            out.data = values->data();
            out.bytes = values->size() * sizeof(float);
            out.dims = dims;
            return true;
          },
          I.paths.weights)))
    return e;
  I.trainer.setSites(std::move(sites));
  I.trainer.setPrediction(std::move(pred));
  // Not under adaptive: the tuner re-bounds after the first steps, and the
  // ratios it records would depend on the step a process starts from
  // (a resumed run would choose after another step than the whole run).
  I.trainer.setEntropyByPeak(I.opts.entropyByPeak &&
                             I.opts.compress != CompressMode::Adaptive);
  if (Error e = toError(I.trainer.setupOptimizer(*optimizer)))
    return e;
  // ---- checkpoints and export ----
  // The optimizer state, and the checks that the initial state fits.
  if (options.initialState)
    if (Error e = I.loadState(*options.initialState))
      return err(I.paths.weights + ": " + toString(std::move(e)));
  std::string evalPath = options.evalModelPath;
  if (evalPath == EngineOptions::kNoEvalModel) {
    evalPath.clear();
  } else if (evalPath.empty()) {
    std::string guess = dir + "/eval_model.onnx";
    if (llvm::sys::fs::exists(guess))
      evalPath = guess;
  }
  if (!evalPath.empty())
    if (Error e = I.setupEval(evalPath))
      return e;
  I.paths.evalModel = evalPath;
  I.compiled = true;
  resetPeaks();
  return Error::success();
}

Expected<float> Engine::computeGradients(const void *images,
                                         const int64_t *labels) {
  if (!impl->compiled)
    return err("Engine::compile has not run");
  float loss = 0;
  if (Error e = toError(impl->trainer.computeGradients(images, labels, loss)))
    return std::move(e);
  return loss;
}

Expected<float> Engine::step(const void *images, const int64_t *labels) {
  if (!impl->compiled)
    return err("Engine::compile has not run");
  float loss = 0;
  if (Error e = toError(impl->trainer.step(images, labels, loss)))
    return std::move(e);
  return loss;
}

bool Engine::hasEval() const { return impl->trainer.hasEval(); }

Error Engine::evaluate(const void *images, const int64_t *labels, int64_t n,
                       double &meanLoss, int64_t &numCorrect) {
  return toError(
      impl->trainer.evaluate(images, labels, n, meanLoss, numCorrect));
}

EngineStats Engine::stats() const { return impl->trainer.stats(); }

void Engine::recordTimelineOfNextStep() {
  impl->trainer.recordTimelineOfNextStep();
}

void Engine::resetPeaks() { impl->trainer.resetPeaks(); }

int64_t Engine::batchSize() const { return impl->opts.batchSize; }

std::vector<int64_t> Engine::sampleShape() const {
  return impl->trainer.sampleShape();
}

std::vector<std::string> Engine::trainableParameters() const {
  return impl->trainer.trainableParameters();
}

std::vector<std::string> Engine::parameters() const {
  return impl->trainer.parameters();
}

std::vector<std::string> Engine::frozenParameters() const {
  return impl->trainer.frozenParameters();
}

static llvm::ArrayRef<float> floatsOf(const Trainer &t, const Buffer *b) {
  // Device memory is not host-readable: a CUDA engine shows no values.
  if (!b || b->elemBytes != 4 ||
      comet_rt_context_get_device(t.context()) != COMET_RT_DEVICE_CPU)
    return {};
  return {b->f32(), static_cast<size_t>(b->numel)};
}

llvm::ArrayRef<float> Engine::parameter(StringRef name) const {
  return floatsOf(impl->trainer, impl->trainer.buffer(name.str()));
}

llvm::ArrayRef<float> Engine::gradient(StringRef name) const {
  return floatsOf(impl->trainer, impl->trainer.gradient(name.str()));
}

llvm::ArrayRef<float> Engine::optimizerState(StringRef name) const {
  return floatsOf(impl->trainer, impl->trainer.optimizerState(name.str()));
}

Error Engine::setParameter(StringRef name, llvm::ArrayRef<float> values) {
  Buffer *b = impl->trainer.buffer(name.str());
  if (!b || b->elemBytes != 4)
    return err("no f32 parameter named '" + name + "'");
  if (static_cast<int64_t>(values.size()) != b->numel)
    return err("parameter '" + name + "' has " + llvm::Twine(b->numel) +
               " elements, got " + llvm::Twine(values.size()));
  return toError(impl->trainer.copy(b->data, values.data(),
                                    values.size() * sizeof(float)));
}

std::string Engine::optimizerName() const {
  return impl->trainer.optimizerConfig().kind;
}

float Engine::learningRate() const {
  return impl->trainer.optimizerConfig().learningRate;
}

const ArtifactPaths &Engine::artifacts() const { return impl->paths; }

comet_rt_context *Engine::runtimeContext() const {
  return impl->trainer.context();
}

Trainer &Engine::trainer() const { return impl->trainer; }

ModuleOp Engine::loweredModule(bool eval) const {
  const OwningOpRef<ModuleOp> &m =
      eval ? impl->evalLowered : impl->trainLowered;
  return m ? *m : ModuleOp();
}

} // namespace comet
