"""Where the tests find COMET's built executables (one place for all), and
one training step through comet-train that dumps its loss and gradients."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {"comet-train": "COMET_TRAIN", "comet-opt": "COMET_OPT"}


def tool(name: str) -> str:
    """$COMET_TRAIN / $COMET_OPT, $COMET_BUILD_DIR/bin, PATH, then build/bin;
    skips the test if none exists."""
    env = ENV[name]
    candidates = [os.environ.get(env)]
    if os.environ.get("COMET_BUILD_DIR"):
        candidates.append(os.path.join(os.environ["COMET_BUILD_DIR"], "bin", name))
    candidates += [shutil.which(name), str(ROOT / "build" / "bin" / name)]
    for path in candidates:
        if path and os.path.exists(path):
            return path
    pytest.skip(f"{name} not built (set {env} or COMET_BUILD_DIR)")


def codec_lib():
    """The ctypes binding of the built libCometCodec.so (comet.bench_codec),
    or None where it is not built."""
    bench = pytest.importorskip("comet.bench_codec")
    try:
        return bench.CodecLib()
    except (FileNotFoundError, OSError):  # the library is not built here
        return None


def dump_one_step(model_dir, tmp_path, tag, batch, compress, extra=()):
    """One comet-train step of `model_dir`'s training graph on the batch in
    tmp_path/in.bin and labels.bin (--dump-grads): the folder of loss.bin
    and <param>.grad.bin, and the lowered IR's text."""
    out = Path(tmp_path) / tag
    ir = Path(tmp_path) / f"{tag}.mlir"
    subprocess.run([tool("comet-train"),
                    os.path.join(model_dir, "training_model.onnx"),
                    "--batch", str(batch), "--compress", compress,
                    "--dump-grads", str(out), "--dump-ir", str(ir),
                    "--inputs", str(Path(tmp_path) / "in.bin"),
                    "--labels", str(Path(tmp_path) / "labels.bin"),
                    *extra],
                   check=True, capture_output=True, text=True)
    return out, ir.read_text()
