"""The codec benchmark's pieces on a tiny synthetic array (no timing checks)."""
import os

import numpy as np
import pytest
from comet_tools import codec_lib

bench = pytest.importorskip("comet.bench_codec")

LIB = codec_lib()

needs_lib = pytest.mark.skipif(LIB is None, reason="libCometCodec.so not built")


@needs_lib
def test_binding_round_trip_keeps_bound_zeros_and_specials():
    rng = np.random.default_rng(0)
    x = np.maximum(rng.normal(0, 1, (4, 300)), 0).astype(np.float32)
    x[0, 0], x[1, 1] = np.nan, -np.inf
    s = LIB.compress(x, "sz", 1e-3)
    y = LIB.decompress(s, np.empty_like(x))
    fin = np.isfinite(x)
    assert np.max(np.abs(x[fin].astype(np.float64) - y[fin])) <= 1e-3
    assert np.all(y[x == 0] == 0)
    assert np.isnan(y[0, 0]) and y[1, 1] == -np.inf
    with pytest.raises(bench.CodecError, match="corrupt|truncated"):
        LIB.decompress(s[:-1], np.empty_like(x))


@needs_lib
def test_benchmark_emits_every_key():
    rng = np.random.default_rng(1)
    tensors = {"toy__relu.out": np.maximum(rng.normal(0, 1, (2, 3, 8, 8)), 0).astype(np.float32)}
    result = bench.run_benchmark(tensors, ebs=(1e-2,), threads=(1,), repeat=1, lib=LIB)
    codecs = {r["codec"] for r in result["rows"]}
    assert codecs == {"comet-sz", "sz3", "zfp"}
    for r in result["rows"]:
        for key in bench.RESULT_KEYS:
            assert key in r, key
        assert r["max_abs_err"] <= 1e-2 * (1 + 1e-6)
    ours = [r for r in result["rows"] if r["codec"] == "comet-sz"][0]
    assert ours["zeros_preserved"] and ours["category"] == "post_relu"
    assert "| post_relu | 0.01 | comet-sz | 1 |" in bench.format_table(result)
    vs = bench.speed_and_ratio_vs_sz3(result)
    assert {(r["category"], r["eb"]) for r in vs} == {("post_relu", 1e-2), ("all", 1e-2)}
    assert "| post_relu | 0.01 | auto |" in bench.format_vs_sz3(vs)


@needs_lib
def test_binding_writes_both_versions_and_isas_agree():
    rng = np.random.default_rng(2)
    x = np.cumsum(rng.normal(0, 0.01, 5000)).astype(np.float32)
    v2 = LIB.compress(x, "sz", 1e-3)
    v1 = LIB.compress(x, "sz", 1e-3, version=1)
    assert v2[4] == 2 and v1[4] == 1
    for s in (v1, v2):
        y = LIB.decompress(s, np.empty_like(x))
        assert np.max(np.abs(x.astype(np.float64) - y)) <= 1e-3
    try:
        LIB.set_isa("avx2")
    except bench.CodecError:
        pytest.skip("no AVX2 on this CPU")
    try:
        assert LIB.active_isa() == "avx2"
        a = LIB.compress(x, "sz", 1e-3).copy()
        LIB.set_isa("baseline")
        assert LIB.active_isa() == "baseline"
        assert np.array_equal(a, LIB.compress(x, "sz", 1e-3))
    finally:
        LIB.set_isa("auto")


def test_classes_and_derived_activations():
    x = np.array([[[[0.0, 1.0], [2.0, -3.0]]]], np.float32)  # (1, 1, 2, 2)
    sm = bench.softmax(x)
    assert sm.shape == x.shape and abs(float(sm.sum()) - 1.0) < 1e-6
    assert np.argmax(sm) == 2
    g = bench.gelu(np.array([-10.0, 0.0, 1.0, 10.0], np.float32))
    assert abs(g[0]) < 1e-20 and g[1] == 0 and abs(g[2] - 0.8413447) < 1e-6 and g[3] == 10
    assert bench.tensor_class("softmax__m__t", x) == "softmax"
    assert bench.tensor_class("dense__m__t", x) == "dense"
    assert bench.tensor_class("m__relu", np.array([0, 0, 1], np.float32)) == "post_relu"


def test_category():
    assert bench.category("m__input", np.zeros(4, np.float32)) == "input"
    assert bench.category("m__relu", np.array([0, 0, 1, 2], np.float32)) == "post_relu"
    assert bench.category("m__x", np.array([-1, 0, 1, 2], np.float32)) == "other"


