"""A profiling target whose stack changes faster than py-spy samples: `tick()` and `tock()` take turns.

Usage: python flicker_child.py [SWITCH_SECONDS]; each call busy-loops SWITCH_SECONDS (default 0.002).
Prints `ready` first.
"""

from __future__ import annotations

import sys
import time


def tick(seconds: float) -> None:
    """Busy-loop for `seconds`."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def tock(seconds: float) -> None:
    """Busy-loop for `seconds` (another function, so the stack changes)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.002
    print("ready", flush=True)
    while True:
        tick(seconds)
        tock(seconds)


if __name__ == "__main__":
    main()
