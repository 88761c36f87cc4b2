"""When the threads of a profiled process tree ended: their /proc entries, polled while py-spy samples.

py-spy's chrometrace has no sign that a thread or a process ended: it writes events only when a
thread's stack changes, and closes every stack it ever saw when the recording stops, so a thread
that ended holds its last stack to the end of the chunk (py-spy 0.4.3: a thread that spun 0.5 s
got 1.5 s of samples; every forked DataLoader worker of an epoch stayed busy into the next). Recorded
with `--threads`, each stack carries its thread's native id in a `thread (<tid>)` frame: the id that
/proc/<pid>/task lists, or, for a program in another PID namespace (a container, `unshare -p`), the id
it has there, which the last field of the task's `NSpid:` gives (py-spy 0.4.3 on Python 3.11 names the
task listed as 6942 `thread (1)`, the id the program itself sees); a thread is alive under both. A
thread absent from a complete listing made after it was seen alive has ended; it is taken to have
ended midway between the last sign of it and that listing. One never seen alive (an id that no
listing names) is never taken to have ended.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from latencymap.profiling.chrometrace import Span
from latencymap.profiling.samples import native_tid

#: Polls kept: a chunk is ended ≈ 2 s after it started, so this covers the chunks still running.
KEEP_S = 30.0
#: Seconds between polls: a thread's end is placed within half of this (a few ms of CPU per poll and process).
POLL_S = 0.05


def _tasks(pid: int) -> list[int] | None:
    """The native thread ids of a process: none for one that is gone or a zombie; None when /proc does not say."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            if fh.read().rsplit(")", 1)[-1].split()[:1] in (["Z"], ["X"]):
                return []
        return [int(name) for name in os.listdir(f"/proc/{pid}/task") if name.isdigit()]
    except (FileNotFoundError, ProcessLookupError):
        return []
    except OSError:
        return None


def _children(pid: int, tid: int) -> list[int] | None:
    """Processes that thread `tid` of `pid` started (gone: none); None where the kernel does not list them."""
    try:
        with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:
            return [int(word) for word in fh.read().split()]
    except FileNotFoundError:
        return None if os.path.exists(f"/proc/{pid}/task/{tid}") else []  # a thread that just ended: none
    except OSError:
        return None


def _nspid(path: str) -> list[int]:
    """The ids in the `NSpid:` line of a /proc status file, ours first, its own namespace's last; [] when not said."""
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return [int(word) for word in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def _own_tid(pid: int, tid: int) -> int | None:
    """The id that thread `tid` of `pid` has in its own PID namespace (`NSpid:`'s last); None when not said."""
    ids = _nspid(f"/proc/{pid}/task/{tid}/status")
    return ids[-1] if ids else None


@dataclass(frozen=True, slots=True)
class Poll:
    """The (pid, native tid) alive at `time` (epoch), the processes listed, and whether their whole tree was; a
    thread of a process in another PID namespace is alive under both its ids."""

    time: float
    alive: frozenset[tuple[int, int]]
    listed: frozenset[int]
    tree: bool

    def gone(self, key: tuple[int, int]) -> bool:
        """Whether this poll shows that the thread had ended: its process was listed without it, or is gone."""
        return key not in self.alive and (key[0] in self.listed or self.tree)


class Liveness:
    """Polls of the threads of `pid` (and, with `subprocesses`, of its descendants), in a thread of their own
    between `start` and `stop`: the collector's thread can be busy for a second reading a chunk."""

    def __init__(self, pid: int, *, subprocesses: bool = False) -> None:
        self.pid = pid
        self.subprocesses = subprocesses
        self.polls: deque[Poll] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: The id each thread has in its process's own PID namespace, where that is another one (by the last poll).
        self._inner: dict[tuple[int, int], int] = {}
        #: Whether each process listed by the last poll is in another PID namespace.
        self._nested: dict[int, bool] = {}

    def start(self) -> None:
        """Poll every POLL_S until `stop`."""
        self._thread = threading.Thread(target=self._run, name="latencymap-liveness", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)

    def _run(self) -> None:
        while True:
            self.poll()
            if self._stop.wait(POLL_S):
                return

    def poll(self, now: float | None = None) -> None:
        """List the threads alive now."""
        now = time.time() if now is None else now
        alive: set[tuple[int, int]] = set()
        listed: set[int] = set()
        unknown: set[int] = set()
        inner: dict[tuple[int, int], int] = {}
        nested: dict[int, bool] = {}
        tree = True
        todo = [self.pid]
        while todo:
            pid = todo.pop()
            if pid in listed or pid in unknown:
                continue
            tids = _tasks(pid)
            if tids is None:
                unknown.add(pid)
                tree = False
                continue
            listed.add(pid)
            alive.update((pid, tid) for tid in tids)
            known = self._nested.get(pid)
            nested[pid] = len(_nspid(f"/proc/{pid}/status")) > 1 if known is None else known
            for tid in tids if nested[pid] else ():
                own = self._inner.get((pid, tid)) or _own_tid(pid, tid)
                if own is not None:
                    inner[(pid, tid)] = own
                    alive.add((pid, own))
            for tid in tids if self.subprocesses else ():
                kids = _children(pid, tid)
                if kids is None:
                    tree = False
                else:
                    todo += kids
        self._inner, self._nested = inner, nested
        with self._lock:
            self.polls.append(Poll(now, frozenset(alive), frozenset(listed), tree or not self.subprocesses))
            while self.polls and self.polls[0].time < now - KEEP_S:
                self.polls.popleft()

    def ended(self, key: tuple[int, int], alive_at: float, margin: float) -> float | None:
        """When thread `key` (pid, native tid), alive at `alive_at` (epoch, ± `margin`), ended; None while no poll
        made more than `margin` after it shows it gone, and for a key that no poll saw alive (whose id these
        listings may not use)."""
        last, seen = alive_at, False
        with self._lock:
            polls = list(self.polls)
        for poll in polls:
            if key in poll.alive:
                last, seen = max(last, poll.time), True
            elif seen and poll.time > alive_at + margin and poll.gone(key):
                return (last + poll.time) / 2
        return None


def clip_ended(spans: Iterable[Span], liveness: Liveness | None, origin: float, margin: float) -> Iterator[Span]:
    """The spans, each cut where its thread ended (by `liveness`; `origin` is the epoch of `ts` 0, known to ±`margin`
    seconds); spans of threads without a native id, or not seen to end, as they are."""
    spans = list(spans)
    if liveness is None:
        yield from spans
        return
    last_seen: dict[tuple[int, int], int] = {}
    keys: list[tuple[int, int] | None] = []
    for span in spans:
        tid = native_tid(span.stack)
        key = None if tid is None else (span.pid, tid)
        keys.append(key)
        if key is not None:
            last_seen[key] = max(last_seen.get(key, span.start_us), span.start_us)
    ends: dict[tuple[int, int], int] = {}
    for key, seen in last_seen.items():
        at = liveness.ended(key, origin + seen / 1e6, margin)
        if at is not None:
            ends[key] = max(seen, round((at - origin) * 1e6))
    for span, key in zip(spans, keys, strict=True):
        end = ends.get(key) if key is not None else None
        if end is None or span.end_us <= end:
            yield span
        elif span.start_us < end:
            yield replace(span, end_us=end)
