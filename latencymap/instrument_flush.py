"""The training-loop timings' flusher thread and SIGTERM handling (see `latencymap.instrument`).

On time without a timing: one daemon thread per process flushes an interval its program left (idle or hung), and
a SIGTERM flushes before the process dies. Neither holds a lock across user code; the thread wakes once per
interval (LATE_S after its end) and flushes only a Timings that no timing flushed since.

A DataLoader worker gets SIGTERM from its parent at the parent's exit (persistent workers are daemons) and torch's
handler, set in C where Python cannot see it, `_exit(0)`s then. At the worker's first timing ours takes its place:
it flushes, then ends as torch's would: exit 0 when the parent sent it (known by a flag the parent sets as it exits:
`_parent_exiting`), else torch's handler again, which dies of the signal.

A process that times to a socket or a recording tells the processes it starts with multiprocessing that they are its
children (`mark_children`, in `$LATENCYMAP_PARENT`): a spawned one (spawn, forkserver) gets no copy of its memory, so
it learns there its parent's run and rank, to be labelled as a forked child is, and where the parent's exit flag is.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import select
import signal
import sys
import threading
import time
import weakref
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from latencymap.instrument import Timings

#: How long after its interval ended the flusher thread sends what a program that timed nothing since (idle, hung)
#: timed in it; a program that times on flushes at its own next timing.
LATE_S = 0.1
#: At SIGTERM, how long the main thread gets to run the handler (it cannot while blocked in C code: a hung
#: collective) before the flusher thread flushes and lets the signal's default action end the process.
SIGTERM_GRACE_S = 1.0
_clock = time.perf_counter_ns

_live: weakref.WeakSet[Timings] = weakref.WeakSet()  # every open Timings, closed at exit too
_kept: set[Timings] = set()  # those whose sink leaves the process: alive until closed, though the program dropped them
_registry_lock = threading.Lock()  # latencymap.instrument's registry of Timings
_flusher_lock = threading.Lock()  # the flusher's start: taken while the registry's lock is held (a Timings made)
_flusher: threading.Thread | None = None
_wake_r, _wake_w = -1, -1  # the thread waits on this pipe: byte 0 wakes it, a signal number is a signal caught
_sigterm_next: Any = None  # what our SIGTERM handler does after flushing: the user's handler, or SIG_DFL (die)
_sigterm_caught = False  # once per process: a handler the user sets later stays theirs
_pending_call: Any = None  # the main thread's call to `_catch_sigterm` asked from another thread (kept alive)
_asked = False  # that call is queued and has not run yet
_dying = threading.Lock()
_TORCH_WORKER = "torch-worker"  # `_sigterm_next` in a DataLoader worker: end as torch's C handler would
_worker_caught = False  # `_catch_sigterm` ran in this process as a DataLoader worker
_at_fork: Any = None  # the SIGTERM handler Python knew of when this process was forked (torch's hides behind it)
_exit_flag: mmap.mmap | None = None  # shared with this process's children: byte 1 once it exits
_exit_flag_pid = 0  # the process that owns `_exit_flag`
_exit_flag_fd = -1  # its memfd, which a spawned child opens through /proc (-1: none, an anonymous mapping)
_parents_flag: mmap.mmap | None = None  # the parent's `_exit_flag`, in a child
#: Set by a process that times (see the module docstring): {"pid", "run", "rank", "flag": its exit flag's memfd}.
PARENT_ENV = "LATENCYMAP_PARENT"


def _start_flusher() -> None:
    """Start the flusher thread once per process (again in a forked child that makes a Timings), or wake it."""
    global _flusher, _wake_r, _wake_w
    with _flusher_lock:
        if _flusher is None or not _flusher.is_alive():
            if _wake_r < 0:
                _wake_r, _wake_w = os.pipe()
                os.set_blocking(_wake_r, False)
                os.set_blocking(_wake_w, False)
            _flusher = threading.Thread(target=_flush_on_time, args=(_wake_r,), name="latencymap-flush",
                                        daemon=True)
            _flusher.start()
            return
    with contextlib.suppress(OSError):  # a new Timings may have a shorter interval
        os.write(_wake_w, b"\0")


def _flush_on_time(wake: int) -> None:
    """The flusher thread's loop: flush each Timings LATE_S after its interval ended if no timing did."""
    while True:
        due = _flush_late(_clock())
        try:
            ready, _, _ = select.select([wake], [], [], max(0.01, (due - _clock()) / 1e9))
            got = os.read(wake, 256) if ready else b""
        except (BlockingIOError, InterruptedError):
            continue
        except (OSError, ValueError):  # the pipe was closed (a forked child's copy)
            return
        if signal.SIGTERM in got:
            _terminated_while_blocked()


