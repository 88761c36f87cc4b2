from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from latencymap.analysis.findings import SPARK_TIMES, why
from latencymap.core.sanitize import StreamNames
from latencymap.sources.spark.binning import METRICS, stream_for

SPARK = Path(__file__).resolve().parents[3] / "fixtures" / "spark"


def test_per_stage_percentiles_stay_within_the_stage_max_the_same_report_prints() -> None:
    """Spark knows every task's duration: no per-stage percentile above the stage's own max (2-task stages read
    p99 at their slower task, not up their bucket), none below its fastest task."""
    (log,) = [p for p in (SPARK / "plain").iterdir() if not p.name.startswith(".")]
    r = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", "spark", str(log),
                        "--per-stage"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    stages = {s["stage"]: s for s in report["source"]["stages"]}
    checked = 0
    for stream in report["streams"]:
        stage = stages[int(stream["stream"]["label"].split(" stage ")[1].split()[0])]
        total = stream["total"]
        for key in ("p50_s", "p90_s", "p99_s", "p999_s"):
            assert total[key] <= stage["max_s"], (stream["stream"]["label"], key, total[key], stage["max_s"])
        used = [b for b in stream["buckets"] if "min_s" in b]
        assert used and min(b["min_s"] for b in used) <= total["p50_s"]
        assert max(b["max_s"] for b in used) == stage["max_s"]
        checked += 1
    assert checked == len(stages) == 5


def test_every_task_metric_names_what_its_streams_total_is_and_only_a_wait_is_time_waited() -> None:
    """The report says a stream's total in the words of the metric its label names (`SPARK_TIMES`): each metric
    `--metric` offers has its own, read back from the label the source gives its streams."""
    assert set(SPARK_TIMES) == set(METRICS)
    said = {(m, stage): why("waited", "spark", stream_for(StreamNames(), "app", m, stage).label)
            for m in METRICS for stage in (None, 4)}
    assert said == {(m, stage): f"of {SPARK_TIMES[m]}" if SPARK_TIMES[m] else "waited" for m, stage in said}
    assert {m for (m, _), words in said.items() if words == "waited"} == {"fetch-wait"}
