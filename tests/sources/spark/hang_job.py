"""A live PySpark application for the --follow and REST tests: a stage whose partition 0 hangs until told to go on.

Usage: `python hang_job.py LOG_DIR UI_PORT GO_FILE [STOP_FILE]`. On `local[2]`, a warm-up job, then one stage of 12
tasks: partition 0 waits (at most 240 s) for GO_FILE to exist, the others sleep 0.2 s, so its other core runs them while
partition 0 hangs. The event log's buffer is 1 KiB (Spark's default, 100 KiB, holds back task ends until the stage
completes). Prints `hanging` before that stage and `done` once it ended, then (once STOP_FILE exists, when one is
given: its UI answers until then, at most 240 s) stops the application.
"""

from __future__ import annotations

import os
import sys
import time


def main() -> int:
    from job_conf import local_conf
    from pyspark import SparkContext

    log_dir, port, go = sys.argv[1:4]
    stop = sys.argv[4] if len(sys.argv) > 4 else None
    conf = local_conf("latencymap-hang", "local[2]", log_dir, port).set("spark.eventLog.buffer.kb", "1k")
    sc = SparkContext(conf=conf)
    sc.setLogLevel("OFF")
    sc.parallelize(range(4), 4).map(lambda x: x).count()

    def work(index: int, rows: object) -> list[int]:
        if index == 0:
            deadline = time.time() + 240
            while not os.path.exists(go) and time.time() < deadline:
                time.sleep(0.05)
        else:
            time.sleep(0.2)
        return [index]

    print("hanging", flush=True)
    sc.parallelize(range(12), 12).mapPartitionsWithIndex(work).collect()
    print("done", flush=True)
    deadline = time.time() + 240
    while stop is not None and not os.path.exists(stop) and time.time() < deadline:
        time.sleep(0.05)
    sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
