// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-compress-activations="min-bytes=0 min-distance=3" 2>&1 | FileCheck %s
// RUN: comet-opt %s -split-input-file --comet-compress-activations="min-bytes=0 min-distance=3 codec=mask" 2>&1 | FileCheck %s --check-prefix=MASK
// RUN: comet-opt %s -split-input-file --comet-compress-activations="min-bytes=0 min-distance=3 codec=sz batchnorm=keep" 2>&1 | FileCheck %s --check-prefix=SZ
// RUN: comet-opt %s -split-input-file --comet-compress-activations="min-bytes=600 min-distance=3" 2>&1 | FileCheck %s --check-prefix=BIG
// RUN: comet-opt %s -split-input-file --comet-compress-activations="min-bytes=0 min-distance=3 profile=%S/Inputs/profile.json" 2>&1 | FileCheck %s --check-prefix=PROF
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo -mlir-print-local-scope --comet-compress-activations="min-bytes=0 min-distance=3 policy=budget memory-budget=14500" 2>&1 | FileCheck %s --check-prefix=BUDGET1
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo -mlir-print-local-scope --comet-compress-activations="min-bytes=0 min-distance=3 policy=budget memory-budget=13400" 2>&1 | FileCheck %s --check-prefix=BUDGET2
// RUN: comet-opt %s -split-input-file --comet-compress-activations="min-bytes=0 min-distance=3 policy=budget memory-budget=1000" 2>&1 | FileCheck %s --check-prefix=UNREACH
// RUN: not comet-opt %s --comet-compress-activations="policy=budget" 2>&1 | FileCheck %s --check-prefix=ERR-BUDGET
// RUN: not comet-opt %s --comet-compress-activations="min-bytes=-1" 2>&1 | FileCheck %s --check-prefix=ERR-MINBYTES
// RUN: not comet-opt %s --comet-compress-activations="profile=%S/Inputs/does-not-exist.json" 2>&1 | FileCheck %s --check-prefix=ERR-NOFILE
// RUN: not comet-opt %s --comet-compress-activations="profile=%S/Inputs/bad-profile.json" 2>&1 | FileCheck %s --check-prefix=ERR-BADJSON
// RUN: not comet-opt %s --comet-compress-activations="profile=%S/Inputs/bad-field-profile.json" 2>&1 | FileCheck %s --check-prefix=ERR-FIELD
// RUN: not comet-opt %s --comet-compress-activations="codec=zfp" 2>&1 | FileCheck %s --check-prefix=ERR-CODEC
// RUN: not comet-opt %s --comet-compress-activations="policy=some" 2>&1 | FileCheck %s --check-prefix=ERR-POLICY
// RUN: comet-opt %comet_src/test/fixtures/models/lenet/training_model.onnx --comet-compress-activations | FileCheck %s --check-prefix=LENET
// RUN: comet-opt %comet_src/test/fixtures/models/lenet/training_model.onnx --comet-compress-activations="only=flatten1" | FileCheck %s --check-prefix=ONLY
// RUN: comet-opt %comet_src/test/fixtures/models/lenet/training_model.onnx --comet-compress-activations="except=conv1,flatten1" | FileCheck %s --check-prefix=EXCEPT
// RUN: not comet-opt %comet_src/test/fixtures/models/lenet/training_model.onnx --comet-compress-activations="except=conv1,fc9" 2>&1 | FileCheck %s --check-prefix=ERR-NAME
// RUN: not comet-opt %s --comet-compress-activations="only=a except=b" 2>&1 | FileCheck %s --check-prefix=ERR-ONLYEXCEPT
// RUN: comet-opt %s -split-input-file --comet-compress-activations="min-bytes=0 min-distance=3 rule=noise profile=%S/Inputs/noise-profile.json" 2>&1 | FileCheck %s --check-prefix=NOISE
// RUN: comet-opt %s -split-input-file --comet-compress-activations="min-bytes=0 min-distance=3 rule=noise noise-fraction=0.2 profile=%S/Inputs/noise-profile.json" 2>&1 | FileCheck %s --check-prefix=NOISE2
// RUN: comet-opt %s -split-input-file --comet-compress-activations="min-bytes=0 min-distance=3 profile=%S/Inputs/noise-profile.json" 2>&1 | FileCheck %s --check-prefix=PROF
// RUN: comet-opt %s -split-input-file --comet-compress-activations="min-bytes=0 min-distance=3 rule=noise profile=%S/Inputs/profile.json" 2>&1 | FileCheck %s --check-prefix=PROF
// RUN: not comet-opt %s --comet-compress-activations="rule=noise noise-fraction=0" 2>&1 | FileCheck %s --check-prefix=ERR-NOISE

