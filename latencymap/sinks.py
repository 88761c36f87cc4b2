"""Where instrumented timings go (a live UNIX socket, a recording, memory, nowhere), and their stream labels.

Every sink speaks the protocol text with latencymap's `counts, interval` extension (one record per
interval, see `latencymap.protocol.format_record`). A sink never raises into the instrumented
program and never blocks it: the socket sink is non-blocking, keeps a bounded buffer of whole
records, drops the oldest when the viewer is absent or slow (counting them), and retries the
connection at most once per back-off period (0.5 s doubling to 10 s). Between records it writes
`#` comment lines, which every protocol reader skips as noise and `latencymap listen` reads:
`# latencymap-writer {json}` (who is writing) and `# latencymap-dropped {json}` (drops so far).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import socket
import stat
import sys
import tempfile
import time
import warnings
from abc import ABC, abstractmethod
from collections import deque
from pathlib import Path
from typing import Any

from latencymap.core.model import Interval
from latencymap.core.units import plural
from latencymap.protocol import format_record

WRITER_PREFIX = "# latencymap-writer "
DROPPED_PREFIX = "# latencymap-dropped "
SOCKET_ENV = "LATENCYMAP_SOCKET"
SINK_ENV = "LATENCYMAP_SINK"
RUN_ENV = "LATENCYMAP_RUN"
DEFAULT_BUFFER_BYTES = 256 * 1024
RETRY_MIN_S = 0.5
RETRY_MAX_S = 10.0
#: At close, wait at most this long for a slow viewer to take the last records.
CLOSE_LINGER_S = 0.5
_NOSIGNAL = getattr(socket, "MSG_NOSIGNAL", 0)


def env_rank() -> int:
    """The process's rank: `$RANK`, else `$LOCAL_RANK`, else 0."""
    for name in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def default_run() -> str:
    """`$LATENCYMAP_RUN`, else the script's name, else `run`."""
    name = os.environ.get(RUN_ENV) or Path(sys.argv[0] if sys.argv and sys.argv[0] else "").stem
    return clean_name(name) or "run"


def clean_name(text: str) -> str:
    """A run or phase name fit for a label: no `/`, commas or control characters."""
    return re.sub(r"[/,\s\x00-\x1f\x7f]+", "_", str(text)).strip("_")


def stream_label(run: str, rank: int, phase: str, pid: int = 0) -> str:
    """`run/rank3/data_wait`; with `pid`, a forked child's: `run/rank3.pid4242/data_wait`."""
    return f"{run}/rank{rank}.pid{pid}/{phase}" if pid else f"{run}/rank{rank}/{phase}"


def parse_label(label: str) -> tuple[str, int, str] | None:
    """(run, rank, phase) of a `run/rankN/phase` label; None for any other label."""
    parts = label.rsplit("/", 2)
    if len(parts) != 3:
        return None
    m = re.fullmatch(r"rank(\d+)(?:\.pid\d+)?", parts[1])
    return (parts[0], int(m.group(1)), parts[2]) if m else None


def private_dir() -> str:
    """A directory only this user can enter, created 0700: `$XDG_RUNTIME_DIR/latencymap` or `<tmp>/latencymap-<uid>`."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        path = os.path.join(runtime, "latencymap")
    else:
        path = os.path.join(tempfile.gettempdir(), f"latencymap-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{path}: not a private directory (it must be yours, mode 0700); "
                              f"remove it or set {SOCKET_ENV}")
    return path


def default_socket_path() -> str:
    """`$LATENCYMAP_SOCKET`, else `listen.sock` in the private directory."""
    return os.environ.get(SOCKET_ENV) or os.path.join(private_dir(), "listen.sock")


def encode_interval(iv: Interval) -> str:
    """One interval as a `counts, interval` protocol record."""
    flags = [name for name, on in (("reset", iv.reset), ("gap", iv.gap)) if on]
    return format_record(iv.stream, iv.end, iv.counts, iv.time, date=iv.date, start=iv.start, per_interval=True,
                         flags=flags, extremes=iv.extremes)


class Sink(ABC):
    """Takes each flush's intervals; never raises, never blocks for long."""

    dropped_intervals: int = 0
    dropped_events: int = 0

    @abstractmethod
    def write(self, intervals: list[Interval]) -> None:
        """Send or store one flush's intervals."""

    def count_dropped(self, intervals: list[Interval]) -> None:
        """Count intervals that could not be delivered."""
        self.dropped_intervals += len(intervals)
        self.dropped_events += sum(int(iv.counts.sum()) for iv in intervals)

    def close(self) -> None:  # noqa: B027 - most sinks hold nothing
        """Send what is left and release resources."""

    def after_fork(self) -> Sink:
        """The sink a forked child (a multiprocessing or DataLoader worker) uses: by default none (a warning
        at its first timings)."""
        return NullSink(why=f"a forked child (pid {os.getpid()}) cannot send to its parent's {type(self).__name__}")