def _flush_late(now: int) -> int:
    """Flush each open Timings whose interval ended LATE_S ago or more; when the next one is due (ns)."""
    late = int(LATE_S * 1e9)
    due = now + 3_600_000_000_000
    try:
        items = list(_live)
    except RuntimeError:  # the set changed while copied: again soon
        return now
    for t in items:
        if t.closed:
            continue
        if now >= t.deadline_ns + late:
            t._flush(wait=False, cuda=False)
        due = min(due, t.deadline_ns + late)
    return due


def _catch_sigterm() -> None:
    """Flush at SIGTERM. Our handler takes the place of the default action (then dies as it would) or of the
    user's own Python handler (then calls it); SIG_IGN, a handler set outside Python, and one the user sets after
    are left alone (an exit through `sys.exit` then flushes at exit). Once; `signal.signal` works only in the main
    thread, so from another thread the main thread is asked to do it as soon as it runs Python. Again once in a
    DataLoader worker (at its first timing): see the module docstring."""
    global _sigterm_next, _sigterm_caught, _worker_caught
    worker = _in_dataloader_worker()
    if _sigterm_caught and (_worker_caught or not worker):
        return
    if threading.current_thread() is not threading.main_thread():
        _ask_main_thread()
        return
    _sigterm_caught = True
    current = signal.getsignal(signal.SIGTERM)
    if worker:
        _worker_caught = True
    if worker and (current is signal.SIG_DFL or current is _on_sigterm or current is _at_fork):
        # none set in this worker since it forked: torch's runs, set in C after the fork (Python still names the old)
        _sigterm_next = _TORCH_WORKER
        signal.signal(signal.SIGTERM, _on_sigterm)
    elif current is signal.SIG_IGN or current is None:
        return
    elif current is not _on_sigterm:  # (ours already in a forked child)
        _sigterm_next = current
        signal.signal(signal.SIGTERM, _on_sigterm)
    if _sigterm_next in (signal.SIG_DFL, _TORCH_WORKER) and _wake_w >= 0:
        # The handler runs only once the main thread is back in Python: the wakeup fd lets the flusher thread
        # end the process when it is not (blocked in C code); taken only when nobody else uses one (asyncio's
        # for its own signal handlers: then a SIGTERM is still caught, whenever the main thread runs Python).
        other = signal.set_wakeup_fd(_wake_w, warn_on_full_buffer=False)
        if other not in (-1, _wake_w):
            signal.set_wakeup_fd(other)


