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
