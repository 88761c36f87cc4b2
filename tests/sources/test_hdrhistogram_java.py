"""HdrHistogram logs written by the Java library itself (DoubleHistograms, tags), read as Java's own reader reads them.

fixtures/hdrhistogram/java holds logs written by HdrHistogram 2.2.2 and, beside each, what Java's
HistogramLogReader read back (NAME.reference.json, by Reference.java). The live test writes the same logs again
with the library installed here (Debian's libhdrhistogram-java, 2.1.11, in CI) and compares with its reading.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from formats_support import FIXTURES, intervals, notices, read_items
from skips_support import need_binary, skip_missing

from latencymap.cli.common import REGISTRY
from latencymap.core.accumulator import Accumulator, accumulate
from latencymap.core.buckets import NSLOTS
from latencymap.core.deltas import apart_label
from latencymap.core.errors import InputError
from latencymap.core.model import Interval
from latencymap.core.source_totals import SourceTotals
from latencymap.core.units import unit_seconds
from latencymap.flow.pipeline import input_flow
from latencymap.sources.hdrhistogram import HdrHistogramFormat
from latencymap.sources.hdrhistogram_percentiles import HdrPercentilesFormat

JAVA = FIXTURES / "hdrhistogram" / "java"
#: The unit each log's values were recorded in (LogWriter.java).
UNITS = {"double_ms": "millisec", "double_tagged": "millisec", "double_corrected": "millisec",
         "double_int_counts": "millisec", "int_tagged_us": "microsec"}
#: LogWriter.java's START_MS: every log's StartTime.
START_S = 1_795_651_200.25
JAR_HINT = "apt-get install libhdrhistogram-java (.ci/install-system.sh), or set HDRHISTOGRAM_JAR"


def _slot(value: float) -> int:
    """latencymap's log2 slot of a value in the stream unit: [2**(s-1), 2**s), 0 below 1."""
    return 0 if value < 1 else min(math.frexp(value)[1], NSLOTS - 1)


def _expected(interval: dict[str, Any], scale: float) -> tuple[np.ndarray, float]:
    """Counts per slot, and Σ count x median equivalent value (stream units), of Java's buckets of one interval.

    Each bucket is [lowest, highest] equivalent values; a bucket whose range crosses a power of two in the
    stream unit sits where its median does, as the reader places it.
    """
    ratio = interval.get("integer_to_double_value_conversion_ratio", 1.0)
    double = interval["class"].endswith("DoubleHistogram")
    counts = np.zeros(NSLOTS, dtype=np.int64)
    total = 0.0
    for _to, _from, count, lowest, highest, _integer in interval["buckets"]:
        low = round(lowest / ratio)
        size = round((highest - lowest) / ratio) + (0 if double else 1)
        median = (low + (size >> 1)) * ratio * scale
        ends = {_slot(lowest * scale), _slot(highest * scale)}
        counts[ends.pop() if len(ends) == 1 else _slot(median)] += count
        total += count * median
    return counts, total


def _check_against_java(log: Path, reference: dict[str, Any], unit: str,
                        joined: tuple[int, int] | None = None) -> list[Interval]:
    """Read `log` as a user does (`--unit`) and compare every interval with Java's reading of it. `joined`: (k, N),
    the log is two joined with `cat`, the second's first interval Java's k-th, its first line N: its intervals are
    another run of their stream, `LABEL [LOG, from line N]`."""
    items = read_items(HdrHistogramFormat, log.read_text(), str(log), unit=unit)
    assert not [m for m in notices(items) if "line skipped" in m or "left empty" in m], notices(items)
    got = intervals(items)
    java = reference["intervals"]
    assert len(got) == len(java)
    for column, interval in zip(got, java, strict=True):
        stream_unit = column.stream.unit
        assert stream_unit == ("nanosec" if interval["class"].endswith("DoubleHistogram") else unit)
        label = interval["tag"] or log.name
        apart = joined is not None and interval["index"] >= joined[0]
        assert column.stream.label == (apart_label(label, str(log), joined[1]) if joined and apart else label)
        scale = round(unit_seconds(unit) / unit_seconds(stream_unit))
        counts, total = _expected(interval, scale)
        where = f"{log.name} interval {interval['index']}"
        assert column.counts.tolist() == counts.tolist(), where
        assert int(column.counts.sum()) == interval["total_count"], where
        assert column.time.sum() == pytest.approx(total * unit_seconds(stream_unit), rel=1e-12, abs=1e-300), where
        if interval["total_count"]:  # Java's mean is Σ count x median / count: the same time spent
            assert column.time.sum() == pytest.approx(
                interval["mean"] * interval["total_count"] * unit_seconds(unit), rel=1e-9), where
        assert round(column.start * 1000) == interval["start_timestamp_ms"], where
        assert round(column.end * 1000) == interval["end_timestamp_ms"], where
    return got


