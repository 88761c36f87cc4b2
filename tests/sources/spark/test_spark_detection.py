"""Spark event logs are inputs like the others: `latencymap LOG`, `report LOG`, `replay LOG` without `spark`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from latencymap.cli.main import main

SPARK = Path(__file__).resolve().parents[3] / "fixtures" / "spark"
APP = "local-1795225623494"
#: Every way Spark writes a log, as a path: directories of logs, one rolling directory, one rolled file, one file.
PATHS = [
    "plain", f"plain/{APP}", "rolling", f"rolling/eventlog_v2_{APP}", f"rolling/eventlog_v2_{APP}/events_2_{APP}",
    "zstd", f"zstd/eventlog_v2_{APP}", "lz4", f"lz4/{APP}.lz4", "snappy", f"snappy/{APP}.snappy",
]


def cli(*args: str) -> str:
    """What `latencymap ARGS` writes on stdout (a source's notes go to stderr too, as they come)."""
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("path", PATHS)
def test_report_of_a_log_equals_report_spark(path: str) -> None:
    log = str(SPARK / path)
    detected = json.loads(cli("report", "--format", "json", log))
    assert detected == json.loads(cli("report", "--format", "json", "spark", log))
    assert detected["source"]["name"] == "spark" and len(detected["source"]["stragglers"]) == 2
    assert detected["errors"]["skipped_records"] == 0


def test_text_report_and_input_format_name() -> None:
    log = str(SPARK / "zstd")
    text = cli("report", log)
    assert text == cli("report", "spark", log) and "Stragglers: 2" in text
    assert cli("report", "--input-format", "spark-eventlog", log) == text


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], input=stdin, capture_output=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


@pytest.mark.slow
def test_the_view_and_replay_read_a_log_as_the_spark_command_does() -> None:
    log = str(SPARK / "lz4" / f"{APP}.lz4")
    view = run("--plain", "--once", log)
    assert view.returncode == 0, view.stderr
    assert view.stdout == run("spark", "--plain", "--once", log).stdout
    assert b"latencymap-fixture" in view.stdout
    replay = run("replay", "--max", "--plain", "--once", str(SPARK / "rolling"))
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == view.stdout


def test_piped_json_lines_are_sniffed() -> None:
    plain = (SPARK / "plain" / APP).read_bytes()
    piped = run("report", "--format", "json", stdin=plain)
    assert piped.returncode == 0, piped.stderr
    doc = json.loads(piped.stdout)
    expected = json.loads(cli("report", "--format", "json", "spark", str(SPARK / "plain")))
    assert doc["streams"] == expected["streams"] and doc["source"] == expected["source"]


def test_a_directory_of_other_files_is_not_taken_for_a_log(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "capture.txt").write_text("<begin record>\n1, 2\n<end record>\n")
    r = run("report", str(tmp_path))
    assert r.returncode == 2 and b"is a directory" in r.stderr


