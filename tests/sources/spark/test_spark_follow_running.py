"""`latencymap spark LOG --follow` of a real running application whose task hangs: the task, still running, is a
straggler as soon as the log shows it slow, and its time so far runs with the clock (the log says nothing new while
it hangs), said so; once it ends, its real duration replaces it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from skips_support import requires_module
from spark_support import free_port

from latencymap.outputs.report import straggler_lines
from latencymap.sources.spark.source import SparkSource

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

JOB = Path(__file__).with_name("hang_job.py")


def hung(source: SparkSource) -> dict[str, Any] | None:
    """The straggler still running in the source's analysis now, if any."""
    return next((s for s in source.analysis()["stragglers"] if s.get("running")), None)


def wait_for(what: str, timeout: float, check: Any) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return found


def test_a_hung_task_is_a_straggler_growing_with_the_clock_while_followed(tmp_path: Path) -> None:
    logs, go = tmp_path / "events", tmp_path / "go"
    logs.mkdir()
    job = subprocess.Popen([sys.executable, str(JOB), str(logs), str(free_port()), str(go)], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, cwd=JOB.parent,
                           env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    source = SparkSource(target=str(logs), follow=True, poll=0.2)
    items: list[Any] = []
    reader = threading.Thread(target=lambda: items.extend(source.items()), daemon=True)
    try:
        assert job.stdout is not None and job.stdout.readline().strip() == "hanging"
        reader.start()
        first = wait_for("the hung task as a straggler", 180, lambda: hung(source))
        assert (first["stage"], first["index"], first["so_far_to"]) == (1, 0, "clock"), first
        time.sleep(3.0)
        later = hung(source)
        assert later is not None and later["task_id"] == first["task_id"]
        # its time so far is the clock's, not the log's last event's: it grows while the log says nothing new
        assert later["duration_s"] >= first["duration_s"] + 2.5, (first, later)
        assert abs(later["duration_s"] - (time.time() - later["start"])) < 2.0, later
        assert later["ratio"] > first["ratio"]
        assert "so far, still running (by the clock)" in straggler_lines([later])[1], straggler_lines([later])
    finally:
        go.touch()
        assert job.wait(240) == 0
        reader.join(60)
    assert not reader.is_alive()
    ended = [s for s in source.analysis()["stragglers"] if (s["stage"], s["index"]) == (1, 0)]
    assert ended and not ended[0]["running"] and ended[0]["end"] is not None, ended
    assert ended[0]["duration_s"] >= later["duration_s"]
