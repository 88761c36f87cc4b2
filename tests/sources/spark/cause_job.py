"""A PySpark application whose stragglers have a cause the log names, or none, for test_spark_finding_causes.py.

Usage: `python cause_job.py LOG_DIR WORK_DIR UI_PORT`. On `local-cluster[2,1,768]` (executor_job.py's), plain event log:

- stage 0: a warm-up (each executor starts its Python worker);
- stage 1: the small text files read once (the executors' first reads are slow: warm-up of its own);
- stage 2: 16 text files read, one task each, file HEAVY holding HEAVY_TIMES the lines of the others (a skewed
  partition: its task reads that many times the bytes and works through that many times the lines);
- stage 3: EXECUTOR_TASKS tasks on like inputs: those on executor SLOW sleep SLOW_S, the others FAST_S (a slow
  executor; enough tasks that the fast executor's keep it busy for several SLOW_S: its first task is warm-up, and
  an executor is slow over at least two more);
- stage 4: TASKS tasks on like inputs, partition LATE sleeping LATE_S, the others FAST_S (a cause the log does not
  give);
- stage 5: MILD_FILES text files, one task each, file MILD holding MILD_TIMES the lines of the others and its task
  (whichever partition it is) sleeping MILD_S, the others MILD_FAST_S (a partition somewhat larger, whose extra
  bytes explain little of its time).

Each slow task is far enough above its stage's others (three empty octaves for one) to be a band of its own.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable

HEAVY = 5
HEAVY_TIMES = 320
LINES = 1000
SLOW = "1"
TASKS, EXECUTOR_TASKS = 60, 150
SLOW_S, FAST_S = 2.2, 0.02
LATE, LATE_S = 17, 8.0
MILD_FILES, MILD, MILD_TIMES = 32, 7, 1.6
MILD_S, MILD_FAST_S = 6.0, 0.1


def main() -> int:
    from job_conf import executor_jvm, two_executor_context

    log_dir, work, port = sys.argv[1], sys.argv[2], sys.argv[3]
    sc = two_executor_context("latencymap-causes", log_dir, port)
    inputs = os.path.abspath(os.path.join(work, "inputs"))
    os.makedirs(inputs)
    for k in range(16):
        with open(os.path.join(inputs, f"part-{k:02d}.txt"), "w") as fh:
            fh.writelines(f"{n:08d} some words to read\n" for n in range(LINES * (HEAVY_TIMES if k == HEAVY else 1)))
    sc.textFile(f"file://{inputs}/part-0[0-3].txt", 1).map(lambda line: sum(range(1500))).count()
    sc.textFile("file://" + inputs, 1).map(lambda line: sum(range(1500))).count()

    def slowed(i: int, rows: object) -> object:
        jvm = executor_jvm()
        time.sleep(SLOW_S if jvm is not None and jvm[1] == SLOW else FAST_S)
        return [i]

    sc.parallelize(range(EXECUTOR_TASKS), EXECUTOR_TASKS).mapPartitionsWithIndex(slowed).collect()

    def late(i: int, rows: object) -> object:
        time.sleep(LATE_S if i == LATE else FAST_S)
        return [i]

    sc.parallelize(range(TASKS), TASKS).mapPartitionsWithIndex(late).collect()

    mild = os.path.join(inputs, "mild")
    os.makedirs(mild)
    for k in range(MILD_FILES):
        with open(os.path.join(mild, f"part-{k:02d}.txt"), "w") as fh:
            tag = "mild" if k == MILD else "like"  # partitions need not be in file order: the task tells its file so
            fh.writelines(f"{tag} {n:08d} some words\n" for n in range(int(LINES * (MILD_TIMES if k == MILD else 1))))

    def mildly(rows: Iterable[str]) -> list[int]:
        read = list(rows)  # read whole: its bytes are counted
        time.sleep(MILD_S if read and read[0].startswith("mild") else MILD_FAST_S)
        return [len(read)]

    sc.textFile("file://" + mild, 1).mapPartitions(mildly).collect()
    sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
