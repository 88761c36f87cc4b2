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
