"""Cross-checks CometRuntime's kernels against ONNX Runtime, one op at a time.

Each case builds a single-node ONNX model (ai.onnx or com.microsoft, the
training ops come from the onnxruntime-training wheel), runs it with
InferenceSession on CPU, runs the same op through libCometRuntime's C ABI
with ctypes, and compares within 1e-5 relative (to the largest reference
magnitude). This is the per-op foundation of the "one training step matches
ORT" check.
"""

import ctypes
import os
import pathlib

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("COMET_BUILD_DIR", ROOT / "build"))
LIB = BUILD / "lib" / "libCometRuntime.so"

if not LIB.exists():
    pytest.skip(f"{LIB} is not built", allow_module_level=True)
rt = ctypes.CDLL(str(LIB))
rt.comet_rt_last_error.restype = ctypes.c_char_p


class MemRef(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int64), ("descriptor", ctypes.c_void_p)]


class Arg:
    """An MLIR unranked memref over a contiguous numpy array."""

    def __init__(self, array):
        self.a = array if array.flags.c_contiguous else np.ascontiguousarray(array)
        r = self.a.ndim
        words = (ctypes.c_int64 * (3 + 2 * r))()
        ptr = self.a.ctypes.data
        words[0] = words[1] = ptr
        words[2] = 0
        strides = [s // self.a.itemsize for s in self.a.strides] if self.a.size else [0] * r
        for i in range(r):
            words[3 + i] = self.a.shape[i]
            words[3 + r + i] = strides[i]
        self.words = words
        self.m = MemRef(r, ctypes.cast(words, ctypes.c_void_p))

    def ptr(self):
        return ctypes.byref(self.m)


NONE = np.zeros((0,), np.float32)


def call(op, *args):
    """Calls _mlir_ciface_comet_rt_<op> on the default runtime context (NULL);
    numpy arrays become memrefs, Python floats c_float and ints c_int64.
    Returns the memref arrays."""
    fn = getattr(rt, f"_mlir_ciface_comet_rt_{op}")
    fn.restype = ctypes.c_int32
    keep, cargs = [], [ctypes.c_void_p(None)]
    for a in args:
        if isinstance(a, np.ndarray):
            m = Arg(a)
            assert m.a is a, "arrays must be contiguous"
            keep.append(m)
            cargs.append(m.ptr())
        elif isinstance(a, float):
            cargs.append(ctypes.c_float(a))
        else:
            cargs.append(ctypes.c_int64(int(a)))
    rc = fn(*cargs)
    assert rc == 0, f"{op}: {rt.comet_rt_last_error().decode()}"


def run_ort(op, inputs, n_out, domain="", attrs=None, out_types=None,
            out_shapes=None):
    """Runs one node; inputs is a list of (name, array); returns outputs.
    out_shapes: declared output shapes (ORT's MaxPoolGrad sizes dX from
    its output's declared shape and crashes without one)."""
    names = [n for n, _ in inputs]
    outs = [f"out{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, domain=domain, **(attrs or {}))
    def vi(name, arr):
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape)
    ins = [vi(n, a) for n, a in inputs if n]
    out_types = out_types or [TensorProto.FLOAT] * n_out
    out_shapes = out_shapes or [None] * n_out
    graph = helper.make_graph([node], "g", ins, [
        helper.make_tensor_value_info(o, t, sh)
        for o, t, sh in zip(outs, out_types, out_shapes)])
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {n: a for n, a in inputs if n})


def close(got, want, rel=1e-5):
    want = np.asarray(want)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=rel * scale)


rng = np.random.default_rng(1234)


def rand(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


CONV_ATTRS = [
    dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2], strides=[1, 1]),
    dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
    dict(kernel_shape=[1, 1], pads=[0, 0, 0, 0], strides=[2, 2]),
    dict(kernel_shape=[3, 3], pads=[0, 1, 1, 0], strides=[1, 2], dilations=[2, 1]),
]


def conv_scalars(a):
    s, p, d = a["strides"], a["pads"], a.get("dilations", [1, 1])
    return [s[0], s[1], p[0], p[1], p[2], p[3], d[0], d[1], a.get("group", 1)]


