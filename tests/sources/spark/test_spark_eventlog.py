"""Spark event logs on the committed fixtures: layouts, counts, stragglers, discovery, codecs, follow."""

from __future__ import annotations

import itertools
import json
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from latencymap.core.model import Interval
from latencymap.sources.spark import engine
from latencymap.sources.spark.binning import METRICS, LiveBinner, auto_interval_ms, live_intervals
from latencymap.sources.spark.codecs import codec_of, decompress, make_decoder
from latencymap.sources.spark.eventlog import EventLogError, LineSplitter, find_event_log, read_lines
from latencymap.sources.spark.follow import follow_tasks
from latencymap.sources.spark.parse import EventParser, task_from_event
from latencymap.sources.spark.source import SparkSource, collect

SPARK = Path(__file__).resolve().parents[3] / "fixtures" / "spark"
LAYOUTS = ("plain", "rolling", "zstd", "lz4", "snappy")
EXPECTED = json.loads((SPARK / "expected.json").read_text())


def signature(intervals: list[Interval]) -> list[tuple]:
    return [(iv.stream, iv.start, iv.end, iv.counts.tolist(), np.round(iv.time, 9).tolist()) for iv in intervals]


def plain_events() -> list[dict]:
    """Every event of the plain log, with the standard json module (independent of the reader)."""
    (path,) = [p for p in (SPARK / "plain").iterdir() if not p.name.startswith(".")]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def task_ends() -> list[dict]:
    return [e for e in plain_events() if e["Event"] == "SparkListenerTaskEnd"]


def test_every_layout_decompresses_to_the_plain_bytes() -> None:
    (plain,) = [p for p in (SPARK / "plain").iterdir() if not p.name.startswith(".")]
    reference = plain.read_bytes()
    for layout in LAYOUTS:
        log = find_event_log(SPARK / layout)
        data = b"".join(decompress(p.read_bytes(), codec_of(p)) for p in log.files())
        assert data == reference, layout
        assert log.app_id == EXPECTED["app_id"]


def test_zstd_fixture_is_many_frames_and_rolled() -> None:
    log = find_event_log(SPARK / "zstd")
    assert log.rolling and len(log.files()) == 3
    assert log.files()[0].read_bytes().count(b"\x28\xb5\x2f\xfd") > 1


@pytest.mark.parametrize("layout", ["lz4", "snappy", "zstd"])
def test_decoders_are_incremental(layout: str) -> None:
    log = find_event_log(SPARK / layout)
    path = log.files()[0]
    data = path.read_bytes()
    dec = make_decoder(codec_of(path))
    pieces = b"".join(dec.feed(data[i:i + 997]) for i in range(0, len(data), 997))
    assert pieces == decompress(data, codec_of(path)) and dec.pending() == 0


def test_total_events_equal_task_end_count_in_every_layout() -> None:
    n = len(task_ends())
    assert n == EXPECTED["task_end_events"]
    for layout in LAYOUTS:
        intervals = collect(SparkSource(target=str(SPARK / layout)))
        assert sum(int(iv.counts.sum()) for iv in intervals) == n, layout


def test_every_layout_gives_identical_intervals_and_analysis() -> None:
    reference = SparkSource(target=str(SPARK / "plain"))
    ref = signature(collect(reference))
    assert 100 <= len(ref) <= 200
    for layout in LAYOUTS[1:]:
        src = SparkSource(target=str(SPARK / layout))
        assert signature(collect(src)) == ref, layout
        assert src.analysis() == reference.analysis(), layout


def test_intervals_are_exact_durations_in_ms() -> None:
    intervals = collect(SparkSource(target=str(SPARK / "lz4")))
    durations = [e["Task Info"]["Finish Time"] - e["Task Info"]["Launch Time"] for e in task_ends()]
    assert sum(float(iv.time.sum()) for iv in intervals) == pytest.approx(sum(durations) / 1000.0)
    stream = intervals[0].stream
    assert (stream.datasource, stream.unit) == ("spark", "millisec")
    assert all(iv.end > iv.start for iv in intervals)
    assert all(b.start == pytest.approx(a.end) for a, b in itertools.pairwise(intervals))


def test_known_stragglers_and_no_others() -> None:
    src = SparkSource(target=str(SPARK / "zstd"))
    collect(src)
    found = src.analysis()["stragglers"]
    got = sorted((s["stage"], s["attempt"], s["index"]) for s in found)
    assert got == sorted((s["stage"], s["attempt"], s["index"]) for s in EXPECTED["stragglers"])
    for s in found:
        assert set(s) >= {"stage", "attempt", "index", "task_id", "executor", "host", "duration_s", "ratio"}
        assert s["ratio"] > 3 and not s["failed"]


