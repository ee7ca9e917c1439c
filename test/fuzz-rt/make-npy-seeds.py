"""Writes the .npy/.npz seeds of the npy-parse fuzzer into corpus/npy (also
the inputs of test/unittests/Runtime/NpyTest.cpp, which checks their
values): every format version, dtype and layout COMET reads, the archives
numpy.savez and numpy.savez_compressed write (to a file, and to an
unseekable stream, which gives data descriptors), an archive with ZIP64
central directory and end records, and arrays COMET refuses (object,
structured, int16, unicode). Run with the .venv's python; the files are
checked in, so this runs only when they change.

    .venv/bin/python test/fuzz-rt/make-npy-seeds.py
"""
import io
import os
import struct
import zipfile
import zlib

import numpy as np
from numpy.lib import format as npf

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "npy")


def npy_bytes(a, version=None):
    f = io.BytesIO()
    npf.write_array(f, a, version=version, allow_pickle=True)
    return f.getvalue()


def save(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


class Unseekable(io.RawIOBase):
    """A pipe-like sink: zipfile then writes data descriptors."""

    def __init__(self):
        self.buf = bytearray()

    def writable(self):
        return True

    def seekable(self):
        return False

    def write(self, b):
        self.buf += b
        return len(b)


def zip64_archive(members):
    """Stored members whose central directory entries and end record all
    defer to ZIP64 records (as an archive past 4 GiB has them)."""
    out, central = bytearray(), bytearray()
    for name, data in members:
        name = name.encode()
        crc, n, offset = zlib.crc32(data), len(data), len(out)
        extra = struct.pack("<HHQQ", 1, 16, n, n)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0, crc,
                           0xFFFFFFFF, 0xFFFFFFFF, len(name), len(extra))
        out += name + extra + data
        extra = struct.pack("<HHQQQ", 1, 24, n, n, offset)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0,
                               0, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF, len(name),
                               len(extra), 0, 0, 0, 0, 0xFFFFFFFF)
        central += name + extra
    cd_offset = len(out)
    out += central
    end64 = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0,
                       len(members), len(members), len(central), cd_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, end64, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF,
                       0xFFFFFFFF, 0xFFFFFFFF, 0)
    return bytes(out)


def main():
    os.makedirs(OUT, exist_ok=True)
    f32 = (np.arange(6, dtype="<f4").reshape(2, 3) * 0.5 - 1).astype("<f4")
    save("f32-v1.npy", npy_bytes(f32, (1, 0)))
    save("f32-v2.npy", npy_bytes(f32, (2, 0)))
    save("f32-v3.npy", npy_bytes(f32, (3, 0)))
    save("f64.npy", npy_bytes(np.array([[1.5, -2.25], [1e-3, 3e38]], "<f8")))
    save("f16.npy", npy_bytes(np.array(
        [0, 1, -2, 65504, 2.0**-24, np.inf, -np.inf, np.nan], "<f2")))
    save("u8.npy", npy_bytes(np.arange(0, 256, 32, dtype="u1").reshape(2, 1, 2, 2)))
    save("i64.npy", npy_bytes(np.array([[0, 1, 2], [-3, 2**40, -2**62]], "<i8")))
    save("i32.npy", npy_bytes(np.array([7, -8, 2**31 - 1], "<i4")))
    save("f32-fortran.npy", npy_bytes(
        np.asfortranarray(np.arange(24, dtype="<f4").reshape(2, 3, 4))))
    save("f32-big-endian.npy", npy_bytes(np.arange(6, dtype=">f4").reshape(3, 2)))
    save("i64-big-endian-fortran.npy", npy_bytes(
        np.asfortranarray(np.arange(6, dtype=">i8").reshape(2, 3))))
    save("scalar.npy", npy_bytes(np.array(3.5, "<f4")))
    save("empty.npy", npy_bytes(np.zeros((0, 3), "<f4")))
    save("rank5.npy", npy_bytes(np.arange(32, dtype="u1").reshape(2, 2, 2, 2, 2)))
    save("object.npy", npy_bytes(np.array([1, "a"], dtype=object)))
    save("structured.npy", npy_bytes(np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")])))
    save("int16.npy", npy_bytes(np.array([1, 2], "<i2")))
    save("unicode.npy", npy_bytes(np.array(["ab", "c"])))

    x = (np.arange(16, dtype="<f4").reshape(4, 1, 2, 2) / 10).astype("<f4")
    y = np.array([0, 1, 2, 3], "<i8")
    for name, fn in (("savez.npz", np.savez),
                     ("savez-compressed.npz", np.savez_compressed)):
        f = io.BytesIO()
        fn(f, x=x, y=y)
        save(name, f.getvalue())
    ids = (np.arange(24, dtype="<i8").reshape(3, 8) * 7) % 50
    f = io.BytesIO()
    np.savez_compressed(f, x=ids, y=(ids + 1) % 50)
    save("tokens.npz", f.getvalue())
    f = io.BytesIO()
    np.savez_compressed(f, x=np.asfortranarray(
        np.arange(12, dtype="u1").reshape(3, 4)), y=np.array([1, 0, 1], "<i4"))
    save("u8-fortran-i32.npz", f.getvalue())
    s = Unseekable()
    np.savez(s, x=x, y=y)
    save("stream.npz", bytes(s.buf))
    save("zip64.npz", zip64_archive([("x.npy", npy_bytes(x)), ("y.npy", npy_bytes(y))]))

    # numpy and zipfile read back what they wrote and what was built here.
    for name in sorted(os.listdir(OUT)):
        path = os.path.join(OUT, name)
        if name.endswith(".npz"):
            with zipfile.ZipFile(path) as z:
                assert z.testzip() is None, name
            with np.load(path) as d:
                assert set(d.files) == {"x", "y"}, (name, d.files)
                if name in ("stream.npz", "zip64.npz"):
                    np.testing.assert_array_equal(d["x"], x)
                    np.testing.assert_array_equal(d["y"], y)
        else:
            np.load(path, allow_pickle=True)
    flags = {z.filename: z.flag_bits for z in zipfile.ZipFile(os.path.join(OUT, "stream.npz")).infolist()}
    assert all(f & 8 for f in flags.values()), flags


if __name__ == "__main__":
    main()