@pytest.mark.parametrize("name", sorted(UNITS))
def test_java_written_logs_read_as_javas_own_reader_reads_them(name: str) -> None:
    reference = json.loads((JAVA / f"{name}.reference.json").read_text())
    _check_against_java(JAVA / f"{name}.hlog", reference, UNITS[name])


#: Logs joined with `cat` (the first's name, the second's): the same log twice (tagged, StartTime only), and two
#: logs of the same 10 s (StartTime and BaseTime lines).
JOINED = {"twice_us": ("int_tagged_us", "int_tagged_us"), "ms_and_corrected": ("double_ms", "double_corrected")}


def _joined(folder: Path, name: str) -> tuple[Path, tuple[int, int]]:
    """The logs of `JOINED[name]` in `folder` joined in one file there, and where the second starts: (its first
    interval's index, its first line)."""
    first, second = ((folder / f"{log}.hlog").read_text() for log in JOINED[name])
    path = folder / f"{name}.hlog"
    path.write_text(first + second)
    lines = first.splitlines()
    return path, (sum(1 for line in lines if line[:1].isdigit() or line.startswith("Tag=")), len(lines) + 1)


@pytest.mark.parametrize("name", sorted(JOINED))
def test_java_logs_joined_with_cat_keep_their_own_times_in_runs_apart(name: str, tmp_path: Path) -> None:
    """Two Java-written logs of the same time joined with `cat` (two hosts' logs, a log twice): Java's reader reads
    each interval at its own time; latencymap moved the second log's after the first's (one stream twice as long).
    Its intervals now keep Java's times, in a run of their own per stream, said.
    Both logs here have the same StartTime and BaseTime, so Java reads the joined file as each alone."""
    for log in JOINED[name]:
        shutil.copy(JAVA / f"{log}.hlog", tmp_path)
    path, joined = _joined(tmp_path, name)
    references = [json.loads((JAVA / f"{log}.reference.json").read_text()) for log in JOINED[name]]
    java = [*references[0]["intervals"], *references[1]["intervals"]]
    for k, interval in enumerate(java):
        interval["index"] = k
    unit = UNITS[JOINED[name][0]]
    _check_against_java(path, {"intervals": java}, unit, joined)
    said = notices(read_items(HdrHistogramFormat, path.read_text(), str(path), unit=unit))
    assert not [n for n in said if "placed after" in n]
    apart = [n for n in said if "goes back into the time of its earlier intervals" in n]
    assert len(apart) == len({i["tag"] for i in java}) and all(f"from line {joined[1]}]'" in n for n in apart)


