"""COMET against PyTorch on the same work, in one run.

For each model and input size it trains, one run after another, each in its
own process:

  pytorch-eager        the torch module (comet.torch_models), eager
  pytorch-checkpoint   the same with torch.utils.checkpoint around each
                       stage (ResNet-18's layer1..layer4, MobileNetV2's
                       feature blocks after the stem, the GPT's decoder
                       blocks; comet.torch_peer)
  comet-none           comet-train --compress none
  comet-static         comet-train --compress static (its default)
  comet-adaptive       comet-train --compress adaptive, statistics taken
                       on the first step and the bounds re-tuned after it

on the same model (COMET trains the ONNX Runtime artifact folder that
comet.export makes from that torch module, exported at the input size),
batch, input size (1 channel) and optimizer (AdamW with the folder's
hyper-parameters on both sides), synthetic uniform images (the GPT:
synthetic int64 token sequences, each token's label the next id, the loss
the mean cross-entropy over all tokens), and reports per run:

- the whole-step peak, two ways. Allocator (the basis of the ratios and
  goals): PyTorch's CPU allocator traced by torch.profiler over one step,
  plus the tensors live before it; COMET's allocator peak (comet-train's
  peak_bytes, exact). RSS: the bytes live between steps (counted exactly:
  PyTorch's tensors, COMET's allocator) plus the high-water mark of the
  process's resident memory during the steps above its resident memory
  between steps (comet.peak_rss; both processes run with
  MALLOC_MMAP_THRESHOLD_ set so that freed blocks leave the RSS). On
  PyTorch's side the two agree (the RSS figure checks the trace); on
  COMET's the RSS figure is a lower bound: glibc serves a request from a
  free block of its heap before it maps fresh pages, and the compiler
  leaves such blocks resident, which the steps then reuse without the RSS
  moving (docs/benchmarks.md);
- the saved-activation bytes (PyTorch eager: what autograd saves,
  parameters and the batch left out; COMET: the activations that
  compress-activations stores, raw -> stored);
- the median step time, wall and CPU (the process's CPU time, all threads);
- COMET's predicted peak and its ratio to the measured peak;
- each peak over the same workload's pytorch-eager run of this invocation,
  the step times over its comet-none run;
- the goals, met or missed (GOALS).

It prints a table and the goals, writes a JSON file (every run's figures,
COMET's reports' timelines, PyTorch's allocator timelines) and a PNG of the
memory over one step of every run (COMET: the report's memory_timeline and
predicted_timeline; PyTorch: the profiled step's allocator trace).

    python -m comet.bench_peers --models resnet18,mobilenet_v2 \\
        --batch 64 --image-size 224 --steps 4 --threads 2 --out bench-peers

    python -m comet.bench_peers --models gpt --batch 8 --steps 3 \\
        --gpt layers=6,d_model=384,heads=6,seq_len=512 --out bench-peers

The model names: resnet18 and mobilenet_v2 (torchvision, 1-channel stem,
any --image-size: exported into OUT/models/NAME-SIZE with the export
environment), cnn and transformer (the checked-in 28x28 fixtures), gpt
(comet.torch_models.gpt with the constructor arguments of --gpt, by
default the bench size above, exported into OUT/models/gpt-ARGS; its
"size" is the sequence length). PyTorch runs in the export environment
(--torch-python, default $COMET_EXPORT_PYTHON or .venv-export/bin/python);
this module needs only the standard library, onnx and matplotlib (and
comet.export's parse_model_args, which needs no torch).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

from comet import peak_rss

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "test" / "fixtures" / "models"
MIB = 1 << 20

# name -> the input sizes it takes: None, any --image-size; SEQ_LEN, the
# seq_len of --gpt (a token model: its size is the sequence length).
SEQ_LEN = "seq_len"
MODELS = {"resnet18": None, "mobilenet_v2": None, "cnn": (28,),
          "transformer": (28,), "gpt": SEQ_LEN}
# The gpt's constructor arguments unless --gpt says: the bench size.
GPT_ARGS = {"layers": 6, "d_model": 384, "heads": 6, "seq_len": 512}
RUNS = ["pytorch-eager", "pytorch-checkpoint", "comet-none", "comet-static",
        "comet-adaptive"]
EAGER, NONE, STATIC = "pytorch-eager", "comet-none", "comet-static"
GOALS = {
    "static_vs_eager": 0.4,        # comet-static peak <= 0.4 x eager
    "static_vs_eager_gpt": 0.5,    # the gpt's: <= 0.5 x eager
    "none_vs_eager": 1.0,          # comet-none peak <= eager
    "step_time_vs_none": 1.10,     # compressed step time <= 1.10 x none
    "predicted_within": 0.02,      # |predicted / measured - 1| <= 2%
}
# comet-train's lines: the last header line, printed after compiling and
# before the first step, and the summary after the last step.
ARM_MARKER = b"  compress "
END_MARKER = b"final loss"


class UsageError(Exception):
    pass


# --- Settings ---------------------------------------------------------------

def comma_list(text, what):
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError(f"{what}: empty list")
    return items


def workloads(models, sizes, gpt_args=GPT_ARGS):
    """[(model, size)]: the any-size models at each size, the fixtures at
    their own, the gpt at its sequence length."""
    out = []
    for m in models:
        if m not in MODELS:
            raise UsageError(f"unknown model {m!r}: expected names from "
                             f"{', '.join(MODELS)}")
        fixed = MODELS[m]
        if fixed == SEQ_LEN:
            fixed = (gpt_args[SEQ_LEN],)
        for s in (sizes if fixed is None else fixed):
            if (m, s) not in out:
                out.append((m, s))
    return out


def gpt_args(text):
    """--gpt's K=V,... over GPT_ARGS; it must give the sequence length."""
    from comet.export import parse_model_args

    try:
        args = {**GPT_ARGS, **parse_model_args(text)}
    except ValueError as e:
        raise UsageError(str(e).replace("--model-args", "--gpt")) from None
    if not isinstance(args[SEQ_LEN], int) or args[SEQ_LEN] < 1:
        raise UsageError(f"--gpt: {SEQ_LEN} must be a positive integer")
    return args


