"""`--follow` of a log that changes under the follower: truncated in place (logrotate's copytruncate), truncated and
written again past the position read, replaced by another file or by a copy of itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from latencymap.core.model import Interval, Notice
from latencymap.sources.spark.follow import Tailer
from latencymap.sources.spark.parse import EventParser
from latencymap.sources.spark.source import SparkSource

PLAIN = Path(__file__).resolve().parents[3] / "fixtures" / "spark" / "plain" / "local-1795225623494"
LINES = PLAIN.read_bytes().splitlines(keepends=True)
TASK_ENDS = sum(b'"SparkListenerTaskEnd"' in line for line in LINES)

#: A process writing LOG's lines into DIR/<app>.inprogress as Spark would, a line every few milliseconds; at line CUT
#: it waits for the follower (polling every 20 ms) to have read what it wrote, copies the file aside and truncates it
#: (logrotate's copytruncate), then writes the rest; at the end it renames the file as Spark does.
WRITER = """
import os, shutil, sys, time
src, out, cut = sys.argv[1], sys.argv[2], int(sys.argv[3])
live = os.path.join(out, os.path.basename(src) + ".inprogress")
with open(src, "rb") as f:
    lines = f.read().splitlines(keepends=True)
with open(live, "ab") as fh:
    for i, line in enumerate(lines):
        if i == cut:
            time.sleep(0.5)
            shutil.copy(live, live + ".1")
            os.truncate(live, 0)
        fh.write(line)
        fh.flush()
        time.sleep(0.003)
os.rename(live, live[:-len(".inprogress")])
"""


def task_count(items: list) -> int:
    return sum(int(iv.counts.sum()) for iv in items if isinstance(iv, Interval))


def test_a_log_truncated_while_followed_loses_no_task_and_counts_none_twice(tmp_path: Path) -> None:
    live = tmp_path / "logs"
    live.mkdir()
    cut = len(LINES) // 2
    before = sum(b'"SparkListenerTaskEnd"' in line for line in LINES[:cut])
    assert 0 < before < TASK_ENDS
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(PLAIN), str(live), str(cut)])
    try:
        items = list(SparkSource(target=str(live), follow=True, poll=0.02).items())
    finally:
        assert writer.wait(30) == 0
    assert task_count(items) == TASK_ENDS
    told = [n.message for n in items if isinstance(n, Notice)]
    truncated = [m for m in told if "truncated" in m]
    assert len(truncated) == 1, told
    assert truncated[0].startswith(f"spark: {live / PLAIN.name}.inprogress was truncated while it was followed")
    assert not [m for m in told if "could not be parsed" in m], told


def write(path: Path, lines: list[bytes], mode: str = "ab") -> None:
    with open(path, mode) as fh:
        fh.write(b"".join(lines))


def follow(tailer: Tailer, parser: EventParser) -> int:
    """Tasks parsed from what the tailer gives now."""
    tasks = 0
    for file, lines, fresh in tailer.poll_files():
        if fresh:
            parser.begin(str(file))
        tasks += len(parser.parse(lines))
    return tasks


def test_a_log_truncated_and_written_past_the_position_read_is_read_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / f"{PLAIN.name}.inprogress"
    cut = 40
    write(log, [*LINES[:cut], LINES[cut][:30]])  # ends inside a line
    told: list[str] = []
    tailer, parser = Tailer(str(log), note=told.append), EventParser()
    seen = follow(tailer, parser)
    size = log.stat().st_size
    os.truncate(log, 0)
    write(log, LINES[cut + 1:])  # longer than what was read: a size check alone would not see the truncation
    assert log.stat().st_size > size
    seen += follow(tailer, parser)
    assert seen == TASK_ENDS - (b'"SparkListenerTaskEnd"' in LINES[cut]) and parser.bad_lines == 0
    assert told == [f"spark: {log} was truncated while it was followed (as logrotate's copytruncate does): it is read "
                    f"again from its start; what was written to it after the {size} bytes read and before the "
                    "truncation is only in the rotated copy, if one was kept; the unfinished line last read (30 bytes) "
                    "is left out"]
    assert follow(tailer, parser) == 0 and len(told) == 1


def test_a_log_replaced_by_another_file_is_read_to_its_end_then_the_new_one_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / f"{PLAIN.name}.inprogress"
    cut = len(LINES) // 2
    write(log, LINES[:cut - 5])
    told: list[str] = []
    tailer, parser = Tailer(str(log), note=told.append), EventParser()
    seen = follow(tailer, parser)
    write(log, LINES[cut - 5:cut])  # written after the last poll, before the old file was moved aside
    log.rename(tmp_path / "old")
    write(log, LINES[cut:], "xb")
    seen += follow(tailer, parser)
    assert seen == TASK_ENDS and parser.bad_lines == 0
    assert told == [f"spark: {log} was replaced by another file while it was followed: the old one was read to its "
                    "end, the new one is read from its start"]


def test_a_log_replaced_by_a_longer_copy_of_itself_is_read_on_where_it_was(tmp_path: Path) -> None:
    log = tmp_path / f"{PLAIN.name}.inprogress"
    cut = len(LINES) // 2
    write(log, [*LINES[:cut], LINES[cut][:10]])
    told: list[str] = []
    tailer, parser = Tailer(str(log), note=told.append), EventParser()
    seen = follow(tailer, parser)
    copy = tmp_path / "copy"
    shutil.copy(PLAIN, copy)  # a sync tool's whole new copy, renamed over the old file
    copy.rename(log)
    seen += follow(tailer, parser)
    assert seen == TASK_ENDS and parser.bad_lines == 0 and told == []
