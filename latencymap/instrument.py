"""Time a training loop: data waits and steps become per-interval log2 histograms sent to a sink.

`for batch in timed_iter(loader):` times each blocking `next()` (`data_wait`); `step = timer("step")` is a
context manager and a decorator. A timing costs a `perf_counter_ns` pair and a list append; values are binned
with NumPy (nanoseconds, exact sums) when a call finds the interval (default 1 s) over, and at close/exit. An
interval that ends with no timing after it (an idle or hung program) is flushed by a daemon thread `LATE_S` later,
and a SIGTERM flushes before the process dies (both in `latencymap.instrument_flush`). Streams are
`<run>/rank<rank>/<phase>` (run: `$LATENCYMAP_RUN` or the script name; rank: `$RANK`, else `$LOCAL_RANK`, else 0).
A phase's first column starts where its first timing did; a phase with nothing timed in an interval gets no column
(its next column spans the gap). A forked child (a multiprocessing or DataLoader worker) drops the parent's
timings and sends its own, labelled `<run>/rank<rank>.pid<pid>/<phase>`, through the sink's `after_fork` (see
`latencymap.sinks`), at exit too, SIGTERM from its parent included (`latencymap.instrument_flush`); a Timings made in a
multiprocessing child (spawned too) of a process that times is labelled so, with its parent's run and rank unless
given (`instrument_flush.timing_parent`), and its hello names its parent too; a forked child's first column
of a phase from its own first timing of it to the end of the parent's interval under way; a Timings is kept alive until
closed when its sink leaves the process, so a dropped, unclosed one still sends on time and at exit.

An epoch's waits for its items are one population, the epoch's start and end phases of their own (their costs,
worker start-up and shut-down, are no batch's wait): `<phase>.epoch_start` from `iter(loader)` to the first item
(a DataLoader starts its workers and fills its prefetch queue there), `<phase>.epoch_end` the `next()` that raises
`StopIteration` (a DataLoader without persistent workers shuts them down there). An epoch of n items is one start,
n - 1 `<phase>` waits and one end; an empty one is one end. A `next()` that raises is recorded in the phase it was
in, then the error goes on unchanged. Two phases that clean to the same label name stay apart (the later one gets
`.2`, with a warning); `record` drops a value that is not a finite duration >= 0 (counted in `invalid_dropped`, with
one warning); a duration past the top bucket's nominal end (2**63 ns) is counted in that open bucket, with one
warning per phase.

CUDA (opt-in): `cuda=True` records a pair of CUDA events on the current stream per step (a few µs of CPU, no
synchronization; durations are read at a later flush, once the GPU passed them). `cuda="sync"` calls
`torch.cuda.synchronize()` before and after the step: the GPU work's wall time, but the CPU waits for the GPU
to drain twice per step, losing CPU/GPU overlap (it can slow training). Without a GPU both time on the CPU.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import inspect
import os
import reprlib
import sys
import threading
import time
import warnings
import weakref
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from types import FrameType
from typing import Any, TypeVar

import numpy as np

from latencymap.core.buckets import TOP_SLOT, bin_extremes, bin_values, bounds_seconds, past_top, past_top_note
from latencymap.core.model import Interval, StreamId
from latencymap.instrument_flush import LATE_S as LATE_S
from latencymap.instrument_flush import SIGTERM_GRACE_S as SIGTERM_GRACE_S
from latencymap.instrument_flush import (
    _catch_sigterm,
    _kept,
    _live,
    _registry_lock,
    _start_flusher,
    mark_children,
    timing_parent,
)
from latencymap.sinks import (
    MemorySink,
    NullSink,
    Sink,
    clean_name,
    default_run,
    env_rank,
    open_sink,
    parse_label,
    stream_label,
)

DATASOURCE = "training"
UNIT = "nanosec"
#: Most CUDA event pairs waiting for the GPU; beyond, the oldest are dropped.
MAX_PENDING_CUDA = 10_000
_MIN_COLUMN_S = 1e-5
_clock = time.perf_counter_ns
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
F = TypeVar("F", bound=Callable[..., Any])


class Timings:
    """One process's timings: a list of nanosecond durations per phase, flushed to `sink` every `interval` s."""

    def __init__(self, sink: Sink | str | None = None, *, run: str | None = None, rank: int | None = None,
                 interval: float = 1.0) -> None:
        parent = timing_parent()  # a spawned child of a process that times is labelled as a forked one
        self.run = clean_name(run) if run else parent["run"] if parent else default_run()
        self.rank = int(rank) if rank is not None else parent["rank"] if parent else env_rank()
        self._child_pid = os.getpid() if parent else 0  # in a child: its labels are `run/rank<N>.pid<M>/phase`
        hello: dict[str, Any] = {"run": self.run, "rank": self.rank}
        if parent:
            hello["parent"] = parent["pid"]
        self.sink = open_sink(sink, rank=self.rank, hello=hello)
        self.interval_ns = max(1, int(interval * 1e9))
        self._values: dict[str, list[int]] = {}
        self._streams: dict[str, StreamId] = {}
        self._starts: dict[str, float] = {}  # where each phase's next column starts, once it has one
        self._first_ns: dict[str, int] = {}  # when each phase's first timing started (its first column's start)
        self._lock = threading.Lock()
        self._phase_lock = threading.Lock()
        self._names: dict[str, str] = {}  # label name -> the phase given it
        self._pid = os.getpid()
        self._wall0, self._ns0 = time.time(), _clock()
        self._last_wall = self._wall0
        self._origin_wall = self._wall0  # no column starts before it: when Timings was made, or forked
        self._timers: weakref.WeakSet[Timer] = weakref.WeakSet()  # re-armed after a fork to note a first timing
        self.deadline_ns = self._ns0 + self.interval_ns
        self._cuda_pending: deque[tuple[list[int], Any, Any]] = deque()
        self.cuda_dropped = 0
        self.invalid_dropped = 0
        self._past_top: set[str] = set()  # phases warned of a duration past the top slot
        self.intervals = 0
        self.events = 0
        self.closed = False
        self._forked = False
        _live.add(self)
        self._reach_out()

    def _reach_out(self) -> None:
        """For a sink that leaves the process: kept alive until closed (a Timings its program dropped unclosed
        still sends, on time and at exit), flushed on time by the flusher thread and at SIGTERM."""
        if not isinstance(self.sink, NullSink | MemorySink):  # nothing leaves the process: nothing to send on time
            _kept.add(self)
            _start_flusher()
            _catch_sigterm()
            mark_children(self.run, self.rank)

    def values(self, phase: str) -> list[int]:
        """The list a timer appends its nanosecond durations to (created on first use)."""
        lst = self._values.get(phase)
        if lst is None:
            with self._phase_lock:
                lst = self._values.get(phase)
                if lst is None:
                    label = stream_label(self.run, self.rank, self._label_name(phase), self._child_pid)
                    self._streams[phase] = StreamId(label, DATASOURCE, UNIT)
                    lst = self._values[phase] = []
        return lst

    def began(self, phase: str, start_ns: int) -> None:
        """Note that a timing of `phase` started at `start_ns` (`perf_counter_ns`): the first one starts its column."""
        if phase in self._first_ns:
            return
        self._first_ns[phase] = start_ns
        if self._forked:  # a forked child's first timing: its own flusher and SIGTERM handling
            self._forked = False
            self._reach_out()
        elif self in _kept:  # a DataLoader worker's: ours takes the place of torch's SIGTERM handler
            _catch_sigterm()

    def _label_name(self, phase: str) -> str:
        """`phase` cleaned for its label, plus `.2`, `.3`... when another phase already cleaned to that name."""
        base = clean_name(phase) or "phase"
        name, n = base, 1
        while name in self._names:
            n += 1
            name = f"{base}.{n}"
        self._names[name] = phase
        if name != base:
            _warn(f"latencymap: phases {self._names[base]!r} and {phase!r} both clean to the label name {base!r}; "
                  f"{phase!r} is labelled {name!r}")
        return name

    def record(self, phase: str, seconds: float) -> None:
        """Add one duration measured elsewhere; one that is not a finite number of seconds >= 0 is dropped."""
        try:
            ns = float(seconds) * 1e9
            valid = 0.0 <= ns < float("inf")
        except Exception:
            valid = False
        if not valid:
            self.invalid_dropped += 1
            if self.invalid_dropped == 1:
                _warn(f"latencymap: Timings.record({phase!r}, {reprlib.repr(seconds)}): not a finite duration >= 0; "
                      "dropped (told once)")
            return
        self.values(phase).append(int(ns))
        now = _clock()
        if phase not in self._first_ns:
            self.began(phase, now - int(ns))
        if now >= self.deadline_ns:
            self.flush(wait=False)

    def timer(self, phase: str = "step", *, cuda: bool | str = False) -> Timer:
        """A context manager and decorator timing `phase`; see the module docstring for `cuda`."""
        if cuda:
            mode = "sync" if cuda == "sync" else "events"
            torch = _usable_torch_cuda()
            if torch is not None:
                return CudaTimer(self, phase, torch, mode)
        return Timer(self, phase)

    def timed_iter(self, iterable: Iterable[Any], phase: str = "data_wait") -> TimedIterable:
        """`iterable` with each `next()` timed as `phase`, an epoch's first and last as `<phase>.epoch_start` and
        `<phase>.epoch_end`; iterate it again for each epoch."""
        return TimedIterable(self, iterable, phase)

    def flush(self, wait: bool = True) -> list[Interval]:
        """Bin what was timed since the last flush into one interval per phase and write them to the sink."""
        return self._flush(wait)

    def _flush(self, wait: bool, cuda: bool = True) -> list[Interval]:
        """`flush`; the flusher thread passes `cuda=False`: CUDA events are read in the training thread only."""
        if os.getpid() != self._pid:
            self._after_fork()
        if self._forked:  # the first flush in a forked child: its own flusher thread and SIGTERM handling
            self._forked = False
            self._reach_out()
        if self.closed:  # timings after close are discarded
            for lst in self._values.values():
                del lst[:len(lst)]
            return []
        if not self._lock.acquire(blocking=wait):
            return []
        try:
            return [] if self.closed else self._flush_locked(cuda)
        finally:
            self._lock.release()

    def _flush_locked(self, cuda: bool = True) -> list[Interval]:
        if cuda:
            self._resolve_cuda()
        wall = self._wall0 + (_clock() - self._ns0) / 1e9  # monotonic: a clock step cannot reorder columns
        now = max(wall, self._last_wall + _MIN_COLUMN_S)
        out: list[Interval] = []
        said: list[str] = []
        for phase, lst in list(self._values.items()):
            n = len(lst)
            if n == 0:  # no column: the phase's next one starts where its last ended
                continue
            durations = np.array(lst[:n], dtype=np.float64)
            del lst[:n]  # appends made meanwhile by other threads stay for the next flush
            counts, sums_ns = bin_values(durations)
            extremes = bin_extremes(durations)
            if phase not in self._past_top and past_top(extremes[1, TOP_SLOT:]) is not None:
                self._past_top.add(phase)
                said.append(f"latencymap: phase {phase!r}: {past_top_note(float(extremes[1, TOP_SLOT]), UNIT)}")
            start = self._starts.get(phase)
            if start is None:  # the first column: from the first timing's start, not from when Timings was made
                first = self._first_ns.get(phase)
                start = self._origin_wall if first is None else self._wall0 + (first - self._ns0) / 1e9
                start = min(max(start, self._origin_wall), now - _MIN_COLUMN_S)
            out.append(Interval(self._streams[phase], start, now, counts, sums_ns * 1e-9,
                                extremes=extremes * 1e-9))
            self._starts[phase] = now
            self.events += n
        self._last_wall = now
        self.deadline_ns = _clock() + self.interval_ns
        if out:
            self.intervals += len(out)
            try:
                self.sink.write(out)
            except Exception as err:  # never let the viewer side break training
                _warn(f"latencymap: sink failed: {err}; timings are discarded")
                self.sink = open_sink("null")
        for message in said:  # once the intervals are written: a warning filter that raises loses none
            _warn(message)
        return out

    def _flush_and_close(self, close: bool, timeout: float) -> None:
        """At SIGTERM (any thread): flush, and with `close` close the sink; given up when the lock stays taken."""
        if self.closed or os.getpid() != self._pid or not self._lock.acquire(timeout=timeout):
            return
        try:
            if not self.closed:
                self._flush_locked(cuda=False)
                if close:
                    self.closed = True
                    _kept.discard(self)
                    self.sink.close()
        except Exception:  # a dying process says nothing more
            pass
        finally:
            self._lock.release()

    def _after_fork(self) -> None:
        """In a forked child (right after the fork): keep the lists (timers hold them) but drop the parent's
        timings in them; what the child times goes to the sink's `after_fork` (its own connection or file).

        A phase's first column in the child starts at the child's first timing of it (its timers note it again),
        never before the fork, and ends at the parent's next interval boundary, as the parent's column does."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._phase_lock = threading.Lock()
        for lst in self._values.values():
            lst.clear()
        self._cuda_pending.clear()
        now = _clock()
        self._starts.clear()
        self._first_ns = {}
        for timer in list(self._timers):
            timer._rearm()
        self._origin_wall = self._wall0 + (now - self._ns0) / 1e9
        self._last_wall = max(self._last_wall, self._origin_wall)
        if self.deadline_ns <= now:  # the parent's interval is over (it flushes now): the next one starts here
            self.deadline_ns = now + self.interval_ns
        self.intervals = self.events = self.cuda_dropped = self.invalid_dropped = 0
        self._child_pid = self._pid  # labelled apart from the parent (`listen` labels its connection so too)
        for phase, stream in self._streams.items():
            name = stream.label.rsplit("/", 1)[1]
            self._streams[phase] = StreamId(stream_label(self.run, self.rank, name, self._pid), DATASOURCE, UNIT)
        self.sink = self.sink.after_fork()
        self._forked = not self.closed

    def _resolve_cuda(self, block: bool = False) -> None:
        pending = self._cuda_pending
        while pending:
            values, start, end = pending[0]
            if block:
                end.synchronize()
            elif not end.query():
                return
            pending.popleft()
            values.append(int(start.elapsed_time(end) * 1e6))

    def close(self) -> None:
        """Flush the last interval, wait for pending CUDA events, close the sink."""
        if self.closed:
            return
        if os.getpid() != self._pid:
            self._after_fork()
        try:
            self._resolve_cuda(block=True)
        except Exception:
            self._cuda_pending.clear()
        with self._lock:  # the flusher thread may be flushing: the sink closes after it
            if self.closed:
                return
            if any(self._values.values()):
                self._flush_locked()
            self.closed = True
            _kept.discard(self)
            self.sink.close()

    def __enter__(self) -> Timings:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Timer:
    """Times `phase` as `with timer:` (nestable) or as `@timer` on a function or an `async def`, from any thread
    or asyncio task: each thread and task keeps its own starts (a context variable), so one Timer can be shared."""

    def __init__(self, timings: Timings, phase: str) -> None:
        self.timings = timings
        self.phase = phase
        self._values = timings.values(phase)
        # This thread's or task's innermost open `with` block: a cell [start, the enclosing block's cell]; an
        # exit sets its start to None (closed) instead of setting the variable again, and the next enter skips
        # closed cells. A task made inside a block inherits the cell, never the blocks opened after it.
        self._open: ContextVar[list[Any] | None] = ContextVar(f"latencymap.timer.{phase}", default=None)
        self._get, self._set = self._open.get, self._open.set
        self._append: Callable[[int], None] = self._first_append
        self._began = False  # whether a function it decorates noted its first timing
        self._unpaired = False
        timings._timers.add(self)

    def _first_append(self, ns: int) -> None:
        """This Timer's first timing: note its start, then append straight to the list."""
        self._values.append(ns)
        self.timings.began(self.phase, _clock() - ns)
        self._append = self._values.append

    def _rearm(self) -> None:
        """In a forked child: the next timing is the child's first, noted again."""
        self._append = self._first_append
        self._began = False

    def _push(self, start: Any) -> None:
        """Open a block started at `start` in this thread or task."""
        top = self._get()
        while top is not None and top[0] is None:
            top = top[1]
        self._set([start, top])

    def _pop(self) -> Any:
        """Close this thread's or task's innermost open block: its start; None (told once) when none is open."""
        cell = self._get()
        while cell is not None and cell[0] is None:
            cell = cell[1]
        if cell is None:
            if not self._unpaired:
                self._unpaired = True
                _warn(f"latencymap: timer {self.phase!r} exited without a start in this thread or task; "
                      "that exit is not timed (told once)")
            return None
        start, cell[0] = cell[0], None
        return start

    def __enter__(self) -> Timer:
        top = self._get()
        while top is not None and top[0] is None:
            top = top[1]
        self._set([_clock(), top])
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        end = _clock()
        cell = self._get()
        while cell is not None and cell[0] is None:
            cell = cell[1]
        if cell is None:
            self._pop()  # says so
            return
        self._append(end - cell[0])
        cell[0] = None
        if end >= self.timings.deadline_ns:
            self.timings.flush(wait=False)

    def __call__(self, fn: F) -> F:
        values, timings, phase, timer = self._values, self.timings, self.phase, self

        def done(start: int) -> None:
            end = _clock()
            values.append(end - start)
            if not timer._began:
                timer._began = True
                timings.began(phase, start)
            if end >= timings.deadline_ns:
                timings.flush(wait=False)

        if _not_timeable(fn):
            return fn
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                start = _clock()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    done(start)

            return timed_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = _clock()
            try:
                return fn(*args, **kwargs)
            finally:
                done(start)

        return timed  # type: ignore[return-value]


