"""Writes the arrays of arrays.test into the folder argv[1]: 64 LeNet
samples (1x28x28) with labels in [0, 10) as .npy and .npz files, the same
samples as float64 and in Fortran order, and broken variants, one fault
each."""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
x = rng.random((64, 1, 28, 28), dtype=np.float32)
y = rng.integers(0, 10, 64).astype(np.int64)


def save(name, a):
    np.save(os.path.join(out, name), a)


save("x.npy", x)
save("y.npy", y)
np.savez(os.path.join(out, "d.npz"), x=x, y=y)
# The same samples in other layouts and types: the same losses.
np.savez_compressed(os.path.join(out, "other.npz"),
                    images=np.asfortranarray(x.astype(np.float64)),
                    labels=y.astype(np.int32))
save("x-big-endian.npy", x.astype(">f4"))
# One fault each.
save("x-no-channel.npy", x[:, 0])
save("x-32.npy", np.zeros((64, 1, 32, 32), np.float32))
save("x-int64.npy", (x * 255).astype(np.int64))
x_nan = x.copy()
x_nan[3, 0, 5, 7] = np.nan
save("x-nan.npy", x_nan)
y_big = y.copy()
y_big[5] = 10
save("y-10.npy", y_big)
save("y-63.npy", y[:63])
save("y-float.npy", y.astype(np.float32))
save("y-2.npy", np.stack([y, y], axis=1))
with open(os.path.join(out, "x.npy"), "rb") as f:
    data = f.read()
with open(os.path.join(out, "x-cut.npy"), "wb") as f:
    f.write(data[:-1])
with open(os.path.join(out, "text.npy"), "w") as f:
    f.write("not an array\n")