def _check_zero_lengths_against_java(log: Path, reference: dict[str, Any]) -> None:
    """zero_length.hlog (LogWriter.java): each stream's events, per slot, and time spent are Java's, its intervals of
    length 0.000 joined to the stream's next one (or, the last, given half a millisecond), each said."""
    items = read_items(HdrHistogramFormat, log.read_text(), "z.hlog")
    got = intervals(items)
    for tag, label, spans in ((None, "z.hlog", [(0, 1), (1, 2), (2, 3), (3, 3.0005)]), ("gc", "gc", [(0, 1), (1, 2)])):
        java = [i for i in reference["intervals"] if i["tag"] == tag]
        columns = [c for c in got if c.stream.label == label]
        got_spans = [t - START_S for c in columns for t in (c.start, c.end)]
        assert got_spans == pytest.approx([t for span in spans for t in span], abs=1e-6), label
        assert not any(c.gap for c in columns)
        expected = [_expected(i, 1) for i in java]
        assert sum(c.counts for c in columns).tolist() == sum(e[0] for e in expected).tolist(), label
        assert sum(int(c.counts.sum()) for c in columns) == sum(i["total_count"] for i in java) > 0, label
        spent = sum(float(c.time.sum()) for c in columns if c.time is not None)
        assert spent == pytest.approx(sum(e[1] for e in expected) * 1e-9, rel=1e-12), label
        assert spent == pytest.approx(sum(i["mean"] * i["total_count"] for i in java) * 1e-9, rel=1e-9), label
        for c in columns:  # each column's own sub-buckets hold its events
            assert c.source_buckets is not None and int(c.source_buckets.counts.sum()) == int(c.counts.sum())
    assert notices(items) == [
        "z.hlog: line 7: an interval of length 0.000 s (shorter than the log's resolution, 0.001 s): its events join "
        "the stream's next interval (line 9), whose column starts at 1.000",
        "z.hlog: lines 8, 10, 12: gc: intervals of length 0.000 s (shorter than the log's resolution, 0.001 s): their "
        "events join the stream's next interval (line 14), whose column starts at 1.000",
        "z.hlog: line 13: an interval of length 0.000 s (shorter than the log's resolution, 0.001 s), and no later "
        "interval of its stream follows: its column starts at 3.000 and lasts 0.0005 s (half the log's resolution)"]


def test_intervals_java_writes_with_length_zero_lose_no_event() -> None:
    """Java writes `1.000,0.000,...` for an interval that starts and ends in one millisecond, and its reader reads
    its events; latencymap skipped such lines ("expected a positive interval length"), and lost 25 of gc's 55."""
    _check_zero_lengths_against_java(JAVA / "zero_length.hlog",
                                     json.loads((JAVA / "zero_length.reference.json").read_text()))


@pytest.mark.parametrize("name", sorted(UNITS))
def test_each_intervals_own_buckets_give_javas_percentiles(name: str) -> None:
    """Each interval's sub-buckets (`source_buckets`) give Java's `getValueAtPercentile` within the sub-bucket it
    falls in, DoubleHistograms whose conversion ratio changes from interval to interval included; and a stream's
    intervals add up on their sub-buckets (not mixed), so its overall percentiles come from them."""
    reference = json.loads((JAVA / f"{name}.reference.json").read_text())
    unit = UNITS[name]
    columns = intervals(read_items(HdrHistogramFormat, (JAVA / f"{name}.hlog").read_text(), name, unit=unit))
    checked = 0
    for column, interval in zip(columns, reference["intervals"], strict=True):
        events = interval["total_count"]
        if not events:
            assert column.source_buckets is None
            continue
        assert column.source_buckets is not None
        totals = SourceTotals(tuple(column.source_buckets.bounds))
        totals.add(column.source_buckets)
        assert totals.events == events
        scale = unit_seconds(unit) / unit_seconds(column.stream.unit)
        whole = 0 if interval["class"].endswith("DoubleHistogram") else 1
        for q, java in zip(reference["percentiles"], interval["value_at_percentile"], strict=True):
            if abs(q / 100 * events - round(q / 100 * events)) > 1e-9:
                continue  # HdrHistogram takes the nearest whole rank, histogram_quantile the rank itself
            lowest, highest = next((b[3], b[4]) for b in interval["buckets"] if b[3] <= java <= b[4])
            got = totals.percentile(q / 100) / scale
            assert abs(got - java) <= (highest - lowest + whole) * (1 + 1e-9), (interval["index"], q, got, java)
            checked += 1
    assert checked >= len(columns)
    acc = accumulate(iter(columns))
    for hist in acc.streams.values():
        source = acc.sources[hist.stream]
        assert not source.mixed and source.events == int(hist.totals().events), hist.stream.label


def test_fractions_of_a_millisecond_keep_their_rows() -> None:
    """The main mode of double_ms.hlog is 0.4 ms: in a millisecond stream it would all be one row, [0, 1 ms)."""
    got = _check_against_java(JAVA / "double_ms.hlog", json.loads((JAVA / "double_ms.reference.json").read_text()),
                              "millisec")
    counts = sum(c.counts for c in got)
    assert {c.stream.unit for c in got} == {"nanosec"}
    assert counts[_slot(250_000)] + counts[_slot(500_000)] > counts.sum() / 2  # 262µs–524µs and 524µs–1.05ms
    assert counts[_slot(1.5e9)] == 1  # the 1,500 ms value of interval 5
    empty = [c for c in got if not c.counts.any()]
    assert len(empty) == 1 and not empty[0].gap  # interval 7 recorded nothing: an empty column, not a gap
    said = notices(read_items(HdrHistogramFormat, (JAVA / "double_ms.hlog").read_text(), "d.hlog", unit="millisec"))
    assert said[0] == ("d.hlog: line 6: DoubleHistogram values, in millisec (--unit), are shown in nanosec so that "
                       "fractions of a millisecond keep their own rows")
    assert len(said) == 2 and "1 count(s) whose range crosses a power of two are placed by their median" in said[1]


