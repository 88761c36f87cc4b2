"""Record a flow of intervals to a replayable file (plain text or zstd), and pace a replay.

A recording is protocol text: a header of `#` lines (ignored by every protocol reader as noise
between records) and one `counts, interval` record per interval, flushed as it is written. With a
`.zst` name every record is a zstd block of its own, flushed whole as it is written, so a file cut anywhere still
decodes up to its last complete block (record); a frame holds up to RECORDS_PER_FRAME of them, which share its
window (records repeat each other's lines), and ends with a content checksum, so that a damaged frame is found (and
skipped with a message) instead of read as other numbers. `compat` writes only what PyLatencyMap 1.3 reads:
cumulative two-column records. The notes of the recorded run (what its reading assumed or skipped) are kept as
`# latencymap-note {...}` lines between records, which the protocol reader turns back into notes (see
`latencymap.protocol.reader`)."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import queue
import re
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from latencymap import __version__
from latencymap.core.buckets import NSLOTS
from latencymap.core.errors import RecordingError
from latencymap.core.json_input import json_input
from latencymap.core.model import Flow, Interval, Notice, Status, StreamId
from latencymap.core.sanitize import clean_text, safe_options
from latencymap.flow.zstd_frames import RECORDS_PER_FRAME
from latencymap.protocol import format_record
from latencymap.protocol.grammar import NOTE_TAG
from latencymap.protocol.grammar import RECORDING_HEADER as HEADER_PREFIX

PYLATENCYMAP_SOURCES = ("oracle", "bpf", "systemtap", "dtrace")
#: Items a recording flow may run ahead of its view (about 1 KB each).
READ_AHEAD = 65_536
#: Notes of the recorded run kept in a recording; past this many, one last note counts the rest (a note of what a
#: stream measures, `Notice.measures`, is kept all the same).
MAX_NOTES = 100
#: Records (and header or note lines) a zstd frame of a recording holds at most, each a block flushed as written.


class Recorder:
    """Writes intervals to `path` (`-`: stdout, for `--emit`) as they arrive; never overwrites unless `force`."""

    def __init__(self, path: str, *, force: bool = False, compat: bool = False, source: str = "input",
                 options: dict[str, Any] | None = None) -> None:
        self.path = path
        self.compat = compat
        self._zstd = path.endswith(".zst")
        #: Whether this run made the file (only then may `discard_if_empty` remove it).
        self.created = False
        #: What is written before the first record, while an existing file overwritten (`force`) is left as it was,
        #: or (stdout) while the run may still fail before any record: a reader of `--emit` then gets nothing.
        self._held: list[bytes] | None = [] if path == "-" else None
        self._truncate = False  # whether the first record truncates the file (one overwritten with `force`)
        try:
            fd = os.dup(1) if path == "-" else self._open(path, force)
        except FileExistsError:
            raise RecordingError(f"{path}: exists; use --force to overwrite it") from None
        except OSError as err:  # `-` too: stdout closed (`>&-`), an output that cannot be written
            raise RecordingError(f"{path}: cannot create recording: {err.strerror}",
                                 exit_code=1 if path == "-" else 2) from None
        self._fh: IO[bytes] = os.fdopen(fd, "wb", buffering=0)
        self._compressor: Any = None
        self._frame: Any = None  # the zstd frame under way (a compressobj), None between frames
        self._in_frame = 0  # the blocks it holds
        self._lock = threading.Lock()
        self._closed = False
        if self._zstd:
            import zstandard

            # a checksum per frame (4 bytes): a flipped bit is a frame that fails, not other numbers read silently
            self._compressor = zstandard.ZstdCompressor(level=3, write_checksum=True)
            self._flush_block, self._finish = zstandard.COMPRESSOBJ_FLUSH_BLOCK, zstandard.COMPRESSOBJ_FLUSH_FINISH
        self._totals: dict[StreamId, np.ndarray] = {}
        self._ends: dict[StreamId, float] = {}  # each stream's latest interval end written
        #: With `compat`: the first two stream labels written, once there are two (PyLatencyMap reads one stream).
        self.mixed: tuple[str, str] | None = None
        self.written = 0
        self._notes = 0  # notes of the recorded run written (`note`), and how many more there were
        self._notes_left_out = 0
        header = {"tool": "latencymap", "version": __version__, "source": source, "host": socket.gethostname(),
                  "platform": platform.platform(terse=True), "start": time.time(),
                  "format": "compat" if compat else "interval", "options": safe_options(options or {})}
        self._write(HEADER_PREFIX + json.dumps(header, sort_keys=True) + "\n")

    def _open(self, path: str, force: bool) -> int:
        """A new file at `path`; with `force`, an existing one, opened but not truncated: a regular file is truncated
        only when the first record is written, so a run that records none leaves it as it was."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if not force:
                raise
            fd = os.open(path, os.O_WRONLY)
            if stat.S_ISREG(os.fstat(fd).st_mode):
                self._held, self._truncate = [], True
            return fd
        self.created = True
        return fd

    @property
    def closed(self) -> bool:
        """True once `close` was called: what comes after is dropped."""
        return self._closed

    def _write(self, text: str, record: bool = False) -> None:
        with self._lock:  # the profiler thread annotates while the flow writes records
            self._write_locked(text, record)

    def _write_locked(self, text: str, record: bool = False) -> None:
        if self._closed:  # closed by the command on its way out while the flow's thread still ran: too late
            return
        data = text.encode("utf-8")
        if self._compressor is not None:
            data = self._compressed(data)
        if record and self._held is not None:  # the first record: now the file overwritten is replaced
            if self._truncate:
                try:
                    os.ftruncate(self._fh.fileno(), 0)
                except OSError as err:
                    self._stopped(err)
            self._release()
        self._put(data)

    def _release(self) -> None:
        """Write what was held back before the first record."""
        held, self._held = self._held or [], None
        for block in held:
            self._put(block)

    def _compressed(self, data: bytes) -> bytes:
        """`data` as the next block of the frame under way (a new one when none is), flushed whole: the file decodes
        up to here; the frame's RECORDS_PER_FRAME-th block ends it (with its checksum)."""
        if self._frame is None:
            self._frame, self._in_frame = self._compressor.compressobj(), 0
        self._in_frame += 1
        if self._in_frame < RECORDS_PER_FRAME:
            return self._frame.compress(data) + self._frame.flush(self._flush_block)
        out = self._frame.compress(data) + self._frame.flush(self._finish)
        self._frame = None
        return out

    def _put(self, data: bytes) -> None:
        if self._held is not None:
            self._held.append(data)
            return
        try:
            view = memoryview(data)
            while view:
                view = view[self._fh.write(view):]
        except OSError as err:
            if isinstance(err, BrokenPipeError) and self.path == "-":
                self._frame = None
                raise  # `--emit | head`: the reader went away, which ends the command as it ends a view, quietly
            self._stopped(err)

    def _stopped(self, err: OSError) -> None:
        """Raise the RecordingError of a write that failed, saying what was written before."""
        self._frame = None  # what it held may be lost: nothing more is added to it, not even its end
        kept = (f"; the {self.written} record{'s' if self.written > 1 else ''} written before "
                f"{'are' if self.written > 1 else 'is'} intact" if self.written else "")
        raise RecordingError(f"{self.path}: recording stopped: {err.strerror}{kept}", exit_code=1) from None

    def write(self, iv: Interval) -> None:
        """Append one interval. One that ends no later than an interval of its stream written before (delta points of
        processes that share an OpenTelemetry series) is flagged `overlap`: it is in that stream as the run had it,
        where a reader would take a record going back in time for another run's."""
        if self.compat:
            self._write(self._compat_record(iv), record=True)
        else:
            last = self._ends.get(iv.stream)
            self._ends[iv.stream] = iv.end if last is None else max(last, iv.end)
            flags = [name for name, on in (("reset", iv.reset), ("gap", iv.gap),
                                           ("overlap", last is not None and iv.end <= last)) if on]
            self._write(format_record(iv.stream, iv.end, iv.counts, iv.time, date=iv.date, start=iv.start,
                                      per_interval=True, flags=flags, source=iv.source_buckets,
                                      extremes=iv.extremes), record=True)
        self.written += 1

    def _compat_record(self, iv: Interval) -> str:
        stream = StreamId(iv.stream.label.replace(",", ";"),
                          iv.stream.datasource if iv.stream.datasource in PYLATENCYMAP_SOURCES else "bpf",
                          iv.stream.unit if iv.stream.unit != "sec" else "millisec")
        counts = iv.counts
        if iv.stream.unit == "sec":  # PyLatencyMap has no seconds unit: shift buckets by 2**10 (≈1000)
            counts = np.zeros(NSLOTS, dtype=np.int64)
            counts[10:] = iv.counts[: NSLOTS - 10]
        if stream.datasource != "oracle":  # PyLatencyMap cannot read the value 0: the [0,1) bucket joins [1,2)
            counts = counts.copy()
            counts[1] += counts[0]
            counts[0] = 0
        text = ""
        total = self._totals.get(stream)
        if total is None:
            if self._totals and self.mixed is None:
                self.mixed = (next(iter(self._totals)).label, stream.label)
            total = self._totals[stream] = np.zeros(NSLOTS, dtype=np.int64)
            # the baseline record: its own date (the input's first record's), else one made from its time
            text += format_record(stream, iv.start, total, date=iv.start_date)
        total += counts
        return text + format_record(stream, iv.end, total, date=iv.date)

    def annotate(self, tag: str, payload: str) -> None:
        """Write `# latencymap-<tag> <payload>` between records (nothing with `compat`, or once closed)."""
        if not re.fullmatch(r"[a-z][a-z0-9-]*", tag) or "\n" in payload or "\r" in payload:
            raise ValueError(f"annotation tag must be a lowercase word and payload one line: {tag!r}")
        if self.compat:
            return
        with self._lock:
            if not self._closed:
                self._write_locked(f"# latencymap-{tag} {payload}\n")

    def note(self, notice: Notice) -> None:
        """Keep a notice of the recorded run (what reading it assumed, or skipped) as a note line: a report or replay
        of the recording says it again (and what it says a stream measures, `Notice.measures`, as `measures` and
        `stream`). At most MAX_NOTES, besides those that say what a stream measures (of its data, as its records
        are); `close` counts the rest. A source's `Status` is no note of the run."""
        if isinstance(notice, Status):
            return
        if self._notes >= MAX_NOTES and notice.measures is None:
            self._notes_left_out += 1
            return
        self._notes += 1
        note: dict[str, Any] = {"message": notice.message, "skipped": notice.skipped}
        if notice.measures is not None:  # what a stream's values measure, read back with the note
            stream, what = notice.measures
            note |= {"measures": what,
                     "stream": {"label": stream.label, "datasource": stream.datasource, "unit": stream.unit}}
        self.annotate(NOTE_TAG, json.dumps(note))

    def end(self) -> None:
        """The flow ended as it should: on stdout, a run that gave no record still writes its header and notes (a
        file overwritten with `force` is left as it was)."""
        with self._lock:
            if self._held is not None and not self._truncate and not self._closed:
                self._release()

    def close(self) -> None:
        """End the recording: the zstd frame under way finished, the file closed; what comes after is dropped.

        Safe from any thread and more than once: the command closes it on its way out (a key, a signal), while the
        thread that writes it may be blocked in its source, and that thread closes it again when it ends."""
        if self._notes_left_out:
            with contextlib.suppress(RecordingError, BrokenPipeError):  # a write error was already reported
                self.annotate(NOTE_TAG, json.dumps({"message": f"{self._notes_left_out} more notes of the recorded "
                                                               f"run are not kept in the recording", "skipped": 0}))
            self._notes_left_out = 0
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._frame is not None:  # the frame under way ends (an empty last block, then its checksum)
                end, self._frame = self._frame.flush(self._finish), None
                with contextlib.suppress(RecordingError, BrokenPipeError):  # a write error was already reported
                    self._put(end)
        with contextlib.suppress(OSError):  # a write error was already reported; what was written stays
            self._fh.close()

    def discard_if_empty(self) -> None:
        """Close, and remove the file this run created when it holds no record: a run that failed before it read any
        leaves no recording behind (nor one that a rerun would have to `--force` over); a file overwritten with
        `--force` is left as it was. Stdout (`-`) is only closed: nothing was written to it before a record."""
        self.close()
        if self.created and self.written == 0:
            with contextlib.suppress(OSError):
                os.unlink(self.path)


