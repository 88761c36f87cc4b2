"""`latencymap prometheus --url URL --metric NAME`: a histogram queried from a Prometheus server's HTTP API.

With `--start`/`--end` a whole past window comes back as columns, one per `--step`: the column ending at `T` is
`increase(NAME_bucket{...}[step])` evaluated at `T` (one `query_range`), its time spent `increase(NAME_sum[step])`.
Without them the source is live: it asks `/api/v1/query` for the step that just ended, every step, and after an
outage catches up on the missed steps with one `query_range`. Native histograms (Prometheus 2.40+ with
`--enable-feature=native-histograms`) are used where the server has them: `increase(NAME[step])` returns their
buckets, which fold exactly into rows for schema >= 0 in the metric's own unit. `increase()` extrapolates to the
step's edges, so counts are the server's (fractional) increases rounded to whole events, carried from step to step
per series and bucket (`layout.carried_counts`): each bucket's count is within 1 of its own sum at every step, a
classic series' within half an event of the sum of `increase(NAME_count[step])`, and a column's total is its
increase rounded down or up (a steady 2.4 a step in a tail bucket counts 2, 3, 2, 2, 3, ..., not 2 every step), but
where buckets rounded up ahead of their events keep the others from staying within 1 otherwise (no rounding keeps
both then): the column counts what its buckets must, and later columns give it back. Native histograms, whose
buckets vary from step to step, carry per series and bucket range the same way (`native.fold_native`); a native
series holding negative values has them left out, with one note. A step shorter than twice the samples' spacing holds
two samples only in some steps: found the first time steps have no value, such a step
takes `increase()` over the step and one scrape interval, scaled to the step, and says so once (`spacing`). A step
where a known stream has no value (fewer than two samples in it) is a gap column, and so is a step whose set of `le`
series differs from the step before (a redeploy with new bounds: old series stop, new ones start, `+Inf` runs on), which
cannot be split into buckets: counting starts again from the next step. A histogram with only its `+Inf` bucket is
left out with a note (histogram_quantile gives NaN). A step in which the histogram's count went down (`resets()` in
the step, or a series' count lower at its end than at its last sample before the step, which `offset` cannot see once
an outage made the series stale; a native one's compared at step ends), or its `NAME_created` series changed since its
last sample before the step (the server has one when its targets write `_created`, as prometheus_client does), is
marked reset. Where the count went down it counts
what `increase()` counts (the old process's rise and the value after the restart whole). Where `_created` changed in
the step or just before it, `increase()` may see no restart (the new counts already above the old ones) and count the
rise alone, missing the old process's count: a classic histogram's step is then counted from its raw samples
(`restarts`): the old process's rise up to its last sample and the new one's count since its creation, extrapolated
to the step's edges as `increase()` does (steps shorter than two samples' spacing keep `increase()`'s count, and so
do native histograms: a server scrapes them from the protobuf exposition, whose created timestamps it keeps as no
`_created` series (Prometheus 2.42 keeps none there, for native or classic histograms), so such a restart is not seen;
`latencymap scrape` reads the created timestamp from the target itself). A classic series that began counting in a
step (a new label set, or a process back after an outage that made its series stale: no sample in the step before,
its `_created` in the step or the one before) holds at its first sample what `increase()`, which counts rises between
samples, never counts (an error burst, 150 events, read as none; the first step after the outage, one sample, a gap):
that step is counted from its raw samples, the series from zero, even from one sample (`restarts`), and is not marked
reset for it. What was observed between the last sample before the restart and the restart itself is in no sample,
and no reader of the samples counts it. Times are sent to
the millisecond, the step as a duration (`2500ms`), so the answers' times are the columns' own; a window that is not a
whole number of steps says what it leaves out. A window where no step has a value is an error that says why, as far
as the API tells (no such name, and the histograms it has; another type, as the targets' metadata declares it or as
a name's series of plain numbers, not native histograms, show it: a counter's `reqs_total`, whose metadata Prometheus
files under `reqs`, or `up`, which has none; series that `--match` skips; a step too short for the scrape interval
whose spacing could not be measured). A `--sum-by` label that no series of the histogram has (in the window, or the
last 10 minutes live) is an error at the first answer with series, naming the labels they have: the server's sum
would put every series in one stream; one that only some have is said once. A gauge histogram (the targets'
metadata says `gaugehistogram`, or its `_gcount` series are there; asked when buckets come without a `_sum`) is no
counter that `increase()` can read: an error says so, and that `latencymap scrape` reads it.
"""

from __future__ import annotations

import difflib
import math
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, ClassVar

import click
import numpy as np

from latencymap.core.model import Interval, Notice, StreamId, empty_counts
from latencymap.core.sanitize import clean_text
from latencymap.plugins import Item, Source, SourceError

