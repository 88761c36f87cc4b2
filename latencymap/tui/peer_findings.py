"""The peers comparison of the stream on screen, for the findings panel: what the report says of it among its ranks,
disks or instances (analysis/peers.py), over the time of the columns on screen.

It compares every stream of the same datasource that names a rank, disk or instance (another phase of the same ranks
tells what waiting hides), so it is computed again only when what it reads changed, and then no sooner than `EVERY`
times what the last computation took after it: a day of 64 ranks takes seconds, which the panel must not pay at
every tick. Meanwhile the last answer stays.
"""

from __future__ import annotations

import time

from latencymap.analysis.peers import peer_key
from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.model import StreamId
from latencymap.outputs.report import overlapping, peer_groups
from latencymap.tui.actions import column_of
from latencymap.tui.findings import FindingItem


class PeerFindings:
    """The peers lines of the stream on screen, computed again only when needed (see the module docstring)."""

    #: The next computation waits at least this many times the last one's seconds.
    EVERY = 20.0

    def __init__(self) -> None:
        self._keys: dict[StreamId, bool] = {}
        self._read: tuple[object, ...] | None = None
        self._items: list[FindingItem] = []
        self._next = 0.0
        #: Computations done, and the seconds the last one took.
        self.computed = 0
        self.took = 0.0

    def items(self, acc: Accumulator, hist: StreamHistory, first: int, stop: int,
              now: float | None = None) -> list[FindingItem]:
        """What the comparison of history columns [first, stop)'s time says of `hist`'s stream (nothing where it
        names no rank, disk or instance)."""
        if stop <= first or not self._named(hist.stream):
            return []
        peers = [h for h in acc.streams.values()
                 if h.stream.datasource == hist.stream.datasource and h.n and self._named(h.stream)]
        read = (hist.stream, first, stop, tuple((h.stream, h.n, h.dropped) for h in peers))
        now = time.monotonic() if now is None else now
        if read == self._read or (self._read is not None and read[0] == self._read[0] and now < self._next):
            return self._items
        began = time.perf_counter()
        span = (float(hist.meta_in("start", slice(first, first + 1))[0]),
                float(hist.meta_in("end", slice(stop - 1, stop))[0]))
        shown = overlapping(hist, *span)
        starts, ends = hist.meta_in("start", shown), hist.meta_in("end", shown)
        lo, hi = float(starts[0]), float(ends[-1])  # the group's intervals may reach past this stream's columns
        out = []
        for group in peer_groups(acc, peers, span):
            for text, spans in group.member_lines(hist.stream.label):
                runs = [(a + shown.start, b + shown.start) for a, b in
                        ((column_of(starts, ends, max(s, lo)), column_of(starts, ends, min(e, hi) - 1e-9))
                         for s, e in spans if e > lo and s < hi)
                        if a is not None and b is not None]
                if not runs:
                    out.append(FindingItem(text))
                elif len(runs) == 1:
                    out.append(FindingItem(text, *runs[0]))
                else:  # intervals apart (stalls): each marked on its own
                    cols = tuple(sorted({c for a, b in runs for c in range(a, b + 1)}))
                    out.append(FindingItem(text, cols[0], cols[-1], cols))
        self.took = time.perf_counter() - began
        self.computed += 1
        self._read, self._items, self._next = read, out, now + self.EVERY * self.took
        return out

    def _named(self, stream: StreamId) -> bool:
        """Whether the stream's label names a rank, disk or instance (kept: one regular expression per stream)."""
        found = self._keys.get(stream)
        if found is None:
            found = self._keys[stream] = peer_key(stream.label) is not None
        return found
