//===- Contract.h - The runtime contract, generated from abi.def ----------===//
//
// comet/runtime/abi.def declares every entry of the runtime's interface
// once: its signature (COMET_RT_FUNC) and its argument checks
// (COMET_RT_CHECKS). From it this header generates what the dispatcher
// (runtime/dispatch) and the backends (runtime/backends/*) share:
//
//  - Entry, one enumerator per entry, and <name>_args, the entry's
//    operands after validation: memrefs as Tensor views, scalars as they
//    came;
//  - Backend, the table a backend fills with one function per entry (or a
//    declared exclusion); a backend's function only computes: the
//    dispatcher has validated every argument before it runs;
//  - Call, the state of one dispatched call, which runs the checks.
//
// Entries of family `host` are implemented by the runtime itself
// (host::run, runtime/core) for every device: buffers, step_abort and the
// tuner's statistics.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_CORE_CONTRACT_H
#define COMET_RUNTIME_CORE_CONTRACT_H

#include "Errors.h"
#include "Tensor.h"
#include "comet/runtime/abi.h"

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace comet::rt {

enum class Entry : int32_t {
#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args) name,
#include "comet/runtime/abi.def"
};

constexpr int32_t kNumEntries = 0
#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args) +1
#include "comet/runtime/abi.def"
    ;

/// The entry's abi.def name (without comet_rt_) and its family.
const char *entryName(Entry e);
const char *entryFamily(Entry e);

constexpr bool isHostFamily(const char *f) {
  return f[0] == 'h' && f[1] == 'o' && f[2] == 's' && f[3] == 't' && !f[4];
}

/// Whether the runtime implements the entry itself (family `host`).
template <Entry E> struct IsHost;
#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args)
#define COMET_RT_CHECKS(name, family, rules)                                   \
  template <>                                                                  \
  struct IsHost<Entry::name> : std::bool_constant<isHostFamily(#family)> {};
#include "comet/runtime/abi.def"

// The operands of each entry: <name>_args.
#define COMET_RT_MEMBER_tf32 Tensor
#define COMET_RT_MEMBER_ti64 Tensor
#define COMET_RT_MEMBER_ti1 Tensor
#define COMET_RT_MEMBER_tu8 Tensor
#define COMET_RT_MEMBER_buffer comet_rt_buffer *
#define COMET_RT_MEMBER_handle int64_t
#define COMET_RT_MEMBER_i64 int64_t
#define COMET_RT_MEMBER_i32 int32_t
#define COMET_RT_MEMBER_f32 float
#define COMET_RT_MEMBER_f64 double
/// A memref result (buffer_alloc) comes first, as in the C signature.
#define COMET_RT_RESULT_MEMBER_status
#define COMET_RT_RESULT_MEMBER_handle
#define COMET_RT_RESULT_MEMBER_none
#define COMET_RT_RESULT_MEMBER_buffer comet_rt_buffer *result = nullptr;
#define COMET_RT_ARG(kind, name) COMET_RT_MEMBER_##kind name{};
#define COMET_RT_FUNC(name, ret, args)                                         \
  struct name##_args {                                                         \
    static constexpr Entry entry = Entry::name;                                \
    COMET_RT_RESULT_MEMBER_##ret args                                          \
  };
#include "comet/runtime/abi.def"

/// Calls f on every Tensor of a.
#define COMET_RT_VISIT_tf32(n) f(a.n);
#define COMET_RT_VISIT_ti64(n) f(a.n);
#define COMET_RT_VISIT_ti1(n) f(a.n);
#define COMET_RT_VISIT_tu8(n) f(a.n);
#define COMET_RT_VISIT_buffer(n)
#define COMET_RT_VISIT_handle(n)
#define COMET_RT_VISIT_i64(n)
#define COMET_RT_VISIT_i32(n)
#define COMET_RT_VISIT_f32(n)
#define COMET_RT_VISIT_f64(n)
#define COMET_RT_ARG(kind, name) COMET_RT_VISIT_##kind(name)
#define COMET_RT_FUNC(name, ret, args)                                         \
  template <typename F> void forEachTensor(name##_args &a, F &&f) {            \
    (void)a;                                                                   \
    (void)f;                                                                   \
    args                                                                       \
  }
#include "comet/runtime/abi.def"

/// What a backend's function for an entry returns: the C return type, with
/// a memref result (buffer) written to args.result instead.
#define COMET_RT_KRET_status int32_t
#define COMET_RT_KRET_handle int64_t
#define COMET_RT_KRET_none void
#define COMET_RT_KRET_buffer void
/// Declares `run` for every entry: put it inside a backend's namespace with
///   #define COMET_RT_ARG(kind, name)
///   #define COMET_RT_FUNC(name, ret, args) COMET_RT_DECLARE_RUN(name, ret)
///   #include "comet/runtime/abi.def"
#define COMET_RT_DECLARE_RUN(name, ret)                                        \
  COMET_RT_KRET_##ret run(comet_rt_context *ctx,                               \
                          const ::comet::rt::name##_args &a);

/// What the dispatcher's handle checks ask a backend about a handle.
struct HandleInfo {
  int32_t codec = 0;
  int64_t numElements = 0;
  std::vector<int64_t> dims;
  /// The bytes the handle keeps, the stream's own size (its header) and
  /// the size of its payload section (the bits of a mask).
  int64_t blockBytes = 0, streamBytes = 0, payloadBytes = 0;
};

/// A backend: one function per entry it implements, the reason for each
/// entry it declares it lacks (its Exclusions.def), and what the
/// contract's checks ask it about handles. Host entries stay null.
struct Backend {
  const char *name = "";
  int32_t device = 0;
#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args)                                         \
  COMET_RT_KRET_##ret (*name)(comet_rt_context *, const name##_args &) =       \
      nullptr;
#include "comet/runtime/abi.def"
  const char *excluded[kNumEntries] = {};
  /// false when h is not a live handle of this backend.
  bool (*handleInfo)(comet_rt_context *ctx, int64_t h,
                     HandleInfo &out) = nullptr;
  /// The most workspace conv_grad2d takes at once for a's shapes and
  /// present outputs (its data is not read; the geometry is checked);
  /// null: the backend cannot say.
  int64_t (*convGrad2dWorkspace)(comet_rt_context *ctx,
                                 const conv_grad2d_args &a) = nullptr;
};

/// The state of one dispatched call: the entry, the context's backend, and
/// what the checks declared and staged. Runs an entry's rules in two
/// phases: declarations (roles, optional operands, aliases, staging) and
/// checks (Validate.cpp).
class Call {
public:
  Call(comet_rt_context *ctx, Entry entry, const Backend &backend);
  /// Under COMET_RT_PROFILE: waits for the device and counts the call.
  ~Call();
  Call(const Call &) = delete;
  Call &operator=(const Call &) = delete;

  comet_rt_context *ctx;
  Entry entry;
  const char *op;
  const Backend &backend;
  int phase = 0;
  int64_t profileStart = -1;

  /// Views m as t: a null memref leaves t absent; a bad layout fails.
  int32_t bind(Tensor &t, const comet_rt_memref *m, const char *name,
               int32_t elemBytes);

  // Declarations (phase 0).
  void optional(Tensor &t) {
    t.optional = true;
    if (t.present && t.numel() == 0)
      t.present = false;
  }
  void output(Tensor &t) { t.role = Tensor::Out; }
  void inout(Tensor &t) { t.role = Tensor::InOut; }
  void param(Tensor &t) { t.param = true; }
  void scan(Tensor &t) { t.scan = true; }
  void alias(const Tensor &out, const Tensor &in) {
    aliases.emplace_back(&out, &in);
  }
  /// Ends phase 0: every required operand present, no output overlapping
  /// another operand except a declared alias, PARAM and SCAN operands
  /// readable on the host.
  template <typename A> int32_t endDeclarations(A &a) {
    std::vector<Tensor *> ts;
    forEachTensor(a, [&](Tensor &t) { ts.push_back(&t); });
    return finishDeclarations(ts);
  }

  /// Fails with COMET_RT_ERROR_INVALID_ARGUMENT and "<op>: <parts>".
  template <typename... T> int32_t fail(const T &...parts) const {
    return rt::fail(COMET_RT_ERROR_INVALID_ARGUMENT,
                    concat(op, ": ", parts...));
  }
  /// Fails unless the backend implements the entry (or it is a host one).
  int32_t runnable(bool implemented) const;

private:
  int32_t finishDeclarations(const std::vector<Tensor *> &ts);
  std::vector<std::pair<const Tensor *, const Tensor *>> aliases;
  std::vector<std::unique_ptr<unsigned char[]>> staged;
};

/// The checks of each entry (Validate.cpp, from abi.def's COMET_RT_CHECKS).
#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args)                                         \
  int32_t validate(Call &c, name##_args &a);
#include "comet/runtime/abi.def"

/// The runtime's own implementations of the host entries.
namespace host {
#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args) COMET_RT_DECLARE_RUN(name, ret)
#include "comet/runtime/abi.def"
} // namespace host

} // namespace comet::rt

#endif // COMET_RUNTIME_CORE_CONTRACT_H
