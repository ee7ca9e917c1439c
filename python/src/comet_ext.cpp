//===- comet_ext.cpp - comet._comet: COMET's Engine for Python ------------===//
//
// The nanobind extension under comet.training.api (docs/python.md):
// comet::Engine with ONNX Runtime's Module semantics (a training call that
// accumulates gradients until a lazy reset, the optimizer as a step of its
// own, one eval batch, the training state handed between engines of two
// batch sizes, the bound tuner of `adaptive`), ONNX Runtime checkpoints
// and the signature of an ONNX graph. comet/training/api.py keeps ORT's
// classes in Python; this file checks every array it hands to the engine
// (count, dtype, shape, device, label range) and raises InputError or
// InputTypeError naming the input, before anything runs.
//
//===----------------------------------------------------------------------===//
#include "comet/Engine/Engine.h"
#include "comet/Import/Checkpoint.h"
#include "comet/Import/ONNXExport.h"
#include "comet/Import/ONNXModel.h"
#include "comet/Tuner/EngineTuner.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

/// A user input that does not fit the graph (ValueError and RuntimeError
/// in Python: ORT raises RuntimeError for the same inputs).
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A user input of the wrong kind or element type (TypeError and
/// RuntimeError in Python).
struct InputTypeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(llvm::Error e) {
  throw std::runtime_error(llvm::toString(std::move(e)));
}

void check(llvm::Error e) {
  if (e)
    fail(std::move(e));
}

std::string shapeStr(const std::vector<int64_t> &dims) {
  std::string r = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    r += (i ? ", " : "") + std::to_string(dims[i]);
  return r + "]";
}

// ---- element types ---------------------------------------------------------

/// numpy's name for an ONNX TensorProto.DataType.
const char *typeName(int32_t onnxType) {
  switch (onnxType) {
  case 1:
    return "float32";
  case 2:
    return "uint8";
  case 3:
    return "int8";
  case 4:
    return "uint16";
  case 5:
    return "int16";
  case 6:
    return "int32";
  case 7:
    return "int64";
  case 9:
    return "bool";
  case 10:
    return "float16";
  case 11:
    return "float64";
  case 12:
    return "uint32";
  case 13:
    return "uint64";
  case 16:
    return "bfloat16";
  }
  return "an unsupported type";
}

std::optional<nb::dlpack::dtype> dlpackOf(int32_t onnxType) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code c, int bits) {
    nb::dlpack::dtype d;
    d.code = static_cast<uint8_t>(c);
    d.bits = static_cast<uint8_t>(bits);
    d.lanes = 1;
    return d;
  };
  switch (onnxType) {
  case 1:
    return make(dtype_code::Float, 32);
  case 2:
    return make(dtype_code::UInt, 8);
  case 3:
    return make(dtype_code::Int, 8);
  case 4:
    return make(dtype_code::UInt, 16);
  case 5:
    return make(dtype_code::Int, 16);
  case 6:
    return make(dtype_code::Int, 32);
  case 7:
    return make(dtype_code::Int, 64);
  case 9:
    return make(dtype_code::Bool, 8);
  case 10:
    return make(dtype_code::Float, 16);
  case 11:
    return make(dtype_code::Float, 64);
  case 12:
    return make(dtype_code::UInt, 32);
  case 13:
    return make(dtype_code::UInt, 64);
  case 16:
    return make(dtype_code::Bfloat, 16);
  }
  return std::nullopt;
}

std::string dtypeStr(nb::dlpack::dtype d) {
  using nb::dlpack::dtype_code;
  std::string kind;
  switch (static_cast<dtype_code>(d.code)) {
  case dtype_code::Int:
    kind = "int";
    break;
  case dtype_code::UInt:
    kind = "uint";
    break;
  case dtype_code::Float:
    kind = "float";
    break;
  case dtype_code::Bfloat:
    kind = "bfloat";
    break;
  case dtype_code::Complex:
    kind = "complex";
    break;
  case dtype_code::Bool:
    return "bool";
  default:
    return "an unsupported dtype (DLPack code " + std::to_string(d.code) + ")";
  }
  return kind + std::to_string(d.bits);
}

/// A dict from key/value pairs.
nb::dict dictOf(std::initializer_list<std::pair<const char *, nb::object>> kv) {
  nb::dict d;
  for (const auto &[k, v] : kv)
    d[k] = v;
  return d;
}

