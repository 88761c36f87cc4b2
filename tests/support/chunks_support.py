"""History chunks sealed every few columns, so that small inputs go through the cold-chunk path too."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from latencymap.core import columns
from latencymap.core.accumulator import set_chunk_columns


@contextmanager
def chunk_columns(n: int) -> Iterator[None]:
    """Seal history chunks every `n` columns inside the block; the accumulator's own size again after it."""
    before = columns.CHUNK_COLUMNS
    set_chunk_columns(n)
    try:
        yield
    finally:
        columns.CHUNK_COLUMNS = before
