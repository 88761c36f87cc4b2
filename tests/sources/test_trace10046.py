from __future__ import annotations

import math
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from formats_support import FIXTURES, intervals, notices, read_items, registry, report_json, totals_by_label

from latencymap.core.buckets import bounds_in_unit
from latencymap.core.model import Notice
from latencymap.flow.pipeline import input_flow
from latencymap.sources.trace10046 import Trace10046Format

TRACE = FIXTURES / "pylatencymap" / "test_10046_tracefile.trc"


def waits() -> dict[str, list[tuple[int, int]]]:
    """(ela, tim) of every WAIT line per event, by regex over the trace."""
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for nam, ela, tim in re.findall(r"^WAIT #\d+: nam='([^']+)' ela= (\d+) .* tim=(\d+)$", TRACE.read_text(), re.M):
        out[nam].append((int(ela), int(tim)))
    return out


def test_default_event_totals_and_exact_time_equal_the_trace() -> None:
    seq = waits()["db file sequential read"]
    report = report_json(TRACE)
    (stream,) = report["streams"]
    assert stream["stream"] == {"label": "db file sequential read", "datasource": "oracle10046", "unit": "microsec"}
    assert stream["total"]["events"] == len(seq)
    assert stream["intensity_exact"]
    assert stream["total"]["time_s"] == pytest.approx(sum(e for e, _ in seq) / 1e6, rel=1e-9)
    first, last = min(t for _, t in seq) / 1e6, max(t for _, t in seq) / 1e6
    assert stream["columns"] == int(np.floor(last)) - int(np.floor(first)) + 1


def test_several_events_are_several_streams_with_interval_columns() -> None:
    w = waits()
    report = report_json(TRACE, event=("db file sequential read", "gc cr grant 2-way"), interval=10)
    assert totals_by_label(report) == {"db file sequential read": len(w["db file sequential read"]),
                                       "gc cr grant 2-way": len(w["gc cr grant 2-way"])}
    for s in report["streams"]:
        assert s["start"] % 10 == 0 and (s["end"] - s["start"]) == 10 * s["columns"]


def test_all_events_and_missing_event_note() -> None:
    w = waits()
    items = list(Trace10046Format(event=("all",)).read(TRACE.open(), "t.trc"))
    got: dict[str, int] = defaultdict(int)
    for col in intervals(items):
        got[col.stream.label] += int(col.counts.sum())
    assert got == {k: len(v) for k, v in w.items()}
    items = list(Trace10046Format(event=("no such event",)).read(TRACE.open(), "t.trc"))
    assert any("no WAIT lines for 'no such event'" in m and "db file sequential read" in m for m in notices(items))


def test_all_events_gives_an_event_first_seen_late_the_columns_from_the_traces_start() -> None:
    """10 reads one a second, then one `log file sync` at the end: with `all`, as when it is named, its rate is over
    the trace's 10 s (1 in 10 columns), not over the 1 s since its first wait; the real trace's events likewise."""
    text = "".join(f"WAIT #1: nam='db file sequential read' ela= 1000 obj#=1 tim={1377520823 + k}000000\n"
                   for k in range(10)) + "WAIT #1: nam='log file sync' ela= 500 p3=0 tim=1377520832500000\n"
    late = [(c.start, c.end, int(c.counts.sum())) for c in intervals(read_items(Trace10046Format, text, event=("all",)))
            if c.stream.label == "log file sync"]
    assert late == [(1377520823.0 + k, 1377520824.0 + k, int(k == 9)) for k in range(10)]
    for source, named in ((text, ("db file sequential read", "log file sync")), (TRACE.read_text(), tuple(waits()))):
        every, one_by_one = ([(c.stream.label, c.start, c.end, int(c.counts.sum()))
                              for c in intervals(read_items(Trace10046Format, source, event=events))]
                             for events in (("all",), named))
        assert sorted(every) == sorted(one_by_one)


@pytest.mark.parametrize(("ela", "low", "high"), [(0, 0.0, 1.0), (1, 1.0, 2.0), (1023, 512.0, 1024.0),
                                                  (1024, 1024.0, 2048.0)])
def test_ela_on_and_below_a_boundary(ela: int, low: float, high: float) -> None:
    text = f"WAIT #1: nam='db file sequential read' ela= {ela} file#=7 block#=1 blocks=1 obj#=1 tim=1377520823000000\n"
    (col,) = intervals(read_items(Trace10046Format, text))
    (slot,) = col.counts.nonzero()[0]
    lows, highs = bounds_in_unit("oracle10046")
    assert (lows[slot], highs[slot]) == (low, high)
    assert col.time is not None and col.time.sum() == pytest.approx(ela / 1e6)