def _not_timeable(fn: Callable[..., Any]) -> bool:
    """True, with a warning, for a generator or async generator function: its body runs as it is iterated, not
    when it is called, so `@timer` would time only the making of the generator."""
    if not (inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)):
        return False
    how = ("wrap what it yields in timed_iter(), or put `with step:` inside it" if inspect.isgeneratorfunction(fn)
           else "put `with step:` inside it")
    _warn(f"latencymap: @timer cannot time the generator function {getattr(fn, '__qualname__', fn)!r} "
          f"(calling it only makes the generator); it is left untimed: {how}")
    return True


class CudaTimer(Timer):
    """A Timer measuring GPU time: CUDA events (resolved at flush) or `torch.cuda.synchronize()` around the step."""

    def __init__(self, timings: Timings, phase: str, torch: Any, mode: str) -> None:
        super().__init__(timings, phase)
        self.mode = mode
        self._torch = torch

    def __enter__(self) -> CudaTimer:
        if self.mode == "sync":
            self._torch.cuda.synchronize()
            self._push(_clock())
        else:
            self.timings.began(self.phase, _clock())
            start = self._torch.cuda.Event(enable_timing=True)
            start.record()
            self._push(start)
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self.mode == "sync":
            self._torch.cuda.synchronize()
            super().__exit__(exc_type, exc, tb)
            return
        start = self._pop()
        if start is None:
            return
        end = self._torch.cuda.Event(enable_timing=True)
        end.record()
        pending = self.timings._cuda_pending
        pending.append((self._values, start, end))
        if len(pending) > MAX_PENDING_CUDA:
            pending.popleft()
            self.timings.cuda_dropped += 1
        if _clock() >= self.timings.deadline_ns:
            self.timings.flush(wait=False)

    def __call__(self, fn: F) -> F:
        if _not_timeable(fn):
            return fn
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                with self:
                    return await fn(*args, **kwargs)

            return timed_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return timed  # type: ignore[return-value]