bool sameDtype(nb::dlpack::dtype a, nb::dlpack::dtype b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

// ---- the arrays of a call --------------------------------------------------

/// One user input or output of a compiled graph.
struct Port {
  std::string name;
  std::vector<int64_t> shape;
  int32_t onnxType = 0;
  size_t elemBytes = 4;
  size_t bytes = 0;
  /// Labels (isLabels) or int64 token ids: the values allowed,
  /// [0, range); 0 when not known.
  int64_t range = 0;
  bool isLabels = false;
};

Port portOf(const comet::ArgInfo &a) {
  Port p;
  p.name = a.name;
  p.shape = a.shape;
  p.onnxType = a.onnxType;
  p.elemBytes = a.elemBytes;
  p.bytes = a.elemBytes;
  for (int64_t d : a.shape)
    p.bytes *= d;
  return p;
}

/// An input as the engine reads it: the caller's memory where it is
/// contiguous host memory of the right type, else a contiguous copy.
struct InputView {
  const void *data = nullptr;
  nb::ndarray<nb::ro> array;
  std::vector<uint8_t> copy;
};

/// Copies a strided array into contiguous row-major bytes.
void gatherStrided(const nb::ndarray<nb::ro> &a, size_t elemBytes,
                   std::vector<uint8_t> &out) {
  size_t n = a.size();
  out.resize(n * elemBytes);
  const auto *base = static_cast<const uint8_t *>(a.data());
  size_t rank = a.ndim();
  std::vector<size_t> idx(rank, 0);
  for (size_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d)
      off += static_cast<int64_t>(idx[d]) * a.stride(d);
    std::memcpy(out.data() + k * elemBytes, base + off * int64_t(elemBytes),
                elemBytes);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < a.shape(d))
        break;
      idx[d] = 0;
    }
  }
}

bool isContiguous(const nb::ndarray<nb::ro> &a) {
  int64_t expected = 1;
  for (size_t d = a.ndim(); d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != expected)
      return false;
    expected *= static_cast<int64_t>(a.shape(d));
  }
  return true;
}

/// The user-facing name of a Python object's type ("numpy.ndarray").
std::string typeOf(nb::handle h) {
  nb::handle t = h.type();
  std::string mod;
  if (nb::hasattr(t, "__module__"))
    mod = nb::cast<std::string>(nb::str(t.attr("__module__")));
  std::string name = nb::cast<std::string>(nb::str(t.attr("__name__")));
  return mod.empty() || mod == "builtins" ? name : mod + "." + name;
}

/// Checks `h` against port `p` (input `pos` of `count`) and gives the
/// engine's view of it.
void viewInput(nb::handle h, const Port &p, size_t pos, size_t count,
               InputView &out) {
  std::string what = "input '" + p.name + "' (" + std::to_string(pos + 1) +
                     " of " + std::to_string(count) + ")";
  auto dt = dlpackOf(p.onnxType);
  if (!dt)
    throw InputTypeError(what + " has element type " +
                         std::to_string(p.onnxType) +
                         ", which COMET cannot take from Python");
  std::string expected = std::string(typeName(p.onnxType)) +
                         " array of shape " + shapeStr(p.shape);
  if (typeOf(h).find("OrtValue") != std::string::npos)
    throw InputTypeError(what +
                         ": OrtValue inputs are not supported; pass "
                         "a numpy array (OrtValue.numpy()) or a "
                         "DLPack tensor, a " +
                         expected);
  if (!nb::try_cast(h, out.array, false))
    throw InputTypeError(what + ": expected a " + expected +
                         " (numpy, or a DLPack tensor), got " + typeOf(h));
  const nb::ndarray<nb::ro> &a = out.array;
  if (a.device_type() != nb::device::cpu::value)
    throw InputError(what + " is in device memory (DLPack device type " +
                     std::to_string(a.device_type()) +
                     "); COMET takes host arrays");
  if (!sameDtype(a.dtype(), *dt))
    throw InputTypeError(what + " has dtype " + dtypeStr(a.dtype()) +
                         ", expected " + typeName(p.onnxType));
  std::vector<int64_t> shape(a.ndim());
  for (size_t d = 0; d < a.ndim(); ++d)
    shape[d] = static_cast<int64_t>(a.shape(d));
  if (shape != p.shape)
    throw InputError(what + " has shape " + shapeStr(shape) + ", expected " +
                     shapeStr(p.shape));
  if (isContiguous(a)) {
    out.data = a.data();
  } else {
    gatherStrided(a, p.elemBytes, out.copy);
    out.data = out.copy.data();
  }
}

/// Labels and token ids must be in [0, range) (or a loss's ignore_index);
/// the runtime would reject them mid-step.
void checkRange(const Port &p, const InputView &v,
                const std::vector<int64_t> &allowed, size_t pos, size_t count) {
  if (p.range <= 0 || p.onnxType != 7)
    return;
  const auto *x = static_cast<const int64_t *>(v.data);
  size_t n = p.bytes / sizeof(int64_t);
  for (size_t i = 0; i < n; ++i) {
    if (x[i] >= 0 && x[i] < p.range)
      continue;
    if (p.isLabels && llvm::is_contained(allowed, x[i]))
      continue;
    throw InputError(
        "input '" + p.name + "' (" + std::to_string(pos + 1) + " of " +
        std::to_string(count) + ") holds " + std::to_string(x[i]) +
        " at flat index " + std::to_string(i) + ", expected " +
        (p.isLabels ? "class indices" : "token ids") + " in [0, " +
        std::to_string(p.range) + ")" +
        (p.isLabels && !allowed.empty()
             ? " or the loss's ignore_index " + std::to_string(allowed[0])
             : std::string()));
  }
}

