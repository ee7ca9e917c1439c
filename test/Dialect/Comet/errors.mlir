// RUN: comet-opt %s -split-input-file -verify-diagnostics

// The compressed type must store the input's shape.
func.func @compress_shape_mismatch(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{shape mismatch: tensor is 'tensor<8x16xf32>' but the compressed type stores 'tensor<8x15xf32>'}}
  %c = comet.compress %x bound <abs = 1.0e-3, slot = 0> : tensor<8x16xf32> -> !comet.compressed<tensor<8x15xf32>, sz>
  return
}

// -----

// The compressed type must store the input's element type.
func.func @compress_element_type_mismatch(%x: tensor<8xf32>) {
  // expected-error @+1 {{element type mismatch: tensor has 'f32' but the compressed type stores 'f16'}}
  %c = comet.compress %x bound <abs = 1.0e-3> : tensor<8xf32> -> !comet.compressed<tensor<8xf16>, sz>
  return
}

// -----

// Decompression gives back exactly the stored tensor type.
func.func @decompress_shape_mismatch(%c: !comet.compressed<tensor<4x4xf32>, sz>) {
  // expected-error @+1 {{shape mismatch: tensor is 'tensor<4x5xf32>' but the compressed type stores 'tensor<4x4xf32>'}}
  %y = comet.decompress %c : !comet.compressed<tensor<4x4xf32>, sz> -> tensor<4x5xf32>
  return
}

// -----

// Decompression checks the element type too.
func.func @decompress_element_type_mismatch(%c: !comet.compressed<tensor<4xf32>, sz>) {
  // expected-error @+1 {{element type mismatch: tensor has 'bf16' but the compressed type stores 'f32'}}
  %y = comet.decompress %c : !comet.compressed<tensor<4xf32>, sz> -> tensor<4xbf16>
  return
}

// -----

// A zero bound is not an error bound.
func.func @bound_zero(%x: tensor<4xf32>) {
  // expected-error @+1 {{error bound must be positive and finite, got 0}}
  %c = comet.compress %x bound <abs = 0.0, slot = 0> : tensor<4xf32> -> !comet.compressed<tensor<4xf32>, sz>
  return
}

// -----

// A negative bound is rejected.
func.func @bound_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{error bound must be positive and finite, got -1}}
  %c = comet.compress %x bound <abs = -1.0> : tensor<4xf32> -> !comet.compressed<tensor<4xf32>, sz>
  return
}

// -----

// An infinite bound is rejected (0x7FF0000000000000 is +inf).
func.func @bound_infinite(%x: tensor<4xf32>) {
  // expected-error @+1 {{error bound must be positive and finite, got INF}}
  %c = comet.compress %x bound <abs = 0x7FF0000000000000> : tensor<4xf32> -> !comet.compressed<tensor<4xf32>, sz>
  return
}

// -----

// A NaN bound is rejected.
func.func @bound_nan(%x: tensor<4xf32>) {
  // expected-error @+1 {{error bound must be positive and finite, got nan}}
  %c = comet.compress %x bound <abs = 0x7FF8000000000000> : tensor<4xf32> -> !comet.compressed<tensor<4xf32>, sz>
  return
}

// -----

// Slots are non-negative ids.
func.func @slot_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{slot must be non-negative, got -2}}
  %c = comet.compress %x bound <abs = 1.0, slot = -2> : tensor<4xf32> -> !comet.compressed<tensor<4xf32>, sz>
  return
}

// -----

// The lossy codec needs elements it can quantize.
// expected-error @+1 {{codec 'sz' cannot store elements of type 'i32'}}
func.func @sz_on_integers(%c: !comet.compressed<tensor<4xi32>, sz>) {
  return
}

// -----

// The mask codec reads x > 0, which has no meaning for index values.
// expected-error @+1 {{codec 'mask' cannot store elements of type 'index'}}
func.func @mask_on_index(%c: !comet.compressed<tensor<4xindex>, mask>) {
  return
}

// -----

// A lossy codec without a bound has nothing to hold the error to.
func.func @sz_without_bound(%x: tensor<4xf32>) {
  // expected-error @+1 {{lossy codec 'sz' needs an error bound}}
  %c = comet.compress %x : tensor<4xf32> -> !comet.compressed<tensor<4xf32>, sz>
  return
}

// -----

// A lossless codec takes no bound.
func.func @mask_with_bound(%x: tensor<4xf32>) {
  // expected-error @+1 {{lossless codec 'mask' takes no error bound}}
  %c = comet.compress %x bound <abs = 1.0> : tensor<4xf32> -> !comet.compressed<tensor<4xf32>, mask>
  return
}

// -----

