"""Memory, speed and accuracy of the exported models at batch 128.

For each model (an artifact folder from generate_artifacts, or a fixture
name) and each --compress mode, trains one epoch of Fashion-MNIST per seed
with comet-train given only the folder (its checkpoint, eval graph and
AdamW), through comet.fidelity's runs, so that the runs of one seed share
the data order and the initial weights. From the reports it tabulates:

- the allocator-measured peak (all categories: parameters, gradients,
  optimizer state, activations, compressed slots, kernel workspace) and
  the tensor peak, and the ratio of the uncompressed run's peak to it;
- the saved activations' bytes before and after compression;
- the compression ratio per kind of saved tensor: the op type that made
  the saved value in training_model.onnx, and the codec that stored it;
- the median step time, and its ratio to the uncompressed run's; the same
  for the step's CPU time (all threads), which leaves out the time spent
  waiting for a core on a loaded machine;
- the test accuracy after the epoch (mean and sd over the seeds) and the
  paired change against --compress none (mean, sd, 95% CI).

`adaptive` re-tunes every 100 steps (CONFIGS): comet-train's default of
1000 is never reached in one epoch, which would make it static.

    python -m comet.bench_models --comet-train build/bin/comet-train \\
        --models cnn transformer build/models/resnet18 \\
        build/models/mobilenet_v2 --out-dir bench-models --resume \\
        --json bench-models.json

A benchmark, not a test: one ResNet-18 epoch takes about ten minutes on
two cores. --resume reuses the reports already in --out-dir.
"""
import argparse
import json
import os
import statistics
import sys

from comet import fidelity
from comet.ablation import fixture, model_name

GOALS = {
    # model: (minimum peak(none)/peak(static), minimum static activation
    # ratio); None: no goal.
    "resnet18": (3.0, 15.0),
    "transformer": (None, 5.0),
}
ACCURACY_GOAL_PP = 0.5
# comet-train re-tunes adaptive bounds every 1000 steps by default, which
# a 469-step epoch at batch 128 never reaches: re-tune every 100 here.
CONFIGS = {**fidelity.CONFIGS,
           "adaptive": ["--compress", "adaptive", "--retune-interval", "100"]}


def training_graph(model):
    path = fixture(model)
    if os.path.isdir(path):
        path = os.path.join(path, "training_model.onnx")
    return path


def producers(model):
    """The names the liveness analysis gives saved values (the node's name,
    and NAME:i for each result of a node with several) -> the op type of
    the node in the training graph."""
    import onnx
    g = onnx.load(training_graph(model), load_external_data=False).graph
    out = {}
    for n in g.node:
        out[n.name] = n.op_type
        for i in range(len(n.output)):
            out[f"{n.name}:{i}"] = n.op_type
    return out


def kinds(reports, made_by):
    """Bytes in and out per "op type/codec" over the reports' slots; count
    is the slots of that kind in one report."""
    out = {}
    for rep in reports:
        for s in rep["slots"]:
            key = f"{made_by.get(s['value'], '?')}/{s['codec']}"
            k = out.setdefault(key, {"count": 0, "bytes_uncompressed": 0,
                                     "bytes_compressed": 0})
            k["count"] += rep is reports[0]
            k["bytes_uncompressed"] += s["bytes_uncompressed"]
            k["bytes_compressed"] += s["bytes_compressed"]
    for k in out.values():
        k["ratio"] = k["bytes_uncompressed"] / max(k["bytes_compressed"], 1)
    return out


def mean_sd(xs):
    return (statistics.fmean(xs),
            statistics.stdev(xs) if len(xs) > 1 else None)