class NullSink(Sink):
    """Discards everything (counted as dropped); with `why`, says so once, at the first timings discarded."""

    def __init__(self, why: str = "") -> None:
        self.why = why

    def write(self, intervals: list[Interval]) -> None:
        if self.why and any(iv.counts.any() for iv in intervals):
            warnings.warn(f"latencymap: {self.why}; its timings are discarded (make a Timings in the child)",
                          RuntimeWarning, stacklevel=2)
            self.why = ""
        self.count_dropped(intervals)


class MemorySink(Sink):
    """Keeps the intervals in `self.intervals` (tests, in-process diagnosis)."""

    def __init__(self) -> None:
        self.intervals: list[Interval] = []

    def write(self, intervals: list[Interval]) -> None:
        self.intervals.extend(intervals)


class RecordingSink(Sink):
    """A recording file (`latencymap.flow.recording.Recorder`), readable by `latencymap report` and `replay`."""

    def __init__(self, path: str, *, force: bool = False, options: dict[str, Any] | None = None,
                 template: str = "", rank: int = 0, lazy: bool = False) -> None:
        from latencymap.flow.recording import Recorder

        self.path = path
        self.template, self.rank, self.options = template, rank, options  # `open_sink`'s PATH, before `{pid}`
        self._recorder: Recorder | None = None
        self._lazy = lazy  # opened at the first write (a forked child that times nothing makes no file)
        if not lazy:
            self._recorder = Recorder(path, force=force, source="instrument", options=options)

    def write(self, intervals: list[Interval]) -> None:
        from latencymap.flow.recording import Recorder, RecordingError

        if self._lazy:
            self._lazy = False
            try:
                self._recorder = Recorder(self.path, source="instrument", options=self.options)
            except Exception as err:
                warnings.warn(f"latencymap: cannot open sink {self.path!r}: {err}; timings are discarded",
                              RuntimeWarning, stacklevel=2)
        if self._recorder is None:
            self.count_dropped(intervals)
            return
        try:
            for iv in intervals:
                self._recorder.write(iv)
        except RecordingError as err:
            warnings.warn(f"latencymap: {err}; timings are no longer recorded", RuntimeWarning, stacklevel=2)
            self._recorder = None

    def close(self) -> None:
        if self._recorder is not None:
            with contextlib.suppress(OSError):
                self._recorder.close()
            self._recorder = None

    def after_fork(self) -> Sink:
        """A forked child writes its own recording when the path has `{pid}`; the parent's, never."""
        self._recorder = None  # the parent's file: the child leaves it alone
        if "{pid}" not in self.template:
            return NullSink(why=f"a forked child (pid {os.getpid()}) cannot write its parent's recording "
                                f"{self.path!r} (put {{pid}} in the path)")
        return RecordingSink(self.template.format(rank=self.rank, pid=os.getpid()), options=self.options,
                             template=self.template, rank=self.rank, lazy=True)


