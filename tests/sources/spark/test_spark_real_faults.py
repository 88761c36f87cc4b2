"""Real PySpark (faults_job.py): the report names the reference a straggler is judged against, marks failed attempts
and a stage that never completed, gives a stage's skew without its warm-up, says a log is still being written, and
reads the same from the driver's REST API (its executors' cores and the application's time in jobs included) as from
the event log, finished or still running.

Every figure checked is recomputed here from the log's own JSON lines.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from skips_support import requires_module
from spark_support import free_port, stub_driver

from latencymap.cli.main import main
from latencymap.core.units import format_duration
from latencymap.sources.spark.source import SparkSource, collect

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

JOB = Path(__file__).with_name("faults_job.py")
SPARK = Path(__file__).resolve().parents[3] / "fixtures" / "spark"




@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the job's event log, its REST answers)."""
    out = tmp_path_factory.mktemp("faults")
    events, rest = out / "events", out / "rest.json"
    events.mkdir()
    done = subprocess.run([sys.executable, str(JOB), str(events), str(free_port()), str(rest)], cwd=out,
                          env={**os.environ, "PYSPARK_PYTHON": sys.executable}, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    (log,) = [p for p in events.iterdir() if p.is_file()]
    return log, rest


def tasks_of(log: Path) -> dict[tuple[int, int], list[dict]]:
    """TaskEnd events by (stage, attempt), straight from the log's JSON lines."""
    stages: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for line in log.read_text().splitlines():
        e = json.loads(line)
        if e["Event"] == "SparkListenerTaskEnd":
            i = e["Task Info"]
            stages[(e["Stage ID"], e["Stage Attempt ID"])].append(
                {"index": i["Index"], "id": i["Task ID"], "attempt": i["Attempt"], "launch": i["Launch Time"],
                 "d": (i["Finish Time"] - i["Launch Time"]) / 1000.0, "reason": e["Task End Reason"]["Reason"]})
    return stages


def report(*args: str) -> tuple[dict, str, str]:
    """(the JSON report's source part, the text report, stderr)."""
    doc = CliRunner().invoke(main, ["report", "--format", "json", "spark", *args])
    text = CliRunner().invoke(main, ["report", "spark", *args])
    assert doc.exit_code == 0 and text.exit_code == 0, doc.output + text.output
    return json.loads(doc.stdout)["source"], text.stdout, text.stderr


@pytest.mark.timeout(300)
def test_a_first_wave_straggler_names_its_wave_as_the_reference(ran: tuple[Path, Path]) -> None:
    log, _ = ran
    wave_stage = sorted(tasks_of(log))[1]
    tasks = {t["index"]: t for t in tasks_of(log)[wave_stage]}
    median = float(np.median([t["d"] for t in tasks.values()]))
    assert tasks[1]["d"] > median  # partition 1, in the first wave with 0, is slower than the stage's median
    source, text, _ = report(str(log))
    (s,) = [s for s in source["stragglers"] if (s["stage"], s["index"]) == (wave_stage[0], 0)]
    past = float(np.median([t["d"] for i, t in tasks.items() if i not in (0, 1)]))  # the first wave left out
    assert s["median_past_warmup"] and s["stage_median_s"] == pytest.approx(past)
    assert (s["reference"], s["reference_s"]) == ("wave", tasks[1]["d"])
    assert s["ratio"] == pytest.approx(tasks[0]["d"] / tasks[1]["d"])
    line = (f"   task 0 (id {tasks[0]['id']}) in stage {wave_stage[0]}.0: {format_duration(tasks[0]['d'])}, "
            f"{s['ratio']:.1f}x its warm-up wave's fastest ({format_duration(tasks[1]['d'])})")
    assert line in text.splitlines()


@pytest.mark.timeout(300)
def test_failed_attempts_and_a_stage_that_never_completed_are_told(ran: tuple[Path, Path]) -> None:
    from faults_job import FAILING

    log, _ = ran
    by_stage = tasks_of(log)
    retried, aborted = sorted(by_stage)[2:]
    source, text, _ = report(str(log))
    failed = {(s["index"], s["task_attempt"]) for s in source["stragglers"] if s["stage"] == retried[0]
              and s["failed"]}
    assert failed == {(i, 0) for i in FAILING}  # 4 s against 0.25 s: stragglers, and failed ones
    for index in FAILING:
        (first,) = [t for t in by_stage[retried] if (t["index"], t["attempt"]) == (index, 0)]
        assert first["reason"] == "ExceptionFailure"
        (line,) = [line for line in text.splitlines() if line.startswith(f"   task {index} (id {first['id']}) ")]
        assert line.endswith(" — failed attempt (ExceptionFailure)")
    named = {s["stage"]: f" ({s['name']})" for s in source["stages"]}
    assert f"   stage {retried[0]}.0{named[retried[0]]}: 8 tasks, {len(FAILING)} failed attempts, median " in text
    summary = next(s for s in source["stages"] if s["stage"] == aborted[0])
    ends = [t["reason"] for t in by_stage[aborted]]
    assert (summary["status"], summary["failure"], summary["succeeded"], summary["num_tasks"]) == \
        ("failed", "RuntimeError: always fails", 0, 2)
    assert summary["failed"] == ends.count("ExceptionFailure") and summary["killed"] == ends.count("TaskKilled")
    head = f"   stage {aborted[0]}.0{named[aborted[0]]}: "
    (line,) = [line for line in text.splitlines() if line.startswith(head)]
    assert line.startswith(f"{head}0 of 2 tasks, {summary['failed']} failed attempt")
    assert "; did not complete: failed (RuntimeError: always fails); median " in line
    assert all(s["status"] == "complete" for s in source["stages"] if s["stage"] != aborted[0])


@pytest.mark.timeout(300)
def test_the_skew_without_warmup_shows_the_hot_partition(ran: tuple[Path, Path]) -> None:
    from faults_job import HOT

    log, _ = ran
    cold_stage = sorted(tasks_of(log))[0]
    tasks = sorted(tasks_of(log)[cold_stage], key=lambda t: t["launch"])
    hot = next(t for t in tasks if t["index"] == HOT)
    rest = [t["d"] for t in tasks[2:]]  # the first task on each of the 2 cores started a Python worker
    assert max(t["d"] for t in tasks[:2]) > 2 * hot["d"]  # so the stage's skew is theirs, not the hot partition's
    source, text, _ = report(str(log))
    summary = next(s for s in source["stages"] if (s["stage"], s["attempt"]) == cold_stage)
    assert summary["warmup_tasks"] == 2 and summary["max_after_warmup_s"] == hot["d"] == max(rest)
    assert summary["skew_after_warmup"] == pytest.approx(hot["d"] / np.median(rest))
    assert summary["skew"] == pytest.approx(max(t["d"] for t in tasks) / np.median([t["d"] for t in tasks]))
    assert (f"; without its 2 warm-up tasks: skew {summary['skew_after_warmup']:.1f}x, max "
            f"{format_duration(hot['d'])}") in text


@pytest.mark.timeout(300)
def test_a_log_still_written_says_so(ran: tuple[Path, Path]) -> None:
    log, _ = ran
    (copy,) = (log.parent / "snapshot").iterdir()
    assert copy.name.endswith(".inprogress")
    for target in (copy, copy.parent):
        _, text, err = report(str(target))
        said = re.compile(r"spark: no application end logged yet \(in-progress log\): it is still running, or its "
                          r"driver died \(its last event [^)]+ ago\); the last stage may be partial")
        assert said.search(err) and said.search(text), err
    _, _, err = report(str(log))
    assert "still running" not in err and "no application end" not in err


@pytest.mark.timeout(300)
def test_several_applications_say_which_one_is_read(ran: tuple[Path, Path], tmp_path: Path) -> None:
    log, _ = ran
    shutil.copy(next((SPARK / "lz4").iterdir()), tmp_path)
    shutil.copy(log, tmp_path / log.name)
    (tmp_path / "notes.txt").write_text("these are the logs\n")
    source, text, err = report(str(tmp_path))
    said = f"spark: {tmp_path} holds 2 applications; read: the latest, {log.name} (--app ID reads another)"
    assert said in err and said in text and len(source["stages"]) == len(tasks_of(log))


def rest_date(ms: int) -> str:
    """Epoch ms as the REST API writes a date (`2026-11-21T01:23:51.746GMT`)."""
    return datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}GMT"


