"""`latencymap spark LOG --follow` of a real running application whose task hangs: the task, still running, is a
straggler as soon as the log shows it slow, and its time so far runs with the clock (the log says nothing new while
it hangs), said so; once it ends, its real duration replaces it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from skips_support import requires_module
from spark_support import free_port, grows_with_the_clock, hung, wait_for

from latencymap.sources.spark.source import SparkSource

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

JOB = Path(__file__).with_name("hang_job.py")




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
        later = grows_with_the_clock(source, first)
    finally:
        go.touch()
        assert job.wait(240) == 0
        reader.join(60)
    assert not reader.is_alive()
    ended = [s for s in source.analysis()["stragglers"] if (s["stage"], s["index"]) == (1, 0)]
    assert ended and not ended[0]["running"] and ended[0]["end"] is not None, ended
    assert ended[0]["duration_s"] >= later["duration_s"]
