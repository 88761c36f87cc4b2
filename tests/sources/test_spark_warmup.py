"""Real local Spark: planted stragglers found, cold first tasks kept apart as warm-up, a skewed key's task found.

One job (local[2]) writes a plain event log: a first stage of 24 tasks of 0.25 s where partitions 9 and 17
sleep 2 s (its first task on each core also starts a Python worker), then a shuffle where key 5 holds 1500
of 1605 records and the reduce side sleeps 1 ms per record. Every figure checked is recomputed here from
the log's own JSON lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from skips_support import requires_module

from latencymap.cli.main import main

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

SLOW = (9, 17)
HOT = 5
JOB = textwrap.dedent(f"""
    import sys, time
    from pyspark import SparkConf, SparkContext

    conf = (SparkConf().setMaster("local[2]").setAppName("warmup-skew")
            .set("spark.eventLog.enabled", "true").set("spark.eventLog.dir", sys.argv[1])
            .set("spark.eventLog.rolling.enabled", "false").set("spark.eventLog.compress", "false")
            .set("spark.ui.enabled", "false").set("spark.ui.showConsoleProgress", "false")
            .set("spark.driver.memory", "1g"))
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")

    def work(i, rows):
        time.sleep(2.0 if i in {SLOW!r} else 0.25)
        return [sum(1 for _ in rows)]

    def per_record(rows):
        n = 0
        for _ in rows:
            n += 1
            time.sleep(0.001)
        return [n]

    sc.parallelize(range(96), 24).mapPartitionsWithIndex(work).collect()
    data = [({HOT}, i) for i in range(1500)] + [(k, i) for k in range(8) if k != {HOT} for i in range(15)]
    sc.parallelize(data, 8).partitionBy(8).mapPartitions(per_record).collect()
    sc.stop()
""")


@pytest.fixture(scope="module")
def event_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("spark-events")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", JOB, out.resolve().as_uri()], env=env, cwd=out,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    (log,) = [p for p in out.iterdir() if p.is_file()]
    return log


def raw_events(log: Path) -> tuple[dict[tuple[int, int], list[dict]], dict[str, int]]:
    """TaskEnd events by (stage, attempt), and executor cores, straight from the log's JSON lines."""
    stages: dict[tuple[int, int], list[dict]] = defaultdict(list)
    cores = {}
    for line in log.read_text().splitlines():
        e = json.loads(line)
        if e["Event"] == "SparkListenerTaskEnd":
            i = e["Task Info"]
            stages[(e["Stage ID"], e["Stage Attempt ID"])].append(
                {"index": i["Index"], "id": i["Task ID"], "launch": i["Launch Time"], "finish": i["Finish Time"],
                 "executor": i["Executor ID"], "d": (i["Finish Time"] - i["Launch Time"]) / 1000.0})
        elif e["Event"] == "SparkListenerExecutorAdded":
            cores[e["Executor ID"]] = e["Executor Info"]["Total Cores"]
    return stages, cores


def report(log: Path, *extra: str) -> dict:
    r = CliRunner().invoke(main, ["report", "--format", "json", "spark", str(log), *extra])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["source"]


@pytest.mark.timeout(300)
def test_real_spark_stragglers_warmup_and_skew(event_log: Path) -> None:
    stages, cores = raw_events(event_log)
    assert cores == {"driver": 2}
    first, *_, reduce = sorted(stages)
    src = report(event_log)
    listed = {(s["stage"], s["index"]) for s in src["stragglers"]}
    # The planted slow partitions are stragglers, against the median of their stage.
    median0 = float(np.median([t["d"] for t in stages[first]]))
    for index in SLOW:
        (t,) = [t for t in stages[first] if t["index"] == index]
        assert t["d"] / median0 >= 1.5 and (first[0], index) in listed
    # The first task on each core of the first stage ran cold (a Python worker started): warm-up, kept apart.
    launched = sorted((t for ts in stages.values() for t in ts), key=lambda t: (t["launch"], t["id"]))
    cold = launched[:cores["driver"]]
    assert all(t["d"] / median0 >= 1.5 for t in cold)  # they were slow: a naive detector flags them
    cold_ids = {t["id"] for t in cold}
    assert not any(s["task_id"] in cold_ids for s in src["stragglers"])
    warm = {s["task_id"]: s for s in src["warmup"]}
    assert cold_ids <= set(warm) and all(warm[i]["warmup"] and warm[i]["warmup_reason"] == "cold" for i in cold_ids)
    with_warm = report(event_log, "--include-warmup")
    flagged = {s["task_id"]: s["warmup"] for s in with_warm["stragglers"]}
    assert all(flagged.get(i) is True for i in cold_ids)
    assert {(s["stage"], s["index"]) for s in with_warm["stragglers"] if not s["warmup"]} == listed
    # The skewed key's reduce task is found, with its ratio to the stage median.
    (hot,) = [t for t in stages[reduce] if t["index"] == HOT]
    (found,) = [s for s in src["stragglers"] if (s["stage"], s["index"]) == (reduce[0], HOT)]
    # against the median of the stage's tasks past its first wave (launched before any ended, at most its cores)
    ended = min(t["finish"] for t in stages[reduce])
    wave = sorted((t for t in stages[reduce] if t["launch"] < ended), key=lambda t: (t["launch"], t["id"]))
    wave_ids = {t["id"] for t in wave[:cores["driver"]]}
    median_r = float(np.median([t["d"] for t in stages[reduce] if t["id"] not in wave_ids]))
    assert found["median_past_warmup"] and found["stage_median_s"] == pytest.approx(median_r, rel=1e-9)
    assert found["ratio"] == pytest.approx(hot["d"] / median_r, rel=1e-9) and found["ratio"] >= 3
    # Per-stage skew, as Sparklens and Dr. Elephant give it.
    for summary in src["stages"]:
        tasks = stages[(summary["stage"], summary["attempt"])]
        d = np.array([t["d"] for t in tasks])
        wall = (max(t["finish"] for t in tasks) - min(t["launch"] for t in tasks)) / 1000.0
        assert summary["skew"] == pytest.approx(d.max() / np.median(d))
        assert summary["wall_s"] == pytest.approx(wall) and summary["cores"] == 2
        assert summary["max_over_wall"] == pytest.approx(d.max() / wall)
        assert summary["wasted_core_s"] == pytest.approx(max(0.0, 2 * wall - d.sum()), abs=1e-6)
    skewed = next(s for s in src["stages"] if (s["stage"], s["attempt"]) == reduce)
    assert skewed["max_over_wall"] > 0.5  # the hot task is most of the stage
    text = CliRunner().invoke(main, ["report", "spark", str(event_log)]).output
    assert "Warm-up tasks kept apart: " in text and f"task {HOT} (id {hot['id']}) in stage {reduce[0]}" in text
