#!/usr/bin/env python3
"""Writes the small ONNX files that the test/Import lit tests import.

Run with the project's venv from anywhere:
    .venv/bin/python test/Import/Inputs/generate.py
The output is deterministic; `git status` shows no change after a rerun
unless this script changed. Each file exercises one op family, or is a
deliberately broken model for the bad-input tests (bad-*.onnx).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MS = "com.microsoft"


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def node(op, ins, outs, name, domain="", **attrs):
    return helper.make_node(op, ins, outs, name=name, domain=domain or None, **attrs)


def save(fname, nodes, inputs, outputs, inits=(), value_info=(), opsets=None):
    graph = helper.make_graph(nodes, fname.split(".")[0].replace("-", "_"),
                              inputs, outputs, list(inits), value_info=list(value_info))
    if opsets is None:
        opsets = [("", 17), (MS, 1)]
    model = helper.make_model(graph, ir_version=8, producer_name="generate.py",
                              opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    with open(os.path.join(HERE, fname), "wb") as f:
        f.write(model.SerializeToString())
    return model


def w(name, shape, seed):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


F = TP.FLOAT
# Convolution family: Conv with and without bias, ConvGrad with an absent dX
# output, and no value_info at all so that every type is inferred.
save("conv.onnx", [
    node("Conv", ["x", "w1", "b1"], ["y1"], "conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    node("Conv", ["y1", "w2"], ["y2"], "conv2", strides=[2, 2], group=2),
    node("ConvGrad", ["y2", "y1", "w2"], ["", "dw2", "db2"], "conv2_grad", MS,
         kernel_shape=[3, 3], strides=[2, 2], group=2),
], [vi("x", F, ["batch", 3, 8, 8])], [vi("y2", F, None), vi("dw2", F, None), vi("db2", F, None)],
    [w("w1", (4, 3, 3, 3), 1), w("b1", (4,), 2), w("w2", (6, 2, 3, 3), 3)])

# Pooling family.
save("pool.onnx", [
    node("MaxPool", ["x"], ["p", "idx"], "pool", kernel_shape=[2, 2], strides=[2, 2]),
    node("MaxPoolGrad", ["p", "idx"], ["dx"], "pool_grad", kernel_shape=[2, 2], strides=[2, 2]),
    node("MaxPool", ["x"], ["pc"], "pool_ceil", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    node("GlobalAveragePool", ["x"], ["gap"], "gap"),
], [vi("x", F, ["batch", 4, 7, 7])],
    [vi("dx", F, ["batch", 4, 7, 7]), vi("pc", F, None), vi("gap", F, None)])

# Dense family: Flatten, Gemm (both transposes), MatMul, Reshape to a constant shape.
save("gemm.onnx", [
    node("Flatten", ["x"], ["flat"], "flatten"),
    node("Gemm", ["flat", "fcw", "fcb"], ["fc"], "fc", transB=1, alpha=0.5),
    node("Gemm", ["fc", "flat"], ["gw"], "fc_grad_w", transA=1, beta=0.0),
    node("MatMul", ["fc", "mm"], ["mmo"], "matmul"),
    node("Reshape", ["mmo", "shape"], ["r"], "reshape"),
], [vi("x", F, ["batch", 2, 3, 4])],
    [vi("gw", F, None), vi("r", F, None)],
    [w("fcw", (5, 24), 4), w("fcb", (5,), 5), w("mm", (5, 6), 6), i64("shape", [0, 3, -1])])

# Batch normalization family: inference, training-internal, gradient.
bn = [numpy_helper.from_array(np.full((4,), v, np.float32), n)
      for n, v in [("scale", 1.0), ("bias", 0.0), ("mean", 0.0), ("var", 1.0)]]
save("batchnorm.onnx", [
    node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"], "bn", epsilon=1e-3),
    node("BatchNormInternal", ["x", "scale", "bias", "mean", "var"],
         ["yt", "rm", "rv", "sm", "sis"], "bn_train", MS, training_mode=1, momentum=0.8),
    node("BatchNormalizationGrad", ["yt", "x", "scale", "sm", "sis"], ["dx", "dscale", "dbias"],
         "bn_grad", MS),
], [vi("x", F, ["batch", 4, 5, 5])],
    [vi("y", F, None), vi("dx", F, None), vi("dscale", F, None), vi("dbias", F, None)], bn)

# Elementwise family with broadcasting, and the small helper ops.
save("elementwise.onnx", [
    node("Add", ["a", "b"], ["add"], "add"),
    node("Sub", ["add", "a"], ["sub"], "sub"),
    node("Mul", ["sub", "b"], ["mul"], "mul"),
    node("Div", ["mul", "a"], ["div"], "div"),
    node("Sum", ["div", "a", "b"], ["sum"], "sum"),
    node("Relu", ["sum"], ["relu"], "relu"),
    node("ReluGrad", ["relu", "sum"], ["drelu"], "relu_grad", MS),
    node("Identity", ["drelu"], ["ident"], "identity"),
    node("Scale", ["ident", "half"], ["scaled"], "scale", MS, scale_down=1),
    node("Cast", ["scaled"], ["cast"], "cast", to=TP.DOUBLE),
], [vi("a", F, ["batch", 3, 1]), vi("b", F, [4])], [vi("cast", TP.DOUBLE, None)],
    [numpy_helper.from_array(np.array([2.0], np.float32), "half")])

# MobileNetV2 and classifier ops: depthwise Conv (group = channels), ReLU6
# as Clip with scalar bounds and the gradient ORT builds for it, Dropout with
# its mask and DropoutGrad; no value_info, so every type is inferred.
scalar = lambda name, v, dt=np.float32: numpy_helper.from_array(np.array(v, dt), name)
save("mobilenet-ops.onnx", [
    node("Conv", ["x", "wd"], ["c"], "dwconv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
         group=8),
    node("Clip", ["c", "zero", "six"], ["r6"], "relu6"),
    node("Dropout", ["r6", "ratio", "train"], ["d", "mask"], "dropout"),
    node("DropoutGrad", ["d", "mask", "ratio", "train"], ["dd"], "dropout_grad", MS),
    node("GreaterOrEqual", ["c", "zero"], ["ge"], "ge"),
    node("LessOrEqual", ["c", "six"], ["le"], "le"),
    node("And", ["ge", "le"], ["m"], "and"),
    node("Cast", ["m"], ["mf"], "cast", to=TP.FLOAT),
    node("Mul", ["dd", "mf"], ["dc"], "mul"),
    node("ConvGrad", ["dc", "x", "wd"], ["dx", "dwd"], "dwconv_grad", MS,
         kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8),
], [vi("x", F, ["batch", 8, 6, 6])], [vi("dx", F, None), vi("dwd", F, None)],
    [w("wd", (8, 1, 3, 3), 5), scalar("zero", 0.0), scalar("six", 6.0),
     scalar("ratio", 0.2), scalar("train", True, np.bool_)])

# EfficientNet's ops as ORT writes them: SiLU fused into QuickGelu
# (alpha = 1) and its QuickGeluGrad reading X; a QuickGelu with ORT's
# default alpha (no attribute); the per-sample stochastic-depth noise as
# torch exports it (Shape, Gather of the batch, Unsqueeze, a ConcatTraining
# with constant ones, ConstantOfShape of value 1, Dropout) and the Mul by
# it. No value_info: every type is inferred.
save("efficientnet-ops.onnx", [
    node("QuickGelu", ["x"], ["q"], "silu", MS, alpha=1.0),
    node("QuickGelu", ["q"], ["qd"], "quick_gelu", MS),
    node("Shape", ["qd"], ["shape"], "shape"),
    node("Gather", ["shape", "idx0"], ["n"], "gather", axis=0),
    node("Unsqueeze", ["n", "axes0"], ["n1"], "unsqueeze_n"),
    node("Unsqueeze", ["one", "axes0"], ["one1"], "unsqueeze_one"),
    node("ConcatTraining", ["n1", "one1", "one1", "one1"], ["dims", ""], "concat", MS,
         axis=0),
    node("ConstantOfShape", ["dims"], ["ones"], "ones",
         value=numpy_helper.from_array(np.array([1.0], np.float32), "value")),
    node("Dropout", ["ones", "ratio", "train"], ["noise", "mask"], "stochastic_depth"),
    node("Mul", ["qd", "noise"], ["y"], "mul"),
    node("QuickGeluGrad", ["y", "x"], ["dx"], "silu_grad", MS, alpha=1.0),
], [vi("x", F, ["batch", 8, 6, 6])], [vi("y", F, None), vi("dx", F, None)],
    [i64("idx0", 0), i64("axes0", [0]), i64("one", 1), scalar("ratio", 0.2),
     scalar("train", True, np.bool_)])

# Sigmoid, Tanh and average pooling as torch exports them and the gradients
# ORT builds: a Pad (count_include_pad) before an unpadded AveragePool, an
# AveragePool with pads, AveragePoolGrad, the Pad by the Neg'ed pads,
# TanhGrad and SigmoidGrad reading the forward outputs. Only the
# AveragePoolGrad outputs have value_info (as in ORT's graphs: dY does not
# tell the input's size); every other type is inferred.
save("activation-ops.onnx", [
    node("Sigmoid", ["x"], ["s"], "sigmoid"),
    node("Pad", ["s", "pads"], ["p"], "pad", mode="constant"),
    node("AveragePool", ["p"], ["a"], "pool1", kernel_shape=[2, 2], strides=[2, 2],
         pads=[0, 0, 0, 0], count_include_pad=0, ceil_mode=0, auto_pad="NOTSET"),
    node("Tanh", ["a"], ["t"], "tanh"),
    node("AveragePool", ["t"], ["y"], "pool2", kernel_shape=[3, 3], strides=[2, 2],
         pads=[1, 1, 1, 1]),
    node("AveragePoolGrad", ["y"], ["dt"], "pool2_grad", kernel_shape=[3, 3],
         strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=0),
    node("TanhGrad", ["dt", "t"], ["da"], "tanh_grad", MS),
    node("AveragePoolGrad", ["da"], ["dp"], "pool1_grad", kernel_shape=[2, 2],
         strides=[2, 2]),
    node("Neg", ["pads"], ["npads"], "neg_pads"),
    node("Pad", ["dp", "npads"], ["ds"], "pad_grad", mode="constant"),
    node("SigmoidGrad", ["ds", "s"], ["dx"], "sigmoid_grad", MS),
], [vi("x", F, ["batch", 4, 8, 8])], [vi("y", F, None), vi("dx", F, None)],
    [i64("pads", [0, 0, 1, 1, 0, 0, 1, 1])],
    [vi("dt", F, ["batch", 4, 5, 5]), vi("dp", F, ["batch", 4, 10, 10])])

# torch's LeakyReLU (ONNX's default slope, and 0.1 as nn.LeakyReLU(0.1)
# writes it) and the LeakyReluGrad ORT builds from the forward output; no
# value_info, so every type is inferred.
save("leaky-relu-ops.onnx", [
    node("LeakyRelu", ["x"], ["y1"], "leaky_default"),
    node("LeakyRelu", ["y1"], ["y"], "leaky_tenth", alpha=0.1),
    node("LeakyReluGrad", ["y", "y"], ["dy1"], "leaky_tenth_grad", MS, alpha=0.1),
    node("LeakyReluGrad", ["dy1", "y1"], ["dx"], "leaky_default_grad", MS),
], [vi("x", F, ["batch", 4, 8, 8])], [vi("y", F, None), vi("dx", F, None)])

# Mod as torch exports it: Swin's window padding (win - h % win) % win on
# i64 scalars (fmod 0, no attribute), an i64 tensor input broadcast with a
# [3] divisor (fmod 1) and torch.fmod of floats (fmod 1); no value_info.
save("mod-ops.onnx", [
    node("Mod", ["h", "win"], ["hm"], "h_mod"),
    node("Sub", ["win", "hm"], ["hs"], "win_sub"),
    node("Mod", ["hs", "win"], ["pad"], "pad_mod"),
    node("Mod", ["ids", "three"], ["im"], "ids_mod", fmod=1),
    node("Mod", ["x", "half"], ["xm"], "x_fmod", fmod=1),
], [vi("ids", TP.INT64, ["batch", 3]), vi("x", F, ["batch", 4])],
    [vi("pad", TP.INT64, None), vi("im", TP.INT64, None), vi("xm", F, None)],
    [i64("h", 4), i64("win", 7), i64("three", [3, -3, 5]),
     numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half")])

# Exported eval graphs and embedding models: LayerNorm and GELU as torch
# exports them (Pow, Sqrt, Erf), the attention's shape plumbing (Gather of a
# shape entry with a scalar index, Unsqueeze, Concat into a Reshape target),
# an embedding (Gather of rows by i64 ids) and the gradients ORT builds for
# Concat and Gather (ConcatTraining, SplitTraining, GatherGrad); no
# value_info, so every type is inferred.
save("eval-ops.onnx", [
    node("Pow", ["x", "two"], ["p"], "pow"),
    node("Sqrt", ["p"], ["s"], "sqrt"),
    node("Erf", ["s"], ["e"], "erf"),
    node("Shape", ["x"], ["sh"], "shape"),
    node("Gather", ["sh", "i0"], ["b"], "gather_batch", axis=0),
    node("Unsqueeze", ["b", "ax0"], ["bu"], "unsqueeze"),
    node("Concat", ["bu", "minus1"], ["target"], "concat", axis=0),
    node("Reshape", ["e", "target"], ["flat"], "reshape"),
    node("Gather", ["table", "ids"], ["emb"], "embed", axis=0),
    node("ConcatTraining", ["emb", "h"], ["cat", "lengths"], "concat_training", MS, axis=2),
    node("SplitTraining", ["cat", "lengths"], ["demb", "dh"], "split_training", MS, axis=2),
    node("Shape", ["table"], ["tshape"], "table_shape"),
    node("GatherGrad", ["tshape", "ids", "demb"], ["dtable"], "gather_grad", MS, axis=0),
], [vi("x", F, ["batch", 4, 8]), vi("ids", TP.INT64, ["batch", 6]), vi("h", F, ["batch", 6, 4])],
    [vi("flat", F, None), vi("dtable", F, None), vi("dh", F, None)],
    [scalar("two", 2.0), i64("i0", 0), i64("ax0", [0]), i64("minus1", [-1]),
     w("table", (16, 8), 6)])

# Shape family: Shape, Expand, ReduceSum over constant axes, Constant.
save("shape.onnx", [
    node("Shape", ["x"], ["s"], "shape"),
    node("Shape", ["x"], ["s2"], "shape_tail", start=-2),
    node("Constant", [], ["k"], "const", value=numpy_helper.from_array(
        np.array([[1.5, 2.5, 3.5]], np.float32), "k")),
    node("Expand", ["k", "s"], ["e"], "expand"),
    node("ReduceSum", ["x", "axes"], ["r"], "reduce", keepdims=0),
    node("ReduceSum", ["x"], ["rall"], "reduce_all"),
], [vi("x", F, ["batch", 2, 3])],
    [vi("s2", TP.INT64, None), vi("e", F, None), vi("r", F, None), vi("rall", F, None)],
    [i64("axes", [0, -1])])

# Transformer family: the ops of ONNX Runtime's transformer training graphs,
# attention shapes [batch, tokens 6, d 8] with 2 heads of 4, no value_info
# (every type inferred), LayerNormalization with its three outputs.
save("transformer.onnx", [
    node("Squeeze", ["x4", "ax1"], ["x"], "squeeze"),
    node("LayerNormalization", ["x", "g", "bln"], ["ln", "mean", "istd"], "ln",
         axis=-1, epsilon=1e-5, stash_type=1),
    node("Transpose", ["ln"], ["t"], "transpose", perm=[1, 0, 2]),
    node("MatMul", ["t", "wqkv"], ["qkv"], "matmul"),
    node("Slice", ["qkv", "s0", "s8", "axm1"], ["q"], "slice"),
    node("Reshape", ["q", "heads"], ["qh"], "reshape"),
    node("Transpose", ["qh"], ["qt"], "transpose_q", perm=[1, 0, 2]),
    node("Transpose", ["qh"], ["kt"], "transpose_k", perm=[1, 2, 0]),
    node("MatMul", ["qt", "kt"], ["scores"], "scores"),
    node("Softmax", ["scores"], ["p"], "softmax", axis=-1),
    node("SoftmaxGrad_13", ["p", "p"], ["dscores"], "softmax_grad", MS, axis=-1),
    node("FusedMatMul", ["dscores", "kt"], ["dq"], "fused", MS, alpha=1.0, transA=0,
         transB=1, transBatchA=0, transBatchB=0),
    node("Shape", ["qkv"], ["qkv_shape"], "shape"),
    node("SliceGrad", ["q", "qkv_shape", "s0", "s8", "axm1"], ["dqkv"], "slice_grad", MS),
    node("BiasGelu", ["ln", "b8"], ["gelu"], "bias_gelu", MS),
    node("BiasGeluGrad_dX", ["gelu", "ln", "b8"], ["dgelu"], "bias_gelu_grad", MS),
    node("LayerNormalizationGrad", ["dgelu", "x", "g", "mean", "istd"],
         ["dx", "dg", "db"], "ln_grad", MS, axis=-1, epsilon=1e-5),
    node("ReduceMean", ["x"], ["pooled"], "mean", axes=[1], keepdims=0),
    node("Size", ["x"], ["n"], "size"),
    node("Unsqueeze", ["pooled", "ax1"], ["pooled1"], "unsqueeze"),
], [vi("x4", F, ["batch", 1, 6, 8])],
    [vi(n, F, None) for n in ["dq", "dqkv", "dx", "dg", "db", "pooled1"]]
    + [vi("n", TP.INT64, None)],
    [w("g", (8,), 4), w("bln", (8,), 5), w("wqkv", (8, 24), 6), w("b8", (8,), 7),
     i64("ax1", [1]), i64("s0", [0]), i64("s8", [8]), i64("axm1", [-1]),
     i64("heads", [6, -1, 4])])

# Losses.
save("loss.onnx", [
    node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss", "logp"], "loss"),
    node("SoftmaxCrossEntropyLossGrad", ["dloss", "logp", "labels"], ["dlogits"], "loss_grad",
         MS, reduction="mean"),
    node("SoftmaxCrossEntropyLossInternal", ["logits", "labels", "", "ii"], ["iloss", "ilogp"],
         "iloss", MS, reduction="sum"),
    node("SoftmaxCrossEntropyLossInternalGrad", ["dloss", "ilogp", "labels", "", "ii"],
         ["idlogits"], "iloss_grad", MS, reduction="sum"),
    node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["nloss"], "loss_none", reduction="none"),
], [vi("logits", F, ["batch", 10]), vi("labels", TP.INT64, ["batch"])],
    [vi("loss", F, None), vi("dlogits", F, None), vi("iloss", F, None), vi("idlogits", F, None),
     vi("nloss", F, None)],
    [numpy_helper.from_array(np.array(1.0, np.float32), "dloss"),
     numpy_helper.from_array(np.array(-100, np.int64), "ii")])

# Optimizer and accumulation ops, on sequences as ORT writes them.
seq = helper.make_tensor_sequence_value_info
save("optimizer.onnx", [
    node("InPlaceAccumulatorV2", ["buf", "grad", "reset"], ["flag"], "accumulate", MS),
    node("InPlaceAccumulatorV2", ["buf", "grad"], ["flag2", "bufout"], "accumulate2", MS),
    node("AdamWOptimizer", ["lr", "step", "params", "grads", "m1", "m2"], ["adam_done"], "adamw",
         MS, alpha=0.9, beta=0.999, epsilon=1e-8, weight_decay=0.01, adam_mode=1, correct_bias=1),
    node("SGDOptimizerV2", ["lr", "params", "grads"], ["sgd_done", "newparams"], "sgd", MS),
], [vi("buf", F, [3, 4]), vi("grad", F, [3, 4]), vi("reset", TP.BOOL, [1]), vi("lr", F, [1]),
    vi("step", TP.INT64, [1])] + [seq(n, F, None) for n in ["params", "grads", "m1", "m2"]],
    [vi("flag", TP.BOOL, [1]), vi("flag2", TP.BOOL, None), vi("bufout", F, None),
     vi("adam_done", TP.BOOL, [1]), vi("sgd_done", TP.BOOL, [1]), seq("newparams", F, None)])

# Initializers of several data types and storage forms (raw_data, typed fields).
typed_f = helper.make_tensor("f_typed", F, [2], [1.0, -2.0])
typed_i = helper.make_tensor("i_typed", TP.INT64, [2], [7, -1])
raw_b = numpy_helper.from_array(np.array([True, False, True]), "b_raw")
raw_h = numpy_helper.from_array(np.array([1.0, 0.5], np.float16), "h_raw")
raw_i32 = numpy_helper.from_array(np.array([[1, 2], [3, 4]], np.int32), "i32_raw")
save("initializers.onnx", [
    node("Identity", ["f_typed"], ["o1"], "id1"), node("Identity", ["i_typed"], ["o2"], "id2"),
    node("Identity", ["b_raw"], ["o3"], "id3"), node("Identity", ["h_raw"], ["o4"], "id4"),
    node("Identity", ["i32_raw"], ["o5"], "id5"),
], [], [vi(f"o{i}", t, None) for i, t in
        [(1, F), (2, TP.INT64), (3, TP.BOOL), (4, TP.FLOAT16), (5, TP.INT32)]],
    [typed_f, typed_i, raw_b, raw_h, raw_i32])

# ---- Bad inputs -------------------------------------------------------------
good = open(os.path.join(HERE, "conv.onnx"), "rb").read()
with open(os.path.join(HERE, "bad-truncated.onnx"), "wb") as f:
    f.write(good[: len(good) // 2])
with open(os.path.join(HERE, "bad-corrupt.onnx"), "wb") as f:
    f.write(bytes((i * 37 + 11) % 256 for i in range(200)))
x4 = [vi("x", F, ["batch", 4])]
save("bad-unknown-op.onnx", [node("Relu", ["x"], ["r"], "ok"),
                             node("Frobnicate", ["r"], ["y"], "mystery", "com.example")],
     x4, [vi("y", F, None)], opsets=[("", 17), ("com.example", 1)])
# Several unsupported op types, one of them twice and one only known in
# another domain: one error lists each with its first node.
save("bad-unsupported-ops.onnx", [node("Relu", ["x"], ["r"], "ok"),
                                  node("Frobnicate", ["r"], ["f"], "frob1", "com.example"),
                                  node("Softsign", ["f"], ["s"], "softsign1"),
                                  node("Frobnicate", ["s"], ["g"], "frob2", "com.example"),
                                  node("Relu", ["g"], ["h"], "", MS)],
     x4, [vi("h", F, None)], opsets=[("", 17), ("com.example", 1), (MS, 1)])
# An eval graph as generate_artifacts writes it: BatchNormalization with
# training_mode=0 and three outputs; the running statistics are unread.
save("eval-batchnorm.onnx", [
    node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y", "rm", "rv"], "bn",
         training_mode=0),
    node("Relu", ["y"], ["r"], "relu")],
    [vi("x", F, ["batch", 4, 5, 5])], [vi("r", F, None)], bn)
# The same with a running statistic read by another node: not droppable.
save("bad-eval-batchnorm-read.onnx", [
    node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y", "rm", "rv"], "bn",
         training_mode=0),
    node("Relu", ["rm"], ["r"], "relu_of_mean")],
    [vi("x", F, ["batch", 4, 5, 5])], [vi("y", F, None), vi("r", F, None)], bn)
save("bad-wrong-domain.onnx", [node("ReluGrad", ["x", "x"], ["y"], "rg_in_default_domain")],
     x4, [vi("y", F, None)])
save("bad-missing-opset.onnx", [node("ReluGrad", ["x", "x"], ["y"], "relu_grad", MS)],
     x4, [vi("y", F, None)], opsets=[("", 17)])
save("bad-type-mismatch.onnx", [node("Add", ["x", "n"], ["y"], "add_f32_i64")],
     x4 + [vi("n", TP.INT64, [4])], [vi("y", F, None)])
save("bad-value-info-mismatch.onnx", [node("Relu", ["x"], ["y"], "relu")],
     x4, [vi("y", F, ["batch", 5])])
save("bad-dangling.onnx", [node("Relu", ["nowhere"], ["y"], "dangling_relu")],
     x4, [vi("y", F, None)])
save("bad-kernel-shape.onnx", [node("Conv", ["x", "w"], ["y"], "conv_bad_kernel",
                                    kernel_shape=[5, 5])],
     [vi("x", F, [1, 3, 8, 8])], [vi("y", F, None)], [w("w", (4, 3, 3, 3), 7)])
save("bad-attribute.onnx", [node("Relu", ["x"], ["y"], "relu_with_alpha", alpha=0.1)],
     x4, [vi("y", F, None)])
save("bad-attribute-type.onnx", [node("Flatten", ["x"], ["y"], "flatten_float_axis", axis=1.5)],
     x4, [vi("y", F, None)])
save("bad-arity.onnx", [node("Relu", ["x", "x"], ["y"], "relu_two_inputs")],
     x4, [vi("y", F, None)])
save("bad-no-type.onnx", [node("Relu", ["x"], ["y"], "relu")],
     [helper.make_value_info("x", onnx.TypeProto())], [vi("y", F, None)])
bad_init = numpy_helper.from_array(np.zeros((2, 2), np.float32), "short")
bad_init.raw_data = bad_init.raw_data[:12]
save("bad-initializer.onnx", [node("Identity", ["short"], ["y"], "id")], [], [vi("y", F, None)],
     [bad_init])

# ---- Nodes that break their op's ODS definition (checked before inference) --
img = [vi("x", F, [1, 1, 8, 8])]
# The fuzzer's first finding: MaxPool without its required kernel_shape.
save("bad-missing-kernel-shape.onnx", [node("MaxPool", ["x"], ["y"], "pool_no_kernel")],
     img, [vi("y", F, None)])
save("bad-missing-to.onnx", [node("Cast", ["x"], ["y"], "cast_no_to")],
     x4, [vi("y", F, None)])
save("bad-kernel-shape-int.onnx", [node("MaxPool", ["x"], ["y"], "pool_int_kernel",
                                        kernel_shape=2)],
     img, [vi("y", F, None)])
save("bad-too-few-inputs.onnx", [node("Conv", ["x"], ["y"], "conv_one_input")],
     img, [vi("y", F, None)])
save("bad-absent-required-input.onnx", [node("Gemm", ["", "b"], ["y"], "gemm_no_a")],
     [vi("b", F, [4, 3])], [vi("y", F, None)])
save("bad-absent-required-output.onnx",
     [node("MaxPool", ["x"], ["", "i"], "pool_no_y", kernel_shape=[2, 2])],
     img, [vi("i", TP.INT64, None)])
save("bad-flatten-axis.onnx", [node("Flatten", ["x"], ["y"], "flatten_axis_3", axis=3)],
     x4, [vi("y", F, None)])
save("bad-reducesum-axis.onnx", [node("ReduceSum", ["x", "axes"], ["y"], "sum_axis_5")],
     x4, [vi("y", F, None)], [i64("axes", [5])])
save("bad-transpose-perm.onnx", [node("Transpose", ["x"], ["y"], "transpose_bad",
                                      perm=[0, 0, 1, 2])],
     x4, [vi("y", F, None)])
# The importer fuzzer's find: a perm entry far past the rank, which type
# inference used as an index before the verifier had rejected it (SIGSEGV).
save("bad-transpose-perm-huge.onnx", [node("Transpose", ["x"], ["y"], "transpose_huge",
                                           perm=[803209215, 0])],
     x4, [vi("y", F, None)])
save("bad-softmax-axis.onnx", [node("Softmax", ["x"], ["y"], "softmax_axis_4", axis=4)],
     x4, [vi("y", F, None)])