def out_hw(h, w, a):
    s, p, k, d = a["strides"], a["pads"], a["kernel_shape"], a.get("dilations", [1, 1])
    return ((h + p[0] + p[2] - (d[0] * (k[0] - 1) + 1)) // s[0] + 1,
            (w + p[1] + p[3] - (d[1] * (k[1] - 1) + 1)) // s[1] + 1)


@pytest.mark.parametrize("attrs", CONV_ATTRS)
def test_conv_and_conv_grad(attrs):
    x, w, b = rand(2, 3, 12, 10), rand(4, 3, *attrs["kernel_shape"]), rand(4)
    (want,) = run_ort("Conv", [("x", x), ("w", w), ("b", b)], 1, attrs=attrs)
    y = np.zeros(want.shape, np.float32)
    assert want.shape[2:] == out_hw(12, 10, attrs)
    call("conv2d", x, w, b, y, *conv_scalars(attrs))
    close(y, want)

    dy = rand(*want.shape)
    dx_w, dw_w, db_w = run_ort("ConvGrad", [("dy", dy), ("x", x), ("w", w)], 3,
                               domain="com.microsoft", attrs=attrs)
    dx, dw, db = np.zeros_like(x), np.zeros_like(w), np.zeros_like(b)
    call("conv_grad2d", dy, x, w, dx, dw, db, *conv_scalars(attrs))
    close(dx, dx_w)
    close(dw, dw_w)
    close(db, db_w)


@pytest.mark.parametrize("ta,tb,beta,cshape", [
    (0, 1, 1.0, (7,)), (1, 0, 0.0, None), (0, 0, 0.0, None), (1, 1, 0.5, (5, 1))])
def test_gemm(ta, tb, beta, cshape):
    m, k, n = 5, 6, 7
    a = rand(*((k, m) if ta else (m, k)))
    b = rand(*((n, k) if tb else (k, n)))
    inputs = [("a", a), ("b", b)]
    c = NONE
    if cshape:
        c = rand(*cshape)
        inputs.append(("c", c))
    (want,) = run_ort("Gemm", inputs, 1,
                      attrs=dict(transA=ta, transB=tb, alpha=1.5, beta=beta))
    y = np.zeros((m, n), np.float32)
    call("gemm", a, b, c, y, 1.5, beta, ta, tb)
    close(y, want)


def test_matmul():
    a, b = rand(2, 1, 3, 4), rand(3, 4, 5)
    (want,) = run_ort("MatMul", [("a", a), ("b", b)], 1)
    y = np.zeros(want.shape, np.float32)
    call("matmul", a, b, y)
    close(y, want)


def test_relu_and_relu_grad():
    x, dy = rand(3, 4, 5), rand(3, 4, 5)
    (want,) = run_ort("Relu", [("x", x)], 1)
    y = np.zeros_like(x)
    call("relu", x, y)
    close(y, want)
    (want_dx,) = run_ort("ReluGrad", [("dy", dy), ("y", y)], 1,
                         domain="com.microsoft")
    dx = np.zeros_like(x)
    call("relu_grad", dy, y, dx)
    close(dx, want_dx)


@pytest.mark.parametrize("alpha", [None, 0.1, -0.5])
def test_leaky_relu_and_grad(alpha):
    """LeakyRelu and com.microsoft LeakyReluGrad (from the forward output
    Y): ONNX's default slope (no attribute, 0.01), torch's 0.1 as
    nn.LeakyReLU(0.1) writes it, and a negative one."""
    x, dy = rand(3, 4, 5, lo=-4.0, hi=4.0), rand(3, 4, 5)
    x[0, 0, :2] = 0.0
    attrs = {} if alpha is None else {"alpha": alpha}
    a = 0.01 if alpha is None else alpha
    (want,) = run_ort("LeakyRelu", [("x", x)], 1, attrs=attrs)
    y = np.zeros_like(x)
    call("leaky_relu", x, y, a)
    close(y, want)
    (want_dx,) = run_ort("LeakyReluGrad", [("dy", dy), ("y", y)], 1,
                         domain="com.microsoft", attrs=attrs)
    dx = np.zeros_like(x)
    call("leaky_relu_grad", dy, y, dx, a)
    close(dx, want_dx)


@pytest.mark.parametrize("alpha", [None, 1.0, -0.5])
def test_quick_gelu_and_grad(alpha):
    """com.microsoft QuickGelu and QuickGeluGrad: ORT's default alpha (no
    attribute, 1.702), SiLU's 1 and a negative one."""
    x, dy = rand(3, 4, 5, lo=-8.0, hi=8.0), rand(3, 4, 5)
    attrs = {} if alpha is None else {"alpha": alpha}
    a = 1.702 if alpha is None else alpha
    (want,) = run_ort("QuickGelu", [("x", x)], 1, domain="com.microsoft", attrs=attrs)
    (want_dx,) = run_ort("QuickGeluGrad", [("dy", dy), ("x", x)], 1,
                         domain="com.microsoft", attrs=attrs)
    y, dx = np.zeros_like(x), np.zeros_like(x)
    call("quick_gelu", x, y, a)
    call("quick_gelu_grad", dy, x, dx, a)
    close(y, want)
    close(dx, want_dx)


@pytest.mark.parametrize("attrs", [
    dict(kernel_shape=[2, 2], strides=[2, 2]),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    dict(kernel_shape=[3, 2], strides=[1, 2], pads=[0, 1, 1, 0], storage_order=1),
])
def test_maxpool_indices_and_grad(attrs):
    x = rand(2, 3, 9, 8)
    want_y, want_i = run_ort("MaxPool", [("x", x)], 2, attrs=attrs,
                             out_types=[TensorProto.FLOAT, TensorProto.INT64])
    y = np.zeros(want_y.shape, np.float32)
    ind = np.zeros(want_i.shape, np.int64)
    k, s = attrs["kernel_shape"], attrs["strides"]
    p = attrs.get("pads", [0, 0, 0, 0])
    call("maxpool2d", x, y, ind, k[0], k[1], s[0], s[1], p[0], p[1], p[2], p[3],
         1, 1, attrs.get("storage_order", 0))
    close(y, want_y)
    np.testing.assert_array_equal(ind, want_i)
    if attrs.get("storage_order", 0):
        return  # MaxPoolGrad follows row-major indices only
    dy = rand(*want_y.shape)
    (want_dx,) = run_ort("MaxPoolGrad", [("dy", dy), ("i", want_i)], 1,
                         attrs=dict(kernel_shape=k, strides=s, pads=p),
                         out_shapes=[x.shape])
    dx = np.zeros_like(x)
    call("maxpool_grad", dy, ind, dx)
    close(dx, want_dx)


def test_global_average_pool_scale_expand():
    x = rand(2, 3, 5, 4)
    (want,) = run_ort("GlobalAveragePool", [("x", x)], 1)
    y = np.zeros(want.shape, np.float32)
    call("global_average_pool", x, y)
    close(y, want)
    s = np.array([20.0], np.float32)
    (want_s,) = run_ort("Scale", [("x", y), ("s", s)], 1, domain="com.microsoft",
                        attrs=dict(scale_down=1))
    scaled = np.zeros_like(y)
    call("scale", y, s, scaled, 1)
    close(scaled, want_s)
    shape = np.array(x.shape, np.int64)
    (want_e,) = run_ort("Expand", [("x", scaled), ("s", shape)], 1)
    e = np.zeros(x.shape, np.float32)
    call("expand", scaled, shape, e)
    close(e, want_e)


def test_add_broadcast_and_reduce_sum():
    a, b = rand(4, 3, 5), rand(3, 1)
    (want,) = run_ort("Add", [("a", a), ("b", b)], 1)
    y = np.zeros(want.shape, np.float32)
    call("add", a, b, y)
    close(y, want)
    for axes, keep in [([0], 0), ([-1, 0], 1), ([], 0)]:
        ax = np.array(axes, np.int64)
        (want,) = run_ort("ReduceSum", [("x", a), ("axes", ax)], 1,
                          attrs=dict(keepdims=keep))
        out = np.zeros(want.shape, np.float32)
        call("reduce_sum", a, ax, out, keep, 0)
        close(out, want)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted,ignore", [(False, None), (True, None),
                                             (False, 2), (True, 1)])
