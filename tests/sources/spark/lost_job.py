"""A PySpark application that loses an executor in the middle of a stage, for test_spark_executors.py.

Usage: `python lost_job.py LOG_DIR WORK_DIR UI_PORT`. On `local-cluster[2,1,768]` (executor_job.py's), plain event log:

- stage 0: a warm-up (each executor starts its Python worker);
- stages 1 and 2: a shuffle of 8 partitions into REDUCERS; reduce task LOSER, LOSE_AFTER s in, kills its executor's JVM
  (SIGKILL: SparkListenerExecutorRemoved, its task lost, the other executor's next fetch fails), so stage 2's first
  attempt goes on without that executor's core; the shuffle's lost outputs are then run again on the executor left.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterable

REDUCERS = 4
LOSER = 1
LOSE_AFTER = 1.0


def main() -> int:
    from job_conf import executor_jvm, two_executor_context

    log_dir, work, port = sys.argv[1], sys.argv[2], sys.argv[3]
    sc = two_executor_context("latencymap-lost", log_dir, port)
    marker = os.path.join(os.path.abspath(work), "killed")

    def reduce_part(i: int, rows: Iterable[object]) -> list[int]:
        time.sleep(0.2)
        if i == LOSER and not os.path.exists(marker):
            with open(marker, "w") as fh:
                fh.write("x")
            time.sleep(LOSE_AFTER)
            jvm = executor_jvm()
            if jvm is not None:
                os.kill(jvm[0], signal.SIGKILL)
            time.sleep(5)
        return [sum(1 for _ in rows)]

    pairs = sc.parallelize(range(8000), 8).map(lambda x: (x % 16, x))
    pairs.groupByKey(REDUCERS).mapPartitionsWithIndex(reduce_part).collect()
    sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