class TimedIterable:
    """Wraps an iterable (a DataLoader): each iteration times every blocking `next()`, in three phases (see the
    module docstring); other attributes pass through."""

    def __init__(self, timings: Timings, iterable: Iterable[Any], phase: str) -> None:
        self.timings = timings
        self.iterable = iterable
        self.phase = phase
        self.start_phase = f"{phase}.epoch_start"
        self.end_phase = f"{phase}.epoch_end"

    def __iter__(self) -> Iterator[Any]:
        start = _clock()  # the epoch's start: iter() (a DataLoader starts its workers there) to its first item
        try:
            it = iter(self.iterable)
            item = next(it)
        except StopIteration:  # an empty epoch: its start and end in one wait
            self._timed(self.end_phase, start)
            return
        except BaseException:  # the wait that ended in the error counts too
            self._timed(self.start_phase, start)
            raise
        self._timed(self.start_phase, start)
        yield item
        timings, append = self.timings, self.timings.values(self.phase).append
        start = _clock()
        timings.began(self.phase, start)
        while True:
            try:
                item = next(it)
            except StopIteration:  # the epoch's end: a DataLoader shuts its workers down in it
                self._timed(self.end_phase, start)
                return
            except BaseException:  # the wait that ended in the error (a Dataset's, DataLoader's timeout) counts too
                append(_clock() - start)
                raise
            end = _clock()
            append(end - start)
            if end >= timings.deadline_ns:
                timings.flush(wait=False)
            yield item
            start = _clock()

    def _timed(self, phase: str, start: int) -> None:
        """Record a wait of `phase` that started at `start` and ends now (once an epoch: no hurry)."""
        end, timings = _clock(), self.timings
        timings.began(phase, start)
        timings.values(phase).append(end - start)
        if end >= timings.deadline_ns:
            timings.flush(wait=False)

    def __len__(self) -> int:
        return len(self.iterable)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        if name == "iterable":
            raise AttributeError(name)
        return getattr(self.iterable, name)


