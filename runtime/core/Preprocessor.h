//===- Preprocessor.h - FOR_EACH over macro arguments (not installed) -----===//
//
// COMET_RT_FOR_EACH(m, a, b, c) is m(a) m(b) m(c), for up to 24 arguments
// (a longer list fails to compile, naming COMET_RT_FE_25). The contract's
// rules (Validate.cpp) and the dispatcher (Dispatch.cpp) apply it to
// abi.def's operand lists.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_CORE_PREPROCESSOR_H
#define COMET_RUNTIME_CORE_PREPROCESSOR_H

#define COMET_RT_PP_CAT_(a, b) a##b
#define COMET_RT_PP_CAT(a, b) COMET_RT_PP_CAT_(a, b)
#define COMET_RT_PP_COUNT(...)                                                 \
  COMET_RT_PP_COUNT_(__VA_ARGS__, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14,  \
                     13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define COMET_RT_PP_COUNT_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12,  \
                           _13, _14, _15, _16, _17, _18, _19, _20, _21, _22,   \
                           _23, _24, n, ...)                                   \
  n
#define COMET_RT_FOR_EACH(m, ...)                                              \
  COMET_RT_PP_CAT(COMET_RT_FE_, COMET_RT_PP_COUNT(__VA_ARGS__))(m, __VA_ARGS__)
#define COMET_RT_FE_1(m, a) m(a)
#define COMET_RT_FE_2(m, a, ...) m(a) COMET_RT_FE_1(m, __VA_ARGS__)
#define COMET_RT_FE_3(m, a, ...) m(a) COMET_RT_FE_2(m, __VA_ARGS__)
#define COMET_RT_FE_4(m, a, ...) m(a) COMET_RT_FE_3(m, __VA_ARGS__)
#define COMET_RT_FE_5(m, a, ...) m(a) COMET_RT_FE_4(m, __VA_ARGS__)
#define COMET_RT_FE_6(m, a, ...) m(a) COMET_RT_FE_5(m, __VA_ARGS__)
#define COMET_RT_FE_7(m, a, ...) m(a) COMET_RT_FE_6(m, __VA_ARGS__)
#define COMET_RT_FE_8(m, a, ...) m(a) COMET_RT_FE_7(m, __VA_ARGS__)
#define COMET_RT_FE_9(m, a, ...) m(a) COMET_RT_FE_8(m, __VA_ARGS__)
#define COMET_RT_FE_10(m, a, ...) m(a) COMET_RT_FE_9(m, __VA_ARGS__)
#define COMET_RT_FE_11(m, a, ...) m(a) COMET_RT_FE_10(m, __VA_ARGS__)
#define COMET_RT_FE_12(m, a, ...) m(a) COMET_RT_FE_11(m, __VA_ARGS__)
#define COMET_RT_FE_13(m, a, ...) m(a) COMET_RT_FE_12(m, __VA_ARGS__)
#define COMET_RT_FE_14(m, a, ...) m(a) COMET_RT_FE_13(m, __VA_ARGS__)
#define COMET_RT_FE_15(m, a, ...) m(a) COMET_RT_FE_14(m, __VA_ARGS__)
#define COMET_RT_FE_16(m, a, ...) m(a) COMET_RT_FE_15(m, __VA_ARGS__)
#define COMET_RT_FE_17(m, a, ...) m(a) COMET_RT_FE_16(m, __VA_ARGS__)
#define COMET_RT_FE_18(m, a, ...) m(a) COMET_RT_FE_17(m, __VA_ARGS__)
#define COMET_RT_FE_19(m, a, ...) m(a) COMET_RT_FE_18(m, __VA_ARGS__)
#define COMET_RT_FE_20(m, a, ...) m(a) COMET_RT_FE_19(m, __VA_ARGS__)
#define COMET_RT_FE_21(m, a, ...) m(a) COMET_RT_FE_20(m, __VA_ARGS__)
#define COMET_RT_FE_22(m, a, ...) m(a) COMET_RT_FE_21(m, __VA_ARGS__)
#define COMET_RT_FE_23(m, a, ...) m(a) COMET_RT_FE_22(m, __VA_ARGS__)
#define COMET_RT_FE_24(m, a, ...) m(a) COMET_RT_FE_23(m, __VA_ARGS__)

#endif // COMET_RUNTIME_CORE_PREPROCESSOR_H
