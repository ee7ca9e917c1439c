"""python -m comet.fidelity: the paired statistics on numbers with known
answers, and a short real run that must produce the table, the JSON and
the PNG (docs/benchmarks.md, "Accuracy parity")."""
import json
import math
import os

import pytest
from comet_tools import tool

from comet import fidelity


@pytest.mark.parametrize("df,q", [
    # Two-sided 95% critical values of Student's t (standard tables).
    (1, 12.7062047), (2, 4.3026527), (3, 3.1824463), (4, 2.7764451),
    (5, 2.5705818), (9, 2.2621572), (30, 2.0422725)])
def test_t_quantile_matches_tables(df, q):
    assert fidelity.t_quantile(0.975, df) == pytest.approx(q, abs=1e-6)
    assert fidelity.t_quantile(0.025, df) == pytest.approx(-q, abs=1e-6)


def test_t_cdf_is_a_distribution_function():
    # df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/pi.
    for t in (-3.0, -0.5, 0.0, 1.0, 7.0):
        assert fidelity.t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi)
    # df = 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)).
    for t in (-2.0, 0.3, 4.0):
        assert fidelity.t_cdf(t, 2) == pytest.approx(
            0.5 + t / (2 * math.sqrt(2 + t * t)))
    with pytest.raises(ValueError):
        fidelity.t_cdf(1.0, 0)


def test_paired_differences_and_interval():
    # Differences 1..5: mean 3, sd sqrt(2.5), half-width t(0.975, 4) *
    # sd / sqrt(5) = 1.96324.
    base = [10.0, 20.0, 30.0, 40.0, 50.0]
    other = [11.0, 22.0, 33.0, 44.0, 55.0]
    p = fidelity.paired(base, other)
    assert p["n"] == 5 and p["diffs"] == [1, 2, 3, 4, 5]
    assert p["mean"] == pytest.approx(3.0)
    assert p["sd"] == pytest.approx(math.sqrt(2.5))
    assert p["ci"] == pytest.approx([3 - 1.963243, 3 + 1.963243], abs=1e-5)
    # The pairing, not the spread of either sample, sets the interval: a
    # constant shift has sd 0 and a zero-width interval.
    q = fidelity.paired(base, [b - 0.5 for b in base])
    assert q["mean"] == pytest.approx(-0.5) and q["sd"] == pytest.approx(0)
    assert q["ci"] == pytest.approx([-0.5, -0.5])
    # The numbers: -0.52 +- 0.63 pp over 5 seeds has a CI that
    # includes 0.
    assert fidelity.paired([0] * 5, [-1.5, 0.2, -0.3, -0.8, -0.2])["ci"][1] > 0
    with pytest.raises(ValueError):
        fidelity.paired([1.0], [1.0, 2.0])
    one = fidelity.paired([1.0], [1.5])
    assert one["mean"] == 0.5 and one["sd"] is None and one["ci"] is None


def test_compresses_reads_the_mode():
    assert not fidelity.compresses([])
    assert not fidelity.compresses(["--compress", "none"])
    assert fidelity.compresses(["--compress", "static", "--compress-only",
                                "none"])
    assert fidelity.compresses(["--lr", "0.1", "--compress=adaptive"])


def run_row(config, seed, acc, loss=1.0, ratio=1.0):
    return {"model": "m", "config": config, "seed": seed,
            "test_accuracy": acc, "final_loss": loss,
            "compression_ratio": ratio, "eval_history": []}


def test_analyse_pairs_by_seed():
    runs = [run_row("none", 1, 0.80, 0.5), run_row("none", 2, 0.70, 0.6),
            run_row("static", 2, 0.71, 0.4, 20.0),
            run_row("static", 1, 0.79, 0.5, 18.0),
            run_row("static", 3, 0.99, 0.1, 30.0)]  # seed 3 has no pair
    rows = fidelity.analyse(runs, ["none", "static"])
    st = next(r for r in rows if r["config"] == "static")
    assert st["seeds"] == [1, 2]
    assert st["accuracy_change_pp"]["diffs"] == pytest.approx([-1.0, 1.0])
    assert st["accuracy_change_pp"]["mean"] == pytest.approx(0.0)
    assert st["final_loss_change"]["diffs"] == pytest.approx([0.0, -0.2])
    assert st["activation_ratio_mean"] == pytest.approx(19.0)
    text = fidelity.table(rows)
    assert "static" in text and "+0.00" in text