from .api import MAX_POINTS, PrometheusAPI, Series, promql_duration
from .layout import carried_counts, integer_counts, layout_of
from .native import Carry, NativeError, fold_native, negative_note
from .restarts import recount
from .scrape import metric_option
from .series import Labels, describe_labels, labels_key, selector
from .spacing import sample_spacing, scaled_series, seconds_text, short_step_note, widened_range
from .streams import (
    Part,
    StreamBuilder,
    histogram_options,
    kind_option,
    no_finite_bound,
    no_latency_note,
    no_sum_by_label,
    parse_matchers,
    partial_sum_by_note,
    sum_by_coverage,
)
from .transport import EndpointError, backoff, check_url, public_url, retry_message

LIVE_STEP = 15.0
RANGE_COLUMNS = 240
default_sleep: Callable[[float], None] = time.sleep
default_clock: Callable[[], float] = time.time
_RELATIVE = re.compile(r"(?:now)?\s*-\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)")
_SCALE = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_HISTOGRAM_TYPES = frozenset({"histogram", "gaugehistogram"})
LOOKBACK = 600.0  # seconds looked back for a live source's missing metric and for the samples' spacing


@dataclass(frozen=True)
class Fetched:
    """The server's answers for some steps: the kind of histogram, its bucket series, sum series, and the (step
    time, label set without `le` and `__name__`) pairs where the count was reset."""

    kind: str
    buckets: list[Series]
    sums: list[Series]
    resets: frozenset[tuple[float, Labels]] = frozenset()
    #: Said when these steps proved too short for the samples' spacing (`increase()` then reaches further back).
    note: Notice | None = None


def parse_time(text: str, now: float) -> float:
    """`now`, `-1h` / `now-90s`, epoch seconds, or RFC 3339 (`2026-11-23T10:00:00Z`) -> epoch seconds."""
    value = text.strip()
    if value.lower() == "now":
        return now
    m = _RELATIVE.fullmatch(value.lower())
    if m:
        return now - float(m.group(1)) * _SCALE[m.group(2)]
    try:
        return float(value)
    except ValueError:
        pass
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"expected now, -1h, epoch seconds or 2026-11-23T10:00:00Z, got {text!r}") from None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


