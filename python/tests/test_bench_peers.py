"""python -m comet.bench_peers (docs/benchmarks.md, "COMET against
PyTorch"): the peak measurements on allocations of known size, in process
(comet.peak_rss.Region, PyTorch's side) and from outside (Monitor,
comet-train's side); a real short run on the cnn fixture through real
comet-train and real PyTorch (table, JSON, figure, the ratios from the
same run's peers); resnet18 exported at another input size and trained on
both sides; a small gpt (int64 token ids) exported with --gpt's arguments
and trained by every run; the errors for bad arguments.

PyTorch runs in the export environment ($COMET_EXPORT_PYTHON, default
.venv-export/bin/python). Without it or comet-train the tests skip, and
fail under CI=true (conftest.py)."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
from comet_tools import ROOT, tool

from comet import bench_peers, peak_rss

EXPORT_PY = pathlib.Path(os.environ.get("COMET_EXPORT_PYTHON",
                                        ROOT / ".venv-export" / "bin" / "python"))
PYTHON = str(ROOT / "python")
MIB = 1 << 20


def torch_python():
    if not EXPORT_PY.exists():
        pytest.skip(f"{EXPORT_PY} not found: scripts/setup.sh makes .venv-export")
    r = subprocess.run([str(EXPORT_PY), "-c", "import torch, torchvision"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        pytest.skip(f"{EXPORT_PY} cannot import torch: {r.stderr[-300:]}")
    return str(EXPORT_PY)


def env(threshold=True):
    e = dict(os.environ, PYTHONPATH=PYTHON, PYTHONWARNINGS="ignore")
    e.pop("MALLOC_MMAP_THRESHOLD_", None)
    if threshold:
        e.update(peak_rss.ENV)
    return e


# --- The measurement on known answers ---------------------------------------

REGION = textwrap.dedent("""
    import json, numpy as np
    from comet import peak_rss
    keep = np.ones((48 << 20) // 8)          # live before and after
    w = np.ones((160 << 20) // 8); del w     # a higher mark before
    for _ in range(2):                       # made and freed before
        w = np.ones((40 << 20) // 8); del w
    with peak_rss.Region() as r:
        a = np.ones((40 << 20) // 8)
        b = np.ones((24 << 20) // 8)
        del a
        c = np.ones((8 << 20) // 8)
        del b, c
    print(json.dumps({"peak": r.peak_above_start}))
""")


def test_region_measures_a_known_peak():
    """40 + 24 MiB live together, then 24 + 8: the region's peak is 64 MiB
    above its start, whatever is live outside it (48 MiB) or was made and
    freed before it (160 MiB once, 40 MiB twice)."""
    r = subprocess.run([sys.executable, "-c", REGION], capture_output=True,
                       text=True, env=env(), timeout=60)
    assert r.returncode == 0, r.stderr
    peak = json.loads(r.stdout)["peak"]
    assert abs(peak - 64 * MIB) <= 0.02 * 64 * MIB, peak / MIB


def test_torch_region_and_allocator_trace_on_a_known_peak():
    """PyTorch's measurement (comet.torch_peer --known): tensors of 64 and
    96 MiB live together, the 64 freed, 32 made, and so on; the peak is
    160 MiB. The RSS method is within 1%, the profiler's allocator trace
    exact; the same for blocks of 16 and 8 MiB (below glibc's largest
    dynamic mmap threshold, 32 MiB). The worker does not measure without
    MALLOC_MMAP_THRESHOLD_."""
    py = torch_python()

    def known(sizes, tmp):
        out = tmp / "k.json"
        cmd = [py, "-m", "comet.torch_peer", "--known", sizes, "--json",
               str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env(),
                           timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(out.read_text())

    import tempfile
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        k = known("64,96,-2,32,-1,16", tmp)
        assert k["expected_bytes"] == 160 * MIB and k["mmap_threshold_set"]
        assert k["allocator_peak_bytes"] == k["expected_bytes"]
        assert abs(k["rss_peak_bytes"] - k["expected_bytes"]) \
            <= 0.01 * k["expected_bytes"], k
        small = known("16,8,-2,16,-1,4", tmp)
        assert small["allocator_peak_bytes"] == 24 * MIB
        assert abs(small["rss_peak_bytes"] - 24 * MIB) <= 0.02 * 24 * MIB, small
        # The worker refuses to measure without it.
        r = subprocess.run([py, "-m", "comet.torch_peer", "--known", "8",
                            "--json", str(tmp / "x.json")], capture_output=True,
                           text=True, env=env(False), timeout=120)
        assert r.returncode == 2 and "MALLOC_MMAP_THRESHOLD_" in r.stderr
        assert "Traceback" not in r.stderr


STEPS = textwrap.dedent("""
    import time, numpy as np
    keep = np.ones((32 << 20) // 8)          # the persistent state
    w = np.ones((160 << 20) // 8); del w     # before the start: not counted
    print("training", flush=True)
    print("  compress x", flush=True)        # bench_peers.ARM_MARKER
    for step in range(8):
        a = np.ones((40 << 20) // 8)
        b = np.ones((24 << 20) // 8)
        time.sleep(0.03)
        del a, b
        time.sleep(0.03)                     # between steps
    print("steps 8  final loss 0", flush=True)
    time.sleep(0.1)
    del keep                                 # after the end: not counted
    z = np.ones((128 << 20) // 8)
""")


def test_monitor_measures_a_known_step_peak_from_outside(tmp_path):
    """The external measurement used for comet-train: a child that keeps 32
    MiB and makes 40 + 24 MiB in each of 8 steps. Between the markers the
    high-water mark above the RSS between steps is 64 MiB; 160 MiB made and
    freed before the start marker and 128 MiB made after the end marker are
    not counted."""
    mon = peak_rss.Monitor([sys.executable, "-c", STEPS], env=env(),
                           arm_marker=bench_peers.ARM_MARKER,
                           end_marker=bench_peers.END_MARKER, timeout=60)
    assert mon.run(tmp_path / "err") == 0, (tmp_path / "err").read_text()
    res = mon.result()
    assert res is not None and res["samples"] > 20, res
    step = res["hwm"] - res["floor"]
    assert abs(step - 64 * MIB) <= 0.03 * 64 * MIB, step / MIB
    # No marker: no result.
    mon = peak_rss.Monitor([sys.executable, "-c", "print('x')"], env=env(),
                           arm_marker=b"never", end_marker=b"never")
    assert mon.run(tmp_path / "err2") == 0 and mon.result() is None


# --- Real runs --------------------------------------------------------------

def test_short_run_table_json_and_ratios(tmp_path, capsys):
    """cnn (the 28x28 fixture), batch 8, 2 measured steps, every run: the
    table has a row per run, the JSON every figure, the ratios are this
    run's figures over this run's pytorch-eager and comet-none, and the
    figure is drawn."""
    py, ct = torch_python(), tool("comet-train")
    js, png = tmp_path / "p.json", tmp_path / "p.png"
    argv = ["--models", "cnn", "--batch", "8", "--steps", "2",
            "--threads", "1", "--out", str(tmp_path / "out"), "--json",
            str(js), "--png", str(png), "--comet-train", ct,
            "--torch-python", py]
    assert bench_peers.main(argv) == 0
    out = capsys.readouterr()
    for run in bench_peers.RUNS:
        assert f"| cnn | 28 | 8 | {run} |" in out.out
        assert f"cnn 28x28 b8 {run}: peak" in out.err  # the progress line
    res = json.loads(js.read_text())
    (w,) = res["workloads"]
    assert (w["model"], w["image_size"], w["batch"]) == ("cnn", 28, 8)
    runs = w["runs"]
    assert list(runs) == bench_peers.RUNS
    eager, none = runs["pytorch-eager"], runs["comet-none"]
    for name, r in runs.items():
        assert "error" not in r, r
        assert r["peak_bytes_rss"] > r["live_between_steps"] > 0
        assert r["peak_bytes_allocator"] > r["live_between_steps"]
        assert r["step_time_ms"] > 0 and r["step_cpu_ms"] > 0
        assert len(r["timeline"]) > 10
        # Ratios from this invocation's peers.
        assert r["vs"]["peak_bytes_rss"] == pytest.approx(
            r["peak_bytes_rss"] / eager["peak_bytes_rss"])
        assert r["vs"]["peak_bytes_allocator"] == pytest.approx(
            r["peak_bytes_allocator"] / eager["peak_bytes_allocator"])
        assert r["vs"]["step_cpu_ms_vs_none"] == pytest.approx(
            r["step_cpu_ms"] / none["step_cpu_ms"])
    assert eager["vs"]["peak_bytes_rss"] == 1.0
    # PyTorch: AdamW with the folder's hyper-parameters, the same live
    # state in both modes; saved tensors counted in eager mode only.
    opt = eager["worker"]["optimizer"]
    assert opt["eps"] == pytest.approx(w["optimizer"]["eps"])
    assert eager["saved_bytes"] > 0 and runs["pytorch-checkpoint"]["saved_bytes"] is None
    assert eager["peak_phase"] in ("forward", "backward", "optimizer")
    # The allocator and RSS methods see the same PyTorch step (within 1 MiB
    # at this size: small blocks and page rounding).
    assert abs(eager["peak_bytes_rss"] - eager["peak_bytes_allocator"]) < MIB
    # COMET: the allocator's figures and the prediction from the report.
    for name in ("comet-none", "comet-static", "comet-adaptive"):
        r = runs[name]
        rep = json.loads(pathlib.Path(r["report"]).read_text())
        assert r["peak_bytes_allocator"] == rep["peak_bytes"]
        assert r["vs"]["predicted_over_measured"] == pytest.approx(
            rep["predicted_peak_bytes"] / rep["peak_bytes"])
        assert r["rss"]["samples"] > 0
        assert rep["steps"] == 3 and rep["batch"] == 8
    # Uncompressed, ReluGrad reads recomputed values too, so comet-none's
    # graph keeps fewer activations than comet-static's (whose ReLU masks
    # stay, as bits): what none would compress is at most what static does.
    assert runs["comet-static"]["saved_bytes_stored"] < \
        runs["comet-static"]["saved_bytes"]
    assert 0 < none["saved_bytes_stored"] <= runs["comet-static"]["saved_bytes"]
    # The goals: peaks on the allocator figures (RSS beside), step times on
    # CPU time (wall beside), from this run's peers.
    goals = {g["goal"]: g for g in w["goals"]}
    g = goals["cnn 28x28: comet-static peak <= 0.4x pytorch-eager"]
    st = runs["comet-static"]
    x = st["peak_bytes_allocator"] / eager["peak_bytes_allocator"]
    xr = st["peak_bytes_rss"] / eager["peak_bytes_rss"]
    assert g["figure"] == f"{x:.3f}x (RSS {xr:.3f}x)" and g["met"] == (x <= 0.4)
    g = goals["cnn 28x28: comet-static peak < pytorch-checkpoint"]
    x = st["peak_bytes_allocator"] / runs["pytorch-checkpoint"]["peak_bytes_allocator"]
    assert g["met"] == (x < 1)
    g = goals["cnn 28x28: comet-adaptive step time <= 1.1x comet-none"]
    x = runs["comet-adaptive"]["step_cpu_ms"] / none["step_cpu_ms"]
    assert g["figure"].startswith(f"CPU {x:.3f}x") and g["met"] == (x <= 1.1)
    assert len(goals) == 3 + 2 + 3
    assert png.stat().st_size > 10000
    # --replot draws the figure again from the JSON, running nothing.
    again = tmp_path / "again.png"
    assert bench_peers.main(["--replot", str(js), "--models", "cnn", "--png",
                             str(again), "--comet-train", "/nonexistent"]) == 0
    assert again.stat().st_size > 10000
    assert bench_peers.main(["--replot", str(js), "--models", "transformer",
                             "--png", str(tmp_path / "none.png")]) == 1


def test_image_size_exports_and_trains_on_both_sides(tmp_path, capsys):
    """resnet18 at 32x32: exported at that size (the ONNX input is
    batch x 1 x 32 x 32), trained by PyTorch and comet-train."""
    import onnx

    py, ct = torch_python(), tool("comet-train")
    js = tmp_path / "p.json"
    argv = ["--models", "resnet18", "--image-size", "32", "--batch", "4",
            "--steps", "2", "--threads", "1", "--runs",
            "pytorch-eager,comet-none", "--out", str(tmp_path / "out"),
            "--json", str(js), "--comet-train", ct, "--torch-python", py]
    assert bench_peers.main(argv) == 0
    assert "exporting resnet18 at 32x32 into" in capsys.readouterr().err
    (w,) = json.loads(js.read_text())["workloads"]
    assert w["image_size"] == 32 and set(w["runs"]) == {"pytorch-eager",
                                                         "comet-none"}
    m = onnx.load(os.path.join(w["artifacts"], "training_model.onnx"),
                  load_external_data=False)
    dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    assert dims[1:] == [1, 32, 32]
    for r in w["runs"].values():
        assert "error" not in r and r["peak_bytes_allocator"] > 0
    # The weights and optimizer state of ResNet-18 (11.2M parameters, 4
    # bytes, AdamW's two moments) are live between steps on both sides.
    params = 11175370 * 4
    assert w["runs"]["pytorch-eager"]["live_between_steps"] > 3 * params
    assert w["runs"]["comet-none"]["live_between_steps"] > 3 * params
    # A second run reuses the export.
    assert bench_peers.main(argv + ["--runs", "comet-none"]) == 0
    err = capsys.readouterr().err
    assert "[1/1]" in err and "exporting" not in err


# --- Arguments --------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--models", "vgg"], "unknown model 'vgg'"),
    (["--image-size", "8"], "--image-size: '8' is not a size"),
    (["--image-size", "big"], "--image-size: 'big'"),
    (["--steps", "1"], "--steps must be at least 2"),
    (["--batch", "0"], "--batch must be at least 1"),
    (["--runs", "comet-fast"], "--runs: unknown ['comet-fast']"),
    (["--gpt", "layers"], "--gpt: 'layers' is not KEY=NUMBER"),
    (["--gpt", "seq_len=0.5"], "--gpt: seq_len must be a positive integer"),
    (["--models", ","], "--models: empty list"),
    (["--comet-train", "/nonexistent/comet-train", "--runs", "comet-none"],
     "comet-train not found at /nonexistent/comet-train"),
    (["--torch-python", "/nonexistent/python", "--runs", "pytorch-eager"],
     "/nonexistent/python cannot import torch"),
])
def test_bad_arguments_are_usage_errors(args, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        bench_peers.main(args + ["--out", str(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_gpt_exports_and_trains_on_both_sides(tmp_path, capsys):
    """A small gpt (1 block, d_model 32, 2 heads, 16 positions; --gpt
    overrides the bench size), batch 2, every run: exported with those
    arguments (int64 token ids [batch, 16]), trained on token sequences by
    PyTorch (eager, and checkpointed per block) and comet-train, the ratios
    and the gpt's goal (0.5x eager) from this run's peers."""
    import onnx

    py, ct = torch_python(), tool("comet-train")
    js = tmp_path / "p.json"
    argv = ["--models", "gpt", "--gpt", "layers=1,d_model=32,heads=2,seq_len=16",
            "--batch", "2", "--steps", "2", "--threads", "1", "--out",
            str(tmp_path / "out"), "--json", str(js), "--comet-train", ct,
            "--torch-python", py]
    assert bench_peers.main(argv) == 0
    out = capsys.readouterr()
    assert "exporting gpt at seq 16 into" in out.err
    for run in bench_peers.RUNS:
        assert f"| gpt | seq 16 | 2 | {run} |" in out.out
        assert f"gpt seq 16 b2 {run}: peak" in out.err
    (w,) = json.loads(js.read_text())["workloads"]
    assert (w["model"], w["image_size"]) == ("gpt", 16)
    assert w["model_args"] == {"layers": 1, "d_model": 32, "heads": 2,
                               "seq_len": 16}
    m = onnx.load(os.path.join(w["artifacts"], "training_model.onnx"),
                  load_external_data=False)
    inp = m.graph.input[0]
    assert inp.type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert [d.dim_value for d in inp.type.tensor_type.shape.dim][1:] == [16]
    runs = w["runs"]
    # 29,664 parameters (test_torch_models.py), 4 bytes, and AdamW's two
    # moments live between steps on both sides.
    state = 3 * 29664 * 4
    for name, r in runs.items():
        assert "error" not in r, r
        assert r["live_between_steps"] >= state
        assert r["peak_bytes_allocator"] > r["live_between_steps"]
        # The same weights (seed 0) on next-id sequences over 256 ids, the
        # mean over all tokens: the first loss is near ln(256) = 5.55 on
        # both sides (measured: PyTorch 5.88, COMET 5.77; the batches
        # differ).
        assert abs(r["losses"][0] - 5.545) < 0.5, (name, r["losses"])
        assert abs(r["losses"][0] - runs["comet-none"]["losses"][0]) < 0.25
    eager = runs["pytorch-eager"]
    assert eager["worker"]["image_size"] == 16 and eager["saved_bytes"] > 0
    # Checkpointing recomputes the same blocks with the same Dropout masks.
    assert runs["pytorch-checkpoint"]["losses"] == eager["losses"]
    static = runs["comet-static"]
    assert 0 < static["saved_bytes_stored"] < static["saved_bytes"]
    rep = json.loads(pathlib.Path(static["report"]).read_text())
    assert rep["steps"] == 3 and rep["batch"] == 2
    goals = {g["goal"]: g for g in w["goals"]}
    g = goals["gpt seq 16: comet-static peak <= 0.5x pytorch-eager"]
    x = static["peak_bytes_allocator"] / eager["peak_bytes_allocator"]
    assert g["met"] == (x <= 0.5) and g["figure"].startswith(f"{x:.3f}x")