/// A fresh numpy array for an output port (the engine writes into it).
nb::object newOutput(const Port &p, void *&data) {
  auto dt = dlpackOf(p.onnxType);
  if (!dt)
    throw std::runtime_error("output '" + p.name +
                             "' has an element type COMET cannot return");
  void *mem = std::malloc(std::max<size_t>(p.bytes, 1));
  if (!mem)
    throw std::bad_alloc();
  nb::capsule owner(mem, [](void *q) noexcept { std::free(q); });
  std::vector<size_t> shape(p.shape.begin(), p.shape.end());
  nb::ndarray<nb::numpy> arr(mem, shape.size(), shape.data(), owner, nullptr,
                             *dt);
  data = mem;
  return nb::cast(arr);
}

// ---- checkpoints -----------------------------------------------------------

using PropertyList =
    std::tuple<std::vector<std::pair<std::string, int64_t>>,
               std::vector<std::pair<std::string, double>>,
               std::vector<std::pair<std::string, std::string>>>;

comet::checkpoint::PropertyBag bagOf(const PropertyList &props) {
  comet::checkpoint::PropertyBag bag;
  bag.ints = std::get<0>(props);
  for (const auto &[k, v] : std::get<1>(props))
    bag.floats.push_back({k, static_cast<float>(v)});
  bag.strings = std::get<2>(props);
  return bag;
}

/// An ONNX Runtime checkpoint held in memory (comet::checkpoint): what a
/// CheckpointState holds until a Module's engine takes its values over,
/// and the initial state of that engine.
class PyCheckpoint {
public:
  static std::unique_ptr<PyCheckpoint> read(const std::string &path) {
    auto c = std::make_unique<PyCheckpoint>();
    std::string error;
    if (!comet::checkpoint::readCheckpointFile(path, *c->ckpt, error))
      throw std::runtime_error(error);
    return c;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> r;
    for (const auto &p : ckpt->parameters)
      r.push_back(p.name);
    return r;
  }

  const comet::checkpoint::Parameter &get(const std::string &name) const {
    const comet::checkpoint::Parameter *p = ckpt->find(name);
    if (!p)
      throw nb::key_error(("Parameter " + name + " not found.").c_str());
    return *p;
  }

  nb::object values(const std::string &name) const {
    const auto &p = get(name);
    Port port;
    port.name = name;
    port.shape = p.dims;
    port.onnxType = 1;
    port.bytes = p.values.size() * sizeof(float);
    void *dst = nullptr;
    nb::object arr = newOutput(port, dst);
    std::memcpy(dst, p.values.data(), port.bytes);
    return arr;
  }

  void setValues(const std::string &name, nb::handle value) {
    auto &p = const_cast<comet::checkpoint::Parameter &>(get(name));
    Port port;
    port.name = name;
    port.shape = p.dims;
    port.onnxType = 1;
    port.bytes = p.values.size() * sizeof(float);
    InputView v;
    viewInput(value, port, 0, 1, v);
    std::memcpy(p.values.data(), v.data, port.bytes);
  }

  /// The property bag as (ints, floats, strings), each in file order.
  nb::list properties() const {
    nb::list l;
    for (const auto &[k, v] : ckpt->properties.ints)
      l.append(nb::make_tuple(k, v));
    for (const auto &[k, v] : ckpt->properties.floats)
      l.append(nb::make_tuple(k, static_cast<double>(v)));
    for (const auto &[k, v] : ckpt->properties.strings)
      l.append(nb::make_tuple(k, v));
    return l;
  }

  bool hasOptimizerState() const { return !ckpt->optimizerGroups.empty(); }
  /// The optimizer steps its optimizer state records (0 without one).
  int64_t optimizerStep() const {
    return ckpt->optimizerGroups.empty() ? 0 : ckpt->optimizerGroups[0].step;
  }

  /// Writes the checkpoint with `props` as its property bag, and its
  /// optimizer groups only with includeOptimizerState.
  void write(const std::string &path, bool includeOptimizerState,
             const PropertyList &props) const {
    comet::checkpoint::Checkpoint c = *ckpt;
    if (!includeOptimizerState)
      c.optimizerGroups.clear();
    c.properties = bagOf(props);
    std::string error;
    bool ok;
    {
      nb::gil_scoped_release release;
      ok = comet::checkpoint::writeCheckpointFile(path, c, error);
    }
    if (!ok)
      throw std::runtime_error(error);
  }

