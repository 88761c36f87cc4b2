"""HdrHistogram percentile distributions (`.hgrm`): what `outputPercentileDistribution` prints.

jHiccup's `.hgrm` files, HistogramLogProcessor, wrk2's `--latency` "Detailed Percentile spectrum" and every
HdrHistogram library print a histogram as its cumulative count at percentile points:

           Value     Percentile TotalCount 1/(1-Percentile)

           0.035 0.000000000000          1           1.00
           ...
          57.704 1.000000000000       5050
    #[Mean    =        0.531, StdDeviation   =        3.216]
    #[Max     =       57.704, Total count    =         5050]
    #[Buckets =           32, SubBuckets     =         2048]

or the same as CSV (`"Value","Percentile","TotalCount","1/(1-Percentile)"`, the last row's ratio `Infinity`).
Each distribution is one column. A printed value is the highest value of the sub-bucket the percentile falls
in, so the events between two points, `TotalCount[i] - TotalCount[i-1]`, lie in `(Value[i-1], Value[i]]`; they
are spread over the rows that range overlaps (`latencymap.core.rebin`). Two points say more: the first
(percentile 0) is the minimum's sub-bucket, so its events lie in that sub-bucket, and the last (percentile 1)
is the maximum's, so one event lies there (a sub-bucket is at most 2/SubBuckets of its value wide, per the
`#[Buckets = ..., SubBuckets = ...]` footer, 256 when there is none, plus the printed rounding). Between
far-apart tail points that spreading is all the format allows, except that wrk2 prints its own percentiles
(50% ... 99.999%) above each spectrum: each one that falls between two rows becomes a point of its own. The
footer's `#[Mean = ...]` times the count is the distribution's time. wrk2 `-U` prints a run twice, as recorded
(corrected for coordinated omission) and uncorrected: the second is its own stream, `NAME (uncorrected latency)`,
over the same time.
Values are in `--unit` (default ms, what jHiccup, HistogramLogProcessor and wrk2 print). A distribution says
nothing of when it was taken or over how long: its column ends when it is read and is `--interval` long, or
as long as wrk2's "N requests in 10.00s" line after it says; HistogramLogProcessor's `#[StartTime: ...]` and
`between A and B seconds` lines above it place it at StartTime + A, B - A long when B is finite. A line that is
no row is reported and skipped (the next row's total counts what it held); values or totals that go down, or a
`Total count` footer that disagrees with the last row, are reported with their line and that distribution is
left out.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

import click
import numpy as np

from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, Notice, SourceBuckets, StreamId
from latencymap.core.rebin import rebin_counts
from latencymap.core.sanitize import clean_text, excerpt
from latencymap.core.units import unit_seconds
from latencymap.plugins import Item, TextFormat
from latencymap.sources.format_options import DEFAULT_INTERVAL, interval_option, unit_option
from latencymap.sources.hdrhistogram import finite_number

DATASOURCE = "hdrhistogram"
DEFAULT_UNIT = "millisec"
#: The stream unit: printed values have three decimals of `--unit`, so a thousandth of it keeps them.
_FINER = {"sec": "millisec", "millisec": "microsec", "microsec": "nanosec", "nanosec": "nanosec"}
_HEADER = re.compile(r'^\s*"?Value"?[\s,]+"?Percentile"?[\s,]+"?TotalCount"?[\s,]+"?1/\(1-Percentile\)"?\s*$')
_ROW = re.compile(r"^\s*([-+0-9.eE]+)\s*[\s,]\s*([-+0-9.eE]+)\s*[\s,]\s*([0-9.eE+]+)(?:\s*[\s,]\s*(\S+))?\s*$")
_TOTAL = re.compile(r"^#\[Max\s*=\s*[-+0-9.eE]+,\s*Total ?count\s*=\s*([0-9.eE+]+)\s*\]", re.IGNORECASE)
_FOOTER_END = re.compile(r"^#\[Buckets\s*=")
_SUB_BUCKETS = re.compile(r"^#\[Buckets\s*=\s*\d+,\s*SubBuckets\s*=\s*(\d+)\s*\]")
#: Sub-buckets per histogram when the footer does not say (2 significant digits: the widest common ones).
DEFAULT_SUB_BUCKETS = 256
#: wrk2's line per thread before its results (wrk, without the 2, prints none): a run with many threads can push
#: the spectrum past the lines sniffed, so this line claims the input too.
_WRK2_CALIBRATION = re.compile(r"^\s*Thread calibration: mean lat\.:")
_WRK2_SPAN = re.compile(r"^\s*(\d+) requests in ([0-9.]+)(us|ms|s|m|h)\b")
#: wrk2's title of each distribution it prints (`-U` adds an "Uncorrected Latency" one), and the percentiles it
#: prints under the title, before the spectrum: exact values where the spectrum's tail points are far apart.
_WRK2_TITLE = re.compile(r"^\s*Latency Distribution \(HdrHistogram - ([^()]+?)\s*(?:\(.*\))?\)\s*$")
_WRK2_POINT = re.compile(r"^\s*(\d+(?:\.\d+)?)%\s+([0-9.]+)(us|ms|s|m|h)\s*$")
_RECORDED = "Recorded Latency"
#: HistogramLogProcessor's lines above each distribution: its range (seconds relative to StartTime) and StartTime.
_RANGE = re.compile(r"^#\[Overall percentile distribution between ([0-9.]+) and (\S+) seconds")
_START_TIME = re.compile(r"^#\[StartTime:\s*([0-9.]+)")
_MEAN = re.compile(r"^#\[Mean\s*=\s*([-+0-9.eE]+)\s*,")
_SPAN_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_SHORT = {"sec": "s", "millisec": "ms", "microsec": "us", "nanosec": "ns"}
#: The run lengths a column may have: a microsecond up to about three years.
MIN_SPAN_S, MAX_SPAN_S = 1e-6, 1e8
#: Skipped lines told one by one per distribution; the rest are counted in one notice.
MAX_TOLD = 3


@dataclass
class _Spectrum:
    """One printed distribution being read."""

    line: int
    values: list[float] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)
    footer_total: int | None = None
    sub_buckets: int = DEFAULT_SUB_BUCKETS
    footer: bool = False
    error: str | None = None
    span_s: float | None = None
    skipped: list[str] = field(default_factory=list)
    title: str = _RECORDED
    points: list[tuple[float, float]] = field(default_factory=list)  # wrk2's (percentile 0-1, value in --unit)
    mean: float | None = None  # the footer's, in --unit
    begin_s: float | None = None  # epoch seconds it starts at, when HistogramLogProcessor says
    csv: bool = False  # printed as CSV, which has no footer: its last row (percentile 1) ends it
    share: float = 0.0  # the last row's percentile
    last: int = 0  # the last row's line


class HdrPercentilesFormat(TextFormat):
    """HdrHistogram percentile distributions (`.hgrm`, wrk2 --latency), one column each."""

    name = "hgrm"
    summary = ("HdrHistogram percentile distributions: .hgrm files, wrk2 --latency, HistogramLogProcessor "
               "(--unit, default ms)")

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        return any(_HEADER.match(line) or _WRK2_CALIBRATION.match(line) for line in head)

    @classmethod
    def params(cls) -> list[click.Parameter]:
        return [unit_option(), interval_option()]

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        unit = self.options.get("unit") or DEFAULT_UNIT
        done: list[_Spectrum] = []
        current: _Spectrum | None = None
        wrk2 = False
        title, points = _RECORDED, list[tuple[float, float]]()
        run = 0  # the first distribution of the run a "N requests in" line ends
        start_time: float | None = None
        covers: tuple[float, float] | None = None  # HistogramLogProcessor's range of the next distribution
        for n, raw in enumerate(lines, 1):
            line = raw.rstrip("\r\n")
            wrk2 = wrk2 or bool(_WRK2_CALIBRATION.match(line))
            if _HEADER.match(line):
                if current is not None:
                    done.append(current)
                current = _Spectrum(n, title=title, points=points, csv="," in line)
                title, points = _RECORDED, []
                _place(current, start_time, covers)
                continue
            if (m := _RANGE.match(line) or _START_TIME.match(line)) is not None:
                if current is not None and current.footer:
                    done.append(current)
                    current = None
                if m.re is _START_TIME:
                    start_time = finite_number(m.group(1))
                else:
                    covers = (finite_number(m.group(1)) or 0.0, finite_number(m.group(2)) or math.inf)
                continue
            if current is not None and current.footer and line.strip() and not line.startswith("#"):
                done.append(current)  # past the footer: the printer's own lines (wrk2's requests line among them)
                current = None
            if current is None:
                if (m := _WRK2_TITLE.match(line)) is not None:
                    title, points = m.group(1), []
                elif (m := _WRK2_POINT.match(line)) is not None:
                    points.append((float(m.group(1)) / 100, float(m.group(2)) * _SPAN_UNITS[m.group(3)]
                                   / unit_seconds(unit)))
                elif (span := _span(line)) is not None:
                    for spectrum in done[run:]:
                        spectrum.span_s = span if spectrum.span_s is None else spectrum.span_s
                    run = len(done)
                continue
            if not line.strip():
                continue
            if line.startswith("#"):  # the footer: #[Mean ...], #[Max ..., Total count ...], #[Buckets ...]
                current.footer = True
                if (m := _TOTAL.match(line)) is not None:
                    current.footer_total = _whole(m.group(1))
                if (m := _SUB_BUCKETS.match(line)) is not None and int(m.group(1)) >= 2:
                    current.sub_buckets = int(m.group(1))
                if (m := _MEAN.match(line)) is not None:
                    current.mean = finite_number(m.group(1))
                continue
            row = _ROW.match(line)
            if row is None:  # totals are cumulative: the next row counts what a skipped one held
                current.skipped.append(f"line {n}: expected '<value> <percentile> <total count> "
                                       f"[1/(1-percentile)]', got {excerpt(line.strip())}; skipped")
            elif current.error is None:
                current.error = _add(current, row, n)
        if current is not None:
            done.append(current)
        if not done:
            what = ("wrk2's 'Detailed Percentile spectrum' (wrk2 prints it with --latency, -L)" if wrk2 else
                    "a percentile distribution ('Value Percentile TotalCount 1/(1-Percentile)' and its rows)")
            yield Notice(f"{name}: expected {what}; none found", skipped=1)
        yield from self._columns(done, unit, name)

    def _columns(self, spectra: list[_Spectrum], unit: str, name: str) -> Iterator[Item]:
        width = float(self.options.get("interval") or DEFAULT_INTERVAL)
        base = clean_text(PurePath(name).name or name, 160)
        streams: dict[str, StreamId] = {}
        for spectrum in spectra:
            label = base if spectrum.title == _RECORDED else f"{base} ({clean_text(spectrum.title.lower(), 60)})"
            streams.setdefault(spectrum.title, StreamId(label, DATASOURCE, _FINER[unit]))
        factor = unit_seconds(unit) / unit_seconds(_FINER[unit])
        spans = [s.span_s if s.span_s is not None and MIN_SPAN_S <= s.span_s <= MAX_SPAN_S else width
                 for s in spectra]
        if any(s.span_s is None for s in spectra):
            yield Notice(f"{name}: a percentile distribution does not say how long it covers: its column is "
                         f"{width:g}s long (--interval), and rates are per that", skipped=0)
        for spectrum in spectra:
            if spectrum.span_s is not None and not MIN_SPAN_S <= spectrum.span_s <= MAX_SPAN_S:
                yield Notice(f"{name}: distribution at line {spectrum.line}: a run of {spectrum.span_s:g}s is out of "
                             f"range ({MIN_SPAN_S:g}s to {MAX_SPAN_S:g}s); its column is {width:g}s long "
                             "(--interval)", skipped=0)
        runs = _runs(spectra)  # one column per run: wrk2 -U's two distributions of one run side by side
        end = time.time() - sum(spans[first] for first in runs)
        for i, (spectrum, span) in enumerate(zip(spectra, spans, strict=True)):
            if i in runs:
                start = spectrum.begin_s if spectrum.begin_s is not None else end
                end = start + span
            for message in spectrum.skipped[:MAX_TOLD]:
                yield Notice(f"{name}: {message}", skipped=1)
            if len(spectrum.skipped) > MAX_TOLD:
                more = len(spectrum.skipped) - MAX_TOLD
                yield Notice(f"{name}: {more} more lines of the distribution at line {spectrum.line} skipped",
                             skipped=more)
            problem = spectrum.error or _check(spectrum)
            if problem is not None:
                yield Notice(f"{name}: distribution at line {spectrum.line}: {problem}; left out", skipped=1)
                continue
            if (early := _ends_early(spectrum, unit)) is not None:
                yield Notice(f"{name}: distribution at line {spectrum.line}: {early}", skipped=1)
            bounds, counts = _buckets(spectrum, factor)
            rows = rebin_counts(bounds, counts) if bounds else np.zeros(NSLOTS, dtype=np.int64)
            spent = None
            if spectrum.mean is not None and spectrum.mean >= 0:
                spent = spectrum.mean * unit_seconds(unit) * spectrum.totals[-1]
            yield Interval(streams[spectrum.title], start, end, rows, duration=end - start,
                           source_buckets=SourceBuckets(tuple(bounds), np.asarray(counts, dtype=np.int64), spent))


def _place(spectrum: _Spectrum, start_time: float | None, span: tuple[float, float] | None) -> None:
    """HistogramLogProcessor's StartTime and `between A and B seconds`: where the distribution starts, and how long
    it covers when B is not `<Infinite>`."""
    if span is None:
        return
    a, b = span
    if start_time is not None:
        spectrum.begin_s = start_time + a
    if math.isfinite(b) and b > a:
        spectrum.span_s = b - a


def _runs(spectra: list[_Spectrum]) -> set[int]:
    """Indexes of the distributions that begin a run: each title (recorded, uncorrected) once per run."""
    firsts: set[int] = set()
    titles: set[str] = set()
    for i, spectrum in enumerate(spectra):
        if not firsts or spectrum.title in titles:
            firsts.add(i)
            titles = set()
        titles.add(spectrum.title)
    return firsts


def _span(line: str) -> float | None:
    """Seconds of wrk2's `N requests in 30.00s` line; None for any other line."""
    m = _WRK2_SPAN.match(line)
    return None if m is None else float(m.group(2)) * _SPAN_UNITS[m.group(3)]


