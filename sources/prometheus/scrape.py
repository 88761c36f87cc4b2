"""`latencymap scrape URL --metric NAME`: a Prometheus histogram read straight from any `/metrics` endpoint.

Every `--interval` seconds the source GETs the page (the protobuf exposition, OpenMetrics 1.0 or the text format 0.0.4,
whichever the endpoint answers; protobuf only unless `--histogram classic`, since only it carries native histograms),
reads the cumulative `NAME_bucket{le=...}`, `NAME_sum` and `NAME_count` of every label set (or its native histogram:
`protobuf.py`), and diffs each against the previous scrape: one column per scrape, one stream per label set (or per
value of the `--sum-by` labels). The first scrape is the baseline. A label set first seen after it (a new status or
handler, an error burst) whose `_created` (or created timestamp) is after the scrape before was asked for counts from
zero: its first column, from the scrape before, holds all it counted; without one (client_golang's text page), or with
one from before that scrape, nothing tells its counts from those of a long life, and its first reading is its baseline,
said once. A histogram whose counts went down, or whose `_created` changed (a restart whose new counts already exceed
the old ones), was reset (its process restarted): that
column counts what it holds now, its `_sum` the exact time, and is marked reset, whatever its buckets (a redeploy with
new `le` bounds too). Buckets that changed while the counts went on cannot be diffed: that column is a gap, and
counting starts again from its scrape (a native histogram's zero bucket widened over whole buckets, as client_golang
widens it, is diffed exactly: those buckets are in its zero count now). A `_sum` that went down while no bucket did
(negative observations, which Prometheus allows) gives no negative time: that column's time is unknown, estimated from
its buckets, said once per series. A gauge histogram (OpenMetrics `gaugehistogram`: `_bucket`, `_gcount`, `_gsum`, or
protobuf type 5; in the text format 0.0.4, which has no such type, its `_gcount` without a `_count`) is a distribution
as it stands at each scrape (such as the ages of the items queued now), not counters: each column holds what its scrape
read (buckets still cumulative over `le`), `_gsum` its time, never diffed nor reset, said once; the first scrape only
starts the first column (a label set new after it has one from its first scrape). An incomplete reading (a page cut
short: no `+Inf` bucket, the known buckets' strict prefix, or
without the `_count` or `_sum` the series had) is skipped for its series with a note: the next complete scrape's column
covers its time. Unreadable lines are named once per kind, with their count. A histogram with only its `+Inf` bucket
holds no latency (histogram_quantile gives NaN): it is left out with a note saying what it holds (the source stops when
that is all the page has). An endpoint that fails (refused, timeout, HTTP 500, an HTML page, text that is not
exposition, the metric missing) gives a notice naming the URL and what was expected, and is asked again with backoff;
since the counters are cumulative nothing is lost: the next answer's column spans the outage and is marked as a gap. A
run bounded by `--count` gives up (exit 1) after `GIVE_UP` (5) failed scrapes in a row (a page that declares the
histogram, waited for, is no failure there); one bounded by `--duration` at its end. An answer that asking again will
not change (HTTP 4xx but 408 and 429: not found, unauthorized, forbidden; the histogram only of the kind that
`--histogram native|classic` does not read, or a text page for `native`) before the first good scrape stops the source
at once with an error naming the URL and the status or the kind (exit 1); after one, it is asked again as any failure
(a route gone for a moment during a redeploy). Before the first good scrape, a page that answers without any
histogram of that name (or has it as another type) stops the source with an error naming the histograms it has:
waiting will not bring it (a
declared histogram without series yet, or series that `--match` skips, is waited for; `--wait-for-metric` waits for a
name the page lacks, never for one it has as another type, such as a counter). A `--sum-by` label that no series of
the first good scrape has stops the source, naming the labels they have (a typo would sum them all into one stream);
one that only some have is said once. Columns end when a scrape's
answer arrives; timestamps in the page (a /federate endpoint's) are read but not used. `--count N` and `--duration S`
stop the source itself at a whole scrape (`Source.own_limits`), so every stream ends on the same one: after the Nth
scrape that gave columns, or at `S` seconds after the source started, the last scrape before it ending every stream (a
scrape whose columns end at `S` or later also ends it; while the endpoint fails, once that time has passed).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

import click

from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.sanitize import clean_text
from latencymap.plugins import Item, Source, SourceError

from . import protobuf
from .exposition import ACCEPT, Exposition, is_openmetrics, parse_exposition
from .layout import family_name, layout_of
from .native import NativeError, fold_native, negative_note
from .protobuf import NativeReading, api_histogram, diff_native, is_protobuf, parse_protobuf
from .series import (
    Labels,
    Reading,
    describe_labels,
    diff_readings,
    histogram_readings,
    incomplete,
    is_gauge_histogram,
    per_bucket,
)
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
from .transport import EndpointError, backoff, check_url, http_get, public_url, retry_message

EXPECTED = "Prometheus text exposition (text/plain; version=0.0.4) or OpenMetrics with a histogram"
#: What `--histogram auto|native` asks for: the protobuf exposition first (native histograms), then text.
ACCEPT_PROTOBUF = (f"{protobuf.ACCEPT};q=1,application/openmetrics-text;version=1.0.0;q=0.6,"
                   "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
MAX_TOLD = 1000
#: Failed scrapes in a row after which a run bounded by `--count` gives up.
GIVE_UP = 5
#: What a source built by the CLI sleeps and reads the time with (tests replace these).
default_sleep: Callable[[float], None] = time.sleep
default_clock: Callable[[], float] = time.time


class MetricMissing(EndpointError):
    """A page that answers but has no histogram of that name (or has it as another type, or of the other kind);
    `other_type`: the name is there, as another type of metric (no wait turns it into a histogram)."""

    def __init__(self, message: str, other_type: bool = False) -> None:
        super().__init__(message, transient=False)
        self.other_type = other_type


class NoSeries(EndpointError):
    """A page that declares the histogram but has no series of it yet, or none that `--match` keeps: waited for, the
    endpoint answering (never given up on under `--count`)."""


def metric_option(metric: str) -> str:
    """The histogram's family name from `--metric`; click.BadParameter when it is no metric name."""
    if not re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", metric or ""):
        raise click.BadParameter(f"expected a metric name such as http_request_duration_seconds, got {metric!r}",
                                 param_hint="--metric")
    return family_name(metric)


