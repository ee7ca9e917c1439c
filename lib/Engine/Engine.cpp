//===- Engine.cpp - Compile and train a training graph in process ---------===//
#include "comet/Engine/Engine.h"

#include "comet/Analysis/ActivationLiveness.h"
#include "comet/Conversion/Passes.h"
#include "comet/Dialect/Comet/IR/CometDialect.h"
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Engine/Handles.h"
#include "comet/Import/ONNXImporter.h"
#include "comet/Import/ONNXModel.h"
#include "comet/Tuner/SlotStats.h"
#include "comet/runtime/alloc.h"
#include "comet/runtime/exec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
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
namespace {

Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The tensor meter: bytes of graph tensors live now and at most, i.e.
/// the Engine's buffers, the JIT code's memref.alloc blocks and the
/// compressed handles, all sized by the runtime allocator. Kernel
/// scratchpads (category workspace) are not graph values and are left out,
/// so this is what the ActivationLiveness prediction is compared with.
std::mutex meterMu;
int64_t meterCurrent = 0, meterPeak = 0;

bool meterRecording = false;
std::vector<int64_t> meterSamples;

void meterAdd(int64_t delta) {
  std::lock_guard<std::mutex> lock(meterMu);
  meterCurrent += delta;
  meterPeak = std::max(meterPeak, meterCurrent);
  if (meterRecording)
    meterSamples.push_back(meterCurrent);
}

extern "C" void *cometMeteredAlloc(size_t size) {
  void *p = _mlir_memref_to_llvm_alloc(size);
  if (p)
    meterAdd(static_cast<int64_t>(comet_rt_alloc_size(p)));
  return p;
}

extern "C" void *cometMeteredAlignedAlloc(size_t alignment, size_t size) {
  void *p = _mlir_memref_to_llvm_aligned_alloc(alignment, size);
  if (p)
    meterAdd(static_cast<int64_t>(comet_rt_alloc_size(p)));
  return p;
}

extern "C" void cometMeteredFree(void *p) {
  if (p)
    meterAdd(-static_cast<int64_t>(comet_rt_alloc_size(p)));
  _mlir_memref_to_llvm_free(p);
}

extern "C" int64_t cometMeteredCompress(comet_rt_memref *x, int32_t codec,
                                        int64_t slot, double eb, int64_t site) {
  int64_t h = _mlir_ciface_comet_rt_compress(x, codec, slot, eb, site);
  meterAdd(comet_rt_handle_bytes(h));
  return h;
}

extern "C" void cometMeteredHandleFree(int64_t h) {
  meterAdd(-comet_rt_handle_bytes(h));
  comet_rt_handle_free(h);
}

/// A tensor buffer from comet_rt_alloc and its ranked memref descriptor.
struct Buffer {
  std::string name;
  std::vector<int64_t> shape;
  size_t elemBytes = 4;
  int64_t numel = 1;
  int32_t category = COMET_RT_MEM_OTHER;
  void *data = nullptr;
  /// {allocated, aligned, offset, sizes[rank], strides[rank]}.
  std::vector<int64_t> desc;
  comet_rt_memref unranked{0, nullptr};

  Buffer() = default;
  Buffer(const Buffer &) = delete;
  ~Buffer() {
    if (data)
      meterAdd(-static_cast<int64_t>(bytes()));
    comet_rt_free(data);
  }

  bool allocate() {
    numel = 1;
    for (int64_t d : shape)
      numel *= d;
    data = comet_rt_alloc_zeroed(numel * elemBytes, category);
    if (!data)
      return false;
    meterAdd(static_cast<int64_t>(bytes()));
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
  float *f32() const { return static_cast<float *>(data); }
  size_t bytes() const { return numel * elemBytes; }
};

/// One argument of a lowered function.
struct ArgInfo {
  std::string name;
  std::vector<int64_t> shape;
  size_t elemBytes = 4;
  bool isResult = false;
};

/// A JIT-compiled lowered function and its signature.
struct Compiled {
  std::unique_ptr<ExecutionEngine> jit;
  std::string funcName;
  std::vector<ArgInfo> args;