  /// The inference model of `graph` (an eval graph, or with
  /// trainingGraph the training graph's forward part) cut to `outputs`,
  /// with these parameters, written atomically to `path`: what
  /// Engine::exportInferenceModel writes, before any engine exists.
  void exportInferenceModel(const std::string &graph,
                            const std::vector<std::string> &outputs,
                            bool trainingGraph, const std::string &path) const {
    std::ifstream f(graph, std::ios::binary);
    if (!f)
      throw std::runtime_error("cannot read " + graph + ": " +
                               std::strerror(errno));
    std::string model((std::istreambuf_iterator<char>(f)),
                      std::istreambuf_iterator<char>());
    std::string bytes, error;
    bool ok;
    {
      nb::gil_scoped_release release;
      ok = comet::onnx_export::writeInferenceModel(
               model.data(), model.size(), outputs, ckpt->parameters,
               trainingGraph, bytes, error) &&
           comet::checkpoint::writeFileAtomically(path, bytes, error);
    }
    if (!ok)
      throw std::runtime_error(graph + ": " + error);
  }

  std::shared_ptr<comet::checkpoint::Checkpoint> ckpt =
      std::make_shared<comet::checkpoint::Checkpoint>();
};

// ---- the engine ------------------------------------------------------------

comet::CompressMode compressModeOf(const std::string &s) {
  if (s == "none")
    return comet::CompressMode::None;
  if (s == "static")
    return comet::CompressMode::Static;
  if (s == "adaptive")
    return comet::CompressMode::Adaptive;
  throw nb::value_error(
      ("compress must be 'none', 'static' or 'adaptive', not '" + s + "'")
          .c_str());
}

/// comet::Engine with the ports ORT's Module shows and, under `adaptive`,
/// its bound tuner.
class PyEngine {
public:
  static std::unique_ptr<PyEngine> load(const std::string &path) {
    auto e = comet::Engine::load(path);
    if (!e)
      fail(e.takeError());
    auto p = std::make_unique<PyEngine>();
    p->engine = std::move(*e);
    return p;
  }

  /// Compiles with `initial`'s parameters (and optimizer state, when it
  /// has one) and, with `tuner`, under the bound tuner; `ignoreIndex` are
  /// the label values the graph's losses ignore.
  void compile(comet::EngineOptions options, const PyCheckpoint *initial,
               const std::optional<comet::tuner::TunerOptions> &tuner,
               std::vector<int64_t> ignoreIndex) {
    if (initial)
      options.initialState = initial->ckpt;
    {
      nb::gil_scoped_release release;
      check(engine->compile(options));
    }
    // Each port's role as the trainer bound it: the labels (classes in
    // [0, numClasses())) and the data (int64 token ids in [0, dataRange())).
    const comet::Trainer &t = engine->trainer();
    for (bool eval : {false, true}) {
      comet::Engine::UserArgs u = engine->userArgs(eval);
      const std::vector<comet::ArgInfo> &args =
          eval ? t.evalEntry().args : t.trainEntry().args;
      for (size_t i : u.inputs) {
        Port p = portOf(args[i]);
        p.isLabels =
            eval ? i == t.evalLabelsArg()
                 : t.labelsInput() && args[i].name == t.labelsInput()->name;
        p.range = p.isLabels ? t.numClasses() : t.dataRange();
        (eval ? evalIn : trainIn).push_back(std::move(p));
      }
      for (size_t i : u.outputs)
        (eval ? evalOut : trainOut).push_back(portOf(args[i]));
    }
    ignore = std::move(ignoreIndex);
    if (tuner) {
      auto t = comet::EngineTuner::create(*engine, *tuner);
      if (!t)
        fail(t.takeError());
      this->tuner = std::move(*t);
    }
  }

  nb::object train(const nb::sequence &inputs) {
    return run(inputs, trainIn, trainOut, false);
  }

  nb::object eval(const nb::sequence &inputs) {
    if (!engine->hasEval())
      throw std::runtime_error("the module has no eval graph: pass "
                               "eval_model_uri to Module to evaluate");
    return run(inputs, evalIn, evalOut, true);
  }

  std::vector<std::string> names(bool eval, bool outputs) const {
    const std::vector<Port> &ps =
        eval ? (outputs ? evalOut : evalIn) : (outputs ? trainOut : trainIn);
    std::vector<std::string> r;
    for (const Port &p : ps)
      r.push_back(p.name);
    return r;
  }

  nb::object parameter(const std::string &name, bool gradient) const {
    const comet::Buffer *b = gradient ? engine->trainer().gradient(name)
                                      : engine->trainer().buffer(name);
    if (!b ||
        b->category != (gradient ? COMET_RT_MEM_GRADS : COMET_RT_MEM_PARAMS))
      return nb::none();
    Port p;
    p.name = name;
    p.shape = b->shape;
    p.onnxType = 1;
    p.bytes = b->bytes();
    void *dst = nullptr;
    nb::object arr = newOutput(p, dst);
    check(toError(engine->trainer().copy(dst, b->data, b->bytes())));
    return arr;
  }

