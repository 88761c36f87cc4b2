"""The `spark` source on real event logs: an application with no task, a log with no task at all, the stream of one
stage, and the stream each straggler's task was counted under."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
from click.testing import CliRunner
from spark_support import PLAIN, current, notices, with_lost_attempts, write_log

from latencymap.cli.main import main
from latencymap.core.buckets import bin_values
from latencymap.core.model import Interval, StreamId
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
            "9.22337e+18 millisec (1.07e+11 days): the top bucket is open (≥5.34e+10 days) and counts it, with its "
            "exact time; percentiles there reach the values seen in it; said once per stream")  # ≥1e9 days: e-notation
    for source in (SparkSource(target=str(log), metric="run"),
                   SparkSource(target=str(log), metric="run", follow=True, poll=0.02)):
        items = list(source.items())
        assert [m for m in notices(items) if "top bucket" in m] == [told]
        assert sum(int(i.counts[-1]) for i in items if isinstance(i, Interval)) == 2
    by_stage = list(SparkSource(target=str(log), metric="run", per_stage=True).items())
    assert len([m for m in notices(by_stage) if "top bucket" in m]) == 2  # the first and the last task's stages


def counted_under(items: list[Any], straggler: dict[str, Any]) -> set[StreamId]:
    """The streams whose column of the straggler's end counts a task of its duration."""
    (slot,) = np.flatnonzero(bin_values(np.array([straggler["duration_s"] * 1000.0]))[0])
    return {i.stream for i in items if isinstance(i, Interval) and i.start <= straggler["end"] < i.end
            and i.counts[slot] > 0}


def test_each_straggler_is_on_the_stream_its_task_was_counted_under(tmp_path: Path) -> None:
    """The source says which of the streams it made counted each straggler's task (the report places stragglers by
    it), read whole or followed, one stream, one per stage, one stage, several, and an application name long
    enough to be cut in the label."""
    long_name = "long-" + "x" * 240
    long_log = write_log(tmp_path / PLAIN.name, [line.replace(b'"App Name":"latencymap-fixture"',
                                                              f'"App Name":"{long_name}"'.encode())
                                                 for line in PLAIN.read_bytes().splitlines()])
    cases = [(PLAIN, {}), (PLAIN, {"per_stage": True}), (PLAIN, {"stages": (2,)}), (PLAIN, {"stages": (2, 3)}),
             (PLAIN, {"per_stage": True, "metric": "run"}), (PLAIN, {"follow": True, "poll": 0.02}),
             (PLAIN, {"follow": True, "poll": 0.02, "per_stage": True}), (long_log, {}),
             (long_log, {"per_stage": True})]
    for log, options in cases:
        source, items = current(log, **options)
        found = source.analysis()["stragglers"]
        assert len(found) == 2, options
        streams = {i.stream for i in items if isinstance(i, Interval)}
        for straggler in found:
            stream = source.straggler_stream(straggler)
            assert stream in streams and stream in counted_under(items, straggler), (log, options)
            if len(streams) > 1:  # one per stage: its stage's
                assert {stream} == {s for s in streams if " stage 2 task " in s.label}, (log, options)


def test_a_straggler_whose_stage_gave_no_stream_is_on_none(tmp_path: Path) -> None:
    """With one stream per stage, a stage none of whose tasks has a value of the metric (here: no Shuffle Write
    Time in stage 2's) makes no stream: its stragglers are counted under none."""
    lines = [re.sub(rb'"Shuffle Write Time":\d+,?', b"", line) if b'"Stage ID":2,' in line else line
             for line in PLAIN.read_bytes().splitlines()]
    source, items = current(write_log(tmp_path / PLAIN.name, lines), per_stage=True, metric="shuffle-write")
    found = source.analysis()["stragglers"]
    assert len(found) == 2 and {s["stage"] for s in found} == {2}
    assert not any(" stage 2 " in i.stream.label for i in items if isinstance(i, Interval))
    assert [source.straggler_stream(s) for s in found] == [None, None]


def test_attempts_without_task_metrics_left_out_of_a_metric_map_are_counted(tmp_path: Path) -> None:
    """`--metric run` left out the attempts a lost executor (ExecutorLostFailure) or a fetch failure ended, which
    log no Task Metrics, without a word (a real log: 2 of 28); duration maps them."""
    log, ends = with_lost_attempts(tmp_path / PLAIN.name)
    lines = log.read_bytes().splitlines()
    for metric, follow in (("run", False), ("cpu", False), ("gc", False), ("scheduler-delay", False),
                           ("run", True)):
        _, items = current(log, metric=metric, **({"follow": True, "poll": 0.02} if follow else {}))
        assert sum(i.counts.sum() for i in items if isinstance(i, Interval)) == len(ends) - 2
        assert notices(items) == [f"spark: --metric {metric}: 2 of {len(ends)} task attempts logged no Task "
                                  "Metrics (ExecutorLostFailure 1, FetchFailed 1): left out of the map "
                                  "(--metric duration maps every attempt)"], follow
    _, items = current(log)
    assert sum(i.counts.sum() for i in items if isinstance(i, Interval)) == len(ends) and not notices(items)
    lost = {json.loads(lines[k])["Stage ID"] for k in (ends[3], ends[9])}
    other = next(s for s in (json.loads(lines[k])["Stage ID"] for k in ends) if s not in lost)
    _, items = current(log, metric="run", stages=(other,))
    assert not notices(items)  # attempts of a stage the map does not show are not its to leave out


def test_a_straggler_is_at_least_straggler_min_long() -> None:
    """`--straggler-min` (default 100 ms, Spark's speculation.minTaskRuntime) is the least a straggler lasts: the
    fixture's two ~2.5 s stragglers are under a 3 s floor."""
    found = [round(s["duration_s"], 1) for s in current(PLAIN)[0].analysis()["stragglers"]]
    assert found == [2.5, 2.5]
    assert current(PLAIN, straggler_min=3.0)[0].analysis()["stragglers"] == []
