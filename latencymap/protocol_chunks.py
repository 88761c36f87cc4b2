"""Chunked reading of the record protocol: canonical records are parsed in bulk with NumPy.

A chunk of text is cut at exact `<begin record>` / `<end record>` lines. A record whose lines are
all in the canonical form (the keys the protocol knows, `<value>, <count>` rows) joins a batch
whose rows are parsed by one `np.fromstring` call; anything else — noise holding a marker in
another spelling, histogram blocks, a third column, a bad value — goes line by line through the
reader's own state machine, so both paths give the same items and the same messages.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from latencymap.buckets import MAX_COUNT, NSLOTS, ORACLE_OVERFLOW, UPPER_BOUND_SOURCES
from latencymap.model import Interval, Notice, Snapshot, SnapshotRun
from latencymap.sanitize import clean_text

if TYPE_CHECKING:
    from latencymap.protocol import ProtocolReader

BEGIN_LINE = "<begin record>\n"
END_LINE = "\n<end record>\n"
#: An unfinished record longer than this is read line by line instead of waiting for its end.
MAX_PENDING = 4 * 1024 * 1024
#: Bucket values and counts at or above this go through the line reader (which checks their range).
_BIG = 1 << 62
#: What latencymap's own interval records (recordings) say after the timestamp.
_INTERVAL_PREFIX = "counts, interval\nstart, microsec, "

Item = Snapshot | SnapshotRun | Interval | Notice


class _Batch:
    """Canonical records of one chunk waiting for their rows to be parsed together."""

    __slots__ = ("data", "headers", "rows", "texts")

    def __init__(self) -> None:
        self.headers: list[tuple] = []
        self.texts: list[tuple[int, int, int]] = []
        self.rows: list[int] = []
        self.data: list[str] = []


class FastPath:
    """The bulk reader behind `ProtocolReader.feed_text`."""

    def __init__(self, reader: ProtocolReader) -> None:
        self.reader = reader
        self.pending = ""
        self._headers: dict[str, tuple] = {}
        self._block: str | None = None  # the previous record's constant header lines, and what they say
        self._last_header: tuple = ()

    def feed(self, text: str) -> list[Item]:
        """Items of the complete records in `pending + text`; the unfinished tail waits for more."""
        buf = self.pending + text if self.pending else text
        self.pending = ""
        reader = self.reader
        done: list[Item] = []
        out: list[Item | int] = []
        batch = _Batch()

        def slow(lines: list[str] | tuple[str, ...]) -> None:
            nonlocal out, batch
            if batch.headers:  # queued records first: a bad one is read again, in its place, by the line reader
                done.extend(self._emit(out, batch, buf))
                out, batch = [], _Batch()
            out.extend(reader.feed(lines))

        pos, n = 0, len(buf)
        while pos < n:
            if reader._record is not None:
                nl = buf.find("\n", pos)
                if nl < 0:
                    break
                slow((buf[pos:nl + 1],))
                pos = nl + 1
                continue
            begin = buf.find(BEGIN_LINE, pos)
            while begin > 0 and buf[begin - 1] != "\n":
                begin = buf.find(BEGIN_LINE, begin + 1)
            noise_end = begin if begin >= 0 else buf.rfind("\n", pos) + 1
            if noise_end > pos:
                noise = buf[pos:noise_end]
                if "<" in noise and "<begin record>" in noise.lower():
                    slow(noise.splitlines(True))
                else:
                    reader.line_no += noise.count("\n")
                pos = noise_end
            if begin < 0 or reader._record is not None:
                if begin < 0:
                    break
                continue
            end = buf.find(END_LINE, begin)
            if end < 0:
                break
            body_start = begin + len(BEGIN_LINE)
            stop = end + len(END_LINE)
            if end + 1 == body_start or not self._canonical(buf, body_start, end + 1, reader.line_no + 1, batch, out):
                slow(buf[begin:stop].splitlines(True))
            else:
                reader.line_no += buf.count("\n", begin, stop)
            pos = stop
        rest = buf[pos:]
        if len(rest) > MAX_PENDING:
            cut = rest.rfind("\n") + 1
            slow(rest[:cut].splitlines(True))
            rest = rest[cut:]
        self.pending = rest
        done.extend(self._emit(out, batch, buf))
        return done

    def finish(self) -> Iterator[Item]:
        """The unfinished tail, line by line, then the reader's end-of-input notice."""
        rest, self.pending = self.pending, ""
        yield from self.reader.feed(rest.splitlines(True))
        yield from self.reader.close()

    def _canonical(self, buf: str, start: int, stop: int, first_line: int, batch: _Batch,
                   out: list[Item | int]) -> bool:
        """Queue the record `buf[start:stop]` (its lines, each ending in a newline) when it is canonical."""
        micros: int | None = None
        date = ""
        i = start
        if buf.startswith("timestamp,", i):
            j = buf.index("\n", i)
            parts = buf[i + 10:j].split(",", 2)
            if len(parts) < 2 or parts[0].strip() != "microsec":
                return False
            try:
                micros = int(parts[1])
            except ValueError:
                return False
            if not -MAX_COUNT < micros < MAX_COUNT:
                return False
            if len(parts) > 2:
                date = parts[2].strip()
                if not date.isprintable() or len(date) > 200:
                    date = clean_text(date)
            i = j + 1
        start_micros = None
        if buf.startswith(_INTERVAL_PREFIX, i):
            j = buf.index("\n", i + len(_INTERVAL_PREFIX))
            try:
                start_micros = int(buf[i + len(_INTERVAL_PREFIX):j])
            except ValueError:
                return False
            if not -MAX_COUNT < start_micros < MAX_COUNT:
                return False
            i = j + 1
        block = self._block
        k = i + len(block or "")
        if block is None or not (buf.startswith(block, i) and k < stop and buf[k].isdigit()):  # a new header
            k = i
            while k < stop and not buf[k].isdigit():
                if buf[k] == "\n":
                    return False
                k = buf.index("\n", k) + 1
            block = buf[i:k]
            header = self._headers.get(block)
            if header is None:
                header = self._header(block)
                if header is None:
                    return False
                if len(self._headers) > 4096:
                    self._headers.clear()
                self._headers[block] = header
            self._block, self._last_header = block, header
        header = self._last_header
        stream, per_interval, flags, oracle = header
        if start_micros is not None:
            if per_interval is not None:
                return False  # a second counts line: the line reader decides
            per_interval = True
        i = k
        rows = buf.count("\n", i, stop)
        out.append(len(batch.headers))
        batch.headers.append((stream, first_line, micros, date, bool(per_interval), start_micros, flags, oracle))
        batch.texts.append((first_line, start - len(BEGIN_LINE), stop + len(END_LINE) - 1))
        batch.rows.append(rows)
        batch.data.append(buf[i:stop])
        return True

    def _header(self, block: str) -> tuple | None:
        """(stream, per_interval, flags, oracle) of the constant header lines; None: not canonical.

        The lines go through the line reader's own parser. `per_interval` is None when no counts
        line was given. Lines that change per record (timestamp, start) or data rows starting
        with `-` send the record to the line reader instead.
        """
        from latencymap.protocol import RecordError, _Record

        rec = _Record(first_line=0)
        lines = block.split("\n")[:-1]
        try:
            for line in map(str.strip, lines):
                if line:  # the line reader skips blank lines
                    self.reader._parse_line(rec, line, line.lower())
        except RecordError:
            return None
        if rec.micros is not None or rec.start_micros is not None or rec.values:
            return None
        has_counts = any(line.lower().partition(",")[0].strip() == "counts" for line in lines)
        return (self.reader._stream(rec.label, rec.datasource, rec.unit), rec.per_interval if has_counts else None,
                tuple(sorted(rec.flags)), rec.datasource in UPPER_BOUND_SOURCES)

    def _emit(self, out: list[Item | int], batch: _Batch, buf: str) -> list[Item]:
        """`out` with each queued record resolved; runs of cumulative snapshots stay together as SnapshotRuns."""
        if not batch.headers:
            return out  # type: ignore[return-value]
        counts, present, good = self._parse_rows(batch)
        reader = self.reader
        items: list[Item] = []
        run: list[int] = []
        for entry in out:
            if isinstance(entry, int):
                header = batch.headers[entry]
                if good[entry] and not header[4] and header[2] is not None:
                    run.append(entry)
                    continue
            if run:
                items.append(self._run(run, batch, counts, present))
                run = []
            if not isinstance(entry, int):
                items.append(entry)
            elif good[entry]:
                stream, first_line, micros, date, per_interval, start_micros, flags, _ = batch.headers[entry]
                items.append(reader._item(stream, first_line, micros, date, per_interval, start_micros, flags,
                                          counts[entry], present[entry], None))
            else:
                first_line, begin, stop = batch.texts[entry]
                items.extend(reader.reread(first_line, buf[begin:stop]))
        if run:
            items.append(self._run(run, batch, counts, present))
        return items

    @staticmethod
    def _run(rows: list[int], batch: _Batch, counts: np.ndarray, present: np.ndarray) -> SnapshotRun:
        headers = batch.headers
        if len(rows) == rows[-1] - rows[0] + 1:
            pick: slice | list[int] = slice(rows[0], rows[-1] + 1)
        else:
            pick = rows
        return SnapshotRun([headers[i][0] for i in rows], np.array([headers[i][2] for i in rows], dtype=np.int64),
                           counts[pick], present[pick], [headers[i][3] for i in rows], [headers[i][1] for i in rows])

    def _parse_rows(self, batch: _Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-record counts and presence over the 64 slots, and which records parsed cleanly."""
        nrec = len(batch.headers)
        rows = np.asarray(batch.rows, dtype=np.int64)
        counts = np.zeros((nrec, NSLOTS), dtype=np.int64)
        present = np.zeros((nrec, NSLOTS), dtype=bool)
        text = "".join(batch.data)
        if text.count(",") != text.count("\n") or "+" in text:  # 3 columns, or '+1' (a key line to the reader)
            return counts, present, np.zeros(nrec, dtype=bool)
        text = text.replace("\n", ",")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a text number parse that stops early only warns
                numbers = np.fromstring(text, dtype=np.int64, sep=",")
        except (ValueError, DeprecationWarning):
            numbers = np.empty(0, dtype=np.int64)
        if numbers.size != 2 * int(rows.sum()):
            return counts, present, np.zeros(nrec, dtype=bool)
        values, amounts = numbers[0::2], numbers[1::2]
        record = np.repeat(np.arange(nrec), rows)
        oracle_rec = np.fromiter((h[7] for h in batch.headers), dtype=bool, count=nrec)
        oracle = np.repeat(oracle_rec, rows) if oracle_rec.any() else None
        # negative numbers show as huge when seen unsigned
        bad = (values.view(np.uint64) >= _BIG) | ((values & (values - 1)) != 0)
        if oracle is not None:
            bad |= oracle & (values == 0)
        keep = values != ORACLE_OVERFLOW
        every = bool(keep.all())
        if not every:
            bad &= keep
        bad |= amounts.view(np.uint64) >= _BIG  # a bad count spoils even the overflow row
        good = np.ones(nrec, dtype=bool)
        if not every or bad.any():
            good[record[bad]] = False
            use = keep & ~bad
            values, amounts, record = values[use], amounts[use], record[use]
            oracle = None if oracle is None else oracle[use]
        slots = np.frexp(values.astype(np.float64))[1]  # the bit length; 0 for the value 0
        if oracle is not None:
            slots -= oracle
        np.minimum(slots, NSLOTS - 1, out=slots)
        flat = record * NSLOTS + slots
        if flat.size < 2 or bool((flat[1:] > flat[:-1]).all()):
            counts.ravel()[flat] = amounts
        else:  # a record that repeats a bucket value: the counts add up
            np.add.at(counts.ravel(), flat, amounts)
        present.ravel()[flat] = True
        return counts, present, good
