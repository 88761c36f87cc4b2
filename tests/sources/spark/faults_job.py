"""A PySpark application whose event log holds what a report must not hide, for test_spark_real_faults.py.

Usage: `python faults_job.py LOG_DIR UI_PORT REST_OUT`. On `local[2,2]` (a task is tried twice), plain event log:

- stage 0, run cold (each core's first task starts a Python worker): partition HOT holds 20 times the rows;
- stage 1: tasks sleep 0.2 s, partition 1 0.5 s, partition 0 (with 1, the stage's first wave) 3 s;
- stage 2: tasks sleep 0.25 s; partitions FAILING sleep 4 s and raise on their first attempt (retried);
- stage 3: both tasks raise on every attempt: the stage fails, its job is aborted.

Then it copies its log while the application runs (`<LOG_DIR>/snapshot/<app>.inprogress`), writes the REST API's
answers for the application (`/applications...`, its stages, their task lists, `/allexecutors`, `/jobs`) to REST_OUT as
{path: answer}, and stops.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
import urllib.request

HOT = 3
FAILING = (2, 6)


def main() -> int:
    from job_conf import local_conf
    from pyspark import SparkContext, TaskContext

    log_dir, port, rest_out = sys.argv[1], sys.argv[2], sys.argv[3]
    sc = SparkContext(conf=local_conf("latencymap-faults", "local[2,2]", log_dir, port))
    sc.setLogLevel("OFF")

    def rows(i: int) -> range:
        return range(400_000 if i == HOT else 20_000)

    sc.parallelize(range(8), 8).flatMap(rows, preservesPartitioning=True).map(lambda x: sum(range(40))).count()

    def first_wave(i: int, it: object) -> object:
        time.sleep(3.0 if i == 0 else 0.5 if i == 1 else 0.2)
        return it

    sc.parallelize(range(8), 8).mapPartitionsWithIndex(first_wave).count()

    def retried(i: int, it: object) -> object:
        if i in FAILING and TaskContext.get().attemptNumber() == 0:
            time.sleep(4.0)
            raise RuntimeError("first attempt fails")
        time.sleep(0.25)
        return it

    sc.parallelize(range(8), 8).mapPartitionsWithIndex(retried).count()

    def always(i: int, it: object) -> object:
        time.sleep(0.1)
        raise RuntimeError("always fails")

    with contextlib.suppress(Exception):  # the job fails on purpose
        sc.parallelize(range(2), 2).mapPartitionsWithIndex(always).count()
    time.sleep(1.5)  # the listeners (event log, REST) take in the last events
    app = sc.applicationId
    snapshot = os.path.join(log_dir, "snapshot")
    os.makedirs(snapshot)
    shutil.copy(os.path.join(log_dir, app + ".inprogress"), os.path.join(snapshot, app + ".inprogress"))
    base = f"http://127.0.0.1:{port}/api/v1"
    answers = {}

    def get(path: str) -> object:
        with urllib.request.urlopen(base + path, timeout=30) as resp:
            answers[path] = json.loads(resp.read())
        return answers[path]

    get("/applications")
    get(f"/applications/{app}")
    get(f"/applications/{app}/allexecutors")
    get(f"/applications/{app}/jobs")
    for stage in get(f"/applications/{app}/stages"):  # type: ignore[union-attr]
        get(f"/applications/{app}/stages/{stage['stageId']}/{stage['attemptId']}/taskList?offset=0&length=1000")
    with open(rest_out, "w") as fh:
        json.dump(answers, fh)
    sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