  Error invoke(ArrayRef<Buffer *> buffers) {
    std::vector<void *> descPtrs(buffers.size());
    std::vector<void *> packed(buffers.size() + 1);
    for (size_t i = 0; i < buffers.size(); ++i) {
      descPtrs[i] = buffers[i]->desc.data();
      packed[i] = &descPtrs[i];
    }
    int32_t rc = 0;
    packed.back() = &rc;
    if (Error e = jit->invokePacked("_mlir_ciface_" + funcName, packed))
      return e;
    if (rc != 0) {
      std::string msg = comet_rt_handles_last_error();
      if (msg.empty())
        msg = comet_rt_last_error();
      return err("runtime error " + llvm::Twine(rc) + " in @" + funcName +
                 ": " + msg);
    }
    return Error::success();
  }
};

size_t elemBytesOf(Type t) {
  if (t.isInteger(1))
    return 1;
  return (t.getIntOrFloatBitWidth() + 7) / 8;
}

/// The runtime symbols lowered code calls, by address: linking them here
/// keeps the libraries loaded and makes the lookup independent of dlsym.
llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner mangle) {
  llvm::orc::SymbolMap m;
  auto add = [&](const char *name, auto *fn) {
    m[mangle(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                       llvm::JITSymbolFlags::Exported};
  };
#define COMET_SYM(fn) add(#fn, &fn)
  COMET_SYM(_mlir_ciface_comet_rt_conv2d);
  COMET_SYM(_mlir_ciface_comet_rt_conv_grad2d);
  COMET_SYM(_mlir_ciface_comet_rt_gemm);
  COMET_SYM(_mlir_ciface_comet_rt_matmul);
  COMET_SYM(_mlir_ciface_comet_rt_batch_norm_internal);
  COMET_SYM(_mlir_ciface_comet_rt_batch_norm_grad);
  COMET_SYM(_mlir_ciface_comet_rt_softmax_cross_entropy_loss);
  COMET_SYM(_mlir_ciface_comet_rt_softmax_cross_entropy_loss_grad);
  COMET_SYM(_mlir_ciface_comet_rt_relu);
  COMET_SYM(_mlir_ciface_comet_rt_relu_grad);
  COMET_SYM(_mlir_ciface_comet_rt_maxpool2d);
  COMET_SYM(_mlir_ciface_comet_rt_maxpool_grad);
  COMET_SYM(_mlir_ciface_comet_rt_global_average_pool);
  COMET_SYM(_mlir_ciface_comet_rt_identity);
  COMET_SYM(_mlir_ciface_comet_rt_identity_i64);
  COMET_SYM(_mlir_ciface_comet_rt_reshape);
  COMET_SYM(_mlir_ciface_comet_rt_flatten);
  COMET_SYM(_mlir_ciface_comet_rt_add);
  COMET_SYM(_mlir_ciface_comet_rt_expand);
  COMET_SYM(_mlir_ciface_comet_rt_reduce_sum);
  COMET_SYM(_mlir_ciface_comet_rt_scale);
  COMET_SYM(_mlir_ciface_comet_rt_inplace_accumulator_v2);
  COMET_SYM(_mlir_ciface_comet_rt_decompress);
  COMET_SYM(_mlir_ciface_comet_rt_relu_grad_mask);
  COMET_SYM(comet_rt_set_alloc_category);
  COMET_SYM(_mlir_ciface_comet_rt_slot_observe_act);
  COMET_SYM(_mlir_ciface_comet_rt_slot_observe_grad);
  COMET_SYM(_mlir_ciface_comet_rt_slot_observe_max);
  // Metered: the same functions, also counted by the tensor meter.
  add("_mlir_ciface_comet_rt_compress", &cometMeteredCompress);
  add("comet_rt_handle_free", &cometMeteredHandleFree);
  add("_mlir_memref_to_llvm_alloc", &cometMeteredAlloc);
  add("_mlir_memref_to_llvm_aligned_alloc", &cometMeteredAlignedAlloc);
  add("_mlir_memref_to_llvm_free", &cometMeteredFree);
#undef COMET_SYM
  return m;
}

std::string dirOf(StringRef path) {
  SmallString<256> d(path);
  llvm::sys::path::remove_filename(d);
  if (d.empty())
    d = ".";
  return std::string(d);
}

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

} // namespace

struct Engine::Impl {
  std::string path;
  MLIRContext ctx;
  OwningOpRef<ModuleOp> source;
  EngineOptions opts;
  bool compiled = false;

