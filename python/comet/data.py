"""Fashion-MNIST in IDX form, as installed by the Debian package
dataset-fashion-mnist (/usr/share/datasets/fashion-mnist).

IDX: a 4-byte magic (two zero bytes, a type code, the number of dims), one
big-endian uint32 per dim, then the data in row-major order.  Fashion-MNIST
uses type 0x08 (unsigned byte): images are 3-D (N, 28, 28), labels 1-D (N,).
The files may be gzipped (the Debian package ships *.gz) or plain.

Images come back as float32 in [0, 1] with shape (N, 1, 28, 28) (NCHW);
labels as int64 in [0, 9].
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib

import numpy as np

DEBIAN_PACKAGE = "dataset-fashion-mnist"
DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
# Overrides DEFAULT_DIR when set (e.g. for a copy outside /usr/share).
ENV_DIR = "COMET_FASHION_MNIST_DIR"

FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
SPLIT_SIZES = {"train": 60000, "test": 10000}
NUM_CLASSES = 10
IMAGE_HW = (28, 28)

# IDX type code -> numpy big-endian dtype.
_IDX_TYPES = {
    0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8"),
}


class DatasetError(ValueError):
    """A dataset file exists but is not a valid IDX file of the expected kind."""


class DatasetNotFoundError(FileNotFoundError):
    """A dataset file is missing; the message names the Debian package."""


def data_dir() -> str:
    return os.environ.get(ENV_DIR) or DEFAULT_DIR


def _read_bytes(path: str) -> bytes:
    if not os.path.exists(path):
        raise DatasetNotFoundError(
            f"{path}: no such file; Fashion-MNIST comes from the Debian package "
            f"{DEBIAN_PACKAGE} (apt-get install {DEBIAN_PACKAGE}), or set "
            f"{ENV_DIR} to a folder with the IDX files")
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise DatasetError(f"{path}: corrupt gzip stream ({e})") from e
    return raw


def parse_idx(data: bytes, name: str = "<bytes>") -> np.ndarray:
    """Parse IDX bytes into an array; DatasetError on any inconsistency."""
    if len(data) < 4:
        raise DatasetError(f"{name}: {len(data)} bytes is too short for an IDX header")
    zero, code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or code not in _IDX_TYPES or ndim == 0:
        raise DatasetError(f"{name}: bad IDX magic 0x{data[:4].hex()}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DatasetError(f"{name}: truncated IDX header ({len(data)} of {header} bytes)")
    dims = struct.unpack(f">{ndim}I", data[4:header])
    dtype = _IDX_TYPES[code]
    want = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    have = len(data) - header
    if have != want:
        raise DatasetError(
            f"{name}: IDX dims {list(dims)} need {want} data bytes, file has {have}"
            + (" (truncated)" if have < want else " (trailing bytes)"))
    arr = np.frombuffer(data, dtype=dtype, offset=header).reshape(dims)
    return arr.astype(dtype.newbyteorder("="), copy=False)


def read_idx(path) -> np.ndarray:
    path = os.fspath(path)
    return parse_idx(_read_bytes(path), path)


def load_images(path) -> np.ndarray:
    """IDX image file -> float32 (N, 1, 28, 28) in [0, 1]."""
    arr = read_idx(path)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[1:] != IMAGE_HW:
        raise DatasetError(
            f"{path}: expected uint8 images of shape (N, 28, 28) (magic 0x00000803), "
            f"got {arr.dtype} {arr.shape}")
    # Divided in float32, as the runtime's IDX reader does (pixel / 255.0f),
    # so these arrays are the bits comet-train trains on.
    out = arr.astype(np.float32)
    out /= np.float32(255.0)
    return out.reshape(arr.shape[0], 1, *IMAGE_HW)


def load_labels(path) -> np.ndarray:
    """IDX label file -> int64 (N,) with values in [0, 9]."""
    arr = read_idx(path)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise DatasetError(
            f"{path}: expected uint8 labels of shape (N,) (magic 0x00000801), "
            f"got {arr.dtype} {arr.shape}")
    if arr.size and int(arr.max()) >= NUM_CLASSES:
        raise DatasetError(f"{path}: label {int(arr.max())} is out of range 0..9")
    return arr.astype(np.int64)


def load_fashion_mnist(split: str = "train", directory=None, limit: int | None = None):
    """Return (images, labels) of a split ("train" or "test").

    images: float32 (N, 1, 28, 28) in [0, 1]; labels: int64 (N,).
    `limit` keeps the first `limit` examples."""
    if split not in FILES:
        raise ValueError(f"unknown split {split!r}: expected 'train' or 'test'")
    d = os.fspath(directory) if directory is not None else data_dir()
    img_name, lab_name = FILES[split]
    images = load_images(os.path.join(d, img_name))
    labels = load_labels(os.path.join(d, lab_name))
    if images.shape[0] != labels.shape[0]:
        raise DatasetError(
            f"{d}: {split} split has {images.shape[0]} images but {labels.shape[0]} labels")
    if limit is not None:
        images, labels = images[:limit], labels[:limit]
    return images, labels


def batches(images: np.ndarray, labels: np.ndarray, batch: int, shuffle_seed: int | None = None):
    """Yield (x, y) batches of exactly `batch` examples (the tail is dropped)."""
    idx = np.arange(images.shape[0])
    if shuffle_seed is not None:
        np.random.default_rng(shuffle_seed).shuffle(idx)
    for s in range(0, len(idx) - batch + 1, batch):
        sel = idx[s:s + batch]
        yield np.ascontiguousarray(images[sel]), np.ascontiguousarray(labels[sel])
