//===- Validate.cpp - abi.def's rules as validate() functions -------------===//
//
// Expands every COMET_RT_CHECKS of abi.def into
//
//   int32_t validate(Call &c, <name>_args &a)
//
// which runs the entry's rules twice: phase 0 applies the declarations
// (OPTIONAL, OUTPUT, INOUT, ALIAS, PARAM, SCAN), then Call::endDeclarations
// checks presence and overlaps and stages host copies; phase 1 runs the
// checks in the order abi.def lists them. The rule names are macros only
// in this file.
//
//===----------------------------------------------------------------------===//
#include "Checks.h"
#include "Preprocessor.h"

namespace comet::rt {

namespace {
struct EntryText {
  const char *name, *family;
};
const EntryText &entryText(Entry e) {
  static const EntryText texts[] = {
#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args)
#define COMET_RT_CHECKS(name, family, rules) {#name, #family},
#include "comet/runtime/abi.def"
  };
  static_assert(sizeof(texts) / sizeof(texts[0]) == kNumEntries,
                "every abi.def entry needs its COMET_RT_CHECKS");
  return texts[static_cast<int32_t>(e)];
}
} // namespace

const char *entryName(Entry e) { return entryText(e).name; }
const char *entryFamily(Entry e) { return entryText(e).family; }

// Declarations (phase 0).
#define COMET_RT_R_OPTIONAL(t) c.optional(a.t);
#define COMET_RT_R_OUTPUT(t) c.output(a.t);
#define COMET_RT_R_INOUT(t) c.inout(a.t);
#define COMET_RT_R_PARAM(t) c.param(a.t);
#define COMET_RT_R_SCAN(t) c.scan(a.t);
#define COMET_RT_PHASE0(r, ...)                                                \
  if (c.phase == 0) {                                                          \
    COMET_RT_FOR_EACH(r, __VA_ARGS__)                                          \
  }
#define OPTIONAL(...) COMET_RT_PHASE0(COMET_RT_R_OPTIONAL, __VA_ARGS__)
#define OUTPUT(...) COMET_RT_PHASE0(COMET_RT_R_OUTPUT, __VA_ARGS__)
#define INOUT(...) COMET_RT_PHASE0(COMET_RT_R_INOUT, __VA_ARGS__)
#define PARAM(...) COMET_RT_PHASE0(COMET_RT_R_PARAM, __VA_ARGS__)
#define SCAN(...) COMET_RT_PHASE0(COMET_RT_R_SCAN, __VA_ARGS__)
#define ALIAS(out, in)                                                         \
  if (c.phase == 0)                                                            \
    c.alias(a.out, a.in);

// Checks (phase 1).
#define COMET_RT_PHASE1(expr)                                                  \
  if (c.phase == 1)                                                            \
    COMET_RT_TRY(expr);
#define COMET_RT_ADDR(t) &a.t,
#define COMET_RT_ARGUMENT(t) , a.t
#define SAME_SHAPE(...)                                                        \
  COMET_RT_PHASE1(                                                             \
      checks::sameShape(c, {COMET_RT_FOR_EACH(COMET_RT_ADDR, __VA_ARGS__)}))
#define SAME_NUMEL(...)                                                        \
  COMET_RT_PHASE1(                                                             \
      checks::sameNumel(c, {COMET_RT_FOR_EACH(COMET_RT_ADDR, __VA_ARGS__)}))
#define RANK(t, r) COMET_RT_PHASE1(checks::rank(c, a.t, r, r))
#define RANK_IN(t, lo, hi) COMET_RT_PHASE1(checks::rank(c, a.t, lo, hi))
#define DIM(t, i) checks::dimOf(a.t, i)
#define ROWS(t, axis) checks::rowsOf(a.t, a.axis)
#define COLS(t, axis) checks::colsOf(a.t, a.axis)
#define COMET_RT_R_NUMEL(t)                                                    \
  COMET_RT_TRY(checks::numel(c, a.t, cometRtN_, cometRtNText_));
#define NUMEL(n, ...)                                                          \
  if (c.phase == 1) {                                                          \
    const int64_t cometRtN_ = (n);                                             \
    const char *cometRtNText_ = #n;                                            \
    COMET_RT_FOR_EACH(COMET_RT_R_NUMEL, __VA_ARGS__)                           \
  }
#define ONE_OF(attr, ...)                                                      \
  COMET_RT_PHASE1(checks::oneOf(c, #attr, a.attr, {__VA_ARGS__}))
#define IN_RANGE(attr, lo, hi)                                                 \
  COMET_RT_PHASE1(checks::inRange(c, #attr, a.attr, lo, hi))
#define COMET_RT_R_POSITIVE(t) COMET_RT_TRY(checks::positive(c, #t, a.t));
#define COMET_RT_R_NONNEG(t) COMET_RT_TRY(checks::nonneg(c, #t, a.t));
#define COMET_RT_R_FINITE(t) COMET_RT_TRY(checks::finite(c, #t, a.t));
#define COMET_RT_PHASE1_EACH(r, ...)                                           \
  if (c.phase == 1) {                                                          \
    COMET_RT_FOR_EACH(r, __VA_ARGS__)                                          \
  }
#define POSITIVE(...) COMET_RT_PHASE1_EACH(COMET_RT_R_POSITIVE, __VA_ARGS__)
#define NONNEG(...) COMET_RT_PHASE1_EACH(COMET_RT_R_NONNEG, __VA_ARGS__)
#define FINITE(...) COMET_RT_PHASE1_EACH(COMET_RT_R_FINITE, __VA_ARGS__)
#define AXIS(attr, t) COMET_RT_PHASE1(checks::axis(c, #attr, a.attr, a.t))
#define BROADCAST(out, ...)                                                    \
  COMET_RT_PHASE1(checks::broadcast(                                           \
      c, a.out, {COMET_RT_FOR_EACH(COMET_RT_ADDR, __VA_ARGS__)}))
#define CHECK(fn, ...)                                                         \
  COMET_RT_PHASE1(                                                             \
      checks::fn(c COMET_RT_FOR_EACH(COMET_RT_ARGUMENT, __VA_ARGS__)))

#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args)
#define COMET_RT_CHECKS(name, family, rules)                                   \
  int32_t validate(Call &c, name##_args &a) {                                  \
    for (c.phase = 0; c.phase < 2; ++c.phase) {                                \
      rules if (c.phase == 0) COMET_RT_TRY(c.endDeclarations(a));              \
    }                                                                          \
    return COMET_RT_SUCCESS;                                                   \
  }
#include "comet/runtime/abi.def"

} // namespace comet::rt