  Compiled train, eval;
  bool haveEval = false;
  int64_t evalBatch = 0;
  /// The graph as compress-activations left it, for the analysis.
  OwningOpRef<ModuleOp> analysisModule;
  std::unique_ptr<ActivationLiveness> liveness;
  int64_t candidateBytes = 0;
  std::vector<SiteStats> siteInfo;

  /// Buffers by name: parameters, gradient buffers, inputs, outputs.
  llvm::StringMap<std::unique_ptr<Buffer>> buffers;
  std::vector<Buffer *> trainArgs;
  std::vector<std::string> trainable;  // parameters with a gradient buffer
  llvm::StringMap<std::string> gradOf; // parameter -> its gradient buffer
  Buffer *input = nullptr, *labels = nullptr, *lazyReset = nullptr,
         *loss = nullptr;
  std::vector<int64_t> sampleShape;

  // Optimizer.
  std::string optimizer = "builtin-sgd-momentum";
  float adamAlpha = 0.9f, adamBeta = 0.999f, adamEps = 1e-8f,
        adamWeightDecay = 0.0f;
  int64_t adamMode = 0, adamCorrectBias = 1;
  std::vector<std::unique_ptr<Buffer>> state1, state2;
  std::unique_ptr<Buffer> lrBuf, stepBuf;
  int64_t optimizerStateBytes = 0;
  int64_t steps = 0;

