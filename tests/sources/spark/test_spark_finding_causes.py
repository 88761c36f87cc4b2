"""Real PySpark (cause_job.py): the findings about a stage's stragglers name the cause the log gives (a partition that
read many times its stage's median bytes, an executor slow in the stage), and keep the usual causes where it gives
none (a partition whose extra bytes explain little of its time among them); the text, JSON, SVG and HTML reports say
the same. Every figure checked is recomputed from the log's lines.
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from statistics import median

import pytest
from click.testing import CliRunner
from skips_support import requires_module
from spark_support import cluster_job_log

from latencymap.analysis.findings import WHY, times
from latencymap.analysis.findings import why as spark_why
from latencymap.cli.main import main

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

JOB = Path(__file__).with_name("cause_job.py")
#: The generic causes of a slow Spark task, which a finding whose cause the log gives no longer guesses.
GUESS = "a skewed partition, a spill, a slow executor"


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The job's event log."""
    return cluster_job_log(JOB, tmp_path_factory.mktemp("causes"))


def tasks_by_stage(log: Path) -> dict[int, list[dict]]:
    """Each stage's tasks, straight from the log's TaskEnd lines."""
    stages: dict[int, list[dict]] = defaultdict(list)
    for line in log.read_text().splitlines():
        e = json.loads(line)
        if e["Event"] == "SparkListenerTaskEnd":
            i, m = e["Task Info"], e["Task Metrics"]
            stages[e["Stage ID"]].append({"index": i["Index"], "executor": i["Executor ID"],
                                          "s": (i["Finish Time"] - i["Launch Time"]) / 1000,
                                          "bytes": m["Input Metrics"]["Bytes Read"]})
    return stages


def report(log: Path, *args: str) -> dict:
    """The JSON report, one stream per stage."""
    r = CliRunner().invoke(main, ["report", "--format", "json", "spark", "--per-stage", *args, str(log)])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def findings(log: Path, *args: str) -> dict[int, list[dict]]:
    """The JSON report's findings of each stage's stream."""
    return {int(s["stream"]["label"].split(" stage ")[1].split()[0]): s["findings"]
            for s in report(log, *args)["streams"]}


def about(found: list[dict], seconds: float) -> list[dict]:
    """The findings of slow tasks (a band, a tail, a stall) whose latency range holds a task of `seconds`."""
    return [f for f in found if f["kind"] in ("band", "tail", "stall") and
            f["where"]["low_s"] <= seconds <= f["where"]["high_s"]]


def stage_where(log: Path, test: Callable[[list[dict]], bool]) -> tuple[int, list[dict]]:
    """The one stage whose tasks pass `test`, and its tasks."""
    (stage,) = [(s, tasks) for s, tasks in tasks_by_stage(log).items() if test(tasks)]
    return stage


def named(why: str) -> bool:
    """Whether a finding's why says its tasks are stragglers (or warm-up tasks) of a cause the log gives
    (`report.findings_cause`)."""
    return "is a straggler" in why or "are stragglers" in why or "warm-up task" in why


def skewed(tasks: list[dict]) -> bool:
    return len(tasks) == 16


def slowed(tasks: list[dict]) -> bool:
    from cause_job import EXECUTOR_TASKS, SLOW

    return len(tasks) == EXECUTOR_TASKS and median(t["s"] for t in tasks if t["executor"] == SLOW) > 5 * median(
        t["s"] for t in tasks if t["executor"] != SLOW)


def late(tasks: list[dict]) -> bool:
    from cause_job import LATE, TASKS

    return len(tasks) == TASKS and not slowed(tasks) and max(tasks, key=lambda t: t["s"])["index"] == LATE