COMPAT_MIXED = "--compat: PyLatencyMap 1.3 reads every record as one stream: "


def recorded(flow: Flow, recorder: Recorder) -> Flow:
    """Pass the flow through, writing each interval as it goes by; with `compat`, a notice when a second stream
    joins the first (PyLatencyMap 1.3 would draw them as one)."""
    told = False
    try:
        for item in flow:
            if isinstance(item, Notice) and item.message.startswith(COMPAT_MIXED):
                told = True  # a recorder upstream (--record with --emit) said it already
            elif isinstance(item, Notice):
                recorder.note(item)
            if isinstance(item, Interval):
                recorder.write(item)
                if recorder.mixed is not None and not told:
                    told = True
                    first, second = (clean_text(label, 80) for label in recorder.mixed)
                    yield Notice(f"{COMPAT_MIXED}'{second}' is mixed "
                                 f"into '{first}' there (give it a single stream's records)", skipped=0)
            yield item
        recorder.end()
    except Exception:
        recorder.discard_if_empty()
        raise
    finally:
        recorder.close()


class _Failed:
    """The flow's exception, carried from the reading thread to the consumer."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_END = object()


def read_ahead(flow: Flow, limit: int = READ_AHEAD, keep: Callable[[], bool] | None = None) -> Flow:
    """The flow's items, pulled by a daemon thread up to `limit` items ahead of the consumer.

    What the flow does on the way (a recorder writing each interval) then keeps the source's pace, not the
    view's. The flow's exception is raised here, after the items before it; closing this generator stops
    the thread at its next item (it closes the flow), or with `keep`, at its first item once `keep()` is false:
    until then the flow is still pulled, its items not kept, so that a recording takes what a source passes on
    as the command ends (what a listener's writers had sent).
    """
    items: queue.Queue[Any] = queue.Queue(maxsize=max(1, limit))
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in flow:
                if not put(item) and (keep is None or not keep()):
                    return
        except BaseException as err:  # re-raised in the consumer's thread
            put(_Failed(err))
            return
        finally:
            close = getattr(flow, "close", None)
            if close is not None:
                close()
        put(_END)

    threading.Thread(target=run, name="latencymap-read-ahead", daemon=True).start()
    try:
        while True:
            item = items.get()
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()


def read_header(path: str) -> dict[str, Any] | None:
    """The header of a recording, or None when the file has none."""
    from latencymap.flow.inputs import open_text

    stream, _ = open_text(path)
    with stream:
        first = stream.readline(64 * 1024)
    if first.startswith(HEADER_PREFIX):
        try:
            header = json_input(first[len(HEADER_PREFIX):])
        except ValueError:
            return None
        return header if isinstance(header, dict) else None
    return None


@dataclass
class WindowSeen:
    """What `windowed` saw: the latest end of an interval, in seconds after the first of its run (None: no interval),
    and whether any interval fell in the window."""

    covered: float | None = None
    shown: bool = False


def windowed(flow: Flow, start: float | None, end: float | None,
             seen: WindowSeen | None = None) -> Iterator[Interval | Notice]:
    """Only intervals overlapping [start, end], in seconds relative to the start of their time-ordered run (`seen`,
    when given, is kept up to date).

    A flow is one time-ordered run unless its intervals go back in time: a recording of several inputs read in
    turn holds their streams one after another, each from the same seconds. An interval that ends before the
    latest interval so far began starts a new run, whose window counts from its own first interval. Since a later
    run may come at any point, the flow is read to its end (an interval at a time: nothing is kept), not left at
    the first interval past the window.
    """
    seen = seen or WindowSeen()
    origin: float | None = None
    latest = -float("inf")  # the latest start of the run so far
    for item in flow:
        if isinstance(item, Interval):
            if origin is None or item.end < latest:  # the first interval, or back in time: a new run
                origin, latest = item.start, item.start
            latest = max(latest, item.start)
            seen.covered = max(seen.covered or 0.0, item.end - origin)
            if start is not None and item.end <= origin + start:
                continue
            if end is not None and item.start >= origin + end:
                continue
            seen.shown = True
        yield item