// Two compressions in one function cannot share a tuning slot.
func.func @duplicate_slot(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-note @+1 {{first used here}}
  %a = comet.compress %x bound <abs = 1.0, slot = 5> : tensor<4xf32> -> !comet.compressed<tensor<4xf32>, sz>
  // expected-error @+1 {{slot 5 is already used in this function}}
  %b = comet.compress %y bound <abs = 2.0, slot = 5> : tensor<4xf32> -> !comet.compressed<tensor<4xf32>, sz>
  return
}

// -----

// The compressed type needs a ranked tensor.
// expected-error @+2 {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
// expected-error @+1 {{failed to parse Comet_CompressedType parameter 'tensorType' which is to be a `::mlir::RankedTensorType`}}
func.func @unranked(%c: !comet.compressed<tensor<*xf32>, sz>) {
  return
}

// -----

// A consumer sums at least one term.
// expected-error @+1 {{terms must be positive and finite}}
func.func @consumer_zero_terms() attributes {test.c = #comet.consumer<kind = conv, param = "w", terms = 0.0, reuse = 1.0, elements = 4>} {
  return
}

// -----

// A consumer reads a non-empty activation.
// expected-error @+1 {{elements must be positive, got 0}}
func.func @consumer_no_elements() attributes {test.c = #comet.consumer<kind = gemm, param = "w", terms = 2.0, reuse = 1.0, elements = 0>} {
  return
}

// -----

// The consumer kind is one of the bound rule's forms.
// expected-error @+2 {{expected ::comet::WeightGradKind to be one of: conv, gemm, batchnorm}}
// expected-error @+1 {{failed to parse Comet_ConsumerAttr parameter 'kind'}}
func.func @consumer_bad_kind() attributes {test.c = #comet.consumer<kind = fc, param = "w", terms = 2.0, reuse = 1.0, elements = 4>} {
  return
}

// -----

// Observations name a slot.
// expected-error @+1 {{slot must be non-negative, got -1}}
func.func @observe_negative_slot() attributes {test.o = #comet.observe<slot = -1, consumer = 0, grad = 0>} {
  return
}

// -----