  void setParameter(const std::string &name, nb::handle value) {
    const comet::Buffer *b = engine->trainer().buffer(name);
    if (!b || b->category != COMET_RT_MEM_PARAMS)
      throw nb::key_error(("Parameter " + name + " not found.").c_str());
    Port p;
    p.name = name;
    p.shape = b->shape;
    p.onnxType = 1;
    p.elemBytes = 4;
    p.bytes = b->bytes();
    InputView v;
    viewInput(value, p, 0, 1, v);
    check(toError(engine->trainer().copy(b->data, v.data, p.bytes)));
  }

  /// The parameters, trainable ones or all, flattened one after the other
  /// in `order` into `out` (to_buffer) or from it.
  void flatParameters(const std::vector<std::string> &order, bool trainableOnly,
                      nb::handle buffer, bool toBuffer) {
    std::vector<const comet::Buffer *> bs;
    size_t total = 0;
    for (const std::string &n : order) {
      const comet::Buffer *b = engine->trainer().buffer(n);
      if (!b || b->category != COMET_RT_MEM_PARAMS)
        throw std::runtime_error("no parameter named '" + n + "'");
      if (trainableOnly && !engine->trainer().gradient(n))
        continue;
      bs.push_back(b);
      total += b->bytes();
    }
    Port p;
    p.name = "buffer";
    p.shape = {static_cast<int64_t>(total / 4)};
    p.onnxType = 1;
    p.bytes = total;
    if (toBuffer) {
      nb::ndarray<float, nb::c_contig, nb::device::cpu> out;
      if (!nb::try_cast(buffer, out, false) || out.size() * 4 != total)
        throw InputError("the buffer must be a contiguous float32 host array "
                         "of " +
                         std::to_string(total / 4) + " elements");
      auto *dst = reinterpret_cast<uint8_t *>(out.data());
      for (const comet::Buffer *b : bs) {
        check(toError(engine->trainer().copy(dst, b->data, b->bytes())));
        dst += b->bytes();
      }
      return;
    }
    InputView v;
    viewInput(buffer, p, 0, 1, v);
    const auto *src = static_cast<const uint8_t *>(v.data);
    for (const comet::Buffer *b : bs) {
      check(toError(engine->trainer().copy(b->data, src, b->bytes())));
      src += b->bytes();
    }
  }

  nb::dict stats() const {
    comet::EngineStats s = engine->stats();
    nb::dict d;
    nb::dict cats;
    for (const comet::CategoryBytes &c : s.categories)
      cats[c.name.c_str()] = dictOf({{"current", nb::cast(c.current)},
                                     {"peak", nb::cast(c.peak)},
                                     {"at_peak", nb::cast(c.atPeak)}});
    d["batch_size"] = engine->batchSize();
    d["categories"] = cats;
    d["peak_bytes"] = s.peakBytes;
    d["tensor_peak_bytes"] = s.tensorPeakBytes;
    d["predicted_peak_bytes"] = s.predictedPeakBytes;
    d["predicted_tensor_peak_bytes"] = s.predictedTensorPeakBytes;
    d["predicted_workspace_bytes"] = s.predictedWorkspaceBytesAtPeak;
    d["activation_bytes_uncompressed"] = s.activationBytesUncompressed;
    d["activation_bytes_compressed"] = s.activationBytesCompressed;
    d["compression_ratio"] = s.activationBytesCompressed > 0
                                 ? double(s.activationBytesUncompressed) /
                                       double(s.activationBytesCompressed)
                                 : 0.0;
    d["predicted_activation_bytes_at_peak"] = s.predictedActivationBytesAtPeak;
    d["steps"] = s.steps;
    nb::list sites;
    for (const comet::SiteStats &st : s.sites)
      sites.append(dictOf({{"value", nb::cast(st.value)},
                           {"codec", nb::cast(st.codec)},
                           {"slot", nb::cast(st.slot)},
                           {"eb", nb::cast(st.eb)},
                           {"bytes_in", nb::cast(st.bytesIn)},
                           {"bytes_out", nb::cast(st.bytesOut)},
                           {"ratio", nb::cast(st.ratio)},
                           {"calls", nb::cast(st.calls)}}));
    d["sites"] = sites;
    d["recomputed"] = s.recomputed;
    d["codec_fixed_width_sites"] = s.fixedWidthSites;
    if (s.budget.bytes > 0)
      d["budget"] = dictOf(
          {{"bytes", nb::cast(s.budget.bytes)},
           {"graph_bytes", nb::cast(s.budget.graphBytes)},
           {"predicted_peak_bytes", nb::cast(s.budget.predictedPeakBytes)},
           {"assumed_sz_ratio", nb::cast(s.budget.assumedSzRatio)},
           {"compressed", nb::cast(s.budget.compressed)},
           {"not_selected", nb::cast(s.budget.notSelected)}});
    else
      d["budget"] = nb::none();
    return d;
  }

