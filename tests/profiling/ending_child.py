"""A profiling target whose worker ends while it is profiled: a thread, or a forked child process.

Usage: python ending_child.py thread|fork LOG. Prints `ready`, then after 1 s starts the worker, which spins 0.5 s
in `ending_busy()` and ends; the worker writes `<start> <end>` (epoch seconds, its own clock) to LOG.
The main thread sleeps until it is killed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time


def ending_busy(log: str) -> None:
    """Spin 0.5 s, then write when it started and stopped."""
    start = time.time()
    while time.time() < start + 0.5:
        pass
    with open(log + ".tmp", "w") as fh:
        fh.write(f"{start} {time.time()}\n")
    os.replace(log + ".tmp", log)


def main() -> None:
    mode, log = sys.argv[1], sys.argv[2]
    print("ready", flush=True)
    time.sleep(1.0)
    if mode == "thread":
        threading.Thread(target=ending_busy, args=(log,)).start()
    elif os.fork() == 0:
        ending_busy(log)
        os._exit(0)
    while True:
        time.sleep(0.05)
        if mode == "fork":
            with contextlib.suppress(ChildProcessError):
                os.waitpid(-1, os.WNOHANG)


if __name__ == "__main__":
    main()