def test_double_histogram_values_read_without_a_unit_say_the_default_may_be_wrong() -> None:
    """double_ms.hlog holds milliseconds (0.4 for 0.4 ms). Read without --unit, as nanoseconds, its report said
    `p50 0.397ns`, a time no clock takes, and nothing said that the unit was only the default."""
    said = notices(read_items(HdrHistogramFormat, (JAVA / "double_ms.hlog").read_text(), "d.hlog"))
    assert said[0] == ("d.hlog: line 6: DoubleHistogram values read as nanosec, --unit's default (the log does not say "
                       "its unit): a DoubleHistogram holds fractions of its unit (0.4 for 0.4 ms), and fractions of a "
                       "nanosecond are shorter than any clock times; if these are ms or µs, say --unit ms or --unit us")
    assert sum("--unit's default" in m for m in said) == 1  # once per log
    given = notices(read_items(HdrHistogramFormat, (JAVA / "double_ms.hlog").read_text(), "d.hlog", unit="nanosec"))
    assert not any("--unit" in m for m in given)  # said to be nanoseconds: nothing to doubt
    ints = notices(read_items(HdrHistogramFormat, (JAVA.parent / "service_ns.hlog").read_text(), "s.hlog"))
    assert not any("--unit" in m for m in ints)  # integer values in nanoseconds are what such logs hold


def test_the_five_kinds_of_double_histogram_encode_alike() -> None:
    got = intervals(read_items(HdrHistogramFormat, (JAVA / "double_int_counts.hlog").read_text(), "x",
                               unit="millisec"))
    by_tag: dict[str, list[list[int]]] = {}
    for column in got:
        by_tag.setdefault(column.stream.label, []).append(column.counts.tolist())
    assert sorted(by_tag) == ["concurrent", "int_counts", "packed", "plain", "short_counts"]
    assert all(columns == by_tag["plain"] for columns in by_tag.values())


def test_javas_percentile_printout_of_the_same_log_holds_every_event() -> None:
    """HistogramLogProcessor's .hgrm of double_ms.hlog (values in ms) and of int_tagged_us.hlog per tag."""
    for hgrm, log, tag, unit in (("double_ms.hgrm", "double_ms", None, "millisec"),
                                 ("double_ms.csv.hgrm", "double_ms", None, "millisec"),
                                 ("int_tagged_us.read.hgrm", "int_tagged_us", "read", "millisec"),
                                 ("int_tagged_us.write.csv.hgrm", "int_tagged_us", "write", "millisec")):
        java = json.loads((JAVA / f"{log}.reference.json").read_text())["intervals"]
        total = sum(i["total_count"] for i in java if i["tag"] == tag)
        items = read_items(HdrPercentilesFormat, (JAVA / hgrm).read_text(), hgrm, unit=unit)
        assert not [m for m in notices(items) if "skipped" in m or "left out" in m], notices(items)
        assert sum(int(c.counts.sum()) for c in intervals(items)) == total, hgrm


