"""Child processes of the tests: finding them (bpftrace, the Spark JVM), and whether BPF can run here."""

from __future__ import annotations

import os
from pathlib import Path


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
    """Why BPF tracing cannot run on this machine; None when it can."""
    from latencymap.sources.bpf import preconditions

    if preconditions.privilege_problem():
        return "BPF needs root or CAP_BPF+CAP_PERFMON: " + (preconditions.privilege_problem() or "")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        return "this kernel has no BTF (/sys/kernel/btf/vmlinux): BPF tracing is not available"
    return None
