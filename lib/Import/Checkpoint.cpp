//===- Checkpoint.cpp - ONNX Runtime training checkpoints -----------------===//
//
// The accessors and builders come from OrtCheckpoint.fbs (flatc at build
// time); the FlatBuffers verifier runs before any accessor, so a corrupt or
// truncated file is an error, never a read out of bounds. The reader and
// the writer share one set of checks on the parsed checkpoint (check()), so
// that what the writer accepts reads back, and what the reader accepts
// writes.
//
//===----------------------------------------------------------------------===//
#include "comet/Import/Checkpoint.h"

#include "OrtCheckpoint_generated.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace comet::checkpoint {

namespace {

// Versions whose layout is OrtCheckpoint.fbs's.
constexpr int32_t kMinVersion = 1, kMaxVersion = 2;
constexpr int32_t kFloat = 1;

const char *dataTypeName(int32_t t) {
  static const char *names[] = {
      "undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
      "int32",     "int64",  "string",    "bool",       "float16", "double",
      "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  if (t >= 0 && t < int32_t(std::size(names)))
    return names[t];
  return "unknown";
}

std::string dimsStr(const std::vector<int64_t> &dims) {
  std::string r = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    r += (i ? "," : "") + std::to_string(dims[i]);
  return r + "]";
}

/// The elements `dims` hold, or false (with `error` for `where`) when a dim
/// is negative or their product overflows 8-byte elements.
bool elementsOf(const std::vector<int64_t> &dims, const std::string &where,
                uint64_t &numel, std::string &error) {
  numel = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      error = where + " has a negative dim " + std::to_string(d);
      return false;
    }
    if (d != 0 &&
        numel > std::numeric_limits<uint64_t>::max() / 8 / uint64_t(d)) {
      error = where + " has dims whose product overflows";
      return false;
    }
    numel *= uint64_t(d);
  }
  return true;
}

/// How messages name a tensor: `unnamed` until its name is known, then
/// `what` 'name' `suffix` ("parameter 'w'", "optimizer group 'group0':
/// momentum 'momentum0' of parameter 'w'").
struct TensorRole {
  std::string unnamed, what, suffix;
  std::string named(const std::string &name) const {
    return what + " '" + name + "'" + suffix;
  }
};

/// Reads one Tensor: float32, data in the file.
bool readTensor(const ortfbs::Tensor *t, const TensorRole &role, Parameter &p,
                std::string &error) {
  if (!t || !t->name() || t->name()->size() == 0) {
    error = role.unnamed + " has no name";
    return false;
  }
  p.name = t->name()->str();
  std::string where = role.named(p.name);
  if (t->external_data_offset() >= 0) {
    error = where + " keeps its data in an external file, which COMET does "
                    "not read";
    return false;
  }
  if (t->data_type() != kFloat) {
    error = where + " has data type " + dataTypeName(t->data_type()) + " (" +
            std::to_string(t->data_type()) + "); only float is supported";
    return false;
  }
  // The verifier aligns a vector's length prefix to 4 bytes only: int64
  // dims may sit at 4 mod 8, so they are copied out, not loaded in place.
  const auto *dims = t->dims();
  size_t rank = dims ? dims->size() : 0;
  const uint8_t *dimBytes =
      dims ? reinterpret_cast<const uint8_t *>(dims) + sizeof(uint32_t)
           : nullptr;
  p.dims.resize(rank);
  for (size_t i = 0; i < rank; ++i)
    std::memcpy(&p.dims[i], dimBytes + i * sizeof(int64_t), sizeof(int64_t));
  uint64_t numel;
  if (!elementsOf(p.dims, where, numel, error))
    return false;
  size_t have = t->raw_data() ? t->raw_data()->size() : 0;
  if (have != numel * sizeof(float)) {
    error = where + " has " + std::to_string(have) + " bytes of data but " +
            std::to_string(numel) + " float elements need " +
            std::to_string(numel * sizeof(float));
    return false;
  }
  p.values.resize(numel);
  if (have) // raw_data need not be 4-byte aligned
    std::memcpy(p.values.data(), t->raw_data()->data(), have);
  return true;
}