def test_softmax_cross_entropy(reduction, weighted, ignore):
    n, c = 8, 5
    scores = rand(n, c, lo=-3, hi=3)
    labels = rng.integers(0, c, n).astype(np.int64)
    labels[0] = 2
    labels[1] = 1
    w = rand(c, lo=0.2, hi=2.0)
    attrs = dict(reduction=reduction)
    if ignore is not None:
        attrs["ignore_index"] = ignore
    inputs = [("s", scores), ("l", labels)] + ([("w", w)] if weighted else [])
    want_loss, want_lp = run_ort("SoftmaxCrossEntropyLoss", inputs, 2, attrs=attrs)
    loss = np.zeros(want_loss.shape, np.float32)
    lp = np.zeros_like(scores)
    red = {"none": 0, "sum": 1, "mean": 2}[reduction]
    ig = (ignore if ignore is not None else 0, 0 if ignore is None else 1)
    call("softmax_cross_entropy_loss", scores, labels, w if weighted else NONE,
         loss, lp, red, *ig)
    close(loss, want_loss)
    close(lp, want_lp)

    dy = rand(n) if reduction == "none" else np.array(0.75, np.float32)
    ginputs = [("dy", dy), ("lp", want_lp), ("l", labels)] + (
        [("w", w)] if weighted else [])
    (want_dx,) = run_ort("SoftmaxCrossEntropyLossGrad", ginputs, 1,
                         domain="com.microsoft", attrs=attrs)
    dx = np.zeros_like(scores)
    call("softmax_cross_entropy_loss_grad", dy, want_lp, labels,
         w if weighted else NONE, dx, red, *ig)
    close(dx, want_dx)


