"""A live protocol stream: one cumulative PyLatencyMap record every STEP seconds (epoch timestamps).

Usage: python record_stream.py COUNT [STEP] [START_EPOCH]; the first record (the baseline) is written
at START_EPOCH (default: at once).
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    count = int(sys.argv[1])
    step = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
    next_at = float(sys.argv[3]) if len(sys.argv) > 3 else time.time()
    time.sleep(max(0.0, next_at - time.time()))
    total = 0
    for _ in range(count):
        now = time.time()
        total += 10
        sys.stdout.write(f"<begin record>\ntimestamp, microsec, {int(now * 1e6)}, live\nlatencyunit, microsec\n"
                         f"label, phases\ndatasource, bpf\n64, {total}\n128, {total // 2}\n<end record>\n")
        sys.stdout.flush()
        next_at += step
        time.sleep(max(0.0, next_at - time.time()))


if __name__ == "__main__":
    main()
