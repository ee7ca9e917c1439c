"""Nothing is lost when a comet-train run dies.

comet-train trains LeNet on Fashion-MNIST with a checkpoint after every step
(--checkpoint-every 1) and is killed with SIGKILL once its checkpoint has
reached a step drawn by a seeded RNG. Whatever the kill interrupted, the
folder holds one complete checkpoint (ONNX Runtime reads it) and nothing
else; resumed from it, the run ends on the same bytes as a run that was never
interrupted: parameters, optimizer state, position, random stream, histories
and, with --compress adaptive, the bound tuner's state. The reports agree on
the losses, the evaluations and the bounds.
"""
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from comet import ort_training
from comet_tools import ROOT, tool

FMNIST = "/usr/share/datasets/fashion-mnist"
LENET = ROOT / "test" / "fixtures" / "models" / "lenet"
STEPS = 40

pytestmark = pytest.mark.skipif(not os.path.isdir(FMNIST),
                                reason="dataset-fashion-mnist not installed")

MODES = {
    "static": ["--compress", "static"],
    # Retunes every 3 steps over windows of 2: the tuner's state changes
    # between most checkpoints.
    "adaptive": ["--compress", "adaptive", "--retune-interval", "3",
                 "--stats-window", "2"],
}


def args(mode, out, *extra):
    return [tool("comet-train"), str(LENET), "--data", "fashion-mnist",
            "--data-dir", FMNIST, "--batch", "32", "--seed", "5",
            "--max-steps", str(STEPS), "--eval-samples", "256",
            "--eval-interval", "6", "--quiet", "--report",
            str(out / "report.json"), "--save-checkpoint", str(out / "ckpt"),
            "--checkpoint-every", "1", *MODES[mode], *extra]


def env():
    # Idle OpenMP threads sleep: the watcher below needs the CPU to react.
    return dict(os.environ, OMP_WAIT_POLICY="passive")


def ort_state(path):
    """The checkpoint as ONNX Runtime reads it."""
    return ort_training.load("api").CheckpointState.load_checkpoint(str(path))


def saved_step(path, snapshot):
    """The step of the checkpoint at `path`, or -1 while there is none. The
    file is read through one descriptor (one version of it, however often
    it is replaced meanwhile) and parsed from a copy at `snapshot`: ONNX
    Runtime's loader may size and read the path separately."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return -1
    snapshot.write_bytes(data)
    return ort_state(snapshot).properties["comet.step"]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_killed_run_resumes_exactly(mode, tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    whole.mkdir()
    killed.mkdir()
    r = subprocess.run(args(mode, whole), env=env(), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr

    # The step to kill at: the same in every run of the test.
    kill_at = random.Random(f"test_resume/{mode}").randint(3, 20)
    # At low priority, so that the watcher sees each checkpoint in time.
    p = subprocess.Popen(args(mode, killed), env=env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         preexec_fn=lambda: os.nice(19))
    try:
        deadline = time.monotonic() + 240
        while saved_step(killed / "ckpt", tmp_path / "snapshot") < kill_at:
            assert p.poll() is None, (
                f"comet-train ended before step {kill_at}: "
                f"{p.stderr.read().decode()}")
            assert time.monotonic() < deadline, "no checkpoint in time"
            time.sleep(0.001)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGKILL, (
        f"comet-train finished before the kill (step {kill_at})")

    # One complete checkpoint and nothing else: no temporary file, no half
    # written one.
    assert sorted(f.name for f in killed.iterdir()) == ["ckpt"]
    step = saved_step(killed / "ckpt", tmp_path / "snapshot")
    assert kill_at <= step < STEPS, step

    r = subprocess.run(args(mode, killed, "--resume", str(killed / "ckpt")),
                       env=env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(f.name for f in killed.iterdir()) == ["ckpt", "report.json"]

    # The same bytes: parameters, AdamW's moments and step, and the run's
    # comet.* fields.
    assert (killed / "ckpt").read_bytes() == (whole / "ckpt").read_bytes()
    a, b = ort_state(whole / "ckpt"), ort_state(killed / "ckpt")
    assert a.properties["comet.step"] == STEPS
    for name, param in a.parameters:
        np.testing.assert_array_equal(param.data, b.parameters[name].data)

    ra = json.loads((whole / "report.json").read_text())
    rb = json.loads((killed / "report.json").read_text())
    assert rb["resumed_from"]["step"] == step
    for key in ("steps", "final_loss", "loss_history", "eval_history",
                "test_accuracy", "test_loss", "slots"):
        assert ra[key] == rb[key], key
    if mode == "adaptive":
        assert ra["tuner"]["retunes"] == rb["tuner"]["retunes"] > 0