def size_text(model, size):
    """The table's size: "224" (224x224 images), "seq 512" (tokens)."""
    return f"seq {size}" if MODELS.get(model) == SEQ_LEN else str(size)


def size_words(model, size):
    """The input size in words: "224x224", "seq 512"."""
    return f"seq {size}" if MODELS.get(model) == SEQ_LEN else f"{size}x{size}"


def describe(model, size):
    """The workload in words: "resnet18 224x224", "gpt seq 512"."""
    return f"{model} {size_words(model, size)}"


def model_args_text(args):
    """{'layers': 6, ...} -> 'layers=6,...' (comet.export's --model-args)."""
    return ",".join(f"{k}={v}" for k, v in args.items())


def default_torch_python():
    env = os.environ.get("COMET_EXPORT_PYTHON")
    if env:
        return env
    return str(ROOT / ".venv-export" / "bin" / "python")


def add_tool_arguments(p: argparse.ArgumentParser) -> None:
    """--comet-train and --torch-python, as bench_peers and the demo take
    them (resolved by default_comet_train and default_torch_python)."""
    p.add_argument("--comet-train", default=None,
                   help="default $COMET_TRAIN or $COMET_BUILD_DIR/bin/comet-train")
    p.add_argument("--torch-python", default=None,
                   help="a Python with torch and torchvision (default "
                   "$COMET_EXPORT_PYTHON or .venv-export/bin/python)")


def default_comet_train():
    if os.environ.get("COMET_TRAIN"):
        return os.environ["COMET_TRAIN"]
    build = os.environ.get("COMET_BUILD_DIR", str(ROOT / "build"))
    return os.path.join(build, "bin", "comet-train")


def child_env(threads):
    env = dict(os.environ)
    env.update(peak_rss.ENV)
    env["OMP_NUM_THREADS"] = str(threads)
    env.setdefault("OMP_WAIT_POLICY", "passive")
    env["PYTHONPATH"] = str(PACKAGE) + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONWARNINGS", "ignore")
    return env


