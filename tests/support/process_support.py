"""Child processes of the tests: finding them (bpftrace, the Spark JVM), and whether BPF can run here."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skips_support import NO_BTF, NOT_LINUX, NOT_ROOT, reason, skip_missing


def children_named(parent: int, comm: str) -> list[int]:
    """Live processes called `comm` whose parent is `parent`."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if name == comm and int(rest[1]) == parent and rest[0] != "Z":
            out.append(int(entry.name))
    return out


def bpf_unavailable() -> str | None:
    """Why BPF tracing cannot run on this machine (a skip reason no install can change); None when it can."""
    from latencymap.sources.bpf import preconditions

    if not sys.platform.startswith("linux"):
        return reason(NOT_LINUX, "BPF", f"BPF tracing is Linux only (this is {sys.platform})")
    problem = preconditions.privilege_problem()
    if problem:
        return reason(NOT_ROOT, "root or CAP_BPF+CAP_PERFMON", problem)
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        return reason(NO_BTF, "/sys/kernel/btf/vmlinux", "this kernel has no BTF: BPF tracing is not available")
    return None


@contextmanager
def loop_device(blocks: int, direct_io: bool = False) -> Iterator[str]:
    """A loop device (root) over a file in /var/tmp holding `blocks` 4 KiB blocks, detached on the way out;
    `direct_io`: over the file with O_DIRECT (real disk latencies, requests that overlap; its first block is data)."""
    fd, backing = tempfile.mkstemp(prefix="latencymap-loop-", dir="/var/tmp")
    if direct_io:
        os.write(fd, os.urandom(4096))
    os.ftruncate(fd, blocks * 4096)
    if direct_io:
        os.fsync(fd)
    os.close(fd)
    try:
        made = subprocess.run(["losetup", "--find", "--show", *(["--direct-io=on"] if direct_io else []), backing],
                              capture_output=True, text=True, check=False)
        if made.returncode != 0:
            skip_missing("loop device", f"`losetup --find` failed: {made.stderr.strip()}")
        device = made.stdout.strip()
        try:
            yield device
        finally:
            subprocess.run(["losetup", "--detach", device], check=False)
    finally:
        os.unlink(backing)