def _whole(text: str) -> int | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value >= 0 and value == int(value) else None


def _add(spectrum: _Spectrum, row: re.Match[str], n: int) -> str | None:
    """Append one row; what is wrong with it, if anything."""
    try:
        value, share = float(row.group(1)), float(row.group(2))
    except ValueError:
        return f"line {n}: expected numbers, got {excerpt(row.group(0))}"
    total = _whole(row.group(3))
    if total is None or not (math.isfinite(value) and value >= 0) or not 0 <= share <= 1:
        return (f"line {n}: expected a value >= 0, a percentile in [0, 1] and a whole count, got "
                f"{excerpt(row.group(0).strip())}")
    if spectrum.totals and (total < spectrum.totals[-1] or value < spectrum.values[-1]):
        return f"line {n}: values and counts must not go down (got {value:g} with {total} after " \
               f"{spectrum.values[-1]:g} with {spectrum.totals[-1]})"
    spectrum.values.append(value)
    spectrum.totals.append(total)
    spectrum.share, spectrum.last = share, n
    return None


def _ends_early(spectrum: _Spectrum, unit: str) -> str | None:
    """Why a distribution's table is cut before its end (a file copied or written only in part), if it is: the
    tail past its last row is missing, and its column holds the rest as if it were whole."""
    if spectrum.share >= 1 or (spectrum.footer and not spectrum.csv):
        return None
    why = (f"its last row, line {spectrum.last}, is at percentile {spectrum.share:.6g}, not 1" if spectrum.csv else
           f"no '#[Mean' / '#[Max' footer after its last row, line {spectrum.last}, at percentile "
           f"{spectrum.share:.6g}")
    return (f"the percentile table ended early ({why}): the tail past {spectrum.values[-1]:g} "
            f"{_SHORT.get(unit, unit)} ({spectrum.totals[-1]:,} events read) is missing from its column")