// The real ORT LeNet training graph (batch 32): ReluGrad reads conv1.out and
// conv2.out (masks); ConvGrad of conv2 reads maxpool1.out, N = 32 * 10 * 10,
// eb = 0.0173205 / sqrt(3200 * 0.5) = 4.33e-4; the fc1 weight gradient reads
// flatten1.out, N = 32, eb = 4.33e-3. The MaxPool indices stay.
// LENET: comet.compress %{{.*}} : tensor<?x4x28x28xf32> -> !comet.compressed<tensor<?x4x28x28xf32>, mask>
// LENET: %[[Y:.*]], %{{.*}} = onnx.MaxPool
// LENET: onnx.Conv(%[[Y]],
// LENET-NEXT: comet.compress %[[Y]] bound <abs = 4.33012701892{{[0-9]*}}E-4, slot = 0> {comet.tune = [#comet.consumer<kind = conv, param = "conv2.weight", {{.*}}>]} : tensor<?x4x14x14xf32> -> !comet.compressed<tensor<?x4x14x14xf32>, sz>
// LENET: comet.compress %{{.*}} : tensor<?x8x10x10xf32> -> !comet.compressed<tensor<?x8x10x10xf32>, mask>
// LENET: comet.compress %{{.*}} bound <abs = 0.00433012701{{[0-9]*}}, slot = 1> {comet.tune = [#comet.consumer<kind = gemm, param = "fc1.weight", {{.*}}>]} : tensor<?x200xf32> -> !comet.compressed<tensor<?x200xf32>, sz>
// LENET-NOT: comet.compress %{{.*}} : tensor<?x{{.*}}xi64>
// LENET-COUNT-4: comet.decompress

// only= and except= restrict compression to named sites (attribution runs):
// only flatten1 is compressed, and takes slot 0 (slots number the
// compressed values only).
// ONLY-NOT: comet.compress
// ONLY: comet.compress %{{.*}} bound <abs = 0.00433012701{{[0-9]*}}, slot = 0> {{.*}} -> !comet.compressed<tensor<?x200xf32>, sz>
// ONLY-NOT: comet.compress
// ONLY-COUNT-1: comet.decompress
// ONLY-NOT: comet.decompress
// All but conv1 and flatten1: maxpool1's sz and conv2's mask remain.
// EXCEPT-NOT: comet.compress %{{.*}} : tensor<?x4x28x28xf32>
// EXCEPT: comet.compress %{{.*}} bound <abs = 4.33012701892{{[0-9]*}}E-4, slot = 0> {{.*}} -> !comet.compressed<tensor<?x4x14x14xf32>, sz>
// EXCEPT: comet.compress %{{.*}} : tensor<?x8x10x10xf32> -> !comet.compressed<tensor<?x8x10x10xf32>, mask>
// EXCEPT-NOT: comet.compress
// EXCEPT-COUNT-2: comet.decompress
// EXCEPT-NOT: comet.decompress
// A name that is no candidate's is an error (a typo would silently change
// what is compressed), and so are both lists at once.
// ERR-NAME: error: comet-compress-activations: 'fc9' names no candidate
// ERR-ONLYEXCEPT: error: comet-compress-activations: only and except exclude each other

// ERR-BUDGET: error: comet-compress-activations: policy=budget needs memory-budget=BYTES
// ERR-MINBYTES: error: comet-compress-activations: min-bytes must be non-negative, got -1
// ERR-NOFILE: error: comet-compress-activations: cannot read profile '{{.*}}does-not-exist.json': No such file or directory
// ERR-BADJSON: error: comet-compress-activations: profile '{{.*}}bad-profile.json' is not valid JSON: {{.+}}
// ERR-FIELD: error: comet-compress-activations: profile '{{.*}}bad-field-profile.json': slots.0.Lbar must be a positive number
// An unknown word for an enum option is a parse error that lists none of
// the pass's own checks.
// ERR-CODEC: for the --codec option: Cannot find option named 'zfp'!
// ERR-POLICY: for the --policy option: Cannot find option named 'some'!

// A LeNet-like training graph: exact placement of compress/decompress; the
// mask codec for a value that only ReluGrad reads far away; sz for the input
// (comet.tune records the consumer for the bound tuner, comet.observe marks it)
// of a backward Gemm (dW = Gemm(dY, X, transA=1)) with N = batch = 2, so
// eb = 0.01 * 1e-3 * sqrt(3) / (1e-3 * sqrt(2 * 0.5)) = 1.7320508e-2.