def one_eval(config, seed, acc, ratio=1.0):
    r = run_row(config, seed, acc, 0.5, ratio)
    r["eval_history"] = [{"epoch": 1, "step": 10, "test_accuracy": acc}]
    return r


def test_from_json_tabulates_and_draws_earlier_runs(tmp_path, capsys):
    """--from-json trains nothing: it pairs the runs of earlier --json
    files (the first file's run where two have one) and draws the per-seed
    panels of one-evaluation runs."""
    a = {"configs": {"none": ["--compress", "none"], "static": ["-s"]},
         "runs": [one_eval("none", 1, 0.80), one_eval("none", 2, 0.70),
                  one_eval("static", 1, 0.79, 5.0),
                  one_eval("static", 2, 0.72, 5.0)]}
    b = {"configs": {"none": ["--compress", "none"], "tiny": ["-t"]},
         "runs": [one_eval("none", 1, 0.10),  # a's seed 1 wins
                  one_eval("tiny", 1, 0.81), one_eval("tiny", 2, 0.69),
                  one_eval("tiny", 3, 0.99)]}  # seed 3 has no pair
    fa, fb = tmp_path / "a.json", tmp_path / "b.json"
    fa.write_text(json.dumps(a))
    fb.write_text(json.dumps(b))
    png, out = tmp_path / "p.png", tmp_path / "out.json"
    assert fidelity.main(["--from-json", str(fa), str(fb), "--png", str(png),
                          "--json", str(out)]) == 0
    assert "tiny" in capsys.readouterr().out
    res = json.loads(out.read_text())
    assert list(res["configs"]) == ["none", "static", "tiny"]
    assert len(res["runs"]) == 7
    rows = {r["config"]: r for r in res["summary"]}
    assert rows["static"]["accuracy_change_pp"]["diffs"] == pytest.approx(
        [-1.0, 2.0])
    assert rows["tiny"]["seeds"] == [1, 2]
    assert rows["tiny"]["accuracy_change_pp"]["diffs"] == pytest.approx(
        [1.0, -1.0])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_from_json_refuses_what_it_cannot_pair(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{\"runs\": 3}")
    with pytest.raises(SystemExit, match="not a comet.fidelity --json file"):
        fidelity.main(["--from-json", str(bad)])
    with pytest.raises(SystemExit, match="not a comet.fidelity --json file"):
        fidelity.main(["--from-json", str(tmp_path / "missing.json")])
    bad.write_text(json.dumps({"configs": {}, "runs": [{"seed": 1}]}))
    with pytest.raises(SystemExit, match="not a comet.fidelity --json file"):
        fidelity.main(["--from-json", str(bad)])
    lone = tmp_path / "lone.json"
    lone.write_text(json.dumps({"configs": {"static": []},
                                "runs": [one_eval("static", 1, 0.5)]}))
    with pytest.raises(SystemExit, match="no 'none' runs"):
        fidelity.main(["--from-json", str(lone)])


def test_analyse_collects_the_error_model_per_seed():
    em = lambda cos: [{"value": "x", "param": "w", "ratio_coherent": 1.5,
                       "error_cosine": cos}]
    runs = [run_row("none", 1, 0.8), run_row("none", 2, 0.8),
            {**run_row("static", 1, 0.8), "error_model": em(-0.25)},
            {**run_row("static", 2, 0.8), "error_model": em(0.125)}]
    st = fidelity.analyse(runs, ["static"])[0]
    assert st["error_model_ratio"] == {"x -> w": 1.5}
    assert st["error_cosine"] == {"x -> w": [-0.25, 0.125]}
    assert "x -> w" in fidelity.table([st]) and "-0.250 +0.125" in fidelity.table([st])
    assert st["noise_to_error"] == {}


def test_analyse_takes_the_geometric_mean_of_noise_to_error():
    em = lambda g, u: [{"value": "x", "param": "w", "ratio_coherent": 1.0,
                        "grad_noise_to_error": g, "update_noise_to_error": u}]
    runs = [run_row("none", 1, 0.8), run_row("none", 2, 0.8),
            {**run_row("adaptive", 1, 0.8), "error_model": em(100.0, 10.0)},
            {**run_row("adaptive", 2, 0.8), "error_model": em(10000.0, 40.0)}]
    st = fidelity.analyse(runs, ["adaptive"])[0]
    assert st["noise_to_error"]["x -> w"]["grad"] == pytest.approx(1000.0)
    assert st["noise_to_error"]["x -> w"]["update"] == pytest.approx(20.0)
    text = fidelity.table([st])
    assert "minibatch noise / compression error" in text and "1e+03" in text


def smoke(tmp_path, *extra):
    if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        pytest.skip("dataset-fashion-mnist is not installed")
    out = tmp_path / "out"
    js, png = tmp_path / "f.json", tmp_path / "f.png"
    argv = ["--comet-train", tool("comet-train"), "--eval-samples", "1000",
            "--out-dir", str(out), "--json", str(js), "--png", str(png),
            *extra]
    assert fidelity.main(argv) == 0
    return json.loads(js.read_text()), png


def test_smoke_run_writes_table_json_and_png(tmp_path, capsys):
    # 2 seeds x (none, static), 120 steps, an evaluation every 93 steps.
    res, png = smoke(tmp_path, "--configs", "none", "static", "--seeds", "1",
                     "2", "--max-steps", "120", "--evals-per-epoch", "10")
    printed = capsys.readouterr()
    assert "d acc pp" in printed.out and "95% CI" in printed.out
    assert "[4/4]" in printed.err  # progress
    assert len(res["runs"]) == 4
    st = next(r for r in res["summary"] if r["config"] == "static")
    assert st["seeds"] == [1, 2]
    acc = st["accuracy_change_pp"]
    assert len(acc["diffs"]) == 2 and acc["ci"][0] <= acc["mean"] <= acc["ci"][1]
    assert st["activation_ratio_mean"] > 1
    for r in res["runs"]:
        assert r["steps"] == 120
        # The evaluation at step 93, then the final one.
        assert [h["step"] for h in r["eval_history"]] == [93, 120]
        assert r["eval_history"][-1]["test_accuracy"] == r["test_accuracy"]
    # Same seed, same data order: the uncompressed runs of two seeds differ,
    # and a run's figures come from its own report.
    nones = [r for r in res["runs"] if r["config"] == "none"]
    assert nones[0]["final_loss"] != nones[1]["final_loss"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # --resume takes the reports already there instead of training again.
    again, _ = smoke(tmp_path, "--configs", "none", "static", "--seeds", "1",
                     "2", "--max-steps", "120", "--evals-per-epoch", "10",
                     "--resume")
    assert "(resumed)" in capsys.readouterr().err
    assert all(r["resumed"] for r in again["runs"])
    assert again["summary"] == res["summary"]


def test_attribution_runs_each_site_alone_and_all_but_it(tmp_path):
    res, _ = smoke(tmp_path, "--configs", "none", "static", "--seeds", "1",
                   "--max-steps", "30", "--evals-per-epoch", "0",
                   "--attribute")
    static = next(r for r in res["runs"] if r["config"] == "static")
    names = [s["value"] for s in static["sites"]]
    lossy = [s["value"] for s in static["sites"] if s["codec"] == "sz"]
    assert len(names) == 4 and len(lossy) == 2  # LeNet: 2 mask, 2 sz sites
    assert len(res["runs"]) == 2 + 2 * len(lossy)
    for name in lossy:
        only = next(r for r in res["runs"] if r["config"] == f"{name}-only")
        but = next(r for r in res["runs"] if r["config"] == f"{name}-except")
        assert [s["value"] for s in only["sites"]] == [name]
        assert sorted(s["value"] for s in but["sites"]) == sorted(
            n for n in names if n != name)