@pytest.mark.parametrize("hgrm", ["double_ms.hgrm", "int_tagged_us.read.hgrm", "int_tagged_us.write.hgrm"])
def test_a_printout_keeps_its_minimum_and_maximum_in_their_own_sub_buckets(hgrm: str) -> None:
    """The time a printout gives is near Java's own mean x count: double_ms's 1,500 ms maximum is 69% of it (spread
    between the last two printed values, 40.75 ms and 1,501 ms, the estimate was 0.3x)."""
    text = (JAVA / hgrm).read_text()
    mean = float(re.search(r"#\[Mean\s*=\s*([0-9.]+)", text).group(1))  # type: ignore[union-attr]
    top, total = re.search(r"#\[Max\s*=\s*([0-9.]+), Total count\s*=\s*(\d+)", text).groups()  # type: ignore[union-attr]
    acc = Accumulator()
    accumulate(iter(read_items(HdrPercentilesFormat, text, hgrm)), acc)
    (hist,) = acc.streams.values()
    counts, spent = hist.counts_in(slice(None)).sum(axis=0), hist.time_in(slice(None)).sum(axis=0)
    assert float(spent.sum()) == pytest.approx(mean * int(total) * 1e-3, rel=0.08)
    scale = 1e3  # printed in ms, read into a µs stream
    assert counts[_slot(float(top) * scale)] >= 1  # the maximum's own row
    first = float(text.split("\n\n", 1)[1].split()[0])  # the first printed value: the minimum's sub-bucket
    first_count = int(text.split("\n\n", 1)[1].split()[2])
    assert counts[_slot(first * scale)] >= first_count


def _jar() -> str:
    """The HdrHistogram jar to write logs with: $HDRHISTOGRAM_JAR, Debian's, or one in the local Maven repository."""
    candidates = [os.environ.get("HDRHISTOGRAM_JAR", ""), "/usr/share/java/hdrhistogram.jar",
                  *sorted(str(p) for p in (Path.home() / ".m2/repository/org/hdrhistogram/HdrHistogram").glob(
                      "*/HdrHistogram-*[0-9].jar"))]
    for jar in candidates:
        if jar and Path(jar).is_file():
            return jar
    skip_missing("the Java HdrHistogram library", JAR_HINT)


@pytest.mark.slow
def test_logs_written_now_by_the_installed_java_library_read_as_it_reads_them(tmp_path: Path) -> None:
    javac = need_binary("javac", remedy="apt-get install default-jdk-headless")
    java = need_binary("java", remedy="apt-get install default-jdk-headless")
    jar = _jar()
    for source in ("LogWriter.java", "Reference.java"):
        shutil.copy(JAVA / source, tmp_path)
    env = {**os.environ, "LC_ALL": "C"}
    subprocess.run([javac, "-encoding", "UTF-8", "-d", str(tmp_path / "classes"), "-cp", jar,
                    str(tmp_path / "LogWriter.java"), str(tmp_path / "Reference.java")], check=True, env=env)
    classpath = f"{jar}{os.pathsep}{tmp_path / 'classes'}"
    flags = ["-Duser.timezone=UTC", "-Duser.language=en", "-Duser.country=US", "-cp", classpath]
    subprocess.run([java, *flags, "LogWriter", str(tmp_path)], check=True, env=env, cwd=tmp_path)
    joined = {name: _joined(tmp_path, name) for name in JOINED}
    logs = [f"{name}.hlog" for name in (*sorted(UNITS), "zero_length", *JOINED)]
    subprocess.run([java, *flags, "Reference", *logs], check=True, env=env, cwd=tmp_path)
    for name, (path, where) in joined.items():  # Java's own reading of the joined file: each interval at its time
        _check_against_java(path, json.loads((tmp_path / f"{name}.reference.json").read_text()),
                            UNITS[JOINED[name][0]], where)
    for name, unit in UNITS.items():
        reference = json.loads((tmp_path / f"{name}.reference.json").read_text())
        assert reference["intervals"], name
        _check_against_java(tmp_path / f"{name}.hlog", reference, unit)
    _check_zero_lengths_against_java(tmp_path / "zero_length.hlog",
                                     json.loads((tmp_path / "zero_length.reference.json").read_text()))


def test_javas_logs_and_printouts_are_told_apart() -> None:
    """HistogramLogProcessor's printouts carry the log's StartTime line; only the logs are read as logs."""
    for path in sorted(JAVA.iterdir()):
        readers: list[Any] = []
        if path.name.endswith(".intervals.txt"):  # percentiles per interval, no histograms: not claimed
            with pytest.raises(InputError, match="unrecognised input format"):
                list(input_flow([str(path)], REGISTRY, readers=readers))
        elif path.suffix in (".hlog", ".hgrm"):
            next(iter(input_flow([str(path)], REGISTRY, readers=readers)))
            assert readers[0].name == ("hdrhistogram" if path.suffix == ".hlog" else "hgrm"), path.name
