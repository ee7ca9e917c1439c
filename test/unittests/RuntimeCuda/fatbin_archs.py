#!/usr/bin/env python3
"""Lists the device code in a shared library's .nv_fatbin section.

  fatbin_archs.py LIB [--expect "80-real;90-real;90-virtual"]

Prints one line per entry kind, e.g. `elf sm_80`, `ptx sm_90` (what
`cuobjdump --list-elf/--list-ptx` lists, without needing the CUDA tools).
With --expect (CMAKE_CUDA_ARCHITECTURES), exits 1 unless the library holds
exactly a cubin for each -real (or plain) entry and PTX for each -virtual
(or plain) one.
"""
import argparse
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KINDS = {1: "ptx", 2: "elf"}


def sections(data):
    """(name, bytes) of every section of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not a 64-bit ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)

    names = header(shstrndx)[4]
    for i in range(shnum):
        h = header(i)
        start = names + h[0]
        name = data[start:data.index(b"\0", start)].decode()
        yield name, data[h[4]:h[4] + h[5]]


def entries(fatbin):
    """(kind, sm) of every entry of every fat binary in the section."""
    off = 0
    while off + 16 <= len(fatbin):
        magic, _, hsize, size = struct.unpack_from("<IHHQ", fatbin, off)
        if magic != FATBIN_MAGIC:
            off += 8  # the fat binaries are 8-byte aligned
            continue
        p, end = off + hsize, off + hsize + size
        while p < end:
            kind, _, ehsize, esize = struct.unpack_from("<HHIQ", fatbin, p)
            (sm,) = struct.unpack_from("<I", fatbin, p + 28)
            yield KINDS.get(kind, "kind%d" % kind), sm
            p += ehsize + esize
        off = end


def expected(archs):
    want = set()
    for a in filter(None, archs.split(";")):
        num, _, suffix = a.partition("-")
        if suffix in ("", "real"):
            want.add(("elf", int(num)))
        if suffix in ("", "virtual"):
            want.add(("ptx", int(num)))
    return want


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--expect")
    args = ap.parse_args()
    with open(args.lib, "rb") as f:
        data = f.read()
    found = set()
    for name, sec in sections(data):
        if name == ".nv_fatbin":
            found.update(entries(sec))
    for kind, sm in sorted(found):
        print("%s sm_%d" % (kind, sm))
    if args.expect is not None:
        want = expected(args.expect)
        if found != want:
            print("expected %s" % sorted(want), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
