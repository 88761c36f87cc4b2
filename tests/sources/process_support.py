"""Finding a test's grandchild processes (bpftrace, the Spark JVM) to kill them."""

from __future__ import annotations

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
