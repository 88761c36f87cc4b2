"""The peers comparison of the stream on screen, for the findings panel: what the report says of it among its ranks,
disks or instances (analysis/peers.py), over the time of the columns on screen.

It compares every stream of the same datasource that names a rank, disk or instance (another phase of the same ranks
tells what waiting hides), so it is computed again only when what it reads changed, and then no sooner than `EVERY`
times what the last computation took after it: a day of 64 ranks takes seconds, which the panel must not pay at
every tick. Meanwhile the last answer stays.
"""

from __future__ import annotations

import time

import numpy as np

from latencymap.analysis.peers import peer_key
from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.model import StreamId
from latencymap.outputs.report import overlapping, peer_groups
from latencymap.tui.findings import FindingItem


class PeerFindings:
    """The peers lines of the stream on screen, computed again only when needed (see the module docstring)."""

    #: The next computation waits at least this many times the last one's seconds.
    EVERY = 20.0
    #: Columns compared at most, all peers together (~0.3 s): a window wider than that for its peers (a day of 64
    #: ranks zoomed out) is compared over its newest columns, and its lines say so.
    MAX_CELLS = 500_000

    def __init__(self) -> None:
        self._keys: dict[StreamId, bool] = {}
        self._read: tuple[object, ...] | None = None
        self._items: list[FindingItem] = []
        self._next = 0.0
        self._dropped = 0  # the stream's dropped columns when `_items` was computed
        #: Computations done, and the seconds the last one took.
        self.computed = 0
        self.took = 0.0
        #: Whether the last answer given is kept from columns or a window other than those asked for (it is due again
        #: once `EVERY` has passed: whoever shows it asks again then).
        self.held = False

    def items(self, acc: Accumulator, hist: StreamHistory, first: int, stop: int,
              now: float | None = None) -> list[FindingItem]:
        """What the comparison of history columns [first, stop)'s time says of `hist`'s stream (nothing where it
        names no rank, disk or instance)."""
        self.held = False
        if stop <= first or not self._named(hist.stream):
            return []
        peers = [h for h in acc.streams.values()
                 if h.stream.datasource == hist.stream.datasource and h.n and self._named(h.stream)]
        read = (hist.stream, first, stop, tuple((h.stream, h.n, h.dropped) for h in peers))
        now = time.monotonic() if now is None else now
        self.held = read != self._read and self._read is not None and read[0] == self._read[0] and now < self._next
        if read == self._read or self.held:
            return _shifted(self._items, self._dropped - hist.dropped)  # history indexes shift as columns drop
        began = time.perf_counter()
        newest = max(1, self.MAX_CELLS // len(peers))
        over = f"over the newest {newest:,} columns on screen: " if stop - first > newest else ""
        first = max(first, stop - newest)
        span = (float(hist.meta_in("start", slice(first, first + 1))[0]),
                float(hist.meta_in("end", slice(stop - 1, stop))[0]))
        shown = overlapping(hist, *span)
        # a column goes to the group's interval that holds its middle, as the comparison pools it
        mids = (hist.meta_in("start", shown) + hist.meta_in("end", shown)) / 2
        out = []
        for group in peer_groups(acc, peers, span) if mids.size else ():  # none: instants, no time to compare
            for text, spans in group.member_lines(hist.stream.label):
                cols = sorted({c + shown.start for s, e in spans for c in range(*np.searchsorted(mids, (s, e)))})
                out.append(_on(over + text, cols))
        self.took = time.perf_counter() - began
        self.computed += 1
        self._read, self._items, self._next, self._dropped = read, out, now + self.EVERY * self.took, hist.dropped
        return out

    def _named(self, stream: StreamId) -> bool:
        """Whether the stream's label names a rank, disk or instance (kept: one regular expression per stream)."""
        found = self._keys.get(stream)
        if found is None:
            found = self._keys[stream] = peer_key(stream.label) is not None
        return found


def _on(text: str, cols: list[int]) -> FindingItem:
    """A line marked on history columns `cols` (sorted): a run, or each apart (stalls); unmarked without any."""
    if not cols:
        return FindingItem(text)
    return FindingItem(text, cols[0], cols[-1], () if cols[-1] - cols[0] == len(cols) - 1 else tuple(cols))


def _shifted(items: list[FindingItem], by: int) -> list[FindingItem]:
    """`items` with their columns `by` columns further (the history dropped columns: negative), those dropped gone."""
    if not by:
        return items
    return [item if item.first_col is None else
            _on(item.text, [c + by for first, last in item.columns() for c in range(first, last + 1) if c + by >= 0])
            for item in items]
