"""comet.frontier on made-up comet.fidelity results: parity, the frontier
per model, the configuration chosen across models, and the plot."""
import json

import pytest

from comet import frontier as fr


def row(model, config, ratio, mean, ci, n=3):
    return {"model": model, "config": config, "activation_ratio_mean": ratio,
            "accuracy_change_pp": {"n": n, "mean": mean, "ci": ci}}


def result(rows):
    return {"settings": {"optimizer": None, "lr": 0.001, "epochs": 1},
            "summary": rows}


RESULTS = [
    result([row("lenet", "none", 1.0, 0.0, None),
            row("lenet", "static", 12.0, -0.05, [-0.4, 0.3]),
            row("lenet", "k0.1", 20.0, -0.15, [-0.5, 0.2]),
            row("lenet", "k1", 40.0, -0.9, [-1.5, -0.3])]),
    result([row("cnn", "static", 6.0, 0.1, [-0.2, 0.4]),
            row("cnn", "k0.1", 9.0, -0.3, [-0.8, 0.2]),
            row("cnn", "k1", 15.0, -1.2, [-2.0, -0.4])]),
]


def test_parity_needs_the_mean_and_an_interval_through_zero():
    assert fr.at_parity({"mean": -0.1, "ci": [-0.3, 0.1]})
    assert not fr.at_parity({"mean": -0.25, "ci": [-0.6, 0.1]})  # mean
    assert not fr.at_parity({"mean": 0.3, "ci": [0.1, 0.5]})  # a gain, off 0
    assert not fr.at_parity({"mean": 0.0, "ci": None})  # one seed
    assert fr.at_parity({"mean": -0.25, "ci": [-0.6, 0.1]}, parity=-0.3)


def test_frontier_per_model_and_the_choice():
    pts = fr.points(RESULTS)
    assert {(p["model"], p["config"]) for p in pts} == {
        ("lenet", "static"), ("lenet", "k0.1"), ("lenet", "k1"),
        ("cnn", "static"), ("cnn", "k0.1"), ("cnn", "k1")}
    per, choice = fr.frontier(pts)
    assert per["lenet"]["best"]["config"] == "k0.1"
    # k0.1 loses 0.3 pp on the CNN: its frontier is static.
    assert per["cnn"]["best"]["config"] == "static"
    # At parity on both models: static only.
    assert choice == {"config": "static", "smallest_ratio": 6.0}
    text = fr.table(per, choice)
    assert "k0.1" in text and "<- frontier" in text
    per, choice = fr.frontier(pts, parity=-0.35)
    assert choice == {"config": "k0.1", "smallest_ratio": 9.0}


def test_cli_writes_table_json_and_plot(tmp_path, capsys):
    paths = []
    for i, r in enumerate(RESULTS):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps(r) + "\n")
        paths.append(str(p))
    out, png = tmp_path / "f.json", tmp_path / "f.png"
    assert fr.main(paths + ["--json", str(out), "--png", str(png)]) == 0
    assert "at parity on every model: static" in capsys.readouterr().out
    got = json.loads(out.read_text())
    assert got["choice"]["config"] == "static"
    assert png.stat().st_size > 10_000


def test_refuses_what_it_cannot_read(tmp_path, capsys):
    with pytest.raises(SystemExit):
        fr.main([str(tmp_path / "missing.json")])
    assert "cannot read" in capsys.readouterr().err
    empty = tmp_path / "e.json"
    empty.write_text(json.dumps(result([row("lenet", "none", 1, 0, None)])))
    with pytest.raises(SystemExit):
        fr.main([str(empty)])
    assert "no compressed configuration" in capsys.readouterr().err
