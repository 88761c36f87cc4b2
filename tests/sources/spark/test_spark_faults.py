"""Fault: the JVM of `latencymap spark LOG --engine spark` is killed (SIGKILL) while its job runs.

Chosen behaviour: exit code 1 (a source failed) and one stderr line naming the Spark engine's JVM, its pid and how
it ended (`was killed by signal 9 (SIGKILL)`), no traceback. The engine makes every column in one job, so nothing
was shown before the kill: the recording holds its header and nothing else, and stays a readable input
(`report` reads it: no streams). Real PySpark runs here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from process_support import children_named
from skips_support import requires_module

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

SPARK = Path(__file__).resolve().parents[3] / "fixtures" / "spark"


@pytest.mark.timeout(240)
def test_spark_engine_jvm_killed_mid_job_fails_with_a_specific_message(tmp_path: Path) -> None:
    rec = tmp_path / "spark.txt"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "TMPDIR": str(tmp_path)}
    view = subprocess.Popen([sys.executable, "-m", "latencymap", "spark", str(SPARK / "zstd"), "--engine", "spark",
                             "--plain", "--record", str(rec)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 150
        while True:  # the job runs once the JVM has started its Python workers
            assert view.poll() is None, (view.stderr.read() if view.stderr else "")[-3000:]
            assert time.monotonic() < deadline, "the Spark job never started"
            jvms = children_named(view.pid, "java")
            if jvms and any(children_named(jvms[0], name) for name in ("python", "python3")):
                break
            time.sleep(0.05)
        (jvm,) = jvms
        os.kill(jvm, signal.SIGKILL)
        rc = view.wait(timeout=60)
        stderr = view.stderr.read() if view.stderr else ""
    finally:
        if view.poll() is None:
            view.kill()
            view.wait()
    assert rc == 1, stderr[-3000:]
    assert f"latencymap: spark: the Spark engine's JVM (pid {jvm}) was killed by signal 9 (SIGKILL) during the job" \
        in stderr, stderr[-3000:]
    assert "Traceback" not in stderr
    (log,) = tmp_path.glob("latencymap-spark-*.log")  # the JVM's own output, named in the message
    assert f"(Spark's log: {log})" in stderr and "log4j" in log.read_text()
    # the job failed before any record: the recording it created is removed (a rerun needs no --force)
    assert not rec.exists()