def test_a_truncated_compressed_log_keeps_what_was_read(tmp_path: Path) -> None:
    """An lz4 log cut mid-block (a copy taken while Spark wrote it): no traceback, a clear line, exit code."""
    data = (SPARK / "lz4" / f"{APP}.lz4").read_bytes()
    cut = tmp_path / f"{APP}.lz4"
    cut.write_bytes(data[: len(data) * 2 // 3])
    r = run("report", str(cut))
    assert b"Traceback" not in r.stderr
    assert r.returncode in (0, 1) and r.stderr.count(b"\n") <= 3
    assert r.stdout.startswith(b"== ")  # the tasks before the cut are reported


def test_a_log_copied_under_another_name_is_still_detected(tmp_path: Path) -> None:
    copy = tmp_path / "yesterday.log"
    shutil.copy(SPARK / "plain" / APP, copy)
    doc = json.loads(cli("report", "--format", "json", str(copy)))
    task_ends = copy.read_text().count('{"Event":"SparkListenerTaskEnd"')
    assert task_ends > 80 and sum(s["total"]["events"] for s in doc["streams"]) == task_ends


def test_lines_read_as_a_spark_log_that_are_none_name_the_input_once(tmp_path: Path) -> None:
    """`--input-format spark-eventlog` on PyLatencyMap records said `spark: spark: a Spark event log with no
    application start ...` and `spark line 1: ...`: the input is named, once."""
    records = tmp_path / "records.txt"
    shutil.copy(Path(__file__).resolve().parents[3] / "fixtures" / "pylatencymap" / "example_latency_data.txt",
                records)
    result = CliRunner().invoke(main, ["report", "--input-format", "spark-eventlog", str(records)])
    assert "spark: spark:" not in result.output and "spark line" not in result.output, result.output
    assert f"spark: {records}: a Spark event log with no application start and no task in it" in result.output
    assert f"could not be parsed: {records} line 1: non-JSON line not read" in result.output


def _decoded_first_line_is_an_event(path: Path) -> bool:
    """What `is_event_log` answers by decoding (eventlog's readers), without its glance at a plain file's start."""
    from latencymap.sources.spark.codecs import CodecError
    from latencymap.sources.spark.eventlog import EVENT_LINE, EventLogError, find_event_log, first_line

    try:
        files = find_event_log(path).files()
        return bool(files) and EVENT_LINE.match(first_line(files[0])) is not None
    except (OSError, EventLogError, CodecError, ValueError):
        return False


def test_a_glance_at_a_plain_files_start_answers_as_decoding_it_would(tmp_path: Path) -> None:
    """Only a `{` (after blanks) can start a plain event log: any other start is told without the event-log readers,
    with the answer decoding gives; compressed files, rolled `events_*` files and directories are decoded."""
    from latencymap.sources.spark.codecs import SUFFIXES
    from latencymap.sources.spark.format import CODEC_SUFFIXES, GLANCE, is_event_log

    assert set(SUFFIXES) == CODEC_SUFFIXES
    event = (SPARK / "plain" / APP).read_bytes().split(b"\n", 1)[0]
    starts = {"event": event, "blanks": b" \t\r\f\v" + event, "blank line": b"  \n" + event, "empty": b"",
              "other json": b'{"Event": "Other"}', "record": b"<begin record>\n", "bom": b"\xef\xbb\xbf" + event,
              "long blanks": b" " * GLANCE + event, "cr": b"\r" + event}
    paths = [SPARK / p for p in PATHS] + [SPARK / "lz4" / f"{APP}.lz4"]
    for name, start in starts.items():
        path = tmp_path / f"{name.replace(' ', '_')}.log"
        path.write_bytes(start + b"\n" + b"x" * 10)
        paths.append(path)
    for path in paths:
        assert is_event_log(path) == _decoded_first_line_is_an_event(path), path
    answers = {p.name: is_event_log(p) for p in paths if p.parent == tmp_path}
    assert answers == {"event.log": True, "blanks.log": True, "blank_line.log": False, "empty.log": False,
                       "other_json.log": False, "record.log": False, "bom.log": False, "long_blanks.log": True,
                       "cr.log": True}


ROLLED = SPARK / "rolling" / f"eventlog_v2_{APP}"


def test_parts_of_a_rolling_log_named_as_inputs_are_read_as_one_application() -> None:
    """`report DIR/events_*` read the whole application once per part: three streams of every task, the later two
    shown apart as going back in time, and three analyses; they are one input, the directory, with a note."""
    parts = sorted(str(p) for p in ROLLED.glob("events_*"))
    assert len(parts) == 3
    whole = json.loads(cli("report", "--format", "json", str(ROLLED)))
    for named in (parts, [parts[1], str(ROLLED), parts[0]]):
        got = json.loads(cli("report", "--format", "json", *named))
        assert got["streams"] == whole["streams"] and got["source"] == whole["source"] and "sources" not in got
        names = ", ".join(Path(p).name for p in named)
        assert got["errors"]["messages"] == [
            f"{names}: parts of one Spark application's rolling event log, {ROLLED}: read once, as one input",
            *whole["errors"]["messages"]]
    text = cli("report", *parts)
    assert text.count("== spark ") == 1 and "analysis of" not in text


def test_parts_of_a_rolling_log_among_other_inputs_are_read_once_where_the_first_is(tmp_path: Path) -> None:
    other = tmp_path / "yesterday.log"
    shutil.copy(SPARK / "plain" / APP, other)
    parts = sorted(str(p) for p in ROLLED.glob("events_*"))
    got = json.loads(cli("report", "--format", "json", parts[0], str(other), parts[2]))
    assert [s["input"] for s in got["sources"]] == [str(ROLLED), str(other)]


def test_a_part_named_alone_reads_its_whole_application_and_says_so() -> None:
    """One part of a rolling log stands for its application (a part alone lacks the stages and the application's
    start the other parts hold); `cat PART | latencymap report` reads that part alone."""
    part = ROLLED / f"events_2_{APP}"
    note = (f"spark: {part} is a part of the rolling event log {ROLLED} (3 events files): the whole application is "
            f"read (cat {part} | latencymap report: that part alone)")
    whole = json.loads(cli("report", "--format", "json", str(ROLLED)))
    for args in (["report", "--format", "json", str(part)], ["report", "--format", "json", "spark", str(part)]):
        got = json.loads(cli(*args))
        assert got["streams"] == whole["streams"] and got["errors"]["messages"] == [note]
    piped = run("report", "--format", "json", stdin=part.read_bytes())
    events = sum(s["total"]["events"] for s in json.loads(piped.stdout)["streams"])
    assert events == part.read_text().count('"Event":"SparkListenerTaskEnd"') < whole_events(whole)


def whole_events(doc: dict) -> int:
    return sum(s["total"]["events"] for s in doc["streams"])
