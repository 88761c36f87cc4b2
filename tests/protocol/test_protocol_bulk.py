"""The chunked reader gives exactly what the line reader gives, however the text is cut."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from latencymap.core.buckets import NSLOTS
from latencymap.core.deltas import Differ
from latencymap.core.model import Interval, Notice, Snapshot
from latencymap.protocol import ProtocolReader


def normal(item: Snapshot | Interval | Notice) -> tuple[Any, ...]:
    if isinstance(item, Notice):
        return ("notice", item.message, item.skipped)
    if isinstance(item, Snapshot):
        sums = None if item.sums is None else item.sums.tolist()
        present = None if item.present is None else item.present.tolist()
        return ("snap", item.stream, item.timestamp, item.counts.tolist(), sums, item.date, item.line, present,
                item.micros)
    sums = None if item.time is None else item.time.tolist()
    seen = None if item.extremes is None else [[v if v == v else None for v in row] for row in item.extremes.tolist()]
    own = item.source_buckets
    source = None if own is None else (tuple(map(float, own.bounds)), own.counts.tolist(), own.total_time)
    return ("iv", item.stream, item.start, item.end, item.counts.tolist(), sums, item.reset, item.gap, item.date,
            item.duration, item.start_date, seen, source)


def ticking() -> Callable[[], float]:
    """A clock that moves 0.25 s each time it is read: records without a timestamp get the same times on both
    paths, and 1 s apart (the floor), since they are read faster than that."""
    ticks = itertools.count()
    return lambda: 1_700_000_000 + next(ticks) / 4


def by_lines(text: str) -> list[tuple[Any, ...]]:
    lines = text.split("\n")  # a line ends at a newline only (`str.splitlines` also cuts at `\f`, U+2028, ...)
    if lines[-1] == "":
        lines.pop()
    return [normal(i) for i in ProtocolReader("t", clock=ticking()).read(lines)]


def by_chunks(text: str, cuts: list[int]) -> list[tuple[Any, ...]]:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    return [normal(i) for i in ProtocolReader("t", clock=ticking()).read_chunks(pieces)]


HEADER = st.sampled_from([
    "timestamp, microsec, 1700000000000000, 2024-01-01",
    "timestamp, microsec, 1700000001000000,Mon 1 Jan",
    "timestamp, microsec, 1700000002000000",
    "timestamp, microsec, x, bad",
    "timestamp, MICROSEC, 1700000003000000, d",
    "timestamp, millisec, 1700000003000, in another unit",
    "timestamp, microsec, 5201467111111111111464, past int64",
    "timestamp, microsec, -4611686018427387904, just out of range",
    "label, disk io",
    "label, \x1b[2Jevil\tlabel",
    "label, ff\x0cname\x0b\x1c\x1d\x1e\x85\u2028\u2029x",  # what `str.splitlines` also takes for a line end
    "label, /cluster/" + "x" * 250 + "/disk0/read",  # cut to 200: distinct streams still (middle cut, `(2)`)
    "label, /cluster/" + "x" * 250 + "/disk1/read",
    "label, /cluster/" + "x" * 250 + "/disk1/re\tad",
    "Label, upper",
    "datasource, oracle",
    "datasource, bpf",
    "latencyunit, microsec",
    "latencyunit, us",
    "latencyunit, parsecs",
    "LatencyUnit , nanosec",
    "counts, interval",
    "counts, Interval",
    "start, microsec, 1699999999000000",
    "start, microsec, 99999999999999999999",
    "flags, reset, gap",
    "value |---- count",
    "nonsense",
    "   ",
    "~~~~",
    "-3, 1",
    "label  ,  spaced  ",
    "label,",  # an empty label (PyLatencyMap's NetApp connector): no label
    "label,   ",
    "\x00",
    "\x00754 PM",
    "timestamp,musec,1700000004000000,2013 Aug 27 10:54:53",
    "  myhistogram   ",
    "4242",
    "           value  ------------- Distribution ------------- count    ",
    "value |-------------------------------------------------- count",
    "datasource, dtrace",
    "label, db file sequential read latency data from gv$event_histogram",
    "<not a marker>",
    "\u0663, 5",
])
ROW = st.one_of(
    st.tuples(st.sampled_from([0, 1, 2, 4, 8, 1024, 3, 4294967295, 1 << 61, 10**19]),
              st.integers(0, 10**6) | st.sampled_from([-1, 10**20])).map(lambda t: f"{t[0]}, {t[1]}"),
    st.sampled_from(["2, 5, 0.25", "1,7", " 16 , 3 ", "-4, 2", "8 |@@@ 4", "1, 2, x", "1.5, 2", "1,", "+2, 1", "4",
                     " +4, 1", "2, +3", "", "   ", "\u0663, 5", "4, \u0663", "latencyunit, nanosec"]),
)
ROW3 = st.one_of(
    st.tuples(st.sampled_from([0, 1, 2, 4, 8, 1024, 3, 4294967295, 1 << 61, 10**19, -4]), st.integers(0, 10**6),
              st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1e-300, 1e300]))
    .map(lambda t: f"{t[0]}, {t[1]}, {t[2]!r}"),
    st.sampled_from(["2, 5, 1e3", "4, 1, -0", "4, 1, 1e400", "4, 1, .5", "8, 2, 5.", "8, 2, 0x10", "8, 2, nan",
                     "8, 2,", "16, 3, 1 2", "16, 3, 1e5e5", "2, 3, -1", "2, 3, 1e-5", "2,3,4", "1, 2, 3, 4",
                     "2, 1_0, 5", "2, 3, 1_0", " 4 , 5 , 6 ", "4, 5, 1E2", "4, 5, --1", "4, 5, 1-2",
                     "9007199254740992, 1, 1", "9007199254740993, 1, 1", "4, 9007199254740993, 1", "\t4, 5, 6",
                     "1.0, 2, 3", "1e3, 2, 3", "4, 2e1, 3", "004, 5, 6"]),
)
MARK = st.sampled_from(["<begin record>", "<end record>", "  <BEGIN RECORD> ", "<End Record>", "noise line", "",
                        "<end record><begin record>", "<begin record> <END RECORD>",
                        "   3  72639                        :tick-10s "])

#: What a cut line runs into: the next record's marker, in any case and spacing.
CUT_BY = ["<begin record>", " <Begin Record>", "<end record><begin record>", "<begin record>  "]


@st.composite
def stream_text(draw: st.DrawFn) -> str:
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            lines.append(draw(MARK))
        if lines and lines[-1] == "<end record>" and draw(st.integers(0, 3)) == 0:
            lines[-1] = "<end record><begin record>"  # a writer that lost a newline
        elif lines and draw(st.integers(0, 4)) == 0:  # a writer cut off mid-line: the next record right after
            lines[-1] = lines[-1][:draw(st.integers(0, len(lines[-1])))] + draw(st.sampled_from(CUT_BY))
        else:
            lines.append("<begin record>")
        lines += draw(st.lists(HEADER, max_size=5))
        lines += draw(st.lists(ROW, max_size=8) | st.lists(ROW3, max_size=8))
        if draw(st.integers(0, 9)):
            if lines and draw(st.integers(0, 5)) == 0:  # the end marker glued to the last line
                lines[-1] += draw(st.sampled_from(["<end record>", " <END RECORD>"]))
            else:
                lines.append("<end record>")
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


def test_a_blank_row_beside_a_record_of_sums_moves_no_count() -> None:
    """A row of spaces (no comma) in one record and a row of three columns in the next held as many commas as rows
    between them: the batch was read as two-column rows, the blank row became `0, 4`, and the next record's count
    landed in the record before."""
    text = ("<begin record>\n0, 0\n   \n<end record>\n"
            "<begin record>\n4, 1, 5\n<end record>\n")
    assert by_chunks(text, []) == by_lines(text)


@pytest.mark.parametrize("rows", ["4\n1, 2, 3", "2, 4, 8\n16", "8, 1\n4\n1, 2, 3\n16, 2"])
def test_a_row_of_one_column_beside_a_row_of_three_is_a_bad_record_not_two_rows(rows: str) -> None:
    """As many commas as rows, but not one a row: the line reader skips the record, and so does the bulk path."""
    text = f"<begin record>\ntimestamp, microsec, 1700000000000000, t\nlabel, a\n{rows}\n<end record>\n"
    items = by_chunks(text, [])
    assert [i[0] for i in items] == ["notice"] and "record skipped" in items[0][1]
    assert items == by_lines(text)


#: Rows of none to four columns of powers of two (read across rows, any two make a good row), non-ASCII, carriage
#: returns: a record's commas do not say its rows'.
ROW_SHAPE = st.sampled_from(["4", "", "   ", "1, 2", "2, 4, 8", "4, 2, 1, 8", "8, 1,", ",", "\u00e9, 1", "4, 2\r",
                             "2, 4, 8\r", "16, \u0663"])


@given(st.lists(st.lists(ROW_SHAPE, max_size=4), min_size=1, max_size=6), st.lists(st.integers(0, 600), max_size=2))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_canonical_records_of_rows_of_any_columns_read_as_line_by_line(records: list[list[str]],
                                                                       cuts: list[int]) -> None:
    """The stream strategy's records seldom take the bulk path with rows of mixed columns; these all may."""
    text = "".join(f"<begin record>\ntimestamp, microsec, {1_700_000_000_000_000 + k * 1_000_000}, d\nlabel, a\n"
                   + "".join(f"{row}\n" for row in ["1, 1", *rows]) + "<end record>\n"
                   for k, rows in enumerate(records))
    assert by_chunks(text, cuts) == by_lines(text)