/// A tensor of the writer's input: named, dims >= 0, as many values as
/// they need.
bool checkTensor(const Parameter &p, const TensorRole &role,
                 std::string &error) {
  if (p.name.empty()) {
    error = role.unnamed + " has no name";
    return false;
  }
  std::string named = role.named(p.name);
  uint64_t numel;
  if (!elementsOf(p.dims, named, numel, error))
    return false;
  if (numel != p.values.size()) {
    error = named + " has " + std::to_string(p.values.size()) +
            " values but its dims " + dimsStr(p.dims) + " need " +
            std::to_string(numel);
    return false;
  }
  return true;
}

/// What holds a checkpoint together, for the reader and the writer alike:
/// unique parameter names; per group, states of distinct parameters of the
/// checkpoint whose momentums are uniquely named and of the parameter's
/// dims; property names non-empty and unique across the three kinds.
bool check(const Checkpoint &c, std::string &error) {
  if (c.version < kMinVersion || c.version > kMaxVersion) {
    error = "checkpoint version " + std::to_string(c.version) +
            " is not supported (COMET reads versions " +
            std::to_string(kMinVersion) + " to " + std::to_string(kMaxVersion) +
            ")";
    return false;
  }
  if (c.parameters.empty()) {
    error = "the checkpoint has no parameters";
    return false;
  }
  std::set<std::string> seen;
  for (const Parameter &p : c.parameters)
    if (!seen.insert(p.name).second) {
      error = "parameter '" + p.name + "' appears twice";
      return false;
    }
  for (size_t g = 0; g < c.optimizerGroups.size(); ++g) {
    const OptimizerGroup &group = c.optimizerGroups[g];
    std::string where = "optimizer group '" + group.name + "'";
    if (group.name.empty()) {
      error = "optimizer group #" + std::to_string(g) + " has no name";
      return false;
    }
    for (size_t h = 0; h < g; ++h)
      if (c.optimizerGroups[h].name == group.name) {
        error = where + " appears twice";
        return false;
      }
    if (group.step < 0) {
      error = where + " has a negative step " + std::to_string(group.step);
      return false;
    }
    std::set<std::string> params;
    for (const ParameterOptimizerState &s : group.states) {
      if (s.param.empty()) {
        error = where + " has a state without a parameter name";
        return false;
      }
      std::string of = where + ": the state of parameter '" + s.param + "'";
      if (!params.insert(s.param).second) {
        error = of + " appears twice";
        return false;
      }
      const Parameter *p = c.find(s.param);
      if (!p) {
        error = of + " names no parameter of the checkpoint";
        return false;
      }
      std::set<std::string> names;
      for (const Parameter &m : s.momentums) {
        if (!names.insert(m.name).second) {
          error = of + " has two momentums named '" + m.name + "'";
          return false;
        }
        if (m.dims != p->dims) {
          error = of + ": momentum '" + m.name + "' has dims " +
                  dimsStr(m.dims) + ", the parameter " + dimsStr(p->dims);
          return false;
        }
      }
    }
  }
  std::set<std::string> props;
  auto checkName = [&](const std::string &name) {
    if (name.empty()) {
      error = "a property has no name";
      return false;
    }
    if (!props.insert(name).second) {
      error = "property '" + name + "' appears twice";
      return false;
    }
    return true;
  };
  for (const auto &kv : c.properties.ints)
    if (!checkName(kv.first))
      return false;
  for (const auto &kv : c.properties.floats)
    if (!checkName(kv.first))
      return false;
  for (const auto &kv : c.properties.strings)
    if (!checkName(kv.first))
      return false;
  return true;
}

template <typename T>
const T *findIn(const std::vector<std::pair<std::string, T>> &list,
                const std::string &name) {
  for (const auto &kv : list)
    if (kv.first == name)
      return &kv.second;
  return nullptr;
}

TensorRole momentumRole(const std::string &group, const std::string &param,
                        size_t k) {
  std::string g = "optimizer group '" + group + "': momentum",
              of = " of parameter '" + param + "'";
  return {g + " #" + std::to_string(k) + of, g, of};
}

