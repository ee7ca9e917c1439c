"""The host side of comet.bench_codec_cuda and the sample scripts/gpu-run.sh
carries for it (comet.bench_codec.sample_classes): no GPU needed."""
import numpy as np
import pytest

from comet import bench_codec_cuda
from comet.bench_codec import sample_classes


def write(d, name, x):
    np.save(d / f"{name}.npy", np.asarray(x))


def test_class_data_concatenates_and_repeats(tmp_path):
    write(tmp_path, "dense__m1__a", np.arange(10, dtype=np.float32))
    write(tmp_path, "dense__m2__b", np.arange(10, 16, dtype=np.float32))
    write(tmp_path, "post_relu__m1__c", np.zeros((2, 3), np.float32))
    write(tmp_path, "dense__m1__ints", np.arange(5, dtype=np.int64))  # not f32
    sets = bench_codec_cuda.class_data(tmp_path, 4 * 40)
    assert sorted(sets) == ["dense", "post_relu"]
    dense = sets["dense"]
    assert dense.dtype == np.float32 and dense.size == 40
    # Name order, then repeated from the start.
    np.testing.assert_array_equal(dense[:16], np.arange(16, dtype=np.float32))
    np.testing.assert_array_equal(dense[16:32], np.arange(16, dtype=np.float32))
    assert sets["post_relu"].size == 40 and not sets["post_relu"].any()
    # A class larger than the size asked for keeps all its values.
    assert bench_codec_cuda.class_data(tmp_path, 8)["dense"].size == 16


def test_class_data_without_tensors_fails(tmp_path):
    with pytest.raises(FileNotFoundError):
        bench_codec_cuda.class_data(tmp_path, 1024)


def test_bad_data_fails_before_any_device_work(tmp_path):
    # No CUDA runtime is loaded when --data names nothing usable.
    with pytest.raises(FileNotFoundError):
        bench_codec_cuda.main(["--data", str(tmp_path), "--gib", "0.001"])


def test_sample_classes_takes_models_in_turn_within_budget(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    x = np.zeros(1000, np.float32)  # 4128 bytes as .npy
    for m in ("a", "b"):
        for i in range(3):
            write(src, f"dense__{m}__t{i}", x)
    write(src, "softmax__a__big", np.zeros(5000, np.float32))
    write(src, "not_a_dump", x)
    got = sorted(p.name for p in sample_classes(src, dst, 0.009))
    # 9000 bytes: two tensors of dense, one from each model; the big softmax
    # does not fit.
    assert got == ["dense__a__t0.npy", "dense__b__t0.npy"]
    assert sorted(p.name for p in dst.iterdir()) == got
    with pytest.raises(FileNotFoundError):
        sample_classes(tmp_path / "dst" / "none", dst, 1)
