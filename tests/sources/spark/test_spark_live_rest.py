"""`latencymap spark URL` following a real running PySpark driver over its REST API, counted against the event log.

The job (live_job.py) runs stages of tasks that sleep known times on `local[2]`, its UI on a free loopback port,
writing a plain event log. The follower (the real CLI, polling every 0.2 s, recording) must have recorded tasks
before the job ends its stages, every task once when the job is done, and end by itself (exit 0, with a notice)
when the driver stops; its per-bucket counts and times equal those of the job's own event log.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from skips_support import requires_module
from spark_support import answers, free_port, wait_for

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

JOB = Path(__file__).with_name("live_job.py")
RECORD = re.compile(r"<begin record>\n(.*?)<end record>", re.S)
BUCKET = re.compile(r"^(\d+), (\d+), ([0-9.e+-]+)$", re.M)




def recorded(path: Path) -> dict[int, tuple[int, float]]:
    """{bucket low bound (ms): (tasks, total ms)} over the records of a recording (read here, not by latencymap)."""
    out: dict[int, tuple[int, float]] = {}
    text = path.read_text() if path.exists() else ""
    for record in RECORD.findall(text):
        assert "latencyunit, millisec" in record and "counts, interval" in record
        for low, count, total in BUCKET.findall(record):
            n, t = out.get(int(low), (0, 0.0))
            out[int(low)] = (n + int(count), t + float(total))
    return out


def tasks_in(buckets: dict[int, tuple[int, float]]) -> int:
    return sum(n for n, _ in buckets.values())




@pytest.fixture
def job(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, str, Path]]:
    """The running application (driver up, no job yet), its UI URL and its event-log folder."""
    logs = tmp_path / "events"
    logs.mkdir()
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(JOB), str(logs), str(port)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable}, cwd=tmp_path)
    try:
        assert proc.stdout is not None
        hello = json.loads(proc.stdout.readline())
        assert hello["ui"] == f"http://127.0.0.1:{port}"
        wait_for("the driver's REST API", 60, lambda: answers(f"{hello['ui']}/api/v1/applications"))
        yield proc, hello["ui"], logs
    finally:
        proc.kill()
        proc.wait(30)


@pytest.mark.timeout(150)
def test_rest_follows_a_running_driver_and_counts_every_task_of_its_event_log(
        job: tuple[subprocess.Popen, str, Path], tmp_path: Path) -> None:
    from live_job import SLEEPS

    proc, url, logs = job
    assert proc.stdin is not None and proc.stdout is not None
    rec = tmp_path / "rest.txt"
    follower = subprocess.Popen([sys.executable, "-m", "latencymap", "spark", url, "--poll", "0.2", "--interval",
                                 "0.5", "--record", str(rec), "--once"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"})
    try:
        wait_for("the follower to start its recording", 30, rec.exists)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
        while_running = tasks_in(recorded(rec))
        total = sum(map(len, SLEEPS))
        wait_for(f"the follower to record all {total} tasks", 30, lambda: tasks_in(recorded(rec)) >= total)
        proc.stdin.write("stop\n")
        proc.stdin.flush()
        assert proc.wait(60) == 0
        out, err = follower.communicate(timeout=30)
    finally:
        follower.kill()
        follower.wait(10)
    assert follower.returncode == 0, err[-2000:]
    assert "Frequency heat map" in out  # --once: the final frame
    app_id = next(p.name for p in logs.iterdir())
    assert f"spark: {url}/api/v1 stopped answering" in err and f"the application {app_id} ended" in err
    assert 0 < while_running < total  # tasks came in while the job ran, not all at its end
    ends = [json.loads(line) for line in (logs / app_id).read_text().splitlines() if '"SparkListenerTaskEnd"' in line]
    assert len(ends) == total == tasks_in(recorded(rec))
    # Every task slept its planned time (stages run in order; stage ids from the log).
    stages = sorted({e["Stage ID"] for e in ends})
    for e in ends:
        info = e["Task Info"]
        planned = SLEEPS[stages.index(e["Stage ID"])][info["Index"]]
        assert info["Finish Time"] - info["Launch Time"] >= planned * 1000
    expected: dict[int, tuple[int, float]] = {}
    for e in ends:
        ms = e["Task Info"]["Finish Time"] - e["Task Info"]["Launch Time"]
        low = 1 << (ms.bit_length() - 1)  # bucket [2**k, 2**(k+1)) ms
        n, t = expected.get(low, (0, 0.0))
        expected[low] = (n + 1, t + ms)
    got = recorded(rec)
    assert {k: n for k, (n, _) in got.items()} == {k: n for k, (n, _) in expected.items()}
    for low, (_, t) in expected.items():
        assert got[low][1] == pytest.approx(t, abs=1e-6), low
