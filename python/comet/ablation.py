"""Adaptive-bounds ablation: none / static / adaptive-comet / adaptive-acgc.

Runs comet-train on Fashion-MNIST for each model and configuration with the
same seed, data order and step count, and prints a table (test accuracy,
activation compression ratio, peak memory, median step time) and one JSON
line with every figure. Each run's report is kept in --out-dir, so
plot_eb_history.py can draw the bounds afterwards.

    python -m comet.ablation --comet-train build/bin/comet-train \\
        --models lenet resnet --max-steps 600 --retune-interval 100

Not a timed test: step times depend on the machine.
"""
import argparse
import json
import os
import subprocess
import sys

CONFIGS = {
    "none": ["--compress", "none"],
    "static": ["--compress", "static"],
    "adaptive-comet": ["--compress", "adaptive", "--bound-rule", "comet"],
    "adaptive-acgc": ["--compress", "adaptive", "--bound-rule", "acgc"],
}


def fixture(model):
    """A fixture model's training graph by name, or `model` itself when it
    is a path (an artifact folder or a training_model.onnx)."""
    if os.path.sep in model or os.path.exists(model):
        return model
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    return os.path.join(root, "test", "fixtures", "models", model,
                        "training_model.onnx")


def model_name(model):
    """The short name of a model for file names and tables."""
    if os.path.basename(model) == "training_model.onnx":
        model = os.path.dirname(model)
    return os.path.basename(os.path.normpath(model))


def train(comet_train, model, report, config_args, *, epochs, batch, seed,
          eval_samples=0, max_steps=0, extra=(), threads=None,
          optimizer="builtin"):
    """Runs comet-train once on Fashion-MNIST and returns its report (the
    loader's shuffle follows `seed`, so runs with one seed see one data
    order). `threads` sets OMP_NUM_THREADS: oneDNN's reductions, hence the
    last bits of every result, depend on the thread count. `optimizer`
    None keeps comet-train's default: the artifact folder's optimizer."""
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    cmd = [comet_train, fixture(model), "--data", "fashion-mnist",
           "--epochs", str(epochs), "--batch", str(batch),
           "--seed", str(seed), "--eval-samples", str(eval_samples),
           "--report", report, "--quiet", *config_args, *extra]
    if optimizer is not None:
        # The built-in SGD the LeNet figures were measured with
        # (comet-train's default is the folder's AdamW).
        cmd += ["--optimizer", optimizer]
    if max_steps:
        cmd += ["--max-steps", str(max_steps)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stderr}")
    with open(report) as f:
        return json.load(f)


def summary(r):
    """The report's figures that the benchmark tables use."""
    return {k: r[k] for k in (
        "steps", "test_accuracy", "final_loss", "compression_ratio",
        "activation_bytes_uncompressed", "activation_bytes_compressed",
        "peak_bytes", "step_time_ms_median")} | (
            {"step_cpu_ms_median": r["step_cpu_ms_median"]}
            if "step_cpu_ms_median" in r else {})


def run(args, model, config):
    report = os.path.join(args.out_dir, f"{model}-{config}.json")
    extra = (["--retune-interval", str(args.retune_interval)]
             if config.startswith("adaptive") else [])
    r = train(args.comet_train, model, report, CONFIGS[config],
              epochs=args.epochs, batch=args.batch, seed=args.seed,
              eval_samples=args.eval_samples, max_steps=args.max_steps,
              extra=extra)
    return {"model": model, "config": config, **summary(r), "report": report}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--comet-train", default="build/bin/comet-train")
    p.add_argument("--models", nargs="+", default=["lenet", "resnet"])
    p.add_argument("--configs", nargs="+", default=list(CONFIGS),
                   choices=list(CONFIGS))
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=0,
                   help="stop each run after N steps (0: the epochs)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-samples", type=int, default=0,
                   help="test samples (0: all 10000)")
    p.add_argument("--retune-interval", type=int, default=100)
    p.add_argument("--out-dir", default="ablation-out")
    args = p.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    rows = []
    for model in args.models:
        for config in args.configs:
            rows.append(run(args, model, config))
            print(f"done {model} {config}", file=sys.stderr, flush=True)
    hdr = (f"{'model':8} {'config':15} {'steps':>6} {'test acc':>9} "
           f"{'act ratio':>9} {'peak MiB':>9} {'step ms':>8}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['model']:8} {r['config']:15} {r['steps']:6d} "
              f"{r['test_accuracy']:9.4f} {r['compression_ratio']:9.2f} "
              f"{r['peak_bytes'] / 2**20:9.2f} {r['step_time_ms_median']:8.2f}")
    print(json.dumps({"benchmark": "adaptive-ablation",
                      "settings": {k: v for k, v in vars(args).items()
                                   if k != "comet_train"},
                      "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