# --- Artifacts --------------------------------------------------------------

def export_stamp(model, size, model_args=""):
    h = hashlib.sha256()
    for f in ("export.py", "torch_models.py"):
        h.update((PACKAGE / "comet" / f).read_bytes())
    h.update(f"{model} {size}".encode())
    if model_args:
        h.update(f" {model_args}".encode())
    return h.hexdigest()


def artifacts(model, size, a, log):
    """The artifact folder comet-train trains: a fixture, or an export of
    the torch module at `size` (the gpt: with --gpt's arguments) into
    OUT/models (made again when the exporter or the model definitions
    changed)."""
    if MODELS[model] not in (None, SEQ_LEN):
        return FIXTURES / model
    if MODELS[model] == SEQ_LEN:
        margs = model_args_text(a.gpt_args)
        d = pathlib.Path(a.out) / "models" / (
            model + "-" + "-".join(f"{k}{v}" for k, v in a.gpt_args.items()))
        how = ["--model-args", margs]
    else:
        margs = ""
        d = pathlib.Path(a.out) / "models" / f"{model}-{size}"
        how = ["--image-size", str(size)]
    stamp = d / ".export.sha256"
    want = export_stamp(model, size, margs)
    if (d / "checkpoint").exists() and stamp.exists() \
            and stamp.read_text().strip() == want:
        return d
    log(f"exporting {model} at {size_words(model, size)} into {d}")
    if d.exists():
        shutil.rmtree(d)
    r = subprocess.run([a.torch_python, "-m", "comet.export", model, "--out",
                        str(d), *how, "--optimizer", "adamw"],
                       capture_output=True, text=True,
                       env=child_env(a.threads), timeout=a.timeout)
    if r.returncode != 0:
        raise RuntimeError(f"export of {model} at {size} failed: "
                           f"{r.stderr[-2000:]}")
    stamp.write_text(want + "\n")
    return d


def adamw_attributes(folder):
    """lr and the AdamWOptimizer node's attributes of the folder's
    optimizer_model.onnx: what PyTorch's AdamW is given."""
    import onnx

    m = onnx.load(str(pathlib.Path(folder) / "optimizer_model.onnx"))
    node = next((n for n in m.graph.node if n.op_type == "AdamWOptimizer"),
                None)
    if node is None:
        raise RuntimeError(f"{folder}: optimizer_model.onnx has no "
                           "AdamWOptimizer")
    attrs = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
    return {"lr": 1e-3,  # comet-train's default for AdamW
            "beta1": attrs.get("alpha", 0.9), "beta2": attrs.get("beta", 0.999),
            "eps": attrs.get("epsilon", 1e-6),
            "weight_decay": attrs.get("weight_decay", 0.0),
            "adam_mode": attrs.get("adam_mode", 0)}


# --- The runs ---------------------------------------------------------------

def run_pytorch(model, size, mode, opt, a, path):
    cmd = [a.torch_python, "-m", "comet.torch_peer", "--model", model,
           "--mode", mode, "--batch", str(a.batch),
           "--steps", str(a.steps), "--warmup", str(a.warmup),
           "--threads", str(a.threads), "--json", str(path),
           "--lr", repr(opt["lr"]), "--beta1", repr(opt["beta1"]),
           "--beta2", repr(opt["beta2"]), "--eps", repr(opt["eps"]),
           "--weight-decay", repr(opt["weight_decay"])]
    cmd += (["--model-args", model_args_text(a.gpt_args)]
            if MODELS[model] == SEQ_LEN else ["--image-size", str(size)])
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=child_env(a.threads), timeout=a.timeout)
    if r.returncode != 0:
        raise RuntimeError(f"PyTorch ({mode}) failed: {r.stderr[-2000:]}")
    w = json.loads(pathlib.Path(path).read_text())
    return {
        "side": "pytorch", "mode": mode,
        "peak_bytes_rss": w["peak_bytes_rss"],
        "peak_bytes_allocator": w["peak_bytes_allocator"],
        "tensor_peak_bytes": None, "predicted_peak_bytes": None,
        "predicted_tensor_peak_bytes": None,
        "saved_bytes": w["saved_bytes"], "saved_bytes_stored": w["saved_bytes"],
        "step_time_ms": w["step_time_ms_median"],
        "step_cpu_ms": w["step_cpu_ms_median"],
        "live_between_steps": sum(w["live_at_step_start"].values()),
        "at_peak": {**w["live_at_step_start"],
                    "step_tensors": w["peak_bytes_allocator"]
                    - sum(w["live_at_step_start"].values())},
        "peak_op": w.get("peak_op"), "peak_phase": w.get("peak_phase"),
        "peak_ms": w.get("peak_ms"), "phases_ms": w.get("phases_ms"),
        "timeline": w["allocator_timeline"],
        "timeline_ms": w["allocator_timeline_ms"],
        "predicted_timeline": None,
        "steps_measured": len(w["steps"]),
        "rss_steps": [s["peak_bytes"] for s in w["steps"]],
        "losses": w["losses"],
        "worker": {k: v for k, v in w.items()
                   if k not in ("allocator_timeline", "allocator_timeline_ms",
                                "losses")},
    }