def _warn(message: str) -> None:
    """A RuntimeWarning pointing at the first caller outside latencymap (the user's line)."""
    level = 2
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, RuntimeWarning, stacklevel=level)


def _usable_torch_cuda() -> Any:
    """The torch module when CUDA can be used; None (with one warning) otherwise."""
    try:
        import torch

        if torch.cuda.is_available():
            return torch
        reason = "torch.cuda.is_available() is False"
    except ImportError:
        reason = "torch is not installed"
    warnings.warn(f"latencymap: cuda timing asked for but {reason}; timing on the CPU", RuntimeWarning, stacklevel=3)
    return None


# Module-level API: one Timings per sink spec, closed at exit.
_timings: dict[Any, Timings] = {}


def get_timings(sink: Sink | str | None = None, *, replace: bool = False, **options: Any) -> Timings:
    """The shared Timings of `sink`, created with `options` (see `Timings`) on first use or with `replace`."""
    key = sink if sink is None or isinstance(sink, str) else id(sink)
    with _registry_lock:
        found = _timings.get(key)
        if found is None or found.closed or replace:
            if found is not None:
                found.close()
            found = _timings[key] = Timings(sink, **options)
        return found


def configure(sink: Sink | str | None = None, **options: Any) -> Timings:
    """Set up (or replace) the Timings that `timed_iter`/`timer` use for `sink` (`run`, `rank`, `interval`)."""
    return get_timings(sink, replace=True, **options)


