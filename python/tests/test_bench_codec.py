"""The codec benchmark's pieces on a tiny synthetic array (no timing checks)."""
import numpy as np
import pytest

bench = pytest.importorskip("comet.bench_codec")

try:
    LIB = bench.CodecLib()
except (FileNotFoundError, OSError):  # the library is not built in this tree
    LIB = None

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
    assert "| post_relu | 0.01 |" in bench.format_vs_sz3(vs)


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
