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
#include "comet/Import/ONNXImporter.h"
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
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <mutex>

using namespace mlir;
using llvm::Error;
using llvm::Expected;

namespace comet {

bool Buffer::allocate(comet_rt_context *ctx) {
  numel = 1;
  for (int64_t d : shape)
    numel *= d;
  data = comet_rt_alloc_zeroed(ctx, numel * elemBytes, category);
  if (!data)
    return false;
  int64_t rank = shape.size();
  desc.assign(3 + 2 * rank, 0);
  desc[0] = desc[1] = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
  int64_t stride = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    desc[3 + i] = shape[i];
    desc[3 + rank + i] = stride;
    stride *= shape[i];
  }
  unranked = {rank, desc.data()};
  return true;
}

Error Compiled::invoke(comet_rt_context *ctx, ArrayRef<Buffer *> buffers) {
  // The packed arguments: the context, each buffer's descriptor, the status.
  std::vector<void *> descPtrs(buffers.size());
  std::vector<void *> packed(buffers.size() + 2);
  packed[0] = &ctx;
  for (size_t i = 0; i < buffers.size(); ++i) {
    descPtrs[i] = buffers[i]->desc.data();
    packed[i + 1] = &descPtrs[i];
  }
  int32_t rc = 0;
  packed.back() = &rc;
  if (Error e = jit->invokePacked("_mlir_ciface_" + funcName, packed))
    return e;
  if (rc != 0) {
    std::string msg = comet_rt_handles_last_error();
    if (msg.empty())
      msg = comet_rt_last_error();
    return err("runtime error " + llvm::Twine(rc) + " in @" + funcName + ": " +
               msg);
  }
  return Error::success();
}

