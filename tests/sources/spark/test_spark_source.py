"""The `spark` source on real event logs: an application with no task, a log with no task at all, and the stream
of one stage."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner
from spark_support import PLAIN, current, notices, write_log

from latencymap.cli.main import main
from latencymap.core.model import Interval
from latencymap.sources.spark.source import SparkSource

#: What a Spark application that runs no job logs (as the fixture's application logs them).
NO_JOB = (b'"SparkListenerLogStart"', b'"SparkListenerResourceProfileAdded"', b'"SparkListenerExecutorAdded"',
          b'"SparkListenerBlockManagerAdded"', b'"SparkListenerEnvironmentUpdate"', b'"SparkListenerApplicationStart"',
          b'"SparkListenerApplicationEnd"')


def app_of(lines: list[bytes]) -> tuple[str, str]:
    (start,) = [json.loads(line) for line in lines if b'"SparkListenerApplicationStart"' in line]
    return start["App Name"], start["App ID"]


def test_an_application_that_ran_no_task_is_named(tmp_path: Path) -> None:
    lines = [line for line in PLAIN.read_bytes().splitlines() if any(e in line for e in NO_JOB)]
    log = write_log(tmp_path / PLAIN.name, lines)
    name, app_id = app_of(lines)
    told = f"spark: the application {name} ({app_id}) was read: it ran no task (it ended)"
    assert notices(current(log)[1]) == [told]
    done = CliRunner().invoke(main, ["report", str(log)])
    assert done.exit_code == 0 and told in done.output


def test_a_spark_log_without_application_or_task_is_not_passed_over(tmp_path: Path) -> None:
    lines = [line for line in PLAIN.read_bytes().splitlines() if b'"SparkListenerLogStart"' in line]
    log = write_log(tmp_path / PLAIN.name, lines)
    (told,) = notices(current(log)[1])
    assert "no application start and no task" in told and PLAIN.name in told


def test_tasks_not_ended_yet_are_said(tmp_path: Path) -> None:
    lines = PLAIN.read_bytes().splitlines()
    first_end = next(k for k, line in enumerate(lines) if b'"SparkListenerTaskEnd"' in line)
    log = write_log(tmp_path / PLAIN.name, lines[:first_end])
    name, app_id = app_of(lines)
    running = sum(b'"SparkListenerTaskStart"' in line for line in lines[:first_end])
    assert f"spark: the application {name} ({app_id}) was read: no task has ended yet ({running} running)" in \
        notices(current(log)[1])


def test_the_stream_of_one_stage_names_it() -> None:
    """`--stage 2` is not the application's stream (a recording of it would join the whole app's)."""
    name, _ = app_of(PLAIN.read_bytes().splitlines())
    whole = {i.stream.label for i in current(PLAIN)[1] if isinstance(i, Interval)}
    one = {i.stream.label for i in current(PLAIN, stages=(2,))[1] if isinstance(i, Interval)}
    two = {i.stream.label for i in current(PLAIN, stages=(3, 2))[1] if isinstance(i, Interval)}
    assert whole == {f"spark {name} task duration"}
    assert one == {f"spark {name} stage 2 task duration"}
    assert two == {f"spark {name} stages 2+3 task duration"}


def test_a_task_metric_past_the_top_bucket_is_said_once_per_stream_read_whole_or_followed(tmp_path: Path) -> None:
    """Two tasks whose Executor Run Time is 10**20 ms (a corrupt log) were counted in the top bucket, [2**62, 2**63)
    ms, without a word, where the raw-values reader says it: the batch and the live reader say it once per stream,
    with the largest such value of the stream's first column holding one; both tasks stay counted there."""
    lines = PLAIN.read_bytes().splitlines()
    ends = [k for k, line in enumerate(lines) if b'"SparkListenerTaskEnd"' in line]
    for k, run in ((ends[0], b"100000000000000000000"), (ends[-1], b"300000000000000000000")):
        lines[k] = re.sub(rb'"Executor Run Time":\d+', b'"Executor Run Time":' + run, lines[k])
    log = write_log(tmp_path / PLAIN.name, lines)
    name, _ = app_of(lines)
    told = (f"spark: spark {name} task run: a task's value 1e+20 millisec is past the top bucket's nominal end, "
            "9.22337e+18 millisec (106,751,991,167 days): the top bucket is open (≥53,375,995,584 days) and counts "
            "it, but percentiles there say at most 106,751,991,167 days (its exact time is kept in the totals); said "
            "once per stream")
    for source in (SparkSource(target=str(log), metric="run"),
                   SparkSource(target=str(log), metric="run", follow=True, poll=0.02)):
        items = list(source.items())
        assert [m for m in notices(items) if "top bucket" in m] == [told]
        assert sum(int(i.counts[-1]) for i in items if isinstance(i, Interval)) == 2
    by_stage = list(SparkSource(target=str(log), metric="run", per_stage=True).items())
    assert len([m for m in notices(by_stage) if "top bucket" in m]) == 2  # the first and the last task's stages
