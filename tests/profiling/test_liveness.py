"""The /proc polls beside py-spy on real processes: which thread ids they see alive, and when they say one ended."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from profiling_support import in_pid_namespace, only_child
from skips_support import requires_binary, requires_root

from latencymap.profiling.liveness import POLL_S, Liveness

#: Two threads beside the main one, waiting; prints its pid and each thread's native id as it sees them, then waits.
THREADS = textwrap.dedent("""
    import os, sys, threading
    done = threading.Event()
    threads = [threading.Thread(target=done.wait) for _ in range(2)]
    for t in threads: t.start()
    print(os.getpid(), threading.get_native_id(), *(t.native_id for t in threads), flush=True)
    sys.stdin.read()
    done.set()
""")


@contextmanager
def threads_in_a_namespace() -> Iterator[tuple[int, list[int], list[int]]]:
    """A program with three threads in a PID namespace of its own: its pid here, the ids its threads have here
    (/proc/<pid>/task), and the ids it sees itself (`threading.get_native_id`, what py-spy names them by)."""
    proc = subprocess.Popen(in_pid_namespace([sys.executable, "-c", THREADS]), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        own_pid, *own_tids = map(int, proc.stdout.readline().split())
        pid = only_child(proc.pid)
        assert own_pid == 1 and pid != 1
        yield pid, sorted(int(name) for name in os.listdir(f"/proc/{pid}/task")), own_tids
        proc.stdin.close()
        proc.wait(10)
    finally:
        proc.kill()
        proc.wait()


@requires_root()
@requires_binary("unshare", remedy="apt-get install util-linux")
def test_threads_in_another_pid_namespace_are_alive_under_the_ids_they_have_there() -> None:
    """py-spy names the threads of a program in a container by the ids they have there (`thread (1)`), /proc by
    ours (6942): none of its ids was alive, and every thread was taken to have ended at the first poll (3 threads
    spinning 8 s kept 256 samples of ~2,400). Truth: the ids the program reports for itself."""
    with threads_in_a_namespace() as (pid, tids, own):
        liveness = Liveness(pid)
        liveness.poll(100.0)
        liveness.poll(100.0 + POLL_S)
        poll = liveness.polls[-1]
        assert len(tids) == len(own) == 3 and set(tids).isdisjoint(own)
        for tid in [*tids, *own]:
            assert (pid, tid) in poll.alive and not poll.gone((pid, tid))
            assert liveness.ended((pid, tid), 99.0, 0.01) is None


def test_a_thread_id_that_no_listing_names_is_never_taken_to_have_ended() -> None:
    """An id that the polls never saw alive is one they cannot speak for (another namespace's, a pthread id read
    as a native one): its spans stay whole rather than end at the first poll."""
    done = threading.Event()
    thread = threading.Thread(target=done.wait)
    thread.start()
    try:
        liveness = Liveness(os.getpid())
        for k in range(3):
            liveness.poll(100.0 + k * POLL_S)
        assert liveness.ended((os.getpid(), threading.get_native_id()), 99.0, 0.01) is None
        assert liveness.ended((os.getpid(), 4_000_000_000), 99.0, 0.01) is None
        done.set()
        thread.join()
        assert thread.native_id is not None
        gone_by = time.monotonic() + 10  # join() returns before the kernel lets the task go: /proc may list it still
        while str(thread.native_id) in os.listdir(f"/proc/{os.getpid()}/task") and time.monotonic() < gone_by:
            time.sleep(0.001)
        liveness.poll(100.0 + 3 * POLL_S)
        assert liveness.ended((os.getpid(), thread.native_id), 99.0, 0.01) == 100.0 + 2.5 * POLL_S
    finally:
        done.set()
        thread.join()
