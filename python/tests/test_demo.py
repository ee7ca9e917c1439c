"""python -m comet.demo (scripts/demo-train.sh, the Quick start's main job):
the memory table's ratios and the accuracy line's paired interval on
figures with known answers, and a small real run through bench_peers and
fidelity (ResNet-18 at 32x32, batch 2; LeNet 2 seeds of 20 steps).

The real run needs comet-train, the export environment and Fashion-MNIST;
without them it skips, and fails under CI=true (conftest.py)."""
import json
import os

import pytest
from comet_tools import tool
from test_bench_peers import torch_python

from comet import demo, fidelity

MIB = 1 << 20


def run(side, peak, saved=None, stored=None, ms=100.0):
    return {"side": side, "peak_bytes_allocator": peak, "saved_bytes": saved,
            "saved_bytes_stored": stored, "step_cpu_ms": ms}


def test_memory_rows_are_peaks_over_eager_and_checkpoint():
    w = {"runs": {
        "pytorch-eager": run("pytorch", 400 * MIB, 300 * MIB),
        "pytorch-checkpoint": run("pytorch", 320 * MIB),
        "comet-none": run("comet", 480 * MIB, 250 * MIB, 250 * MIB),
        "comet-static": run("comet", 200 * MIB, 250 * MIB, 50 * MIB),
    }}
    rows = {r[0]: r for r in demo.memory_rows(w)}
    assert rows["pytorch-eager"][2:4] == (1.0, 1.25)
    assert rows["pytorch-checkpoint"][2:4] == (0.8, 1.0)
    assert rows["comet-none"][2:4] == (1.2, 1.5)
    assert rows["comet-static"][2:4] == (0.5, 0.625)
    assert rows["comet-static"][4] == "250.0 -> 50.0"
    assert rows["pytorch-checkpoint"][4] == "-"
    text = demo.memory_table(w)
    assert "0.50x" in text and "0.62x" in text and "200.0" in text
    # A failed peer leaves its ratios out, not the other runs.
    w["runs"]["pytorch-checkpoint"] = {"error": "boom"}
    rows = {r[0]: r for r in demo.memory_rows(w)}
    assert rows["comet-static"][2:4] == (0.5, None)
    assert rows["pytorch-checkpoint"][1] is None
    assert "failed" in demo.memory_table(w)


def acc_run(config, seed, acc):
    return {"model": "lenet", "config": config, "seed": seed,
            "test_accuracy": acc, "final_loss": 0.5,
            "compression_ratio": 1.0, "eval_history": []}


def test_accuracy_line_is_the_paired_t_interval():
    """Changes of +0.5, -0.1, +0.5 pp over 3 seeds: mean +0.3, sd
    sqrt(0.12), half-width t(0.975, 2) * sd / sqrt(3) = 4.302653 * 0.34641 /
    1.73205 = 0.860531, so [-0.56, +1.16]; the seeds pair by number, not by
    order."""
    runs = [acc_run("none", 1, 0.800), acc_run("none", 2, 0.810),
            acc_run("none", 3, 0.820), acc_run("static", 3, 0.825),
            acc_run("static", 1, 0.805), acc_run("static", 2, 0.809)]
    summary = fidelity.analyse(runs, ["none", "static"])
    ch = next(r for r in summary if r["config"] == "static")["accuracy_change_pp"]
    assert ch["ci"] == pytest.approx([0.3 - 0.860531, 0.3 + 0.860531], abs=1e-5)
    lines = demo.accuracy_lines(summary, runs)
    assert lines[1].split() == ["1", "80.00", "80.50", "+0.50"]
    assert lines[2].split() == ["2", "81.00", "80.90", "-0.10"]
    assert lines[-1].endswith("mean over 3 seeds: +0.30 pp, 95% CI "
                              "[-0.56, +1.16] pp (Student t, 2 degrees of "
                              "freedom)")


def test_small_demo_runs_both_parts(tmp_path, capsys):
    if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        pytest.skip("dataset-fashion-mnist is not installed")
    py, ct = torch_python(), tool("comet-train")
    out = tmp_path / "demo"
    assert demo.main(["--image-size", "32", "--batch", "2", "--seeds", "1",
                      "2", "--steps", "20", "--eval-samples", "500",
                      "--threads", "1", "--out", str(out), "--comet-train",
                      ct, "--torch-python", py]) == 0
    text = capsys.readouterr().out
    peers = json.loads((out / "peers" / "bench_peers.json").read_text())
    (w,) = peers["workloads"]
    assert (w["model"], w["image_size"], w["batch"]) == ("resnet18", 32, 2)
    assert list(w["runs"]) == demo.MEMORY_RUNS
    # The printed peaks and ratios are the runs' own.
    eager = w["runs"]["pytorch-eager"]["peak_bytes_allocator"]
    ckpt = w["runs"]["pytorch-checkpoint"]["peak_bytes_allocator"]
    st = w["runs"]["comet-static"]["peak_bytes_allocator"]
    line = next(s for s in text.splitlines() if s.startswith("comet-static "))
    assert line.split()[1:4] == [f"{st / MIB:.1f}", f"{st / eager:.2f}x",
                                 f"{ckpt and st / ckpt:.2f}x"]
    acc = json.loads((out / "accuracy" / "fidelity.json").read_text())
    assert sorted((r["config"], r["seed"]) for r in acc["runs"]) == [
        ("none", 1), ("none", 2), ("static", 1), ("static", 2)]
    assert all(r["steps"] == 20 for r in acc["runs"])
    ch = next(r for r in acc["summary"]
              if r["config"] == "static")["accuracy_change_pp"]
    assert (f"mean over 2 seeds: {ch['mean']:+.2f} pp, 95% CI "
            f"[{ch['ci'][0]:+.2f}, {ch['ci'][1]:+.2f}] pp") in text
    assert "(optimizer: AdamWOptimizer, lr 0.001" in text
    assert (out / "training.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