def test_a_label_holding_what_splitlines_takes_for_a_line_end_splits_no_record() -> None:
    """A record read line by line (a bad record beside it sends the chunk there) was cut at a label's U+2028, `\\f`,
    ...: every record was skipped (`got 'b'`), and the bad record's message named the wrong line."""
    for odd in "\f\v\x1c\x1d\x1e\x85\u2028\u2029":
        text = "".join(f"<begin record>\ntimestamp, microsec, {1_700_000_000_000_000 + k * 1_000_000}, x\n"
                       f"latencyunit, microsec\nlabel, a{odd}b\ndatasource, bpf\n16, {count}\n<end record>\n"
                       for k, count in enumerate((10, 30, 70)))
        text += "<begin record>\nlabel, x\n16, abc\n<end record>\n"
        items = by_chunks(text, [])
        assert [i[0] for i in items] == ["snap", "snap", "snap", "notice"], odd
        assert [sum(i[3]) for i in items[:3]] == [10, 30, 70]
        assert items[3][1].startswith("t: line 24: expected integers in '<bucket value>, <count>', got '16, abc'")
        assert items == by_lines(text)


ORACLE_LABEL = "label, db file sequential read latency data from gv$event_histogram\n"


def test_the_datasource_note_comes_before_the_first_record_read_without_a_datasource_line() -> None:
    """The bulk reader parsed a record's header lines (and took its stream as guessed) before the record was read:
    the note came before the records ahead of it in the chunk, or for a record skipped whole."""
    text = ("<begin record>\ntimestamp, microsec, 1700000000000000\ndatasource, bpf\n" + ORACLE_LABEL
            + "1, 5\n<end record>\n<begin record>\ntimestamp, microsec, 1700000001000000\n" + ORACLE_LABEL
            + "1, 7\n<end record>\n")
    items = by_chunks(text, [])
    assert [i[0] for i in items] == ["snap", "notice", "snap"] and "has no 'datasource' line" in items[1][1]
    assert items == by_lines(text)
    skipped = ("<begin record>\n" + ORACLE_LABEL + "0, 0\n<begin record>\ndatasource, bpf\n" + ORACLE_LABEL
               + "<end record>\n")  # the record without a datasource line has no end: no note
    assert [i[0] for i in by_chunks(skipped, [])] == ["notice", "snap"] == [i[0] for i in by_lines(skipped)]


