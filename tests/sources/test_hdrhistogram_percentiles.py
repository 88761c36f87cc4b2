"""HdrHistogram percentile distributions (`.hgrm`): the real library's printout, wrk2's layout, CSV, bad input."""

from __future__ import annotations

import io

import numpy as np
import pytest
from formats_support import FIXTURES, intervals, notices, read_items, report_json
from hdr_support import library_histogram

from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval
from latencymap.flow.inputs import SNIFF_LINES, choose_format
from latencymap.flow.pipeline import input_flow
from latencymap.plugins import load_registry
from latencymap.sources.hdrhistogram_percentiles import HdrPercentilesFormat

NS = np.concatenate([np.random.default_rng(1).lognormal(np.log(2e5), 0.5, 5000),
                     np.random.default_rng(2).lognormal(np.log(3e7), 0.3, 50)]).astype(np.int64)


def printout(values: np.ndarray, csv: bool = False) -> str:
    """What the library's outputPercentileDistribution prints for these nanosecond values, in milliseconds."""
    out = io.BytesIO()
    library_histogram(values.tolist()).output_percentile_distribution(out, 1e6, use_csv=csv)
    return out.getvalue().decode()


def points(text: str) -> list[tuple[float, int]]:
    """(value ms, total count) of every printed row, as the text says."""
    rows = []
    for line in text.splitlines():
        fields = line.replace(",", " ").split()
        if len(fields) >= 3 and fields[0][0].isdigit():
            rows.append((float(fields[0]), int(float(fields[2]))))
    return rows


def test_the_library_printout_keeps_every_event_between_its_own_points() -> None:
    text = printout(NS)
    items = read_items(HdrPercentilesFormat, text, "run.hgrm")
    (col,) = intervals(items)
    assert col.stream.label == "run.hgrm" and col.stream.unit == "microsec" and col.stream.datasource == "hdrhistogram"
    assert int(col.counts.sum()) == len(NS)
    assert col.end - col.start == pytest.approx(1.0)
    assert [m.split(": ", 1)[1] for m in notices(items)] == [
        "a percentile distribution does not say how long it covers: its column is 1s long (--interval), and rates "
        "are per that"]
    # At every row edge E (a power of two µs) our events below E lie between the printed totals around E: those
    # of the last point at or below E and of the first point at or above it. The true values do too.
    rows = points(text)
    below = np.concatenate(([0], np.cumsum(col.counts)))
    ordered = np.sort(NS)
    for k in range(1, NSLOTS):
        edge_ms = 2.0 ** (k - 1) / 1000
        low = max((t for v, t in rows if v <= edge_ms), default=0)
        high = min((t for v, t in rows if v >= edge_ms), default=len(NS))
        assert low <= below[k] <= high, (k, low, below[k], high)
        true_below = int(np.searchsorted(ordered, edge_ms * 1e6))  # true values below the edge
        assert low <= true_below <= high
    # The far mode (about 30 ms) stays a band of its own, and the rows between 2 and 8 ms stay near empty.
    assert int(col.counts[15:17].sum()) >= 40 and int(col.counts[12:14].sum()) <= 5


def test_csv_printout_reads_the_same() -> None:
    plain = intervals(read_items(HdrPercentilesFormat, printout(NS), "a"))[0]
    csv = intervals(read_items(HdrPercentilesFormat, printout(NS, csv=True), "a"))[0]
    assert csv.counts.tolist() == plain.counts.tolist()


def _distribution(table: str, title: str = "Recorded Latency", summary: tuple[str, ...] = (" 50.000%  199.00us",
                  "100.000%   57.70ms")) -> list[str]:
    """One of wrk2's printed distributions: its title, its own percentiles, the spectrum (`inf` on the last row)."""
    lines = table.splitlines()
    lines[0] = "       Value   Percentile   TotalCount 1/(1-Percentile)"
    body = [line if not line.strip().startswith(tuple("0123456789")) or len(line.split()) == 4
            else line + "          inf" for line in lines]
    return [f"  Latency Distribution (HdrHistogram - {title})", *summary, "", "  Detailed Percentile spectrum:", *body,
            "----------------------------------------------------------"]


def _wrk2(table: str, span: str, *more: list[str], summary: tuple[str, ...] | None = None) -> str:
    """wrk2 --latency around a table, as its source prints it (header spacing, `inf`, the requests line); `more`:
    further distributions of the same run (`-U`)."""
    first = _distribution(table) if summary is None else _distribution(table, summary=summary)
    return "\n".join([
        "Running 10s test @ http://127.0.0.1:8080/", "  2 threads and 16 connections",
        "  Thread calibration: mean lat.: 0.655ms, rate sampling interval: 10ms", *first,
        *(line for lines in more for line in lines),
        f"  5050 requests in {span}, 1.23MB read", "Requests/sec:    505.00", ""])


