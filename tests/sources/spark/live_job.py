"""A small live PySpark application for the REST test: tasks that sleep known times, driven over stdin.

Usage: `python live_job.py LOG_DIR UI_PORT`. Prints one JSON line `{"ui": URL, "app_id": ID}` once the driver
is up, waits for a line on stdin, runs its stages (every task of stage k sleeps SLEEPS[k][index] seconds),
prints `done`, waits for another line, then stops the application (the event log is then complete).
"""

from __future__ import annotations

import json
import sys
import time

#: Seconds each task sleeps, per stage (one job per stage), by partition index: the last stage runs for over 3 s
#: (the live binner's grace), so tasks of the first stages reach the follower's recording before the job ends.
SLEEPS = ([0.6, 0.2, 0.2, 0.2, 0.2, 0.2, 1.2, 0.2], [0.3, 0.3, 0.3, 0.9, 0.3, 0.3], [1.6, 1.6, 2.0, 2.0])


def main() -> int:
    from job_conf import local_conf
    from pyspark import SparkContext

    log_dir, port = sys.argv[1], sys.argv[2]
    sc = SparkContext(conf=local_conf("latencymap-live-rest", "local[2]", log_dir, port))
    sc.setLogLevel("ERROR")
    print(json.dumps({"ui": sc.uiWebUrl, "app_id": sc.applicationId}), flush=True)
    sys.stdin.readline()
    for sleeps in SLEEPS:
        def work(index: int, rows: object, sleeps: list[float] = sleeps) -> list[int]:
            time.sleep(sleeps[index])
            return [index]

        sc.parallelize(range(len(sleeps)), len(sleeps)).mapPartitionsWithIndex(work).collect()
    print("done", flush=True)
    sys.stdin.readline()
    sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