bool readGroups(const ortfbs::Checkpoint *cp, Checkpoint &out,
                std::string &error) {
  const auto *groups = cp->optimizer_groups();
  if (!groups)
    return true;
  for (size_t g = 0; g < groups->size(); ++g) {
    const ortfbs::OptimizerGroup *fg = groups->Get(g);
    OptimizerGroup group;
    if (fg->group_name())
      group.name = fg->group_name()->str();
    group.step = fg->step();
    group.initialLearningRate = fg->initial_learning_rate();
    if (const auto *states = fg->optimizer_states())
      for (size_t i = 0; i < states->size(); ++i) {
        const ortfbs::ParameterOptimizerState *fs = states->Get(i);
        ParameterOptimizerState s;
        if (fs->param_name())
          s.param = fs->param_name()->str();
        if (const auto *ms = fs->momentums())
          for (size_t k = 0; k < ms->size(); ++k) {
            Parameter m;
            if (!readTensor(ms->Get(k), momentumRole(group.name, s.param, k), m,
                            error))
              return false;
            s.momentums.push_back(std::move(m));
          }
        group.states.push_back(std::move(s));
      }
    out.optimizerGroups.push_back(std::move(group));
  }
  return true;
}

bool readProperties(const ortfbs::Checkpoint *cp, Checkpoint &out) {
  const ortfbs::PropertyBag *bag = cp->property_bag();
  if (!bag)
    return true;
  auto name = [](const flatbuffers::String *s) {
    return s ? s->str() : std::string();
  };
  if (const auto *ints = bag->ints())
    for (const ortfbs::IntProperty *p : *ints)
      out.properties.ints.push_back({name(p->name()), p->value()});
  if (const auto *floats = bag->floats())
    for (const ortfbs::FloatProperty *p : *floats)
      out.properties.floats.push_back({name(p->name()), p->value()});
  if (const auto *strings = bag->strings())
    for (const ortfbs::StringProperty *p : *strings)
      out.properties.strings.push_back({name(p->name()), name(p->value())});
  return true;
}

} // namespace

const Parameter *Checkpoint::find(const std::string &name) const {
  for (const Parameter &p : parameters)
    if (p.name == name)
      return &p;
  return nullptr;
}

const Parameter *ParameterOptimizerState::find(const std::string &name) const {
  for (const Parameter &m : momentums)
    if (m.name == name)
      return &m;
  return nullptr;
}

const ParameterOptimizerState *
OptimizerGroup::find(const std::string &param) const {
  for (const ParameterOptimizerState &s : states)
    if (s.param == param)
      return &s;
  return nullptr;
}

const int64_t *PropertyBag::findInt(const std::string &name) const {
  return findIn(ints, name);
}

const float *PropertyBag::findFloat(const std::string &name) const {
  return findIn(floats, name);
}

const std::string *PropertyBag::findString(const std::string &name) const {
  return findIn(strings, name);
}

namespace {

bool sameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool sameTensor(const Parameter &a, const Parameter &b) {
  return a.name == b.name && a.dims == b.dims && a.trainable == b.trainable &&
         a.values.size() == b.values.size() &&
         (a.values.empty() ||
          std::memcmp(a.values.data(), b.values.data(),
                      a.values.size() * sizeof(float)) == 0);
}

template <typename T, typename Eq>
bool sameList(const std::vector<T> &a, const std::vector<T> &b, Eq eq) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!eq(a[i], b[i]))
      return false;
  return true;
}

} // namespace

bool sameContents(const Checkpoint &a, const Checkpoint &b) {
  auto sameState = [](const ParameterOptimizerState &x,
                      const ParameterOptimizerState &y) {
    return x.param == y.param && sameList(x.momentums, y.momentums, sameTensor);
  };
  auto sameGroup = [&](const OptimizerGroup &x, const OptimizerGroup &y) {
    return x.name == y.name && x.step == y.step &&
           sameBits(x.initialLearningRate, y.initialLearningRate) &&
           sameList(x.states, y.states, sameState);
  };
  auto sameFloat = [](const std::pair<std::string, float> &x,
                      const std::pair<std::string, float> &y) {
    return x.first == y.first && sameBits(x.second, y.second);
  };
  auto same = [](const auto &x, const auto &y) { return x == y; };
  return a.version == b.version &&
         sameList(a.parameters, b.parameters, sameTensor) &&
         sameList(a.optimizerGroups, b.optimizerGroups, sameGroup) &&
         sameList(a.properties.ints, b.properties.ints, same) &&
         sameList(a.properties.floats, b.properties.floats, sameFloat) &&
         sameList(a.properties.strings, b.properties.strings, same);
}