def test_a_recordings_note_of_what_it_does_not_keep_comes_before_that_streams_first_record() -> None:
    header = '# latencymap-recording {"version": "0.1.0", "source": "report", "options": {"inputs": ["x.log"]}}\n'
    text = header + "".join(f"<begin record>\ntimestamp, microsec, 1700000000000000\ncounts, interval\n"
                            f"datasource, {source}\nlabel, {source}\n1, 5\n<end record>\n"
                            for source in ("bpf", "spark"))
    items = by_chunks(text, [])
    assert [i[0] for i in items] == ["iv", "notice", "iv"] and "a recording keeps the histograms" in items[1][1]
    assert items == by_lines(text)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream_text(), st.lists(st.integers(0, 2000), max_size=6))
@example(text="<begin record>\n" + ORACLE_LABEL + "0, 0\n<begin record>\ndatasource, bpf\n" + ORACLE_LABEL
         + "<end record>\n", cuts=[])
def test_chunked_reader_matches_line_reader(text: str, cuts: list[int]) -> None:
    assert by_chunks(text, cuts) == by_lines(text)


#: Records whose first lines decide which path reads them (each between two canonical records).
EDGE_RECORDS = [
    "timestamp, millisec, 1700000003000, in another unit\nlabel, a\n1, 5",
    "timestamp, MICROSEC, 1700000003000000, upper case\nlabel, a\n1, 5",
    "timestamp,musec,1700000003000000,2013 Aug 27 10:54:53\nlabel, a\n1, 5",
    "timestamp, microsec, 1700000003000000\nlabel, a\n1, 5",
    "timestamp, microsec, 1700000003000000, a, date, with commas\nlabel, a\n1, 5",
    "timestamp, microsec\nlabel, a\n1, 5",
    "timestamp, microsec, 17e14, x\nlabel, a\n1, 5",
    "timestamp, microsec, 1700000003000000, \x1b[2J\nlabel, a\n1, 5",
    "label, a\n1, 5",
    "timestamp, microsec, 1700000003000000, x\n<not a marker>\nlabel, a\n1, 5",
    "timestamp, microsec, 1700000003000000, x\nlabel, a\n\n1, 5",
    "timestamp, microsec, 1700000003000000, x\nlabel, a\n1, 5\n\n2, 5",
    "timestamp, microsec, 1700000003000000, x\nlabel, a\n\u0663, 5\n1, 5",
    "timestamp, microsec, 1700000003000000, x\nlabel, a\n1, 5\n\u0663, 5",
    "timestamp, microsec, 1700000003000000, x\nlabel, a\n1, 5\nlabel, b",
    "timestamp, microsec, 1700000003000000, x\ncounts, interval\nstart, microsec, 1700000002000000\nlabel, a\n"
    "1, 5, 0.5",
    "timestamp, microsec, 1700000003000000, x\ncounts, interval\nstart, microsec,1700000002000000\nlabel, a\n1, 5",
    "timestamp, microsec, 1700000003000000, x\ncounts, interval\nstart, microsec, 17e14\nlabel, a\n1, 5",
    "timestamp, microsec, 1700000003000000, x\ncounts, interval\nstart, microsec, 1700000002000000\n"
    "counts, interval\nlabel, a\n1, 5",
    "",
    # a unit holds for the records after it (the next one has no latencyunit line), read or skipped, wherever
    # in the record the line stands, and when the bulk reader hands the record to the line reader
    "timestamp, microsec, 1700000003000000, x\nlatencyunit, microsec\nlabel, a\n1, 5",
    "timestamp, microsec, 1700000003000000, x\nlabel, a\n1, 5\nLatencyUnit, nanosec\n2, 5",
    "timestamp, microsec, 1700000003000000, x\nlatencyunit, microsec\nlabel, a\n1, +5",
    "timestamp, microsec, 1700000003000000, x\nlatencyunit, microsec\nlabel, a\n1, 5\nlatencyunit, parsecs",
    "timestamp, microsec, 1700000003000000, x\nlatencyunit, microsec\nlabel, a\n9007199254740992, 1, 1\n"
    "<end record>\n<begin record>\ntimestamp, microsec, 1700000004000000, x\nlatencyunit, nanosec\nlabel, a\n1, 5\n"
    "<end record>\n<begin record>\ntimestamp, microsec, 1700000005000000, x\nlabel, a\n1, 5",
    "latencyunit, microsec\nlabel, a\n1, 5\n<end record>\n<begin record>\nlabel, a\n1, 7",
]


