"""The quick-start demo (scripts/demo-train.sh): the headline, measured.

    python -m comet.demo [--image-size 112] [--batch 64] [--seeds 1 2 3 4 5]
        [--steps 937] [--out out/demo]

Two parts, each one of the benchmarks of docs/benchmarks.md run small:

1. Memory (comet.bench_peers, its runs and measurements): torchvision's
   ResNet-18 with a 1-channel stem (comet.torch_models.resnet18, exported
   at --image-size) trained a few steps on synthetic images, batch
   --batch, AdamW on both sides, by PyTorch eager, PyTorch with
   torch.utils.checkpoint around each of layer1..layer4, and comet-train
   with --compress none and static (its default). It prints each run's
   whole-step peak (allocator: PyTorch's traced by torch.profiler, COMET's
   exact) and its ratio to eager and to checkpointing.
2. Accuracy (comet.fidelity, its runs and paired statistics): the LeNet
   fixture on Fashion-MNIST, --steps steps of batch 64 per run (937: one
   epoch), the folder's optimizer (AdamW, comet-train's default), all
   10000 test images, once per seed with --compress none and once with
   --compress static. One seed is one data order and the same initial
   weights, so each static run is paired with the none run of its seed; it
   prints the mean paired change of test accuracy with its 95% Student-t
   interval (n - 1 degrees of freedom).

It also draws OUT/training.png (loss curves and memory timelines of the
first seed's pair, comet.plot_training). Every figure printed is read from
the runs' reports; the full tables and JSON are in OUT/peers and
OUT/accuracy.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import sys
import time

from comet import bench_peers, fidelity

MIB = 1 << 20
MEMORY_RUNS = ["pytorch-eager", "pytorch-checkpoint", "comet-none",
               "comet-static"]
MODEL = "lenet"


def memory_rows(workload):
    """(run, peak bytes, x eager, x checkpoint, saved bytes text, step CPU
    ms) per run of a bench_peers workload, on the allocator peaks; a ratio
    whose peer failed is None."""
    runs = workload["runs"]

    def peak(name):
        r = runs.get(name)
        return None if r is None or "error" in r else r["peak_bytes_allocator"]

    eager, ckpt = peak("pytorch-eager"), peak("pytorch-checkpoint")
    rows = []
    for name, r in runs.items():
        if "error" in r:
            rows.append((name, None, None, None, "failed", None))
            continue
        p = r["peak_bytes_allocator"]
        saved = ("-" if r["saved_bytes"] is None
                 else f"{r['saved_bytes'] / MIB:.1f}")
        if r["side"] == "comet":
            saved += f" -> {r['saved_bytes_stored'] / MIB:.1f}"
        rows.append((name, p, p / eager if eager else None,
                     p / ckpt if ckpt else None, saved, r["step_cpu_ms"]))
    return rows


def memory_table(workload):
    def f(x, spec, none="-"):
        return none if x is None else format(x, spec)

    hdr = (f"{'run':20} {'peak MiB':>9} {'x eager':>8} {'x checkpoint':>13}"
           f"  {'saved activations MiB':>22} {'step CPU ms':>12}")
    lines = [hdr, "-" * len(hdr)]
    for name, p, xe, xc, saved, ms in memory_rows(workload):
        lines.append(f"{name:20} {f(p and p / MIB, '9.1f', 'failed'):>9} "
                     f"{f(xe, '7.2f') + ('x' if xe else ''):>8} "
                     f"{f(xc, '12.2f') + ('x' if xc else ''):>13}  "
                     f"{saved:>22} {f(ms, '12.0f'):>12}")
    return "\n".join(lines)


def accuracy_lines(summary, runs):
    """The per-seed accuracies of none and static and the paired change
    (comet.fidelity's analyse() rows and runs)."""
    acc = {(r["config"], r["seed"]): 100 * r["test_accuracy"] for r in runs}
    st = next(r for r in summary if r["config"] == "static")
    ch = st["accuracy_change_pp"]
    lines = [f"{'seed':>4} {'none %':>8} {'static %':>9} {'change pp':>10}"]
    for s, d in zip(st["seeds"], ch["diffs"]):
        lines.append(f"{s:4d} {acc[('none', s)]:8.2f} "
                     f"{acc[('static', s)]:9.2f} {d:+10.2f}")
    n = ch["n"]
    if ch["ci"] is None:
        tail = "(one pair: no interval)"
    else:
        tail = (f"95% CI [{ch['ci'][0]:+.2f}, {ch['ci'][1]:+.2f}] pp "
                f"(Student t, {n - 1} degrees of freedom)")
    lines.append(f"paired change of test accuracy, static - none, mean over "
                 f"{n} seeds: {ch['mean']:+.2f} pp, {tail}")
    return lines


def quiet_call(fn, argv, log_path):
    """fn(argv) with its stdout (tables, JSON) into log_path; its stderr
    (the progress lines) shows."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as f, contextlib.redirect_stdout(f):
        return fn(argv)


def parse(argv):
    p = argparse.ArgumentParser(prog="python -m comet.demo",
                                description=__doc__.splitlines()[0])
    p.add_argument("--image-size", type=int, default=112,
                   help="ResNet-18's input height and width (default 112)")
    p.add_argument("--batch", type=int, default=64,
                   help="ResNet-18's batch (default 64)")
    p.add_argument("--memory-steps", type=int, default=2,
                   help="measured ResNet-18 steps per run, after one warm-up "
                   "step (default 2)")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5],
                   help="the LeNet seeds (default 1 2 3 4 5)")
    p.add_argument("--steps", type=int, default=937,
                   help="LeNet steps of 64 per run (default 937: one epoch)")
    p.add_argument("--eval-samples", type=int, default=0,
                   help="LeNet test images (0: all 10000)")
    p.add_argument("--threads", type=int, default=2,
                   help="OMP_NUM_THREADS of every run (default 2)")
    p.add_argument("--out", default="out/demo")
    bench_peers.add_tool_arguments(p)
    a = p.parse_args(argv)
    if len(a.seeds) < 2 or len(set(a.seeds)) != len(a.seeds):
        p.error("--seeds: at least two different seeds (an interval needs two)")
    if a.steps < 1 or a.memory_steps < 2:
        p.error("--steps must be at least 1, --memory-steps at least 2")
    a.comet_train = a.comet_train or bench_peers.default_comet_train()
    a.torch_python = a.torch_python or bench_peers.default_torch_python()
    return a


def memory(a, out):
    """Part 1: bench_peers' four runs of ResNet-18; its exit status."""
    peers = out / "peers"
    size, batch = a.image_size, a.batch
    print(f"== Memory: ResNet-18 (torchvision, 1-channel stem), {size}x{size} "
          f"synthetic images, batch {batch}, AdamW; the peak of a whole "
          f"training step ({a.memory_steps} measured after 1 warm-up), "
          f"{a.threads} threads", flush=True)
    rc = quiet_call(bench_peers.main, [
        "--models", "resnet18", "--image-size", str(size), "--batch",
        str(batch), "--steps", str(a.memory_steps), "--warmup", "1",
        "--threads", str(a.threads), "--runs", ",".join(MEMORY_RUNS),
        "--out", str(peers), "--comet-train", a.comet_train,
        "--torch-python", a.torch_python], peers / "bench_peers.txt")
    (w,) = json.loads((peers / "bench_peers.json").read_text())["workloads"]
    print(memory_table(w))
    print("(allocator peaks: PyTorch's CPU allocator traced by "
          "torch.profiler plus the tensors live before the step; COMET's "
          f"allocator. Full table: {peers / 'bench_peers.txt'})", flush=True)
    return rc


def accuracy(a, out):
    """Part 2: fidelity's paired LeNet runs; the first seed's reports
    (none, static)."""
    acc_dir = out / "accuracy"
    print(f"\n== Accuracy: the LeNet fixture on Fashion-MNIST, {a.steps} "
          f"steps of 64 ({a.steps * 64 / 60000:.2f} epochs), the folder's "
          f"optimizer (AdamW, comet-train's default), test accuracy on "
          f"{a.eval_samples or 10000} images; per seed --compress none and "
          f"--compress static, seeds {' '.join(map(str, a.seeds))}",
          flush=True)
    js = acc_dir / "fidelity.json"
    quiet_call(fidelity.main, [
        "--comet-train", a.comet_train, "--models", MODEL,
        "--configs", "none", "static", "--seeds", *map(str, a.seeds),
        "--epochs", str(-(-a.steps * 64 // 60000)),
        "--max-steps", str(a.steps), "--optimizer", "folder",
        "--eval-samples", str(a.eval_samples), "--evals-per-epoch", "0",
        "--threads", str(a.threads), "--out-dir", str(acc_dir),
        "--json", str(js)], acc_dir / "fidelity.txt")
    res = json.loads(js.read_text())
    runs = res["runs"]
    first = {r["config"]: json.loads(pathlib.Path(r["report"]).read_text())
             for r in runs if r["seed"] == a.seeds[0]}
    none, static = first["none"], first["static"]
    print(f"(optimizer: {none['optimizer']}, lr {none['learning_rate']:g}, "
          "from comet-train's report)")
    for line in accuracy_lines(res["summary"], runs):
        print(line)
    ratio = next(r for r in res["summary"]
                 if r["config"] == "static")["activation_ratio_mean"]
    print(f"LeNet, seed {a.seeds[0]}: saved activations "
          f"{static['activation_bytes_uncompressed'] / MIB:.2f} -> "
          f"{static['activation_bytes_compressed'] / MIB:.2f} MiB (mean "
          f"ratio over the seeds {ratio:.1f}x), peak "
          f"{none['peak_bytes'] / MIB:.2f} -> "
          f"{static['peak_bytes'] / MIB:.2f} MiB")
    return none, static


def main(argv=None):
    a = parse(argv)
    out = pathlib.Path(a.out)
    t0 = time.monotonic()
    rc = memory(a, out)
    t1 = time.monotonic()
    reports = accuracy(a, out)
    t2 = time.monotonic()
    from comet import plot_training

    png = out / "training.png"
    plot_training.plot(list(reports), str(png))
    print(f"\nplot: {png} (seed {a.seeds[0]}: loss curves, memory over one "
          f"step)\ntime: memory {t1 - t0:.0f} s, accuracy {t2 - t1:.0f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