def comet_args(model, folder, size, mode, a, report):
    # Token sequences (the gpt) have the model's own length.
    shape = ([] if MODELS[model] == SEQ_LEN
             else ["--synthetic-shape", f"1x{size}x{size}"])
    args = [a.comet_train, str(folder), "--data", "synthetic", *shape,
            "--batch", str(a.batch),
            "--max-steps", str(a.warmup + a.steps), "--eval-samples", "-1",
            "--seed", "0", "--compress", mode, "--report", str(report)]
    if mode == "adaptive":
        # Statistics on the first step only (a window of one observation),
        # bounds re-tuned after it: the steps after it run on the tuned
        # bounds without a statistics pass, as most steps do under the
        # default schedule (one statistics step in 100).
        total = a.warmup + a.steps
        args += ["--stats-interval", str(total), "--stats-window", "1",
                 "--retune-interval", "1"]
    return args


def run_comet(model, folder, size, mode, a, path):
    report = pathlib.Path(path)
    if report.exists():
        report.unlink()
    mon = peak_rss.Monitor(comet_args(model, folder, size, mode, a, report),
                           env=child_env(a.threads), arm_marker=ARM_MARKER,
                           end_marker=END_MARKER, timeout=a.timeout)
    err = report.with_suffix(".stderr")
    rc = mon.run(err)
    if rc != 0 or not report.exists():
        raise RuntimeError(f"comet-train --compress {mode} failed "
                           f"(exit {rc}): {err.read_text()[-2000:]}"
                           f"{mon.output.decode(errors='replace')[-1000:]}")
    r = json.loads(report.read_text())
    between = sum(c["current"] for c in r["categories"].values())
    rss = mon.result()
    peak_rss_bytes = None
    if rss is not None:
        peak_rss_bytes = between + max(0, rss["hwm"] - rss["floor"])
    tl = r["memory_timeline"]
    return {
        "side": "comet", "mode": mode,
        "peak_bytes_rss": peak_rss_bytes,
        "peak_bytes_allocator": r["peak_bytes"],
        "tensor_peak_bytes": r["tensor_peak_bytes"],
        "predicted_peak_bytes": r["predicted_peak_bytes"],
        # The prediction of the tensors alone (reports before the workspace
        # term have only predicted_peak_bytes, which was that).
        "predicted_tensor_peak_bytes": r.get("predicted_tensor_peak_bytes",
                                             r["predicted_peak_bytes"]),
        "saved_bytes": r["activation_bytes_uncompressed"],
        "saved_bytes_stored": r["activation_bytes_compressed"],
        "step_time_ms": r["step_time_ms_median"],
        "step_cpu_ms": r["step_cpu_ms_median"],
        "live_between_steps": between,
        "at_peak": {k: c["at_peak"] for k, c in r["categories"].items()},
        "peak_at": tl.index(max(tl)) / max(len(tl) - 1, 1) if tl else None,
        "rss": rss,
        "timeline": tl,
        "predicted_timeline": r["predicted_timeline"],
        "steps_measured": r["steps"],
        "losses": r["loss_history"],
        "report": str(report),
    }