@pytest.mark.parametrize("record", EDGE_RECORDS)
def test_records_that_decide_the_path_read_as_line_by_line(record: str) -> None:
    good = "<begin record>\ntimestamp, microsec, {}, d\nlabel, a\n1, 5\n<end record>\n"
    body = f"{record}\n" if record else ""
    text = good.format(1700000001000000) + f"<begin record>\n{body}<end record>\n" + good.format(1700000009000000)
    assert by_chunks(text, []) == by_lines(text)
    assert by_chunks(text, [len(good) + 20]) == by_lines(text)
    last = good.format(1700000009000000)
    assert by_chunks(text, [len(text) - len(last)]) == by_lines(text)  # the last record read after the others


#: Records to cut off mid-line (at every character), and the records that follow the cut.
CUT_RECORDS = [
    "timestamp, microsec, 1700000002000000, d\nlabel, a\nlatencyunit, microsec\n1, 5\n2, 7\n",
    "timestamp, microsec, 1700000002000000, d\ncounts, interval\nstart, microsec, 1700000001000000\nlabel, b\n"
    "1, 5, 0.5\n",
]
AFTER_CUT = ["timestamp, microsec, 1700000003000000, d\nlabel, a\n1, 6\n", "label, a\n1, 6\n", "label, b\n1, 6\n"]