class SocketSink(Sink):
    """Streams records to `latencymap listen PATH`; drops the oldest whole records past `buffer_bytes`."""

    def __init__(self, path: str, *, hello: dict[str, Any] | None = None,
                 buffer_bytes: int = DEFAULT_BUFFER_BYTES) -> None:
        self.path = path
        self.hello = dict(hello or {})
        self.buffer_bytes = buffer_bytes
        self._sock: socket.socket | None = None
        self._queue: deque[tuple[bytes, int]] = deque()  # (data, events); events -1: a comment line
        self._queued = 0
        self._offset = 0  # bytes of the first entry already sent
        self._next_try = 0.0
        self._backoff = RETRY_MIN_S
        self._reported = 0
        self.connects = 0
        self.failed_connects = 0

    def write(self, intervals: list[Interval]) -> None:
        for iv in intervals:
            self._push((encode_interval(iv).encode("utf-8"), int(iv.counts.sum())))
        self._trim()
        self._pump()

    def _push(self, entry: tuple[bytes, int], front: bool = False) -> None:
        if front:
            self._queue.appendleft(entry)
        else:
            self._queue.append(entry)
        self._queued += len(entry[0])

    def _trim(self) -> None:
        """Drop the oldest whole records until the buffer fits (never the one being sent)."""
        keep_first = 1 if self._offset else 0
        while self._queued > self.buffer_bytes and len(self._queue) > keep_first:
            data, events = self._queue[keep_first]
            del self._queue[keep_first]
            self._queued -= len(data)
            if events >= 0:
                self.dropped_intervals += 1
                self.dropped_events += events
            else:
                self._reported = -1  # a drop report was lost: report again

    def _connect(self) -> bool:
        now = time.monotonic()
        if now < self._next_try:
            return False
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(self.path)
        except OSError:
            sock.close()
            self.failed_connects += 1
            self._next_try = now + self._backoff
            self._backoff = min(self._backoff * 2, RETRY_MAX_S)
            return False
        self._sock = sock
        self._backoff = RETRY_MIN_S
        self.connects += 1
        self._offset = 0
        hello = {**self.hello, "pid": os.getpid(), "connects": self.connects, "time": time.time()}  # sent now
        self._push(((WRITER_PREFIX + json.dumps(hello, sort_keys=True) + "\n").encode(), -1), front=True)
        return True

    def _disconnect(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._sock = None
        if self._offset and self._queue:  # a record cut in the middle is lost
            data, events = self._queue.popleft()
            self._queued -= len(data)
            if events >= 0:
                self.dropped_intervals += 1
                self.dropped_events += events
        self._offset = 0
        self._next_try = time.monotonic() + self._backoff

    def _pump(self) -> None:
        """Send what the socket takes now, without blocking."""
        if self._sock is None and not self._connect():
            return
        if self.dropped_intervals != self._reported and self._offset == 0:
            report = {"intervals": self.dropped_intervals, "events": self.dropped_events}
            line = (DROPPED_PREFIX + json.dumps(report) + "\n").encode()
            # after a new connection's hello (the viewer names the writer by it), else first
            hello = 1 if self._queue and self._queue[0][0].startswith(WRITER_PREFIX.encode()) else 0
            self._queue.insert(hello, (line, -1))
            self._queued += len(line)
            self._reported = self.dropped_intervals
        sock = self._sock
        assert sock is not None
        while self._queue:
            data = self._queue[0][0]
            try:
                sent = sock.send(memoryview(data)[self._offset:], _NOSIGNAL)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._disconnect()
                return
            self._offset += sent
            if self._offset >= len(data):
                self._queue.popleft()
                self._queued -= len(data)
                self._offset = 0

    @property
    def connected(self) -> bool:
        """True while a viewer is connected."""
        return self._sock is not None

    def close(self, linger_s: float = CLOSE_LINGER_S) -> None:
        """Send the last records, waiting at most `linger_s` for a slow viewer; count the rest as dropped."""
        if self._sock is None and not self._queue and self.dropped_intervals == self._reported:
            return  # nothing to say (a forked worker that timed nothing): no connection made just to close it
        deadline = time.monotonic() + linger_s
        self._next_try = 0.0
        self._pump()
        while self._queue and self._sock is not None and time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                select.select([], [self._sock], [], max(0.0, deadline - time.monotonic()))
            self._pump()
        for _data, events in self._queue:  # not (fully) delivered
            if events >= 0:
                self.dropped_intervals += 1
                self.dropped_events += events
        self._queue.clear()
        self._queued = 0
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None
        if self.dropped_intervals != self._reported:  # lost, and no listener was told: the program says it
            why = "no listener was there" if not self.connects else "the listener fell behind or went away"
            warnings.warn(f"latencymap: {plural(self.dropped_intervals, 'interval')} of timings "
                          f"({plural(self.dropped_events, 'event')}) never reached {self.path!r}: {why} (start "
                          "`latencymap listen` before the program, or time to a recording file; LATENCYMAP_SINK=null "
                          "sends nothing)", RuntimeWarning, stacklevel=2)
            self._reported = self.dropped_intervals

    def after_fork(self) -> Sink:
        """A forked child connects on its own; its hello names its pid and its parent's (`parent`): the viewer
        labels it `rank<N>.pid<M>`, whichever of them connects first."""
        self._sock = None  # the child's copy of the descriptor closes with the object, the parent's stays
        return SocketSink(self.path, hello={**self.hello, "parent": os.getppid()}, buffer_bytes=self.buffer_bytes)


def open_sink(spec: Sink | str | None, *, rank: int = 0, hello: dict[str, Any] | None = None) -> Sink:
    """A sink from a spec: a Sink; None (`$LATENCYMAP_SINK`, else the default socket); `memory`; `null`;
    `socket` (default socket path); `unix:PATH`; a path to an existing socket or ending in `.sock`;
    `file:PATH` or any other path: a recording (`{rank}` and `{pid}` in PATH are filled in).

    A sink that cannot be opened gives a warning and a NullSink: timing never stops a program.
    """
    if isinstance(spec, Sink):
        return spec
    spec = spec if spec is not None else os.environ.get(SINK_ENV) or "socket"
    try:
        if spec == "memory":
            return MemorySink()
        if spec in ("null", "none", ""):
            return NullSink()
        if spec == "socket":
            return SocketSink(default_socket_path(), hello=hello)
        if spec.startswith("unix:"):
            return SocketSink(spec[5:], hello=hello)
        if not spec.startswith("file:") and (spec.endswith(".sock") or _is_socket(spec)):
            return SocketSink(spec, hello=hello)
        path = spec[5:] if spec.startswith("file:") else spec
        return RecordingSink(path.format(rank=rank, pid=os.getpid()), options=hello, template=path, rank=rank)
    except Exception as err:  # a timing sink must never stop the program it observes
        warnings.warn(f"latencymap: cannot open sink {spec!r}: {err}; timings are discarded", RuntimeWarning,
                      stacklevel=2)
        return NullSink()


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False