// CHECK-LABEL: func.func @lenet_like
// The conv output's last near reader is the Relu, which may write over it:
// the compress goes before the Relu, so that the conv output dies there.
// CHECK: %[[C1:.*]] = {{"?}}onnx.Conv{{"?}}(
// CHECK-NEXT: %[[M:.*]] = comet.compress %[[C1]] : tensor<2x2x4x4xf32> -> !comet.compressed<tensor<2x2x4x4xf32>, mask>
// CHECK-NEXT: %[[R1:.*]] = {{"?}}onnx.Relu{{"?}}(%[[C1]])
// CHECK-NEXT: {{"?}}onnx.Constant{{"?}}
// CHECK-NEXT: %[[F:.*]] = {{"?}}onnx.Reshape{{"?}}(%[[R1]],
// CHECK-NEXT: {{"?}}onnx.Gemm{{"?}}(%[[F]],
// CHECK-NEXT: %[[S:.*]] = comet.compress %[[F]] bound <abs = 0.01732050807{{[0-9]*}}, slot = 0> {comet.tune = [#comet.consumer<kind = gemm, param = "fc1.weight", terms = 2.000000e+00, reuse = 1.000000e+00, elements = 64>]} : tensor<2x32xf32> -> !comet.compressed<tensor<2x32xf32>, sz>
// CHECK-NEXT: {{"?}}onnx.SoftmaxCrossEntropyLoss{{"?}}
// CHECK-NEXT: {{"?}}onnx.Constant{{"?}}
// CHECK-NEXT: %[[DL:.*]] = {{"?}}onnx.SoftmaxCrossEntropyLossGrad{{"?}}
// CHECK-NEXT: %[[FD:.*]] = comet.decompress %[[S]] : !comet.compressed<tensor<2x32xf32>, sz> -> tensor<2x32xf32>
// CHECK-NEXT: {{"?}}onnx.Gemm{{"?}}(%[[DL]], %[[FD]],{{.*}}comet.observe = [#comet.observe<slot = 0, consumer = 0, grad = 0>]
// CHECK-NEXT: {{"?}}onnx.Gemm{{"?}}(%[[DL]], %arg2,
// CHECK-NEXT: {{"?}}onnx.Constant{{"?}}
// CHECK-NEXT: %[[DR:.*]] = {{"?}}onnx.Reshape{{"?}}
// CHECK-NEXT: %[[CD:.*]] = comet.decompress %[[M]] : !comet.compressed<tensor<2x2x4x4xf32>, mask> -> tensor<2x2x4x4xf32>
// CHECK-NEXT: {{"?}}onnx.ReluGrad{{"?}}(%[[DR]], %[[CD]])
// CHECK-NEXT: {{"?}}onnx.ConvGrad{{"?}}({{.*}}, %arg0, %arg1)
// CHECK-NOT: = comet.

// MASK-LABEL: func.func @lenet_like
// MASK: comet.compress %{{.*}} : tensor<2x2x4x4xf32> -> !comet.compressed<tensor<2x2x4x4xf32>, mask>
// MASK-NOT: = comet.compress

// SZ-LABEL: func.func @lenet_like
// SZ: comet.compress %{{.*}} bound <abs = {{.*}}, slot = 0> {comet.tune = {{.*}}} : tensor<2x32xf32> -> !comet.compressed<tensor<2x32xf32>, sz>
// SZ-NOT: = comet.compress

// The profile gives slot 0 R = 1 and Lbar = 2e-3, and the value "flatten1"
// mean|momentum| = 4e-3: eb = 0.01 * 4e-3 * sqrt(3) / (2e-3 * sqrt(2)) = 2.4494897e-2.
// PROF-LABEL: func.func @lenet_like
// PROF: comet.compress %{{.*}} bound <abs = 0.02449489742{{[0-9]*}}, slot = 0> {comet.tune = {{.*}}} : tensor<2x32xf32>

// rule=noise: sigma = noise-fraction * sqrt(noise) = 0.1 * 1e-3 with the
// profile's noise = 1e-6, eb = 1e-4 * sqrt(3) / (2e-3 * sqrt(2))
// = 6.1237244e-2; twice that at noise-fraction=0.2. COMET's rule ignores
// the noise, and without a measured noise the noise rule is COMET's (the
// PROF lines above).
// NOISE-LABEL: func.func @lenet_like
// NOISE: comet.compress %{{.*}} bound <abs = 0.06123724356{{[0-9]*}}, slot = 0> {comet.tune = {{.*}}} : tensor<2x32xf32>
// NOISE2-LABEL: func.func @lenet_like
// NOISE2: comet.compress %{{.*}} bound <abs = 0.1224744871{{[0-9]*}}, slot = 0> {comet.tune = {{.*}}} : tensor<2x32xf32>
// ERR-NOISE: error: comet-compress-activations: k, grad-prior, momentum-prior, acgc-e, acgc-norm-ratio and noise-fraction must be positive, and nonzero-prior in (0, 1]

