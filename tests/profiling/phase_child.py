"""A profiling target: alternates `fast_phase()` and `slow_phase()` busy loops, logging each start (epoch s).

Usage: python phase_child.py LOG [PHASE_SECONDS] [CYCLES]; one line per phase start,
`<name> <epoch>`, flushed at once; prints `ready` on stdout first.
"""

from __future__ import annotations

import sys
import time


def fast_phase(seconds: float) -> int:
    """Busy-loop for `seconds`."""
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        n += 1
    return n


def slow_phase(seconds: float) -> int:
    """Busy-loop for `seconds` (another function, so the profile tells them apart)."""
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        n += 2
    return n


def main() -> None:
    log_path = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    cycles = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    with open(log_path, "w", encoding="utf-8") as log:
        print("ready", flush=True)
        for _ in range(cycles):
            for phase in (fast_phase, slow_phase):
                log.write(f"{phase.__name__} {time.time()!r}\n")
                log.flush()
                phase(seconds)
        log.write(f"end {time.time()!r}\n")


if __name__ == "__main__":
    main()
