/*===- comet/driver/aot.h - The data section of a compiled step -----------===*
 *
 * comet-compile writes the training step (and the eval graph) ahead of time
 * into a shared library that also holds, as data, everything a launcher
 * needs to run it without the compiler: the exported object
 * `comet_aot_program` of the type below. Every field is 8 bytes wide (an
 * int64_t, a double or a pointer), so the layout has no padding and the
 * compiler emits it as a plain LLVM struct constant.
 *
 * Bump COMET_AOT_ABI_VERSION whenever this layout changes; the launcher
 * refuses a library of another version.
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_DRIVER_AOT_H
#define COMET_DRIVER_AOT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COMET_AOT_ABI_VERSION 7
#define COMET_AOT_PROGRAM_SYMBOL "comet_aot_program"

/* One argument of a compiled function, after the runtime context. */
typedef struct comet_aot_arg {
  const char *name; /* onnx.name; empty for results */
  int64_t rank;
  const int64_t *shape;
  int64_t elem_bytes;
  int64_t is_result;
  int64_t is_labels;   /* the input the loss reads as labels */
  int64_t value_range; /* the labels' classes or the token ids' range, 0 */
  /* In a step that applies the optimizer: weight, state0, state1, lr,
   * step, or "" (ArgInfo::optimizerRole); a state's parameter, or "". */
  const char *optimizer_role;
  const char *optimizer_param;
} comet_aot_arg;

/* A compiled function and its packed entry point, which takes
 * {&ctx, &desc_1, ..., &desc_n, &status}. */
typedef struct comet_aot_entry {
  const char *func_name;
  void (*packed)(void **);
  int64_t num_args;
  const comet_aot_arg *args;
  /* The runtime entries (abi.def names) the function calls, so that a
   * launcher refuses a device that lacks one before the first step. */
  int64_t num_runtime_entries;
  const char *const *runtime_entries;
  /* The optimizer kernel the function applies itself, or "" (the
   * launcher runs the optimizer after it; Entry::fusedOptimizer). */
  const char *fused_optimizer;
} comet_aot_entry;

/* The initial value of a parameter. */
typedef struct comet_aot_weight {
  const char *name;
  int64_t bytes;
  const void *data;
} comet_aot_weight;

typedef struct comet_aot_consumer {
  const char *kind;
  const char *param;
  double num_terms, reuse, activation_elements;
} comet_aot_consumer;

/* A comet.compress of the training graph, by site id. */
typedef struct comet_aot_site {
  const char *value;
  const char *codec;
  int64_t slot; /* -1: none */
  double eb;
  int64_t bytes_in;
  int64_t num_consumers;
  const comet_aot_consumer *consumers;
} comet_aot_site;

/* A live interval of the memory prediction (comet/driver/Trainer.h). */
typedef struct comet_aot_interval {
  int64_t start, end, bytes, sz_tensor_bytes, activation, slot;
} comet_aot_interval;

typedef struct comet_aot_program {
  int64_t abi_version;
  /* What comet-compile read: the training graph, the weights (an ORT
   * checkpoint or an .onnx file), the eval and optimizer graphs ("" when
   * none; the built-in SGD). */
  const char *model;
  const char *weights_file;
  const char *eval_model;
  const char *optimizer_model;
  const char *compress; /* none | static | adaptive */
  int64_t batch;
  /* The optimizer graph's node (or builtin-sgd-momentum). */
  const char *optimizer;
  double adam_alpha, adam_beta, adam_eps, adam_weight_decay;
  int64_t adam_mode, adam_correct_bias;
  comet_aot_entry train;
  int64_t has_eval;
  comet_aot_entry eval;
  int64_t num_weights;
  const comet_aot_weight *weights;
  int64_t num_sites;
  const comet_aot_site *sites;
  /* The memory prediction. */
  int64_t num_steps;
  double sz_ratio;
  int64_t candidate_bytes;
  int64_t num_intervals;
  const comet_aot_interval *intervals;
  /* Per step (num_workspace of them, 0 or num_steps): the kernel workspace
   * a step takes beside its tensors, as the compiling engine's runtime
   * reported it (ConvGrad steps; MemoryPrediction::workspace). */
  int64_t num_workspace;
  const int64_t *workspace;
  /* The compiling engine's workspace limit, which the launcher's context
   * takes (comet_rt_context_set_workspace_limit). */
  int64_t workspace_limit;
  /* The values the backward computes again (MemoryPrediction::recomputed). */
  int64_t num_recomputed;
  const char *const *recomputed;
} comet_aot_program;

#ifdef __cplusplus
}
#endif

#endif /* COMET_DRIVER_AOT_H */