def test_batch_norm_internal_and_grad():
    x = rand(4, 3, 5, 5, lo=-2, hi=3)
    sc, b = rand(3), rand(3)
    mean, var = rand(3), rand(3, lo=0.5, hi=2)
    attrs = dict(epsilon=1e-5, momentum=0.9)
    want = run_ort("BatchNormInternal",
                   [("x", x), ("s", sc), ("b", b), ("m", mean), ("v", var)], 5,
                   domain="com.microsoft", attrs=dict(training_mode=1, **attrs))
    outs = [np.zeros(x.shape, np.float32)] + [np.zeros(3, np.float32) for _ in range(4)]
    call("batch_norm_internal", x, sc, b, mean, var, *outs, 1e-5, 0.9, 1)
    for got, w in zip(outs, want):
        close(got, w)
    dy = rand(*x.shape)
    want_g = run_ort("BatchNormalizationGrad",
                     [("dy", dy), ("x", x), ("s", sc), ("m", want[3]), ("i", want[4])],
                     3, domain="com.microsoft", attrs=dict(epsilon=1e-5))
    grads = [np.zeros_like(x), np.zeros(3, np.float32), np.zeros(3, np.float32)]
    call("batch_norm_grad", dy, x, sc, want[3], want[4], *grads, 1e-5)
    for got, w in zip(grads, want_g):
        close(got, w)


@pytest.mark.parametrize("overwrite", [False, True])
def test_inplace_accumulator_v2(overwrite):
    buf, val = rand(4, 3), rand(4, 3)
    flag = np.array([overwrite])
    want_upd, want_buf = run_ort(
        "InPlaceAccumulatorV2", [("b", buf.copy()), ("v", val), ("o", flag)], 2,
        domain="com.microsoft", out_types=[TensorProto.BOOL, TensorProto.FLOAT])
    upd = np.zeros(1, np.bool_)
    call("inplace_accumulator_v2", buf, val, flag.view(np.uint8), upd.view(np.uint8),
         NONE)
    close(buf, want_buf)
    assert upd[0] == want_upd[0]


def _seq_model(op, attrs, tensors, n_seq, extra):
    """A graph that packs per-parameter tensors into sequences for op and
    unpacks the updated weights (and moments) with SequenceAt."""
    nodes, inputs, feeds = [], [], {}
    for name, arr in extra:
        inputs.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape))
        feeds[name] = arr
    seq_names = []
    for s, group in enumerate(tensors):
        names = []
        for t, arr in enumerate(group):
            nm = f"s{s}_{t}"
            inputs.append(helper.make_tensor_value_info(nm, TensorProto.FLOAT, arr.shape))
            feeds[nm] = arr
            names.append(nm)
        nodes.append(helper.make_node("SequenceConstruct", names, [f"seq{s}"]))
        seq_names.append(f"seq{s}")
    return nodes, inputs, feeds, seq_names