@pytest.mark.parametrize("marker", ["<begin record>", "<end record>"])
@pytest.mark.parametrize("after", AFTER_CUT)
@pytest.mark.parametrize("record", CUT_RECORDS)
def test_a_record_cut_off_by_a_marker_is_the_one_skipped_on_both_paths(record: str, after: str, marker: str) -> None:
    """`2, <begin record>`: the cut record is skipped and said, the next one is read; `2, <end record>`: the cut
    record is skipped, the lines after it up to the next `<begin record>` are noise. Both paths alike, the cut in any
    line, after a canonical record whose header lines the bulk reader knows."""
    good = "<begin record>\ntimestamp, microsec, {}, d\nlabel, a\n1, 5\n<end record>\n"
    whose = "the next record's" if marker == "<begin record>" else "its"
    for k in range(1, len(record)):
        if record[k - 1] == "\n":
            continue  # the marker on a line of its own
        text = (good.format(1700000001000000) + "<begin record>\n" + record[:k] + f"{marker}\n" + after
                + "<end record>\n" + good.format(1700000009000000))
        lines = by_lines(text)
        assert by_chunks(text, []) == lines and by_chunks(text, [len(text) // 2]) == lines
        assert [i[1] for i in lines if i[0] == "notice" and i[2]] == [
            f"t: line {7 + record[:k].count(chr(10))}: record cut off mid-line: the line ends in "
            f"{record[:k].splitlines()[-1].rstrip()!r}, then {whose} {marker}; record skipped"]
        assert lines[-1][0] == "snap" and lines[-1][6] == text.count("\n") - 4  # the last record read


def line_reads(reader: ProtocolReader) -> list[int]:
    """A list that gets an entry each time `reader` hands lines to its line reader."""
    calls: list[int] = []
    original = reader.feed

    def counting_feed(lines: Any) -> Any:
        calls.append(1)
        return original(lines)

    reader.feed = counting_feed  # type: ignore[method-assign]
    return calls


def test_canonical_records_take_the_bulk_path_and_count_right() -> None:
    rng = np.random.default_rng(3)
    parts = []
    totals = np.zeros(20, dtype=np.int64)
    for i in range(300):
        totals += rng.poisson(5, 20)
        parts.append(f"<begin record>\ntimestamp, microsec, {1_000_000 * (i + 1)}, t\nlabel, x\n"
                     + "".join(f"{1 << b}, {c}\n" for b, c in enumerate(totals)) + "<end record>\n")
    text = "".join(parts)
    reader = ProtocolReader("t")
    calls = line_reads(reader)
    items = list(reader.read_chunks([text[:5000], text[5000:]]))
    assert len(items) == 300 and not calls[:-1]  # only the final (empty) tail goes line by line
    last = items[-1]
    assert isinstance(last, Snapshot)
    assert last.counts[1:21].tolist() == totals.tolist() and last.line == 299 * 24 + 1
    assert by_chunks(text, [777, 12345]) == by_lines(text)


def test_unfinished_record_waits_for_its_end() -> None:
    reader = ProtocolReader("t")
    first = list(reader.feed_text("<begin record>\ntimestamp, microsec, 5, d\nlabel, x\n1, 3\n"))
    assert first == []
    rest = list(reader.feed_text("2, 4\n<end record>\n"))
    assert len(rest) == 1 and isinstance(rest[0], Snapshot) and rest[0].counts[1:3].tolist() == [3, 4]


def diffed_by_lines(text: str) -> list[tuple[Any, ...]]:
    return [normal(i) for i in Differ(clock=lambda: 0.0).run(ProtocolReader("t").read(text.splitlines()))]


def diffed_in_runs(text: str, cuts: list[int]) -> list[tuple[Any, ...]]:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    return [normal(i) for i in Differ(clock=lambda: 0.0).run(ProtocolReader("t").read_chunks(pieces, runs=True))]


DAY_US = 86_400_000_000


@st.composite
def cumulative_streams(draw: st.DrawFn) -> str:
    """Several labels interleaved; buckets come and go; counters sometimes drop; timestamps sometimes repeat or go
    back. Times of day (as PyLatencyMap's Oracle scripts write them) pass midnight, once or more."""
    out = []
    totals: dict[str, dict[int, int]] = {}
    time_of_day = draw(st.booleans())
    micros = DAY_US - draw(st.sampled_from([3_000_000, 600_000_000])) if time_of_day else 1_000_000
    for _ in range(draw(st.integers(1, 30))):
        label = draw(st.sampled_from(["a", "b", "c"]))
        micros += draw(st.sampled_from([1_000_000, 1_000_000, 250_000, 0, -5, -3_000_000, 3_600_000_000]))
        if time_of_day and micros >= DAY_US:
            micros -= DAY_US
        buckets = totals.setdefault(label, {})
        rows = []
        for value in draw(st.lists(st.sampled_from([0, 1, 2, 4, 8, 64]), max_size=5, unique=True)):
            buckets[value] = max(0, buckets.get(value, 0) + draw(st.integers(-3, 50)))
            rows.append(f"{value}, {buckets[value]}\n")
        out.append(f"<begin record>\ntimestamp, microsec, {micros}, d{micros}\nlabel, {label}\n{''.join(rows)}"
                   "<end record>\n")
        if draw(st.integers(0, 15)) == 0:
            out.append("<begin record>\nlabel, a\n1, x\n<end record>\n")
    return "".join(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cumulative_streams(), st.lists(st.integers(0, 3000), max_size=4))
def test_differ_takes_runs_exactly_as_one_snapshot_at_a_time(text: str, cuts: list[int]) -> None:
    assert diffed_in_runs(text, cuts) == diffed_by_lines(text)


@pytest.mark.parametrize("later", [["1"], ["1", "4"], ["4"], ["1", "2"]])
def test_a_bucket_missing_from_a_whole_later_run_keeps_its_value(later: list[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Bucket 2 is in the first chunk's run only: each later run (another chunk) keeps its last count, so it is
    neither a counter reset nor zero, as one snapshot at a time, and the runs are diffed in bulk."""
    one_by_one: list[int] = []
    push_items = Differ.push_items
    monkeypatch.setattr(Differ, "push_items", lambda self, snap: one_by_one.append(1) or push_items(self, snap))

    def record(second: int, rows: dict[str, int]) -> str:
        lines = "".join(f"{value}, {count}\n" for value, count in rows.items())
        return f"<begin record>\ntimestamp, microsec, {second}000000, d\nlabel, x\n{lines}<end record>\n"

    first = record(1, {"1": 5, "2": 7}) + record(2, {"1": 6, "2": 9})
    rest = "".join(record(3 + k, {value: 10 + k for value in later}) for k in range(3))
    found = diffed_in_runs(first + rest, [len(first)])
    assert not one_by_one
    assert found == diffed_by_lines(first + rest)
    assert not any(item[6] for item in found if item[0] == "iv")  # no reset


def _record(second: int, rows: dict[int, int]) -> str:
    lines = "".join(f"{value}, {count}\n" for value, count in rows.items())
    return f"<begin record>\ntimestamp, microsec, {second}000000, d\nlabel, x\n{lines}<end record>\n"


@pytest.mark.parametrize(("name", "after", "bulk"), [
    ("one counter drops while another grows: a reset, not a restart", [{1: 2, 2: 12}, {1: 4}, {1: 5, 2: 13}], True),
    ("a restart: every counter lower or missing", [{1: 2}, {1: 4, 2: 3}, {1: 5, 2: 12}], False),
    ("a restart with every bucket present", [{1: 2, 2: 1}, {1: 4, 2: 3}], False),
    ("a restart where a new bucket appears", [{1: 2, 4: 3}, {1: 4, 2: 3}], False),
])
def test_counter_drops_in_a_run_diff_as_one_snapshot_at_a_time(name: str, after: list[dict[int, int]], bulk: bool,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose counters drop is diffed in bulk unless a row is a restart, where missing buckets count from 0
    instead of keeping their last value (the one-by-one path decides that)."""
    one_by_one: list[int] = []
    push_items = Differ.push_items
    monkeypatch.setattr(Differ, "push_items", lambda self, snap: one_by_one.append(1) or push_items(self, snap))
    text = "".join(_record(k + 1, rows) for k, rows in enumerate([{1: 5, 2: 7}, {1: 6, 2: 9}, *after]))
    found = diffed_in_runs(text, [])
    assert bool(one_by_one) is not bulk, name
    assert found == diffed_by_lines(text), name
    assert any(item[6] for item in found if item[0] == "iv"), name  # the drop is flagged as a reset


def test_timestamp_past_64_bits_is_a_bad_record_not_a_crash() -> None:
    """Found by the fuzzer: a run of canonical records whose timestamp overflowed int64 raised OverflowError."""
    def record(micros: int, count: int) -> str:
        return f"<begin record>\ntimestamp, microsec, {micros}, d\nlabel, x\n1, {count}\n2, {count}\n<end record>\n"

    text = record(1_000_000, 1) + record(2_000_000, 3) + record(5201467111111111111464, 4) + record(3_000_000, 6)
    items = list(ProtocolReader("t.txt").read_chunks([text], runs=True))
    notices = [i for i in items if isinstance(i, Notice)]
    assert len(notices) == 1 and "t.txt" in notices[0].message and "line 14" in notices[0].message
    assert "2**62" in notices[0].message
    intervals = [iv for iv in Differ().run(items) if isinstance(iv, Interval)]
    assert [iv.counts[1:3].tolist() for iv in intervals] == [[2, 2], [3, 3]]
    assert by_chunks(text, [100]) == by_lines(text)


def test_a_first_record_starting_with_nul_is_read_not_crashed_on() -> None:
    """Found by the fuzzer: the first record's header, a NUL line before a digit, matched the empty cache key."""
    text = "<begin record>\ntimestamp, microsec, 5, d\n\x00754 PM\nlabel, x\n1, 3\n<end record>\n"
    text += "<begin record>\n\x00\n1, 4\n<end record>\n"
    assert by_chunks(text, []) == by_lines(text)
    assert by_chunks(text, [20, 60]) == by_lines(text)


def timed_head(draw: st.DrawFn, i: int) -> list[str]:
    """The first lines of the `i`th record, a second apart: its timestamp, then `counts, interval` with its start,
    without it, or neither (a cumulative record, which the line reader judges)."""
    head = [f"timestamp, microsec, {1_700_000_001_000_000 + i * 1_000_000}, d{i}"]
    return head + draw(st.sampled_from([["counts, interval", f"start, microsec, {1_700_000_000_000_000 + i * 10**6}"],
                                        ["counts, interval"], []]))


#: Values seen of a bucket `v` (its rows' value), right and wrong, as an `extremes` line gives them.
SEEN = st.sampled_from(["{v}.0, {v}.5", "{a}, {b}", "{b}, {a}", "{v}, {w}", "{w}, {w}", "{a}, 1e400", "{a}, {b}e0",
                        "{a},{b}", "{a}, inf", "-{a}, {b}", "{a}, {b}, {v}, {b}, {b}", "0.0, 0.0", "{a}, 1e30",
                        "{a}, {b}0"])


@st.composite
def records_with_values_seen(draw: st.DrawFn) -> str:
    """Interval records as recordings of exact sources write them (an `extremes` line before the rows), with
    lines that hold, and lines wrong in every way the line reader checks (order, bounds, sums, events, spelling)."""
    out = []
    unit = draw(st.sampled_from(["microsec", "nanosec", "millisec"]))
    source = draw(st.sampled_from(["spark", "bpf", "hdrhistogram", "oracle"]))
    for i in range(draw(st.integers(1, 6))):
        buckets = draw(st.lists(st.sampled_from([0, 1, 2, 4, 1024, 1 << 40, 3]), min_size=1, max_size=4, unique=True))
        counts = [draw(st.integers(0, 9)) for _ in buckets]
        three = draw(st.booleans())
        rows = []
        seen = []
        for v, n in zip(buckets, counts, strict=True):
            a, b = v + (v or 1) * 0.25, v + (v or 1) * 0.75
            rows.append(f"{v}, {n}" + (f", {n * (a + b) / 2!r}" if three else ""))
            if draw(st.integers(0, 3)):
                seen.append(f"{v}, " + draw(SEEN).format(v=v, w=4 * v + 4, a=a, b=b))
        line = "extremes, " + ", ".join(seen) if seen else draw(st.sampled_from(["extremes,", "extremes, 1"]))
        head = timed_head(draw, i)
        head += [f"latencyunit, {unit}", "label, exact", f"datasource, {source}"]
        place = draw(st.integers(0, 6))
        lines = head + rows
        lines.insert(len(head) if place else draw(st.integers(0, len(lines))), line)
        out.append("<begin record>\n" + "\n".join(lines) + "\n<end record>\n")
    return "".join(out)


@given(records_with_values_seen(), st.lists(st.integers(0, 3000), max_size=3))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_values_seen_read_in_bulk_as_line_by_line(text: str, cuts: list[int]) -> None:
    assert by_chunks(text, cuts) == by_lines(text)


def test_recordings_of_exact_sources_take_the_bulk_path() -> None:
    text = "".join(
        f"<begin record>\ntimestamp, microsec, {1_700_000_001_000_000 + i * 10**6}, d\ncounts, interval\n"
        f"start, microsec, {1_700_000_000_000_000 + i * 10**6}\nlatencyunit, microsec\nlabel, x\ndatasource, spark\n"
        f"extremes, 512, 600.5, 1000.0, 1024, 1024.0, 1100.25\n512, 2, 1600.5\n1024, 3, 3200.25\n<end record>\n"
        for i in range(50))
    reader = ProtocolReader("t")
    fed = line_reads(reader)
    items = list(reader.read_chunks([text], runs=True))
    assert not fed[:-1]
    assert [type(i).__name__ for i in items] == ["IntervalRun"]
    run = items[0]
    assert run.extremes is not None and run.extremes.shape == (50, 2, NSLOTS)
    assert run.extremes[0, :, 10].tolist() == [600.5 * 1e-6, 1000.0 * 1e-6]
    assert run.extremes[0, :, 11].tolist() == [1024.0 * 1e-6, 1100.25 * 1e-6]
    assert by_chunks(text, [999]) == by_lines(text)


#: A rebinned source's lines, right and wrong in every way the line reader checks (order, bounds, counts, lengths,
#: spelling, cumulative records).
SOURCE_LINES = st.sampled_from([
    ["sourcebuckets, 1000.0, 5000.0, inf", "sourcecounts, 3, 0, 1", "sourcetime, 0.25"],
    ["sourcebuckets, 1000.0, 5000.0, inf", "sourcecounts, 3, 0, 1"],
    ["sourcetime, 1.5"],
    ["sourcetime, 0.0"],
    ["sourcebuckets, 0.5, 2.0, 1e3", "sourcecounts, 1, 2, 3", "sourcetime, 1e-05"],
    ["sourcebuckets, 5000.0, 1000.0, inf", "sourcecounts, 3, 0, 1"],
    ["sourcebuckets, 1000.0, 1000.0", "sourcecounts, 3, 0"],
    ["sourcebuckets, 1000.0, 5000.0", "sourcecounts, 3, 0, 1"],
    ["sourcecounts, 3, 0, 1"],
    ["sourcebuckets, 1000.0, 5000.0"],
    ["sourcetime, -1.0"],
    ["sourcetime, inf"],
    ["sourcetime, 1e400"],
    ["sourcebuckets, -1.0, 5.0", "sourcecounts, 1, 1"],
    ["sourcebuckets, 1000.0,5000.0", "sourcecounts, 3,0"],
    ["sourcecounts, 3, 0", "sourcebuckets, 1000.0, 5000.0"],
    ["sourcetime, 0.5", "sourcebuckets, 1000.0, 5000.0", "sourcecounts, 3, 0"],
    ["sourcebuckets, 1000.0, 5000.0", "sourcecounts, 3, 4611686018427387904"],
    ["sourcebuckets, 1000.0, 5000.0", "sourcecounts, 3, 99999999999999999999"],
    ["sourcebuckets, nan, 5000.0", "sourcecounts, 3, 1"],
    ["sourcetime, 0.5", "sourcetime, 0.25"],
    ["SourceTime, 0.5"],
])


@st.composite
def records_with_source_buckets(draw: st.DrawFn) -> str:
    """Interval records as recordings of rebinned sources write them (Prometheus, OpenTelemetry, HdrHistogram: the
    source's lines before the rows), among ones the line reader must judge."""
    out = []
    for i in range(draw(st.integers(1, 6))):
        head = timed_head(draw, i)
        head += ["latencyunit, microsec", f"label, {draw(st.sampled_from(['svc', 'db']))}", "datasource, prometheus"]
        rows = draw(st.sampled_from([["512, 3", "4096, 1"], ["512, 3, 0.002", "4096, 1, 0.005"], ["1024, 0"], []]))
        lines = head + draw(SOURCE_LINES) + rows
        if draw(st.integers(0, 5)) == 0:
            lines.insert(draw(st.integers(0, len(lines))), "extremes, 512, 600.0, 900.0")
        out.append("<begin record>\n" + "\n".join(lines) + "\n<end record>\n")
    return "".join(out)


@given(records_with_source_buckets(), st.lists(st.integers(0, 3000), max_size=3))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_source_buckets_read_in_bulk_as_line_by_line(text: str, cuts: list[int]) -> None:
    assert by_chunks(text, cuts) == by_lines(text)


def test_recordings_of_rebinned_sources_take_the_bulk_path_and_accumulate_alike(tmp_path: Path) -> None:
    """A recording of Prometheus columns (source buckets and exact sums) is read in bulk, as one run, and the report
    made of it is the report made of the same intervals one by one (source totals, times fitted to the sums)."""
    from latencymap.cli.common import REGISTRY
    from latencymap.core.accumulator import accumulate
    from latencymap.flow.pipeline import column_flow, input_flow
    from latencymap.outputs.json_text import dumps
    from latencymap.outputs.report import build_report

    text = "".join(
        f"<begin record>\ntimestamp, microsec, {1_700_000_001_000_000 + i * 10**6}, d\ncounts, interval\n"
        f"start, microsec, {1_700_000_000_000_000 + i * 10**6}\nlatencyunit, microsec\nlabel, {'ab'[i % 2]}\n"
        f"datasource, prometheus\nsourcebuckets, 1000.0, 5000.0, inf\nsourcecounts, {i % 5}, 2, {i % 3}\n"
        + ("" if i % 7 == 3 else f"sourcetime, {0.001 * i!r}\n")
        + f"512, {i % 5}\n2048, 2\n8192, {i % 3}\n<end record>\n"
        for i in range(120))
    reader = ProtocolReader("t")
    fed = line_reads(reader)
    items = list(reader.read_chunks([text], runs=True))
    assert not fed[:-1] and [type(i).__name__ for i in items] == ["IntervalRun"]
    path = tmp_path / "prom.txt"
    path.write_text(text)
    bulk = accumulate(column_flow([str(path)], REGISTRY))
    one = accumulate(input_flow([str(path)], REGISTRY))
    assert set(bulk.sources) == set(one.sources) and len(bulk.sources) == 2
    assert dumps(build_report(bulk, arrays=True)) == dumps(build_report(one, arrays=True))


#: The lines a plain record starts with: its timestamp (each spelling of its date), and its interval start or none.
PLAIN_TIMESTAMP = st.sampled_from([
    "timestamp, microsec, {t}, d", "timestamp, musec, {t},Mon 1 Jan", "timestamp, microsec, {t}",
    "timestamp, microsec, {t}, a, date, with commas", "timestamp, microsec, {t},   ",
    "timestamp, microsec, {t}, \x1b[2J", "timestamp, microsec, {t}, " + "y" * 230, "timestamp, microsec, 0{t}, d",
    "timestamp, microsec, 999999999999999999, d", "timestamp, microsec, {t}, \u00e9t\u00e9",
])
PLAIN_START = st.sampled_from([[], ["counts, interval", "start, microsec, {s}"], ["counts, interval"],
                               ["counts, cumulative"], ["counts, interval", "start, microsec, 0{s}"]])
#: Header lines records repeat: with a unit of their own or taking the last one given, once right, once another's.
PLAIN_BLOCKS = st.sampled_from([
    ["label, a"], ["latencyunit, microsec", "label, a"], ["latencyunit, nanosec", "label, a"],
    ["label, b", "datasource, oracle"], ["latencyunit, millisec", "label, a", "datasource, bpf"],
    ["counts, interval", "label, a"], ["label, a", "flags, reset"], [], ["label, a", "extremes,"], ["label, \u0663"],
    ["LatencyUnit , nanosec", "label, c"],
])


@st.composite
def repeated_records(draw: st.DrawFn) -> str:
    """Records that repeat a few header blocks (the plain path reads a block it knows), each with its own timestamp,
    start and rows, among the rows that send a record to the line reader."""
    blocks = draw(st.lists(PLAIN_BLOCKS, min_size=1, max_size=3))
    out = []
    for i in range(draw(st.integers(1, 12))):
        t, s = 1_700_000_001_000_000 + i * 10**6, 1_700_000_000_000_000 + i * 10**6
        lines = [draw(PLAIN_TIMESTAMP).format(t=t)] + [line.format(s=s) for line in draw(PLAIN_START)]
        lines += draw(st.sampled_from(blocks))
        lines += draw(st.lists(ROW, min_size=1, max_size=4) | st.lists(ROW3, min_size=1, max_size=4)
                      | st.sampled_from([["1, 5", "2, 7"], ["1, 5", "<x>"], ["8, 1", "latencyunit, nanosec"]]))
        out.append("<begin record>\n" + "\n".join(lines) + "\n<end record>\n")
    return "".join(out)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(repeated_records(), st.lists(st.integers(0, 3000), max_size=4))
def test_records_repeating_their_header_read_in_bulk_as_line_by_line(text: str, cuts: list[int]) -> None:
    assert by_chunks(text, cuts) == by_lines(text)


def test_records_repeating_their_header_are_read_without_parsing_it_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a block of header lines is known, the records after it that repeat it are queued by one regex match each:
    only the first record, and the next (which takes the first one's unit), go through `_canonical`."""
    from latencymap.protocol.bulk import FastPath

    seen: list[int] = []
    original = FastPath._canonical

    def counted(self: FastPath, *args: Any) -> bool:
        seen.append(1)
        return original(self, *args)

    monkeypatch.setattr(FastPath, "_canonical", counted)
    text = "".join(f"<begin record>\ntimestamp, microsec, {1_000_000 * (i + 1)}, t\nlatencyunit, microsec\nlabel, x\n"
                   f"datasource, bpf\n1, {i}\n2, {2 * i}\n<end record>\n" for i in range(200))
    items = list(ProtocolReader("t").read_chunks([text[:3000], text[3000:]]))
    assert len(items) == 200 and len(seen) <= 3
    assert by_chunks(text, [3000]) == by_lines(text)


def test_a_datasource_a_letter_from_oracle_is_said_once_read_in_bulk_or_line_by_line() -> None:
    """`datasource, orcale` was read as lower bounds, one octave off Oracle's upper bounds, without a word."""
    text = "".join(f"<begin record>\ntimestamp, microsec, {1_700_000_000_000_000 + k * 1_000_000}\ndatasource, "
                   f"{ds}\n" + ORACLE_LABEL + f"1, {5 + k}\n<end record>\n" for k, ds in enumerate(
                       ("orcale", "orcale", "trace", "oracle19c")))
    items = by_chunks(text, [])
    notes = [i[1] for i in items if i[0] == "notice"]
    assert len(notes) == 2 and items == by_lines(text)
    assert "datasource 'orcale' is not 'oracle': read as lower bounds ([v, 2v))" in notes[0]
    assert "datasource 'oracle19c' is not 'oracle'" in notes[1]  # `trace` is no misspelling of it