namespace {

size_t elemBytesOf(Type t) {
  if (t.isInteger(1))
    return 1;
  return (t.getIntOrFloatBitWidth() + 7) / 8;
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

func::FuncOp Engine::Impl::mainFunc(ModuleOp m) {
  for (auto f : m.getOps<func::FuncOp>())
    if (!f.isExternal())
      return f;
  return {};
}

Error Engine::Impl::lowerAndJit(ModuleOp m, int64_t batch, Compiled &out,
                                StringRef dumpPath) {
  if (Error e = runPipeline(m, "comet-lower-to-runtime{batch-size=" +
                                   std::to_string(batch) + "}"))
    return e;
  func::FuncOp f = mainFunc(m);
  if (!f)
    return err("the graph has no function");
  out.funcName = f.getName().str();
  // Argument 0 is the runtime context (comet.context).
  for (unsigned i = 1; i < f.getNumArguments(); ++i) {
    auto mt = cast<MemRefType>(f.getArgumentTypes()[i]);
    ArgInfo a;
    if (auto n = f.getArgAttrOfType<StringAttr>(i, "onnx.name"))
      a.name = n.getValue().str();
    a.shape.assign(mt.getShape().begin(), mt.getShape().end());
    a.elemBytes = elemBytesOf(mt.getElementType());
    a.isResult = static_cast<bool>(f.getArgAttr(i, "comet.result"));
    out.args.push_back(std::move(a));
  }
  if (auto sites = f->getAttrOfType<ArrayAttr>(CometDialect::kSitesAttrName))
    if (&out == &train)
      for (auto site : sites.getAsRange<SiteAttr>()) {
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
        siteInfo.push_back(st);
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
  ExecutionEngineOptions eo;
  eo.jitCodeGenOptLevel =
      static_cast<llvm::CodeGenOptLevel>(std::min(opts.optLevel, 3u));
  auto jit = ExecutionEngine::create(m, eo);
  if (!jit)
    return jit.takeError();
  out.jit = std::move(*jit);
  out.jit->registerSymbols(runtimeSymbols);
  out.jit->initialize();
  return Error::success();
}

Buffer *Engine::Impl::newBuffer(const std::string &name,
                                ArrayRef<int64_t> shape, size_t elemBytes,
                                int32_t category) {
  auto b = std::make_unique<Buffer>();
  b->name = name;
  b->shape.assign(shape.begin(), shape.end());
  b->elemBytes = elemBytes;
  b->category = category;
  if (!b->allocate(rt.get()))
    return nullptr;
  Buffer *p = b.get();
  buffers[name] = std::move(b);
  return p;
}

Error Engine::Impl::setupTrainBuffers(const onnx_import::Model &weights) {
  llvm::StringMap<const onnx_import::Tensor *> inits;
  for (const auto &t : weights.graph.initializers)
    inits[t.name] = &t;
  // First pass: gradient buffers name their parameters.
  for (const ArgInfo &a : train.args) {
    size_t pos = a.name.find("_grad.accumulation.buffer");
    if (pos != std::string::npos)
      gradOf[a.name.substr(0, pos)] = a.name;
  }
  for (auto [i, a] : llvm::enumerate(train.args)) {
    std::string name = a.isResult ? "result:" + std::to_string(i) : a.name;
    if (name.empty())
      return err("argument " + llvm::Twine(i) +
                 " of the training graph "
                 "has no onnx.name");
    int32_t cat = COMET_RT_MEM_OTHER;
    bool isParam = false;
    if (a.isResult || name == "input" || name == "labels" ||
        name == "lazy_reset_grad" || a.elemBytes != 4) {
      cat = COMET_RT_MEM_OTHER;
    } else if (name.find("_grad.accumulation.buffer") != std::string::npos) {
      cat = COMET_RT_MEM_GRADS;
    } else {
      cat = COMET_RT_MEM_PARAMS;
      isParam = true;
    }
    if (i == 0 && !a.isResult) {
      if (a.shape.size() < 2)
        return err("the first input of the training graph must be a batch "
                   "of samples");
      sampleShape.assign(a.shape.begin() + 1, a.shape.end());
    }
    Buffer *b = newBuffer(name, a.shape, a.elemBytes, cat);
    if (!b)
      return err("out of memory allocating " + name);
    trainArgs.push_back(b);
    if (isParam) {
      auto it = inits.find(name);
      if (it == inits.end())
        return err("no initial value for parameter '" + name +
                   "' in the weights file");
      const onnx_import::Tensor *t = it->second;
      if (t->bytes.size() != b->bytes())
        return err("initializer '" + name + "' has " +
                   llvm::Twine(t->bytes.size()) + " bytes, the graph wants " +
                   llvm::Twine(b->bytes()));
      std::memcpy(b->data, t->bytes.data(), b->bytes());
      if (gradOf.count(name))
        trainable.push_back(name);
      else
        frozen.push_back(name);
    }
  }
  // Inputs by position: input, labels; then by name.
  input = trainArgs[0];
  if (trainArgs.size() < 2 || trainArgs[1]->elemBytes != 8)
    return err("the second input of the training graph must be the int64 "
               "labels");
  labels = trainArgs[1];
  auto lr = buffers.find("lazy_reset_grad");
  lazyReset = lr == buffers.end() ? nullptr : lr->second.get();
  for (auto [i, a] : llvm::enumerate(train.args))
    if (a.isResult) {
      loss = trainArgs[i];
      break;
    }
  for (auto [i, a] : llvm::enumerate(train.args))
    if (a.isResult && llvm::is_contained(maskNames, a.name))
      masks.push_back({a.name, trainArgs[i]});
  if (!loss || loss->numel != 1 || loss->elemBytes != 4)
    return err("the first result of the training graph must be the loss");
  return Error::success();
}

Expected<float> Engine::Impl::runTrain(const float *images,
                                       const int64_t *lab) {
  std::memcpy(input->data, images, input->bytes());
  std::memcpy(labels->data, lab, labels->bytes());
  if (lazyReset)
    static_cast<uint8_t *>(lazyReset->data)[0] = 1;
  if (recordNext) {
    comet_rt_alloc_record_timeline(rt.get(), 1);
  }
  Error e = train.invoke(rt.get(), trainArgs);
  if (recordNext) {
    comet_rt_alloc_record_timeline(rt.get(), 0);
    timeline.resize(comet_rt_alloc_timeline(rt.get(), nullptr, 0));
    comet_rt_alloc_timeline(rt.get(), timeline.data(), timeline.size());
    recordNext = false;
  }
  if (e)
    return std::move(e);
  return loss->f32()[0];
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
  for (auto &[name, buf] : impl->masks)
    out.push_back({name, ArrayRef(static_cast<const uint8_t *>(buf->data),
                                  buf->bytes())});
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
  e->impl->path = path.str();
  auto m = e->impl->loadModule(path);
  if (!m)
    return m.takeError();
  e->impl->source = std::move(*m);
  if (!Impl::mainFunc(*e->impl->source))
    return err(path + ": no function to train");
  return std::move(e);
}

Error Engine::compile(const EngineOptions &options) {
  Impl &I = *impl;
  if (I.compiled)
    return err("Engine::compile called twice");
  if (options.batchSize <= 0)
    return err("the batch size must be positive");
  I.opts = options;
  comet_rt_context_set_seed(I.rt.get(), options.seed);
  OwningOpRef<ModuleOp> m = I.source->clone();
  if (options.returnDropoutMasks)
    I.returnDropoutMasks(*m);
  std::string b = std::to_string(options.batchSize);
  if (options.compress != CompressMode::None) {
    if (Error e =
            I.runPipeline(*m, "comet-compress-activations{batch-size=" + b +
                                  (options.compressOptions.empty()
                                       ? std::string()
                                       : " " + options.compressOptions) +
                                  "}"))
      return e;
  }
  // The analysis on the graph as it will be lowered (same op order).
  I.analysisModule = m->clone();
  func::FuncOp af = Impl::mainFunc(*I.analysisModule);
  I.liveness = std::make_unique<ActivationLiveness>(af);
  LivenessOptions lo;
  lo.dynamicDimSize = options.batchSize;
  I.liveness->setOptions(lo);
  if (options.compress == CompressMode::None) {
    // What compress-activations would store compressed: the baseline's
    // side of the activation comparison.
    OwningOpRef<ModuleOp> probe = I.source->clone();
    if (Error e =
            I.runPipeline(*probe, "comet-compress-activations{batch-size=" + b +
                                      (options.compressOptions.empty()
                                           ? std::string()
                                           : " " + options.compressOptions) +
                                      "}"))
      return e;
    ActivationLiveness pl(Impl::mainFunc(*probe));
    pl.setOptions(lo);
    for (const ValueInfo &vi : pl.getValues())
      if (vi.isCompressedHandle())
        I.candidateBytes += vi.tensorBytes;
  }

  if (Error e = I.lowerAndJit(*m, options.batchSize, I.train,
                              options.dumpLoweredIRPath))
    return e;
  std::string weights = options.weightsPath;
  if (weights.empty())
    weights = dirOf(I.path) + "/model.onnx";
  auto wm = readModel(weights);
  if (!wm)
    return wm.takeError();
  if (Error e = I.setupTrainBuffers(*wm))
    return e;
  if (Error e = I.setupOptimizer())
    return e;
  std::string evalPath = options.evalModelPath;
  if (evalPath.empty()) {
    std::string guess = dirOf(I.path) + "/eval_model.onnx";
    if (llvm::sys::fs::exists(guess))
      evalPath = guess;
  }
  if (!evalPath.empty())
    if (Error e = I.setupEval(evalPath))
      return e;
  I.compiled = true;
  resetPeaks();
  return Error::success();
}

Expected<float> Engine::computeGradients(const float *images,
                                         const int64_t *labels) {
  if (!impl->compiled)
    return err("Engine::compile has not run");
  return impl->runTrain(images, labels);
}

Expected<float> Engine::step(const float *images, const int64_t *labels) {
  auto loss = computeGradients(images, labels);
  if (!loss)
    return loss.takeError();
  if (!std::isfinite(*loss))
    return err("the loss is " + llvm::Twine(std::isnan(*loss) ? "NaN" : "Inf") +
               " at step " + llvm::Twine(impl->steps + 1) +
               "; training stopped");
  if (Error e = impl->runOptimizer())
    return std::move(e);
  return *loss;
}

bool Engine::hasEval() const { return impl->haveEval; }

EngineStats Engine::stats() const {
  Impl &I = *impl;
  EngineStats s;
  comet_rt_alloc_stats a;
  comet_rt_alloc_get_stats(I.rt.get(), &a);
  for (int c = 0; c < COMET_RT_MEM_NUM_CATEGORIES; ++c)
    s.categories.push_back({comet_rt_alloc_category_name(c), a.current[c],
                            a.peak[c], a.at_peak[c]});
  s.peakBytes = a.peak_total;
  s.tensorPeakBytes = a.tensor_peak;
  s.steps = I.steps;
  // Measured sz ratio calibrates the analysis's estimate of sz handles.
  int64_t szIn = 0, szOut = 0;
  for (auto [i, info] : llvm::enumerate(I.siteInfo)) {
    SiteStats st = info;
    comet_rt_site_stats rs;
    if (comet_rt_site_get_stats(I.rt.get(), i, &rs) == 0 && rs.calls > 0) {
      st.bytesIn = rs.last_bytes_in;
      st.bytesOut = rs.last_bytes_out;
      st.eb = rs.last_eb;
      st.calls = rs.calls;
      st.ratio = rs.last_bytes_out > 0
                     ? double(rs.last_bytes_in) / rs.last_bytes_out
                     : 0;
      if (info.codec == "sz") {
        szIn += rs.last_bytes_in;
        szOut += rs.last_bytes_out;
      }
    }
    s.activationBytesUncompressed += st.bytesIn;
    s.activationBytesCompressed += st.bytesOut;
    s.sites.push_back(st);
  }
  if (I.siteInfo.empty()) {
    s.activationBytesUncompressed = I.candidateBytes;
    s.activationBytesCompressed = I.candidateBytes;
  }
  if (I.liveness) {
    LivenessOptions lo = I.liveness->getOptions();
    if (szOut > 0)
      lo.szRatio = double(szIn) / szOut;
    I.liveness->setOptions(lo);
    // The analysis's intervals, with the caller's view of ownership: the
    // Engine holds every argument and result buffer for the whole step.
    int64_t n = I.liveness->getNumSteps();
    SmallVector<TimelineInterval> ivs;
    for (const ValueInfo &vi : I.liveness->getValues()) {
      bool returned = llvm::any_of(vi.uses, [](const ValueUse &u) {
        return isa<func::ReturnOp>(u.user);
      });
      int64_t start = returned ? 0 : vi.start;
      int64_t end = vi.def < 0 || returned ? n - 1 : vi.end;
      ivs.push_back(
          {start, end, vi.bytes, vi.category == ValueCategory::Activation});
    }
    Timeline tl = buildTimeline(n, ivs);
    for (int64_t b : tl.total)
      s.predictedTimeline.push_back(b + I.optimizerStateBytes);
    s.measuredTimeline = I.timeline;
    s.predictedPeakBytes = tl.peak + I.optimizerStateBytes;
    s.predictedActivationBytesAtPeak = tl.activationAtPeak;
  }
  return s;
}

void Engine::recordTimelineOfNextStep() { impl->recordNext = true; }

void Engine::resetPeaks() { comet_rt_alloc_reset_peaks(impl->rt.get()); }

int64_t Engine::batchSize() const { return impl->opts.batchSize; }

std::vector<int64_t> Engine::sampleShape() const { return impl->sampleShape; }

std::vector<std::string> Engine::frozenParameters() const {
  return impl->frozen;
}

std::vector<std::string> Engine::trainableParameters() const {
  return impl->trainable;
}

llvm::ArrayRef<float> Engine::parameter(StringRef name) const {
  auto it = impl->buffers.find(name);
  if (it == impl->buffers.end() || it->second->elemBytes != 4)
    return {};
  return {it->second->f32(), static_cast<size_t>(it->second->numel)};
}

llvm::ArrayRef<float> Engine::gradient(StringRef name) const {
  auto it = impl->gradOf.find(name);
  if (it == impl->gradOf.end())
    return {};
  return parameter(it->second);
}

llvm::ArrayRef<float> Engine::optimizerState(StringRef name) const {
  const Impl &I = *impl;
  for (auto [i, p] : llvm::enumerate(I.trainable))
    if (p == name && i < I.state1.size())
      return {I.state1[i]->f32(), static_cast<size_t>(I.state1[i]->numel)};
  return {};
}

Error Engine::setParameter(StringRef name, llvm::ArrayRef<float> values) {
  auto it = impl->buffers.find(name);
  if (it == impl->buffers.end() || it->second->elemBytes != 4)
    return err("no f32 parameter named '" + name + "'");
  if (static_cast<int64_t>(values.size()) != it->second->numel)
    return err("parameter '" + name + "' has " +
               llvm::Twine(it->second->numel) + " elements, got " +
               llvm::Twine(values.size()));
  std::memcpy(it->second->data, values.data(), values.size() * sizeof(float));
  return Error::success();
}

std::string Engine::optimizerName() const { return impl->optimizer; }

comet_rt_context *Engine::runtimeContext() const { return impl->rt.get(); }

} // namespace comet