@pytest.mark.timeout(300)
def test_a_skewed_partition_s_finding_names_how_many_times_its_stage_s_median_bytes_it_read(log: Path) -> None:
    stage, tasks = stage_where(log, skewed)
    heavy = max(tasks, key=lambda t: t["bytes"])
    assert heavy is max(tasks, key=lambda t: t["s"])  # the skewed partition is the stage's slowest task
    ratio = heavy["bytes"] / median(t["bytes"] for t in tasks)
    assert ratio > 100
    said = about(findings(log)[stage], heavy["s"])
    assert said, findings(log)[stage]  # the task far slower than its stage's others is a finding (a band or a tail)
    for f in said:  # a band of its own (`...: it is`), or the tail (`...; it is`): of one task, or of a few
        assert re.search(r"[:;] (it is a straggler|1 of these \d+ tasks is a straggler) that read " + re.escape(
            f"{times(ratio)} its stage's median task's bytes: a skewed, larger partition (see Stragglers)"),
            f["why"]), f
        assert GUESS not in f["why"]


@pytest.mark.timeout(300)
def test_a_slow_executor_s_finding_names_it(log: Path) -> None:
    from cause_job import SLOW

    stage, tasks = stage_where(log, slowed)
    slow = [t for t in tasks if t["executor"] == SLOW]
    doc = report(log)
    listed = [s for s in doc["source"]["stragglers"] if s["stage"] == stage and s["executor"] == SLOW]
    assert listed and all(s["slow_executor"] for s in listed)  # others of the stage may be stragglers (by less)
    said = about(findings(log)[stage], max(t["s"] for t in slow))
    assert said, findings(log)[stage]
    for f in said:  # a band of its own or the tail (its events estimated): the slow executor's tasks, maybe others
        low, high = f["where"]["low_s"], f["where"]["high_s"]
        if f["kind"] == "band":
            assert f["events"] == sum(low <= t["s"] <= high for t in tasks), f
        k = sum(low <= s["duration_s"] <= high for s in listed)
        assert k == sum(low <= t["s"] <= high for t in slow)
        who = rf"(all {k} are stragglers|both are stragglers|it is a straggler|{k} of these \d+ tasks (are " \
              rf"stragglers|is a straggler)|: {k})"  # the last: of stragglers with several causes, those of this one
        assert re.search(who + re.escape(f" on executor {SLOW}, slow in "), f["why"]), f
        assert GUESS not in f["why"] and "skewed partitions, a spill" not in f["why"]


@pytest.mark.timeout(300)
def test_a_straggler_of_no_cause_the_log_gives_keeps_the_usual_causes(log: Path) -> None:
    stage, tasks = stage_where(log, late)
    slowest = max(tasks, key=lambda t: t["s"])
    (summary,) = [st for st in report(log)["source"]["stages"] if st["stage"] == stage]
    assert summary["slow_executors"] == []  # the job slows none there: the straggler's executor is not made slow
    said = about(findings(log)[stage], slowest["s"])
    assert said, findings(log)[stage]
    for f in said:
        assert f["why"] in (WHY["spark"]["outliers"], spark_why("tail", "spark"), spark_why("heavy", "spark")), f


def first_on_each_executor(log: Path) -> dict[int, float]:
    """The first task each executor ran (it started the executor's Python worker), from the log's TaskEnd lines:
    their durations by task id."""
    ends = [json.loads(line) for line in log.read_text().splitlines() if '"SparkListenerTaskEnd"' in line]
    first: dict[str, dict] = {}
    for i in sorted((e["Task Info"] for e in ends), key=lambda i: i["Launch Time"]):
        first.setdefault(i["Executor ID"], i)
    return {i["Task ID"]: (i["Finish Time"] - i["Launch Time"]) / 1000 for i in first.values()}


