"""Ratio against accuracy: the frontier of the bound rules and their
parameters, from comet.fidelity's runs.

Each point is one model and configuration of a comet.fidelity run: x the
mean activation compression ratio over its seeds, y the paired change of
test accuracy against the same seeds' `none` runs (mean, with its 95%
Student-t interval as the bar). A configuration keeps parity on a model when
the mean change is at least --parity (-0.2 pp) and the interval includes 0.
For each model the table marks the largest ratio at parity (its frontier),
and across models it names the configuration at parity on every model with
the largest smallest ratio: the default the measurements support.

    python -m comet.fidelity --models lenet --configs none static \\
        --config "k0.05=--compress adaptive --bound-k 0.05" ... \\
        --json lenet.json
    python -m comet.frontier lenet.json cnn.json --png frontier.png \\
        --json frontier.json

Only the standard library and matplotlib (for --png).
"""
from __future__ import annotations

import argparse
import json
import sys

PARITY = -0.2  # pp


def points(results):
    """[{model, config, ratio, mean, ci, n}] of comet.fidelity results (the
    dicts its --json writes), the baseline left out. A model and
    configuration given twice keeps the later."""
    out = {}
    for res in results:
        baseline = "none"
        for row in res.get("summary", []):
            if row["config"] == baseline:
                continue
            acc = row["accuracy_change_pp"]
            out[(row["model"], row["config"])] = {
                "model": row["model"], "config": row["config"],
                "ratio": row["activation_ratio_mean"], "mean": acc["mean"],
                "ci": acc["ci"], "n": acc["n"],
                "optimizer": res.get("settings", {}).get("optimizer"),
                "lr": res.get("settings", {}).get("lr"),
                "epochs": res.get("settings", {}).get("epochs")}
    return list(out.values())


def at_parity(p, parity=PARITY):
    """Mean change at least `parity` pp and a 95% interval that includes 0
    (a single seed has no interval: never at parity)."""
    ci = p["ci"]
    return ci is not None and p["mean"] >= parity and ci[0] <= 0.0 <= ci[1]


def frontier(pts, parity=PARITY):
    """Per model, its points by ratio with their parity, the best (largest
    ratio at parity); and the configuration at parity on every model with
    the largest smallest ratio (None when no configuration is)."""
    models = list(dict.fromkeys(p["model"] for p in pts))
    per = {}
    for m in models:
        mine = sorted((p for p in pts if p["model"] == m),
                      key=lambda p: p["ratio"])
        ok = [p for p in mine if at_parity(p, parity)]
        per[m] = {"points": mine,
                  "best": max(ok, key=lambda p: p["ratio"]) if ok else None}
    configs = list(dict.fromkeys(p["config"] for p in pts))
    choice = None
    for c in configs:
        mine = {p["model"]: p for p in pts if p["config"] == c}
        if set(mine) != set(models) or not all(
                at_parity(p, parity) for p in mine.values()):
            continue
        worst = min(p["ratio"] for p in mine.values())
        if choice is None or worst > choice[1]:
            choice = (c, worst)
    return per, (None if choice is None
                 else {"config": choice[0], "smallest_ratio": choice[1]})


def table(per, choice, parity=PARITY):
    lines = [f"{'model':12} {'config':22} {'n':>2} {'ratio':>7} "
             f"{'d acc pp':>9} {'95% CI (pp)':>17}  parity"]
    for m, f in per.items():
        for p in f["points"]:
            ci = ("-" if p["ci"] is None
                  else f"[{p['ci'][0]:+.2f}, {p['ci'][1]:+.2f}]")
            mark = "yes" if at_parity(p, parity) else "no"
            if p is f["best"]:
                mark += "  <- frontier"
            lines.append(f"{m:12} {p['config']:22} {p['n']:>2} "
                         f"{p['ratio']:>7.2f} {p['mean']:>+9.2f} {ci:>17}  "
                         f"{mark}")
    if choice:
        lines.append(f"at parity on every model: {choice['config']} "
                     f"(smallest ratio {choice['smallest_ratio']:.2f}x)")
    else:
        lines.append("no configuration is at parity on every model")
    return "\n".join(lines)


def plot(per, out, parity=PARITY):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matplotlib.ticker import ScalarFormatter

    n = len(per)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.0 * cols, 4.4 * rows),
                             squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax, (m, f) in zip(axes.flat, per.items()):
        ax.axhspan(parity, max(1.0, max((p["ci"][1] for p in f["points"]
                                         if p["ci"]), default=1.0)),
                   color="0.93", zorder=0)
        ax.axhline(0.0, color="0.5", lw=0.8)
        ax.axhline(parity, color="0.5", lw=0.8, ls="--")
        for p in f["points"]:
            ok = at_parity(p, parity)
            err = None
            if p["ci"]:
                err = [[p["mean"] - p["ci"][0]], [p["ci"][1] - p["mean"]]]
            ax.errorbar(p["ratio"], p["mean"], yerr=err, fmt="o",
                        color="tab:blue" if ok else "tab:red", capsize=3)
            ax.annotate(p["config"], (p["ratio"], p["mean"]),
                        textcoords="offset points", xytext=(4, 4),
                        fontsize=7)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(ScalarFormatter())
        ax.tick_params(axis="x", which="minor", labelsize=7)
        ax.set_xlabel("activation compression ratio (mean over seeds)")
        ax.set_ylabel("paired test accuracy change (pp, 95% CI)")
        first = f["points"][0] if f["points"] else {}
        opt = first.get("optimizer")
        opt = "the folder's optimizer" if opt in (None, "folder") else opt
        lr = first.get("lr")
        ax.set_title(f"{m}: {opt}, lr {lr if lr is not None else 'default'}, "
                     f"{first.get('epochs')} epoch(s), {first.get('n')} seeds",
                     fontsize=9)
    fig.suptitle(f"blue: at parity (mean >= {parity} pp, interval includes "
                 "0); red: not", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m comet.frontier",
                                description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="+",
                   help="comet.fidelity --json files")
    p.add_argument("--parity", type=float, default=PARITY,
                   help="the smallest mean change at parity (pp)")
    p.add_argument("--png")
    p.add_argument("--json")
    a = p.parse_args(argv)
    results = []
    for path in a.results:
        try:
            with open(path) as f:
                results.append(json.loads(f.readline()))
        except (OSError, ValueError) as e:
            p.error(f"cannot read {path}: {e}")
    pts = points(results)
    if not pts:
        p.error("no compressed configuration in the results")
    per, choice = frontier(pts, a.parity)
    print(table(per, choice, a.parity))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"parity_pp": a.parity, "points": pts,
                       "frontier": {m: v["best"] for m, v in per.items()},
                       "choice": choice}, f, indent=1)
    if a.png:
        plot(per, a.png, a.parity)
    return 0


if __name__ == "__main__":
    sys.exit(main())
