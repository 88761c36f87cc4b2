"""Sums over a (columns, slots) array read a chunk of columns at a time, equal bit for bit to NumPy's over the
whole array, so that a long stream's report needs no dense matrix of every column.

Per-column figures need nothing: NumPy sums each row on its own. Per-slot sums (`slot_sums`) add the rows in
order, as NumPy does for an array of two slots or more (of one slot, NumPy sums the column as a vector, pairwise:
so is it here). The sum of every element (`flat_sum`) follows NumPy's pairwise order over the flat array: halves
cut at a multiple of 8, down to parts of at most a chunk, which NumPy sums itself. tests/core/test_chunked.py holds
both to NumPy's sums of whole arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

#: Columns read at a time (a history's chunk holds as many): 512 KiB of float64 over 64 slots.
ROWS = 1024


def spans(n: int, size: int | None = None) -> Iterator[slice]:
    """Consecutive row ranges of at most `size` rows (default `ROWS`) covering `n` rows."""
    size = size or ROWS
    for at in range(0, n, size):
        yield slice(at, min(n, at + size))


class SlotSums:
    """Per-slot sums of (rows, `width`) parts added in order: `np.concatenate(parts).sum(axis=0)`, without the
    concatenation."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._total: np.ndarray | None = None
        self._column: list[np.ndarray] = []  # of one slot: its values, summed at the end as NumPy sums a vector

    def add(self, part: np.ndarray) -> None:
        if self.width == 1:
            self._column.append(part[:, 0])
        elif len(part):
            total = self._total
            self._total = part.sum(axis=0) if total is None else np.concatenate((total[None], part)).sum(axis=0)

    def result(self) -> np.ndarray:
        if self._column:
            return np.concatenate(self._column)[:, None].sum(axis=0)  # type: ignore[no-any-return]
        return np.zeros(self.width) if self._total is None else self._total


def slot_sums(parts: Iterable[np.ndarray], width: int) -> np.ndarray:
    """`np.concatenate(parts).sum(axis=0)` of (rows, `width`) parts, without the concatenation."""
    sums = SlotSums(width)
    for part in parts:
        sums.add(part)
    return sums.result()


def flat_sum(read: Callable[[int, int], np.ndarray], n: int, width: int, leaf: int | None = None) -> float:
    """`float(a.sum())` of the (n, `width`) float array `a` whose rows `i..j` `read(i, j)` gives, reading at most
    `leaf` elements (default `ROWS` rows' worth; NumPy sums up to 128 in one block) and the rest of their rows at a
    time."""
    return flat_sums(lambda i, j: (read(i, j),), n, width, leaf)[0]


def flat_sums(read: Callable[[int, int], tuple[np.ndarray, ...]], n: int, width: int,
              leaf: int | None = None) -> tuple[float, ...]:
    """`flat_sum` of several (n, `width`) arrays read together: rows `i..j` of each are `read(i, j)`."""
    leaf = max(leaf or ROWS * width, 128)

    def part(first: int, size: int) -> tuple[float, ...]:  # the flat elements first .. first + size, as NumPy pairs
        if size <= leaf:
            r0, r1 = first // width, -(-(first + size) // width)
            at = first - r0 * width
            return tuple(float(a.ravel()[at: at + size].sum()) for a in read(r0, r1))
        half = size // 2
        half -= half % 8
        return tuple(x + y for x, y in zip(part(first, half), part(first + half, size - half), strict=True))

    if n and width:
        return part(0, n * width)
    return tuple(0.0 for _ in read(0, 0))