@pytest.mark.timeout(300)
def test_the_finding_of_the_warm_up_stage_s_cold_tasks_says_they_are_warm_up(log: Path) -> None:
    """Stage 0 warms the executors up (their Python workers start): a finding about its slow first tasks said what
    sends tasks there (skewed partitions, a spill, a slow executor) was the cause to find."""
    cold = first_on_each_executor(log)
    doc = report(log)
    warm = {w["task_id"]: w for w in doc["source"]["warmup"]}
    assert set(cold) <= set(warm) and all(warm[k]["warmup_reason"] == "cold" and warm[k]["stage"] == 0 for k in cold)
    said = about(findings(log)[0], max(cold.values()))
    assert said, findings(log)[0]
    for f in said:
        k = sum(f["where"]["low_s"] <= s <= f["where"]["high_s"] for s in cold.values())
        who = {1: r"(it is|1 of these \d+ tasks is) a warm-up task, the first on its executor's slot",
               2: r"(both are|2 of these \d+ tasks are) warm-up tasks, the first on their executors' slots"}[k]
        assert re.search(who + re.escape(", slowed by the"), f["why"]), f
        assert GUESS not in f["why"] and "skewed partitions, a spill" not in f["why"]


def mild(tasks: list[dict]) -> bool:
    from cause_job import MILD_FILES

    return len(tasks) == MILD_FILES


@pytest.mark.timeout(300)
def test_a_partition_whose_extra_bytes_explain_little_of_its_time_is_not_called_larger(log: Path) -> None:
    """1.6x its stage's median bytes, some 40x its median time (a sleep): not a larger partition; the straggler line
    says what the log shows, the findings keep the usual causes."""
    stage, tasks = stage_where(log, mild)
    slowest = max(tasks, key=lambda t: t["s"])
    usual_bytes, usual_s = median(t["bytes"] for t in tasks), median(t["s"] for t in tasks)
    read, took = slowest["bytes"] / usual_bytes, slowest["s"] / usual_s
    assert 1.5 < read < 1.7 and took > 4 * read  # the job made it so
    doc = report(log, "--include-warmup")  # listed wherever its partition ran, in its stage's first wave too
    (s,) = [s for s in doc["source"]["stragglers"] if s["stage"] == stage and s["index"] == slowest["index"]]
    assert s["read_ratio"] == pytest.approx(read) and s["cause"] is None
    said = about(findings(log)[stage], slowest["s"])
    assert said, findings(log)[stage]
    for f in said:
        assert f["why"] in (WHY["spark"]["outliers"], spark_why("tail", "spark"), spark_why("heavy", "spark")), f
    text = CliRunner().invoke(main, ["report", "spark", "--include-warmup", str(log)])
    line = next(line for line in text.stdout.splitlines() if f"(id {s['task_id']}) in stage {stage}.0:" in line)
    assert (f"— read {read:.1f}x its stage's median bytes" in line and
            f"which explains little of its {s['ratio']:.1f}x the stage median's time" in line), line  # (its median
    # leaves the stage's warm-up out)
    assert "larger partition" not in line


@pytest.mark.timeout(300)
def test_the_findings_keep_the_usual_causes_when_the_maps_show_another_metric_than_the_analysis(log: Path) -> None:
    """`--metric run`: the stragglers are judged by duration, the maps show run time; a finding's tasks are not
    known to be the stragglers."""
    said = [f["why"] for fs in findings(log, "--metric", "run").values() for f in fs]
    assert said and not any(named(why) for why in said), said


@pytest.mark.timeout(300)
def test_the_text_svg_and_html_reports_say_the_json_s_findings(log: Path) -> None:
    whys = [f["why"] for fs in findings(log).values() for f in fs if named(f["why"])]
    assert len(whys) >= 2
    for fmt in ("text", "svg", "html"):
        r = CliRunner().invoke(main, ["report", "--format", fmt, "spark", "--per-stage", str(log)])
        assert r.exit_code == 0, r.output
        page = re.sub(r"<[^>]*>", " ", r.stdout) if fmt == "svg" else r.stdout  # an SVG's lines are its elements'
        shown = " ".join(html.unescape(page).split())  # and wrap
        for why in whys:
            assert why in shown, (fmt, why)