def _with_points(spectrum: _Spectrum) -> list[tuple[float, int]]:
    """The rows' (value, total count), with wrk2's own percentiles put in where they fall strictly between two
    rows: the value at percentile p holds at least p x total events at or below it."""
    rows = list(zip(spectrum.values, spectrum.totals, strict=True))
    everything = spectrum.totals[-1]
    for share, value in spectrum.points:
        below = math.ceil(share * everything - 1e-9)
        at = next((i for i, (v, t) in enumerate(rows) if t >= below or v >= value), len(rows))
        if 0 < at < len(rows) and rows[at - 1][0] < value < rows[at][0] and rows[at - 1][1] < below < rows[at][1]:
            rows.insert(at, (value, below))
    return rows


def _check(spectrum: _Spectrum) -> str | None:
    if not spectrum.values:
        return "no rows after the header"
    if spectrum.footer_total is not None and spectrum.footer_total != spectrum.totals[-1]:
        return f"its footer says Total count {spectrum.footer_total}, its last row {spectrum.totals[-1]}"
    return None


def _buckets(spectrum: _Spectrum, factor: float) -> tuple[list[float], list[int]]:
    """Ascending upper bounds (stream unit) and the events of each: rows printing the same value are merged."""
    bounds: list[float] = []
    counts: list[int] = []
    before = 0
    for value, total in _with_points(spectrum):
        bound = value * factor
        if bound <= 0:  # printed as 0: below half the printed last digit, a bucket up to one stream unit
            bound = 1.0
        if bounds and bound <= bounds[-1]:
            counts[-1] += total - before
        else:
            bounds.append(bound)
            counts.append(total - before)
        before = total
    # The minimum's and the maximum's sub-buckets: [value - width, value], width at most 2/SubBuckets of the
    # value, and half a printed last digit (a thousandth of --unit: half a stream unit) for the rounding.
    def low_end(bound: float) -> float:
        return bound - bound * 2 / spectrum.sub_buckets - 0.5

    if counts and counts[0] > 0 and low_end(bounds[0]) > 0:
        bounds.insert(0, low_end(bounds[0]))
        counts.insert(0, 0)
    if len(bounds) >= 2 and counts[-1] > 0 and low_end(bounds[-1]) > bounds[-2]:
        bounds.insert(-1, low_end(bounds[-1]))
        counts.insert(-1, counts[-1] - 1)
        counts[-1] = 1
    return bounds, counts