class ScrapeSource(Source):
    """Cumulative Prometheus histograms scraped from an endpoint, diffed into one column per scrape."""

    name: ClassVar[str] = "scrape"
    examples: ClassVar[tuple[str, ...]] = (
        "latencymap scrape http://localhost:8000/metrics --metric http_request_duration_seconds",
        "latencymap scrape http://localhost:8000/metrics --metric rpc_latency_seconds --sum-by method",
    )
    summary: ClassVar[str] = ("Prometheus histograms (classic or native) scraped from any /metrics endpoint "
                              "(text, OpenMetrics or protobuf) every interval.")
    own_limits: ClassVar[bool] = True  # --count scrapes with columns, --duration: whole scrapes, every stream

    @classmethod
    def params(cls) -> list[click.Parameter]:
        return [
            click.Argument(["url"], metavar="URL"),
            *histogram_options(),
            kind_option(),
            click.Option(["--interval"], type=click.FloatRange(min=0.01), default=3.0, show_default=True,
                         metavar="S", help="Seconds between scrapes (one column each)."),
            click.Option(["--wait-for-metric"], is_flag=True,
                         help="When the page does not have the histogram yet (a client library shows a labelled "
                              "histogram only after its first observation), scrape again every interval until it "
                              "does, instead of stopping with exit 1."),
        ]

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.url = str(options["url"])
        try:
            check_url(self.url)
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint="URL") from None
        self.shown = public_url(self.url)
        self.metric = metric_option(str(options.get("metric") or ""))
        self.matchers = parse_matchers(options.get("match") or ())
        self.builder = StreamBuilder.from_options(self.metric, options)
        self.interval = float(options.get("interval") or 3.0)
        self.kind = str(options.get("kind") or "auto")
        self.wait_for_metric = bool(options.get("wait_for_metric"))
        self.timeout = float(options.get("timeout") or 10.0)
        self.sleep = default_sleep
        self.clock = default_clock
        self.scrapes = 0
        count, duration = options.get("count"), options.get("duration")
        self.count = None if count is None else int(count)
        self.duration = None if duration is None else float(duration)
        self._told: set[str] = set()
        self._bad_kinds: set[str] = set()  # kinds of unreadable lines said (the first one's message)
        self._left_out: set[Labels] = set()  # series with no finite bucket, noted once
        self._negative: set[Labels] = set()  # native series found holding negative values, noted once
        self._sum_down: set[Labels] = set()  # series whose _sum went down while no bucket did, noted once
        self._diffable = 0  # series of the last scrape that had a reading before it
        self._seen: set[Labels] = set()  # every label set any good scrape had (cut short too)
        self._since: float | None = None  # when the last good scrape was asked for (None before the first)
        self._begun: float | None = None  # when its answer came: where a new series' first column starts
        self._baseline_said: set[str] = set()  # why new series were taken as baselines, said once each
        self.gauge = False  # the last scrape's histogram is a gauge histogram: each scrape's counts are a column's

    def describe(self) -> dict[str, Any]:
        return {"source": self.name, "url": self.shown, "metric": self.metric, "interval": self.interval,
                **({"wait_for_metric": True} if self.wait_for_metric else {}),
                "match": [f"{m.label}{m.op}{m.value}" for m in self.matchers], "sum_by": list(self.builder.sum_by),
                "sum": self.builder.sum_all, "histogram": self.kind}

    def scrape(self) -> tuple[dict[Labels, Reading], list[str], dict[Labels, NativeReading]]:
        """One GET: the metric's classic and native readings per label set and what was wrong with some of it;
        EndpointError if none."""
        resp = http_get(self.url, ACCEPT if self.kind == "classic" else ACCEPT_PROTOBUF, self.timeout, EXPECTED)
        if is_protobuf(resp.content_type):
            return self._from_protobuf(resp.body)
        if self.kind == "native":
            raise EndpointError(f"{self.shown}: answered {resp.content_type or 'text'}, not the protobuf exposition; "
                                "native histograms come only in protobuf (--histogram classic reads this page)",
                                transient=False)
        text = resp.body.decode("utf-8", "replace")
        openmetrics = is_openmetrics(resp.content_type) or text.rstrip().endswith("\n# EOF")
        page = parse_exposition(text, openmetrics, keep=lambda line: self.metric in line)
        if openmetrics and not page.eof:
            raise EndpointError(f"{self.shown}: OpenMetrics answer without its '# EOF' line (cut short?); "
                                "expected a complete page")
        self.gauge = is_gauge_histogram(page, self.metric)
        readings, problems = histogram_readings(page.samples, self.metric, self.matchers, self.gauge)
        if not readings:
            raise self._why_missing(text, openmetrics, problems)
        self.scrapes += 1
        self._units(page)
        return readings, [*self._bad_lines(page, "line"), *(f"{self.shown}: {e}" for e in problems)], {}

    def _units(self, page: Exposition) -> None:
        if self.scrapes == 1 and not self.options.get("unit") and self.metric in page.units:
            self.builder = StreamBuilder.from_options(self.metric, self.options, page.units[self.metric])

    def _from_protobuf(self, body: bytes) -> tuple[dict[Labels, Reading], list[str], dict[Labels, NativeReading]]:
        got = parse_protobuf(body, self.metric, self.matchers)
        page = got.page
        readings, problems = histogram_readings(page.samples, self.metric)
        natives = got.native
        if self.kind == "classic":
            natives = {}
        elif self.kind == "native":
            readings = {}
        else:
            readings = {k: r for k, r in readings.items() if k not in natives}
        if not readings and not natives:
            raise self._why_missing_protobuf(page, problems, bool(got.native))
        self.gauge = is_gauge_histogram(page, self.metric)
        self.scrapes += 1
        self._units(page)
        return readings, [*self._bad_lines(page, "message"), *(f"{self.shown}: {e}" for e in problems)], natives

    def _bad_lines(self, page: Exposition, unit: str) -> list[str]:
        """The page's unreadable lines as one problem (their count, the first ones named), said once per kind: the
        first one's message without its line number."""
        if not page.bad_lines:
            return []
        kind = re.sub(r"^(?:line|protobuf message) \d+: ", "", page.errors[0]) if page.errors else ""
        if kind in self._bad_kinds or len(self._bad_kinds) >= MAX_TOLD:
            return []
        self._bad_kinds.add(kind)
        named = "; ".join(page.errors[:3]) + ("; ..." if page.bad_lines > 3 else "")
        return [f"{self.shown}: {page.bad_lines} exposition {unit}{'s' * (page.bad_lines > 1)} could not be read, "
                f"skipped ({named})"]

    def _why_missing_protobuf(self, page: Exposition, problems: list[str], had_native: bool) -> EndpointError:
        kind = page.types.get(self.metric)
        if page.errors and kind is None:
            return _error(f"{self.shown}: not the protobuf exposition ({page.errors[0]}); expected {EXPECTED}")
        if kind is None and any(s.name == f"{self.metric}_bucket" for s in page.samples):
            return _error(self._no_match(), waiting=True)  # /federate's untyped _bucket families, none matching
        if kind is None and (other := self._other_type(page)) is not None:
            return _error(other, missing=True, other=True)
        if kind is None:
            declared = (n.removesuffix("_bucket") for n, k in page.types.items() if k == "histogram" or
                        n.endswith("_bucket"))  # /federate gives a classic histogram as untyped families
            return _error(self._no_histogram(declared), missing=True)
        if kind not in ("histogram", "gaugehistogram"):
            return _error(self._not_histogram(kind), missing=True, other=True)
        if problems:
            return _error(f"{self.shown}: {problems[0]}")
        if self.kind == "classic" and had_native:
            return _error(f"{self.shown}: {self.metric} is served as a native histogram only (--histogram native "
                          "reads it)", final=True)
        if self.kind == "native" and any(s.name == f"{self.metric}_bucket" for s in page.samples):
            return _error(f"{self.shown}: {self.metric} has no native histogram here, only classic buckets "
                          "(--histogram classic reads them)", final=True)
        return _error(self._no_match() if self.matchers else f"{self.shown}: {self.metric} has no series yet",
                      waiting=True)

    def _why_missing(self, text: str, openmetrics: bool, problems: list[str]) -> EndpointError:
        full: Exposition = parse_exposition(text, openmetrics)
        if not full.samples and not full.types:
            if full.errors:
                return _error(f"{self.shown}: not exposition text ({full.errors[0]}); expected {EXPECTED}")
            return _error(f"{self.shown}: no samples in the answer; expected {EXPECTED}")
        kind = full.types.get(self.metric)
        if kind not in (None, "histogram", "gaugehistogram"):
            return _error(f"{self._not_histogram(kind)}; only histograms ({self.metric}_bucket with le labels) can be "
                          "mapped", missing=True, other=True)
        other = self._other_type(full) if kind is None else None
        if other is not None:
            return _error(f"{other}; only histograms ({self.metric}_bucket with le labels) can be mapped", missing=True,
                          other=True)
        if problems:
            return _error(f"{self.shown}: {problems[0]}")
        if any(s.name == f"{self.metric}_bucket" for s in full.samples):
            return _error(self._no_match(), waiting=True)
        if kind is not None:  # declared, but no label set observed yet (a labelled histogram before its first use)
            return _error(f"{self.shown}: {self.metric} has no series yet", waiting=True)
        others = (s.name.removesuffix("_bucket") for s in full.samples if s.name.endswith("_bucket"))
        return _error(f"{self._no_histogram(others)}; expected {self.metric}_bucket series", missing=True)

    def _not_histogram(self, kind: str) -> str:
        return f"{self.shown}: {self.metric} is a {kind}, not a histogram"

    def _other_type(self, page: Exposition) -> str | None:
        """What `--metric` is where the page has it as no family of that name: a sample of a counter's or another
        family's (OpenMetrics declares `# TYPE reqs counter` for `reqs_total`), an untyped sample, or a counter whose
        family is `NAME_total` (the text format's and protobuf's spelling); None where it is none of these (or where
        `NAME_bucket` samples are there: /federate's untyped families of a classic histogram)."""
        name, types = self.metric, page.types
        if any(s.name == f"{name}_bucket" for s in page.samples):
            return None
        if types.get(f"{name}_total") == "counter":
            return f"{self.shown}: {name} is a counter ({name}_total), not a histogram"
        if not any(s.name == name for s in page.samples):
            return None
        for suffix in ("_total", "_created", "_info"):
            family = name.removesuffix(suffix)
            if family != name and types.get(family) not in (None, "histogram", "gaugehistogram"):
                return f"{self.shown}: {name} is a sample of the {types[family]} {family}, not a histogram"
        return f"{self.shown}: {name} is an untyped sample (no # TYPE line), not a histogram"

    def _no_match(self) -> str:
        wanted = " ".join(f"{m.label}{m.op}{m.value}" for m in self.matchers)
        return f"{self.shown}: no {self.metric} series match --match {wanted}"

    def _no_histogram(self, histograms: Iterable[str]) -> str:
        """No histogram of this name; which ones the answer holds instead."""
        have = sorted(set(histograms))
        there = f"histograms there: {', '.join(have[:10])}" if have else "no histograms there"
        return f"{self.shown}: no histogram {self.metric} ({there})"

    def _tell(self, message: str, skipped: int = 1) -> Iterator[Notice]:
        if message not in self._told and len(self._told) < MAX_TOLD:
            self._told.add(message)
            yield Notice(clean_text(f"scrape: {message}", 400), skipped)

    def items(self) -> Iterator[Item]:
        previous: dict[Labels, Reading] = {}
        natives: dict[Labels, NativeReading] = {}
        last_end: dict[StreamId, float] = {}
        failures, failed_at = 0, 0.0
        down, down_at = 0, 0.0  # of those, the last ones in a row where the endpoint failed (not waits: `NoSeries`)
        due: float | None = None
        rounds = 0  # scrapes that gave columns, for --count
        if self.count is not None and self.count <= 0:
            return
        deadline = None if self.duration is None else self.clock() + self.duration
        while True:
            asked = self.clock()
            try:
                readings, problems, native = self.scrape()
            except EndpointError as err:
                if isinstance(err, MetricMissing) and not self.scrapes:
                    if err.other_type:  # waiting never turns a counter into a histogram
                        raise SourceError(f"scrape: {err}") from None
                    if not self.wait_for_metric:
                        raise SourceError(f"scrape: {err} (--wait-for-metric waits for it to appear)") from None
                    yield from self._tell(f"{err}; waiting for it (--wait-for-metric), scraping every "
                                          f"{self.interval:g}s")
                    if not self._rest(self.interval, deadline):
                        return
                    continue
                if not err.transient and not isinstance(err, MetricMissing) and not self.scrapes:
                    raise SourceError(f"scrape: {err}; stopped: asking again would get the same answer") from None
                if not failures:
                    failed_at = self.clock()
                failures += 1
                if not down:
                    down_at = self.clock()
                down = 0 if isinstance(err, NoSeries) else down + 1
                if self.count is not None and down >= GIVE_UP:
                    raise SourceError(f"scrape: {err}; gave up after {down} failed scrapes in a row "
                                      f"({self.clock() - down_at:.0f}s), before --count {self.count} was "
                                      "reached") from None
                delay = backoff(self.interval, failures)
                yield Notice(f"scrape: {retry_message(str(err), failures, delay)}", skipped=0)
                if not self._rest(delay, deadline):
                    return
                due = None
                continue
            if self.scrapes == 1:
                yield from self._sum_by_checked([*readings, *native])
            if self.scrapes == 1 and readings and not native and all(no_finite_bound(r.bounds)
                                                                     for r in readings.values()):
                key, only = min(readings.items())
                note = self._no_latency(key, only)
                raise SourceError(f"{note.message}: no series of {self.metric} has a finite bucket, nothing to map")
            t = self.clock()
            gap = failures > 0 and bool(previous or natives)
            if failures:
                yield Notice(f"scrape: {self.shown} answered again after {failures} failed scrape"
                             f"{'s' * (failures > 1)} ({t - failed_at:.0f}s)"
                             + ("; the outage is one gap column" if gap else ""), skipped=0)
                failures = down = 0
            for problem in problems:
                yield from self._tell(problem)
            gave = False
            for item in self._columns(readings, previous, last_end, t, gap, native, natives):
                gave = gave or isinstance(item, Interval)
                yield item
            self._since, self._begun = asked, t
            rounds += gave or self._diffable > 0  # a scrape whose series are all left out counts too
            if (self.count is not None and rounds >= self.count) or (deadline is not None and t >= deadline):
                return  # after a whole scrape: every stream has its column of it
            due = self._pace(due, deadline)
            if due is None:
                return  # the next scrape would come after the deadline: this one was the last whole scrape

    def _sum_by_checked(self, keys: list[Labels]) -> Iterator[Notice]:
        """At the first good scrape: SourceError when no series has a `--sum-by` label (a typo would sum them all
        into one stream), naming the labels they have; a note for labels that only some have."""
        absent, partial = sum_by_coverage(self.builder.sum_by, ([k for k, v in key if v] for key in keys))
        if absent:
            have = {k for key in keys for k, v in key if v}
            raise SourceError(f"scrape: {self.shown}: {no_sum_by_label(self.metric, absent, have)}")
        if partial:
            yield partial_sum_by_note("scrape", self.metric, partial)

    def _rest(self, seconds: float, deadline: float | None) -> bool:
        """Sleep `seconds`, or until `deadline` when that comes first; False when the deadline has passed."""
        if deadline is not None:
            seconds = min(seconds, max(0.0, deadline - self.clock()))
        self.sleep(seconds)
        return deadline is None or self.clock() < deadline

    def _columns(self, readings: dict[Labels, Reading], previous: dict[Labels, Reading],
                 last_end: dict[StreamId, float], t: float, gap: bool, native: dict[Labels, NativeReading],
                 natives: dict[Labels, NativeReading]) -> Iterator[Item]:
        """The columns ending at this scrape, one per stream that has a baseline or a series counted from zero (new
        since the scrape before: `_fresh`); a gap column for a stream with a series that cannot be diffed (its
        buckets changed while its counts went on), counted again from here."""
        parts: dict[StreamId, list[Part]] = {}
        present: list[StreamId] = []
        lost: dict[StreamId, str] = {}
        self._diffable = 0
        if self.gauge:
            yield from self._tell(f"{self.shown}: {self.metric} is a gauge histogram (a distribution as it stands at "
                                  "each scrape, such as how long the items queued now have waited): each column holds "
                                  "the distribution its scrape read, not a difference of counts, so what is still "
                                  "there at the next scrape is counted again; the first scrape only starts the first "
                                  "column", skipped=0)
        for key, now in sorted(native.items()):
            stream = self.builder.stream(self.builder.out_key(key))
            present.append(stream)
            before = natives.get(key)
            natives[key] = now
            new = self._since is not None and key not in self._seen
            self._seen.add(key)
            if before is None:
                fresh, said = self._fresh(key, now.created) if new else (False, [])
                yield from said
                if not fresh:
                    continue
                last_end.setdefault(stream, t if self._begun is None else self._begun)
            self._diffable += 1
            native_diff = (api_histogram(now, None), False) if self.gauge or before is None else \
                diff_native(before, now)
            if native_diff is None:
                lost.setdefault(stream, "the zero bucket's width changed")
                continue
            hist, reset = native_diff
            try:
                folded = fold_native(hist, self.builder.factor(stream))
            except NativeError as err:
                yield from self._tell(f"{stream.label}: {err}")
                continue
            if folded.negative and key not in self._negative:
                self._negative.add(key)
                yield negative_note("scrape", describe_labels(self.metric, key))
            spent = folded.spent
            if spent is not None and spent < 0:
                yield from self._sum_went_down(key, 0.0 if before is None else before.total, now.total)
                spent = None
            seconds = None if spent is None else self.builder.seconds(spent)
            parts.setdefault(stream, []).append(Part(folded.layout, folded.counts, seconds, reset))
        for key, cur in sorted(readings.items()):
            old = previous.get(key)
            new = self._since is not None and key not in self._seen
            self._seen.add(key)
            lacks = incomplete(cur, old)
            if lacks is not None:
                yield from self._tell(f"{self.shown}: {describe_labels(self.metric, key)}: an incomplete reading, "
                                      f"without {lacks} (the page cut short?): this scrape is skipped for it, the "
                                      "next complete one's column covers its time")
                continue
            previous[key] = cur
            self._diffable += old is not None
            if no_finite_bound(cur.bounds):
                if key not in self._left_out:
                    self._left_out.add(key)
                    yield self._no_latency(key, cur)
                continue
            stream = self.builder.stream(self.builder.out_key(key), [self.builder.seconds(b) for b in cur.bounds])
            present.append(stream)
            if old is None:
                fresh, said = self._fresh(key, cur.created) if new else (False, [])
                yield from said
                if not fresh:
                    continue
                last_end.setdefault(stream, t if self._begun is None else self._begun)
            diffed = (per_bucket(cur.cumulative), cur.total, False) if self.gauge or old is None else \
                diff_readings(old, cur)
            if diffed is None:
                lost.setdefault(stream, "the buckets changed (new le bounds)")
                continue
            counts, spent, reset = diffed
            if spent is not None and spent < 0:
                yield from self._sum_went_down(key, 0.0 if old is None else old.total, cur.total)
                spent = None
            layout = layout_of(cur.bounds, self.builder.factor(stream))
            seconds = None if spent is None else self.builder.seconds(spent)
            parts.setdefault(stream, []).append(Part(layout, counts, seconds, reset))
        for stream in dict.fromkeys(present):
            start = last_end.get(stream)
            if start is not None and (stream in parts or stream in lost) and t > start:
                if stream in lost:
                    yield from self._tell(f"{stream.label}: {lost[stream]} while the counts went on: what happened "
                                          "since the scrape before cannot be split into the new buckets, so that "
                                          "column is a gap; counting again from this scrape", skipped=0)
                yield self.builder.interval(stream, parts.get(stream, []), start, t, gap or stream in lost)
            last_end[stream] = t
        yield from self.builder.notices
        self.builder.notices.clear()

    def _fresh(self, key: Labels, created: float | None) -> tuple[bool, list[Notice]]:
        """Whether a series first read after the first scrape counts from zero (its first column holds all it
        counted), and what to say (once per reason) where it is its baseline instead. It does when its `_created` (or
        created timestamp) is after the scrape before was asked for: it began counting since (a new label set, an
        error burst; a label set that a restarted process made). A gauge histogram's does: each column is what its
        scrape reads. Without a created timestamp nothing tells a new series from one that counted long before (as
        `increase()` does, its first reading is its baseline); nor with one from before the scrape before (a page that
        left it out, or clocks apart)."""
        if self._since is None:
            return False, []
        if self.gauge or (created is not None and created > self._since):
            return True, []
        series = describe_labels(self.metric, key)
        if created is None:
            why, text = "none", (f"{series} first appeared after the first scrape, with no _created (nor created "
                                 "timestamp) to tell when it began counting: its first reading is its baseline, so "
                                 "what it counted before it is not shown (the same for any label set that appears "
                                 "later without one)")
        else:
            why, text = "before", (f"{series} first appeared after the first scrape, but its _created "
                                   f"({created:.3f}) is before the scrape before ({self._since:.3f}; a page that left "
                                   "it out, or clocks apart): what it counted before it may predate that scrape, so "
                                   "its first reading is its baseline (the same for any other such label set)")
        if why in self._baseline_said:
            return False, []
        self._baseline_said.add(why)
        return False, [Notice(clean_text(f"scrape: {self.shown}: {text}", 400), skipped=0)]

    def _sum_went_down(self, key: Labels, old: float | None, cur: float | None) -> Iterator[Notice]:
        """The note, once per series, for a `_sum` that went down while no bucket did: negative observations (which
        Prometheus allows) or a reset the buckets do not show; either way no time to place latencies by."""
        if key in self._sum_down or len(self._sum_down) >= MAX_TOLD:
            return
        self._sum_down.add(key)
        yield Notice(clean_text(f"scrape: {self.shown}: {describe_labels(self.metric, key)}: _sum went down (from "
                                f"{old or 0.0:g} to {cur or 0.0:g}) while no bucket count did (negative "
                                "observations?): a negative time is no latency, so the time of a column where it does "
                                "is unknown, estimated from its buckets", 400), skipped=0)

    def _no_latency(self, key: Labels, reading: Reading) -> Notice:
        """The note for a series with only its `+Inf` bucket: what it holds so far."""
        seconds = None if reading.total is None else self.builder.seconds(reading.total)
        return no_latency_note("scrape", self.metric, key, reading.count, seconds, "so far")

    def _pace(self, due: float | None, deadline: float | None = None) -> float | None:
        """Sleep until the next scrape is due; never bursts to catch up. None (having slept to `deadline`) when it
        would be due after the deadline."""
        now = self.clock()
        due = now + self.interval if due is None else due + self.interval
        if due <= now:
            return now
        if deadline is not None and due >= deadline:
            self.sleep(max(0.0, deadline - now))
            return None
        self.sleep(due - now)
        return due


def _error(message: str, missing: bool = False, waiting: bool = False, final: bool = False,
           other: bool = False) -> EndpointError:
    """The error for a page without the histogram; `missing`: it answers, but the name is no histogram there (not
    worth waiting for before the first good scrape, unless `--wait-for-metric`; never when `other`: the name is
    another type of metric there, which no wait changes); `waiting`: it declares the
    histogram, without series to map yet (`NoSeries`); `final`: it has the histogram, of the kind `--histogram` does
    not read (no wait brings the other kind: asking again would get the same answer)."""
    text = clean_text(message, 400)
    if final:
        return EndpointError(text, transient=False)
    return MetricMissing(text, other) if missing else NoSeries(text) if waiting else EndpointError(text)
