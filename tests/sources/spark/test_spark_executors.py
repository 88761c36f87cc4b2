"""Real PySpark on two 1-core executors (executor_job.py): an executor slow in a stage is named there and its stragglers
say so, a straggler that read more than its stage's other tasks says that, the application's time outside jobs is
reported, and the SVG and HTML reports show the stage lines; an executor lost in the middle of a stage (lost_job.py)
counts its cores in that stage's waste only while it was there. Every figure checked is recomputed from the log's lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from statistics import median

import pytest
from click.testing import CliRunner
from skips_support import requires_module
from spark_support import cluster_job_log

from latencymap.cli.main import main
from latencymap.core.units import format_duration

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

JOB = Path(__file__).with_name("executor_job.py")
LOST_JOB = Path(__file__).with_name("lost_job.py")


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The job's event log."""
    return cluster_job_log(JOB, tmp_path_factory.mktemp("executors"))


@pytest.fixture(scope="module")
def lost(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lost_job.py's event log."""
    return cluster_job_log(LOST_JOB, tmp_path_factory.mktemp("lost"))


def events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def tasks_by_stage(log: Path) -> dict[int, list[dict]]:
    """Each stage's tasks, straight from the log's TaskEnd lines."""
    stages: dict[int, list[dict]] = defaultdict(list)
    for e in events(log):
        if e["Event"] == "SparkListenerTaskEnd":
            i, m = e["Task Info"], e["Task Metrics"]
            stages[e["Stage ID"]].append({"id": i["Task ID"], "executor": i["Executor ID"],
                                          "ms": i["Finish Time"] - i["Launch Time"],
                                          "bytes": m["Input Metrics"]["Bytes Read"]})
    return stages


def report(*args: str) -> tuple[dict, str]:
    """(the JSON report's source part, the text report)."""
    doc = CliRunner().invoke(main, ["report", "--format", "json", "spark", *args])
    text = CliRunner().invoke(main, ["report", "spark", *args])
    assert doc.exit_code == 0 and text.exit_code == 0, doc.output + text.output
    return json.loads(doc.stdout)["source"], text.stdout


@pytest.mark.timeout(300)
def test_the_slow_executor_is_named_in_its_stage_and_its_stragglers_say_so(log: Path) -> None:
    from executor_job import SLOW

    by_stage = tasks_by_stage(log)
    stage = max(by_stage, key=lambda s: len(by_stage[s]))  # the 16 tasks of the slowed stage
    mine = [t["ms"] for t in by_stage[stage] if t["executor"] == SLOW]
    others = [t["ms"] for t in by_stage[stage] if t["executor"] != SLOW]
    assert median(mine) > 3 * median(others)  # the job did slow that executor
    found, text = report(str(log))
    (summary,) = [st for st in found["stages"] if st["stage"] == stage]
    (slow,) = summary["slow_executors"]
    assert slow["executor"] == SLOW and slow["tasks"] + slow["others_tasks"] + summary["warmup_tasks"] >= 15
    assert slow["median_s"] > 3 * slow["others_median_s"]
    assert abs(slow["median_s"] - median(mine) / 1000) < 0.1
    assert abs(slow["others_median_s"] - median(others) / 1000) < 0.05
    listed = [s for s in found["stragglers"] if s["stage"] == stage]
    assert listed and all(s["executor"] == SLOW and s["slow_executor"] for s in listed)
    assert slow["stragglers"] == len(listed)
    assert (f"      executor {SLOW} slow in stage {stage}.0: median "
            f"{format_duration(slow['median_s'], long_units=True)} vs "
            f"{format_duration(slow['others_median_s'], long_units=True)} on the others") in text
    assert f"in stage {stage}.0" in text and f"— on executor {SLOW}, slow in this stage (see Stages)" in text
    for st in found["stages"]:
        if st["stage"] != stage:
            assert st["slow_executors"] == [], st  # no other stage slowed an executor


@pytest.mark.timeout(300)
def test_a_straggler_that_read_more_says_so(log: Path) -> None:
    by_stage = tasks_by_stage(log)
    stage = max(by_stage, key=lambda s: max(t["bytes"] for t in by_stage[s]))  # the stage reading the text files
    heavy = max(by_stage[stage], key=lambda t: t["bytes"])
    usual = median(t["bytes"] for t in by_stage[stage])
    assert heavy["bytes"] > 20 * usual
    found, text = report(str(log), "--include-warmup")
    (s,) = [s for s in found["stragglers"] if s["task_id"] == heavy["id"]]
    assert s["read_bytes"] == heavy["bytes"] and s["read_ratio"] == pytest.approx(heavy["bytes"] / usual)
    assert not s["slow_executor"]
    assert f"(id {heavy['id']}) in stage {stage}.0" in text
    line = next(line for line in text.splitlines() if f"(id {heavy['id']}) in stage {stage}.0" in line)
    assert f"read {heavy['bytes'] / usual:.1f}x its stage's median bytes" in line and "a larger partition" in line


@pytest.mark.timeout(300)
def test_the_time_no_job_ran_is_reported(log: Path) -> None:
    from executor_job import DRIVER_SLEEP

    said = events(log)
    (start,) = [e["Timestamp"] for e in said if e["Event"] == "SparkListenerApplicationStart"]
    (end,) = [e["Timestamp"] for e in said if e["Event"] == "SparkListenerApplicationEnd"]
    jobs = {e["Job ID"]: e["Submission Time"] for e in said if e["Event"] == "SparkListenerJobStart"}
    done = {e["Job ID"]: e["Completion Time"] for e in said if e["Event"] == "SparkListenerJobEnd"}
    in_jobs = sum(done[j] - jobs[j] for j in jobs)  # the job runs one job at a time
    gaps = {j: jobs[j] - done[j - 1] for j in jobs if j - 1 in done}
    longest = max(gaps, key=lambda j: (gaps[j], -j))  # under load, planning a job can outlast the driver's sleep
    assert gaps[max(jobs)] >= DRIVER_SLEEP * 1000
    found, text = report(str(log))
    t = found["application_time"]
    assert t["duration_s"] == (end - start) / 1000 and t["jobs"] == len(jobs)
    assert t["in_jobs_s"] == pytest.approx(in_jobs / 1000)
    assert t["outside_jobs_s"] == pytest.approx((end - start - in_jobs) / 1000)
    assert t["before_jobs_s"] == (min(jobs.values()) - start) / 1000
    assert t["after_jobs_s"] == (end - max(done.values())) / 1000
    assert t["longest_before_job"] == longest and t["longest_between_s"] == gaps[longest] / 1000
    share = 100 * (end - start - in_jobs) / (end - start)
    assert (f"Application: {format_duration((end - start) / 1000, long_units=True)}; {len(jobs)} jobs ran "
            f"{format_duration(in_jobs / 1000, long_units=True)}") in text
    assert f"no job running {format_duration(t['outside_jobs_s'], long_units=True)} ({share:.0f}%" in text
    assert f"(the longest {format_duration(t['longest_between_s'], long_units=True)}, before job {longest})" in text


@pytest.mark.timeout(300)
def test_svg_and_html_reports_show_the_stage_lines_and_the_application_time(log: Path) -> None:
    from executor_job import SLOW

    _, text = report(str(log))
    wanted = [line.strip() for line in text.splitlines()
              if line.startswith(("Application:", "Stages:", "Warm-up tasks", "   stage ", "      executor"))]
    assert any(f"executor {SLOW} slow in stage" in line for line in wanted)
    for fmt in ("html", "svg"):
        out = CliRunner().invoke(main, ["report", "--format", fmt, str(log)])
        assert out.exit_code == 0, out.output
        page = out.stdout.replace("&quot;", '"').replace("&#x27;", "'").replace("&amp;", "&").replace("&lt;", "<")
        shown = " ".join(page.split())  # an SVG wraps its long lines
        for line in wanted:
            head = " ".join(line.split()[:8])
            assert head in shown, (fmt, line)


def available_core_ms(said: list[dict], tasks: list[dict]) -> int:
    """The core-ms the executors that ran `tasks` (a stage attempt's TaskEnd events) were there in the stage's wall:
    each its cores from its ExecutorAdded (or the stage's first launch) to its ExecutorRemoved (or the last end)."""
    start = min(t["Task Info"]["Launch Time"] for t in tasks)
    end = max(t["Task Info"]["Finish Time"] for t in tasks)
    added = {e["Executor ID"]: e for e in said if e["Event"] == "SparkListenerExecutorAdded"}
    removed = {e["Executor ID"]: e["Timestamp"] for e in said if e["Event"] == "SparkListenerExecutorRemoved"}
    return sum(added[x]["Executor Info"]["Total Cores"] * max(0, min(end, removed.get(x, end)) -
                                                              max(start, added[x]["Timestamp"]))
               for x in {t["Task Info"]["Executor ID"] for t in tasks})


@pytest.mark.timeout(300)
def test_a_lost_executor_s_cores_are_wasted_only_while_it_was_there(lost: Path) -> None:
    """Stage 2.0 lost executor 1 (SIGKILL) in its middle: its core counts until SparkListenerExecutorRemoved, not to
    the stage's end (which counted core-time no executor had as wasted, and marked the wrong stage)."""
    said = events(lost)
    (gone,) = [e for e in said if e["Event"] == "SparkListenerExecutorRemoved"]
    by_attempt: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for e in said:
        if e["Event"] == "SparkListenerTaskEnd":
            by_attempt[(e["Stage ID"], e["Stage Attempt ID"])].append(e)
    lost_in = [key for key, tasks in by_attempt.items()
               if min(t["Task Info"]["Launch Time"] for t in tasks) < gone["Timestamp"] <
               max(t["Task Info"]["Finish Time"] for t in tasks)]
    assert lost_in  # the job did lose the executor in the middle of a stage
    found, text = report(str(lost))
    assert len(found["stages"]) == len(by_attempt)
    for st in found["stages"]:
        tasks = by_attempt[(st["stage"], st["attempt"])]
        available = available_core_ms(said, tasks)
        busy = sum(t["Task Info"]["Finish Time"] - t["Task Info"]["Launch Time"] for t in tasks)
        assert st["available_core_s"] == available / 1000, st
        assert st["wasted_core_s"] == max(0, available - busy) / 1000 and st["utilisation"] == busy / available
        if (st["stage"], st["attempt"]) in lost_in:
            assert available < st["cores"] * st["wall_s"] * 1000
            line = next(line for line in text.splitlines() if line.startswith(f"   stage {st['stage']}.0 "))
            assert (f"{st['cores']} cores (there {available / 1000:.3g} of the {st['cores'] * st['wall_s']:.3g} "
                    "core-s of its wall: executors added or removed in it)") in line, line
            assert f"core-s wasted ({100 * max(0, available - busy) / available:.0f}%)" in line, line
    engine = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", "spark", "--engine",
                             "spark", str(lost)], capture_output=True, text=True, timeout=240,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert engine.returncode == 0, engine.stderr[-3000:]
    assert json.loads(engine.stdout)["source"]["stages"] == found["stages"]
