"""Peak memory of a stretch of work, from the kernel's resident-set counters.

Linux keeps, per process, the resident set size (VmRSS in
/proc/PID/status) and its high-water mark (VmHWM). Writing "5" to
/proc/PID/clear_refs resets the mark to the current RSS, so

    reset_hwm(); rss0 = vm_rss(); <work>; hwm = vm_hwm()

gives hwm - rss0, the most the work added to the process's resident memory
at any instant; no sampling can miss a peak, however short. Two conditions
make that the peak of the bytes the work allocated:

- glibc must hand large blocks back to the kernel when they are freed and
  take fresh pages for new ones. With MALLOC_MMAP_THRESHOLD_ set in the
  environment before the process starts, every block of at least that many
  bytes is its own mmap, unmapped on free (and glibc's dynamic threshold,
  which would otherwise move freed blocks of up to 32 MiB into the heap, is
  off). Without it a block freed before the stretch stays resident in the
  heap and is reused inside it without the RSS moving, so the stretch
  looks smaller than it is.
- A page counts once it is touched. Tensors are written when they are made,
  so their bytes count; a block that is allocated and never written does
  not (it costs no memory either).

What the mark cannot tell apart from tensors: small blocks below the
threshold (kept in the heap), page rounding of each mapping, and code or
data pages of libraries touched for the first time (hence warm-up steps
before any measured one). What it cannot see: glibc serves a request of
any size from a free block of its heap, if one fits, before it maps fresh
pages; a process that freed much memory in its heap before the stretch
(comet-train, after compiling) reuses those resident pages inside it, and
the mark then falls short of what the stretch allocated. python/tests/test_bench_peers.py checks the
method on a known sequence of allocations.

`Monitor` measures another process the same way from the outside (the
counters of /proc/PID), for programs that cannot be changed to measure
themselves: comet-train (comet.bench_peers).

No third-party imports: both the project's environment and the export
environment (torch) use this module.
"""
from __future__ import annotations

import os
import select
import subprocess
import time

# Blocks of at least this many bytes are mmapped and unmapped on free
# (glibc's mallopt(M_MMAP_THRESHOLD) through the environment).
MMAP_THRESHOLD = 65536
ENV = {"MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD)}


def status(pid="self") -> dict:
    """VmRSS, VmHWM, RssAnon and RssFile of /proc/PID/status in bytes."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(rest.split()[0]) * 1024
    return out


def vm_rss(pid="self") -> int:
    return status(pid)["VmRSS"]


def vm_hwm(pid="self") -> int:
    return status(pid)["VmHWM"]


def reset_hwm(pid="self") -> None:
    """Set VmHWM of the process to its current VmRSS."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def mmap_threshold_set() -> bool:
    return os.environ.get("MALLOC_MMAP_THRESHOLD_") == str(MMAP_THRESHOLD)


class Region:
    """The high-water mark of this process's RSS above its RSS at entry:

        with Region() as r:
            work()
        r.peak_above_start   # bytes
    """

    def __enter__(self):
        reset_hwm()
        self.rss_start = vm_rss()
        return self

    def __exit__(self, *exc):
        self.hwm = vm_hwm()
        self.rss_end = vm_rss()
        self.peak_above_start = max(0, self.hwm - self.rss_start)
        return False


class Monitor:
    """Runs a command on a pseudo-terminal (so that a program that draws
    progress only on a terminal, as comet-train does, draws it) and follows
    its RSS from outside:

    - when `arm_marker` first appears in its output, VmHWM is reset and the
      clock `armed_at` starts;
    - every `interval` seconds VmRSS and VmHWM are sampled;
    - when `end_marker` appears, `ended_at` is noted (the work is over; what
      follows, such as writing files and freeing, is not the work's).

    result(): the last VmHWM read before the end (the high-water mark of the
    armed stretch; VmHWM only grows, so one read after a peak suffices), and
    the smallest VmRSS sampled in the second half of the armed stretch
    (`floor`): for a training loop, the RSS between two steps, when only the
    persistent state is live.
    """

    def __init__(self, cmd, env=None, arm_marker=b"", end_marker=b"",
                 interval=0.002, timeout=None):
        self.cmd, self.env = [str(c) for c in cmd], env
        self.arm_marker, self.end_marker = arm_marker, end_marker
        self.interval, self.timeout = interval, timeout

    def run(self, stderr_path):
        import pty

        master, slave = pty.openpty()
        with open(stderr_path, "wb") as err:
            p = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                 stdout=slave, stderr=err, env=self.env,
                                 close_fds=True)
        os.close(slave)
        out = bytearray()
        samples = []  # (time, rss, hwm) once armed
        self.armed_at = self.ended_at = None
        self.hwm_at_end = None
        start = time.monotonic()
        try:
            while True:
                r, _, _ = select.select([master], [], [], self.interval)
                if r:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:  # EIO: the child closed the terminal
                        chunk = b""
                    if not chunk:
                        break
                    out += chunk
                now = time.monotonic()
                if self.armed_at is None and self.arm_marker in out:
                    try:
                        reset_hwm(p.pid)
                    except OSError:
                        break
                    self.armed_at = now
                if self.armed_at is not None and self.ended_at is None:
                    try:
                        st = status(p.pid)
                        samples.append((now, st["VmRSS"], st["VmHWM"]))
                    except (OSError, KeyError):  # exited, or a zombie
                        pass
                    if self.end_marker and self.end_marker in out:
                        self.ended_at = now
                if self.timeout and now - start > self.timeout:
                    p.kill()
                    raise subprocess.TimeoutExpired(self.cmd, self.timeout)
        finally:
            os.close(master)
            self.returncode = p.wait()
        self.output = bytes(out).replace(b"\r\n", b"\n")
        self.samples = samples
        return self.returncode

    def result(self):
        """{"hwm", "floor", "samples"} or None when the stretch was not
        seen (no marker, no sample)."""
        if self.armed_at is None or not self.samples:
            return None
        end = self.ended_at if self.ended_at is not None else self.samples[-1][0]
        mid = self.armed_at + (end - self.armed_at) / 2
        late = [rss for t, rss, _ in self.samples if mid <= t <= end]
        inside = [s for s in self.samples if s[0] <= end]
        if not late or not inside:
            return None
        return {"hwm": inside[-1][2], "floor": min(late),
                "samples": len(inside), "seconds": end - self.armed_at}