  /// The engine's state as a checkpoint (parameters, and the optimizer
  /// group with includeOptimizerState), with `props` as its property bag.
  std::unique_ptr<PyCheckpoint> state(bool includeOptimizerState,
                                      const PropertyList &props) const {
    auto c = engine->checkpointState(includeOptimizerState);
    if (!c)
      fail(c.takeError());
    auto p = std::make_unique<PyCheckpoint>();
    *p->ckpt = std::move(*c);
    p->ckpt->properties = bagOf(props);
    return p;
  }

  void save(const std::string &path, bool includeOptimizerState,
            const PropertyList &props) const {
    comet::checkpoint::PropertyBag bag = bagOf(props);
    nb::gil_scoped_release release;
    check(engine->saveCheckpoint(path, includeOptimizerState, bag));
  }

  std::unique_ptr<comet::Engine> engine;

private:
  nb::object run(const nb::sequence &inputs, const std::vector<Port> &in,
                 const std::vector<Port> &out, bool eval) {
    size_t n = nb::len(inputs);
    if (n != in.size()) {
      std::string names;
      for (const Port &p : in)
        names += (names.empty() ? "'" : ", '") + p.name + "'";
      throw InputError(std::string(eval ? "eval" : "training") +
                       " step: expected " + std::to_string(in.size()) +
                       " inputs (" + names + "), got " + std::to_string(n));
    }
    std::vector<InputView> views(n);
    for (size_t i = 0; i < n; ++i) {
      viewInput(inputs[i], in[i], i, n, views[i]);
      checkRange(in[i], views[i], ignore, i, n);
    }
    const void *data = nullptr;
    const int64_t *labels = nullptr;
    for (size_t i = 0; i < n; ++i) {
      if (in[i].isLabels)
        labels = static_cast<const int64_t *>(views[i].data);
      else
        data = views[i].data;
    }
    std::vector<void *> dst(out.size());
    nb::list results;
    for (size_t k = 0; k < out.size(); ++k)
      results.append(newOutput(out[k], dst[k]));
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      if (eval) {
        check(engine->evalStep(data, labels, dst));
      } else {
        if (tuner)
          tuner->beforeStep(tunerSteps);
        check(engine->trainStep(data, labels, dst));
        if (tuner)
          tuner->afterStep(tunerSteps++);
      }
    }
    if (out.size() == 1)
      return results[0];
    return nb::tuple(results);
  }

  static llvm::Error toError(const std::string &msg) {
    if (msg.empty())
      return llvm::Error::success();
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  }

  std::vector<Port> trainIn, trainOut, evalIn, evalOut;
  std::vector<int64_t> ignore;
  std::unique_ptr<comet::EngineTuner> tuner;
  int64_t tunerSteps = 0;
  std::mutex mutex;
};

// ---- a graph's signature ---------------------------------------------------

/// The inputs and outputs of an ONNX model (name, element type, dims with
/// -1 where symbolic), the optimizer node it holds and its losses'
/// ignore_index values.
nb::dict readSignature(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw std::runtime_error("cannot read " + path + ": " +
                             std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(f)),
                    std::istreambuf_iterator<char>());
  comet::onnx_import::Model m;
  std::string error;
  if (!comet::onnx_import::readONNXModel(bytes.data(), bytes.size(), m, error))
    throw std::runtime_error(path + ": " + error);
  auto values = [](const std::vector<comet::onnx_import::ValueInfo> &vs) {
    nb::list l;
    for (const auto &v : vs) {
      nb::list dims;
      // A symbolic dim by its name ("batch"), an unnamed one as None.
      for (const auto &d : v.type.dims) {
        if (d.value >= 0)
          dims.append(d.value);
        else if (!d.param.empty())
          dims.append(d.param);
        else
          dims.append(nb::none());
      }
      l.append(nb::make_tuple(v.name, v.type.elemType, nb::tuple(dims)));
    }
    return l;
  };
  nb::list ignore;
  bool ignoreFromInput = false;
  std::string optimizer;
  for (const auto &n : m.graph.nodes) {
    if (n.opType == "AdamWOptimizer" || n.opType == "SGDOptimizerV2")
      optimizer = n.opType;
    if (n.opType.rfind("SoftmaxCrossEntropyLoss", 0) != 0)
      continue;
    for (const auto &a : n.attributes)
      if (a.name == "ignore_index")
        ignore.append(a.i);
    // SoftmaxCrossEntropyLossInternal takes it as its fourth input.
    if (n.opType.find("Internal") != std::string::npos && n.inputs.size() > 3 &&
        !n.inputs[3].empty())
      ignoreFromInput = true;
  }
  return dictOf({{"inputs", nb::cast(values(m.graph.inputs))},
                 {"outputs", nb::cast(values(m.graph.outputs))},
                 {"ignore_index", nb::cast(ignore)},
                 {"ignore_index_from_input", nb::cast(ignoreFromInput)},
                 {"optimizer", nb::cast(optimizer)}});
}

} // namespace