def test_stage_summaries_and_failed_flag() -> None:
    src = SparkSource(target=str(SPARK / "snappy"))
    collect(src)
    stages = {s["stage"]: s for s in src.analysis()["stages"]}
    bimodal = stages[EXPECTED["bimodal"]["stage"]]
    assert bimodal["tasks"] == EXPECTED["bimodal"]["tasks"] + 1 and bimodal["failed"] == 1
    assert stages[EXPECTED["stages"]["stragglers"]]["skew"] > 3
    failed = [t for t in src.tasks if t.failed]
    assert [(t.stage, t.index, t.attempt) for t in failed] == [(EXPECTED["bimodal"]["stage"], 3, 0)]


def test_bimodal_stage_has_two_bands() -> None:
    src = SparkSource(target=str(SPARK / "plain"), stages=(EXPECTED["bimodal"]["stage"],))
    counts = sum(iv.counts for iv in collect(src))
    slow, fast = EXPECTED["bimodal"]["slow_s"] * 1000, EXPECTED["bimodal"]["fast_s"] * 1000
    slow_slot, fast_slot = int(np.log2(slow)) + 1, int(np.log2(fast)) + 1
    assert counts[slow_slot] + counts[slow_slot + 1] >= len(EXPECTED["bimodal"]["slow_indexes"])
    assert counts[fast_slot:fast_slot + 3].sum() >= 10
    assert counts[fast_slot + 3:slow_slot].sum() <= 3


def test_per_stage_streams_and_stage_filter() -> None:
    src = SparkSource(target=str(SPARK / "rolling"), per_stage=True)
    streams = {iv.stream.label for iv in collect(src)}
    assert len(streams) == len(EXPECTED["stages"])
    sid = EXPECTED["stages"]["stragglers"]
    only = collect(SparkSource(target=str(SPARK / "rolling"), stages=(sid,)))
    assert sum(int(iv.counts.sum()) for iv in only) == sum(1 for e in task_ends() if e["Stage ID"] == sid)


def test_stages_of_an_application_with_a_long_name_stay_apart(tmp_path: Path) -> None:
    """An App Name of 300 characters: each stage's stream is its own (its end, `stage N task duration`, is kept by
    a cut in the middle), read whole, followed, or aggregated by `--engine spark`, with each stage's own tasks."""
    (plain,) = [p for p in (SPARK / "plain").iterdir() if not p.name.startswith(".")]
    name = "etl-" + "x" * 300
    log = tmp_path / plain.name
    log.write_bytes(plain.read_bytes().replace(b'"App Name":"latencymap-fixture"', f'"App Name":"{name}"'.encode()))
    per_stage = {s: sum(1 for e in task_ends() if e["Stage ID"] == s) for s in {e["Stage ID"] for e in task_ends()}}
    rows = [{"key": e["Stage ID"], "col": 0, "slot": 5, "n": 1, "s": 20.0, "lo": 20.0, "hi": 20.0} for e in task_ends()]
    for intervals in (collect(SparkSource(target=str(log), per_stage=True)),
                      collect(SparkSource(target=str(log), per_stage=True, follow=True, poll=0.01)),
                      engine._intervals(rows, name, "duration", 1000)):
        counts: dict[str, int] = {}
        for iv in intervals:
            counts[iv.stream.label] = counts.get(iv.stream.label, 0) + int(iv.counts.sum())
        assert {int(label.split(" stage ")[1].split()[0]): n for label, n in counts.items()} == per_stage
        for label in counts:
            assert len(label) == 200 and label.count("…") == 1 and label.startswith("spark etl-xx")
            assert label.endswith(" task duration")


@pytest.mark.parametrize("metric", list(METRICS))
def test_every_metric_reads(metric: str) -> None:
    intervals = collect(SparkSource(target=str(SPARK / "lz4"), metric=metric, interval=1.0))
    assert intervals and all(iv.duration == pytest.approx(1.0) for iv in intervals)
    assert sum(int(iv.counts.sum()) for iv in intervals) == len(task_ends())


def test_cpu_metric_is_ns_converted_to_ms() -> None:
    intervals = collect(SparkSource(target=str(SPARK / "plain"), metric="cpu"))
    cpu_ns = sum(e["Task Metrics"]["Executor CPU Time"] for e in task_ends())
    assert sum(float(iv.time.sum()) for iv in intervals) == pytest.approx(cpu_ns / 1e9)


