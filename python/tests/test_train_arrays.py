"""comet-train on the user's arrays (--train-data/--test-data, .npy and
.npz): the same samples in the same order give bit-identical losses and
test figures to the built-in sources.

Fashion-MNIST: the runtime's IDX reader gives pixel / 255.0f in float32, and
comet.data.load_fashion_mnist divides in float32 too, so its arrays are the
same bits (the test trains on them, which checks that). The loader's order
depends only on the sample count, --seed and the epoch, so the batches match.

The gpt: token arrays of the synthetic walk that --data synthetic draws
(comet_rt_dataset_get_tokens, rewritten below from docs/runtime.md), the
test split from --seed + 1, give the same losses and per-token accuracy.

A missing dataset or gpt export skips, and fails under CI=true."""
import json
import os
import subprocess

import numpy as np
import pytest
from comet import data
from comet_tools import tool
from test_torch_models_vs_ort import model_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LENET = os.path.join(ROOT, "test", "fixtures", "models", "lenet", "training_model.onnx")
FMNIST = "/usr/share/datasets/fashion-mnist"


def train(tmp_path, name, args, check=True):
    """comet-train ARGS --quiet --report; the report (or the process when
    check is False)."""
    rep = tmp_path / f"{name}.json"
    p = subprocess.run([tool("comet-train"), *map(str, args), "--quiet",
                        "--report", str(rep)],
                       capture_output=True, text=True, timeout=600)
    if not check:
        return p
    assert p.returncode == 0, p.stderr
    return json.loads(rep.read_text())


def fashion_mnist_arrays(split):
    """comet.data's samples of a split: float32 N x 1 x 28 x 28, int64 N."""
    return data.load_fashion_mnist(split, directory=FMNIST)


def test_fashion_mnist_arrays_train_bit_identically(tmp_path):
    if not os.path.isdir(FMNIST):
        pytest.skip("dataset-fashion-mnist not installed")
    x, y = fashion_mnist_arrays("train")
    tx, ty = fashion_mnist_arrays("test")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.savez(tmp_path / "test.npz", x=tx, y=ty)
    common = [LENET, "--batch", 64, "--max-steps", 30, "--seed", 7,
              "--eval-samples", 500, "--eval-interval", 15]
    ref = train(tmp_path, "ref", [*common, "--data", "fashion-mnist",
                                  "--data-dir", FMNIST])
    arr = train(tmp_path, "arr", [*common, "--train-data", tmp_path / "x.npy",
                                  "--train-labels", tmp_path / "y.npy",
                                  "--test-data", tmp_path / "test.npz"])
    assert len(ref["loss_history"]) == 30
    assert arr["loss_history"] == ref["loss_history"]
    assert arr["eval_history"] == ref["eval_history"]
    assert arr["test_accuracy"] == ref["test_accuracy"] > 0.3
    assert ref["data"] == "fashion-mnist"
    assert arr["data"] == (
        f"arrays: train {tmp_path}/x.npy (float32 60000x1x28x28) and "
        f"{tmp_path}/y.npy (int64 60000); test {tmp_path}/test.npz[x] "
        f"(float32 10000x1x28x28) and {tmp_path}/test.npz[y] (int64 10000)")
    # float32 samples take 4 bytes each, labels 8.
    assert arr["dataset_bytes"] == 70000 * (784 * 4 + 8)

    # A validation split holds out the last samples and evaluates on them:
    # 10000 training samples with the 500 first test samples after them
    # train and evaluate as the 10000 with --test-data and 500 of its
    # samples.
    np.save(tmp_path / "x10k.npy", x[:10000])
    np.save(tmp_path / "y10k.npy", y[:10000])
    np.save(tmp_path / "xt.npy", np.concatenate([x[:10000], tx[:500]]))
    np.save(tmp_path / "yt.npy", np.concatenate([y[:10000], ty[:500]]))
    common = [LENET, "--batch", 64, "--max-steps", 10, "--seed", 3]
    split = train(tmp_path, "split", [
        *common, "--train-data", tmp_path / "xt.npy", "--train-labels",
        tmp_path / "yt.npy", "--validation-split", 500 / 10500])
    test = train(tmp_path, "test", [
        *common, "--train-data", tmp_path / "x10k.npy", "--train-labels",
        tmp_path / "y10k.npy", "--test-data", tmp_path / "test.npz",
        "--eval-samples", 500])
    assert split["data"].endswith("; validation: the last 500 of 10500 training samples")
    assert len(split["loss_history"]) == 10
    assert split["loss_history"] == test["loss_history"]
    assert (split["test_accuracy"], split["test_loss"]) == (test["test_accuracy"], test["test_loss"])


M64 = (1 << 64) - 1


