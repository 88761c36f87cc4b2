"""Child processes of the tests: finding them (bpftrace, the Spark JVM), and whether BPF can run here."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from skips_support import NO_BTF, NOT_LINUX, NOT_ROOT, reason


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