def test_parsers_agree() -> None:
    lines = [line for batch in read_lines(find_event_log(SPARK / "plain")) for line in batch]
    fast = EventParser("msgspec").parse(lines)
    slow = EventParser("json").parse(lines)
    assert fast == slow == [task_from_event(e) for e in task_ends()]


def test_discovery_file_dir_and_app_choice(tmp_path: Path) -> None:
    for layout in ("lz4", "rolling"):
        for child in (SPARK / layout).iterdir():
            shutil.copytree(child, tmp_path / child.name) if child.is_dir() else shutil.copy(child, tmp_path)
    (plain,) = [p for p in (SPARK / "plain").iterdir() if not p.name.startswith(".")]
    other = tmp_path / "local-1000000000000"
    shutil.copy(plain, other)
    now = time.time()
    import os

    os.utime(other, (now - 3600, now - 3600))
    assert find_event_log(tmp_path).app_id == EXPECTED["app_id"]
    assert find_event_log(tmp_path, "local-1000000000000").path == other
    with pytest.raises(EventLogError, match="several"):
        find_event_log(tmp_path, EXPECTED["app_id"][:8])
    rolled = next((tmp_path / f"eventlog_v2_{EXPECTED['app_id']}").glob("events_2_*"))
    assert find_event_log(rolled).rolling
    with pytest.raises(EventLogError):
        find_event_log(tmp_path / "missing")


def test_line_splitter_keeps_partial_line() -> None:
    split = LineSplitter()
    assert split.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert split.feed(b':2}\n') == [b'{"b":2}']
    assert split.feed(b"tail") == [] and split.flush() == [b"tail"]


def test_auto_interval_fits_the_screen() -> None:
    assert auto_interval_ms(0, 19_000) == 100
    assert auto_interval_ms(0, 3_600_000) == 30_000
    for span in (1_000, 60_000, 86_400_000):
        width = auto_interval_ms(5, 5 + span)
        assert (5 + span) // width - 5 // width + 1 <= 200


def test_follow_picks_up_rolled_files_and_partial_lines(tmp_path: Path) -> None:
    src = find_event_log(SPARK / "rolling")
    app_dir = tmp_path / src.path.name
    app_dir.mkdir()
    (app_dir / f"appstatus_{src.app_id}.inprogress").write_bytes(b"")
    files = src.files()
    data = [p.read_bytes() for p in files]
    seen: list[int] = []

    def writer() -> None:
        for path, body in zip(files, data, strict=True):
            half = len(body) // 2 + 7  # cut inside a line
            with open(app_dir / path.name, "wb") as fh:
                fh.write(body[:half])
                fh.flush()
                time.sleep(0.15)
                fh.write(body[half:])
            time.sleep(0.15)
        (app_dir / f"appstatus_{src.app_id}.inprogress").rename(app_dir / f"appstatus_{src.app_id}")

    thread = threading.Thread(target=writer)
    thread.start()
    parser = EventParser()
    for tasks, _ended in follow_tasks(str(tmp_path), poll_s=0.02, parser=parser):
        seen.append(len(tasks))
    thread.join()
    assert sum(seen) == len(task_ends()) and parser.bad_lines == 0
    assert sum(1 for n in seen if n) >= 3  # tasks arrived in several polls, before the end


def test_follow_equals_batch_with_the_same_width() -> None:
    batch = collect(SparkSource(target=str(SPARK / "zstd"), interval=0.5))
    live = collect(SparkSource(target=str(SPARK / "lz4"), follow=True, interval=0.5, poll=0.01))
    assert signature(live) == signature(batch)


def test_live_binner_counts_late_tasks_in_the_next_open_column() -> None:
    tasks = [task_from_event(e) for e in task_ends()]
    tasks.sort(key=lambda t: t.finish_ms)
    binner = LiveBinner("x", width_ms=1000, grace_ms=0)
    first, rest = tasks[: len(tasks) // 2], tasks[len(tasks) // 2:]
    now = [rest[-1].finish_ms / 1000.0 + 10]
    out = list(live_intervals(iter([(rest, False), (first, True)]), binner, lambda: now[0]))
    assert sum(int(iv.counts.sum()) for iv in out) == len(tasks)
    assert binner.late == len(first)
    starts = [iv.start for iv in out]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