def _node(op, inputs, outputs, **attrs):
    import onnx

    return onnx.helper.make_node(op, inputs, outputs, **attrs)


def test_forward_tensors_classifies_and_stops_at_the_loss():
    onnx = pytest.importorskip("onnx")
    zero = onnx.numpy_helper.from_array(np.array(0, np.float32), "zero")
    low = onnx.numpy_helper.from_array(np.array(-1, np.float32), "low")
    nodes = [
        _node("Conv", ["x", "w"], ["conv"]),
        _node("BatchNormInternal", ["conv", "s", "b", "m", "v"], ["bn", "rm", "rv"]),
        _node("Relu", ["bn"], ["relu"]),
        _node("Clip", ["bn", "zero", "six"], ["relu6"]),
        _node("Clip", ["bn", "low", "six"], ["clip"]),  # not a ReLU6
        _node("MatMul", ["relu", "w2"], ["mm"]),
        _node("Softmax", ["mm"], ["attn"]),
        _node("BiasGelu", ["mm", "bias"], ["gelu"], domain="com.microsoft"),
        _node("Transpose", ["gelu"], ["t"]),
        _node("SoftmaxCrossEntropyLoss", ["t", "labels"], ["loss"]),
        _node("Gemm", ["loss", "w3"], ["grad"]),  # backward: not forward
    ]
    graph = onnx.helper.make_graph(nodes, "g", [], [], initializer=[zero, low])
    assert bench.forward_tensors(graph) == [
        ("conv", "dense"), ("bn", "dense"), ("relu", "post_relu"),
        ("relu6", "post_relu"), ("mm", "dense"), ("attn", "softmax"),
        ("gelu", "gelu")]


def test_dump_real_on_the_checked_in_models(tmp_path):
    """The transformer's real Softmax and BiasGelu outputs and the cnn's
    Relu/Conv/BatchNorm/Gemm outputs, from their training graphs on two
    Fashion-MNIST images."""
    pytest.importorskip("onnxruntime")
    from comet import data

    if not os.path.isdir(data.data_dir()):
        pytest.skip(f"{data.data_dir()}: dataset-fashion-mnist not installed")
    paths = bench.dump_real(tmp_path, batch=2, models=("cnn", "transformer"))
    tensors = bench.load_tensors(tmp_path)
    assert {p.name for p in paths} == {f"{k}.npy" for k in tensors}
    by_class = {}
    for name, x in tensors.items():
        cls, model, _ = name.split("__", 2)
        by_class.setdefault((model, cls), []).append(x)
        assert bench.tensor_class(name, x) == cls
    assert {k for k in by_class} == {
        ("cnn", "post_relu"), ("cnn", "dense"), ("transformer", "dense"),
        ("transformer", "softmax"), ("transformer", "gelu")}
    # cnn: Relu x3; Conv, BatchNorm x2 and Gemm x2.
    assert len(by_class[("cnn", "post_relu")]) == 3
    assert len(by_class[("cnn", "dense")]) == 6
    for x in by_class[("cnn", "post_relu")]:
        assert x.min() == 0 and np.mean(x == 0) > 0.1
    # Two attention Softmax outputs (batch 2 x 4 heads, 28 x 28) whose rows
    # sum to 1, and two GELU outputs (>= GELU's minimum, -0.17).
    assert len(by_class[("transformer", "softmax")]) == 2
    for x in by_class[("transformer", "softmax")]:
        assert x.shape == (8, 28, 28)
        assert np.allclose(x.sum(-1), 1, atol=1e-5) and x.min() > 0
    assert len(by_class[("transformer", "gelu")]) == 2
    for x in by_class[("transformer", "gelu")]:
        assert x.shape == (2, 28, 256) and x.min() >= -0.1701 and x.max() > 0
    with pytest.raises(FileNotFoundError, match="export-torch-models"):
        bench.dump_real(tmp_path / "none", batch=2, models=("resnet18",),
                        torch_models_dir=tmp_path)