// BIG-LABEL: func.func @lenet_like
// BIG-NOT: = comet.compress
func.func @lenet_like(%x: tensor<2x1x6x6xf32> {onnx.name = "input"},
    %w1: tensor<2x1x3x3xf32> {onnx.name = "conv1.weight"},
    %w2: tensor<3x32xf32> {onnx.name = "fc1.weight"},
    %labels: tensor<2xi64> {onnx.name = "labels"},
    %acc1: tensor<2x1x3x3xf32> {onnx.name = "conv1.weight_grad.accumulation.buffer"},
    %acc2: tensor<3x32xf32> {onnx.name = "fc1.weight_grad.accumulation.buffer"},
    %reset: tensor<1xi1> {onnx.name = "lazy_reset_grad"})
    -> (tensor<f32> {onnx.name = "onnx::loss::2"},
        tensor<1xi1> {onnx.name = "conv1.weight_grad.accumulation.out"},
        tensor<1xi1> {onnx.name = "fc1.weight_grad.accumulation.out"}) {
  %none = "onnx.NoValue"() : () -> none
  %c1 = "onnx.Conv"(%x, %w1, %none) {kernel_shape = array<i64: 3, 3>} : (tensor<2x1x6x6xf32>, tensor<2x1x3x3xf32>, none) -> tensor<2x2x4x4xf32> loc("conv1")
  %r1 = "onnx.Relu"(%c1) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> loc("relu1")
  %fshape = "onnx.Constant"() {value = dense<[2, 32]> : tensor<2xi64>} : () -> tensor<2xi64> loc("fshape")
  %f = "onnx.Reshape"(%r1, %fshape) : (tensor<2x2x4x4xf32>, tensor<2xi64>) -> tensor<2x32xf32> loc("flatten1")
  %l = "onnx.Gemm"(%f, %w2, %none) {transB = 1 : i64} : (tensor<2x32xf32>, tensor<3x32xf32>, none) -> tensor<2x3xf32> loc("fc1")
  %loss, %lp = "onnx.SoftmaxCrossEntropyLoss"(%l, %labels, %none) : (tensor<2x3xf32>, tensor<2xi64>, none) -> (tensor<f32>, tensor<2x3xf32>) loc("loss")
  %seed = "onnx.Constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32> loc("onnx::loss::2_grad")
  %dl = "onnx.SoftmaxCrossEntropyLossGrad"(%seed, %lp, %labels, %none, %none) : (tensor<f32>, tensor<2x3xf32>, tensor<2xi64>, none, none) -> tensor<2x3xf32> loc("loss_Grad")
  %dw2 = "onnx.Gemm"(%dl, %f, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<2x3xf32>, tensor<2x32xf32>, none) -> tensor<3x32xf32> loc("fc1_Grad/Gemm_1")
  %df = "onnx.Gemm"(%dl, %w2, %none) {beta = 0.0 : f32} : (tensor<2x3xf32>, tensor<3x32xf32>, none) -> tensor<2x32xf32> loc("fc1_Grad/Gemm_0")
  %shape = "onnx.Constant"() {value = dense<[2, 2, 4, 4]> : tensor<4xi64>} : () -> tensor<4xi64> loc("shape")
  %dr = "onnx.Reshape"(%df, %shape) : (tensor<2x32xf32>, tensor<4xi64>) -> tensor<2x2x4x4xf32> loc("flatten1_Grad/Reshape_1")
  %dc = "onnx.ReluGrad"(%dr, %c1) : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> loc("relu1_Grad/ReluGrad_0")
  %dx, %dw1, %db1 = "onnx.ConvGrad"(%dc, %x, %w1) {kernel_shape = array<i64: 3, 3>} : (tensor<2x2x4x4xf32>, tensor<2x1x6x6xf32>, tensor<2x1x3x3xf32>) -> (none, tensor<2x1x3x3xf32>, none) loc("conv1_Grad/ConvGrad_0")
  %u1, %o1 = "onnx.InPlaceAccumulatorV2"(%acc1, %dw1, %reset) : (tensor<2x1x3x3xf32>, tensor<2x1x3x3xf32>, tensor<1xi1>) -> (tensor<1xi1>, none) loc("GradientAccumulator1")
  %u2, %o2 = "onnx.InPlaceAccumulatorV2"(%acc2, %dw2, %reset) : (tensor<3x32xf32>, tensor<3x32xf32>, tensor<1xi1>) -> (tensor<1xi1>, none) loc("GradientAccumulator2")
  return %loss, %u1, %u2 : tensor<f32>, tensor<1xi1>, tensor<1xi1>
}

