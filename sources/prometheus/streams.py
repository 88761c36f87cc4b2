"""From per-series bucket counts to latencymap streams: naming, `--sum-by` grouping, units, folding into rows."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import click
import numpy as np

from latencymap.core.model import Interval, Notice, SourceBuckets, StreamId, empty_counts
from latencymap.core.sanitize import StreamNames, clean_label, clean_text, cut_label
from latencymap.core.source_totals import combine_buckets
from latencymap.core.units import format_duration, unit_seconds

from .layout import STREAM_UNITS, Layout, metric_unit, stream_unit
from .series import Labels, Matcher, describe_labels, parse_matcher

DATASOURCE = "prometheus"
MAX_LABEL = 400


@dataclass(slots=True)
class Part:
    """One series' share of a column: per-bucket counts in its layout, seconds spent (from `_sum`), reset."""

    layout: Layout
    counts: np.ndarray
    spent_s: float | None = None
    reset: bool = False
    rows: np.ndarray | None = None  # the counts already folded into rows, when they were folded in bulk


def no_finite_bound(bounds: Sequence[float]) -> bool:
    """True for a classic histogram with only its `+Inf` bucket: its events hold no latency (histogram_quantile
    gives NaN), so there is nothing to place on rows."""
    return not any(math.isfinite(b) for b in bounds)


def no_latency_note(source: str, metric: str, key: Labels, events: float, seconds: float | None,
                    span: str) -> Notice:
    """The one note for a series left out by `no_finite_bound`: what it holds (`events`, and their mean when
    `seconds`, from `_sum`, is known) over `span` ("so far", "in the window")."""
    series = cut_label(clean_label(describe_labels(metric, key)))
    mean = ""
    if seconds is not None and math.isfinite(seconds) and events > 0:
        mean = f" (mean {format_duration(seconds / events)})"
    return Notice(clean_text(f'{source}: {series} has no finite bucket, only le="+Inf": its {events:,.0f} events '
                             f"{span}{mean} hold no latency to place (histogram_quantile gives NaN); left out", 400),
                  skipped=0)


def split_labels(values: Sequence[str]) -> tuple[str, ...]:
    """`--sum-by a,b --sum-by c` -> ('a', 'b', 'c')."""
    out = [v.strip() for value in values for v in value.split(",") if v.strip()]
    for name in out:
        if name == "le" or not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name):
            raise click.BadParameter(f"expected label names, got {name!r}", param_hint="--sum-by")
    return tuple(dict.fromkeys(out))


def sum_by_coverage(sum_by: Sequence[str], label_sets: Iterable[Iterable[str]]) -> tuple[list[str], list[str]]:
    """The `--sum-by` labels that no series has, and those that only some have (`label_sets`: each series' label
    names; Prometheus holds an empty label as none)."""
    sets = [frozenset(names) for names in label_sets]
    absent = [name for name in sum_by if not any(name in s for s in sets)]
    partial = [name for name in sum_by if name not in absent and not all(name in s for s in sets)]
    return absent, partial


def no_sum_by_label(metric: str, absent: Sequence[str], have: Iterable[str]) -> str:
    """Why `--sum-by` cannot group: the labels no series of `metric` has, the labels they have, and the closest."""
    names = sorted(set(have) - {"le", "__name__"})
    empty = ", ".join(f'{name}=""' for name in absent)
    told = f"no series of {metric} has a label {' or '.join(absent)}: --sum-by would group every series as {empty}"
    there = f"; their labels: {', '.join(names[:20])}{', ...' * (len(names) > 20)}" if names else \
        "; they have no labels"
    close = [c for name in absent for c in difflib.get_close_matches(name, names, n=1, cutoff=0.6)]
    return clean_text(told + there + (f"; did you mean {' and '.join(close)}?" if close else ""), 600)


def partial_sum_by_note(source: str, metric: str, partial: Sequence[str]) -> Notice:
    """The note, once, for `--sum-by` labels that only some series have: the others are summed with them empty."""
    which = " or ".join(partial)
    return Notice(clean_text(f"{source}: some series of {metric} have no {which} label (--sum-by): they are summed "
                             f"into streams where {which} is empty", 400), skipped=0)


def parse_matchers(values: Sequence[str]) -> tuple[Matcher, ...]:
    """`--match` values as matchers; click.BadParameter saying what is expected."""
    try:
        return tuple(parse_matcher(v) for v in values)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--match") from None