def _splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def _bounded(state, bound):
    """Uniform in [0, bound) by Lemire's method, as the runtime draws it."""
    state, r = _splitmix(state)
    m = r * bound
    if (m & M64) < bound:
        threshold = ((1 << 64) - bound) % bound
        while (m & M64) < threshold:
            state, r = _splitmix(state)
            m = r * bound
    return state, m >> 64


def synthetic_tokens(n, seq_len, vocab, per_sample, classes, seed):
    """comet_rt_dataset_synthetic_tokens' samples: ids s_0.. with s_0
    uniform and s_{k+1} = s_k + 1, 2 or 3 mod vocab; label j the id after
    position seq_len - per_sample + j, modulo the classes."""
    ids = np.zeros((n, seq_len), np.int64)
    labels = np.zeros((n, per_sample), np.int64)
    for i in range(n):
        state, _ = _splitmix((seed * 0x9E3779B97F4A7C15 + i) & M64)
        state, s = _bounded(state, vocab)
        for k in range(seq_len):
            ids[i, k] = s
            state, step = _bounded(state, 3)
            s = (s + 1 + step) % vocab
            if k >= seq_len - per_sample:
                labels[i, k - (seq_len - per_sample)] = s % classes
    return ids, labels


def test_gpt_trains_from_token_arrays(tmp_path):
    """The gpt's data input takes int64 ids (32 per sample, vocabulary 256)
    and its labels one per token: token arrays (int64 .npy, and int32 ids
    with uint8 test labels in an .npz) train exactly as --data synthetic on
    the same sequences; ids or labels outside 256 and sequences of another
    length are errors naming the array."""
    d = model_dir("gpt")
    n, steps = 160, 20
    x, y = synthetic_tokens(n, 32, 256, 32, 256, seed=0)
    tx, ty = synthetic_tokens(128, 32, 256, 32, 256, seed=1)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.savez_compressed(tmp_path / "d.npz", ids=x.astype(np.int32), next=y,
                        test_ids=tx, test_next=ty.astype(np.uint8))
    common = [d, "--batch", 8, "--max-steps", steps, "--eval-samples", 128]
    ref = train(tmp_path, "ref", [*common, "--data", "synthetic",
                                  "--synthetic-size", n])
    npy = train(tmp_path, "npy", [*common, "--train-data", tmp_path / "x.npy",
                                  "--train-labels", tmp_path / "y.npy",
                                  "--test-data", tmp_path / "d.npz",
                                  "--test-data-key", "test_ids",
                                  "--test-labels-key", "test_next"])
    assert len(ref["loss_history"]) == steps and ref["optimizer"] == "AdamWOptimizer"
    assert npy["loss_history"] == ref["loss_history"]
    assert (npy["test_accuracy"], npy["test_loss"]) == (ref["test_accuracy"], ref["test_loss"])
    assert npy["data"] == (
        f"arrays: train {tmp_path}/x.npy (int64 160x32) and {tmp_path}/y.npy "
        f"(int64 160x32); test {tmp_path}/d.npz[test_ids] (int64 128x32) and "
        f"{tmp_path}/d.npz[test_next] (uint8 128x32)")
    npz = train(tmp_path, "npz", [d, "--batch", 8, "--max-steps", steps,
                                  "--eval-samples", -1, "--train-data",
                                  tmp_path / "d.npz", "--data-key", "ids",
                                  "--labels-key", "next"])
    assert npz["loss_history"] == ref["loss_history"]

    # What the model cannot take.
    bad = x.copy()
    bad[3, 17] = 256
    np.save(tmp_path / "bad.npy", bad)
    np.save(tmp_path / "short.npy", x[:, :16])
    np.save(tmp_path / "float.npy", x.astype(np.float32))
    np.save(tmp_path / "y1.npy", y[:, 0])
    for data_file, labels_file, msg in [
            ("bad.npy", "y.npy", "bad.npy: token id 256 at sample 3, position 17 is not in [0, 256)"),
            ("short.npy", "y.npy", "short.npy: samples of 16 (the array is 160x16) but the "
             "model's input takes 32 per sample: dim 1 of the array is 16, expected 32"),
            ("float.npy", "y.npy", "float.npy holds float32; token ids are read from int64, "
             "int32 or uint8 arrays"),
            ("x.npy", "y1.npy", "y1.npy: 1 label per sample but the model takes 32 per "
             "sample: the array must be N x 32")]:
        p = train(tmp_path, "bad", [d, "--max-steps", 1, "--train-data",
                                    tmp_path / data_file, "--train-labels",
                                    tmp_path / labels_file], check=False)
        assert p.returncode == 1 and msg in p.stderr, p.stderr
