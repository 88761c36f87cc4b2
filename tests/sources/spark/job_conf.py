"""What the test jobs share (faults_job.py, live_job.py, executor_job.py, lost_job.py): a local SparkConf writing a
plain event log, its UI on a fixed port; two 1-core executors; the executor JVM a task runs in."""

from __future__ import annotations

import os
import sys
from typing import Any


def local_conf(app: str, master: str, log_dir: str, port: str) -> Any:
    """A SparkConf for `master` writing one plain event log to `log_dir`, its UI on 127.0.0.1:`port` (no retry)."""
    from pyspark import SparkConf

    os.environ["PYSPARK_PYTHON"] = sys.executable
    return (SparkConf().setMaster(master).setAppName(app)
            .set("spark.eventLog.enabled", "true").set("spark.eventLog.dir", "file://" + os.path.abspath(log_dir))
            .set("spark.eventLog.rolling.enabled", "false").set("spark.eventLog.compress", "false")
            .set("spark.ui.port", port).set("spark.port.maxRetries", "0").set("spark.driver.host", "127.0.0.1")
            .set("spark.driver.bindAddress", "127.0.0.1").set("spark.ui.showConsoleProgress", "false")
            .set("spark.driver.memory", "512m"))


def two_executor_context(app: str, log_dir: str, port: str) -> Any:
    """A SparkContext on two 1-core executors (`local-cluster[2,1,768]`) writing its event log to `log_dir`, both
    executors warmed by a first small job, quiet."""
    from pyspark import SparkContext

    conf = local_conf(app, "local-cluster[2,1,768]", log_dir, port)
    sc = SparkContext(conf=conf.set("spark.executor.memory", "512m").set("spark.pyspark.python", sys.executable))
    sc.setLogLevel("OFF")
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the tasks call `executor_jvm`; sent with them
    sc.parallelize(range(8), 8).map(lambda x: x).count()
    return sc


def executor_jvm() -> tuple[int, str] | None:
    """The pid and `--executor-id` of the executor JVM whose Python worker runs this (up the process tree)."""
    pid = os.getpid()
    for _ in range(6):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                args = fh.read().split(b"\0")
            if b"--executor-id" in args:
                return pid, args[args.index(b"--executor-id") + 1].decode()
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return None
    return None