def test_malformed_wait_line_reported_and_empty_columns_kept() -> None:
    text = ("WAIT #1: nam='db file sequential read' ela= 5 tim=1000000000000000\n"
            "WAIT #1: nam='db file sequential read' ela= oops tim=1000000000500000\n"
            "WAIT #1: nam='db file sequential read' ela= 7 tim=1000000003200000\n")
    items = read_items(Trace10046Format, text, "w.trc")
    assert any(m.startswith("w.trc: line 2: expected \"WAIT #<cursor>") for m in notices(items))
    assert [int(c.counts.sum()) for c in intervals(items)] == [1, 0, 0, 1]


def test_non_epoch_tim_is_anchored_to_the_trace_timestamp() -> None:
    text = "*** 2013-08-26 14:40:23.035\nWAIT #1: nam='db file sequential read' ela= 5 tim=5000000\n"
    (col,) = intervals(read_items(Trace10046Format, text))
    assert col.start > 1.3e9


OLD_TRACE = ("Oracle Database 10g Enterprise Edition Release 10.2.0.4.0 - 64bit Production\n"
             "*** 2013-08-26 14:40:23.035\n"
             "*** SESSION ID:(409.215) 2013-08-26 14:40:23.035\n"
             "PARSING IN CURSOR #5 len=10 dep=0 uid=1 oct=3 lid=1 tim=1000000000 hv=1 ad='1'\n"
             "select 1\nEND OF STMT\n"
             "WAIT #5: nam='SQL*Net message from client' ela= 99000000 driver id=1 #bytes=1 p3=0 obj#=-1 "
             "tim=1099000000\n"
             "WAIT #5: nam='db file sequential read' ela= 5000 file#=7 block#=1 blocks=1 obj#=1 tim=1100000000\n"
             "WAIT #5: nam='db file sequential read' ela= 6000 file#=7 block#=2 blocks=1 obj#=1 tim=1101000000\n")
