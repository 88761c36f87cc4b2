"""One connection to `latencymap listen`: its bytes as records and notices, its streams kept apart from other
writers', its clock compared with the listener's."""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Generator, Iterator

from latencymap.core.json_input import json_input
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.sanitize import clean_label
from latencymap.core.units import plural
from latencymap.plugins import Item
from latencymap.protocol import ProtocolReader
from latencymap.sinks import DROPPED_PREFIX, WRITER_PREFIX, parse_label

MAX_LINE = 64 * 1024
#: A writer's clock this far off the listener's (seconds, either way) has its columns moved onto the listener's.
CLOCK_SKEW_S = 1.0


class Writer:
    """One connection: splits bytes into lines, reads records, turns comment lines into notices.

    A label that another connection sends (or sent) is that connection's: this one's records of it get their own
    label (`run/rankN.pid<PID>/phase` when it said who it is, `LABEL [writer N]` when not), with a note, so two
    connections' counts never add up in one stream. A writer whose hello names the process that started it
    (`parent`: a DataLoader or multiprocessing worker, forked or spawned) is always labelled by its pid, and never
    takes its rank's plain label from its parent, whichever connects first. A writer of the same run and rank
    connecting after the last one left (a restarted rank) continues its streams.
    """

    def __init__(self, conn: socket.socket, others: dict[socket.socket, Writer],
                 owners: dict[str, object]) -> None:
        self.conn = conn
        self.number = 0  # given at its first bytes: a connection that sends nothing is no writer
        self.name = "writer ?"
        self.reader = ProtocolReader(self.name)
        self.others = others
        self.owners = owners  # label -> who sends it: a (run, rank) identity, or an unidentified connection
        self.identity: tuple[str, int] | None = None
        self.pid = 0
        self.parent = 0  # the pid of the process that started it (forked or spawned), when its hello says so
        self.rename: str | None = None
        self.intervals: dict[StreamId, int] = {}  # intervals received, per stream (a phase of a rank)
        self.shift = 0.0  # seconds added to this writer's stamps: the listener's clock less its own
        self._labels: dict[StreamId, StreamId] = {}  # as sent -> as shown
        self._partial = b""
        self._skip_line = False

    def start(self, number: int) -> None:
        """Name the connection `writer <number>`: it sent its first bytes."""
        self.number = number
        self.name = self.reader.name = f"writer {number}"

    def feed(self, data: bytes) -> Iterator[Item]:
        """Items from a chunk of bytes (a line may span chunks)."""
        if self._skip_line:  # the rest of a line dropped for its length, said once
            end = data.find(b"\n")
            if end < 0:
                return
            data, self._skip_line = data[end + 1:], False
        *lines, rest = (self._partial + data).split(b"\n")
        self._partial = rest
        if len(rest) > MAX_LINE:
            self._partial, self._skip_line = b"", True
            yield Notice(f"listen: {self.name}: line longer than {MAX_LINE} bytes dropped")
        batch: list[str] = []
        for raw in lines:
            line = raw.decode("utf-8", "replace")
            if line.startswith(("# latencymap-writer", "# latencymap-dropped")):
                yield from self._records(batch)
                batch = []
                yield from self._comment(line)
            else:
                batch.append(line)
        yield from self._records(batch)

    def _records(self, lines: list[str]) -> Iterator[Item]:
        for item in self.reader.feed(lines):
            if isinstance(item, Interval):
                self.intervals[item.stream] = self.intervals.get(item.stream, 0) + 1
                shown = self._labels.get(item.stream)
                if shown is None:
                    shown = yield from self._own(item.stream)
                item.stream = shown
                if self.shift:  # the writer's dates are its own clock's: the recording writes the new ones
                    item.start, item.end, item.date, item.start_date = \
                        item.start + self.shift, item.end + self.shift, "", ""
            yield item

    def _own(self, stream: StreamId) -> Generator[Notice, None, StreamId]:
        """The stream this connection's records of `stream` go to (see the class); a note when it is not `stream`."""
        shown = self._renamed(stream, self.rename) if self.rename else stream
        key: object = self.identity if self.identity is not None else self
        owner = self.owners.setdefault(shown.label, key)
        if owner != key:
            tag = f"pid{self.pid}" if self.identity is not None else f"writer {self.number}"
            shown = self._renamed(stream, tag)
            self.owners.setdefault(shown.label, key)
            yield Notice(f"listen: {self.name} sends '{clean_label(stream.label)}', which another writer sent first: "
                         f"its records of it are shown as '{clean_label(shown.label)}'", skipped=0)
        self._labels[stream] = shown
        return shown

    def _renamed(self, stream: StreamId, tag: str) -> StreamId:
        parsed = parse_label(stream.label)
        if parsed is None or " " in tag:
            return StreamId(f"{stream.label} [{tag}]", stream.datasource, stream.unit)
        run, rank, phase = parsed
        return StreamId(f"{run}/rank{rank}.{tag}/{phase}", stream.datasource, stream.unit)

    def _comment(self, line: str) -> Iterator[Notice]:
        prefix = WRITER_PREFIX if line.startswith(WRITER_PREFIX) else DROPPED_PREFIX
        try:
            info = json_input(line[len(prefix):])
            assert isinstance(info, dict)
        except (ValueError, AssertionError):
            yield Notice(f"listen: {self.name}: unreadable line {line[:80]!r}")
            return
        if prefix == DROPPED_PREFIX:
            yield Notice(f"listen: {self.name} dropped {int(info.get('intervals', 0))} intervals "
                         f"({int(info.get('events', 0))} events) so far: the viewer was absent or slow", skipped=0)
            return
        pid = self.pid = int(info.get("pid", 0))
        parent = info.get("parent")
        parent = self.parent = parent if isinstance(parent, int) and not isinstance(parent, bool) else 0
        self.identity = (str(info.get("run", "")), int(info.get("rank", 0)))
        taken = any(w.identity == self.identity and not w.parent for w in self.others.values() if w is not self)
        self.rename = f"pid{pid}" if taken or parent else None
        self.name = f"{self.identity[0]}/rank{self.identity[1]} (pid {pid})"
        self.reader.name = self.name
        again = f", reconnect {int(info['connects']) - 1}" if int(info.get("connects", 1)) > 1 else ""
        also = (f"; a child of pid {parent}: its streams are labelled by pid" if parent else
                "; same run and rank as another writer: its streams are labelled by pid" if taken else "")
        yield Notice(f"listen: {self.name} connected{again}{also}", skipped=0)
        yield from self._clock(info.get("time"))

    def _clock(self, sent: object) -> Iterator[Notice]:
        """Compare the writer's clock at its hello (`sent`) with the listener's now; move its columns when they
        are CLOCK_SKEW_S or more apart (a reconnect measures again)."""
        if isinstance(sent, bool) or not isinstance(sent, int | float) or not math.isfinite(sent):
            return
        off = time.time() - sent
        self.shift = off if abs(off) >= CLOCK_SKEW_S else 0.0
        if self.shift:
            way = "ahead of" if off < 0 else "behind"
            yield Notice(f"listen: {self.name}: its clock is {abs(off):.1f}s {way} this listener's: its intervals "
                         f"are placed by the listener's clock ({off:+.1f}s each), so they line up with other "
                         "writers'", skipped=0)

    def finish(self) -> Iterator[Item]:
        """The connection closed: report an unterminated record and say goodbye."""
        yield from self.reader.close()
        most, streams = max(self.intervals.values(), default=0), len(self.intervals)
        of = f" of {plural(streams, 'stream')}" if streams > 1 else ""
        yield Notice(f"listen: {self.name} disconnected after {plural(most, 'interval')}{of}", skipped=0)