def relative(rows):
    """Each run's peaks over the same workload's pytorch-eager, its step
    times over comet-none's (runs of this invocation), and COMET's
    predicted peak over its measured peak and tensor peak."""
    eager, none = rows.get(EAGER), rows.get(NONE)
    for r in rows.values():
        rel = {}
        for key in ("peak_bytes_rss", "peak_bytes_allocator"):
            if eager and r.get(key) and eager.get(key):
                rel[key] = r[key] / eager[key]
        if none:
            for key in ("step_time_ms", "step_cpu_ms"):
                if r.get(key) and none.get(key):
                    rel[key + "_vs_none"] = r[key] / none[key]
        if r.get("predicted_peak_bytes"):
            rel["predicted_over_measured"] = (r["predicted_peak_bytes"]
                                              / r["peak_bytes_allocator"])
            rel["predicted_over_tensor_peak"] = (
                r["predicted_tensor_peak_bytes"] / r["tensor_peak_bytes"])
        r["vs"] = rel


def goals(model, size, rows):
    """(goal, figure text, met) for the workload; a goal whose runs are
    missing is left out. Peaks are judged on the allocator figures (exact
    on COMET's side; on PyTorch's the profiler's trace, which the RSS
    method confirms), with the RSS figures beside them; step times on the
    CPU time (on a shared machine the wall time is mostly the waits for a
    core), with the wall time beside it; the prediction on the whole-step
    peak, with the tensor peak (kernel workspace left out, as in the
    prediction) beside it."""
    out = []
    eager, ckpt = rows.get(EAGER), rows.get("pytorch-checkpoint")
    none, static = rows.get(NONE), rows.get(STATIC)
    w = describe(model, size)
    static_goal = GOALS["static_vs_eager_gpt" if model == "gpt"
                        else "static_vs_eager"]

    def peak_goal(text, run, peer, limit, strict=False):
        if not (run and peer):
            return
        x = run["peak_bytes_allocator"] / peer["peak_bytes_allocator"]
        fig = f"{x:.3f}x"
        if run.get("peak_bytes_rss") and peer.get("peak_bytes_rss"):
            fig += f" (RSS {run['peak_bytes_rss'] / peer['peak_bytes_rss']:.3f}x)"
        out.append((f"{w}: {text}", fig, x < limit if strict else x <= limit))

    peak_goal(f"comet-static peak <= {static_goal}x pytorch-eager", static,
              eager, static_goal)
    peak_goal("comet-static peak < pytorch-checkpoint", static, ckpt, 1.0,
              strict=True)
    peak_goal("comet-none peak <= pytorch-eager", none, eager,
              GOALS["none_vs_eager"])
    for run in ("comet-static", "comet-adaptive"):
        r = rows.get(run)
        x = r and r["vs"].get("step_cpu_ms_vs_none")
        if x:
            wall = r["vs"].get("step_time_ms_vs_none")
            out.append((f"{w}: {run} step time <= "
                        f"{GOALS['step_time_vs_none']}x comet-none",
                        f"CPU {x:.3f}x (wall {wall:.3f}x)",
                        x <= GOALS["step_time_vs_none"]))
    for run in ("comet-none", "comet-static", "comet-adaptive"):
        r = rows.get(run)
        if r:
            x = r["vs"]["predicted_over_measured"]
            t = r["vs"]["predicted_over_tensor_peak"]
            out.append((f"{w}: {run} predicted peak within "
                        f"{100 * GOALS['predicted_within']:.0f}% of measured",
                        f"{100 * (x - 1):+.2f}% (of the tensor peak "
                        f"{100 * (t - 1):+.2f}%)",
                        abs(x - 1) <= GOALS["predicted_within"]))
    return out


# --- Output -----------------------------------------------------------------

def mib(b):
    return "-" if b is None else f"{b / MIB:.1f}"


def times(x):
    return "-" if x is None else f"{x:.2f}x"


