"""A live protocol stream: one cumulative PyLatencyMap record every STEP seconds (epoch timestamps).

Usage: python record_stream.py COUNT [STEP] [START_EPOCH] [timeofday]; the first record (the baseline) is
written at START_EPOCH (default: at once); `timeofday` writes microseconds since midnight UTC instead of epoch
microseconds, as PyLatencyMap's Oracle scripts do.
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    count = int(sys.argv[1])
    step = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
    next_at = float(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else time.time()
    day_us = 86_400_000_000 if sys.argv[4:] == ["timeofday"] else None
    time.sleep(max(0.0, next_at - time.time()))
    total = 0
    for _ in range(count):
        now = int(time.time() * 1e6)
        total += 10
        stamp = now % day_us if day_us else now
        sys.stdout.write(f"<begin record>\ntimestamp, microsec, {stamp}, live\nlatencyunit, microsec\n"
                         f"label, phases\ndatasource, bpf\n64, {total}\n128, {total // 2}\n<end record>\n")
        sys.stdout.flush()
        next_at += step
        time.sleep(max(0.0, next_at - time.time()))


if __name__ == "__main__":
    main()