def _ask_main_thread() -> None:
    """Have the main thread run `_catch_sigterm` at its next Python instruction (CPython's pending calls)."""
    global _pending_call, _asked
    if _asked:
        return
    try:
        import ctypes

        if _pending_call is None:
            def call(_: Any) -> int:
                global _asked
                _asked = False
                with contextlib.suppress(Exception):
                    _catch_sigterm()
                return 0

            _pending_call = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(call)
        _asked = ctypes.pythonapi.Py_AddPendingCall(_pending_call, None) == 0  # the queue full: asked again later
    except Exception:  # not CPython: SIGTERM is caught if a Timings is made in the main thread
        _asked = False


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM in the main thread: flush every Timings, then the user's handler, or die of the signal."""
    chained = _sigterm_next
    if callable(chained):
        for t in list(_live):
            t._flush_and_close(close=False, timeout=0.5)
        chained(signum, frame)
        return
    if not _dying.acquire(blocking=False):
        return
    for t in list(_live):
        t._flush_and_close(close=True, timeout=0.5)
    if _sigterm_next is _TORCH_WORKER:
        _end_as_torch_worker()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _terminated_while_blocked() -> None:
    """The flusher thread saw a SIGTERM: unless the main thread's handler runs within SIGTERM_GRACE_S (it cannot
    while blocked in C code), flush and close here and end the process with the signal's default action."""
    if _sigterm_next not in (signal.SIG_DFL, _TORCH_WORKER) or signal.getsignal(signal.SIGTERM) is not _on_sigterm:
        return
    time.sleep(SIGTERM_GRACE_S)
    if not _dying.acquire(blocking=False):
        return  # the main thread's handler is at it
    try:
        for t in list(_live):
            t._flush_and_close(close=True, timeout=0.5)
    finally:
        _die_of_sigterm()


def _die_of_sigterm() -> None:
    """End the process as SIGTERM's default action does, from a thread other than the main one."""
    import ctypes

    try:
        if _sigterm_next is _TORCH_WORKER:
            _end_as_torch_worker()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.signal(int(signal.SIGTERM), None)  # SIG_DFL: signal.signal works only in the main thread
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1.0)
    finally:
        os._exit(128 + int(signal.SIGTERM))


def _in_dataloader_worker() -> bool:
    """True inside a DataLoader worker's loop (torch set its SIGTERM handler there)."""
    worker = sys.modules.get("torch.utils.data._utils.worker")
    return worker is not None and getattr(worker, "_worker_info", None) is not None


def _end_as_torch_worker() -> None:
    """After flushing, end as torch's handler does: exit 0 when the parent sent SIGTERM (it ends its workers so at
    exit, and reports a worker killed by a signal as an error), else die of it through torch's handler."""
    if _parent_exiting():
        os._exit(0)
    from torch.utils.data._utils import signal_handling

    signal_handling._set_worker_signal_handlers()
    os.kill(os.getpid(), signal.SIGTERM)  # sent by this process, not the parent: torch's handler dies of it
    time.sleep(1.0)
    os._exit(128 + int(signal.SIGTERM))


def _parent_exiting() -> bool:
    """Whether the parent has begun to exit (its daemonic children are then SIGTERMed); True when it cannot be known
    (a spawned worker of a parent that did not time, or where /proc could not reach its flag): the parent's SIGTERM at
    exit is the usual one."""
    flag = _parents_flag
    try:
        return flag is None or flag[0] == 1
    except ValueError:
        return True


def _before_fork() -> None:
    """A multiprocessing parent about to fork: its children get a flag it sets as it exits (see `_parent_exiting`)."""
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        _make_exit_flag(mp_util)


def _make_exit_flag(mp_util: Any) -> None:
    """This process's exit flag, once: a memfd where there is one (a spawned child maps it through /proc), else an
    anonymous mapping (shared with forked children only); set by a finalizer as multiprocessing's exit begins."""
    global _exit_flag, _exit_flag_pid, _exit_flag_fd
    if _exit_flag_pid == os.getpid():
        return
    fd = -1
    with contextlib.suppress(Exception):
        try:
            fd = os.memfd_create(f"latencymap-exit-{os.getpid()}")
            os.ftruncate(fd, 1)
            flag = mmap.mmap(fd, 1)
        except (AttributeError, OSError):  # no memfd here (not Linux)
            if fd >= 0:
                os.close(fd)
            fd, flag = -1, mmap.mmap(-1, 1)
        _exit_flag, _exit_flag_pid, _exit_flag_fd = flag, os.getpid(), fd
        # run by multiprocessing's exit before it SIGTERMs the daemonic children (finalizers of priority >= 0)
        mp_util.Finalize(None, _exiting, args=(os.getpid(),), exitpriority=0)


