"""COMET against PyTorch on the GPU: scripts/gpu-run.sh's bench-peers leg.

The GPU machine has no LLVM, so COMET's side is comet-run on steps that
comet-compile made ahead of time on the build machine (scripts/gpu-run.sh
bundle writes them, with peers.json, into the bundle's peers/ folder):

  pytorch-eager        comet.torch_models' module on the GPU, eager
  pytorch-checkpoint   the same with torch.utils.checkpoint around each
                       stage (comet.torch_peer.Checkpointed)
  comet-none           comet-run --device cuda on the step compiled with
                       --compress none
  comet-static         the same, --compress static
  comet-*-tf32         the same two with COMET_RT_CUDA_CONV_TF32=1: cuDNN's
                       TF32 convolutions, as PyTorch runs them by default

each in its own process, on the same batch, input size and optimizer
(AdamW with the artifact folder's hyper-parameters, recorded in
peers.json), synthetic data as comet-run's `--data synthetic` gives it.
After --warmup steps, --steps steps are measured:

- the whole-step peak: PyTorch's torch.cuda.max_memory_allocated over the
  measured steps (its caching allocator's tensors and the cuDNN and cuBLAS
  workspaces it hands out; the weights, AdamW's moments and the batch are
  live throughout), COMET's report peak_bytes (its device allocator's
  high-water mark, the same kinds of bytes);
- the median step time, wall clock, with the GPU drained at each step's end
  (torch.cuda.synchronize; comet-run reads the loss back, which waits).

It prints a table with each peak over PyTorch eager and over checkpointing,
each step time over eager and over comet-none, and the goals:

- comet-static's peak below pytorch-checkpoint's;
- its time overhead over eager less than half checkpointing's;
- its step time at most 1.05x comet-none's.

    python3 -m comet.bench_peers_cuda --peers BUNDLE/peers \\
        --comet-run build-gpu/bin/comet-run --json OUT.json

The steps' weights are not the export's: each float tensor's first 8191
values (a prime count, so no two rows of a weight matrix repeat alike)
are its initial ones and the rest repeat them, which lets a step of
ResNet-18's 45 MB of weights travel in a few hundred kB. Values keep their
initial distribution; the memory and the time do not depend on them.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

MIB = 1 << 20
RUNS = ["pytorch-eager", "pytorch-checkpoint", "comet-none", "comet-static",
        "comet-none-tf32", "comet-static-tf32"]
# COMET's runs with cuDNN's TF32 convolutions (COMET_RT_CUDA_CONV_TF32), as
# PyTorch runs them by default: the same steps.
TF32 = "-tf32"
GOALS = {"static_below_checkpoint": 1.0, "overhead_vs_checkpoint": 0.5,
         "static_vs_none_time": 1.05}


def torch_worker(w, mode, steps, warmup, out):
    """One PyTorch run on the GPU; writes its figures to `out`."""
    import torch
    import torch.nn.functional as F

    from comet import torch_models
    from comet.export import parse_model_args
    from comet.torch_peer import Checkpointed, token_batch

    dev = torch.device("cuda")
    model = torch_models.build(w["model"], seed=0,
                               **parse_model_args(w.get("model_args", ""))).to(dev)
    model.train()
    net = Checkpointed(w["model"], model) if mode == "checkpoint" else model
    o = w["optimizer"]
    opt = torch.optim.AdamW(model.parameters(), lr=o["lr"],
                            betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                            weight_decay=o["weight_decay"])
    g = torch.Generator().manual_seed(0)
    if hasattr(model, "example_input"):
        x, y = token_batch(w["batch"], model.seq_len, model.vocab, g)
    else:
        s = w["image_size"]
        x = torch.rand(w["batch"], 1, s, s, generator=g)
        y = torch.randint(0, 10, (w["batch"],), generator=g)
    x, y = x.to(dev), y.to(dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    losses = [float(step()) for _ in range(warmup)]
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    ms = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        ms.append(1000 * (time.perf_counter() - t0))
        losses.append(float(loss))
    out.write_text(json.dumps({
        "peak_bytes": torch.cuda.max_memory_allocated(),
        "live_at_start": start, "step_ms": ms, "losses": losses,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(),
        "tf32_conv": torch.backends.cudnn.allow_tf32,
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32}))


def comet_run(w, mode, a, out):
    step = pathlib.Path(a.peers) / w["steps"][mode.removesuffix(TF32)]
    env = dict(os.environ)
    env.pop("COMET_RT_CUDA_CONV_TF32", None)
    if mode.endswith(TF32):
        env["COMET_RT_CUDA_CONV_TF32"] = "1"
    env.pop("COMET_RT_PROFILE", None)
    if a.profile_dir:
        prof = pathlib.Path(a.profile_dir) / f"profile-{w['name']}-{mode}.txt"
        prof.unlink(missing_ok=True)  # the runtime appends
        env["COMET_RT_PROFILE"] = str(prof)
    report = out.with_suffix(".report.json")
    shape = ([] if "seq_len" in w else
             ["--synthetic-shape", f"1x{w['image_size']}x{w['image_size']}"])
    cmd = [a.comet_run, str(step), "--device", "cuda", "--data", "synthetic",
           *shape, "--synthetic-size", str(w["batch"] * (a.warmup + a.steps)),
           "--max-steps", str(a.warmup + a.steps), "--eval-samples", "-1",
           "--seed", "0", "--quiet", "--report", str(report)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=a.timeout)
    if r.returncode != 0 or not report.exists():
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n"
                           f"{r.stderr[-3000:]}{r.stdout[-1000:]}")
    rep = json.loads(report.read_text())
    return {"peak_bytes": rep["peak_bytes"],
            "predicted_peak_bytes": rep.get("predicted_peak_bytes"),
            "step_ms_median": rep["step_time_ms_median"],
            "activation_bytes": rep.get("activation_bytes_uncompressed"),
            "activation_bytes_stored": rep.get("activation_bytes_compressed"),
            "losses": rep.get("loss_history"), "report": str(report)}


def run_torch(w, mode, a, out):
    cmd = [sys.executable, "-m", "comet.bench_peers_cuda", "--worker", mode,
           "--workload", json.dumps(w), "--steps", str(a.steps),
           "--warmup", str(a.warmup), "--json", str(out)]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parents[1]) + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=a.timeout)
    if r.returncode != 0:
        raise RuntimeError(f"PyTorch {mode}: exit {r.returncode}\n"
                           f"{r.stderr[-3000:]}")
    res = json.loads(out.read_text())
    res["step_ms_median"] = statistics.median(res["step_ms"])
    return res


def judge(rows):
    """The ratios and the goals of one workload's runs: comet-static against
    PyTorch and comet-none, and the same with TF32 convolutions."""
    e, c = rows.get("pytorch-eager"), rows.get("pytorch-checkpoint")

    def good(r):
        return r is not None and "error" not in r

    for name, r in rows.items():
        if not good(r):
            continue
        if good(e):
            r["peak_x_eager"] = r["peak_bytes"] / e["peak_bytes"]
            r["time_x_eager"] = r["step_ms_median"] / e["step_ms_median"]
        if good(c):
            r["peak_x_checkpoint"] = r["peak_bytes"] / c["peak_bytes"]
        if name.startswith("comet-"):
            n = rows.get("comet-none" + (TF32 if name.endswith(TF32) else ""))
            if good(n):
                r["time_x_none"] = r["step_ms_median"] / n["step_ms_median"]
    goals = {}
    for suffix in ("", TF32):
        n, s = rows.get("comet-none" + suffix), rows.get("comet-static" + suffix)
        if not all(good(r) for r in (e, c, n, s)):
            continue
        label = "static" + (" (TF32 conv)" if suffix else "")
        goals[f"{label} peak below checkpointing's"] = (
            s["peak_bytes"] < c["peak_bytes"],
            f"{s['peak_bytes'] / c['peak_bytes']:.3f}x")
        over_s = s["step_ms_median"] - e["step_ms_median"]
        over_c = c["step_ms_median"] - e["step_ms_median"]
        goals[f"{label}: time overhead < half checkpointing's"] = (
            over_s < GOALS["overhead_vs_checkpoint"] * over_c,
            f"{over_s:+.1f} ms against {over_c:+.1f} ms")
        goals[f"{label} step <= 1.05x none"] = (
            s["step_ms_median"] <= GOALS["static_vs_none_time"]
            * n["step_ms_median"], f"{s['time_x_none']:.3f}x")
    return goals


def table(results):
    lines = [f"{'workload':<22} {'run':<19} {'peak MiB':>9} {'x eager':>8} "
             f"{'x ckpt':>7} {'step ms':>9} {'x eager':>8} {'x none':>7}"]

    def f(r, k, spec):
        return format(r[k], spec) if r.get(k) is not None else "-"

    for name, res in results.items():
        for run, r in res["runs"].items():
            if "error" in r:
                lines.append(f"{name:<22} {run:<19} failed: "
                             f"{r['error'].splitlines()[-1][:60]}")
                continue
            lines.append(
                f"{name:<22} {run:<19} {r['peak_bytes'] / MIB:>9.1f} "
                f"{f(r, 'peak_x_eager', '.3f'):>8} "
                f"{f(r, 'peak_x_checkpoint', '.3f'):>7} "
                f"{r['step_ms_median']:>9.2f} {f(r, 'time_x_eager', '.3f'):>8} "
                f"{f(r, 'time_x_none', '.3f'):>7}")
        for g, (met, why) in res["goals"].items():
            lines.append(f"  {name}: {g}: {'met' if met else 'MISSED'} ({why})")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m comet.bench_peers_cuda",
                                description=__doc__.splitlines()[0])
    p.add_argument("--peers", help="the bundle's peers/ folder (peers.json "
                   "and the compiled steps)")
    p.add_argument("--comet-run", default="build-gpu/bin/comet-run")
    p.add_argument("--runs", default=",".join(RUNS))
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--json", required=True)
    p.add_argument("--profile-dir", metavar="DIR",
                   help="run COMET's steps under COMET_RT_PROFILE, each "
                   "table in DIR/profile-WORKLOAD-RUN.txt (every call "
                   "waits for the device: the step times are then the "
                   "profile's, not a benchmark's)")
    p.add_argument("--worker", choices=["eager", "checkpoint"],
                   help=argparse.SUPPRESS)
    p.add_argument("--workload", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    out = pathlib.Path(a.json)
    if a.worker:
        torch_worker(json.loads(a.workload), a.worker, a.steps, a.warmup, out)
        return 0
    if not a.peers:
        p.error("--peers is required")
    peers = pathlib.Path(a.peers)
    try:
        work = json.loads((peers / "peers.json").read_text())
    except (OSError, ValueError) as e:
        p.error(f"cannot read {peers / 'peers.json'}: {e}")
    runs = [r.strip() for r in a.runs.split(",") if r.strip()]
    bad = [r for r in runs if r not in RUNS]
    if bad:
        p.error(f"unknown runs {bad}: expected names from {', '.join(RUNS)}")
    scratch = out.parent / (out.stem + "-runs")
    scratch.mkdir(parents=True, exist_ok=True)
    results, failed = {}, 0
    for w in work:
        rows = {}
        for run in runs:
            if run.endswith(TF32) and "image_size" not in w:
                continue  # no convolutions
            side, mode = run.split("-", 1)
            path = scratch / f"{w['name']}-{run}.json"
            print(f"{w['name']}: {run} ...", flush=True)
            try:
                rows[run] = (run_torch(w, mode, a, path) if side == "pytorch"
                             else comet_run(w, run, a, path))
            except (RuntimeError, subprocess.TimeoutExpired, OSError,
                    ValueError, KeyError) as e:
                rows[run] = {"error": str(e)}
                failed += 1
                print(f"  failed: {str(e)[-1500:]}", flush=True)
        results[w["name"]] = {"workload": w, "runs": rows, "goals": judge(rows)}
    text = table(results)
    print(text)
    out.write_text(json.dumps({"steps": a.steps, "warmup": a.warmup,
                               "results": {k: {**v, "goals": {
                                   g: {"met": m, "value": why}
                                   for g, (m, why) in v["goals"].items()}}
                                   for k, v in results.items()}}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