def summarise(runs, stats, models, configs):
    """One row per model and configuration."""
    rows = []
    for model in models:
        name = model_name(model)
        made_by = producers(model)
        mine = [r for r in runs if r["model"] == name]
        base = [r for r in mine if r["config"] == fidelity.BASELINE]
        base_peak = statistics.fmean(r["peak_bytes"] for r in base)
        base_ms = statistics.median(r["step_time_ms_median"] for r in base)
        base_cpu = [r["step_cpu_ms_median"] for r in base
                    if "step_cpu_ms_median" in r]
        base_cpu = statistics.median(base_cpu) if base_cpu else None
        for label in configs:
            rs = [r for r in mine if r["config"] == label]
            if not rs:
                continue
            reports = []
            for r in rs:
                with open(r["report"]) as f:
                    reports.append(json.load(f))
            per_kind = kinds(reports, made_by)
            peak = statistics.fmean(r["peak_bytes"] for r in rs)
            ms = statistics.median(r["step_time_ms_median"] for r in rs)
            cpu = [r["step_cpu_ms_median"] for r in rs
                   if "step_cpu_ms_median" in r]
            cpu_ms = statistics.median(cpu) if cpu else None
            accs = [100 * r["test_accuracy"] for r in rs
                    if r["test_accuracy"] is not None]
            acc = mean_sd(accs) if accs else (None, None)
            change = next((s["accuracy_change_pp"] for s in stats
                           if s["model"] == name and s["config"] == label),
                          None)
            rows.append({
                "model": name, "config": label,
                "seeds": sorted(r["seed"] for r in rs),
                "steps": rs[0]["steps"],
                "peak_bytes": peak,
                "tensor_peak_bytes": statistics.fmean(
                    rep["tensor_peak_bytes"] for rep in reports),
                "peak_reduction": base_peak / peak,
                "activation_bytes_uncompressed": statistics.fmean(
                    r["activation_bytes_uncompressed"] for r in rs),
                "activation_bytes_compressed": statistics.fmean(
                    r["activation_bytes_compressed"] for r in rs),
                "activation_ratio": statistics.fmean(
                    r["compression_ratio"] for r in rs),
                "per_kind": per_kind,
                "step_time_ms": ms, "step_time_vs_none": ms / base_ms,
                "step_cpu_ms": cpu_ms,
                "step_cpu_vs_none": cpu_ms / base_cpu
                if cpu_ms and base_cpu else None,
                "accuracy_pct_mean": acc[0], "accuracy_pct_sd": acc[1],
                "accuracy_change_pp": None if label == fidelity.BASELINE
                else change,
            })
    return rows


def goals(rows, full_epochs=True):
    """Each goal of the benchmark against the figures: (text, met). The
    accuracy goal is judged only on full epochs over at least 3 seeds."""
    out = []
    for r in rows:
        if r["config"] == fidelity.BASELINE:
            continue
        peak_goal, ratio_goal = GOALS.get(r["model"], (None, None))
        if r["config"] == "static" and peak_goal:
            out.append((f"{r['model']} static: peak {r['peak_reduction']:.2f}x"
                        f" lower than none (goal >= {peak_goal}x)",
                        r["peak_reduction"] >= peak_goal))
        if r["config"] == "static" and ratio_goal:
            out.append((f"{r['model']} static: activation ratio "
                        f"{r['activation_ratio']:.2f}x (goal >= "
                        f"{ratio_goal}x)",
                        r["activation_ratio"] >= ratio_goal))
        c = r["accuracy_change_pp"]
        if c is not None and full_epochs and len(r["seeds"]) >= 3:
            out.append((f"{r['model']} {r['config']}: accuracy change "
                        f"{c['mean']:+.2f} pp (goal within "
                        f"{ACCURACY_GOAL_PP} pp)",
                        abs(c["mean"]) <= ACCURACY_GOAL_PP))
    return out


def fmt(x, spec, unit=""):
    return "-" if x is None else format(x, spec) + unit


def pct(x):
    return "-" if x is None else f"{100 * x:.2f}%"


def mib(b):
    return f"{b / 2**20:.1f}"