class PrometheusSource(Source):
    """Histogram increases per step from a Prometheus server: a past window, or live."""

    name: ClassVar[str] = "prometheus"
    examples: ClassVar[tuple[str, ...]] = (
        "latencymap prometheus --url http://localhost:9090 --metric http_request_duration_seconds",
        "latencymap prometheus --url http://localhost:9090 --metric api_latency_seconds --start -1h --step 30",
    )
    summary: ClassVar[str] = ("A histogram from a Prometheus server's HTTP API (native or classic): a past window "
                              "with --start/--end, live otherwise.")

    @classmethod
    def params(cls) -> list[click.Parameter]:
        return [
            click.Option(["--url"], required=True, metavar="URL", help="The server, e.g. http://localhost:9090."),
            *histogram_options(),
            click.Option(["--start"], default=None, metavar="T", help="Window start: -1h, epoch s or RFC 3339."),
            click.Option(["--end"], default=None, metavar="T", help="Window end (default now)."),
            click.Option(["--step"], type=click.FloatRange(min=0.001), default=None, metavar="S",
                         help=f"Column width in seconds, at least twice the scrape interval (default {LIVE_STEP:g} "
                              f"live, the window / {RANGE_COLUMNS} with --start)."),
            kind_option(),
            click.Option(["--delay"], type=click.FloatRange(min=0.0), default=2.0, show_default=True, metavar="S",
                         help="Live: seconds to wait after a step ends before asking (the last scrape lands)."),
        ]

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.url = str(options.get("url") or "")
        try:
            check_url(self.url)
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint="--url") from None
        self.metric = metric_option(str(options.get("metric") or ""))
        self.matchers = parse_matchers(options.get("match") or ())
        self.builder = StreamBuilder.from_options(self.metric, options)
        self.api = PrometheusAPI(self.url, float(options.get("timeout") or 10.0))
        self.kind = str(options.get("kind") or "auto")
        delay = options.get("delay")
        self.delay = 2.0 if delay is None else float(delay)
        self.sleep = default_sleep
        self.clock = default_clock
        self.window = self._window_options()
        self._carry: dict[Labels, tuple[tuple[float, ...], np.ndarray]] = {}  # per classic series: le, fractions
        self._sets: dict[Labels, frozenset[float]] = {}  # per classic series: the le with a value at its last step
        self._left_out: dict[Labels, Notice] = {}  # series with no finite bucket, and the note said about each
        self._changing: set[Labels] = set()  # series whose last step was a gap because their le series changed
        self._native_carry: dict[Labels, Carry] = {}  # per native series: what its buckets carry to its next step
        self._last_count: dict[Labels, float] = {}  # per raw native series: its count at the last step end it had one
        self._negative: set[Labels] = set()  # native series found holding negative values (noted once)
        self._reach: float | None = None  # increase()'s range where the step is shorter than two samples' spacing
        self._spacing_known = False  # the samples' spacing was measured (when some steps had no value)
        self._gauge_checked = False  # the targets' metadata was asked whether the histogram is a gauge histogram
        self._sum_by_checked = False  # the series were looked at for the `--sum-by` labels

    def _window_options(self) -> tuple[float, float, float] | None:
        """(start, end, step) of a past window from the options, checked now; None when live."""
        start, end = self.options.get("start"), self.options.get("end")
        if start is None and end is None:
            return None
        if start is None:
            raise click.BadParameter("a window needs --start (--end defaults to now)", param_hint="--start")
        now = default_clock()
        try:
            t0 = parse_time(str(start), now)
        except click.BadParameter as err:
            raise click.BadParameter(err.message, param_hint="--start") from None
        try:
            t1 = parse_time(str(end) if end is not None else "now", now)
        except click.BadParameter as err:
            raise click.BadParameter(err.message, param_hint="--end") from None
        if t1 <= t0:
            raise click.BadParameter("--end must be after --start", param_hint="--end")
        t0, t1 = round(t0, 3), round(t1, 3)  # the API reads times to the millisecond
        step = round(float(self.options.get("step") or max(1.0, math.ceil((t1 - t0) / RANGE_COLUMNS))), 3)
        if (t1 - t0) / step + 1e-9 < 1:
            raise click.BadParameter(f"the window is shorter than one step ({step:g}s)", param_hint="--step")
        return t0, t1, step

    def describe(self) -> dict[str, Any]:
        return {"source": self.name, "url": public_url(self.url), "metric": self.metric, "histogram": self.kind,
                **{k: self.options[k] for k in ("start", "end", "step") if self.options.get(k) is not None}}

    def _promql(self, kind: str, step: float) -> tuple[str, str | None]:
        """(the buckets query, the sum query or None) for one kind of histogram: increases over the step, or over
        `_reach` where the step is too short for the samples (`_fetch` scales those to the step)."""
        rng = f"[{promql_duration(self._reach or step)}]"
        by = ", ".join(self.builder.sum_by)
        grouped = self.builder.sum_all or bool(by)
        if kind == "native":
            inner = f"increase({selector(self.metric, self.matchers)}{rng})"
            return (f"sum by ({by}) ({inner})" if grouped else inner), None
        buckets = f"increase({selector(self.metric + '_bucket', self.matchers)}{rng})"
        sums = f"increase({selector(self.metric + '_sum', self.matchers)}{rng})"
        if grouped:
            buckets = f"sum by (le{', ' if by else ''}{by}) ({buckets})"
            sums = f"sum by ({by}) ({sums})"
        return buckets, sums

    def _total(self, expr: str) -> str:
        """`expr` summed per stream label set (`--sum-by`, `--sum`), or as it is."""
        by = ", ".join(self.builder.sum_by)
        return f"sum by ({by}) ({expr})" if self.builder.sum_all or by else expr

    def _resets_promql(self, kind: str, step: float) -> str:
        """The series (per stream label set) whose count was reset in a step: `resets()` in it, or a series' count
        lower at its end than its last sample before the step (a restart between two steps' samples, which neither
        step's `resets()` sees, or across an outage that made the series stale), or a `NAME_created` that changed in
        it or since the last sample before it (where the server has that series: a restart whose new counts are
        already higher than the old ones when first scraped). A native histogram's count is compared in `_drops`:
        `last_over_time()` reads no native histogram in Prometheus 2.42."""
        ago, total = promql_duration(step), self._total

        def before(expr: str) -> str:  # its last sample before the step: `offset` alone has none once it was stale
            return f"last_over_time({expr}[{promql_duration(LOOKBACK)}] offset {ago})"

        created = selector(self.metric + "_created", self.matchers)
        new = f"{total(f'changes({created}[{ago}])')} > 0 or {total(f'{created} != {before(created)}')}"
        if kind == "native":
            return new
        count = selector(self.metric + "_count", self.matchers)
        return f"{total(f'resets({count}[{ago}])')} > 0 or {total(f'{count} < {before(count)}')} or {new}"

    def _born_promql(self, step: float) -> str:
        """The series (per stream label set) that began counting in a step: a `NAME_created` with no sample before
        the step (a new label set, or one back after an outage long enough to make it stale) whose value is in the
        step or the one before: all it holds at its first sample was counted since (`restarts`)."""
        created, ago = selector(self.metric + "_created", self.matchers), promql_duration(step)
        earlier = f"last_over_time({created}[{promql_duration(LOOKBACK)}] offset {ago})"
        return self._total(f"({created} unless {earlier}) > time() - {round(2 * step, 3)!r}")

    def _fetch(self, step: float, times: list[float]) -> Fetched:
        """The answers for the steps ending at `times`. The first time some of them have no value, the samples'
        spacing is measured: a step shorter than two of them takes increases over a longer range from then on
        (`spacing`), these steps' too, and says so once."""
        got = self._fetch_kinds(step, times)
        if self._reach is not None:
            return self._scaled(got, step)
        if self._spacing_known:
            return got
        have = {_key(t) for s in got.buckets for t, _ in (*s.floats, *s.histograms)}
        if all(_key(t) in have for t in times):
            return got
        try:
            spacing = self._spacing(times[0] - step, times[-1])
        except EndpointError:
            return got
        self._spacing_known = spacing is not None
        if spacing is None or step >= 2 * spacing:
            return got
        self._reach = widened_range(step, spacing)
        note = Notice(short_step_note(self.metric, step, spacing, self._reach), skipped=0)
        return replace(self._scaled(self._fetch_kinds(step, times), step), note=note)

    def _scaled(self, got: Fetched, step: float) -> Fetched:
        """Increases over `_reach` scaled to the step: the rate over that range times the step."""
        assert self._reach is not None
        ratio = step / self._reach
        return replace(got, buckets=scaled_series(got.buckets, ratio), sums=scaled_series(got.sums, ratio))

    def _spacing(self, t0: float, t1: float) -> float | None:
        """The spacing of the samples of the first series of the histogram with samples between t0 and t1."""
        pick = f'__name__=~"{"|".join(self._names())}"'
        found = self.api.series("{" + ",".join([pick, *(m.promql() for m in self.matchers)]) + "}", t0, t1)
        return sample_spacing(self.api, found[0], t1, LOOKBACK) if found else None

    def _fetch_kinds(self, step: float, times: list[float]) -> Fetched:
        """The answers for the steps ending at `times` (one instant or one range query each)."""
        kinds = [self.kind] if self.kind != "auto" else ["native", "classic"]
        for kind in kinds:
            buckets, sums = self._promql(kind, step)
            found = self._ask(buckets, step, times)
            if kind == "native":
                found = [s for s in found if s.histograms]
            if found or kind == kinds[-1]:
                if self.kind == "auto" and found:
                    self.kind = kind
                if not found:
                    return Fetched(kind, [], [])
                self._check_sum_by(kind, found, times)
                spent = self._ask(sums, step, times) if sums else []
                if kind == "classic" and not spent:
                    self._no_gauge_histogram(times[0] - step, times[-1])
                resets = self._steps_of(self._resets_promql(kind, step), step, times)
                if kind == "native":
                    resets |= self._drops(step, times)
                recounted = kind == "classic" and self._reach is None  # steps counted from their raw samples
                born = self._steps_of(self._born_promql(step), step, times) if recounted else frozenset()
                if recounted and (resets or born):
                    found, spent = recount(self.api, self.metric, self.matchers, self._group, step, resets | born,
                                           found, spent)
                return Fetched(kind, found, spent, resets)
        raise AssertionError("unreachable")

    def _check_sum_by(self, kind: str, found: list[Series], times: list[float]) -> None:
        """Once, at the first answer with series: SourceError when no series of the histogram has a `--sum-by` label
        (a typo would sum them all into one stream), naming the labels they have; a note for labels that only some
        have. The server's sums drop labels no series has; those are looked for in the raw series of the whole window
        (the last LOOKBACK seconds, live) before it is an error."""
        if not self.builder.sum_by or self._sum_by_checked:
            return
        self._sum_by_checked = True
        absent, partial = sum_by_coverage(self.builder.sum_by, (s.labels for s in found))
        if absent:
            t0, t1 = self.window[:2] if self.window is not None else (times[-1] - LOOKBACK, times[-1])
            pick = f'__name__="{self.metric if kind == "native" else self.metric + "_bucket"}"'
            try:
                raw = self.api.series("{" + ",".join([pick, *(m.promql() for m in self.matchers)]) + "}", t0, t1)
            except EndpointError:
                raw = []
            have = {k for labels in raw for k, v in labels.items() if v}
            absent = [name for name in absent if name not in have]
            if absent and raw:
                raise SourceError(f"prometheus: {self.api.shown}: {no_sum_by_label(self.metric, absent, have)}")
        if partial:
            self.builder.notices.append(partial_sum_by_note("prometheus", self.metric, partial))

    def _drops(self, step: float, times: list[float]) -> frozenset[tuple[float, Labels]]:
        """The (step time, label set) pairs where a native series' count at the step's end is lower than at the last
        step end before it where it had one (from the step before these, and from earlier queries: across steps
        where it was stale, after an outage, as `offset` cannot see)."""
        counts = self._ask(f"histogram_count({selector(self.metric, self.matchers)})", step, [times[0] - step, *times])
        asked = {_key(t) for t in times}
        out = set()
        for s in counts:
            ident = labels_key(s.labels, ())
            last = self._last_count.get(ident)
            for t, v in sorted(s.floats):
                if last is not None and v < last and _key(t) in asked:
                    out.add((_key(t), self._group(s.labels)))
                last = v
            if last is not None:
                self._last_count[ident] = last
        return frozenset(out)

    def _steps_of(self, promql: str, step: float, times: list[float]) -> frozenset[tuple[float, Labels]]:
        """The (step time, label set) pairs where `promql` has a value."""
        return frozenset((_key(t), labels_key(s.labels, ("le", "__name__")))
                         for s in self._ask(promql, step, times) for t, _ in s.floats)

    def _no_gauge_histogram(self, t0: float, t1: float) -> None:
        """SourceError when the histogram is a gauge histogram (`_bucket`, `_gcount`, `_gsum`; no `_sum`, so asked
        only when buckets came without one): its buckets are a distribution as it stands at each scrape, not counters,
        and `increase()` over them counts nothing that happened. The targets' metadata says so, or, where they
        declared it a `histogram` (prometheus_client in the text format, which has no gauge histogram type), its
        `_gcount` series between t0 and t1 do."""
        if self._gauge_checked:
            return
        self._gauge_checked = True
        try:
            types = self.api.metadata(self.metric).get(self.metric, set())
            why = "the targets' metadata" if "gaugehistogram" in types and "histogram" not in types else \
                f"its {self.metric}_gcount series" if self.api.series(
                    selector(self.metric + "_gcount", self.matchers), t0, t1) else None
        except EndpointError:
            return  # the server cannot say; the buckets are read as a histogram's
        if why is not None:
            raise SourceError(f"prometheus: {self.metric} is a gauge histogram ({why}): its buckets are the "
                              "distribution as it stands at each scrape (such as how long queued items have waited), "
                              "not counters, so increase() over them is no latency per step (latencymap scrape TARGET "
                              f"--metric {self.metric} reads each scrape's distribution as one column)")

    def _group(self, labels: dict[str, str]) -> Labels:
        """The label set the buckets query gives a raw series' increase (without `le`): `--sum-by`'s labels that
        it has, none with `--sum`, else its own."""
        if self.builder.sum_all or self.builder.sum_by:
            return tuple(sorted((k, labels[k]) for k in set(self.builder.sum_by) if labels.get(k)))
        return labels_key(labels, ("le", "__name__"))

    def _ask(self, promql: str, step: float, times: list[float]) -> list[Series]:
        if len(times) == 1:
            return self.api.query(promql, times[0])
        return self.api.query_range(promql, times[0], times[-1], step)

    def columns(self, got: Fetched, times: list[float], step: float) -> Iterator[Item]:
        """One column per stream per step time; a known stream without a value at a time is a gap column, and so
        is one with a series whose buckets changed in that step (`_classic_parts`)."""
        parts: dict[float, dict[StreamId, list[Part]]] = {}
        gaps: set[tuple[float, StreamId]] = set()
        spent: dict[tuple[float, Labels], float] = {}
        for s in got.sums:
            for t, v in s.floats:
                spent[(_key(t), labels_key(s.labels))] = v
        bad = 0
        if got.kind == "native":
            for s in got.buckets:
                key = labels_key(s.labels)
                stream = self.builder.stream(self.builder.out_key(key))
                for t, hist in s.histograms:
                    try:
                        folded = fold_native(hist, self.builder.factor(stream), self._native_carry.get(key, {}))
                    except NativeError:
                        bad += 1
                        continue
                    self._native_carry[key] = folded.carry
                    if folded.negative and key not in self._negative:
                        self._negative.add(key)
                        yield negative_note("prometheus", describe_labels(self.metric, key))
                    secs = None if folded.spent is None else self.builder.seconds(folded.spent)
                    reset = (_key(t), key) in got.resets
                    parts.setdefault(_key(t), {}).setdefault(stream, []).append(
                        Part(folded.layout, folded.counts, secs, reset))
        else:
            tables = _classic_tables(got.buckets)
            counted = self._carried(tables)
            for key, (les, stamps, table) in tables.items():
                if no_finite_bound(les.tolist()) and key not in self._sets:
                    yield from self._no_latency(key, stamps, table[:, -1], spent, step)
                    continue
                for t, part, stream in self._classic_parts(key, les, stamps, table, spent, counted[key], got.resets):
                    if part is not None:
                        self._changing.discard(key)
                        parts.setdefault(t, {}).setdefault(stream, []).append(part)
                        continue
                    gaps.add((t, stream))
                    if key not in self._changing:  # one note for the steps of one change
                        self._changing.add(key)
                        yield Notice(clean_text(
                            f"prometheus: {stream.label}: its le series changed in the step ending {_iso(t)} (new "
                            "bucket bounds: old series stopped, new ones started): what such a step counts cannot be "
                            "split into buckets, so it is a gap, counted again from the next step with the same "
                            "series as the one before", 600), skipped=0)
        if bad:
            yield Notice(f"prometheus: {bad} native histogram values could not be read", bad)
        known = self.builder.known()
        reset_at = {(t, self.builder.find(self.builder.out_key(key))) for t, key in got.resets}
        for t in times:
            at = parts.get(_key(t), {})
            for stream in known:
                if stream in at:
                    yield self.builder.interval(stream, at[stream], t - step, t, (_key(t), stream) in gaps)
                else:
                    yield Interval(stream, t - step, t, empty_counts(), reset=(_key(t), stream) in reset_at,
                                   gap=True)
        yield from self.builder.notices
        self.builder.notices.clear()

    def _no_latency(self, key: Labels, stamps: list[float], events: np.ndarray,
                    spent: dict[tuple[float, Labels], float], step: float) -> Iterator[Notice]:
        """The note, once, for a series with only its `+Inf` bucket (`events` its increase per step)."""
        if key in self._left_out:
            return
        sums = [spent.get((t, key)) for t in stamps]
        seconds = None if None in sums else self.builder.seconds(sum(v for v in sums if v is not None))
        span = f"from {_iso(stamps[0] - step)} to {_iso(stamps[-1])}"
        note = no_latency_note("prometheus", self.metric, key, float(np.nansum(events)), seconds, span)
        self._left_out[key] = note
        yield note

    def _nothing_to_map(self) -> SourceError | None:
        """A window's error when every series read had no finite bucket (and no stream is known): what the first
        held. (Live, the note is said and the source asks on: a series with buckets may have no value yet.)"""
        if self.builder.known() or not self._left_out:
            return None
        note = next(iter(self._left_out.values()))
        return SourceError(f"{note.message}: no series of {self.metric} has a finite bucket, nothing to map")

    def _carried(self, tables: dict[Labels, tuple[np.ndarray, list[float], np.ndarray]]) -> dict[Labels, np.ndarray]:
        """Per label set, (steps x le) whole counts of its complete steps, rounded with what earlier steps (earlier
        queries too: a long window's parts, a live source's polls) carried; series with the same buckets and steps
        are rounded together."""
        groups: dict[tuple[tuple[float, ...], tuple[float, ...]], list[Labels]] = {}
        for key, (les, stamps, _) in tables.items():
            groups.setdefault((tuple(les.tolist()), tuple(stamps)), []).append(key)
        out: dict[Labels, np.ndarray] = {}
        for (bounds, _), keys in groups.items():
            cumulative = np.stack([tables[key][2] for key in keys], axis=1)  # (steps, series, le)
            fresh = np.zeros(len(bounds))
            before = np.stack([c[1] if c is not None and c[0] == bounds else fresh
                               for c in (self._carry.get(key) for key in keys)])
            counts, after = carried_counts(np.diff(cumulative, axis=2, prepend=0.0), before)
            for i, key in enumerate(keys):
                out[key] = counts[:, i]
                self._carry[key] = (bounds, after[i])
        return out

    def _classic_parts(self, key: Labels, les: np.ndarray, stamps: list[float], table: np.ndarray,
                       spent: dict[tuple[float, Labels], float], counts: np.ndarray,
                       resets: frozenset[tuple[float, Labels]]) -> Iterator[tuple[float, Part | None, StreamId]]:
        """The parts of one label set, every step at once: `table` is (steps x le) increases, NaN where missing,
        `counts` the whole counts of its complete steps (`_carried`). None instead of a part for a step whose set
        of `le` series is not the step before's (old series stopped, new ones started: a redeploy with new
        bounds), or has no finite bound: its increases cannot be split into buckets, so it is a gap."""
        stream = self.builder.stream(self.builder.out_key(key), [self.builder.seconds(b) for b in les])
        layout = layout_of(tuple(les.tolist()), self.builder.factor(stream))
        complete = ~np.isnan(table).any(axis=1)
        factor = self.builder.factor(stream)
        times = np.array([spent.get((t, key), math.nan) for t in stamps], dtype=np.float64) * factor
        increases = np.clip(np.diff(table, axis=1, prepend=0.0), 0.0, None)  # the steps' own, `_sum`'s counts
        rows = layout.fold_many(counts, times, increases)
        for i, t in enumerate(stamps):
            have = ~np.isnan(table[i])
            present = frozenset(les[have].tolist())
            before = self._sets.get(key)
            self._sets[key] = present
            if no_finite_bound(tuple(present)) or (before is not None and present != before):
                yield t, None, stream
                continue
            total = spent.get((t, key))
            secs = None if total is None else self.builder.seconds(total)
            reset = (t, key) in resets
            if complete[i]:
                yield t, Part(layout, counts[i], secs, reset, rows=rows[i]), stream
                continue
            cumulative = table[i][have]  # a step where some buckets have no value: its own layout
            own = layout_of(tuple(les[have].tolist()), self.builder.factor(stream))
            yield t, Part(own, integer_counts(np.diff(cumulative, prepend=0.0), cumulative.max()), secs, reset), \
                stream

    def items(self) -> Iterator[Item]:
        if self.window is None:
            yield from self._live(round(float(self.options.get("step") or LIVE_STEP), 3))
        else:
            yield from self._window(*self.window)

    def _window(self, t0: float, t1: float, step: float) -> Iterator[Item]:
        """The window's columns, asked for MAX_POINTS steps at a time; SourceError when none of it has the metric."""
        t0_ms, t1_ms, step_ms = round(t0 * 1000), round(t1 * 1000), round(step * 1000)
        count, tail_ms = divmod(t1_ms - t0_ms, step_ms)
        if tail_ms:
            last = (t0_ms + count * step_ms) / 1000
            yield Notice(f"prometheus: the window is not a whole number of {step:g}s steps: its last "
                         f"{tail_ms / 1000:g}s, {_iso(last)} to {_iso(t1)}, are left out (no column)", skipped=0)
        waiting: list[float] = []  # steps before the first part with data: gap columns once a stream is known
        for first in range(0, count, MAX_POINTS):
            times = [(t0_ms + step_ms * (i + 1)) / 1000 for i in range(first, min(count, first + MAX_POINTS))]
            try:
                got = self._fetch(step, times)
            except EndpointError as err:
                raise SourceError(f"prometheus: {err}") from None
            if got.note is not None:
                yield got.note
            if not got.buckets and not self.builder.known():
                waiting += times
                continue
            yield from self.columns(got, waiting + times, step)
            waiting = []
        if not self.builder.known():
            raise self._nothing_to_map() or SourceError(f"prometheus: {self._missing(t0, t1, step)[0]}")

    def _missing(self, t0: float, t1: float, step: float) -> tuple[str, bool]:
        """Why no histogram came back between t0 and t1, as far as the API can tell, and whether asking again cannot
        help (the name is another type of metric, or the server neither has series of it nor declares it)."""
        span = f"between {_iso(t0)} and {_iso(t1)}"
        try:
            return self._diagnose(t0, t1, step, span)
        except EndpointError:
            return f"{self.api.shown}: no {self._what()} {span}", False

    def _diagnose(self, t0: float, t1: float, step: float, span: str) -> tuple[str, bool]:
        """`_missing` from the server's series, metadata and samples (EndpointError when it cannot tell)."""
        where, name, what = self.api.shown, self.metric, self._what()
        wanted = self._names()
        pick = f'__name__=~"{name}|{name}_bucket"'
        found = self.api.series("{" + ",".join([pick, *(m.promql() for m in self.matchers)]) + "}", t0, t1)
        types = self.api.metadata(name).get(name, set()) - {"unknown", ""}
        buckets = any(s.get("__name__") == f"{name}_bucket" for s in found)
        if types and not types & _HISTOGRAM_TYPES and not buckets:
            return f"{where}: {name} is a {'/'.join(sorted(types))}, not a histogram (the targets' metadata)", True
        if not buckets and any(s.get("__name__") == name for s in found) and self._plain(t0, t1, step):
            return f"{where}: {self._plain_type()}{self._histograms_there()}", True
        mine = [s for s in found if s.get("__name__") in wanted]
        if mine:
            return self._too_short(mine[0], t1, step, f"{where}: {what} has series {span}")
        if found and self.kind == "native":
            return f"{where}: {name} has only classic buckets ({name}_bucket) {span}; --histogram classic or auto " \
                   "reads them", False
        if found:
            return f"{where}: {name} is only a native histogram {span}; --histogram native or auto reads it", False
        if self.matchers and self.api.series("{" + pick + "}", t0, t1):
            given = " ".join(f"{m.label}{m.op}{m.value}" for m in self.matchers)
            return f"{where}: no {what} series match --match {given} {span}", False
        if types:
            return f"{where}: no {what} {span} (the targets declare {name}: the window is before or after it)", False
        return f"{where}: no {what} {span}{self._histograms_there()}", True

    def _plain(self, t0: float, t1: float, step: float) -> bool:
        """Whether series named `--metric` have plain numbers between t0 and t1 (a counter's or a gauge's), not native
        histograms: the API answers those as `value`s, these as `histogram`s, and `histogram_count()` has none of
        them. One range query of one count per step, at most MAX_POINTS steps of at most a minute (longer in windows
        over a week, under the server's 5 minute lookback up to 38 days)."""
        every = max(min(step, 60.0), (t1 - t0) / (MAX_POINTS - 1))
        named = selector(self.metric, self.matchers)
        got = self.api.query_range(f"count({named} unless histogram_count({named}))", t0, t1, round(every, 3))
        return any(v > 0 for s in got for _, v in s.floats)

    def _plain_type(self) -> str:
        """What a metric of plain numbers is, as the targets' metadata declares it (a counter's under its name without
        `_total`, as OpenMetrics names the family), or that it declares no type."""
        name = self.metric
        family = name.removesuffix("_total")
        kinds = self.api.metadata(family).get(family, set()) - {"unknown", ""} if family != name else set()
        if kinds:
            kind = "/".join(sorted(kinds))
            return (f"{name} is a {kind}, not a histogram: its samples are plain numbers, and the targets' metadata "
                    f"declares {family} a {kind}")
        return (f"{name} is not a histogram: its samples are plain numbers (a counter's or a gauge's; the targets' "
                f"metadata gives it no type), not native histograms, and it has no {name}_bucket series")

    def _histograms_there(self) -> str:
        """`; did you mean x?` or ` (histograms there: a, b)` from the server's metadata (or its series names)."""
        declared = self.api.metadata()
        have = sorted(n for n, kinds in declared.items() if kinds & _HISTOGRAM_TYPES)
        if not declared:
            names = self.api.data("/api/v1/label/__name__/values", {})
            have = sorted({str(n).removesuffix("_bucket") for n in names if str(n).endswith("_bucket")}) \
                if isinstance(names, list) else []
        close = difflib.get_close_matches(self.metric, have, n=3, cutoff=0.75)
        if close:
            return f"; did you mean {' or '.join(close)}?"
        return f" (histograms there: {', '.join(have[:10])}{', ...' * (len(have) > 10)})" if have else \
            " (the server names no histograms)"

    def _too_short(self, labels: dict[str, str], at: float, step: float, has: str) -> tuple[str, bool]:
        """A histogram that has series but no increase at any step: the step holds fewer than two samples (never,
        when it is shorter than their spacing)."""
        spacing = sample_spacing(self.api, labels, at, LOOKBACK)
        if spacing is not None and step >= 2 * spacing:
            return f"{has}, but increase() over {promql_duration(step)} has no value at any step", False
        apart = f", and its samples are {seconds_text(spacing)}s apart" if spacing else ""
        need = f"--step {seconds_text(2 * spacing)} or more" if spacing else \
            "a step of at least twice the scrape interval"
        return (f"{has}, but increase() over {promql_duration(step)} has no value at any step: a step must hold two "
                f"samples of a series{apart}; use {need}"), spacing is not None and step < spacing

    def _names(self) -> tuple[str, ...]:
        """The names of the histogram's bucket series: native, classic (`_bucket`), or either."""
        name = self.metric
        return {"native": (name,), "classic": (f"{name}_bucket",)}.get(self.kind, (name, f"{name}_bucket"))

    def _what(self) -> str:
        names = {"native": f"native histogram {self.metric}", "classic": f"{self.metric}_bucket series"}
        return names.get(self.kind, f"{self.metric} histogram (native or {self.metric}_bucket)")

    def _live(self, step: float) -> Iterator[Item]:
        """Poll for each step as it ends; after failures, catch up on the missed steps in one range query."""
        due = math.floor((self.clock() - self.delay) / step)  # steps are numbered: step k ends at k * step
        failures, told_empty = 0, False
        while True:
            now = self.clock()
            if now < due * step + self.delay:
                self.sleep(due * step + self.delay - now)
                continue
            last = max(due, math.floor((now - self.delay) / step))
            if last - due >= MAX_POINTS:  # too far behind: the oldest steps become one gap column
                for stream in self.builder.known():
                    yield Interval(stream, (due - 1) * step, (last - MAX_POINTS) * step, empty_counts(), gap=True)
                due = last - MAX_POINTS + 1
            times = [k * step for k in range(due, last + 1)]
            try:
                got = self._fetch(step, times)
            except EndpointError as err:
                if not err.transient:
                    raise SourceError(f"prometheus: {err}") from None
                failures += 1
                delay = backoff(step, failures)
                yield Notice(f"prometheus: {retry_message(str(err), failures, delay)}", skipped=0)
                self.sleep(delay)
                continue
            if failures:
                yield Notice(f"prometheus: {self.api.shown} answered again after {failures} failed "
                             f"attempt{'s' * (failures > 1)}; caught up on {len(times)} steps", skipped=0)
                failures = 0
            if got.note is not None:
                yield got.note
            if not got.buckets and not self.builder.known() and not told_empty:
                told_empty = True
                why, hopeless = self._missing(times[-1] - LOOKBACK, times[-1], step)
                if hopeless:
                    raise SourceError(f"prometheus: {why}")
                yield Notice(f"prometheus: {why}; asking every step", skipped=0)
            yield from self.columns(got, times, step)
            due = last + 1