#: 2013-08-26 14:40:23.035, as written in the trace (labelled UTC), in epoch seconds.
OLD_STAMP = datetime(2013, 8, 26, 14, 40, 23, 35000, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("events", [("db file sequential read",), ("all",)])
def test_a_non_epoch_tim_counts_from_the_first_tim_after_the_stamp_line(events: tuple[str, ...]) -> None:
    """An older release's `tim` counts from an arbitrary origin: the first tim after the `***` line (the cursor's,
    1000 s) is that stamp, so the reads that end at 1100 s and 1101 s are 100 s and 101 s after it. They were put at
    the stamp itself (the first wanted wait was taken for it), and with `all` 1 s after it (the SQL*Net wait's)."""
    reads = [(c.start, c.end, int(c.counts.sum())) for c in intervals(read_items(Trace10046Format, OLD_TRACE,
                                                                                 event=events))
             if c.stream.label == "db file sequential read" and c.counts.any()]
    at = math.floor(OLD_STAMP + 100)
    assert reads == [(at, at + 1.0, 1), (at + 1.0, at + 2.0, 1)]
    assert datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S") == "14:42:03"


def test_a_non_epoch_tim_before_any_stamp_line_is_said() -> None:
    """The first wait of an older release's trace before its `***` line has nothing to date it: its times count from
    1970, which was silent (a report starting at 1970-01-01)."""
    text = ("WAIT #5: nam='db file sequential read' ela= 5000 file#=7 block#=1 blocks=1 obj#=1 tim=1000000000\n"
            "*** 2013-08-26 14:40:23.035\n"
            "WAIT #5: nam='db file sequential read' ela= 6000 file#=7 block#=1 blocks=1 obj#=1 tim=1010000000\n")
    items = read_items(Trace10046Format, text)
    (note,) = [i.message for i in items if isinstance(i, Notice)]
    assert "line 1: tim 1000000000 is not epoch microseconds" in note and "counted from 1970-01-01" in note
    assert sum(int(c.counts.sum()) for c in intervals(items)) == 2
    assert not [i for i in read_items(Trace10046Format, OLD_TRACE) if isinstance(i, Notice)]


@pytest.mark.parametrize("zone", ["UTC", "Europe/Zurich", "America/New_York", "EST5EDT,M3.2.0,M11.1.0"],
                         indirect=True)
def test_the_stamp_line_reads_the_same_in_every_time_zone(zone: str) -> None:
    """A `***` stamp is the database server's local time, with no zone: it is taken as written, labelled UTC, whatever
    the reading machine's `TZ` (it moved the whole trace by that zone's offset)."""
    (first, *_) = [c for c in intervals(read_items(Trace10046Format, OLD_TRACE)) if c.counts.any()]
    assert first.start == math.floor(OLD_STAMP + 100)


def test_event_names_alike_for_their_first_200_characters_stay_apart_cut_in_the_middle() -> None:
    """Three events whose names differ only past 200 characters: three streams, each with its own waits, named by
    their start and end; asked for by name (`--event`) or read all."""
    long = "db file " + "x" * 250
    events = [f"{long} read", f"{long} write", f"{long} sync"]
    lines = [f"WAIT #1: nam='{e}' ela= {100 * (k + 1)} file#=7 block#=1 blocks=1 obj#=1 tim={1377520823000000 + t}\n"
             for t in range(0, 3_000_000, 250_000) for k, e in enumerate(events[: 1 + t // 1_000_000])]
    for options in ({"event": ("all",)}, {"event": tuple(events)}):
        got: dict[str, int] = defaultdict(int)
        for col in intervals(read_items(Trace10046Format, "".join(lines), **options)):
            got[col.stream.label] += int(col.counts.sum())
        assert sorted(got.values()) == [4, 8, 12]
        for label, n in got.items():
            assert len(label) == 200 and label.count("…") == 1 and label.startswith("db file xx")
            assert label.endswith("x " + {12: "read", 8: "write", 4: "sync"}[n])


def test_a_wait_past_the_top_bucket_is_said_once_per_event_with_its_line() -> None:
    """An `ela=` of 10**20 - 1 µs (a corrupt trace) was counted in the top bucket, [2**62, 2**63) µs, without a word, as
    raw values once were: each event's first such wait is said, with its line, as the raw-values reader says it."""
    seq, scat = "db file sequential read", "db file scattered read"
    text = (f"WAIT #1: nam='{seq}' ela= 120 tim=1000000000000000\n"
            f"WAIT #1: nam='{seq}' ela= 99999999999999999999 tim=1000000000100000\n"
            f"WAIT #1: nam='{seq}' ela= 18446744073709551616 tim=1000000000200000\n"
            f"WAIT #1: nam='{scat}' ela= 9223372036854775808 tim=1000000000300000\n"
            f"WAIT #1: nam='{scat}' ela= 9223372036854775807 tim=1000000000400000\n")
    items = read_items(Trace10046Format, text, "t.trc", event=("all",))
    said = [m for m in notices(items) if "top bucket" in m]
    assert said == [
        f"t.trc: line 2: {seq}: value 1e+20 microsec is past the top bucket's nominal end, 9.22337e+18 microsec "
        "(106,751,991 days): the top bucket is open (≥53,375,996 days) and counts it, with its exact time; "
        "percentiles there reach the values seen in it; said once per stream",
        f"t.trc: line 4: {scat}: value 9.22337e+18 microsec is past the top bucket's nominal end, 9.22337e+18 "
        "microsec (106,751,991 days): the top bucket is open (≥53,375,996 days) and counts it, with its exact time; "
        "percentiles there reach the values seen in it; said once per stream"]
    top = {label: int(sum(iv.counts[-1] for iv in intervals(items) if iv.stream.label == label))
           for label in (seq, scat)}
    assert top == {seq: 2, scat: 2}  # still counted there: 2**63 - 1 is in the bucket, 2**63 past it


@pytest.mark.parametrize("odd", list("\f\v\x1c\x1d\x1e\x85\u2028\u2029"))
def test_an_event_name_holding_what_splitlines_takes_for_a_line_end_keeps_its_waits(odd: str, tmp_path: Path) -> None:
    """`nam='log\\u2028sync'`: `str.splitlines` cut each such WAIT line in two, its waits were skipped as bad lines
    and every message after named the wrong line."""
    text = "*** 2023-11-14 22:13:20.000\n" + "".join(
        f"WAIT #1: nam='log{odd}sync' ela= {100 + k} p1=0 tim={1_000_020_000 + 20_000 * k}\n" for k in range(5))
    text += "WAIT #1: nam='log file sync' ela= oops tim=1000200000\n"
    path = tmp_path / "t.trc"
    path.write_text(text, encoding="utf-8")
    items = list(input_flow([str(path)], registry(), None, {"event": ("all",)}))
    assert [(c.stream.label, int(c.counts.sum())) for c in intervals(items) if c.counts.any()] == [("log?sync", 5)]
    assert [m.split(" expected")[0] for m in notices(items) if "expected" in m] == [f"{path}: line 7:"]