bool readCheckpoint(const void *data, size_t size, Checkpoint &out,
                    std::string &error) {
  auto *bytes = static_cast<const uint8_t *>(data);
  if (size < 8 || !flatbuffers::BufferHasIdentifier(
                      bytes, ortfbs::CheckpointIdentifier())) {
    error = "not an ONNX Runtime checkpoint (no \"ODTC\" file identifier)";
    return false;
  }
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    error = "the checkpoint is larger than one FlatBuffers buffer can be "
            "(2 GiB)";
    return false;
  }
  // The accessors load int64 scalars in place: they need an 8-aligned base.
  std::vector<uint64_t> aligned;
  if (reinterpret_cast<uintptr_t>(bytes) % alignof(uint64_t)) {
    aligned.resize((size + 7) / 8);
    std::memcpy(aligned.data(), bytes, size);
    bytes = reinterpret_cast<const uint8_t *>(aligned.data());
  }
  flatbuffers::Verifier verifier(bytes, size);
  if (!ortfbs::VerifyCheckpointBuffer(verifier)) {
    error = "corrupt or truncated checkpoint (FlatBuffers verification "
            "failed)";
    return false;
  }
  const ortfbs::Checkpoint *cp = ortfbs::GetCheckpoint(bytes);
  out = Checkpoint();
  out.version = cp->version();
  if (out.version < kMinVersion || out.version > kMaxVersion)
    return check(out, error); // names the version
  const ortfbs::ModuleState *ms = cp->module_state();
  if (!ms) {
    error = "the checkpoint has no module state (no parameters)";
    return false;
  }
  if (ms->is_nominal_state()) {
    error = "the checkpoint is nominal: it names the parameters but holds "
            "no values";
    return false;
  }
  if (ms->has_external_data()) {
    error = "the checkpoint keeps its parameters in an external data file, "
            "which COMET does not read";
    return false;
  }
  for (bool trainable : {true, false}) {
    auto *list = trainable ? ms->requires_grad_params() : ms->frozen_params();
    if (!list)
      continue;
    for (size_t i = 0; i < list->size(); ++i) {
      Parameter p;
      TensorRole role{std::string(trainable ? "trainable" : "frozen") +
                          " parameter #" + std::to_string(i),
                      "parameter", ""};
      if (!readTensor(list->Get(i), role, p, error))
        return false;
      p.trainable = trainable;
      out.parameters.push_back(std::move(p));
    }
  }
  return readGroups(cp, out, error) && readProperties(cp, out) &&
         check(out, error);
}