// -----

// A ConvGrad input with several far uses (ReluGrad reads it too): one
// decompress before the first far use feeds both; the near use (the Conv)
// keeps the original. N = batch * H_out * W_out = 2 * 4 * 4 = 32, R = 0.5:
// eb = 1.7320508e-5 / (1e-3 * sqrt(16)) = 4.330127e-3.

// CHECK-LABEL: func.func @several_far_uses
// CHECK: %[[A:.*]] = {{"?}}onnx.Relu{{"?}}(%arg0)
// CHECK-NEXT: {{"?}}onnx.Conv{{"?}}(%[[A]], %arg1,
// CHECK-NEXT: %[[H:.*]] = comet.compress %[[A]] bound <abs = 0.00433012701{{[0-9]*}}, slot = 0> {comet.tune = [#comet.consumer<kind = conv, param = "conv.weight", terms = 3.200000e+01, reuse = 9.000000e+00, elements = 144>]} : tensor<2x2x6x6xf32> -> !comet.compressed<tensor<2x2x6x6xf32>, sz>
// CHECK: %[[D:.*]] = comet.decompress %[[H]]
// CHECK-NEXT: {{"?}}onnx.ConvGrad{{"?}}(%{{.*}}, %[[D]], %arg1) {comet.observe = [#comet.observe<slot = 0, consumer = 0, grad = 0>]
// CHECK-NEXT: {{"?}}onnx.ReluGrad{{"?}}(%{{.*}}, %[[D]])
// CHECK-NOT: comet.decompress

// SZ-LABEL: func.func @several_far_uses
// SZ: = comet.compress %{{.*}} bound <abs = {{.*}}, slot = 0> {comet.tune = {{.*}}} : tensor<2x2x6x6xf32>

