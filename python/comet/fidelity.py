"""Accuracy parity of compressed training, measured with paired statistics.

Trains each model once per seed and configuration with comet-train on
Fashion-MNIST; runs with one seed see one data order and start from the
same weights, so each compressed run is paired with the uncompressed run
of its seed. For each configuration the table gives the paired change of
test accuracy (mean, standard deviation and 95% confidence interval from
Student's t), the change of the final training loss and the activation
compression ratio; one JSON line holds every run's figures, and a PNG
draws test accuracy against epochs (mean over seeds, band: min to max)
and the paired change.

    python -m comet.fidelity --comet-train build/bin/comet-train \\
        --models lenet --configs none static adaptive --seeds 1 2 3 4 5 \\
        --epochs 3 --lr 0.01 --out-dir fidelity-out --png fidelity.png

Attribution (`--attribute`): for every lossy (sz) site of the first
compressed configuration's runs, adds that configuration restricted to the
site alone (`NAME-only`, comet-train --compress-only) and to every site but
it (`NAME-except`, --compress-except). `--config LABEL='ARGS'` adds any
other comet-train configuration, e.g. `--config "k1e-3=--compress static
--compress-options k=0.001"`.

`--from-json A.json B.json ...` trains nothing: it pairs and draws the runs
of earlier `--json` files, e.g. configurations measured in separate
invocations. Where every run has one evaluation (`--evals-per-epoch 0`)
the PNG shows each seed's accuracy and paired change per configuration
instead of curves.

Runs are deterministic for a given thread count (--threads, default 1):
the same seed and configuration give the same bits.

A benchmark, not a test: a 3-epoch, 5-seed LeNet run takes minutes.
"""
import argparse
import json
import math
import os
import shlex
import sys
import time

from comet.ablation import model_name, summary, train

CONFIGS = {
    "none": ["--compress", "none"],
    "static": ["--compress", "static"],
    "adaptive": ["--compress", "adaptive"],
}
BASELINE = "none"


# --- Statistics -------------------------------------------------------------