bool readCheckpointFile(const std::string &path, Checkpoint &out,
                        std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open the checkpoint";
    return false;
  }
  std::vector<char> buf((std::istreambuf_iterator<char>(in)),
                        std::istreambuf_iterator<char>());
  if (in.bad()) {
    error = path + ": cannot read the checkpoint";
    return false;
  }
  if (!readCheckpoint(buf.data(), buf.size(), out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

bool writeCheckpoint(const Checkpoint &c, std::string &bytes,
                     std::string &error) {
  // The per-tensor checks, then what holds the whole together; with them
  // an upper bound of the buffer's size (each tensor's data, dims and name,
  // and generous room for its table, vtable and padding).
  uint64_t estimate = 1024;
  auto account = [&](const Parameter &p) {
    estimate += p.values.size() * 4 + p.dims.size() * 8 + p.name.size() + 128;
  };
  for (size_t i = 0; i < c.parameters.size(); ++i) {
    TensorRole role{"parameter #" + std::to_string(i), "parameter", ""};
    if (!checkTensor(c.parameters[i], role, error))
      return false;
    account(c.parameters[i]);
  }
  for (const OptimizerGroup &g : c.optimizerGroups) {
    estimate += g.name.size() + 128;
    for (const ParameterOptimizerState &s : g.states) {
      estimate += s.param.size() + 128;
      for (size_t k = 0; k < s.momentums.size(); ++k) {
        if (!checkTensor(s.momentums[k], momentumRole(g.name, s.param, k),
                         error))
          return false;
        account(s.momentums[k]);
      }
    }
  }
  for (const auto &kv : c.properties.ints)
    estimate += kv.first.size() + 64;
  for (const auto &kv : c.properties.floats)
    estimate += kv.first.size() + 64;
  for (const auto &kv : c.properties.strings)
    estimate += kv.first.size() + kv.second.size() + 64;
  if (!check(c, error))
    return false;
  if (estimate >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    error = "the checkpoint needs about " + std::to_string(estimate) +
            " bytes, more than one FlatBuffers buffer holds (2 GiB); COMET "
            "does not write external data";
    return false;
  }

  flatbuffers::FlatBufferBuilder b(static_cast<size_t>(estimate));
  // Every field, defaults too: a float property of -0 equals the default 0
  // and would otherwise come back as +0.
  b.ForceDefaults(true);
  // Strings through CreateString(std::string), never a const char *: a
  // name may hold NUL bytes.
  auto tensor = [&](const Parameter &p) {
    auto name = b.CreateString(p.name);
    auto dims = b.CreateVector(p.dims);
    auto raw =
        b.CreateVector(reinterpret_cast<const uint8_t *>(p.values.data()),
                       p.values.size() * sizeof(float));
    ortfbs::TensorBuilder t(b);
    t.add_name(name);
    t.add_dims(dims);
    t.add_data_type(kFloat);
    t.add_raw_data(raw);
    return t.Finish();
  };
  std::vector<flatbuffers::Offset<ortfbs::Tensor>> trainable, frozen;
  for (const Parameter &p : c.parameters)
    (p.trainable ? trainable : frozen).push_back(tensor(p));
  auto module = ortfbs::CreateModuleStateDirect(b, &trainable, &frozen);

  flatbuffers::Offset<
      flatbuffers::Vector<flatbuffers::Offset<ortfbs::OptimizerGroup>>>
      groups;
  if (!c.optimizerGroups.empty()) {
    std::vector<flatbuffers::Offset<ortfbs::OptimizerGroup>> gs;
    for (const OptimizerGroup &g : c.optimizerGroups) {
      std::vector<flatbuffers::Offset<ortfbs::ParameterOptimizerState>> ss;
      for (const ParameterOptimizerState &s : g.states) {
        std::vector<flatbuffers::Offset<ortfbs::Tensor>> ms;
        for (const Parameter &m : s.momentums)
          ms.push_back(tensor(m));
        auto param = b.CreateString(s.param);
        ss.push_back(ortfbs::CreateParameterOptimizerState(b, param,
                                                           b.CreateVector(ms)));
      }
      auto name = b.CreateString(g.name);
      auto states = b.CreateVector(ss);
      gs.push_back(ortfbs::CreateOptimizerGroup(b, name, g.step,
                                                g.initialLearningRate, states));
    }
    groups = b.CreateVector(gs);
  }

  flatbuffers::Offset<ortfbs::PropertyBag> bag;
  if (!c.properties.empty()) {
    std::vector<flatbuffers::Offset<ortfbs::IntProperty>> ints;
    std::vector<flatbuffers::Offset<ortfbs::FloatProperty>> floats;
    std::vector<flatbuffers::Offset<ortfbs::StringProperty>> strings;
    for (const auto &[name, value] : c.properties.ints)
      ints.push_back(ortfbs::CreateIntProperty(b, b.CreateString(name), value));
    for (const auto &[name, value] : c.properties.floats)
      floats.push_back(
          ortfbs::CreateFloatProperty(b, b.CreateString(name), value));
    for (const auto &[name, value] : c.properties.strings) {
      auto n = b.CreateString(name);
      auto v = b.CreateString(value);
      strings.push_back(ortfbs::CreateStringProperty(b, n, v));
    }
    bag = ortfbs::CreatePropertyBagDirect(b, &ints, &floats, &strings);
  }
  b.Finish(ortfbs::CreateCheckpoint(b, c.version, module, groups, bag),
           ortfbs::CheckpointIdentifier());
  bytes.assign(reinterpret_cast<const char *>(b.GetBufferPointer()),
               b.GetSize());
  return true;
}

namespace {

/// Writes all of `bytes` to `fd`.
bool writeAll(int fd, const std::string &bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += size_t(n);
  }
  return true;
}

/// A name for a temporary file next to `path`, unlikely to be taken:
/// `path`.tmp.<pid>.<random hex>.
std::string temporaryName(const std::string &path) {
  std::random_device rd;
  char suffix[32];
  snprintf(suffix, sizeof(suffix), ".tmp.%d.%08x", int(getpid()), rd());
  return path + suffix;
}

/// Removes the temporary files of `path` (in folder `dir`) that a writer
/// killed between naming one and renaming it left behind: those whose
/// process no longer exists. Another live writer's stay.
void removeStaleTemporaries(const std::string &dir, const std::string &path) {
  std::string base = path.substr(path.rfind('/') + 1) + ".tmp.";
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  while (dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind(base, 0) != 0)
      continue;
    char *end = nullptr;
    long pid = std::strtol(name.c_str() + base.size(), &end, 10);
    if (pid <= 0 || !end || *end != '.')
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      ::unlink((dir + "/" + name).c_str());
  }
  ::closedir(d);
}

/// The process's umask, read where reading it changes nothing (umask(2)
/// would set it for every thread for a moment); 022 if unknown.
mode_t currentUmask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0)
      return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  return 022;
}

