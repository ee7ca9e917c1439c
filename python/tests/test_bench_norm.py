"""comet.bench_norm: one bound per tensor against the value stored
normalized, on the inputs of a fixture model's BatchNorms and LayerNorms."""
import json

import numpy as np
import onnx
import pytest
from comet_tools import codec_lib, tool

bench = pytest.importorskip("comet.bench_norm")

LIB = codec_lib()

needs_lib = pytest.mark.skipif(LIB is None, reason="libCometCodec.so not built")


def test_norm_inputs_finds_batch_and_layer_norms():
    from comet.activations import MODELS_DIR
    cnn = bench.norm_inputs(onnx.load(str(MODELS_DIR / "cnn" / "training_model.onnx")).graph)
    assert len(cnn) == 2 and all(w["axis"] is None for w in cnn)
    assert all(w["op"] in ("BatchNormalization", "BatchNormInternal") for w in cnn)
    tr = bench.norm_inputs(onnx.load(str(MODELS_DIR / "transformer" / "training_model.onnx")).graph)
    assert tr and all(w["op"] == "LayerNormalization" and w["axis"] is not None for w in tr)
    lenet = bench.norm_inputs(onnx.load(str(MODELS_DIR / "lenet" / "training_model.onnx")).graph)
    assert lenet == []


def test_inv_std_per_channel_and_per_row():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (4, 3, 5, 5)).astype(np.float32) * np.array([1, 10, 100], np.float32)[None, :, None, None]
    inv = bench.inv_std(x, None, 1e-5)
    assert inv.shape == (1, 3, 1, 1)
    for c in range(3):
        assert inv[0, c, 0, 0] == pytest.approx(1 / np.sqrt(x[:, c].astype(np.float64).var() + 1e-5), rel=1e-6)
    rows = bench.inv_std(x.reshape(4, 3, 25), -1, 1e-5)
    assert rows.shape == (4, 3, 1)
    assert rows[2, 1, 0] == pytest.approx(1 / np.sqrt(x[2, 1].astype(np.float64).var() + 1e-5), rel=1e-6)


@needs_lib
def test_normalized_storage_gains_where_channels_differ_and_keeps_the_target():
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (8, 4, 16, 16)).astype(np.float32)
    # One channel at a tenth of the others' spread: one bound is set by it.
    x[:, 0] *= 0.1
    inv = bench.inv_std(x, None, 1e-5)
    r = bench.measure(LIB, x, inv, 0.05)
    assert r["max_xhat_err_uniform"] <= 0.05 * (1 + 1e-5)
    assert r["max_xhat_err_normalized"] <= 0.05 * (1 + 1e-5) + 1e-6
    # Three channels' bounds 10x looser: about log2(10) bits fewer each.
    assert r["gain"] > 1.3
    same = np.ascontiguousarray(np.repeat(x[:, :1] * 10, 4, axis=1))
    r2 = bench.measure(LIB, same, bench.inv_std(same, None, 1e-5), 0.05)
    assert r2["gain"] == pytest.approx(1.0, abs=0.05)


@needs_lib
def test_codec_bounds_per_channel_gain_as_normalized_storage_does():
    """The codec's per-channel streams: every xhat within t, with no float
    slack (each element within its own channel's bound), and on 16x16
    channels (no block spans two) about the gain of the value stored
    normalized; equal channels gain nothing."""
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (8, 4, 16, 16)).astype(np.float32)
    x[:, 0] *= 0.1
    inv = bench.inv_std(x, None, 1e-5)
    r = bench.measure(LIB, x, inv, 0.05, per_channel=True)
    assert r["max_xhat_err_channels"] <= 0.05 * (1 + 1e-6)
    assert r["gain_channels"] > 1.3
    assert r["gain_channels"] == pytest.approx(r["gain"], rel=0.05)
    same = np.ascontiguousarray(np.repeat(x[:, :1] * 10, 4, axis=1))
    r2 = bench.measure(LIB, same, bench.inv_std(same, None, 1e-5), 0.05,
                       per_channel=True)
    assert r2["gain_channels"] == pytest.approx(1.0, abs=0.02)


@needs_lib
def test_cli_on_the_cnn_fixture(tmp_path, capsys):
    out = tmp_path / "n.json"
    assert bench.main(["--models", "cnn", "--targets", "0.1", "--batch", "16",
                       "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert len(result["rows"]) == 2 and len(result["totals"]) == 1
    t = result["totals"][0]
    assert t["model"] == "cnn" and t["inputs"] == 2 and t["gain"] > 1.0
    assert t["gain_channels"] > 1.0
    for r in result["rows"]:
        assert r["max_xhat_err_normalized"] <= 0.1 * (1 + 1e-4)
        assert r["max_xhat_err_channels"] <= 0.1 * (1 + 1e-6)
    printed = capsys.readouterr().out
    assert "| cnn | initial | 2 | 0.1 |" in printed


def test_refusals(capsys):
    assert bench.main(["--models", "lenet", "--targets", "0.1"]) == 2
    assert "no BatchNorm or LayerNorm" in capsys.readouterr().err
    assert bench.main(["--models", "no-such-model"]) == 2
    assert "no training_model.onnx" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--targets", "0"])


@needs_lib
def test_trained_weights_come_from_comet_train(tmp_path):
    """--trained-steps: comet-train's checkpoint after N steps is what ORT
    runs, so the normalization inputs differ from the initial weights'."""
    import os
    if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        pytest.skip("dataset-fashion-mnist is not installed")
    result = bench.run(["cnn"], [0.1], LIB, batch=16, trained_steps=3,
                       comet_train=tool("comet-train"))
    by = {}
    for r in result["rows"]:
        by.setdefault(r["weights"], {})[r["value"]] = r
    assert set(by) == {"initial", "3 steps"}
    assert by["initial"].keys() == by["3 steps"].keys()
    assert any(by["initial"][v]["bytes_uniform"] != by["3 steps"][v]["bytes_uniform"]
               for v in by["initial"])
    assert {t["weights"] for t in result["totals"]} == {"initial", "3 steps"}
