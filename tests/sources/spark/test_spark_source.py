"""The `spark` source on real event logs: an application with no task, a log with no task at all, and the stream
of one stage."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from spark_support import PLAIN, current, notices, write_log

from latencymap.cli.main import main
from latencymap.core.model import Interval

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
