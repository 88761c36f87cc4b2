"""`--engine spark` on a real small job: stdout holds the report, stderr only what the user needs.

Spark's JVM logs (log4j warnings, "Using Spark's default log4j profile") and the tracebacks its Python workers
print when a task is cut short (`BrokenPipeError` in pyspark's daemon) are not for the user of a successful run:
they go to a log file, named only when the job fails. Real PySpark runs here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from skips_support import requires_module

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

SPARK = Path(__file__).resolve().parents[3] / "fixtures" / "spark"


@pytest.mark.timeout(300)
def test_successful_engine_run_keeps_stderr_clean(tmp_path: Path) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", "spark",
                          str(SPARK / "zstd"), "--engine", "spark"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=280)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "Error" not in run.stderr, run.stderr[-3000:]
    assert [line for line in run.stderr.splitlines() if not line.startswith("latencymap")] == [], run.stderr[-3000:]
    expected = json.loads((SPARK / "expected.json").read_text())
    report = json.loads(run.stdout)
    assert sum(s["total"]["events"] for s in report["streams"]) == expected["task_end_events"]
    assert list(tmp_path.iterdir()) == []  # no log left behind after a successful run


PY4J_FAILS = """
import logging, sys
from latencymap.sources.spark.engine import log_python_side
if sys.argv[1] != "-":
    log_python_side(sys.argv[1])
try:
    raise ConnectionResetError(104, "Connection reset by peer")
except ConnectionResetError:
    logging.exception("Exception while sending command.")  # as py4j's send_command does, when it gives up
"""


def test_py4j_errors_logged_in_this_process_go_to_the_engine_log(tmp_path: Path) -> None:
    """py4j reports a connection that broke when the JVM died with `logging.exception`, which writes a traceback to
    stderr when no handler is installed (seen once in a loaded run of the JVM-killed test); it goes to the log."""
    def run(log: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", PY4J_FAILS, log], capture_output=True, text=True, timeout=60)

    assert "Traceback" in run("-").stderr  # what the user saw
    log = tmp_path / "engine.log"
    log.write_bytes(b"a JVM line\n")
    done = run(str(log))
    assert done.returncode == 0 and done.stderr == ""
    text = log.read_text()
    assert text.startswith("a JVM line\n")
    assert "root ERROR: Exception while sending command." in text and "ConnectionResetError" in text