def timed_iter(iterable: Iterable[Any], phase: str = "data_wait", sink: Sink | str | None = None) -> TimedIterable:
    """Wrap `iterable` (a DataLoader) so each blocking `next()` is timed as `phase` (an epoch's start and end apart)."""
    return get_timings(sink).timed_iter(iterable, phase)


def timer(phase: str = "step", sink: Sink | str | None = None, *, cuda: bool | str = False) -> Timer:
    """A context manager/decorator timing `phase` (`cuda=True`: CUDA events; `"sync"`: synchronize)."""
    return get_timings(sink).timer(phase, cuda=cuda)


def close_all() -> None:
    """Flush and close every Timings still open (registered to run at exit); one whose close raises (a warning
    filter that raises) stops none of the others."""
    with _registry_lock:
        items = [*_timings.values(), *_live]
        _timings.clear()
    with contextlib.ExitStack() as closing:
        for t in reversed(items):  # the stack closes them in `items` order
            closing.callback(t.close)


atexit.register(close_all)


def _after_fork_in_child() -> None:
    """Right after a fork, in the child: every open Timings drops the parent's timings and gets the child's own
    sink; a multiprocessing child (which ends with `os._exit`, skipping atexit) closes them at its exit too."""
    global _mp_exit_hooked
    for t in list(_live):
        if not t.closed:
            t._after_fork()
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None and not _mp_exit_hooked:
        _mp_exit_hooked = True  # its registry, inherited by a grandchild, holds the hook already
        mp_util.register_after_fork(_close_at_mp_exit, _close_at_mp_exit)