def table(rows):
    lines = ["| model | compress | peak MiB | peak none/x | tensor peak MiB"
             " | activations MiB | ratio | step ms | step x none "
             "| step CPU ms | CPU x none | accuracy % | change pp (95% CI) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        acc = fmt(r["accuracy_pct_mean"], ".2f")
        if r["accuracy_pct_sd"] is not None:
            acc += f" ± {r['accuracy_pct_sd']:.2f}"
        c = r["accuracy_change_pp"]
        if c is None:
            ch = "-"
        else:
            ch = f"{c['mean']:+.2f}"
            if c["sd"] is not None:
                ch += (f" ± {c['sd']:.2f} ({c['ci'][0]:+.2f}, "
                       f"{c['ci'][1]:+.2f})")
        lines.append(
            f"| {r['model']} | {r['config']} | {mib(r['peak_bytes'])} "
            f"| {r['peak_reduction']:.2f}x | {mib(r['tensor_peak_bytes'])} "
            f"| {mib(r['activation_bytes_uncompressed'])} -> "
            f"{mib(r['activation_bytes_compressed'])} "
            f"| {r['activation_ratio']:.2f}x | {r['step_time_ms']:.0f} "
            f"| {r['step_time_vs_none']:.2f}x "
            f"| {fmt(r['step_cpu_ms'], '.0f')} "
            f"| {fmt(r['step_cpu_vs_none'], '.2f', 'x')} | {acc} | {ch} |")
    return "\n".join(lines)


def kind_table(rows):
    lines = ["| model | compress | saved tensor (op/codec) | count "
             "| MiB | ratio |", "|---|---|---|---|---|---|"]
    for r in rows:
        if r["config"] == fidelity.BASELINE:
            continue
        n = len(r["seeds"])
        for k, v in sorted(r["per_kind"].items(),
                           key=lambda kv: -kv[1]["bytes_uncompressed"]):
            lines.append(f"| {r['model']} | {r['config']} | {k} "
                         f"| {v['count']} "
                         f"| {mib(v['bytes_uncompressed'] / n)} "
                         f"| {v['ratio']:.2f}x |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--comet-train", default="build/bin/comet-train")
    build = os.environ.get("COMET_BUILD_DIR", "build")
    p.add_argument("--models", nargs="+", default=[
        "cnn", "transformer", os.path.join(build, "models", "resnet18"),
        os.path.join(build, "models", "mobilenet_v2")])
    p.add_argument("--configs", nargs="+",
                   default=["none", "static", "adaptive"],
                   choices=list(CONFIGS))
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=0,
                   help="stop each run after N steps (0: the epochs)")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--eval-samples", type=int, default=0,
                   help="test samples (0: all 10000)")
    p.add_argument("--threads", type=int, default=2,
                   help="OMP_NUM_THREADS of every run")
    p.add_argument("--out-dir", default="bench-models")
    p.add_argument("--resume", action="store_true",
                   help="reuse the reports already in --out-dir")
    p.add_argument("--json", help="also write the JSON here")
    args = p.parse_args(argv)
    for m in args.models:
        if not os.path.exists(training_graph(m)):
            p.error(f"no training graph for model '{m}' at "
                    f"{training_graph(m)} (scripts/export-torch-models.sh "
                    "makes resnet18 and mobilenet_v2)")
    os.makedirs(args.out_dir, exist_ok=True)
    configs = list(dict.fromkeys([fidelity.BASELINE, *args.configs]))
    # fidelity's runs with the folder's optimizer and learning rate.
    fargs = argparse.Namespace(
        comet_train=args.comet_train, out_dir=args.out_dir, train_args=[],
        lr=None, optimizer="folder", evals_per_epoch=1, batch=args.batch,
        error_model=False, resume=args.resume, epochs=args.epochs,
        eval_samples=args.eval_samples, max_steps=args.max_steps,
        threads=args.threads)
    progress = fidelity.Progress(len(args.models) * len(args.seeds)
                                 * len(configs))
    runs = []
    for model in args.models:
        for label in configs:
            for seed in args.seeds:
                r = fidelity.run_one(fargs, model, label, CONFIGS[label],
                                     seed)
                runs.append(r)
                progress.step(
                    f"{r['model']} {label} seed {seed}: acc "
                    f"{pct(r['test_accuracy'])}, peak "
                    f"{mib(r['peak_bytes'])} MiB, act ratio "
                    f"{r['compression_ratio']:.2f}, step "
                    f"{r['step_time_ms_median']:.0f} ms"
                    + (" (resumed)" if r["resumed"] else ""),
                    ran=not r["resumed"])
    # Runs without an evaluation (--eval-samples -1) have no accuracy.
    stats = fidelity.analyse(
        [r for r in runs if r["test_accuracy"] is not None], configs)
    rows = summarise(runs, stats, args.models, configs)
    print(table(rows))
    print()
    print(kind_table(rows))
    print()
    met = goals(rows, full_epochs=args.max_steps == 0)
    for text, ok in met:
        print(f"{'met ' if ok else 'MISS'}  {text}")
    result = {"benchmark": "models",
              "settings": {k: v for k, v in vars(args).items()
                           if k != "comet_train"},
              "rows": rows, "goals": [{"goal": t, "met": ok}
                                      for t, ok in met],
              "runs": runs}
    line = json.dumps(result)
    print(line)
    if args.json:
        with open(args.json, "w") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