@needs_lib
def test_entropy_settings_decode_alike_and_order_sizes():
    # Softmax rows at a coarse bound: near-constant codes, coded under auto.
    rng = np.random.default_rng(3)
    logits = rng.normal(0, 0.1, (16, 28, 28))
    x = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)
    sizes, decoded = {}, {}
    try:
        assert LIB.entropy() == "auto"
        for mode in ("off", "auto", "always"):
            LIB.set_entropy(mode)
            assert LIB.entropy() == mode
            s = LIB.compress(x, "sz", 1e-2)
            sizes[mode] = s.size
            decoded[mode] = LIB.decompress(s, np.empty_like(x))
    finally:
        LIB.set_entropy("auto")
    assert np.array_equal(decoded["off"], decoded["auto"])
    assert np.array_equal(decoded["off"], decoded["always"])
    assert np.max(np.abs(x.astype(np.float64) - decoded["off"])) <= 1e-2
    assert sizes["always"] <= sizes["auto"] < sizes["off"] / 2
    with pytest.raises(KeyError):
        LIB.set_entropy("sometimes")


@needs_lib
def test_benchmark_reports_each_entropy_setting():
    rng = np.random.default_rng(4)
    tensors = {"dense__m__t": rng.normal(0, 1, (3, 4096)).astype(np.float32)}
    result = bench.run_benchmark(tensors, ebs=(1e-2,), threads=(1,), repeat=1, lib=LIB,
                                 entropy=("off", "auto", "always"))
    assert {r["codec"] for r in result["rows"]} == {
        "comet-sz:off", "comet-sz", "comet-sz:always", "sz3", "zfp"}
    out = {r["codec"]: r["bytes_out"] for r in result["rows"]}
    assert out["comet-sz:always"] <= out["comet-sz"] <= out["comet-sz:off"]
    vs = bench.speed_and_ratio_vs_sz3(result)
    assert {(r["category"], r["entropy"]) for r in vs} == {
        (c, e) for c in ("dense", "all") for e in ("off", "auto", "always")}
    assert "| dense | 0.01 | always |" in bench.format_vs_sz3(vs)
    assert LIB.entropy() == "auto"


def test_error_stats_detect_bias_shrinkage_dead_zone_and_feedback():
    rng = np.random.default_rng(5)
    eb = 1e-2
    x = rng.normal(0, 1, 200_000)
    u = rng.uniform(-eb, eb, x.size)
    fair = bench.error_stats(x, x + u, eb)
    assert abs(fair["err_bias"]) < 0.01 and abs(fair["err_std"] - 3 ** -0.5) < 0.01
    assert abs(fair["err_corr_x"]) < 0.01 and abs(fair["err_lag1"]) < 0.01
    assert fair["nonzero_zeroed"] == 0
    assert bench.error_stats(x, x + u + 0.5 * eb, eb)["err_bias"] == pytest.approx(0.5, abs=0.01)
    assert bench.error_stats(x, 0.99 * x, eb)["err_corr_x"] < -0.99
    dead = np.where(np.abs(x) < 0.1, 0, x)
    assert bench.error_stats(x, dead, 0.1)["nonzero_zeroed"] == pytest.approx(
        np.mean(np.abs(x) < 0.1), rel=1e-9)
    fed = np.empty_like(u)  # each error carries half of the one before it
    fed[0] = u[0]
    for i in range(1, u.size):
        fed[i] = 0.5 * fed[i - 1] + u[i]
    assert bench.error_stats(x, x + fed, eb)["err_lag1"] == pytest.approx(0.5, abs=0.02)


@needs_lib
def test_our_quantiser_error_is_unbiased_and_uncorrelated():
    """Each element is rounded on its own to a grid of step 2 eb, so on a
    tensor that varies over many steps the error is uniform on [-eb, eb],
    independent of the value and of its neighbours."""
    rng = np.random.default_rng(6)
    x = rng.normal(0, 1, (64, 4096)).astype(np.float32)
    y = LIB.decompress(LIB.compress(x, "sz", 1e-3), np.empty_like(x))
    st = bench.error_stats(x, y, 1e-3)
    assert abs(st["err_bias"]) < 0.01
    assert abs(st["err_std"] - 3 ** -0.5) < 0.01
    assert abs(st["err_corr_x"]) < 0.01 and abs(st["err_lag1"]) < 0.01
    assert st["nonzero_zeroed"] == pytest.approx(np.mean(np.abs(x) < 1e-3), abs=1e-4)
    result = bench.run_benchmark({"toy__x": x[:4]}, ebs=(1e-3,), threads=(1,), repeat=1,
                                 lib=LIB, peers=False)
    assert "| other | 0.001 | comet-sz | " in bench.format_error_table(result)