// The observed operands must exist on the op.
func.func @observe_missing_operand(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'onnx.Relu' op 'comet.observe' names operand 3 but the op has 1 operands}}
  %y = "onnx.Relu"(%x) {comet.observe = [#comet.observe<slot = 0, consumer = 0, grad = 3>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// comet.observe holds #comet.observe entries, not raw integers.
func.func @observe_untyped(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'comet.observe' must be a non-empty array of #comet.observe}}
  %y = "onnx.Relu"(%x) {comet.observe = [array<i64: 0, 0, 0, -1>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tuner consumers belong to a slot, so to a compress with a slotted bound.
func.func @tune_without_slot(%x: tensor<4xf32>) {
  // expected-error @+1 {{'comet.tune' belongs on a comet.compress with a slotted bound}}
  %c = comet.compress %x bound <abs = 1.0e-3> {comet.tune = [#comet.consumer<kind = gemm, param = "w", terms = 2.0, reuse = 1.0, elements = 4>]} : tensor<4xf32> -> !comet.compressed<tensor<4xf32>, sz>
  return
}

// -----

// A lossy site records its bound.
// expected-error @+1 {{codec 'sz' needs a bound}}
func.func @site_lossy_without_bound() attributes {comet.sites = [#comet.site<value = "x", codec = sz, bytes = 16>]} {
  return
}

// -----

// A lossless site has no bound.
// expected-error @+1 {{codec 'mask' takes no bound}}
func.func @site_lossless_with_bound() attributes {comet.sites = [#comet.site<value = "x", codec = mask, bytes = 16, bound = #comet.bound<abs = 1.0e-3>>]} {
  return
}

// -----

// Tuner consumers need the slot they tune.
// expected-error @+1 {{consumers need a slot in the bound}}
func.func @site_consumers_without_slot() attributes {comet.sites = [#comet.site<value = "x", codec = sz, bytes = 16, bound = #comet.bound<abs = 1.0e-3>, consumers = [#comet.consumer<kind = gemm, param = "w", terms = 2.0, reuse = 1.0, elements = 4>]>]} {
  return
}

// -----

// Two sites of one function cannot share a slot.
// expected-error @+1 {{'comet.sites' uses slot 1 twice}}
func.func @sites_duplicate_slot() attributes {comet.sites = [#comet.site<value = "x", codec = sz, bytes = 16, bound = #comet.bound<abs = 1.0e-3, slot = 1>>, #comet.site<value = "y", codec = sz, bytes = 16, bound = #comet.bound<abs = 1.0e-3, slot = 1>>]} {
  return
}

// -----

// Sites describe a function.
func.func @sites_not_on_function(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'comet.sites' belongs on a function}}
  %y = "onnx.Relu"(%x) {comet.sites = [#comet.site<value = "x", codec = mask, bytes = 16>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The comet dialect knows its discardable attributes.
func.func @unknown_attribute(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown comet attribute 'comet.tuning'}}
  %y = "onnx.Relu"(%x) {comet.tuning = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A budget record lists the candidates it left raw by name.
// expected-error @+1 {{'comet.budget' needs 'not_selected', an array of strings}}
func.func @budget_names_not_strings() attributes {comet.budget = {bytes = 100 : i64, predicted_peak = 90 : i64, compressed = 1 : i64, sz_ratio = 3.0 : f64, not_selected = [1]}} {
  return
}

// -----

// expected-error @+1 {{'comet.budget' needs an integer 'predicted_peak'}}
func.func @budget_without_peak() attributes {comet.budget = {bytes = 100 : i64, compressed = 1 : i64, sz_ratio = 3.0 : f64, not_selected = []}} {
  return
}

// -----

func.func @budget_not_on_function(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'comet.budget' must be a dictionary on a function}}
  %y = "onnx.Relu"(%x) {comet.budget = {bytes = 100 : i64}} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// comet.optimizer_update: a known kernel, its number of states, one type
// for weight, gradient and states, and one-element scalars.
func.func @update_unknown_kind(%w: tensor<4xf32>, %lr: tensor<1xf32>, %s: tensor<1xi64>) {
  // expected-error @+1 {{kind 'lamb' is not adamw, sgd_v2 or sgd_momentum}}
  comet.optimizer_update "lamb" %w, %w lr %lr : tensor<1xf32> step %s : tensor<1xi64> : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @update_states(%w: tensor<4xf32>, %m: tensor<4xf32>, %lr: tensor<1xf32>, %s: tensor<1xi64>) {
  // expected-error @+1 {{kind 'adamw' keeps 2 state(s) per parameter, got 1}}
  comet.optimizer_update "adamw" %w, %w states(%m : tensor<4xf32>) lr %lr : tensor<1xf32> step %s : tensor<1xi64> : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @update_grad_type(%w: tensor<4xf32>, %g: tensor<5xf32>, %lr: tensor<1xf32>, %s: tensor<1xi64>) {
  // expected-error @+1 {{expects the gradient of the weight's type 'tensor<4xf32>', got 'tensor<5xf32>'}}
  comet.optimizer_update "sgd_v2" %w, %g lr %lr : tensor<1xf32> step %s : tensor<1xi64> : tensor<4xf32>, tensor<5xf32>
  return
}

// -----

func.func @update_lr(%w: tensor<4xf32>, %lr: tensor<2xf32>, %s: tensor<1xi64>) {
  // expected-error @+1 {{expects a one-element f32 learning rate, got 'tensor<2xf32>'}}
  comet.optimizer_update "sgd_v2" %w, %w lr %lr : tensor<2xf32> step %s : tensor<1xi64> : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @update_mode(%w: tensor<4xf32>, %lr: tensor<1xf32>, %s: tensor<1xi64>) {
  // expected-error @+1 {{adam_mode must be 0 or 1, got 2}}
  comet.optimizer_update "adamw" %w, %w states(%w, %w : tensor<4xf32>, tensor<4xf32>) lr %lr : tensor<1xf32> step %s : tensor<1xi64> {adam_mode = 2 : i64} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'comet.fused_optimizer' must be adamw, sgd_v2 or sgd_momentum, on a function}}
func.func @fused_unknown() attributes {comet.fused_optimizer = "lamb"} {
  return
}

// -----

// comet.batch_norm_apply: an f32 input of rank 2 to 5, a result of its
// type, per-channel vectors of its channel count, a known activation.
func.func @bn_apply_rank(%x: tensor<6xf32>, %c: tensor<6xf32>) {
  // expected-error @+1 {{expects an f32 input of rank 2 to 5, got 'tensor<6xf32>'}}
  %y = comet.batch_norm_apply %x, %c, %c, %c, %c : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @bn_apply_result(%x: tensor<2x3xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{expects a result of the input's type 'tensor<2x3xf32>', got 'tensor<3x2xf32>'}}
  %y = comet.batch_norm_apply %x, %c, %c, %c, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @bn_apply_channels(%x: tensor<2x3xf32>, %c: tensor<3xf32>, %m: tensor<4xf32>) {
  // expected-error @+1 {{expects saved_mean to be an f32 vector of the input's 3 channels, got 'tensor<4xf32>'}}
  %y = comet.batch_norm_apply %x, %c, %c, %m, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @bn_apply_activation(%x: tensor<2x3xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{activation must be none, relu or clip, got 'gelu'}}
  %y = comet.batch_norm_apply %x, %c, %c, %c, %c {activation = "gelu"} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}
