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
far-apart tail points that spreading is all the format allows: it keeps no more.
Values are in `--unit` (default ms, what jHiccup, HistogramLogProcessor and wrk2 print). A distribution says
nothing of when it was taken or over how long: its column ends when it is read and is `--interval` long, or
as long as wrk2's "N requests in 10.00s" line after it says. A line that is no row is reported and skipped
(the next row's total counts what it held); values or totals that go down, or a `Total count` footer that
disagrees with the last row, are reported with their line and that distribution is left out.
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
_SPAN_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
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
        stream = StreamId(clean_text(PurePath(name).name or name, 160), DATASOURCE, _FINER[unit])
        factor = unit_seconds(unit) / unit_seconds(stream.unit)
        done: list[_Spectrum] = []
        current: _Spectrum | None = None
        wrk2 = False
        for n, raw in enumerate(lines, 1):
            line = raw.rstrip("\r\n")
            wrk2 = wrk2 or bool(_WRK2_CALIBRATION.match(line))
            if _HEADER.match(line):
                if current is not None:
                    done.append(current)
                current = _Spectrum(n)
                continue
            if current is None:
                if done and done[-1].span_s is None:
                    done[-1].span_s = _span(line)
                continue
            if not line.strip():
                continue
            if line.startswith("#"):  # the footer: #[Mean ...], #[Max ..., Total count ...], #[Buckets ...]
                current.footer = True
                if (m := _TOTAL.match(line)) is not None:
                    current.footer_total = _whole(m.group(1))
                if (m := _SUB_BUCKETS.match(line)) is not None and int(m.group(1)) >= 2:
                    current.sub_buckets = int(m.group(1))
                if _FOOTER_END.match(line):
                    done.append(current)
                    current = None
                continue
            if current.footer:  # past the footer: the printer's own lines (wrk2's requests line among them)
                current.span_s = _span(line)
                done.append(current)
                current = None
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
        yield from self._columns(done, stream, factor, name)

    def _columns(self, spectra: list[_Spectrum], stream: StreamId, factor: float, name: str) -> Iterator[Item]:
        width = float(self.options.get("interval") or DEFAULT_INTERVAL)
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
        end = time.time() - sum(spans)
        for spectrum, span in zip(spectra, spans, strict=True):
            start, end = end, end + span
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
            bounds, counts = _buckets(spectrum, factor)
            rows = rebin_counts(bounds, counts) if bounds else np.zeros(NSLOTS, dtype=np.int64)
            yield Interval(stream, start, end, rows, duration=span,
                           source_buckets=SourceBuckets(tuple(bounds), np.asarray(counts, dtype=np.int64)))


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
    return None


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
    for value, total in zip(spectrum.values, spectrum.totals, strict=True):
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