def test_wrk2_output_two_runs_two_columns_each_as_long_as_its_run() -> None:
    first, second = printout(NS), printout(NS[:3000])
    text = _wrk2(first, "10.00s") + _wrk2(second, "1.00m")
    head = text.splitlines()[:SNIFF_LINES]
    assert choose_format(load_registry(), head, "wrk2.txt", None).name == "hgrm"
    items = read_items(HdrPercentilesFormat, text, "wrk2.txt")
    assert notices(items) == []
    cols = intervals(items)
    assert [c.end - c.start for c in cols] == pytest.approx([10.0, 60.0])
    assert [int(c.counts.sum()) for c in cols] == [5050, 3000]
    assert cols[0].end == pytest.approx(cols[1].start)
    alone = intervals(read_items(HdrPercentilesFormat, first, "x"))[0]
    assert cols[0].counts.tolist() == alone.counts.tolist()


def test_wrk2_with_many_threads_is_found_past_the_sniffed_lines_and_without_latency_says_so(tmp_path) -> None:
    calibration = "  Thread calibration: mean lat.: 0.655ms, rate sampling interval: 10ms"
    many = _wrk2(printout(NS), "10.00s").replace(calibration, "\n".join([calibration] * (SNIFF_LINES + 50)))
    path = tmp_path / "wrk2.txt"
    path.write_text(many)
    readers: list = []
    (col,) = [i for i in input_flow([str(path)], load_registry(), readers=readers) if isinstance(i, Interval)]
    assert readers[0].name == "hgrm" and int(col.counts.sum()) == 5050
    without = "\n".join(line for line in many.splitlines() if "Percentile" not in line) + "\n"
    items = read_items(HdrPercentilesFormat, without, "plain.txt")
    assert intervals(items) == [] and notices(items) == [
        "plain.txt: expected wrk2's 'Detailed Percentile spectrum' (wrk2 prints it with --latency, -L); none found"]


def test_bad_distributions_are_named_and_left_out_and_the_rest_is_read() -> None:
    good = printout(NS[:100])
    rows = good.splitlines()
    at = next(i for i, line in enumerate(rows) if line.strip().startswith("0.") and i > 3)
    down = rows.copy()
    value, pct, _, *rest = down[at + 1].split()
    down[at + 1] = f"{value} {pct} {int(down[at].split()[2]) - 1} {' '.join(rest)}"  # fewer than the row before
    footer = [line.replace("TotalCount     =      100.000", "TotalCount     =      999.000") for line in rows]
    garbage = rows.copy()
    garbage.insert(at, "       abc 0.5 12 2.0")
    text = "\n".join([*down, *footer, *garbage, *rows]) + "\n"
    items = read_items(HdrPercentilesFormat, text, "bad.hgrm")
    said = [m for m in notices(items) if "left out" in m]
    assert len(said) == 2, said
    assert said[0].startswith("bad.hgrm: distribution at line 1: line ") and "values and counts must not go down" \
        in said[0]
    assert "its footer says Total count 999, its last row 100" in said[1]
    (skipped,) = [m for m in notices(items) if "skipped" in m]
    assert skipped.endswith("expected '<value> <percentile> <total count> [1/(1-percentile)]', got "
                            "'abc 0.5 12 2.0'; skipped")
    # The distribution with a bad line is read whole (its next row counts what the line would have), as is the last.
    assert [int(c.counts.sum()) for c in intervals(items)] == [100, 100]


def test_sniffing_takes_the_header_and_nothing_else() -> None:
    assert HdrPercentilesFormat.sniff(['"Value","Percentile","TotalCount","1/(1-Percentile)"'])
    assert HdrPercentilesFormat.sniff(["       Value     Percentile TotalCount 1/(1-Percentile)"])
    assert not HdrPercentilesFormat.sniff(["Value Percentile", "0.5 0.1 3 1.1"])


@pytest.mark.parametrize("span", ["0.00s", "0.0000000001us", "9" * 400 + "h"])
def test_wrk2_run_length_out_of_range_is_told_and_the_column_is_interval_long(span: str) -> None:
    """A run of 0, of a far-below-microsecond or of an infinite length would make an empty or endless column."""
    items = read_items(HdrPercentilesFormat, _wrk2(printout(NS), span), "wrk2.txt")
    (col,) = intervals(items)
    assert col.end - col.start == pytest.approx(1.0) and int(col.counts.sum()) == 5050
    assert any("out of range" in n and "line " in n for n in notices(items))