/// Writes `bytes` to a new file `tmp` in `dir`, synced: with `unnamed`,
/// through an O_TMPFILE file linked to `tmp` at the end. On failure
/// nothing is left and `error` says what failed.
bool writeTemporary(const std::string &dir, const std::string &tmp,
                    const std::string &bytes, bool unnamed,
                    std::string &error) {
  int fd = unnamed ? ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600)
                   : ::open(tmp.c_str(),
                            O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) {
    error = "cannot create a temporary file in " + dir + ": " +
            std::strerror(errno);
    return false;
  }
  if (unnamed) {
    // The mode of an ordinary new file (O_TMPFILE's need not honour the
    // umask).
    ::fchmod(fd, 0666 & ~currentUmask());
  }
  bool ok = writeAll(fd, bytes) && ::fsync(fd) == 0;
  if (!ok)
    error = std::string("cannot write the checkpoint: ") + std::strerror(errno);
  bool linked = false;
  if (ok && unnamed) {
    std::string proc = "/proc/self/fd/" + std::to_string(fd);
    ok = linked = ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, tmp.c_str(),
                           AT_SYMLINK_FOLLOW) == 0;
    if (!ok)
      error =
          "cannot name the temporary file " + tmp + ": " + std::strerror(errno);
  }
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = std::string("cannot write the checkpoint: ") + std::strerror(errno);
  }
  if (!ok && (!unnamed || linked))
    ::unlink(tmp.c_str());
  return ok;
}

} // namespace

bool writeCheckpointFile(const std::string &path, const Checkpoint &c,
                         std::string &error) {
  std::string bytes;
  if (!writeCheckpoint(c, bytes, error)) {
    error = path + ": " + error;
    return false;
  }
  return writeFileAtomically(path, bytes, error);
}

bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error) {
  std::string dir = ".";
  if (size_t slash = path.rfind('/'); slash != std::string::npos)
    dir = slash == 0 ? "/" : path.substr(0, slash);
  removeStaleTemporaries(dir, path);
  std::string tmp = temporaryName(path);
  // An unnamed file in the folder first (O_TMPFILE): a process killed while
  // writing leaves nothing behind. It is named only once complete and
  // synced, for the instant before the rename. Without O_TMPFILE (or
  // /proc to name it by), a named temporary file.
  std::string what;
  if (!writeTemporary(dir, tmp, bytes, /*unnamed=*/true, what) &&
      !writeTemporary(dir, tmp, bytes, /*unnamed=*/false, what)) {
    error = path + ": " + what;
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": cannot rename " + tmp + " to it: " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  // The rename itself survives a crash once the folder is synced.
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

} // namespace comet::checkpoint