def t_cdf(t, df):
    """Student's t distribution function for an integer df >= 1, in closed
    form (Abramowitz & Stegun 26.7.3 and 26.7.4)."""
    if df < 1 or int(df) != df:
        raise ValueError("df must be a positive integer")
    theta = math.atan2(t, math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    if df % 2 == 1:
        # 2/pi (theta + s (c + 2/3 c^3 + ... + 2*4..(df-3)/(3*5..(df-2))
        # c^(df-2))), the sum empty for df = 1.
        acc = term = c if df > 1 else 0.0
        for k in range(2, (df - 1) // 2 + 1):
            term *= c * c * (2 * k - 2) / (2 * k - 1)
            acc += term
        a = 2 / math.pi * (theta + s * acc)
    else:
        # s (1 + 1/2 c^2 + 1*3/(2*4) c^4 + ... up to c^(df-2)).
        acc = term = 1.0
        for k in range(1, (df - 2) // 2 + 1):
            term *= c * c * (2 * k - 1) / (2 * k)
            acc += term
        a = s * acc
    return 0.5 + 0.5 * a


def t_quantile(p, df):
    """The p-quantile of Student's t with df degrees of freedom (bisection
    on t_cdf)."""
    if not 0 < p < 1:
        raise ValueError("p must be in (0, 1)")
    lo, hi = -1.0, 1.0
    while t_cdf(lo, df) > p:
        lo *= 2
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def paired(xs, ys, level=0.95):
    """Paired differences ys[i] - xs[i]: n, mean, sample sd, the Student-t
    confidence interval of the mean at `level`, and the differences."""
    if len(xs) != len(ys):
        raise ValueError("paired samples must have equal length")
    d = [y - x for x, y in zip(xs, ys)]
    n = len(d)
    if n == 0:
        raise ValueError("no pairs")
    mean = sum(d) / n
    if n < 2:
        return {"n": n, "mean": mean, "sd": None, "ci": None, "diffs": d}
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    half = t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "sd": sd, "ci": [mean - half, mean + half],
            "diffs": d}


# --- Runs -------------------------------------------------------------------

class Progress:
    """One line per finished run on stderr: count, elapsed time, an
    estimate of the time left, and the run's result."""

    def __init__(self, total, stream=None):
        self.total, self.done, self.stream = total, 0, stream or sys.stderr
        self.ran = 0  # runs not taken from --resume: they set the pace
        self.start = time.monotonic()

    def step(self, what, ran=True):
        self.done += 1
        self.ran += ran
        el = time.monotonic() - self.start
        left = el / max(self.ran, 1) * (self.total - self.done)
        self.stream.write(f"[{self.done}/{self.total}] {el:6.0f}s elapsed, "
                          f"~{left:.0f}s left  {what}\n")
        self.stream.flush()


def compresses(config_args):
    """Whether comet-train compresses with these arguments (its default
    is --compress none)."""
    mode = "none"
    for a, b in zip(config_args, config_args[1:]):
        if a == "--compress":
            mode = b
        elif a.startswith("--compress="):
            mode = a.split("=", 1)[1]
    if config_args and config_args[-1].startswith("--compress="):
        mode = config_args[-1].split("=", 1)[1]
    return mode != "none"


def run_one(args, model, label, config_args, seed):
    report = os.path.join(args.out_dir,
                          f"{model_name(model)}-{label}-seed{seed}.json")
    extra = list(args.train_args)
    if args.lr is not None:
        extra += ["--lr", str(args.lr)]
    if args.evals_per_epoch > 0:
        per_epoch = 60000 // args.batch  # Fashion-MNIST's training split
        extra += ["--eval-interval",
                  str(max(1, per_epoch // args.evals_per_epoch))]
    if args.error_model and compresses(config_args):
        # After training: each slot's weight-gradient error on the next
        # batch against the bound's prediction (docs/error-bounds.md).
        extra += ["--measure-error-model", report[:-5] + "-error-model.json"]
    if args.resume and os.path.exists(report):
        resumed = True
        with open(report) as f:
            r = json.load(f)
    else:
        resumed = False
        r = train(args.comet_train, model, report, config_args,
                  epochs=args.epochs, batch=args.batch, seed=seed,
                  eval_samples=args.eval_samples, max_steps=args.max_steps,
                  extra=extra, threads=args.threads,
                  optimizer=None if args.optimizer == "folder"
                  else args.optimizer)
    sites = [{"value": s["value"], "codec": s["codec"], "slot": s["slot"],
              "ratio": s["ratio"],
              "final_eb": s["eb_history"][-1]["eb"] if s["eb_history"]
              else None}
             for s in r["slots"]]
    error_model = [{k: m.get(k) for k in (
        "slot", "value", "param", "eb", "measured_std",
        "predicted_std_coherent", "ratio_coherent", "weight_elements",
        "error_projection", "error_cosine", "grad_noise_std",
        "grad_noise_to_error", "update_noise_to_error")}
        for m in r.get("error_model", [])]
    return {"model": model_name(model), "config": label, "seed": seed,
            **summary(r),
            "eval_history": r.get("eval_history", []), "sites": sites,
            "error_model": error_model, "report": report,
            "resumed": resumed}


def analyse(runs, configs):
    """Per model and configuration: the paired changes against BASELINE."""
    out = []
    for model in dict.fromkeys(r["model"] for r in runs):
        by = {}
        for r in runs:
            if r["model"] == model:
                by.setdefault(r["config"], {})[r["seed"]] = r
        base = by.get(BASELINE, {})
        for label in configs:
            rows = by.get(label, {})
            seeds = sorted(s for s in rows if s in base)
            if not seeds:
                continue
            acc = paired([100 * base[s]["test_accuracy"] for s in seeds],
                         [100 * rows[s]["test_accuracy"] for s in seeds])
            loss = paired([base[s]["final_loss"] for s in seeds],
                          [rows[s]["final_loss"] for s in seeds])
            ratios = [rows[s]["compression_ratio"] for s in seeds]
            em, cos, noise = {}, {}, {}
            for s in seeds:
                for m in rows[s].get("error_model", []):
                    key = f"{m['value']} -> {m['param']}"
                    em.setdefault(key, []).append(m["ratio_coherent"])
                    if m.get("error_cosine") is not None:
                        cos.setdefault(key, []).append(m["error_cosine"])
                    # The minibatch noise's variance over the error's, in
                    # the gradient and in the update (reports of builds
                    # before the check measured it have none).
                    for what in ("grad", "update"):
                        v = m.get(f"{what}_noise_to_error")
                        if v:
                            noise.setdefault(key, {}).setdefault(
                                what, []).append(v)
            out.append({
                "model": model, "config": label, "seeds": seeds,
                "error_model_ratio": {k: sum(v) / len(v)
                                      for k, v in em.items()},
                # Per seed: an error biased along the gradient gives a
                # cosine far outside +-1/sqrt(weight elements).
                "error_cosine": cos,
                # Per slot, the geometric mean over seeds of the noise's
                # variance over the error's (the ratios span decades).
                "noise_to_error": {
                    k: {w: math.exp(sum(map(math.log, xs)) / len(xs))
                        for w, xs in v.items()} for k, v in noise.items()},
                "accuracy": [rows[s]["test_accuracy"] for s in seeds],
                "accuracy_change_pp": acc,
                "final_loss_change": loss,
                "activation_ratio_mean": sum(ratios) / len(ratios),
            })
    return out


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def table(rows):
    hdr = (f"{'model':8} {'config':22} {'n':>2} {'acc %':>7} "
           f"{'d acc pp':>9} {'sd':>5} {'95% CI (pp)':>16} "
           f"{'d loss':>8} {'act ratio':>9}")
    lines = [hdr, "-" * len(hdr)]
    for r in rows:
        a, l = r["accuracy_change_pp"], r["final_loss_change"]
        ci = ("-" if a["ci"] is None
              else f"[{a['ci'][0]:+.2f}, {a['ci'][1]:+.2f}]")
        acc = 100 * sum(r["accuracy"]) / len(r["accuracy"])
        lines.append(f"{r['model']:8} {r['config']:22} {a['n']:2d} "
                     f"{acc:7.2f} {a['mean']:+9.2f} {fmt(a['sd'], '5.2f')} "
                     f"{ci:>16} {l['mean']:+8.4f} "
                     f"{r['activation_ratio_mean']:9.2f}")
    em = [(r, k, v) for r in rows
          for k, v in r.get("error_model_ratio", {}).items()]
    if em:
        lines += ["", "gradient error measured / predicted (mean over seeds); "
                  "cosine of the error with the gradient, per seed"]
        lines += [f"{r['model']:8} {r['config']:22} {k:32} {v:6.2f}  "
                  + " ".join(f"{c:+.3f}" for c in
                             r.get("error_cosine", {}).get(k, []))
                  for r, k, v in em]
    nz = [(r, k, v) for r in rows
          for k, v in r.get("noise_to_error", {}).items()]
    if nz:
        lines += ["", "minibatch noise / compression error, variance "
                  "(geometric mean over seeds): in the gradient, in the "
                  "optimizer's update"]
        lines += [f"{r['model']:8} {r['config']:22} {k:32} "
                  f"{fmt(v.get('grad'), '10.3g')} {fmt(v.get('update'), '10.3g')}"
                  for r, k, v in nz]
    return "\n".join(lines)


def strip(ax, x, label, base, rs):
    """Config `label`'s paired changes at x: a dot per seed (its number
    beside it), the mean with its 95% interval as a bar."""
    pairs = [r for r in rs if r["seed"] in base]
    ds = [100 * (r["test_accuracy"] - base[r["seed"]]["test_accuracy"])
          for r in pairs]
    if not ds:
        return
    color = f"C{x}"
    ax.scatter([x] * len(ds), ds, color=color, s=18, zorder=3)
    for r, d in zip(pairs, ds):
        ax.annotate(str(r["seed"]), (x, d), xytext=(4, -3),
                    textcoords="offset points", fontsize=7, color=color)
    if len(ds) >= 2:
        st = paired([100 * base[r["seed"]]["test_accuracy"] for r in pairs],
                    [100 * r["test_accuracy"] for r in pairs])
        ax.errorbar([x - 0.15], [st["mean"]],
                    yerr=[[st["mean"] - st["ci"][0]], [st["ci"][1] - st["mean"]]],
                    fmt="s", color=color, capsize=4)


def plot(runs, configs, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in runs))
    fig, axes = plt.subplots(len(models), 2, figsize=(12, 4.2 * len(models)),
                             squeeze=False)
    for row, model in zip(axes, models):
        ax_acc, ax_d = row
        base = {r["seed"]: r for r in runs
                if r["model"] == model and r["config"] == BASELINE}
        # One evaluation per run: the paired change per seed, config by
        # config, since there is no curve to draw.
        single = all(len(r["eval_history"]) <= 1 for r in runs
                     if r["model"] == model)
        for i, label in enumerate(configs):
            rs = [r for r in runs if r["model"] == model
                  and r["config"] == label and r["eval_history"]]
            if not rs:
                continue
            if single:
                ax_acc.scatter([i] * len(rs),
                               [100 * r["test_accuracy"] for r in rs],
                               color=f"C{i}", s=18, zorder=3)
                if label != BASELINE:
                    strip(ax_d, i, label, base, rs)
                continue
            n = min(len(r["eval_history"]) for r in rs)
            xs = [h["epoch"] for h in rs[0]["eval_history"][:n]]
            ys = [[100 * r["eval_history"][k]["test_accuracy"] for r in rs]
                  for k in range(n)]
            color = f"C{i}"
            ax_acc.plot(xs, [sum(y) / len(y) for y in ys], color=color,
                        marker="o", label=f"{label} ({len(rs)} seeds)")
            ax_acc.fill_between(xs, [min(y) for y in ys],
                                [max(y) for y in ys], color=color, alpha=0.15)
            if label == BASELINE or single:
                continue
            pairs = [r for r in rs if r["seed"] in base
                     and len(base[r["seed"]]["eval_history"]) >= n]
            if len(pairs) < 2:
                continue
            ds = [paired([100 * base[r["seed"]]["eval_history"][k]
                          ["test_accuracy"] for r in pairs],
                         [100 * r["eval_history"][k]["test_accuracy"]
                          for r in pairs]) for k in range(n)]
            ax_d.plot(xs, [d["mean"] for d in ds], color=color, marker="o",
                      label=label)
            ax_d.fill_between(xs, [d["ci"][0] for d in ds],
                              [d["ci"][1] for d in ds], color=color,
                              alpha=0.15)
        ax_d.axhline(0, color="k", linewidth=0.8)
        ax_d.set_ylabel("accuracy change (pp)")
        ax_acc.set_ylabel("test accuracy (%)")
        if single:
            # A line per seed through its runs: the pairs the change is of.
            for seed in sorted({r["seed"] for r in runs
                                if r["model"] == model}):
                pts = [(i, 100 * r["test_accuracy"])
                       for i, label in enumerate(configs) for r in runs
                       if r["model"] == model and r["config"] == label
                       and r["seed"] == seed]
                ax_acc.plot(*zip(*pts), color="0.6", linewidth=0.8,
                            zorder=1)
                ax_acc.annotate(str(seed), pts[-1], xytext=(4, -3),
                                textcoords="offset points", fontsize=7)
            ax_acc.set_title(f"{model}: test accuracy (a line per seed)")
            ax_d.set_title(f"{model}: paired change vs {BASELINE}\n"
                           "(dots: seeds; bar: mean, 95% CI)")
            for ax, lo in ((ax_acc, -0.5), (ax_d, 0.5)):
                ax.set_xticks(range(len(configs)))
                ax.set_xticklabels(list(configs), rotation=30, ha="right")
                ax.set_xlim(lo, len(configs) - 0.5)
        else:
            ax_acc.set_title(f"{model}: test accuracy (band: min..max over "
                             "seeds)")
            ax_acc.set_xlabel("epoch")
            ax_acc.legend()
            ax_d.set_title(f"{model}: paired change vs {BASELINE} "
                           "(band: 95% CI)")
            ax_d.set_xlabel("epoch")
            if ax_d.lines[1:]:
                ax_d.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def parse_config(text):
    label, sep, cmd = text.partition("=")
    if not sep or not label or not cmd:
        raise argparse.ArgumentTypeError("--config takes LABEL='ARGS'")
    return label, shlex.split(cmd)


def replay(args):
    """--from-json: the table, JSON and PNG of earlier runs."""
    runs, configs, seen = [], {}, set()
    for path in args.from_json:
        try:
            with open(path) as f:
                res = json.load(f)
            cfgs = dict(res["configs"])
            got = [((r["model"], r["config"], r["seed"]), r)
                   for r in res["runs"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"--from-json {path}: not a comet.fidelity "
                             f"--json file ({e!r})")
        for label, cargs in cfgs.items():
            configs.setdefault(label, cargs)
        for key, r in got:
            if key not in seen:
                seen.add(key)
                runs.append(r)
    if not any(r["config"] == BASELINE for r in runs):
        raise SystemExit(f"--from-json: no '{BASELINE}' runs to pair with")
    # The baseline first, as a run of this tool orders them.
    configs = {BASELINE: configs.pop(BASELINE, CONFIGS[BASELINE]), **configs}
    return report(args, {"from_json": args.from_json}, configs, runs,
                  list(configs))


def report(args, settings, configs, runs, drawn):
    """The table, the JSON line (and --json), and --png of `drawn`."""
    rows = analyse(runs, list(configs))
    print(table(rows))
    line = json.dumps({"benchmark": "fidelity", "settings": settings,
                       "configs": dict(configs), "summary": rows,
                       "runs": runs})
    print(line)
    if args.json:
        with open(args.json, "w") as f:
            f.write(line + "\n")
    if args.png:
        plot(runs, drawn, args.png)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--comet-train", default="build/bin/comet-train")
    p.add_argument("--models", nargs="+", default=["lenet"])
    p.add_argument("--configs", nargs="+", default=list(CONFIGS),
                   choices=list(CONFIGS))
    p.add_argument("--config", action="append", type=parse_config,
                   default=[], metavar="LABEL='ARGS'",
                   help="another configuration (comet-train arguments)")
    p.add_argument("--attribute", action="store_true",
                   help="add NAME-only and NAME-except configurations for "
                        "every compressed site")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--max-steps", type=int, default=0,
                   help="stop each run after N steps (0: the epochs)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=None,
                   help="learning rate (default: 0.01 with the built-in "
                        "SGD, the folder's own with --optimizer folder)")
    p.add_argument("--optimizer", default="builtin",
                   help="'builtin' (SGD with momentum), 'folder' (the "
                        "artifact folder's optimizer_model.onnx) or an "
                        "optimizer graph")
    p.add_argument("--eval-samples", type=int, default=0,
                   help="test samples (0: all 10000)")
    p.add_argument("--evals-per-epoch", type=int, default=1,
                   help="test evaluations per epoch for the curves "
                        "(0: only after training)")
    p.add_argument("--threads", type=int, default=1,
                   help="OMP_NUM_THREADS of every run (one count for all "
                        "runs keeps the pairs' arithmetic identical; 1 "
                        "avoids oneDNN's spinning threads on a busy "
                        "machine)")
    p.add_argument("--train-args", default="", type=shlex.split,
                   help="more comet-train arguments for every run")
    p.add_argument("--out-dir", default="fidelity-out")
    p.add_argument("--error-model", action="store_true",
                   help="after each compressed run, compare every slot's "
                        "gradient error with the bound's prediction "
                        "(comet-train --measure-error-model)")
    p.add_argument("--resume", action="store_true",
                   help="reuse the reports already in --out-dir (same "
                        "settings assumed) instead of re-running them")
    p.add_argument("--from-json", nargs="+", metavar="JSON",
                   help="train nothing: tabulate and draw the runs of "
                        "earlier --json files (a (model, config, seed) run "
                        "from the first file that has it)")
    p.add_argument("--json", help="also write the JSON here")
    p.add_argument("--png", help="draw the accuracy curves here")
    args = p.parse_args(argv)
    if args.from_json:
        return replay(args)
    if args.lr is None and args.optimizer == "builtin":
        args.lr = 0.01
    os.makedirs(args.out_dir, exist_ok=True)

    configs = {c: CONFIGS[c] for c in args.configs}
    configs.update(args.config)
    if BASELINE not in configs:
        configs = {BASELINE: CONFIGS[BASELINE], **configs}
    # --attribute adds its runs to the count once it knows the sites.
    progress = Progress(len(args.models) * len(args.seeds) * len(configs))
    runs = []

    def go(model, label, cargs):
        for seed in args.seeds:
            r = run_one(args, model, label, cargs, seed)
            runs.append(r)
            progress.step(f"{model} {label} seed {seed}: acc "
                          f"{100 * r['test_accuracy']:.2f}%, act ratio "
                          f"{r['compression_ratio']:.2f}"
                          + (" (resumed)" if r["resumed"] else ""),
                          ran=not r["resumed"])

    base_configs = list(configs.items())
    for model in args.models:
        for label, cargs in base_configs:
            go(model, label, cargs)
        if args.attribute:
            first = next((lb for lb in configs if lb != BASELINE), None)
            if first is None:
                raise SystemExit("--attribute needs a compressed configuration")
            # Lossy sites only: a mask site stores exactly what ReluGrad
            # reads, so compressing it changes no bit of training.
            sites = [s["value"] for s in next(
                r for r in runs if r["model"] == model_name(model)
                and r["config"] == first)["sites"] if s["slot"] is not None]
            progress.total += len(args.seeds) * 2 * len(sites)
            for site in sites:
                for kind in ("only", "except"):
                    label = f"{site}-{kind}"
                    configs[label] = dict(base_configs)[first] + [
                        f"--compress-{kind}", site]
                    go(model, label, configs[label])

    settings = {k: v for k, v in vars(args).items()
                if k not in ("comet_train", "config")}
    return report(args, settings, configs, runs,
                  [c for c in configs if not c.endswith(("-only", "-except"))])


if __name__ == "__main__":
    sys.exit(main())