// MASK-LABEL: func.func @several_far_uses
// MASK-NOT: = comet.compress
func.func @several_far_uses(%x: tensor<2x2x6x6xf32> {onnx.name = "input"},
    %w: tensor<2x2x3x3xf32> {onnx.name = "conv.weight"},
    %acc: tensor<2x2x3x3xf32> {onnx.name = "conv.weight_grad.accumulation.buffer"},
    %reset: tensor<1xi1> {onnx.name = "lazy_reset_grad"})
    -> (tensor<2x2x6x6xf32> {onnx.name = "input_grad"}, tensor<1xi1> {onnx.name = "conv.weight_grad.accumulation.out"}) {
  %none = "onnx.NoValue"() : () -> none
  %a = "onnx.Relu"(%x) : (tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32> loc("relu0")
  %c = "onnx.Conv"(%a, %w, %none) {kernel_shape = array<i64: 3, 3>} : (tensor<2x2x6x6xf32>, tensor<2x2x3x3xf32>, none) -> tensor<2x2x4x4xf32> loc("conv")
  %s = "onnx.ReduceSum"(%c, %none) {keepdims = 0 : i64} : (tensor<2x2x4x4xf32>, none) -> tensor<f32> loc("sum")
  %shape = "onnx.Constant"() {value = dense<[2, 2, 4, 4]> : tensor<4xi64>} : () -> tensor<4xi64> loc("shape")
  %dy = "onnx.Expand"(%s, %shape) : (tensor<f32>, tensor<4xi64>) -> tensor<2x2x4x4xf32> loc("sum_Grad/Expand")
  %da, %dw, %dbias = "onnx.ConvGrad"(%dy, %a, %w) {kernel_shape = array<i64: 3, 3>} : (tensor<2x2x4x4xf32>, tensor<2x2x6x6xf32>, tensor<2x2x3x3xf32>) -> (tensor<2x2x6x6xf32>, tensor<2x2x3x3xf32>, none) loc("conv_Grad")
  %dx = "onnx.ReluGrad"(%da, %a) : (tensor<2x2x6x6xf32>, tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32> loc("relu0_Grad")
  %u, %o = "onnx.InPlaceAccumulatorV2"(%acc, %dw, %reset) : (tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>, tensor<1xi1>) -> (tensor<1xi1>, none) loc("GradientAccumulator1")
  return %dx, %u : tensor<2x2x6x6xf32>, tensor<1xi1>
}

// -----

// BatchNorm: the conv output that BatchNormalizationGrad reads gets sz with
// N = batch * H * W = 32, R = 1 and the prior inv_std = 1:
// eb = 1.7320508e-5 / (1e-3 * sqrt(32)) = 3.0618622e-3; batchnorm=keep keeps
// it. The Relu output that only ReluGrad reads far away gets the mask codec.

// CHECK-LABEL: func.func @batchnorm
// (Both compresses precede their value's last near reader, which writes
// over it in place.)
// CHECK: %[[C:.*]] = {{"?}}onnx.Conv{{"?}}(
// CHECK-NEXT: comet.compress %[[C]] bound <abs = 0.00306186217{{[0-9]*}}, slot = 0> {comet.tune = [#comet.consumer<kind = batchnorm, param = "bn1.weight", terms = 3.200000e+01, reuse = 1.000000e+00, elements = 64>]} : tensor<2x2x4x4xf32> -> !comet.compressed<tensor<2x2x4x4xf32>, sz>
// CHECK-NEXT: {{"?}}onnx.BatchNormInternal{{"?}}(%[[C]],
// CHECK-NEXT: %[[R:.*]] = {{"?}}onnx.Relu{{"?}}(
// CHECK-NEXT: {{"?}}onnx.ReduceSum{{"?}}(%[[R]],
// CHECK-NEXT: comet.compress %[[R]] : tensor<2x2x4x4xf32> -> !comet.compressed<tensor<2x2x4x4xf32>, mask>
// The BatchNormalizationGrad observes dY (operand 0) and its saved 1/std
// (operand 4) for slot 0.
// CHECK: {{"?}}onnx.BatchNormalizationGrad{{"?}}({{.*}}comet.observe = [#comet.observe<slot = 0, consumer = 0, grad = 0, aux = 4>]

// SZ-LABEL: func.func @batchnorm
// SZ-NOT: = comet.compress

// MASK-LABEL: func.func @batchnorm
// MASK: comet.compress %{{.*}} : tensor<2x2x4x4xf32> -> !comet.compressed<tensor<2x2x4x4xf32>, mask>
// MASK-NOT: = comet.compress
func.func @batchnorm(%x: tensor<2x1x6x6xf32> {onnx.name = "input"},
    %w: tensor<2x1x3x3xf32> {onnx.name = "conv1.weight"},
    %scale: tensor<2xf32> {onnx.name = "bn1.weight"},
    %bias: tensor<2xf32> {onnx.name = "bn1.bias"},
    %mean: tensor<2xf32> {onnx.name = "bn1.running_mean"},
    %var: tensor<2xf32> {onnx.name = "bn1.running_var"},
    %acc: tensor<2xf32> {onnx.name = "bn1.weight_grad.accumulation.buffer"},
    %reset: tensor<1xi1> {onnx.name = "lazy_reset_grad"})
    -> (tensor<1xi1> {onnx.name = "bn1.weight_grad.accumulation.out"}) {
  %none = "onnx.NoValue"() : () -> none
  %c = "onnx.Conv"(%x, %w, %none) {kernel_shape = array<i64: 3, 3>} : (tensor<2x1x6x6xf32>, tensor<2x1x3x3xf32>, none) -> tensor<2x2x4x4xf32> loc("conv1")
  %y, %rm, %rv, %sm, %sis = "onnx.BatchNormInternal"(%c, %scale, %bias, %mean, %var) {training_mode = 1 : i64} : (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) loc("bn1")
  %r = "onnx.Relu"(%y) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> loc("relu1")
  %s = "onnx.ReduceSum"(%r, %none) {keepdims = 0 : i64} : (tensor<2x2x4x4xf32>, none) -> tensor<f32> loc("sum")
  %shape = "onnx.Constant"() {value = dense<[2, 2, 4, 4]> : tensor<4xi64>} : () -> tensor<4xi64> loc("shape")
  %dy = "onnx.Expand"(%s, %shape) : (tensor<f32>, tensor<4xi64>) -> tensor<2x2x4x4xf32> loc("sum_Grad/Expand")
  %dr = "onnx.ReluGrad"(%dy, %r) : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> loc("relu1_Grad")
  %dc, %dscale, %dbias = "onnx.BatchNormalizationGrad"(%dr, %c, %scale, %sm, %sis) : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>) loc("bn1_Grad")
  %u, %o = "onnx.InPlaceAccumulatorV2"(%acc, %dscale, %reset) : (tensor<2xf32>, tensor<2xf32>, tensor<1xi1>) -> (tensor<1xi1>, none) loc("GradientAccumulator1")
  return %u : tensor<1xi1>
}

// -----

// MaxPool indices (int64, read by MaxPoolGrad) are kept: no codec bounds
// an index. The pooled output, read far away by ReluGrad only, gets a mask.

// CHECK-LABEL: func.func @maxpool_indices
// CHECK: %[[Y:.*]], %[[I:.*]] = {{"?}}onnx.MaxPool{{"?}}
// CHECK-NOT: = comet.compress %[[I]]
// CHECK: comet.compress %[[Y]] : tensor<2x2x2x2xf32> -> !comet.compressed<tensor<2x2x2x2xf32>, mask>
// CHECK-NOT: = comet.compress

// SZ-LABEL: func.func @maxpool_indices
// SZ-NOT: = comet.compress

// MASK-LABEL: func.func @maxpool_indices
// MASK: = comet.compress %{{.*}} : tensor<2x2x2x2xf32> -> !comet.compressed<tensor<2x2x2x2xf32>, mask>
func.func @maxpool_indices(%x: tensor<2x2x4x4xf32> {onnx.name = "input"}) -> (tensor<2x2x4x4xf32> {onnx.name = "input_grad"}) {
  %y, %i = "onnx.MaxPool"(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x2x4x4xf32>) -> (tensor<2x2x2x2xf32>, tensor<2x2x2x2xi64>) loc("maxpool1")
  %a = "onnx.Relu"(%y) : (tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32> loc("relu1")
  %b = "onnx.Relu"(%a) : (tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32> loc("relu2")
  %c = "onnx.Relu"(%b) : (tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32> loc("relu3")
  %d = "onnx.ReluGrad"(%c, %y) : (tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32> loc("relu_Grad")
  %dx = "onnx.MaxPoolGrad"(%d, %i) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x2x2x2xf32>, tensor<2x2x2x2xi64>) -> tensor<2x2x4x4xf32> loc("maxpool1_Grad")
  return %dx : tensor<2x2x4x4xf32>
}

// -----

// The budget policy picks the fewest candidates. The peak (15360 B, steps
// 4-7) is spanned by the saving windows of %b and %c (1024 B each, 992 B
// saved as masks) but not by that of %a, the largest (4096 B), whose
// decompressed copy is live over the peak (a Shape reads it, so the mask
// decompress is not fused into the ReluGrads and materialises the tensor;
// fused, %a's handle would replace it up to a_Grad2). memory-budget=14500 needs one
// (%b), 13400 needs %b and %c; greedy by size would have taken %a first.
// 1000 B is unreachable: everything is compressed and a warning says so.

// CHECK-LABEL: func.func @budget
// CHECK-COUNT-3: = comet.compress

// The record of the choice: the budget, the predicted peak after the
// rewrite, the assumed sz ratio, the count compressed, the candidates left.
// BUDGET1-LABEL: func.func @budget
// BUDGET1-SAME: comet.budget = {bytes = 14500 : i64, compressed = 1 : i64, not_selected = ["a", "c"], predicted_peak = {{[0-9]+}} : i64, sz_ratio = 8.0{{.*}} : f64}
// BUDGET1-NOT: = comet.compress
// BUDGET1: %[[B:.*]] = {{"?}}onnx.Relu{{"?}}(%arg1) {{.*}}loc("b")
// BUDGET1-NEXT: comet.compress %[[B]]
// BUDGET1-NOT: = comet.compress

// BUDGET2-LABEL: func.func @budget
// BUDGET2-SAME: compressed = 2 : i64, not_selected = ["a"]
// BUDGET2-NOT: = comet.compress
// BUDGET2: %[[B:.*]] = {{"?}}onnx.Relu{{"?}}(%arg1) {{.*}}loc("b")
// BUDGET2-NEXT: comet.compress %[[B]]
// BUDGET2-NEXT: %[[C:.*]] = {{"?}}onnx.Relu{{"?}}(%arg1) {{.*}}loc("c")
// BUDGET2-NEXT: comet.compress %[[C]]
// BUDGET2-NOT: = comet.compress

// min-bytes=600 leaves only the three values of at least 1024 B here.
// codec=sz leaves mask-only values alone.
// SZ-LABEL: func.func @budget
// SZ-NOT: = comet.compress

// BIG-LABEL: func.func @budget
// BIG-COUNT-3: = comet.compress
// BIG-NOT: = comet.compress

// UNREACH: warning: memory-budget of 1000 bytes is not reachable: compressing 3 of 3 candidates gives a predicted peak of {{[0-9]+}} bytes
func.func @budget(%x: tensor<1024xf32> {onnx.name = "x"}, %y: tensor<256xf32> {onnx.name = "y"})
    -> (tensor<1024xf32> {onnx.name = "gx"}, tensor<256xf32> {onnx.name = "gb"}, tensor<256xf32> {onnx.name = "gc"}) {
  %a = "onnx.Relu"(%x) : (tensor<1024xf32>) -> tensor<1024xf32> loc("a")
  %b = "onnx.Relu"(%y) : (tensor<256xf32>) -> tensor<256xf32> loc("b")
  %c = "onnx.Relu"(%y) : (tensor<256xf32>) -> tensor<256xf32> loc("c")
  %p = "onnx.Relu"(%y) : (tensor<256xf32>) -> tensor<256xf32> loc("p")
  %ga = "onnx.ReluGrad"(%x, %a) : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32> loc("a_Grad")
  %t = "onnx.Relu"(%ga) : (tensor<1024xf32>) -> tensor<1024xf32> loc("t")
  %t2 = "onnx.Relu"(%t) : (tensor<1024xf32>) -> tensor<1024xf32> loc("t2")
  %sa = "onnx.Shape"(%a) : (tensor<1024xf32>) -> tensor<1xi64> loc("a_shape")
  %ga2 = "onnx.ReluGrad"(%t2, %a) : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32> loc("a_Grad2")
  %gb = "onnx.ReluGrad"(%p, %b) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32> loc("b_Grad")
  %gc = "onnx.ReluGrad"(%p, %c) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32> loc("c_Grad")
  return %ga2, %gb, %gc : tensor<1024xf32>, tensor<256xf32>, tensor<256xf32>
}

// -----

// An activation gradient forms no weight gradient; the tuner's parameter
// for its saved activation is the weight gradient its dX reaches through
// layout ops: linear1's Gemm (through a Reshape), not the input gradient's
// FusedMatMul with the transposed weight, whose result would lead on to
// linear0.weight.
// CHECK-LABEL: func.func @gelu_next_weight
// SZ-LABEL: func.func @gelu_next_weight
// BIG-LABEL: func.func @gelu_next_weight
// BUDGET1-LABEL: func.func @gelu_next_weight
// BUDGET2-LABEL: func.func @gelu_next_weight
// CHECK: %[[H:.*]] = onnx.Gemm(%{{.*}}, %arg2,
// CHECK: comet.compress %[[H]] bound <{{.*}}> {comet.tune = [#comet.consumer<kind = gemm, param = "linear1.weight",
// CHECK: onnx.BiasGeluGrad_dX
func.func @gelu_next_weight(%x0: tensor<4x8xf32> {onnx.name = "input"},
    %w0: tensor<8x8xf32> {onnx.name = "linear0.weight"},
    %w1: tensor<16x8xf32> {onnx.name = "linear1.weight"},
    %b1: tensor<16xf32> {onnx.name = "linear1.bias"},
    %w2: tensor<3x16xf32> {onnx.name = "linear2.weight"},
    %dl: tensor<4x3xf32> {onnx.name = "dl"},
    %acc0: tensor<8x8xf32> {onnx.name = "linear0.weight_grad.accumulation.buffer"},
    %acc1: tensor<16x8xf32> {onnx.name = "linear1.weight_grad.accumulation.buffer"},
    %reset: tensor<1xi1> {onnx.name = "lazy_reset_grad"})
    -> (tensor<4x3xf32>, tensor<1xi1>, tensor<1xi1>) {
  %none = onnx.NoValue
  %x = onnx.Gemm(%x0, %w0, %none) {transB = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>, none) -> tensor<4x8xf32>
  %h = onnx.Gemm(%x, %w1, %none) {transB = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>, none) -> tensor<4x16xf32>
  %g = onnx.BiasGelu(%h, %b1) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %z = onnx.Gemm(%g, %w2, %none) {transB = 1 : i64} : (tensor<4x16xf32>, tensor<3x16xf32>, none) -> tensor<4x3xf32>
  %r = onnx.Relu(%z) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %a = onnx.Add(%r, %z) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %dg = onnx.Gemm(%dl, %w2, %none) {beta = 0.0 : f32} : (tensor<4x3xf32>, tensor<3x16xf32>, none) -> tensor<4x16xf32>
  %dh = onnx.BiasGeluGrad_dX(%dg, %h, %b1) : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %s = onnx.Constant {value = dense<[4, 16]> : tensor<2xi64>} : tensor<2xi64>
  %dhr = onnx.Reshape(%dh, %s) : (tensor<4x16xf32>, tensor<2xi64>) -> tensor<4x16xf32>
  %dw1 = onnx.Gemm(%dhr, %x, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<4x16xf32>, tensor<4x8xf32>, none) -> tensor<16x8xf32>
  %wt = onnx.Transpose(%w1) {perm = array<i64: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %dx = onnx.FusedMatMul(%dh, %wt) {transB = 1 : i64} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %dw0 = onnx.Gemm(%dx, %x0, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>, none) -> tensor<8x8xf32>
  %u0, %o0 = onnx.InPlaceAccumulatorV2(%acc0, %dw0, %reset) : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  %u1, %o1 = onnx.InPlaceAccumulatorV2(%acc1, %dw1, %reset) : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  return %a, %u0, %u1 : tensor<4x3xf32>, tensor<1xi1>, tensor<1xi1>
}
