//===- Passes.td - comet dialect passes --------------------*- tablegen -*-===//
#ifndef COMET_DIALECT_COMET_TRANSFORMS_PASSES_TD
#define COMET_DIALECT_COMET_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def CometSpecializeShapes
    : Pass<"comet-specialize-shapes", "mlir::ModuleOp"> {
  let summary = "Give every dynamic dimension its size for one batch size";
  let description = [{
    Graphs exported with a dynamic batch have `?` dims, but the liveness
    analysis (value sizes, the bounds' term counts, the memory prediction)
    and the lowering (buffers) need numbers. A `?` is not always the batch:
    attention reshapes it into heads x batch and tokens x batch, and where
    torch computes a shape at run time (a channel shuffle's Reshape, a
    channel split's Slice) the exporter leaves channels and spatial dims
    `?` too. So the leading `?` dim of each function argument takes
    `batch-size`; then, in program order, each op's results take the static
    dims that its type inference gives from its already specialized
    operands (a Reshape whose shape operand is a constant or is computed by
    Shape, Gather, Concat, ConcatTraining, Unsqueeze and integer
    arithmetic, a Slice with such bounds, a Transpose, a MatMul...)
    together with the static dims their type already has. A dim that
    neither gives (any `?` of an argument but the leading one, a Reshape
    target read at run time), a static dim that inference contradicts, and
    an op that no longer verifies with its specialized operands are errors
    naming the value. An argument that
    a loss (SoftmaxCrossEntropyLoss or ONNX Runtime's internal form) reads
    as labels takes its scores' dims without the class dim instead, when
    the walk reaches the loss: a language model's scores have batch x
    tokens rows, one label each, though ONNX Runtime declares the labels
    with the batch's symbol. The function's results take their returned values'
    types. Run it before `--comet-compress-activations`, so both the
    compression and the lowering see the same sizes;
    `--comet-lower-to-runtime` runs the same code on a graph that skipped
    it.

    Input (`batch-size=2`):
    ```mlir
    func.func @f(%x: tensor<?x4x3xf32>) -> tensor<?x3xf32> {
      %s = onnx.Initializer "s" dense<[-1, 3]> : tensor<2xi64>
      %y = onnx.Reshape(%x, %s) : (tensor<?x4x3xf32>, tensor<2xi64>) -> tensor<?x3xf32>
      return %y : tensor<?x3xf32>
    }
    ```
    Output: the rows are batch x 4, not the batch:
    ```mlir
    func.func @f(%x: tensor<2x4x3xf32>) -> tensor<8x3xf32> {
      %s = onnx.Initializer "s" dense<[-1, 3]> : tensor<2xi64>
      %y = onnx.Reshape(%x, %s) : (tensor<2x4x3xf32>, tensor<2xi64>) -> tensor<8x3xf32>
      return %y : tensor<8x3xf32>
    }
    ```
  }];
  let options = [
    Option<"batchSize", "batch-size", "int64_t", /*default=*/"0",
           "Size of the batch dimension (required, positive)">,
  ];
  let statistics = [
    Statistic<"numInferred", "inferred",
              "Op results given static types">,
    Statistic<"numBatch", "batch",
              "Arguments whose leading dim took the batch size">,
  ];
}

def CometMemoryReport : Pass<"comet-memory-report", "mlir::ModuleOp"> {
  let summary = "Print the memory timeline and predicted peak of each function";
  let description = [{
    Runs the ActivationLiveness analysis on every function and prints, to
    stderr, a table: the predicted peak (and the activation bytes at that
    step), the top values by bytes x lifetime, and the long-lived candidates.
    The IR is not changed.

    On a graph that `--comet-compress-activations` has rewritten, compressed
    handles count with an estimated size (mask: exactly ceil(n/8) bytes; sz:
    bytes / `sz-ratio`; raw: all bytes), and the report also gives the peak
    with the compress/decompress pairs folded away ("before"), so it states
    the reduction.

    `json=PATH` writes everything: per value its ONNX name, producer node and
    op, consumers (with their kind), type, bytes, live interval and, when
    compressed, codec, bound and slot; the peak before and after; and both
    timelines. `python/comet/plot_timeline.py` draws them.

    Input:
    ```mlir
    func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
      %a = "onnx.Relu"(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32> loc("Relu_0")
      ...
    }
    ```
    Output (stderr, abridged):
    ```
    comet memory report: @f  steps=12  values=14  dynamic-dim=32
      predicted peak: 4096 B at step 5 (onnx.ReluGrad "ReluGrad_0")
    ```
  }];
  let options = [
    Option<"jsonPath", "json", "std::string", /*default=*/"\"\"",
           "Write the full report as JSON to this file">,
    Option<"batchSize", "batch-size", "int64_t", /*default=*/"32",
           "Size taken by every dynamic dimension">,
    Option<"szRatio", "sz-ratio", "double", /*default=*/"8.0",
           "Assumed compression ratio of the sz codec">,
    Option<"top", "top", "int64_t", /*default=*/"10",
           "How many values the table lists">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"16384",
           "Smallest value (bytes) listed as a candidate">,
    Option<"minDistance", "min-distance", "int64_t", /*default=*/"4",
           "Steps after its definition from which a use is far">,
  ];
  let statistics = [
    Statistic<"numFunctions", "functions", "Functions reported">,
    Statistic<"numCandidates", "candidates", "Candidates listed">,
  ];
}

def CometAccumulateEarly : Pass<"comet-accumulate-early", "mlir::ModuleOp"> {
  let summary = "Accumulate each gradient into its buffer as soon as it exists";
  let description = [{
    ONNX Runtime's training graph runs every `InPlaceAccumulatorV2` (the
    gradient, added to or written over its `<param>_grad.accumulation.buffer`)
    after the whole backward. Each weight gradient then lives from the op
    that forms it to the end of the step, and near the end of the backward
    nearly all of them are live at once, beside the buffers they go into:
    a second copy of the parameters at the peak. This pass moves each
    accumulator to just after the last definition among its operands, so
    the gradient dies where it is formed. Only an accumulator whose buffer
    is a function argument that nothing else reads moves, so the buffers'
    contents at the end of the step are unchanged; the flags it returns are
    read after it, as before.

    Input:
    ```mlir
    %dX, %dW, %dB = onnx.ConvGrad(%dY, %x, %w) : ...
    ...                                     // the rest of the backward
    %f, %none = onnx.InPlaceAccumulatorV2(%w_grad_buf, %dW, %reset) : ...
    ```
    Output:
    ```mlir
    %dX, %dW, %dB = onnx.ConvGrad(%dY, %x, %w) : ...
    %f, %none = onnx.InPlaceAccumulatorV2(%w_grad_buf, %dW, %reset) : ...
    ...
    ```
  }];
  let statistics = [
    Statistic<"numMoved", "moved", "Accumulators moved up">,
  ];
}

def CometFuseOptimizer : Pass<"comet-fuse-optimizer", "mlir::ModuleOp"> {
  let summary = "Apply each parameter's optimizer update inside the step";
  let description = [{
    When a step overwrites its gradient buffers (ONNX Runtime's
    `lazy_reset_grad`, set on every step of comet-train) and the optimizer
    runs right after it, a `<param>_grad.accumulation.buffer` only copies
    the gradient for the optimizer: it need not exist before the gradient
    is formed, nor after the optimizer has read it. This pass writes, in
    place of each `InPlaceAccumulatorV2`, a `comet.optimizer_update` of the
    parameter with the gradient itself, placed after the later of the op
    that forms the gradient and the parameter's last reader in the step
    (ActivationLiveness's uses), so no op reads an updated weight. The
    gradient then dies at the update, and no gradient buffer is left.

    The function changes signature: the gradient buffers and the
    accumulators' flags (results) go; each parameter's optimizer states
    (`<param>.momentum1`, `<param>.momentum2`), the learning rate
    (`comet.learning_rate`, f32[1]) and the step count
    (`comet.optimizer_step`, i64[1]) are appended as arguments, marked by
    `comet.optimizer` (and `comet.optimizer_param` on the states); the
    parameters get `comet.optimizer = "weight"` and the function
    `comet.fused_optimizer = kind`. The driver binds them to the
    optimizer's buffers (docs/execution.md).

    All or nothing: a function fuses only when every accumulator can (its
    buffer an argument that nothing else reads, its overwrite flag the
    `lazy_reset_grad` argument, its flag only returned, a parameter
    argument of the buffer's name and type that the function does not
    return); otherwise a remark names the first that cannot, and the
    function is left as it was.
  }];
  let options = [
    Option<"kind", "kind", "std::string", "\"adamw\"",
           "The optimizer kernel: adamw, sgd_v2 or sgd_momentum">,
    Option<"alpha", "alpha", "float", "0.9f", "AdamW's beta1">,
    Option<"beta", "beta", "float", "0.999f", "AdamW's beta2">,
    Option<"epsilon", "epsilon", "float", "1e-8f", "AdamW's epsilon">,
    Option<"weightDecay", "weight-decay", "float", "0.0f",
           "AdamW's or the momentum SGD's weight decay">,
    Option<"momentum", "momentum", "float", "0.9f", "The momentum SGD's">,
    Option<"adamMode", "adam-mode", "int64_t", "0",
           "0: PyTorch AdamW, 1: Hugging Face">,
    Option<"correctBias", "correct-bias", "int64_t", "1",
           "AdamW's bias correction (0 or 1)">,
  ];
  let statistics = [
    Statistic<"numFused", "fused", "Parameter updates fused into the step">,
    Statistic<"numDelayed", "delayed",
              "Updates placed after a later reader of the parameter">,
  ];
  let dependentDialects = ["::comet::CometDialect"];
}

def CometHoistMasks : Pass<"comet-hoist-masks", "mlir::ModuleOp"> {
  let summary = "Keep a 1-bit mask instead of a value the backward only compares";
  let description = [{
    ONNX Runtime's gradient of Clip (ReLU6), and of other piecewise ops,
    recomputes in the backward which elements were in range:
    `LessOrEqual(x, max)`, `GreaterOrEqual(x, min)`, `And`, then
    `Mul(dY, Cast(mask))`. These comparisons read only forward values, so
    x, a float, is kept alive from the forward to the backward just to be
    compared there. This pass moves the comparisons into the forward, next
    to the values they read, so that x dies at its last forward use and a
    bool mask lives instead: a byte per element uncompressed, and one bit
    once `--comet-compress-activations` stores it as a mask stream. It is
    exact: the same comparisons run on the same values.

    What it moves is decided by the ActivationLiveness analysis: for each
    long-lived activation (`min-bytes`, `min-distance`, as in
    compress-activations) whose far uses are all pure ops that give a bool
    tensor and read nothing from the gradient flow, those ops move to just
    after the last definition among their operands (an operand that is a
    constant moves with them), when their results are smaller than the
    value they free. A pure bool op whose operands were all moved follows
    them (the `And` of two masks). Then `Mul(g, Cast(m))`, with `m` a bool,
    `g` in the gradient flow and no broadcast, becomes
    `DropoutGrad(g, m, ratio = 0, training_mode = true)`, which gives
    `m ? g : 0` without the cast's float tensor and reads the mask as a
    mask (SavedActivationKind::ReluMask), so compress-activations keeps it
    as bits that DropoutGrad reads directly.

    Run it after `--comet-specialize-shapes` and before
    `--comet-compress-activations`.

    Input (`min-bytes=0 min-distance=2`):
    ```mlir
    %y = onnx.Clip(%x, %lo, %hi) : ...
    ...                                       // the rest of the forward
    %le = onnx.LessOrEqual(%x, %hi) : ... -> tensor<64x32xi1>
    %ge = onnx.GreaterOrEqual(%x, %lo) : ... -> tensor<64x32xi1>
    %m = onnx.And(%ge, %le) : ...
    %c = onnx.Cast(%m) {to = 1 : i64} : ... -> tensor<64x32xf32>
    %dx = onnx.Mul(%dy, %c) : ...
    ```
    Output:
    ```mlir
    %le = onnx.LessOrEqual(%x, %hi) : ... -> tensor<64x32xi1>
    %ge = onnx.GreaterOrEqual(%x, %lo) : ... -> tensor<64x32xi1>
    %m = onnx.And(%ge, %le) : ...
    %y = onnx.Clip(%x, %lo, %hi) : ...          // %x's last use
    ...
    %dx = onnx.DropoutGrad(%dy, %m, %zero, %true) : ...
    ```
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"16384",
           "Smallest value (bytes) whose comparisons are moved">,
    Option<"minDistance", "min-distance", "int64_t", /*default=*/"4",
           "Steps after its definition from which a use is far">,
  ];
  let statistics = [
    Statistic<"numFreed", "freed",
              "Values now dead at their last forward use">,
    Statistic<"numMoved", "moved", "Bool ops moved into the forward">,
    Statistic<"numMaskGrads", "mask-grads",
              "Mul(g, Cast(mask)) made DropoutGrad">,
  ];
}

def CometCompactPoolIndices
    : Pass<"comet-compact-pool-indices", "mlir::ModuleOp"> {
  let summary = "Keep MaxPool's argmax as its position in the window (a byte)";
  let description = [{
    MaxPool's Indices are flat int64 indices into its input, and ONNX
    Runtime's MaxPoolGrad reads them in the backward, so they are live
    across the step at 8 bytes per output element, raw (no codec applies to
    them). When the window has at most 256 elements and only MaxPoolGrads
    with the same window read the Indices (no graph output, no other
    reader), this pass retypes them from i64 to ui8: each argmax is then
    kept as its position in the window, `a * kW + b`, a byte. The window
    turns a position back into the flat index the forward would have given,
    so MaxPoolGrad's dX is the same, bit for bit. The ActivationLiveness
    analysis sizes the Indices from their type, so the memory report, the
    predicted peak and the frees follow; the lowering picks the runtime
    entries from it (`maxpool2d_window`, `maxpool_grad_window`).

    Run it after `--comet-specialize-shapes`.

    Input:
    ```mlir
    %y, %i = onnx.MaxPool(%x) {kernel_shape = array<i64: 3, 3>, ...}
        : (tensor<64x64x112x112xf32>) -> (tensor<64x64x56x56xf32>,
                                          tensor<64x64x56x56xi64>)
    ...
    %dx = onnx.MaxPoolGrad(%dy, %i) {kernel_shape = array<i64: 3, 3>, ...}
    ```
    Output:
    ```mlir
    %y, %i = onnx.MaxPool(%x) {kernel_shape = array<i64: 3, 3>, ...}
        : (tensor<64x64x112x112xf32>) -> (tensor<64x64x56x56xf32>,
                                          tensor<64x64x56x56xui8>)
    ...
    %dx = onnx.MaxPoolGrad(%dy, %i) {kernel_shape = array<i64: 3, 3>, ...}
    ```
  }];
  let statistics = [
    Statistic<"numCompacted", "compacted",
              "MaxPool Indices kept as window positions">,
  ];
}

def CometRecomputeActivations
    : Pass<"comet-recompute-activations", "mlir::ModuleOp"> {
  let summary = "Recompute BatchNorm (+ ReLU or Clip), Dropout, GELU and "
                "cheap Conv outputs in the backward";
  let description = [{
    In a conv -> BatchNorm -> ReLU chain, two tensors of one size live from
    the forward to the backward: the BatchNorm's input X, which
    BatchNormalizationGrad reads, and the ReLU's output R, which the next
    layer's weight gradient reads. R is a per-channel affine map of X and
    the statistics the forward saved, so this pass keeps only X: just before
    R's first far reader it inserts `comet.batch_norm_apply`, which computes
    R again from X, the scale, the bias, the saved mean and the saved
    1/std, bit for bit the forward's values, and moves R's far weight-
    gradient (and shape) readers onto it. R then dies in the forward.

    A candidate is an ActivationLiveness candidate (`min-bytes`,
    `min-distance`, as in compress-activations) defined as a training-mode
    `onnx.BatchNormInternal`'s output, or `onnx.Relu` of it, or `onnx.Clip`
    of it with constant bounds, whose BatchNorm input is read by its
    gradient after R's first far reader (so X is alive there anyway).

    ReluGrad's reads of R (its mask) move too unless `exact-masks` (the
    default): when compress-activations then stores X lossily, a recomputed
    value within the bound of 0 could change sign, so ReluGrad keeps
    reading R, which becomes a 1-bit mask, 1/32 of its size. With
    `exact-masks=false` (X stored raw, `--compress none`) they move, and R
    is gone entirely.

    A Conv output is recomputed too, by a clone of the Conv just before
    its first far reader, when the Conv costs at most `max-conv-macs`
    multiply-adds per output element (input channels / groups x kernel
    area: a stem on one to three channels, not the layers after it), its
    input lives past that point anyway (its weight gradient reads it) and
    its weights are parameters. The clone gives the same bits, so every far
    reader moves, and nothing of the output is kept.

    A Dropout's output P' (result 0, with a mask) is recomputed the same
    way where its input P and its mask are read after the output's first
    far reader anyway (attention: SoftmaxGrad reads the softmax P,
    DropoutGrad the mask), by an `onnx.DropoutGrad` with P in dY's place: mask ? P /
    (1 - ratio) : 0 is the forward's expression, so the bits are the
    forward's. A GELU's output (`onnx.BiasGelu`, `onnx.Gelu`) is recomputed
    by a clone where its input is read later anyway (BiasGeluGrad_dX,
    GeluGrad). These recomputes are named `<value>.recompute`, like the
    others; a Dropout whose input is not kept (GELU -> Dropout -> Linear)
    is left alone, since keeping the input would keep as much. A residual
    Add is not recomputed: its operands are not kept for anything else.

    `only=a,b` recomputes only the listed values (a memory budget's choice;
    the Engine passes it); a listed name that is not recomputable is an
    error.

    compress-activations sees a recompute's read of its input as
    ConsumerKind::Recompute and bounds the input's error by what the
    recomputed value's readers tolerate, divided by the gain: |scale| / std
    for a BatchNorm, 1 / (1 - ratio) for a Dropout, 1.1289 (GELU's largest
    slope) for a GELU.

    Run it after `--comet-specialize-shapes`, `--comet-hoist-masks` and
    `--comet-compact-pool-indices`, before `--comet-fuse-optimizer` (the
    recompute reads the scale and bias) and `--comet-compress-activations`.

    Input:
    ```mlir
    %y, %rm, %rv, %mean, %inv = onnx.BatchNormInternal(%x, %s, %b, %m0, %v0)
        {training_mode = 1 : i64} : ...
    %r = onnx.Relu(%y) : ...
    ...                                              // the rest of the forward
    %dr, %dw, %db = onnx.ConvGrad(%g, %r, %w) : ...  // far: R read for dW
    %dy = onnx.ReluGrad(%dr, %r) : ...
    %dx, %ds, %dbb = onnx.BatchNormalizationGrad(%dy, %x, %s, %mean, %inv) : ...
    ```
    Output:
    ```mlir
    ...
    %r2 = comet.batch_norm_apply %x, %s, %b, %mean, %inv {activation = "relu"} : ...
    %dr, %dw, %db = onnx.ConvGrad(%g, %r2, %w) : ...
    %dy = onnx.ReluGrad(%dr, %r) : ...                // with exact-masks
    %dx, %ds, %dbb = onnx.BatchNormalizationGrad(%dy, %x, %s, %mean, %inv) : ...
    ```
  }];
  let dependentDialects = ["::comet::CometDialect"];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"16384",
           "Smallest value (bytes) worth recomputing">,
    Option<"minDistance", "min-distance", "int64_t", /*default=*/"4",
           "Steps after its definition from which a use is far">,
    Option<"exactMasks", "exact-masks", "bool", /*default=*/"true",
           "ReluGrad keeps reading the original (a mask once compressed)">,
    Option<"maxConvMacs", "max-conv-macs", "int64_t", /*default=*/"64",
           "Recompute a Conv output with at most this many multiply-adds "
           "per element (0: none)">,
    ListOption<"onlyNames", "only", "std::string",
               "Recompute only these values (by name; a memory budget's "
               "choice); a listed name that is not recomputable is an "
               "error">,
  ];
  let statistics = [
    Statistic<"numRecomputed", "recomputed",
              "BatchNorm, Dropout and GELU outputs recomputed in the "
              "backward">,
    Statistic<"numConvs", "convs", "Conv outputs recomputed in the backward">,
    Statistic<"numReadersMoved", "readers-moved",
              "Far readers moved onto a recomputed value">,
  ];
}

def CometCompressActivations
    : Pass<"comet-compress-activations", "mlir::ModuleOp"> {
  let summary = "Keep long-lived activations in compressed form";
  let description = [{
    For every candidate of the ActivationLiveness analysis (a value of at
    least `min-bytes` with a use at least `min-distance` steps after its
    definition) that the policy selects, inserts `comet.compress` right after
    its last near use (or after its definition when it has none) and one
    `comet.decompress` right before its first far use. Every far use reads
    the decompressed tensor; near uses keep reading the original, which then
    dies at the compress.

    Codec (`codec=auto`): `mask` when the far consumers only need the ReLU
    mask (ReluGrad); `sz` when a far consumer is a weight gradient (ConvGrad,
    or a Gemm/MatMul in the gradient flow) and the others are mask or shape
    reads; `sz` for inputs of BatchNormalizationGrad, with the bound of the
    tightest channel (`batchnorm=keep` keeps them); otherwise (MaxPoolGrad
    indices, unknown ops) the value is kept. `codec=sz` and `codec=mask`
    restrict to one codec.

    Every lossy compress carries a static bound and a fresh slot,
    `#comet.bound<abs = eb, slot = N>`. `rule=comet` uses
    eb = k * mean|momentum| * sqrt(3) / (Lbar * sqrt(N * R)) with N from the
    consumer's shapes; `rule=acgc` uses AC-GC's energy bound
    (docs/error-bounds.md); `rule=noise` takes COMET's with sigma =
    noise-fraction * sqrt(noise), `noise` the variance of the parameter's
    gradient over batches, which only a profile gives (without it, COMET's
    k * momentum). The statistics come from `profile=PATH` (by slot or value
    name) or from the prior options.

    `only=a,b` compresses only the candidates whose value names are listed,
    `except=a,b` all but those (for attributing an effect to one site); a
    listed name that is no candidate's is an error. Slots are numbered over
    the compressed values only.

    `policy=budget memory-budget=B` picks the fewest candidates that bring
    the predicted peak to at most B bytes (exact search up to 12 candidates,
    greedy on the peak step beyond); an unreachable budget compresses all
    candidates and warns. The choice is recorded on the function as
    `comet.budget = {bytes, compressed, not_selected, predicted_peak,
    sz_ratio}`.

    Before:
    ```mlir
    %r = "onnx.Relu"(%c) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ... (far away)
    %g = "onnx.ReluGrad"(%dy, %r) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    After:
    ```mlir
    %r = "onnx.Relu"(%c) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %h = comet.compress %r : tensor<4x8xf32> -> !comet.compressed<tensor<4x8xf32>, mask>
    ...
    %r2 = comet.decompress %h : !comet.compressed<tensor<4x8xf32>, mask> -> tensor<4x8xf32>
    %g = "onnx.ReluGrad"(%dy, %r2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::comet::CometDialect"];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"16384",
           "Smallest value (bytes) worth compressing">,
    Option<"minDistance", "min-distance", "int64_t", /*default=*/"4",
           "Steps after its definition from which a use is far">,
    Option<"policy", "policy", "::comet::CompressPolicy",
           /*default=*/"::comet::CompressPolicy::All",
           "Which candidates to compress",
           [{::llvm::cl::values(
             clEnumValN(::comet::CompressPolicy::All, "all", "every candidate"),
             clEnumValN(::comet::CompressPolicy::Budget, "budget",
                        "the fewest that reach memory-budget"))}]>,
    Option<"memoryBudget", "memory-budget", "int64_t", /*default=*/"-1",
           "Peak bytes to reach with policy=budget">,
    Option<"codec", "codec", "::comet::CodecChoice",
           /*default=*/"::comet::CodecChoice::Auto",
           "Codecs to use",
           [{::llvm::cl::values(
             clEnumValN(::comet::CodecChoice::Auto, "auto",
                        "mask or sz, from what the far consumers read"),
             clEnumValN(::comet::CodecChoice::Sz, "sz", "sz only"),
             clEnumValN(::comet::CodecChoice::Mask, "mask", "mask only"))}]>,
    Option<"rule", "rule", "::comet::BoundRule",
           /*default=*/"::comet::BoundRule::Comet", "Error-bound rule",
           [{::llvm::cl::values(
             clEnumValN(::comet::BoundRule::Comet, "comet",
                        "COMET's variance bound"),
             clEnumValN(::comet::BoundRule::Acgc, "acgc",
                        "AC-GC's energy bound"),
             clEnumValN(::comet::BoundRule::Noise, "noise",
                        "COMET's model, sigma a fraction of the gradient's "
                        "minibatch noise"))}]>,
    Option<"sigmaFactor", "k", "double", /*default=*/"0.01",
           "COMET: sigma = k * mean|momentum|">,
    Option<"nonZeroPrior", "nonzero-prior", "double", /*default=*/"0.5",
           "Prior of R, the non-zero fraction of an activation">,
    Option<"gradPrior", "grad-prior", "double", /*default=*/"1.0e-3",
           "Prior of Lbar, the mean |dY| of the incoming gradient">,
    Option<"momentumPrior", "momentum-prior", "double", /*default=*/"1.0e-3",
           "Prior of mean |momentum| of the weights">,
    Option<"acgcEnergy", "acgc-e", "double", /*default=*/"0.01",
           "AC-GC: tolerated relative gradient-error energy e">,
    Option<"acgcNormRatio", "acgc-norm-ratio", "double", /*default=*/"1.0",
           "AC-GC prior of ||g_W||^2 / ||g_Y||^2">,
    Option<"noiseFraction", "noise-fraction", "double", /*default=*/"0.1",
           "noise: sigma = F * sqrt(the profile's gradient noise variance)">,
    Option<"batchNorm", "batchnorm", "::comet::BatchNormPolicy",
           /*default=*/"::comet::BatchNormPolicy::Sz",
           "BatchNormalizationGrad inputs",
           [{::llvm::cl::values(
             clEnumValN(::comet::BatchNormPolicy::Sz, "sz",
                        "sz with the bound of the tightest channel"),
             clEnumValN(::comet::BatchNormPolicy::Keep, "keep",
                        "kept uncompressed"))}]>,
    Option<"invStdPrior", "inv-std-prior", "double", /*default=*/"1.0",
           "Prior of the largest per-channel 1/sqrt(var + eps) of a BatchNorm">,
    Option<"scalePrior", "scale-prior", "double", /*default=*/"1.0",
           "Prior of the largest |scale| of a BatchNorm whose output is "
           "recomputed (comet-recompute-activations)">,
    Option<"batchSize", "batch-size", "int64_t", /*default=*/"32",
           "Size taken by every dynamic dimension">,
    Option<"szRatio", "sz-ratio", "double", /*default=*/"8.0",
           "Assumed sz compression ratio (budget estimates)">,
    Option<"profilePath", "profile", "std::string", /*default=*/"\"\"",
           "JSON file of measured statistics per slot or value name">,
    ListOption<"onlyNames", "only", "std::string",
               "Compress only the candidates with these value names "
               "(attribution runs; a name that matches no candidate is an "
               "error)">,
    ListOption<"exceptNames", "except", "std::string",
               "Never compress the candidates with these value names">,
  ];
  let statistics = [
    Statistic<"numCandidates", "candidates",
              "Candidates of the liveness analysis">,
    Statistic<"numKept", "kept",
              "Candidates kept: no codec fits their far consumers">,
    Statistic<"numNotSelected", "not-selected",
              "Candidates that policy=budget left uncompressed">,
    Statistic<"numExcluded", "excluded",
              "Candidates left uncompressed by only= or except=">,
    Statistic<"numNoBound", "no-bound",
              "Lossy candidates left uncompressed: no bound could be derived">,
    Statistic<"numMask", "compressed-mask", "Values compressed with mask">,
    Statistic<"numSz", "compressed-sz", "Values compressed with sz">,
    Statistic<"bytesSaved", "bytes-saved",
              "Estimated bytes saved: tensor minus stored bytes, summed over "
              "the compressed values">,
  ];
}

#endif // COMET_DIALECT_COMET_TRANSFORMS_PASSES_TD