@pytest.fixture
def driver(ran: tuple[Path, Path]) -> Iterator[str]:
    """A stub serving the job's recorded REST answers (recorded while it ran), the application completed at the end
    its event log gives, as a History Server answers for it."""
    log, recorded = ran
    (end,) = [json.loads(line)["Timestamp"] for line in log.read_text().splitlines()
              if '"SparkListenerApplicationEnd"' in line]
    answers = json.loads(recorded.read_text())
    for path, body in answers.items():
        if path.count("/") == 2:  # /applications/ID
            for attempt in body["attempts"]:
                assert not attempt["completed"] and attempt["endTime"] == "1969-12-31T23:59:59.999GMT"
                attempt.update(completed=True, endTime=rest_date(end))
    with stub_driver(answers) as url:
        yield url


@pytest.mark.timeout(300)
def test_the_rest_api_gives_the_event_logs_analysis(ran: tuple[Path, Path], driver: str) -> None:
    log, _ = ran
    rest, local = SparkSource(target=driver, poll=0.01), SparkSource(target=str(log))
    collect(rest)
    collect(local)
    assert rest.executors == {"driver": rest.executors["driver"]} and rest.executors["driver"].cores == 2
    got, want = rest.analysis(), local.analysis()
    assert [s["cores"] for s in got["stages"]] == [2] * len(want["stages"])
    assert want["application_time"]["jobs"] == 4 and want["application_time"]["ended"]
    assert got == want  # the application's time in and outside jobs included: REST dates are the events' ms


@pytest.mark.timeout(300)
def test_a_running_applications_rest_api_gives_its_time_so_far_as_its_log_in_progress(ran: tuple[Path, Path],
                                                                                     tmp_path: Path) -> None:
    """The answers as recorded while the application ran (never completed), against its log as it stood then: every
    line but the application's end (the snapshot copied while it ran lacks TaskEnd lines Spark had not flushed)."""
    log, recorded = ran
    lines = log.read_text().splitlines(keepends=True)
    assert '"SparkListenerApplicationEnd"' in lines[-1]
    running = tmp_path / f"{log.name}.inprogress"
    running.write_text("".join(lines[:-1]))
    with stub_driver(json.loads(recorded.read_text()), polls=3) as url:
        rest, local = SparkSource(target=url, poll=0.01), SparkSource(target=str(running))
        collect(rest)
    collect(local)
    got, want = rest.analysis(), local.analysis()
    assert want["application_time"]["jobs"] == 4 and not want["application_time"]["ended"]
    assert got["application_time"] == want["application_time"]
    assert got == want
