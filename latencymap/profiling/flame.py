"""A compact text flame graph (icicle): one row per stack depth, widths proportional to samples.

Frames that every sample shares (`<module>`, `main`, ...) are taken off the top as a common
root, so the rows show where the samples differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(slots=True)
class _Node:
    count: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Block:
    """One frame on one row: columns [start, stop) of the row, and its samples."""

    name: str
    start: int
    stop: int
    count: int


@dataclass(frozen=True, slots=True)
class Flame:
    """The common root, then blocks per depth below it (row 0 first)."""

    root: tuple[str, ...]
    rows: list[list[Block]]
    total: int


def flame(counts: Mapping[tuple[str, ...], int], width: int, depth: int) -> Flame:
    """Lay out `counts` (stack → samples, root first) on `depth` rows of `width` columns."""
    top = _Node()
    for stack, c in counts.items():
        node = top
        top.count += c
        for frame in stack:
            node = node.children.setdefault(frame, _Node())
            node.count += c
    root: list[str] = []
    while len(top.children) == 1:
        (name, only), = top.children.items()
        if only.count != top.count:
            break
        root.append(name)
        top = only
    rows: list[list[Block]] = [[] for _ in range(max(0, depth))]
    _place(top, 0.0, float(width), 0, rows)
    return Flame(tuple(root), [row for row in rows if row], top.count)


def _place(node: _Node, x0: float, x1: float, d: int, rows: list[list[Block]]) -> None:
    if d >= len(rows) or node.count <= 0:
        return
    x = x0
    for name, child in sorted(node.children.items(), key=lambda kv: (-kv[1].count, kv[0])):
        w = (x1 - x0) * child.count / node.count
        start, stop = round(x), round(x + w)
        if stop > start:
            rows[d].append(Block(name, start, stop, child.count))
            _place(child, x, x + w, d + 1, rows)
        x += w