def table(results):
    lines = ["| model | size | batch | run | peak allocator MiB | x eager "
             "| peak RSS MiB | x eager | predicted MiB | pred / peak "
             "| pred / tensor peak | saved activations MiB | step CPU ms "
             "| x none | step ms | x none |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for w in results:
        for name, r in w["runs"].items():
            if "error" in r:
                lines.append(f"| {w['model']} | "
                             f"{size_text(w['model'], w['image_size'])} | "
                             f"{w['batch']} | {name} | failed: "
                             f"{r['error'][:60]} |" + " |" * 11)
                continue
            saved = mib(r["saved_bytes"])
            if r["side"] == "comet":
                saved = f"{mib(r['saved_bytes'])} -> {mib(r['saved_bytes_stored'])}"
            v = r["vs"]

            def ratio(key):
                return "-" if key not in v else format(v[key], ".4f")

            lines.append(
                f"| {w['model']} | {size_text(w['model'], w['image_size'])} "
                f"| {w['batch']} | {name} "
                f"| {mib(r['peak_bytes_allocator'])} "
                f"| {times(v.get('peak_bytes_allocator'))} "
                f"| {mib(r['peak_bytes_rss'])} | {times(v.get('peak_bytes_rss'))} "
                f"| {mib(r['predicted_peak_bytes'])} "
                f"| {ratio('predicted_over_measured')} "
                f"| {ratio('predicted_over_tensor_peak')} "
                f"| {saved} | {r['step_cpu_ms']:.0f} "
                f"| {times(v.get('step_cpu_ms_vs_none'))} "
                f"| {r['step_time_ms']:.0f} "
                f"| {times(v.get('step_time_ms_vs_none'))} |")
    return "\n".join(lines)


def plot(results, path):
    """Per workload, PyTorch's allocator trace over the profiled step
    (against time) beside COMET's memory timeline of its second step
    (against its allocation and free events) and the predicted one
    (against ops), on one y scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ws = [w for w in results
          if any(r.get("timeline") for r in w["runs"].values())]
    if not ws:
        return None
    fig, axes = plt.subplots(len(ws), 2, figsize=(13, 4.2 * len(ws)),
                             squeeze=False, sharey="row")
    colors = {"pytorch-eager": "tab:red", "pytorch-checkpoint": "tab:orange",
              "comet-none": "tab:gray", "comet-static": "tab:blue",
              "comet-adaptive": "tab:green"}
    for (left, right), w in zip(axes, ws):
        for name, r in w["runs"].items():
            tl = r.get("timeline")
            if not tl:
                continue
            c = colors.get(name)
            if r["side"] == "pytorch":
                ts = [t / 1000 for t in r["timeline_ms"]]
                left.plot(ts, [b / MIB for b in tl], color=c,
                          label=f"{name} (peak {mib(max(tl))} MiB)")
                for ph, (b, e) in (r.get("phases_ms") or {}).items():
                    if ph != "forward":
                        left.axvline(b / 1000, color=c, linestyle=":",
                                     linewidth=0.8)
                continue
            xs = [i / max(len(tl) - 1, 1) for i in range(len(tl))]
            right.plot(xs, [b / MIB for b in tl], color=c,
                       label=f"{name} (peak {mib(max(tl))} MiB)")
            pt = r.get("predicted_timeline")
            if pt and name != "comet-adaptive":
                xs = [i / max(len(pt) - 1, 1) for i in range(len(pt))]
                right.plot(xs, [b / MIB for b in pt], color=c,
                           linestyle="--", linewidth=0.9,
                           label=f"{name} predicted (peak {mib(max(pt))} MiB)")
        what = f"{describe(w['model'], w['image_size'])}, batch {w['batch']}"
        left.set_title(f"PyTorch, {what}", fontsize=10)
        left.set_xlabel("seconds into the profiled step (dotted: backward "
                        "and optimizer start)")
        right.set_title(f"COMET, {what}", fontsize=10)
        right.set_xlabel("fraction of the step: allocation and free events "
                         "(predicted: ops)")
        left.set_ylabel("live MiB")
        for ax in (left, right):
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7, loc="best")
    fig.text(0.01, 0.003, "PyTorch: c10's CPU allocator (torch.profiler), "
             "kernel scratch included, plus the tensors live before the "
             "step.\nCOMET: the allocator's tensor bytes over its second "
             "step (memory_timeline; kernel workspace left out) and the "
             "liveness analysis' prediction (predicted_timeline).",
             fontsize=7)
    fig.tight_layout(rect=(0, 0.03 / len(ws), 1, 1))
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


# --- Main -------------------------------------------------------------------

def parse(argv):
    p = argparse.ArgumentParser(prog="python -m comet.bench_peers",
                                description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet18,mobilenet_v2,cnn",
                   help=f"comma list from {', '.join(MODELS)} "
                   "(default resnet18,mobilenet_v2,cnn)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--image-size", default="224",
                   help="comma list of input sizes for resnet18 and "
                   "mobilenet_v2 (the fixtures take 28); default 224")
    p.add_argument("--gpt", default=model_args_text(GPT_ARGS),
                   metavar="K=V,...",
                   help="the gpt's constructor arguments (comet.export's "
                   "--model-args; its size is seq_len); default "
                   f"{model_args_text(GPT_ARGS)}")
    p.add_argument("--steps", type=int, default=4,
                   help="measured steps per run (default 4); PyTorch runs "
                   "--warmup more before them, comet-train runs --warmup + "
                   "--steps in all")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=2,
                   help="OMP_NUM_THREADS and torch's threads (default 2)")
    p.add_argument("--runs", default=",".join(RUNS),
                   help=f"comma list from {', '.join(RUNS)} (default all)")
    p.add_argument("--out", default="bench-peers",
                   help="folder for the exports, reports and figures")
    p.add_argument("--json", help="the JSON file (default OUT/bench_peers.json)")
    p.add_argument("--png", help="the figure (default OUT/bench_peers.png)")
    add_tool_arguments(p)
    p.add_argument("--timeout", type=int, default=3600,
                   help="seconds per run (default 3600)")
    p.add_argument("--replot", metavar="JSON",
                   help="run nothing: draw --png again from the JSON of an "
                   "earlier run, its workloads of --models and --image-size")
    a = p.parse_args(argv)
    try:
        a.model_list = comma_list(a.models, "--models")
        sizes = []
        for s in comma_list(a.image_size, "--image-size"):
            if not s.isdigit() or int(s) < 16:
                raise UsageError(f"--image-size: {s!r} is not a size of at "
                                 "least 16")
            sizes.append(int(s))
        a.sizes = sizes
        a.run_list = comma_list(a.runs, "--runs")
        bad = [r for r in a.run_list if r not in RUNS]
        if bad:
            raise UsageError(f"--runs: unknown {bad}: expected names from "
                             f"{', '.join(RUNS)}")
        for k in ("batch", "steps", "threads", "timeout"):
            if getattr(a, k) < 1:
                raise UsageError(f"--{k} must be at least 1")
        if a.steps < 2:
            raise UsageError("--steps must be at least 2 (the RSS between "
                             "steps is read in the second half of the run)")
        if a.warmup < 0:
            raise UsageError("--warmup must not be negative")
        a.gpt_args = gpt_args(a.gpt)
        a.workloads = workloads(a.model_list, a.sizes, a.gpt_args)
    except UsageError as e:
        p.error(str(e))
    if a.replot:
        if not os.path.isfile(a.replot):
            p.error(f"--replot: no file {a.replot}")
        return a
    a.comet_train = a.comet_train or default_comet_train()
    a.torch_python = a.torch_python or default_torch_python()
    needs_torch = any(r.startswith("pytorch") for r in a.run_list) or any(
        MODELS[m] in (None, SEQ_LEN) for m, _ in a.workloads)
    needs_comet = any(r.startswith("comet") for r in a.run_list)
    if a.workloads and needs_comet and not os.access(a.comet_train, os.X_OK):
        p.error(f"comet-train not found at {a.comet_train} (--comet-train, "
                "$COMET_TRAIN or $COMET_BUILD_DIR)")
    if a.workloads and needs_torch:
        r = subprocess.run([a.torch_python, "-c",
                            "import torch, torchvision"],
                           capture_output=True, text=True) \
            if os.access(a.torch_python, os.X_OK) else None
        if r is None or r.returncode != 0:
            p.error(f"{a.torch_python} cannot import torch and torchvision "
                    "(--torch-python or $COMET_EXPORT_PYTHON; scripts/setup.sh "
                    "makes .venv-export)")
    return a


def replot(a):
    with open(a.replot) as f:
        res = json.load(f)
    want = set(a.workloads)
    ws = [w for w in res["workloads"] if (w["model"], w["image_size"]) in want]
    png = plot(ws, a.png or pathlib.Path(a.out) / "bench_peers.png")
    if png is None:
        print(f"--replot: no workload of {a.replot} matches --models and "
              "--image-size", file=sys.stderr)
        return 1
    print(png)
    return 0


def main(argv=None):
    a = parse(argv)
    if a.replot:
        return replot(a)
    out = pathlib.Path(a.out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    json_path = pathlib.Path(a.json or out / "bench_peers.json")
    png_path = pathlib.Path(a.png or out / "bench_peers.png")

    def log(text):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    total = len(a.workloads) * len(a.run_list)
    done, start = 0, time.monotonic()
    results, failed = [], 0
    for model, size in a.workloads:
        w = {"model": model, "image_size": size, "batch": a.batch, "runs": {}}
        if MODELS[model] == SEQ_LEN:
            w["model_args"] = a.gpt_args  # image_size: the sequence length
        results.append(w)
        try:
            folder = artifacts(model, size, a, log)
            opt = adamw_attributes(folder)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            for name in a.run_list:
                w["runs"][name] = {"error": str(e)}
            failed += len(a.run_list)
            done += len(a.run_list)
            log(f"{describe(model, size)}: {e}")
            continue
        w["artifacts"], w["optimizer"] = str(folder), opt
        for name in a.run_list:
            side, mode = name.split("-", 1)
            path = out / "runs" / f"{model}-{size}-b{a.batch}-{name}.json"
            t0 = time.monotonic()
            try:
                if side == "pytorch":
                    r = run_pytorch(model, size, mode, opt, a, path)
                else:
                    r = run_comet(model, folder, size, mode, a, path)
                r["seconds"] = time.monotonic() - t0
                what = (f"peak {mib(r['peak_bytes_rss'])} MiB RSS, "
                        f"{mib(r['peak_bytes_allocator'])} MiB allocator, "
                        f"step {r['step_time_ms']:.0f} ms "
                        f"(CPU {r['step_cpu_ms']:.0f} ms)")
            except (RuntimeError, OSError, ValueError, KeyError,
                    subprocess.TimeoutExpired) as e:
                r = {"error": str(e)}
                failed += 1
                what = f"FAILED: {str(e)[-300:]}"
            w["runs"][name] = r
            done += 1
            log(f"[{done}/{total}] {time.monotonic() - start:5.0f}s "
                f"{describe(model, size)} b{a.batch} {name}: {what}")
        ok = {k: v for k, v in w["runs"].items() if "error" not in v}
        relative(ok)
        w["goals"] = [{"goal": g, "figure": f, "met": m}
                      for g, f, m in goals(model, size, ok)]
    print(table(results))
    print()
    for w in results:
        for g in w.get("goals", []):
            print(f"{'met ' if g['met'] else 'MISS'}  {g['goal']}: {g['figure']}")
    png = plot(results, png_path)
    result = {
        "benchmark": "peers",
        "settings": {k: getattr(a, k) for k in (
            "model_list", "sizes", "gpt_args", "batch", "steps", "warmup",
            "threads", "run_list", "comet_train", "torch_python")},
        "mmap_threshold": peak_rss.MMAP_THRESHOLD,
        "basis": {"peaks": "peak_bytes_allocator", "step_time": "step_cpu_ms",
                  "prediction": "peak_bytes_allocator"},
        "goals_definition": GOALS,
        "workloads": results,
        "png": str(png) if png else None,
    }
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(result) + "\n")
    print(f"\nJSON: {json_path}" + (f"\nfigure: {png}" if png else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