@pytest.mark.parametrize("mode,correct,wd", [(1, 1, 0.0), (1, 1, 0.01),
                                             (0, 1, 0.01), (1, 0, 0.0)])
def test_adamw(mode, correct, wd):
    shapes = [(4, 3), (5,)]
    ws = [rand(*s) for s in shapes]
    gs = [rand(*s) for s in shapes]
    m1 = [rand(*s, lo=0, hi=0.1) for s in shapes]
    m2 = [rand(*s, lo=0, hi=0.1) for s in shapes]
    lr = np.array([0.01], np.float32)
    step = np.array([3], np.int64)
    attrs = dict(alpha=0.9, beta=0.999, epsilon=1e-6, weight_decay=wd,
                 adam_mode=mode, correct_bias=correct)
    nodes, inputs, feeds, seqs = _seq_model(
        "AdamWOptimizer", attrs, [[w.copy() for w in ws], gs, [m.copy() for m in m1],
                                  [m.copy() for m in m2]], 4,
        [("lr", lr), ("step", step)])
    nodes.append(helper.make_node("AdamWOptimizer", ["lr", "step"] + seqs,
                                  ["flag", "uw", "um1", "um2"],
                                  domain="com.microsoft", **attrs))
    outs = ["flag"]
    for name in ["uw", "um1", "um2"]:
        for i in range(len(shapes)):
            idx = helper.make_tensor(f"{name}_i{i}", TensorProto.INT64, [], [i])
            nodes.append(helper.make_node("Constant", [], [f"{name}_c{i}"], value=idx))
            nodes.append(helper.make_node("SequenceAt", [name, f"{name}_c{i}"],
                                          [f"{name}_{i}"]))
            outs.append(f"{name}_{i}")
    graph = helper.make_graph(nodes, "g", inputs, [
        helper.make_tensor_value_info(o, TensorProto.BOOL if o == "flag"
                                      else TensorProto.FLOAT, None) for o in outs])
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    res = dict(zip(outs, sess.run(None, feeds)))
    for i in range(len(shapes)):
        w, a, b = ws[i].copy(), m1[i].copy(), m2[i].copy()
        flag = np.zeros(1, np.uint8)
        call("adamw", lr, step, w, gs[i], a, b, NONE, flag, 0.9, 0.999, 1e-6, wd,
             mode, correct)
        assert flag[0] == 1 and res["flag"]
        close(w, res[f"uw_{i}"])
        close(a, res[f"um1_{i}"])
        close(b, res[f"um2_{i}"])


def test_sgd_optimizer_v2():
    ws, gs = [rand(3, 2), rand(4)], [rand(3, 2), rand(4)]
    lr = np.array([0.1], np.float32)
    nodes, inputs, feeds, seqs = _seq_model(
        "SGDOptimizerV2", {}, [[w.copy() for w in ws], gs], 2, [("lr", lr)])
    nodes.append(helper.make_node("SGDOptimizerV2", ["lr"] + seqs, ["flag", "uw"],
                                  domain="com.microsoft"))
    outs = ["flag"]
    for i in range(2):
        idx = helper.make_tensor(f"i{i}", TensorProto.INT64, [], [i])
        nodes.append(helper.make_node("Constant", [], [f"c{i}"], value=idx))
        nodes.append(helper.make_node("SequenceAt", ["uw", f"c{i}"], [f"uw_{i}"]))
        outs.append(f"uw_{i}")
    graph = helper.make_graph(nodes, "g", inputs, [
        helper.make_tensor_value_info(o, TensorProto.BOOL if o == "flag"
                                      else TensorProto.FLOAT, None) for o in outs])
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    res = dict(zip(outs, sess.run(None, feeds)))
    for i in range(2):
        w = ws[i].copy()
        call("sgd_v2", lr, w, gs[i], NONE, NONE)
        close(w, res[f"uw_{i}"])