NB_MODULE(_comet, m) {
  m.doc() = "COMET's engine for comet.training.api (docs/python.md)";
  nb::object builtins = nb::module_::import_("builtins");
  nb::exception<InputError>(m, "InputError",
                            nb::make_tuple(builtins.attr("ValueError"),
                                           builtins.attr("RuntimeError")));
  nb::exception<InputTypeError>(m, "InputTypeError",
                                nb::make_tuple(builtins.attr("TypeError"),
                                               builtins.attr("RuntimeError")));

  nb::class_<comet::EngineOptions>(m, "EngineOptions")
      .def(nb::init<>())
      .def_rw("batch_size", &comet::EngineOptions::batchSize)
      .def_prop_rw(
          "compress",
          [](const comet::EngineOptions &o) {
            switch (o.compress) {
            case comet::CompressMode::None:
              return "none";
            case comet::CompressMode::Static:
              return "static";
            case comet::CompressMode::Adaptive:
              return "adaptive";
            }
            return "none";
          },
          [](comet::EngineOptions &o, const std::string &s) {
            o.compress = compressModeOf(s);
          })
      .def_rw("compress_options", &comet::EngineOptions::compressOptions)
      .def_rw("memory_budget", &comet::EngineOptions::memoryBudget)
      .def_rw("assumed_sz_ratio", &comet::EngineOptions::assumedSzRatio)
      .def_rw("optimizer_path", &comet::EngineOptions::optimizerPath)
      .def_rw("learning_rate", &comet::EngineOptions::learningRate)
      .def_rw("weights_path", &comet::EngineOptions::weightsPath)
      .def_rw("eval_model_path", &comet::EngineOptions::evalModelPath)
      .def_rw("opt_level", &comet::EngineOptions::optLevel)
      .def_rw("device", &comet::EngineOptions::device)
      .def_rw("recompute", &comet::EngineOptions::recompute)
      .def_rw("entropy_by_peak", &comet::EngineOptions::entropyByPeak)
      .def_rw("seed", &comet::EngineOptions::seed);

  nb::class_<comet::tuner::TunerOptions>(m, "TunerOptions")
      .def(nb::init<>())
      .def_prop_rw(
          "rule",
          [](const comet::tuner::TunerOptions &o) {
            return comet::tuner::ruleName(o.rule);
          },
          [](comet::tuner::TunerOptions &o, const std::string &s) {
            auto r = comet::tuner::parseRule(s);
            if (!r)
              throw nb::value_error(("bound_rule must be 'comet', 'acgc' or "
                                     "'noise', not '" +
                                     s + "'")
                                        .c_str());
            o.rule = *r;
          })
      .def_prop_rw(
          "grad_magnitude",
          [](const comet::tuner::TunerOptions &o) {
            return comet::tuner::gradMagnitudeName(o.gradMagnitude);
          },
          [](comet::tuner::TunerOptions &o, const std::string &s) {
            auto g = comet::tuner::parseGradMagnitude(s);
            if (!g)
              throw nb::value_error(("grad_magnitude must be 'masked', 'rms' "
                                     "or 'lbar', not '" +
                                     s + "'")
                                        .c_str());
            o.gradMagnitude = *g;
          })
      .def_rw("bound_k", &comet::tuner::TunerOptions::sigmaFactor)
      .def_rw("acgc_e", &comet::tuner::TunerOptions::acgcEnergy)
      .def_rw("noise_fraction", &comet::tuner::TunerOptions::noiseFraction)
      .def_rw("retune_interval", &comet::tuner::TunerOptions::retuneInterval)
      .def_rw("stats_interval", &comet::tuner::TunerOptions::statsInterval)
      .def_rw("stats_window", &comet::tuner::TunerOptions::window)
      .def_rw("eb_min", &comet::tuner::TunerOptions::minEb)
      .def_rw("eb_max", &comet::tuner::TunerOptions::maxEb)
      .def_rw("eb_relative_range", &comet::tuner::TunerOptions::relativeRange)
      .def_rw("channel_bounds", &comet::tuner::TunerOptions::channelBounds)
      .def("validate", [](const comet::tuner::TunerOptions &o) {
        return comet::tuner::validate(o);
      });

  nb::class_<PyEngine>(m, "Engine")
      .def_static("load", &PyEngine::load, "path"_a,
                  nb::call_guard<nb::gil_scoped_release>())
      .def("compile", &PyEngine::compile, "options"_a, "initial"_a.none(),
           "tuner"_a.none(), "ignore_index"_a)
      .def("checkpoint_state", &PyEngine::state, "include_optimizer_state"_a,
           "properties"_a)
      .def(
          "export_inference_model",
          [](const PyEngine &e, const std::string &path,
             const std::vector<std::string> &outputs) {
            check(e.engine->exportInferenceModel(path, outputs));
          },
          "path"_a, "outputs"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("save_checkpoint", &PyEngine::save, "path"_a,
           "include_optimizer_state"_a, "properties"_a)
      .def("train", &PyEngine::train, "inputs"_a)
      .def("eval", &PyEngine::eval, "inputs"_a)
      .def("names", &PyEngine::names, "eval"_a, "outputs"_a)
      .def_prop_ro("batch_size",
                   [](const PyEngine &e) { return e.engine->batchSize(); })
      .def_prop_ro("has_eval",
                   [](const PyEngine &e) { return e.engine->hasEval(); })
      .def("lazy_reset_grad", [](PyEngine &e) { e.engine->lazyResetGrad(); })
      .def(
          "optimizer_step",
          [](PyEngine &e) { check(e.engine->optimizerStep()); },
          nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("optimizer_steps",
                   [](const PyEngine &e) { return e.engine->optimizerSteps(); })
      .def_prop_ro("optimizer_name",
                   [](const PyEngine &e) { return e.engine->optimizerName(); })
      .def_prop_ro(
          "optimizer_path",
          [](const PyEngine &e) { return e.engine->artifacts().optimizer; })
      .def("set_optimizer",
           [](PyEngine &e, const std::string &path) {
             check(e.engine->setOptimizer(path));
           })
      .def_prop_rw(
          "learning_rate",
          [](const PyEngine &e) { return e.engine->learningRate(); },
          [](PyEngine &e, float lr) { check(e.engine->setLearningRate(lr)); })
      .def("parameter_names",
           [](const PyEngine &e) { return e.engine->parameters(); })
      .def("trainable_parameter_names",
           [](const PyEngine &e) { return e.engine->trainableParameters(); })
      .def(
          "get_parameter",
          [](const PyEngine &e, const std::string &n) {
            return e.parameter(n, false);
          },
          "name"_a)
      .def(
          "get_gradient",
          [](const PyEngine &e, const std::string &n) {
            return e.parameter(n, true);
          },
          "name"_a)
      .def("set_parameter", &PyEngine::setParameter, "name"_a, "value"_a)
      .def(
          "copy_parameters_to",
          [](PyEngine &e, const std::vector<std::string> &order, bool t,
             nb::handle buf) { e.flatParameters(order, t, buf, true); },
          "order"_a, "trainable_only"_a, "buffer"_a)
      .def(
          "copy_parameters_from",
          [](PyEngine &e, const std::vector<std::string> &order, bool t,
             nb::handle buf) { e.flatParameters(order, t, buf, false); },
          "order"_a, "trainable_only"_a, "buffer"_a)
      .def(
          "copy_state_from",
          [](PyEngine &e, const PyEngine &other) {
            check(e.engine->copyStateFrom(*other.engine));
          },
          "other"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("stats", &PyEngine::stats)
      .def("reset_peaks", [](PyEngine &e) { e.engine->resetPeaks(); });

  m.def("read_signature", &readSignature, "path"_a);

  nb::class_<PyCheckpoint>(m, "Checkpoint")
      .def_static("read", &PyCheckpoint::read, "path"_a)
      .def("names", &PyCheckpoint::names)
      .def(
          "dims",
          [](const PyCheckpoint &c, const std::string &n) {
            return c.get(n).dims;
          },
          "name"_a)
      .def(
          "trainable",
          [](const PyCheckpoint &c, const std::string &n) {
            return c.get(n).trainable;
          },
          "name"_a)
      .def("has",
           [](const PyCheckpoint &c, const std::string &n) {
             return c.ckpt->find(n) != nullptr;
           })
      .def("values", &PyCheckpoint::values, "name"_a)
      .def("properties", &PyCheckpoint::properties)
      .def_prop_ro("has_optimizer_state", &PyCheckpoint::hasOptimizerState)
      .def_prop_ro("optimizer_step", &PyCheckpoint::optimizerStep)
      .def("export_inference_model", &PyCheckpoint::exportInferenceModel,
           "graph"_a, "outputs"_a, "training_graph"_a, "path"_a)
      .def("write", &PyCheckpoint::write, "path"_a, "include_optimizer_state"_a,
           "properties"_a)
      .def("set_values", &PyCheckpoint::setValues, "name"_a, "value"_a);
}
