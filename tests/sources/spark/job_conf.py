"""The SparkConf the test jobs share (faults_job.py, live_job.py): local, plain event log, a fixed UI port."""

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
    sc.parallelize(range(8), 8).map(lambda x: x).count()
    return sc
