"""`report --history`: the report's memory can be bounded as the views' is, and its notes say what it covers."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html import unescape as html_unescape
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from latencymap.cli.main import main
from latencymap.core.model import StreamId
from latencymap.protocol import format_record

SVG = "{http://www.w3.org/2000/svg}"


def wide_input(path: Path, columns: int) -> Path:
    rng = np.random.default_rng(4)
    stream = StreamId("wide", "bpf", "microsec")
    with path.open("w") as fh:
        for i in range(columns):
            counts = np.zeros(64, dtype=np.int64)
            counts[2:60] = rng.integers(0, 1 << 30, 58)  # incompressible: about 250 bytes a column
            fh.write(format_record(stream, 1e9 + i + 1, counts, None, start=1e9 + i, per_interval=True))
    return path


@pytest.mark.parametrize(("history", "said"), [
    ("100", "each stream keeps its newest 100 columns (--history 100)"),
    ("1M", "the memory budget (1 MiB, --history) is full"),
])
def test_a_report_under_a_history_limit_says_what_it_dropped_and_covers(tmp_path: Path, history: str,
                                                                       said: str) -> None:
    path = wide_input(tmp_path / "wide.txt", 6000)
    r = CliRunner().invoke(main, ["report", "--format", "json", "--history", history, str(path)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    (stream,) = doc["streams"]
    kept = stream["columns"]
    assert kept == 100 if history == "100" else 100 < kept < 6000
    messages = doc["errors"]["messages"]
    assert sum(said in m for m in messages) == 1 and len(messages) == 1, messages  # the drop is no message
    assert stream["dropped_columns"] == 6000 - kept
    assert doc["history"]["dropped_columns"] == 6000 - kept and doc["history"]["columns_read"] == 6000
    text = CliRunner().invoke(main, ["report", "--history", history, str(path)])
    assert text.exit_code == 0 and f"the figures here cover the {kept:,} columns kept" in text.stdout


def test_report_history_is_parsed_as_the_views(tmp_path: Path) -> None:
    path = wide_input(tmp_path / "wide.txt", 10)
    whole = CliRunner().invoke(main, ["report", "--format", "json", str(path)])
    assert whole.exit_code == 0 and "history" not in " ".join(json.loads(whole.stdout)["errors"]["messages"])
    for bad, why in (("lots", "neither a memory size"), ("0", "whole number >= 1"), ("12K", "under 1 MiB")):
        r = CliRunner().invoke(main, ["report", "--history", bad, str(path)])
        assert r.exit_code == 2 and why in r.output, r.output


def five_input(path: Path, bad: int = 0) -> Path:
    """`bad` records that cannot be read, then 5 one-second interval records of 10 events each (50 events)."""
    t0 = 1_700_000_000_000_000
    broken = "".join(f"<begin record>\ntimestamp, microsec, {t0}, x\nlatencyunit, microsec\nlabel, s\n"
                     f"counts, interval\n8, abc{k}\n<end record>\n" for k in range(bad))
    good = "".join(f"<begin record>\ntimestamp, microsec, {t0 + (i + 1) * 1_000_000}, x\n"
                   f"start, microsec, {t0 + i * 1_000_000}\nlatencyunit, microsec\nlabel, s\ncounts, interval\n"
                   "8, 10\n<end record>\n" for i in range(5))
    path.write_text(broken + good)
    return path


DROP_LINE = ("history: 3 columns of the 5 read were dropped, the oldest first (the --history limit, 2 columns per "
             "stream); the figures here cover the 2 columns kept, not the whole run")


def test_every_report_format_says_that_a_stream_dropped_columns(tmp_path: Path) -> None:
    path = five_input(tmp_path / "five.txt")
    text = CliRunner().invoke(main, ["report", "--history", "2", str(path)])
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[2] == f"   {DROP_LINE}", lines  # under the stream's first line: what it covers
    assert text.stdout.count("dropped") == 1, text.stdout  # once: the accumulator's "from now on" is said by it
    for fmt in ("html", "svg"):
        out = tmp_path / f"five.{fmt}"
        r = CliRunner().invoke(main, ["report", "--format", fmt, "--history", "2", "-o", str(out), str(path)])
        assert r.exit_code == 0, r.output
        said = html_unescape(out.read_text()) if fmt == "html" else " ".join(" ".join(
            e.text or "" for e in ET.parse(out).getroot().iter(f"{SVG}text")).split())  # SVG wraps its lines
        assert "history: 3 columns of the 5 read were dropped" in said and "the 2 columns kept" in said, fmt
    doc = json.loads(CliRunner().invoke(main, ["report", "--format", "json", "--history", "2", str(path)]).stdout)
    (stream,) = doc["streams"]
    assert (stream["columns"], stream["dropped_columns"], stream["start"]) == (2, 3, 1_700_000_003.0)
    assert doc["history"] == {"columns_per_stream": 2, "budget_bytes": None, "dropped_columns": 3,
                              "columns_read": 5}
    whole = json.loads(CliRunner().invoke(main, ["report", "--format", "json", str(path)]).stdout)
    assert "history" not in whole and "dropped_columns" not in whole["streams"][0]


def test_the_drop_is_said_whatever_else_reading_said(tmp_path: Path) -> None:
    """Ten messages or more (malformed records) before the data: the text report still says the drop, and past the
    100 messages the JSON keeps, the JSON still records it."""
    text = CliRunner().invoke(main, ["report", "--history", "2", str(five_input(tmp_path / "a.txt", bad=12))])
    assert text.exit_code == 0 and "... and 2 more" in text.stdout and DROP_LINE in text.stdout, text.stdout
    r = CliRunner().invoke(main, ["report", "--format", "json", "--history", "2",
                                  str(five_input(tmp_path / "b.txt", bad=150))])
    doc = json.loads(r.stdout)
    assert doc["errors"]["messages_left_out"] > 0
    assert doc["streams"][0]["dropped_columns"] == 3 and doc["history"]["dropped_columns"] == 3


def test_a_budget_drop_is_said_once_with_its_numbers_written_out(tmp_path: Path) -> None:
    path = wide_input(tmp_path / "wide.txt", 6000)
    r = CliRunner().invoke(main, ["report", "--history", "1M", str(path)])
    assert r.exit_code == 0, r.output
    said = [line for line in r.stdout.splitlines() if "dropped" in line]
    assert len(said) == 1 and "the --history limit, 1 MiB" in said[0], said
    assert re.search(r"history: \d{1,3}(,\d{3})* columns of the 6,000 read were dropped", said[0]), said


def test_one_column_per_stream_reads_in_the_singular(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["report", "--history", "1", str(five_input(tmp_path / "five.txt"))])
    assert r.exit_code == 0, r.output
    assert "1 column per stream" in r.stdout and "the 1 column kept" in r.stdout and "1 columns" not in r.stdout


@pytest.mark.parametrize("bad", ["1ib", "2iB", "b", "1.5ib"])
def test_a_size_needs_a_unit_letter_before_ib(tmp_path: Path, bad: str) -> None:
    r = CliRunner().invoke(main, ["report", "--history", bad, str(five_input(tmp_path / "five.txt"))])
    assert r.exit_code == 2 and "neither a memory size" in r.output, r.output


def test_a_budget_under_16k_a_stream_says_what_each_stream_gets(tmp_path: Path) -> None:
    """100 streams in 1 MiB: the 65th takes it under 16 KiB a stream. How many columns a stream then keeps depends
    on their width, so the message gives the share, not a count it cannot know (it said "a few hundred" where
    streams kept thousands); each stream's summary gives the count."""
    with (tmp_path / "many.txt").open("w") as fh:
        for i in range(200):
            for k in range(100):
                counts = np.zeros(64, dtype=np.int64)
                counts[8] = 10
                fh.write(format_record(StreamId(f"s{k}", "bpf", "microsec"), 1e9 + i + 1, counts, None,
                                       start=1e9 + i, per_interval=True))
    r = CliRunner().invoke(main, ["report", "--format", "json", "--history", "1M", str(tmp_path / "many.txt")])
    doc = json.loads(r.stdout)
    (message,) = [m for m in doc["errors"]["messages"] if "16 KiB" in m]
    assert "few hundred" not in message and "65 streams share it (15.8 KiB each" in message, message