def _key(t: float) -> float:
    """A step time as a dictionary key (the API writes times with millisecond precision)."""
    return round(t, 3)


def _classic_tables(series: list[Series]) -> dict[Labels, tuple[np.ndarray, list[float], np.ndarray]]:
    """Per label set (without le): ascending le bounds, step times, and the (steps x le) increases, NaN where none.

    Series whose le differ only in spelling (`1` from a Go client, `1.0` from a Python one) add up.
    """
    grouped: dict[Labels, dict[float, dict[float, float]]] = {}
    for s in series:
        try:
            le = float(s.labels.get("le", "nan"))
        except ValueError:
            continue
        if math.isnan(le):
            continue
        points = grouped.setdefault(labels_key(s.labels), {}).setdefault(le, {})
        for t, v in s.floats:
            points[_key(t)] = points.get(_key(t), 0.0) + v
    out: dict[Labels, tuple[np.ndarray, list[float], np.ndarray]] = {}
    for key, by_le in grouped.items():
        les = np.array(sorted(by_le))
        stamps = sorted({t for points in by_le.values() for t in points})
        row = {t: i for i, t in enumerate(stamps)}
        table = np.full((len(stamps), len(les)), np.nan)
        for j, le in enumerate(les.tolist()):
            for t, v in by_le[le].items():
                table[row[t], j] = v if math.isfinite(v) else np.nan
        out[key] = (les, stamps, table)
    return out


def _iso(t: float) -> str:
    stamp = datetime.fromtimestamp(t, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + (f".{stamp.microsecond // 1000:03d}Z" if t % 1 else "Z")
