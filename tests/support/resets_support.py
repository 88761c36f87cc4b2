"""A restarted source, built from PyLatencyMap's Oracle sample: after record `k` every counter starts again from 0.

Each record of the sample holds one block of `value, count` lines per RAC instance (the blocks add up). A
restarted source may list only the buckets hit since the restart, so a restarted record here
holds one block: the summed counts minus those of record `k`, without the lines that are now 0. Every column of
the copy holds what the original's holds: what happened between two records did not change, only the counters.
"""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
EXAMPLE = FIXTURES / "pylatencymap" / "example_latency_data.txt"
_RECORD = re.compile(r"<begin record>\n(.*?)<end record>\n", re.S)
_ROW = re.compile(r"^(\d+),\s*(\d+)\s*$")


def _summed(body: str) -> tuple[list[str], dict[int, int]]:
    """(header lines, {bucket value: count summed over the instance blocks}) of one record's text."""
    header: list[str] = []
    counts: dict[int, int] = {}
    for line in body.splitlines():
        m = _ROW.match(line)
        if m:
            counts[int(m.group(1))] = counts.get(int(m.group(1)), 0) + int(m.group(2))
        else:
            header.append(line)
    return header, counts


def restarted_copy(k: int, path: Path = EXAMPLE) -> str:
    """The sample with its source restarted between records `k` and `k + 1` (0-based)."""
    text = path.read_text()
    base: dict[int, int] = {}
    out: list[str] = []
    pos = 0
    for i, m in enumerate(_RECORD.finditer(text)):
        out.append(text[pos: m.start()])
        pos = m.end()
        header, counts = _summed(m.group(1))
        if i == k:
            base = counts
        if i <= k:
            out.append(m.group(0))
            continue
        rows = [f"{value}, {count - base.get(value, 0)}" for value, count in counts.items()
                if count != base.get(value, 0)]
        out.append("<begin record>\n" + "\n".join(header + rows) + "\n<end record>\n")
    out.append(text[pos:])
    return "".join(out)
