"""Names of the overview's lines: labels that share a long start and end (`spark app stage 17 task duration`, one per
stage) are cut around the part that tells them apart, not in their middle, where they are all alike."""

from __future__ import annotations

from collections.abc import Sequence

from latencymap.core.sanitize import cell_width, cut_middle, within_cells

ELLIPSIS = "…"


def common_ends(labels: Sequence[str]) -> tuple[int, int]:
    """Lengths of the start and of the end every label shares, each cut back to a word edge (`stage 1` of stages 10
    to 19 is no common start: `stage ` is) and not overlapping in the shortest label."""
    if len(labels) < 2:
        return 0, 0
    p = _shared_start(labels)
    while p > 0 and labels[0][p - 1].isalnum() and any(len(x) > p and x[p].isalnum() for x in labels):
        p -= 1
    s = _shared_start([x[::-1] for x in labels])
    s = min(s, min(len(x) for x in labels) - p)
    while s > 0 and labels[0][-s].isalnum() and any(len(x) > s and x[-s - 1].isalnum() for x in labels):
        s -= 1
    return p, s


def _shared_start(texts: Sequence[str]) -> int:
    """Length of the start all `texts` share (that of the first and last in sorted order)."""
    a, b = min(texts), max(texts)
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def distinct_names(labels: Sequence[str], width: int) -> list[str]:
    """Each label in at most `width` terminal cells: whole when it fits, else cut around the part no other label shares
    (that part whole, with as much of what precedes and follows it as fits); labels that still look alike are cut
    again around where they differ among themselves."""
    names = _cut(labels, width)
    alike: dict[str, set[str]] = {}
    for label, name in zip(labels, names, strict=True):
        alike.setdefault(name, set()).add(label)
    for group in (sorted(g) for g in alike.values() if len(g) > 1):
        again = dict(zip(group, _cut(group, width), strict=True))
        names = [again.get(label, name) for label, name in zip(labels, names, strict=True)]
    return names


def distinct_name(labels: Sequence[str], k: int, width: int) -> str:
    """`distinct_names(labels, width)[k]`, without cutting every label: only those that hold what the name of
    `labels[k]` shows may have the same name (and be cut again among themselves)."""
    p, s = common_ends(labels)
    name = _around_ends(labels[k], p, s, width)
    pieces = [piece for piece in name.split(ELLIPSIS) if piece]
    alike = sorted({y for y in labels if all(piece in y for piece in pieces) and _around_ends(y, p, s, width) == name})
    return _cut(alike, width)[alike.index(labels[k])] if len(alike) > 1 else name


def _cut(labels: Sequence[str], width: int) -> list[str]:
    """`distinct_names` of one set of labels, from their common ends."""
    p, s = common_ends(labels)
    return [_around_ends(x, p, s, width) for x in labels]


def _around_ends(label: str, p: int, s: int, width: int) -> str:
    """`label` in `width` cells around what follows its first `p` characters and precedes its last `s`."""
    return _around(label[:p], label[p:len(label) - s], label[len(label) - s:], width)


def _around(before: str, part: str, after: str, width: int) -> str:
    """`before + part + after` in `width` cells, `part` whole when it leaves room for an ellipsis on each side, what
    precedes and follows it sharing the rest (each side taking what the other leaves)."""
    whole = before + part + after
    if cell_width(whole) <= width:
        return whole
    room = width - cell_width(part)
    if room < 2:  # no room for an ellipsis on each side: one says the label is cut, where it is
        if cell_width(part) < width:
            return (ELLIPSIS + part) if before else (part + ELLIPSIS)
        return cut_middle(part, width) if cell_width(part) > width else ELLIPSIS + _last(part, width - 1)
    right = min(cell_width(after), room // 2)
    left = min(cell_width(before), room - right)
    right = min(cell_width(after), room - left)
    shown_before = before if cell_width(before) <= left else ELLIPSIS + _last(before, left - 1)
    shown_after = after if cell_width(after) <= right else within_cells(after, right - 1) + ELLIPSIS
    return shown_before + part + shown_after


def _last(text: str, cells: int) -> str:
    """The longest end of `text` in at most `cells` cells."""
    return within_cells(text[::-1], cells)[::-1]