def test_wrk2_uncorrected_distribution_is_its_own_stream_over_the_same_run() -> None:
    """`wrk2 -L -U` prints the run twice (corrected, then uncorrected): two streams side by side, not one counted
    twice."""
    uncorrected = _distribution(printout(NS // 2), "Uncorrected Latency (measured without taking delayed starts "
                                "into account)")
    items = read_items(HdrPercentilesFormat, _wrk2(printout(NS), "10.00s", uncorrected), "wrk2.txt")
    assert notices(items) == []
    recorded, raw = intervals(items)
    assert (recorded.stream.label, raw.stream.label) == ("wrk2.txt", "wrk2.txt (uncorrected latency)")
    assert (recorded.start, recorded.end) == (raw.start, raw.end) and recorded.end - recorded.start == \
        pytest.approx(10.0)
    assert [int(c.counts.sum()) for c in (recorded, raw)] == [5050, 5050]
    assert int(np.argmax(raw.counts)) < int(np.argmax(recorded.counts))  # the uncorrected values are halved


def test_wrk2_own_percentiles_fix_the_tail_and_the_footer_mean_gives_the_time(tmp_path) -> None:
    """The spectrum's tail points are far apart (1% of events between about 1 and 17 ms): wrk2's own p99 line
    pins the percentile there (within the last event's share of the straight line histogram_quantile draws up to
    it); the footer's mean times the count is the time waited."""
    library = library_histogram(NS.tolist())
    summary = tuple(f"{q:7.3f}%{library.get_value_at_percentile(q) / 1e6:>10.2f}ms" for q in (50, 90, 99, 99.9))
    path = tmp_path / "wrk2.txt"
    path.write_text(_wrk2(printout(NS), "10.00s", summary=summary))
    total = report_json(path)["streams"][0]["total"]
    for name, q in (("p99", 99), ("p999", 99.9)):
        printed = round(library.get_value_at_percentile(q) / 1e6, 2) / 1000
        assert total[f"{name}_s"] == pytest.approx(printed, rel=0.05), name
    assert total["time_s"] == pytest.approx(library.get_mean_value() / 1e9 * len(NS), rel=1e-3)
    path.write_text(_wrk2(printout(NS), "10.00s", summary=()))  # without them: the straight line across the gap
    assert report_json(path)["streams"][0]["total"]["p99_s"] > 2 * library.get_value_at_percentile(99) / 1e9


def test_histogram_log_processors_start_time_and_range_place_the_column(tmp_path) -> None:
    """Java's HistogramLogProcessor heads each distribution with its range (relative to StartTime) and StartTime:
    the column starts there, and is as long as a finite range; not at the time it is read."""
    java = report_json(FIXTURES / "hdrhistogram" / "java" / "int_tagged_us.read.hgrm")["streams"][0]
    assert java["start"] == 1795651200.25 and java["end"] == 1795651201.25  # <Infinite>: --interval long
    table = printout(NS)
    text = "".join(f"#[Overall percentile distribution between {a:.3f} and {b:.3f} seconds (relative to StartTime)]\n"
                   f"#[StartTime: 1700000000.000 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]\n{table}"
                   for a, b in ((10, 20), (20, 50)))
    items = read_items(HdrPercentilesFormat, text, "processor.hgrm")
    assert notices(items) == []
    assert [(c.start, c.end, int(c.counts.sum())) for c in intervals(items)] == [
        (1_700_000_010.0, 1_700_000_020.0, len(NS)), (1_700_000_020.0, 1_700_000_050.0, len(NS))]


@pytest.mark.parametrize("csv", [False, True])
def test_a_table_cut_before_its_end_says_its_tail_is_missing(tmp_path, csv: bool) -> None:
    """A copy cut before its footer read as a whole distribution with no tail; the only sign was one skipped line
    (the row cut in two). Now a note says so, and --strict fails on it. A table whose footer alone is lost (its last
    row at percentile 1) lost no event."""
    from click.testing import CliRunner

    from latencymap.cli.main import main

    whole = (FIXTURES / "hdrhistogram" / "service_ms.hgrm").read_text() if not csv else printout(NS, csv=True)
    lines = whole.splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if points(line))  # the percentile-1 row
    path = tmp_path / "cut.hgrm"
    path.write_text("".join(lines[:last - 1]) + lines[last - 1][:12])  # cut inside the row before it
    items = read_items(HdrPercentilesFormat, path.read_text(), "cut.hgrm")
    value, total = points(lines[last - 2])[0]
    share = float(lines[last - 2].replace(",", " ").split()[1])
    why = (f"its last row, line {last - 1}, is at percentile {share:.6g}, not 1" if csv else
           f"no '#[Mean' / '#[Max' footer after its last row, line {last - 1}, at percentile {share:.6g}")
    assert notices(items)[-1] == (f"cut.hgrm: distribution at line 1: the percentile table ended early ({why}): "
                                  f"the tail past {value:g} ms ({total:,} events read) is missing from its column")
    assert [int(c.counts.sum()) for c in intervals(items)] == [total]
    assert CliRunner().invoke(main, ["report", "--strict", str(path)]).exit_code == 2
    path.write_text("".join(lines[:last + 1]))  # the footer alone is lost
    assert not [n for n in notices(read_items(HdrPercentilesFormat, path.read_text(), "x")) if "ended early" in n]