def mark_children(run: str, rank: int) -> None:
    """Tell the processes this one starts with multiprocessing that they are children of a process that times `run`'s
    rank `rank`, and where its exit flag is (`PARENT_ENV`); a spawned child reads it (`timing_parent`)."""
    if "multiprocessing" in sys.modules:  # a DataLoader's: torch imported it (a spawned worker needs the flag)
        with contextlib.suppress(Exception):
            import multiprocessing.util

            _make_exit_flag(multiprocessing.util)
    told: dict[str, Any] = {"pid": os.getpid(), "run": run, "rank": rank}
    if _exit_flag_pid == os.getpid() and _exit_flag_fd >= 0:
        told["flag"] = _exit_flag_fd
    with contextlib.suppress(Exception):
        os.environ[PARENT_ENV] = json.dumps(told, sort_keys=True)


def timing_parent() -> dict[str, Any] | None:
    """In a multiprocessing child (fork, spawn, forkserver) of a process that times (`mark_children`): its pid, run
    and rank, its exit flag mapped for `_parent_exiting`; None in any other process."""
    global _parents_flag
    mp = sys.modules.get("multiprocessing")
    try:
        parent = mp.parent_process() if mp is not None else None
        if parent is not None:
            pid = parent.pid
        elif mp is not None and getattr(mp.current_process(), "_inheriting", False):
            pid = os.getppid()  # a spawned child importing its parent's main module: parent_process() comes after
        else:
            return None
        told = json.loads(os.environ.get(PARENT_ENV, ""))
    except Exception:
        return None
    if not isinstance(told, dict) or told.get("pid") != pid:
        return None
    run, rank, flag = told.get("run"), told.get("rank"), told.get("flag")
    if not isinstance(run, str) or not isinstance(rank, int) or isinstance(rank, bool):
        return None
    if _parents_flag is None and isinstance(flag, int) and not isinstance(flag, bool):
        _parents_flag = _reach_flag(pid, flag)
    return {"pid": pid, "run": run, "rank": rank}


def _reach_flag(pid: int, fd: int) -> mmap.mmap | None:
    """Process `pid`'s exit flag, its memfd `fd` mapped through /proc; None where that cannot be (no /proc, no right
    to it, the descriptor closed or another file now)."""
    path = f"/proc/{pid}/fd/{fd}"
    try:
        if os.readlink(path) != f"/memfd:latencymap-exit-{pid} (deleted)":
            return None
        opened = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return mmap.mmap(opened, 1, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    finally:
        os.close(opened)


def _exiting(pid: int) -> None:
    """Set this process's exit flag (not a forked child's: it inherits the finalizer)."""
    if os.getpid() == pid and _exit_flag is not None:
        with contextlib.suppress(ValueError):
            _exit_flag[0] = 1


def _after_fork_in_child() -> None:
    """A forked child shares the parent's pipe: the child stops writing signals to it and starts its own thread."""
    global _flusher, _wake_r, _wake_w, _dying, _sigterm_caught, _worker_caught, _at_fork, _asked
    global _exit_flag, _exit_flag_pid, _exit_flag_fd, _parents_flag
    _parents_flag = _exit_flag if _exit_flag_pid == os.getppid() else None
    if _exit_flag_fd >= 0:  # the parent's memfd: the mapping stays
        with contextlib.suppress(OSError):
            os.close(_exit_flag_fd)
    _exit_flag, _exit_flag_pid, _exit_flag_fd = None, 0, -1
    _at_fork, _worker_caught, _asked = signal.getsignal(signal.SIGTERM), False, False
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:  # inherited: the child's first Timings takes its wakeup fd
        _sigterm_caught = False
    if _wake_r >= 0:
        with contextlib.suppress(ValueError):
            other = signal.set_wakeup_fd(-1)
            if other != _wake_w:  # not ours: put back
                signal.set_wakeup_fd(other)
        for fd in (_wake_r, _wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
    _flusher, _wake_r, _wake_w, _dying = None, -1, -1, threading.Lock()


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
