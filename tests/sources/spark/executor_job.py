"""A PySpark application on two executors of one core each, for test_spark_executors.py.

Usage: `python executor_job.py LOG_DIR WORK_DIR UI_PORT`. On `local-cluster[2,1,768]`, plain event log:

- stage 0: a warm-up (each executor starts its Python worker);
- stage 1: 8 text files read, one task each, file HEAVY holding 40 times the lines of the others (its task reads 40
  times the bytes and works through 40 times the lines);
- stage 2: 16 tasks on similar inputs: those on executor SLOW sleep 0.8 s, the others 0.2 s;
- then the driver sleeps DRIVER_SLEEP s before a last small job.
"""

from __future__ import annotations

import os
import sys
import time

HEAVY = 3
SLOW = "1"
DRIVER_SLEEP = 3.0


def main() -> int:
    from job_conf import executor_jvm, two_executor_context

    log_dir, work, port = sys.argv[1], sys.argv[2], sys.argv[3]
    sc = two_executor_context("latencymap-executors", log_dir, port)
    inputs = os.path.abspath(os.path.join(work, "inputs"))
    os.makedirs(inputs)
    for k in range(8):
        with open(os.path.join(inputs, f"part-{k}.txt"), "w") as fh:
            fh.writelines(f"{n:08d} some words to read\n" for n in range(40 * 3000 if k == HEAVY else 3000))
    sc.textFile("file://" + inputs, 1).map(lambda line: sum(range(300))).count()

    def slowed(i: int, rows: object) -> object:
        jvm = executor_jvm()
        time.sleep(0.8 if jvm is not None and jvm[1] == SLOW else 0.2)
        return [i]

    sc.parallelize(range(16), 16).mapPartitionsWithIndex(slowed).collect()
    time.sleep(DRIVER_SLEEP)
    sc.parallelize(range(4), 4).count()
    sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
