"""A profiling target timed with latencymap.instrument (so its flusher thread runs beside the main one): busy in
`func_a` for the first PHASE seconds, then in `func_b`. Usage: python flush_child.py PHASE RECORDING; prints
`ready <t0>`."""

from __future__ import annotations

import sys
import time

from latencymap.instrument import Timings


def busy(seconds: float) -> int:
    """Busy-loop for `seconds`."""
    end, n = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        n += 1
    return n


def func_a() -> int:
    """One step of the first phase."""
    return busy(0.01)


def func_b() -> int:
    """One step of the second phase."""
    return busy(0.01)


def main() -> None:
    phase = float(sys.argv[1])
    with Timings(f"file:{sys.argv[2]}", run="prof", rank=0, interval=0.2) as timings:
        step = timings.timer("step")
        with step:
            pass  # the flusher thread runs from the first timing on
        t0 = time.time()
        print(f"ready {t0!r}", flush=True)
        while time.time() - t0 < 3 * phase:
            with step:
                (func_a if time.time() - t0 < phase else func_b)()


if __name__ == "__main__":
    main()
