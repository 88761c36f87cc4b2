"""Profiling for one command: the store that views read, fed live by py-spy and/or loaded from recordings."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from latencymap.core.model import Flow, Interval
from latencymap.core.sanitize import clean_message
from latencymap.flow.inputs import at_rest
from latencymap.flow.recording import Recorder, RecordingError
from latencymap.profiling.clock import InputClock
from latencymap.profiling.collector import Collector
from latencymap.profiling.persist import TAG, load_profile, payloads, recorded_payloads
from latencymap.profiling.pyspy import PySpyError
from latencymap.profiling.samples import DEFAULT_RATE, Sample
from latencymap.profiling.store import ProfileStore
from latencymap.profiling.wanted import profile_shown

#: Profile lines held per recorder until its first record (≈ 1.75 s of samples each; the oldest go first).
MAX_PENDING = 2000


class ProfileSession:
    """A store, an optional live collector of `pid`, and the recordings its samples are written to."""

    def __init__(self, store: ProfileStore, *, pid: int | None = None, rate: int = DEFAULT_RATE,
                 subprocesses: bool = False, echo: bool = True) -> None:
        self.store = store
        self.pid = pid
        self.rate = rate
        self.subprocesses = subprocesses
        #: Print messages on stderr as they come (plain modes); the TUI turns this off and shows them itself.
        self.echo = echo
        self.collector: Collector | None = None
        self._recorders: list[Recorder] = []
        self._pending: dict[int, list[str]] = {}
        self._messages: list[str] = []
        self._lock = threading.Lock()
        self._stop_lock = threading.Lock()
        self._started = self._stopped = False
        #: How the input's columns are timed (judged at its first column); samples wait for the verdict.
        self.clock = InputClock()
        self._held: list[list[Sample]] = []
        #: Recordings whose samples the store holds: a recording made of them carries their profile lines.
        self.recorded: list[str] = []
        self._carry: dict[int, list[str]] = {}

    @property
    def live(self) -> bool:
        """Whether py-spy is sampling now."""
        return self.collector is not None and self.collector.running

    def say(self, message: str) -> None:
        """Keep a message for the views (and print it on stderr in plain modes)."""
        with self._lock:
            self._messages.append(message)
        if self.echo:
            print(f"latencymap: profile: {clean_message(message)}", file=sys.stderr, flush=True)

    def messages(self, since: int = 0) -> list[str]:
        """Messages from index `since` on."""
        with self._lock:
            return self._messages[since:]

    def record_to(self, recorder: Recorder) -> None:
        """Write every new sample batch to `recorder` as profile lines, after those of the recordings read."""
        with self._lock:
            self._recorders.append(recorder)
            if self.recorded:
                self._carry[id(recorder)] = list(self.recorded)

    def start(self) -> None:
        """Start sampling `pid` (once); when py-spy cannot run, say why and carry on without it."""
        with self._lock:
            if self._started or self._stopped or self.pid is None:
                return
            self._started = True
        self.collector = Collector(self.pid, rate=self.rate, subprocesses=self.subprocesses,
                                   on_samples=self._on_samples, on_message=self.say)
        try:
            self.collector.start()
        except PySpyError as err:
            self.say(f"{err}; going on without profiling")

    def stop(self) -> None:
        """Stop sampling, after the running chunks reported and were recorded (idempotent; a second caller waits)."""
        with self._stop_lock:
            if self._stopped:
                return
            if self.collector is not None:
                self.collector.stop()
            self.clock.settle()  # no column came: the samples keep the wall clock's times
            self._release()
            self._write([], final=True)
            self._stopped = True

    def column(self, end: float) -> None:
        """An input column ending at `end` has arrived: the first one tells whether (and how) samples taken now can be
        attached to the input's columns; when they cannot, say so once and stop sampling."""
        if self._carry:
            self._write([])  # the recordings' samples follow the first record written
        verdict = self.clock.first_column(end)
        if verdict is None:
            return
        if verdict.not_now is not None and self.collector is not None and self.live:
            self.say(verdict.not_now)
            self.collector.request_stop()
        self._release()

    def _release(self) -> None:
        """Samples held until the input's first column, now timed as its columns are."""
        with self._lock:
            held, self._held = self._held, []
        for batch in held:
            self._keep(batch)

    def _on_samples(self, samples: list[Sample]) -> None:
        with self._lock:
            if self.clock.verdict is None:  # a slow source's first column is still to come
                self._held.append(samples)
                del self._held[: max(0, len(self._held) - MAX_PENDING)]
                return
        self._keep(samples)

    def _keep(self, samples: list[Sample]) -> None:
        shift = self.clock.shift
        if shift:
            samples = [replace(s, time=s.time + shift) for s in samples]
        self.store.add(samples)
        self._write(list(payloads(samples)))

    def _write(self, lines: list[str], *, final: bool = False) -> None:
        """Profile lines to every recorder; held back while a recorder has no record yet (unless `final`).

        Readers identify a file by its first lines (200 of them): a recording must not open with
        a long run of profile lines while a slow source has not produced its first interval.
        """
        with self._lock:
            recorders = list(self._recorders)
        for recorder in recorders:
            pending = self._pending.setdefault(id(recorder), [])
            pending += lines
            if recorder.written == 0 and not final:
                if len(pending) > MAX_PENDING:
                    del pending[: len(pending) - MAX_PENDING]
                continue
            try:
                for payload in recorded_payloads(self._carry.pop(id(recorder), [])):
                    recorder.annotate(TAG, payload)
                for payload in pending:
                    recorder.annotate(TAG, payload)
            except RecordingError as err:
                self.say(f"samples no longer recorded: {err}")
                with self._lock:
                    self._recorders.remove(recorder)
            pending.clear()


def open_session(kw: dict[str, Any], inputs: Sequence[str] = ()) -> ProfileSession | None:
    """The session that `--profile` or the samples in the input recordings call for; None for neither.

    Recorded samples are read only for the TUI, the one view that shows them, or for a `--record` to carry them
    over, and only from files: a second pass
    over an input that can be read once (stdin, a FIFO, `<(cmd)`) would take the view's records, or wait forever.
    """
    pid = kw.get("profile_pid")
    files = [path for path in inputs if at_rest(path)]
    wanted = profile_shown(kw) or bool(kw.get("record_path"))  # a recording made of recordings carries their samples
    store, messages = load_profile(files) if files and wanted else (None, [])
    if pid is None and store is None:
        for message in messages:
            print(f"latencymap: profile: {clean_message(message)}", file=sys.stderr)
        return None
    session = ProfileSession(store or ProfileStore(), pid=pid, rate=kw.get("profile_rate") or DEFAULT_RATE,
                             subprocesses=bool(kw.get("profile_subprocesses")))
    for message in messages:
        session.say(message)
    if store is not None:
        session.recorded = files
    return session


def profiled(flow: Flow, session: ProfileSession | None) -> Flow:
    """The flow, with sampling started when it starts and stopped (flushed) when it ends."""
    if session is None:
        yield from flow
        return
    session.start()
    try:
        for item in flow:
            if isinstance(item, Interval):
                session.column(item.end)
            yield item
    finally:
        session.stop()


@contextlib.contextmanager
def profile_session(kw: dict[str, Any], inputs: Sequence[str] = ()) -> Iterator[ProfileSession | None]:
    """`open_session` for the length of a command; sampling is stopped (and flushed) on the way out."""
    session = open_session(kw, inputs)
    try:
        yield session
    finally:
        if session is not None:
            session.stop()