def _one_metric(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> str:
    """The one `--metric` given; a usage error when it is repeated (click would keep only the last, silently)."""
    if len(set(values)) > 1:
        given = ", ".join(repr(clean_text(v, 200)) for v in values)
        raise click.BadParameter(f"given {len(values)} times ({given}): one histogram per run; run one latencymap "
                                 "per metric", param_hint="--metric")
    return values[-1]


def histogram_options() -> list[click.Parameter]:
    """The options both Prometheus sources share."""
    return [
        click.Option(["--metric"], required=True, multiple=True, metavar="NAME", callback=_one_metric,
                     help="Histogram name, e.g. http_request_duration_seconds (a _bucket suffix is ignored)."),
        click.Option(["--match", "match"], multiple=True, metavar="LABEL=VALUE",
                     help="Only series whose label matches (repeat; also !=, =~, !~ as in PromQL)."),
        click.Option(["--sum-by", "sum_by"], multiple=True, metavar="LABEL",
                     help="One stream per value of these labels, the rest summed (repeat or comma-separate)."),
        click.Option(["--sum", "sum_all"], is_flag=True, help="Sum every series into one stream."),
        click.Option(["--unit"], default=None, metavar="UNIT",
                     help="Unit of the metric's values (s, ms, us, ns); default from # UNIT or the name, else s."),
        click.Option(["--timeout"], type=click.FloatRange(min=0.1), default=10.0, show_default=True, metavar="S",
                     help="Seconds to wait for an answer."),
    ]


#: `--histogram`: which histograms a Prometheus source takes.
KINDS = ("auto", "native", "classic")


def kind_option() -> click.Option:
    """`--histogram auto|native|classic`, shared by both Prometheus sources."""
    return click.Option(["--histogram", "kind"], type=click.Choice(KINDS), default="auto", show_default=True,
                        help="Native or classic histograms; auto takes native ones where they are served.")


class StreamBuilder:
    """Names output streams, decides each one's unit once, and folds series parts into Intervals."""

    def __init__(self, metric: str, unit: str, sum_by: Sequence[str] = (), sum_all: bool = False) -> None:
        self.metric = metric
        self.unit = unit
        self.sum_by = tuple(sum_by)
        self.sum_all = sum_all
        self._streams: dict[Labels, StreamId] = {}
        self._names = StreamNames(MAX_LABEL)  # long label sets cut in the middle; a cut taken already gets (2)
        self.notices: list[Notice] = []
        self._mixed_told = False

    @classmethod
    def from_options(cls, metric: str, options: dict, declared_unit: str | None = None) -> StreamBuilder:
        """A builder for the CLI options."""
        try:
            unit = metric_unit(metric, declared_unit, options.get("unit"))
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint="--unit") from None
        return cls(metric, unit, split_labels(options.get("sum_by") or ()), bool(options.get("sum_all")))

    def out_key(self, key: Labels) -> Labels:
        """The output stream a series belongs to."""
        if self.sum_all:
            return ()
        if self.sum_by:
            have = dict(key)
            return tuple((name, have.get(name, "")) for name in self.sum_by)
        return key

    def stream(self, okey: Labels, bounds_s: Sequence[float] | None = None) -> StreamId:
        """The stream of an output key; its unit is decided at first sight (from bucket bounds in seconds)."""
        found = self._streams.get(okey)
        if found is None:
            if bounds_s is None:
                unit = self.unit if self.unit in STREAM_UNITS else "microsec"
            else:
                unit = stream_unit(bounds_s, self.unit)
            label = self._names.name(clean_label(describe_labels(self.metric, okey)), unit)
            found = self._streams[okey] = StreamId(label, DATASOURCE, unit)
        return found

    def find(self, okey: Labels) -> StreamId | None:
        """The stream of an output key when it was named already."""
        return self._streams.get(okey)

    def known(self) -> list[StreamId]:
        """Every stream named so far."""
        return list(self._streams.values())

    def factor(self, stream: StreamId) -> float:
        """Multiply a value in the metric's unit by this to get it in the stream's unit."""
        return unit_seconds(self.unit) / unit_seconds(stream.unit)

    def seconds(self, value: float) -> float:
        """A value in the metric's unit, in seconds."""
        return value * unit_seconds(self.unit)

    def interval(self, stream: StreamId, parts: Sequence[Part], start: float, end: float,
                 gap: bool = False) -> Interval:
        """One column of a stream: the parts' rows summed, their own buckets kept (on the union of their bounds when
        they differ) when they were spread or are finer than rows."""
        counts = empty_counts()
        for part in parts:
            if part.rows is not None:
                counts += part.rows
            else:
                time = None if part.spent_s is None else part.spent_s / unit_seconds(stream.unit)
                counts += part.layout.fold(part.counts, time=time)[0]
        spent = [p.spent_s for p in parts]
        total = float(sum(s for s in spent if s is not None)) if parts and None not in spent else None
        if total is not None and total < 0:
            total = None
        kept: SourceBuckets | None = None
        if any(p.layout.kept for p in parts):
            summed: tuple[tuple[float, ...], np.ndarray] | None = (parts[0].layout.bounds,
                                                                   np.asarray(parts[0].counts, dtype=np.int64))
            for p in parts[1:]:
                if summed is not None:
                    summed = combine_buckets(*summed, p.layout.bounds, np.asarray(p.counts, dtype=np.int64))
            if summed is not None:
                kept = SourceBuckets(summed[0], summed[1], total)
            elif not self._mixed_told:
                self._mixed_told = True
                self.notices.append(Notice(f"{stream.label}: series with different buckets summed; their own "
                                           "buckets are not kept, only the rows", skipped=0))
        elif parts and total is not None:  # folded exactly: the rows are the buckets, the sum is kept
            kept = SourceBuckets.sum_only(total)
        return Interval(stream, start, end, counts, reset=any(p.reset for p in parts), gap=gap,
                        source_buckets=kept)