def _close_at_mp_exit(_: object) -> None:
    """In a new multiprocessing child (its after-fork hooks run once its finalizers are cleared): close every
    Timings among the finalizers it runs when its target returns, before `os._exit`."""
    from multiprocessing.util import Finalize

    Finalize(None, close_all, exitpriority=100)


_mp_exit_hooked = False
os.register_at_fork(after_in_child=_after_fork_in_child)



# Diagnosis of training streams, through latencymap.analysis.


def phase_streams(intervals: Iterable[Interval], phase: str) -> dict[StreamId, list[Interval]]:
    """The intervals of every `run/rankN/<phase>` stream, by stream, in order."""
    out: dict[StreamId, list[Interval]] = defaultdict(list)
    for iv in intervals:
        parsed = parse_label(iv.stream.label)
        if parsed is not None and parsed[2] == phase:
            out[iv.stream].append(iv)
    return dict(out)


def diagnose_phase(intervals: Iterable[Interval], phase: str = "data_wait") -> dict[str, Any]:
    """`diagnose` (bands, bimodal) of each `.../<phase>` stream by label: bimodal data waits = I/O-bound vs cached."""
    from latencymap.analysis.diagnosis import diagnose

    out: dict[str, Any] = {}
    for stream, ivs in phase_streams(intervals, phase).items():
        low, high = bounds_seconds(stream.datasource, stream.unit)
        times = np.stack([iv.time if iv.time is not None else np.zeros(len(iv.counts)) for iv in ivs])
        out[stream.label] = diagnose(np.stack([iv.counts for iv in ivs]), times, low, high,
                                     np.array([iv.start for iv in ivs]), np.array([iv.end for iv in ivs]),
                                     datasource=stream.datasource)
    return out


def straggler_ranks(intervals: Iterable[Interval], phase: str = "step", **options: Any) -> list[Any]:
    """Ranks whose mean `phase` duration is much slower than their run's (`find_stragglers`; options pass through).

    One item per writer (key `run/rankN`, or `run/rankN.pidM` for a writer the listener told apart from another
    of the same rank; group `run/phase`); `find_stragglers` needs `min_group` (4) ranks.
    """
    from latencymap.analysis.stragglers import Item, find_stragglers

    items = []
    for stream, ivs in phase_streams(intervals, phase).items():
        run = (parse_label(stream.label) or ("",))[0]
        writer = stream.label.rsplit("/", 1)[0]  # run/rankN, keeping a listener's `.pidM`
        events = sum(int(iv.counts.sum()) for iv in ivs)
        spent = sum(float(iv.time.sum()) for iv in ivs if iv.time is not None)
        if events:  # no start/end: ranks run side by side, there is no warm-up wave to excuse
            items.append(Item(writer, f"{run}/{phase}", spent / events))
    return find_stragglers(items, **options)
