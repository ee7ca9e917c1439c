"""python -m comet.bench_api: a training step through comet.training.api
against comet-train's step on the same graph, batch and data.

For each model (an artifact folder: a fixture name or a path) and each
compression mode, ROUNDS rounds, each of which runs

  comet-train   FOLDER --data fashion-mnist --batch B --max-steps S
                (its report's step_time_ms_median: the trainer's step, the
                training graph then the optimizer), and
  the API loop  loss = module(x, y); optimizer.step(); module.lazy_reset_grad()
                in this process on shuffled Fashion-MNIST batches of B (sz's
                time depends on the data, as comet-train's), each call
                timed from before module(x, y) to after lazy_reset_grad();
                the first call, which compiles, is left out,

one after the other, so that both see the same machine. Per side the
table gives the median over the rounds of each round's median step; the
overhead is the median over the rounds of the round's API / comet-train
- 1 (a paired figure: on a shared machine a round's two runs see much the
same load, while rounds differ by up to 2x), and the JSON also has the
fastest round of each side. It also times what a second batch size costs (a
DataLoader's last partial batch): the first call at it, which compiles a
second engine, and a call that switches between the two compiled engines
(the training state is copied over). Prints a table and writes JSON.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from comet import data as fmnist
from comet.bench_peers import default_comet_train

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "test" / "fixtures" / "models"


def folder_of(model: str) -> pathlib.Path:
    p = pathlib.Path(model)
    return p if p.is_dir() else FIXTURES / model


def comet_train_step_ms(tool: str, folder: pathlib.Path, batch: int, steps: int,
                        compress: str, env: dict) -> float:
    with tempfile.TemporaryDirectory() as d:
        report = pathlib.Path(d) / "report.json"
        r = subprocess.run([tool, str(folder), "--data", "fashion-mnist",
                            "--data-dir", fmnist.data_dir(), "--batch", str(batch),
                            "--max-steps", str(steps), "--compress", compress,
                            "--eval-samples", "-1", "--quiet", "--report", str(report)],
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"comet-train failed on {folder}: {r.stderr.strip()}")
        return float(json.loads(report.read_text())["step_time_ms_median"])


def api_step_ms(folder: pathlib.Path, batch: int, steps: int, compress: str,
                images: np.ndarray, labels: np.ndarray) -> float:
    from comet.training import api

    state = api.CheckpointState.load_checkpoint(folder / "checkpoint")
    module = api.Module(folder / "training_model.onnx", state, compress=compress)
    optimizer = api.Optimizer(folder / "optimizer_model.onnx", module)
    # Shuffled, as comet-train's loader: sz's time depends on the data.
    batches = list(itertools.islice(
        fmnist.batches(images, labels, batch, shuffle_seed=0), steps + 1))
    times = []
    for i in range(steps + 1):
        x, y = batches[i % len(batches)]
        t0 = time.perf_counter()
        module(x, y)
        optimizer.step()
        module.lazy_reset_grad()
        t1 = time.perf_counter()
        if i > 0:  # the first call compiles
            times.append((t1 - t0) * 1e3)
    return statistics.median(times)


def batch_size_costs(folder: pathlib.Path, batch: int, compress: str,
                     images: np.ndarray, labels: np.ndarray) -> dict:
    """Seconds of the first call at `batch`, of the first call at a second
    size (a compile), and milliseconds of a switch between the two."""
    from comet.training import api

    state = api.CheckpointState.load_checkpoint(folder / "checkpoint")
    module = api.Module(folder / "training_model.onnx", state, compress=compress)
    optimizer = api.Optimizer(folder / "optimizer_model.onnx", module)
    partial = max(1, batch // 2 - 1)
    big, small = (images[:batch], labels[:batch]), (images[:partial], labels[:partial])

    def call(xy):
        t0 = time.perf_counter()
        module(*xy)
        optimizer.step()
        module.lazy_reset_grad()
        return time.perf_counter() - t0

    first = call(big)
    second = call(small)
    steady, switched = [], []
    for _ in range(10):
        steady.append(call(big))
        steady.append(call(big))
        switched.append(call(small))  # switches to the small engine
        switched.append(call(big))    # and back
    small_step = statistics.median(call(small) for _ in range(10))
    # A switch costs what a switching call takes beyond a plain one.
    switch_ms = (statistics.median(switched) -
                 (statistics.median(steady) + small_step) / 2) * 1e3
    return {"first_call_s": first, "partial_batch": partial,
            "second_size_first_call_s": second, "switch_ms": switch_ms,
            "parameters": int(module.get_parameters_size(False))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m comet.bench_api", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="lenet,resnet",
                   help="fixture names or artifact folders, comma-separated")
    p.add_argument("--compress", default="static", help="modes, comma-separated")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=None,
                   help="OMP_NUM_THREADS for both sides (default: as set)")
    p.add_argument("--comet-train", default=None,
                   help="default $COMET_TRAIN or $COMET_BUILD_DIR/bin/comet-train")
    p.add_argument("--json", default="bench_api.json", help="where the JSON goes")
    a = p.parse_args(argv)
    tool = a.comet_train or default_comet_train()
    if not os.path.exists(tool):
        p.error(f"comet-train not found at {tool} (--comet-train, $COMET_BUILD_DIR)")
    if a.batch <= 1 or a.steps <= 0 or a.rounds <= 0:
        p.error("--batch must be at least 2, --steps and --rounds positive")
    if a.threads:
        os.environ["OMP_NUM_THREADS"] = str(a.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    env = dict(os.environ)
    images, labels = fmnist.load_fashion_mnist("train")

    rows = []
    for model in a.models.split(","):
        folder = folder_of(model)
        if not (folder / "training_model.onnx").exists():
            p.error(f"{folder} is no artifact folder (training_model.onnx)")
        for compress in a.compress.split(","):
            tool_ms, api_ms = [], []
            for _ in range(a.rounds):
                tool_ms.append(comet_train_step_ms(tool, folder, a.batch, a.steps,
                                                   compress, env))
                api_ms.append(api_step_ms(folder, a.batch, a.steps, compress,
                                          images, labels))
            row = {"model": model, "compress": compress, "batch": a.batch,
                   "steps": a.steps, "rounds": a.rounds,
                   "comet_train_ms": statistics.median(tool_ms),
                   "api_ms": statistics.median(api_ms),
                   "comet_train_ms_rounds": tool_ms, "api_ms_rounds": api_ms}
            row["overhead"] = statistics.median(
                b / t - 1 for t, b in zip(tool_ms, api_ms))
            row["overhead_of_fastest"] = min(api_ms) / min(tool_ms) - 1
            row.update(batch_size_costs(folder, a.batch, compress, images, labels))
            rows.append(row)

    print(f"{'model':<12} {'compress':<9} {'batch':>5} {'comet-train ms':>15} "
          f"{'API ms':>8} {'overhead':>9} {'compile s':>10} {'2nd size s':>11} "
          f"{'switch ms':>10}")
    for r in rows:
        print(f"{r['model']:<12} {r['compress']:<9} {r['batch']:>5} "
              f"{r['comet_train_ms']:>15.3f} {r['api_ms']:>8.3f} "
              f"{100 * r['overhead']:>+8.1f}% {r['first_call_s']:>10.2f} "
              f"{r['second_size_first_call_s']:>11.2f} {r['switch_ms']:>10.2f}")
    result = {"threads": os.environ.get("OMP_NUM_THREADS"), "rows": rows}
    pathlib.Path(a.json).write_text(json.dumps(result, indent=1) + "\n")
    print(f"JSON: {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
