"""`latencymap spark http://HOST:4040` polling a real running driver whose task hangs: the task, still running, is a
straggler while it hangs (the driver's REST API lists it running), its time so far growing with the clock, worded and
fielded as `--follow` shows one; once it ends it is a finished task like the others, every task counted once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from skips_support import requires_module
from spark_support import answers, free_port, grows_with_the_clock, hung, wait_for

from latencymap.sources.spark.source import SparkSource

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

JOB = Path(__file__).with_name("hang_job.py")
#: The job's tasks: 4 of a warm-up job, 12 of the stage whose partition 0 hangs.
TASKS = 4 + 12





def test_a_hung_task_is_a_running_straggler_over_rest_then_a_finished_task_counted_once(tmp_path: Path) -> None:
    logs, go, stop = tmp_path / "events", tmp_path / "go", tmp_path / "stop"
    logs.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    job = subprocess.Popen([sys.executable, str(JOB), str(logs), str(port), str(go), str(stop)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=JOB.parent,
                           env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    source = SparkSource(target=url, poll=0.2)
    items: list[Any] = []
    reader = threading.Thread(target=lambda: items.extend(source.items()), daemon=True)
    try:
        assert job.stdout is not None and job.stdout.readline().strip() == "hanging"
        wait_for("the driver's REST API", 60, lambda: answers(f"{url}/api/v1/applications"))
        reader.start()
        first = wait_for("the hung task as a running straggler", 120, lambda: hung(source))
        assert (first["stage"], first["index"], first["so_far_to"], first["end"]) == (1, 0, "clock", None), first
        later = grows_with_the_clock(source, first)
        (stage,) = [s for s in source.analysis()["stages"] if s["stage"] == 1]
        assert stage["running"] == 1 and stage["running_max_s"] >= later["duration_s"], stage
        assert first["task_id"] not in {t.task_id for t in source.all_tasks}  # not counted while it runs
        go.touch()
        assert job.stdout.readline().strip() == "done"
        # the driver still answers: the task ended, read once as a finished task, no longer running
        wait_for("every task read", 30, lambda: len(source.all_tasks) >= TASKS and not source.running)
        assert hung(source) is None
        ended = [s for s in source.analysis()["stragglers"] if s["task_id"] == first["task_id"]]
        assert ended and not ended[0]["running"] and ended[0]["end"] is not None, ended
        assert "so_far_to" not in ended[0] and ended[0]["duration_s"] >= later["duration_s"]
    finally:
        go.touch()
        stop.touch()
        assert job.wait(240) == 0
        if reader.is_alive():
            reader.join(60)
    assert not reader.is_alive()
    (log,) = logs.iterdir()
    ends = [json.loads(line)["Task Info"]["Task ID"] for line in log.read_text().splitlines()
            if '"SparkListenerTaskEnd"' in line]
    read = [t.task_id for t in source.all_tasks]
    assert len(ends) == TASKS and sorted(read) == sorted(ends), (read, ends)  # every task exactly once
    assert source.running == [] and hung(source) is None