  Impl() {
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

  Expected<OwningOpRef<ModuleOp>> loadModule(StringRef file) {
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

  Error runPipeline(ModuleOp m, StringRef pipeline) {
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

  static func::FuncOp mainFunc(ModuleOp m) {
    for (auto f : m.getOps<func::FuncOp>())
      if (!f.isExternal())
        return f;
    return {};
  }

  /// Lowers `m` (batch size `batch`) and JIT-compiles it into `out`.
  Error lowerAndJit(ModuleOp m, int64_t batch, Compiled &out,
                    StringRef dumpPath) {
    if (Error e = runPipeline(m, "comet-lower-to-runtime{batch-size=" +
                                     std::to_string(batch) + "}"))
      return e;
    func::FuncOp f = mainFunc(m);
    if (!f)
      return err("the graph has no function");
    out.funcName = f.getName().str();
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
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

  Buffer *newBuffer(const std::string &name, ArrayRef<int64_t> shape,
                    size_t elemBytes, int32_t category) {
    auto b = std::make_unique<Buffer>();
    b->name = name;
    b->shape.assign(shape.begin(), shape.end());
    b->elemBytes = elemBytes;
    b->category = category;
    if (!b->allocate())
      return nullptr;
    Buffer *p = b.get();
    buffers[name] = std::move(b);
    return p;
  }

  Error setupTrainBuffers(const onnx_import::Model &weights) {
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
    if (!loss || loss->numel != 1 || loss->elemBytes != 4)
      return err("the first result of the training graph must be the loss");
    return Error::success();
  }

  Error setupOptimizer() {
    if (!opts.optimizerPath.empty()) {
      auto model = readModel(opts.optimizerPath);
      if (!model)
        return model.takeError();
      const onnx_import::Node *node = nullptr;
      for (const auto &n : model->graph.nodes)
        if (n.opType == "AdamWOptimizer" || n.opType == "SGDOptimizerV2")
          node = &n;
      if (!node)
        return err(opts.optimizerPath +
                   ": no AdamWOptimizer or SGDOptimizerV2 node");
      optimizer = node->opType;
      for (const auto &a : node->attributes) {
        if (a.name == "alpha")
          adamAlpha = a.f;
        else if (a.name == "beta")
          adamBeta = a.f;
        else if (a.name == "epsilon")
          adamEps = a.f;
        else if (a.name == "weight_decay")
          adamWeightDecay = a.f;
        else if (a.name == "adam_mode")
          adamMode = a.i;
        else if (a.name == "correct_bias")
          adamCorrectBias = a.i;
      }
    }
    lrBuf = std::make_unique<Buffer>();
    lrBuf->shape = {1};
    lrBuf->category = COMET_RT_MEM_OTHER;
    stepBuf = std::make_unique<Buffer>();
    stepBuf->shape = {1};
    stepBuf->elemBytes = 8;
    if (!lrBuf->allocate() || !stepBuf->allocate())
      return err("out of memory");
    lrBuf->f32()[0] = opts.learningRate;
    optimizerStateBytes += lrBuf->bytes() + stepBuf->bytes();
    int nState = optimizer == "AdamWOptimizer"         ? 2
                 : optimizer == "builtin-sgd-momentum" ? 1
                                                       : 0;
    for (const std::string &p : trainable) {
      Buffer *w = buffers[p].get();
      for (int k = 0; k < nState; ++k) {
        auto s = std::make_unique<Buffer>();
        s->name = p + (k == 0 ? ".momentum1" : ".momentum2");
        s->shape = w->shape;
        s->category = COMET_RT_MEM_OPTIMIZER_STATE;
        if (!s->allocate())
          return err("out of memory");
        optimizerStateBytes += s->bytes();
        (k == 0 ? state1 : state2).push_back(std::move(s));
      }
    }
    return Error::success();
  }

  Error runOptimizer() {
    ++steps;
    reinterpret_cast<int64_t *>(stepBuf->data)[0] = steps;
    for (auto [i, p] : llvm::enumerate(trainable)) {
      Buffer *w = buffers[p].get();
      Buffer *g = buffers[gradOf[p]].get();
      int32_t rc;
      if (optimizer == "AdamWOptimizer") {
        rc = _mlir_ciface_comet_rt_adamw(
            &lrBuf->unranked, &stepBuf->unranked, &w->unranked, &g->unranked,
            &state1[i]->unranked, &state2[i]->unranked, nullptr, nullptr,
            adamAlpha, adamBeta, adamEps, adamWeightDecay, adamMode,
            adamCorrectBias);
      } else if (optimizer == "SGDOptimizerV2") {
        rc = _mlir_ciface_comet_rt_sgd_v2(&lrBuf->unranked, &w->unranked,
                                          &g->unranked, nullptr, nullptr);
      } else {
        rc = _mlir_ciface_comet_rt_sgd_momentum(
            &lrBuf->unranked, &w->unranked, &g->unranked, &state1[i]->unranked,
            opts.momentum, opts.weightDecay, 0);
      }
      if (rc != 0)
        return err("optimizer " + optimizer + " failed on " + p + ": " +
                   comet_rt_last_error());
    }
    return Error::success();
  }

  Error setupEval(StringRef evalPath) {
    auto m = loadModule(evalPath);
    if (!m)
      return m.takeError();
    func::FuncOp f = mainFunc(**m);
    if (!f)
      return err(evalPath + ": no function");
    // Expose the scores of the loss as an extra result: the logits.
    Value logits;
    f.walk([&](Operation *op) {
      if (op->getName().getStringRef() == "onnx.SoftmaxCrossEntropyLoss")
        logits = op->getOperand(0);
    });
    if (!logits)
      return err(evalPath + ": no SoftmaxCrossEntropyLoss to take logits from");
    auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
    ret->insertOperands(ret->getNumOperands(), ValueRange{logits});
    SmallVector<Type> results(f.getResultTypes());
    results.push_back(logits.getType());
    SmallVector<DictionaryAttr> resAttrs;
    for (unsigned i = 0; i + 1 < results.size(); ++i)
      resAttrs.push_back(f.getResultAttrDict(i));
    resAttrs.push_back(DictionaryAttr::get(
        &ctx, {NamedAttribute(StringAttr::get(&ctx, "onnx.name"),
                              StringAttr::get(&ctx, "logits"))}));
    f.setFunctionType(FunctionType::get(&ctx, f.getArgumentTypes(), results));
    f.setAllResultAttrs(resAttrs);
    evalBatch = opts.batchSize;
    if (Error e = lowerAndJit(**m, evalBatch, eval, ""))
      return e;
    haveEval = true;
    return Error::success();
  }

  bool recordNext = false;
  std::vector<int64_t> timeline;

  Expected<float> runTrain(const float *images, const int64_t *lab) {
    std::memcpy(input->data, images, input->bytes());
    std::memcpy(labels->data, lab, labels->bytes());
    if (lazyReset)
      static_cast<uint8_t *>(lazyReset->data)[0] = 1;
    if (recordNext) {
      std::lock_guard<std::mutex> lock(meterMu);
      meterSamples.assign(1, meterCurrent);
      meterRecording = true;
    }
    Error e = train.invoke(trainArgs);
    if (recordNext) {
      std::lock_guard<std::mutex> lock(meterMu);
      meterRecording = false;
      timeline = std::move(meterSamples);
      meterSamples.clear();
      recordNext = false;
    }
    if (e)
      return std::move(e);
    return loss->f32()[0];
  }
};

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
  OwningOpRef<ModuleOp> m = I.source->clone();
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

Error Engine::evaluate(const float *images, const int64_t *labels, int64_t n,
                       double &meanLoss, int64_t &numCorrect) {
  Impl &I = *impl;
  if (!I.haveEval)
    return err("no eval graph was compiled");
  // The eval graph's last out argument is the logits (setupEval). Eval
  // buffers live only during the evaluation, so that they do not
  // count in the training step's memory.
  std::vector<std::unique_ptr<Buffer>> own;
  std::vector<Buffer *> args;
  Buffer *in = nullptr, *lab = nullptr, *logits = nullptr;
  for (auto [i, a] : llvm::enumerate(I.eval.args)) {
    auto it = a.isResult ? I.buffers.end() : I.buffers.find(a.name);
    bool shared =
        it != I.buffers.end() && a.name != "input" && a.name != "labels";
    if (shared) {
      args.push_back(it->second.get());
      continue;
    }
    if (!a.isResult && a.name != "input" && a.name != "labels")
      return err("eval graph input '" + a.name +
                 "' is not a parameter of the training graph");
    auto b = std::make_unique<Buffer>();
    b->name = a.name;
    b->shape = a.shape;
    b->elemBytes = a.elemBytes;
    b->category = COMET_RT_MEM_OTHER;
    if (!b->allocate())
      return err("out of memory");
    if (a.name == "input")
      in = b.get();
    else if (a.name == "labels")
      lab = b.get();
    args.push_back(b.get());
    own.push_back(std::move(b));
  }
  logits = args.back();
  if (!in || !lab || logits->shape.size() != 2)
    return err("the eval graph needs input, labels and 2-D logits");
  int64_t B = I.evalBatch, classes = logits->shape[1];
  int64_t per = in->numel / B;
  double lossSum = 0;
  numCorrect = 0;
  for (int64_t start = 0; start < n; start += B) {
    int64_t m = std::min(B, n - start);
    std::memset(in->data, 0, in->bytes());
    std::memset(lab->data, 0, lab->bytes());
    std::memcpy(in->data, images + start * per, m * per * sizeof(float));
    std::memcpy(lab->data, labels + start, m * sizeof(int64_t));
    if (Error e = I.eval.invoke(args))
      return e;
    const float *z = logits->f32();
    for (int64_t r = 0; r < m; ++r) {
      const float *row = z + r * classes;
      int64_t best = 0;
      float mx = row[0];
      for (int64_t c = 1; c < classes; ++c)
        if (row[c] > mx) {
          mx = row[c];
          best = c;
        }
      double s = 0;
      for (int64_t c = 0; c < classes; ++c)
        s += std::exp(double(row[c]) - mx);
      int64_t y = labels[start + r];
      if (y >= 0 && y < classes)
        lossSum += std::log(s) + mx - row[y];
      numCorrect += best == y;
    }
  }
  meanLoss = n > 0 ? lossSum / n : 0;
  return Error::success();
}

EngineStats Engine::stats() const {
  Impl &I = *impl;
  EngineStats s;
  comet_rt_alloc_stats a;
  comet_rt_alloc_get_stats(&a);
  for (int c = 0; c < COMET_RT_MEM_NUM_CATEGORIES; ++c)
    s.categories.push_back({comet_rt_alloc_category_name(c), a.current[c],
                            a.peak[c], a.at_peak[c]});
  s.peakBytes = a.peak_total;
  {
    std::lock_guard<std::mutex> lock(meterMu);
    s.tensorPeakBytes = meterPeak;
  }
  s.steps = I.steps;
  // Measured sz ratio calibrates the analysis's estimate of sz handles.
  int64_t szIn = 0, szOut = 0;
  for (auto [i, info] : llvm::enumerate(I.siteInfo)) {
    SiteStats st = info;
    comet_rt_site_stats rs;
    if (comet_rt_site_get_stats(i, &rs) == 0 && rs.calls > 0) {
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

void Engine::resetPeaks() {
  comet_rt_alloc_reset_peaks();
  std::lock_guard<std::mutex> lock(meterMu);
  meterPeak = meterCurrent;
}

int64_t Engine::batchSize() const { return impl->opts.batchSize; }

std::vector<int64_t> Engine::sampleShape() const { return impl->sampleShape; }

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

} // namespace comet
