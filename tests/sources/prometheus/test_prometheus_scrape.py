"""`latencymap scrape`: a real prometheus_client exporter on loopback, driven between scrapes, and bad endpoints."""

from __future__ import annotations

import bisect
import itertools
import math
import random
import re
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Metric
from prometheus_client.core import GaugeHistogramMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_TYPE
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.registry import Collector
from prometheus_support import (
    DEFAULT_BUCKETS,
    POW2_MS_BUCKETS,
    TEXT_TYPE,
    Exporter,
    Redirect,
    Scripted,
    free_port,
    histogram_page,
)

from latencymap.core.accumulator import Accumulator
from latencymap.core.buckets import bin_values
from latencymap.core.model import Interval, Notice
from latencymap.core.row_times import unheld_note
from latencymap.plugins import SourceError
from latencymap.sources.prometheus import scrape as scrape_mod
from latencymap.sources.prometheus.scrape import ScrapeSource
from latencymap.sources.prometheus.transport import retry_message

METRIC = "app_request_duration_seconds"


@pytest.fixture
def exporters() -> Iterator[Callable[..., Exporter]]:
    made: list[Exporter] = []

    def make(**kw: object) -> Exporter:
        made.append(Exporter(**kw))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for e in made:
        e.close()


def run(source: ScrapeSource, sleep: Callable[[float], None], intervals: int,
        real_time: bool = False) -> tuple[list[Interval], list[str]]:
    """Run a source with `sleep` between scrapes until it gave `intervals` columns; (columns, notice messages).

    The source's clock only moves when it sleeps, so every pause between scrapes is a call to `sleep`; with
    `real_time` it is the real clock (the one prometheus_client's `_created` reads), and each pause really sleeps.
    """
    now = [1.7e9]

    def sleeping(seconds: float) -> None:
        now[0] += seconds
        sleep(seconds)

    def real_sleep(seconds: float) -> None:
        sleep(seconds)
        time.sleep(seconds)

    if real_time:
        source.sleep = real_sleep
    else:
        source.sleep, source.clock = sleeping, lambda: now[0]
    got: list[Interval] = []
    said: list[str] = []
    items = source.items()
    for item in itertools.islice(items, 10_000):
        if isinstance(item, Interval):
            got.append(item)
        elif isinstance(item, Notice):
            said.append(item.message)
        if len(got) >= intervals:
            break
    items.close()
    return got, said


@pytest.mark.parametrize("form", ["negotiate", "text", "openmetrics"])
def test_each_column_counts_the_observations_made_between_its_scrapes(exporters, form: str) -> None:
    exporter = exporters(buckets=POW2_MS_BUCKETS, form=form)
    rng = random.Random(7)
    batches: list[dict[str, list[float]]] = []

    def observe_batch(_: float) -> None:
        batch: dict[str, list[float]] = {"GET": [], "POST": []}
        for _ in range(rng.randrange(0, 40)):
            method = rng.choice(["GET", "POST"])
            value = rng.lognormvariate(-4.5, 1.5)
            exporter.observe(value, method)
            batch[method].append(value)
        batches.append(batch)

    exporter.observe(0.003, "GET")
    exporter.observe(0.003, "POST")
    source = ScrapeSource(url=exporter.url, metric=METRIC, interval=0.001)
    columns, said = run(source, observe_batch, 12)
    assert said == []
    if form == "negotiate":
        assert exporter.accepts[0].startswith("application/vnd.google.protobuf")  # native histograms first,
        assert "application/openmetrics-text" in exporter.accepts[0]  # and what prometheus_client answers
    for k, column in enumerate(columns):
        method = "GET" if column.stream.label.endswith('"GET"}') else "POST"
        assert column.stream.label == f'{METRIC}{{method="{method}"}}' and column.stream.unit == "millisec"
        values = np.array(batches[k // 2][method]) * 1000.0
        expected, _ = bin_values(np.minimum(values, 1500.0))  # above 1.024 s: the +Inf row, [1024, 2048) ms
        assert column.counts.tolist() == expected.tolist()
        assert not column.reset and not column.gap
        own = column.source_buckets  # an exact fold: the rows are the buckets, kept for what `+Inf` holds
        assert own is not None and own.bounds == (*(2.0**k for k in range(11)), math.inf)
        assert own.counts.tolist() == column.counts[:12].tolist()
        assert own.total_time == pytest.approx(sum(batches[k // 2][method]), rel=1e-9, abs=1e-12)
    assert all(a.end == b.start for a, b in zip(columns[::2], columns[2::2], strict=False))


def test_default_buckets_are_rebinned_and_keep_their_own_counts_and_sum(exporters) -> None:
    exporter = exporters(labels=())
    rng = random.Random(3)
    made: list[list[float]] = []

    def observe_batch(_: float) -> None:
        values = [rng.lognormvariate(-3.0, 1.2) for _ in range(rng.randrange(1, 60))]
        for v in values:
            exporter.observe(v)
        made.append(values)

    exporter.observe(0.02)
    columns, _ = run(ScrapeSource(url=exporter.url, metric=METRIC + "_bucket", interval=0.001), observe_batch, 6)
    for column, values in zip(columns, made, strict=False):
        kept = column.source_buckets
        assert column.stream.unit == "microsec" and kept is not None
        assert kept.bounds == tuple(b * 1e6 for b in DEFAULT_BUCKETS)
        per_bucket = np.bincount([bisect.bisect_left(DEFAULT_BUCKETS, v) for v in values], minlength=len(kept.bounds))
        assert kept.counts.tolist() == per_bucket.tolist()
        assert kept.total_time == pytest.approx(sum(values), rel=1e-9)
        assert column.counts.sum() == len(values)


def test_a_sum_over_power_of_two_buckets_leaves_each_rows_mean_inside_it_and_nearer_the_truth(exporters) -> None:
    """880 observations of 0.1 ms and 100 of 5 ms: 588 ms, 85% of it in the 4-8 ms row. Scaled to the `_sum` by one
    factor, the rows' midpoints gave that row 57.7%, a mean of 3.39 ms, outside it; fitted inside the rows, 78%."""
    exporter = exporters(labels=(), buckets=POW2_MS_BUCKETS)

    def observe_batch(_: float) -> None:
        for i in range(980):
            exporter.observe(0.005 if i % 98 < 10 else 0.0001)

    exporter.observe(0.0001)
    columns, said = run(ScrapeSource(url=exporter.url, metric=METRIC, interval=0.001), observe_batch, 1)
    acc = Accumulator()
    acc.add(columns)
    (hist,) = acc.streams.values()
    spent = hist.time_in()[0].astype(np.float64)
    assert said == [] and hist.stream.unit == "millisec" and hist.counts_in()[0, [0, 3]].tolist() == [880, 100]
    assert spent.sum() == pytest.approx(0.588, rel=1e-9)
    assert 4e-3 <= spent[3] / 100 < 8e-3 and 0 <= spent[0] / 880 < 1e-3
    assert abs(spent[3] / spent.sum() - 0.85) < 0.08  # 0.78


def test_a_sum_the_spread_rows_could_not_hold_moves_the_fewest_events_until_they_can(exporters) -> None:
    """Default buckets, 1,000 observations of 25.1 ms (in (25, 50] ms, spread log-uniformly 415 in the row 16-32 ms
    and 585 in 32-64 ms: at least 29.5 s) and 10 each of 1 and 110 ms: a `_sum` of 26.2 s, less than those rows
    can take. Moved down a row, the fewest that make the rows hold it (until 2026-11-28 the rows stayed, every one
    at its lower bound, with a note that the sum was out of their reach); each row's time inside it."""
    exporter = exporters(labels=())

    def observe_batch(_: float) -> None:
        for value, times in ((0.0251, 1000), (0.001, 10), (0.11, 10)):
            for _ in range(times):
                exporter.observe(value)

    exporter.observe(0.02)
    columns, said = run(ScrapeSource(url=exporter.url, metric=METRIC, interval=0.001), observe_batch, 1)
    acc = Accumulator()
    acc.add(columns)
    (hist,) = acc.streams.values()
    counts, spent = hist.counts_in()[0], hist.time_in()[0].astype(np.float64)
    assert said == [] and hist.unheld == 0 and not [m for m in acc.messages if "exact time" in m]
    assert spent.sum() == pytest.approx(26.21, rel=1e-9)
    assert (spent >= counts * hist.low * (1 - 1e-9)).all() and (spent <= counts * hist.high * (1 + 1e-9)).all()
    assert counts[15] + counts[16] == 1000 and counts[15] * 0.025 + counts[16] * 0.032768 + 10 * 0.1 <= 26.21


def test_a_sum_the_buckets_cannot_hold_leaves_the_rows_at_their_bounds_and_says_so() -> None:
    """1,000 events in (25, 50] ms and a `_sum` of 10 s, less than every one at 25 ms, and than their row, 16-32 ms,
    can take: they stay at the lower bound of their bucket's part of the row, 25 ms (until 2026-11-29, at the row's,
    16.4 ms, below their bucket); the stream's own totals keep the sum, and the report's time and mean are it."""
    endpoint = _pages((DEFAULT_LE, {}, 0.0), (DEFAULT_LE, {0.05: 1000}, 10.0))
    try:
        columns, said = run(ScrapeSource(url=endpoint.url, metric="svc_seconds", interval=0.3), lambda _: None, 1)
    finally:
        endpoint.close()
    acc = Accumulator()
    acc.add(columns)
    (hist,) = acc.streams.values()
    counts, spent = hist.counts_in()[0], hist.time_in()[0].astype(np.float64)
    assert said == [] and int(counts.sum()) == 1000 and spent == pytest.approx(counts * 0.025, rel=1e-9)
    assert hist.unheld == 1
    assert acc.sources[hist.stream].time_s == pytest.approx(10.0, rel=1e-9)
    assert [m for m in acc.messages if "exact time" in m] == [unheld_note("svc_seconds")]


def test_the_first_bucket_goes_no_lower_than_a_real_exporters_sum_allows(exporters) -> None:
    """A prometheus_client exporter's default buckets: 100 observations in 4.5-5 ms and 100 in 9.5-10 ms, 1.45 s.
    With 56 or more below 4.1 ms the sum could not reach 1.45 s (the others at 5 and at 10 ms): the rows put 10
    there, the first bucket over [4, 5] ms (they put 71 there, a faster band, while it was only ever moved down)."""
    exporter = exporters(labels=())

    def observe_batch(_: float) -> None:
        for i in range(100):
            exporter.observe(0.0045 + 0.0005 * i / 99)
            exporter.observe(0.0095 + 0.0005 * i / 99)

    exporter.observe(0.02)
    columns, said = run(ScrapeSource(url=exporter.url, metric=METRIC, interval=0.001), observe_batch, 1)
    (column,) = columns
    assert said == [] and column.source_buckets is not None
    assert column.source_buckets.total_time == pytest.approx(1.45, rel=1e-9)
    assert column.counts[12:15].tolist() == [10, 90, 100] and column.counts.sum() == 200  # rows 2.05, 4.1, 8.19 ms
    acc = Accumulator()
    acc.add(columns)
    (hist,) = acc.streams.values()
    assert hist.unheld == 0 and hist.time_in()[0].sum() == pytest.approx(1.45, rel=1e-9)
    spent = hist.time_in()[0].astype(np.float64)[12:15] / column.counts[12:15]
    assert 2.048e-3 <= spent[0] <= 4.096e-3 and 4.096e-3 <= spent[1] <= 5e-3 and 8.192e-3 <= spent[2] <= 1e-2


def test_a_sum_keeps_each_rows_mean_inside_the_buckets_its_events_came_from(exporters) -> None:
    """Default buckets, 1000 observations of 4 ms and 10 of 9 ms (4.09 s): the rows 4.1-8.19 and 8.19-16.4 ms hold 455
    and 3, the first 448 of (0, 5] ms and 7 of (5, 10] ms (5.05 ms on average at most), the second only (5, 10] ms's
    (10 ms at most). Fitted to the `_sum` within their rows alone, they took 5.55 and 11.1 ms (until 2026-11-29);
    within the cells of their buckets, 4.75 and 9.42 ms (the truth: 4 and 9 ms)."""
    exporter = exporters(labels=())

    def observe_batch(_: float) -> None:
        for value, times in ((0.004, 1000), (0.009, 10)):
            for _ in range(times):
                exporter.observe(value)

    exporter.observe(0.02)
    columns, said = run(ScrapeSource(url=exporter.url, metric=METRIC, interval=0.001), observe_batch, 1)
    (column,) = columns
    assert said == [] and column.counts[12:15].tolist() == [552, 455, 3] and column.counts.sum() == 1010
    acc = Accumulator()
    acc.add(columns)
    (hist,) = acc.streams.values()
    spent = hist.time_in()[0].astype(np.float64)
    assert hist.unheld == 0 and spent.sum() == pytest.approx(4.09, rel=1e-9)
    mean = spent[12:15] / column.counts[12:15]
    assert 2.048e-3 <= mean[0] <= 4.096e-3
    assert 4.096e-3 <= mean[1] <= (448 * 5e-3 + 7 * 8.192e-3) / 455 and 8.192e-3 <= mean[2] <= 1e-2


def test_sum_by_and_sum(exporters) -> None:
    exporter = exporters(labels=("method", "code"), buckets=POW2_MS_BUCKETS)
    combos = [("GET", "200"), ("GET", "500"), ("POST", "200")]
    for combo in combos:
        exporter.observe(0.001, *combo)

    def observe(_: float) -> None:
        for i, combo in enumerate(combos):
            for _ in range(i + 1):
                exporter.observe(0.005, *combo)

    by_method, _ = run(ScrapeSource(url=exporter.url, metric=METRIC, interval=0.001, sum_by=("method",)), observe, 4)
    assert {c.stream.label: int(c.counts.sum()) for c in by_method} == {
        f'{METRIC}{{method="GET"}}': 3, f'{METRIC}{{method="POST"}}': 3}
    summed, _ = run(ScrapeSource(url=exporter.url, metric=METRIC, interval=0.001, sum_all=True), observe, 2)
    assert [c.stream.label for c in summed] == [METRIC, METRIC]
    assert [int(c.counts[3]) for c in summed] == [6, 6]  # 5 ms: row [4, 8) ms


def test_a_sum_by_label_no_series_has_stops_the_source_naming_the_labels_they_have(exporters) -> None:
    """`--sum-by methd` summed every series into one stream `{methd=""}` with no word; a label only some series have
    groups them as before, said once."""
    exporter = exporters(labels=("method", "status"))
    exporter.observe(0.01, "GET", "200")
    exporter.observe(0.9, "POST", "500")
    source = ScrapeSource(url=exporter.url, metric=METRIC, interval=0.001, sum_by=("methd",), count=2)
    expected = (f'scrape: {exporter.url}: no series of {METRIC} has a label methd: --sum-by would group every series '
                'as methd=""; their labels: method, status; did you mean method?')
    with pytest.raises(SourceError, match=re.escape(expected)):
        run(source, lambda _: None, 2)
    page = (histogram_page("h_seconds", (0.1, math.inf), [1, 2], 0.3, 'method="GET",pod="a"')
            + histogram_page("h_seconds", (0.1, math.inf), [1, 1], 0.05, 'method="GET"').split("\n", 1)[1])
    more = page.replace(" 1\n", " 4\n").replace(" 2\n", " 5\n")
    endpoint = Scripted([(200, TEXT_TYPE, page), (200, TEXT_TYPE, more)])
    try:
        columns, said = run(ScrapeSource(url=endpoint.url, metric="h_seconds", interval=0.001, sum_by=("pod",)),
                            lambda _: None, 2)
    finally:
        endpoint.close()
    assert said == ['scrape: some series of h_seconds have no pod label (--sum-by): they are summed into streams '
                    'where pod is empty']
    assert {c.stream.label: int(c.counts.sum()) for c in columns} == {'h_seconds{pod="a"}': 3,
                                                                      'h_seconds{pod=""}': 3}


@pytest.mark.parametrize("form", ["negotiate", "text", "openmetrics"])
@pytest.mark.parametrize("sum_all", [False, True])
def test_a_label_set_new_after_the_first_scrape_counts_from_zero_by_its_created(exporters, form: str,
                                                                                sum_all: bool) -> None:
    """A label set that first appears mid-run (a new status, an error burst) holds at its first scrape all it counted
    since its `_created`, which is after the scrape before: its first column has all of it, from that scrape on (it
    was taken as its baseline: 150 errors of 0.9 s read as no events, and `--sum` as 300 events, 0.9 s)."""
    exporter = exporters(buckets=(0.005, 0.1, 1.0), form=form)
    for _ in range(100):
        exporter.observe(0.003, "GET")
    pauses = itertools.count(1)

    def act(_: float) -> None:
        k = next(pauses)
        for _ in range(100):
            exporter.observe(0.003, "GET")
        if k == 2:
            for _ in range(150):
                exporter.observe(0.9, "ERR")

    source = ScrapeSource(url=exporter.url, metric=METRIC, interval=0.05, sum_all=sum_all)
    columns, said = run(source, act, 3 if sum_all else 5, real_time=True)
    assert said == []
    assert all(not c.gap and not c.reset for c in columns)
    events = [int(c.counts.sum()) for c in columns]
    times = [c.source_buckets.total_time if c.source_buckets else None for c in columns]
    if sum_all:
        assert events == [100, 250, 100]
        assert times == pytest.approx([0.3, 135.3, 0.3])
        return
    err = [c for c in columns if c.stream.label.endswith('"ERR"}')]
    get = [c for c in columns if c.stream.label.endswith('"GET"}')]
    assert [int(c.counts.sum()) for c in err] == [150, 0] and [int(c.counts.sum()) for c in get] == [100] * 3
    assert (err[0].start, err[0].end) == (get[1].start, get[1].end)  # since the scrape before
    assert err[0].source_buckets is not None and err[0].source_buckets.total_time == pytest.approx(135.0)
    assert err[0].source_buckets.counts.tolist() == [0, 0, 150, 0]


def _labelled_page(series: dict[str, tuple[int, float | None]]) -> str:
    """A text page of `h_seconds` per `method`: (events of 1 ms, `_created` or None) each."""
    lines = ["# TYPE h_seconds histogram"]
    for method, (events, _) in series.items():
        lab = f'method="{method}"'
        lines += [f'h_seconds_bucket{{{lab},le="0.002"}} {events}', f'h_seconds_bucket{{{lab},le="+Inf"}} {events}',
                  f"h_seconds_sum{{{lab}}} {0.001 * events!r}", f"h_seconds_count{{{lab}}} {events}"]
    lines += [f'h_seconds_created{{method="{m}"}} {c!r}' for m, (_, c) in series.items() if c is not None]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("created", [None, 1.7e9 - 60.0])
def test_a_label_set_new_after_the_first_scrape_without_a_later_created_is_its_baseline_said_once(
        created: float | None) -> None:
    """Without a `_created` (client_golang's text page), or with one from before the scrape before, nothing says
    whether a new label set's counts are recent or as old as its process: its first reading is its baseline, as
    `increase()` takes it, said once for all such label sets."""
    first = {"GET": (10, created)}
    pages = [first, {**first, "ERR": (50, created)}, {**first, "ERR": (60, created), "PUT": (7, created)},
             {**first, "ERR": (61, created), "PUT": (9, created)}]
    endpoint = Scripted([(200, TEXT_TYPE, _labelled_page(p)) for p in pages])
    try:
        columns, said = run(ScrapeSource(url=endpoint.url, metric="h_seconds", interval=1.0), lambda _: None, 6)
    finally:
        endpoint.close()
    assert [(c.stream.label.split('"')[1], int(c.counts.sum())) for c in columns] == [
        ("GET", 0), ("ERR", 10), ("GET", 0), ("ERR", 1), ("GET", 0), ("PUT", 2)]
    assert len(said) == 1 and 'h_seconds{method="ERR"} first appeared after the first scrape' in said[0]
    assert "its first reading is its baseline" in said[0]
    assert ("no _created" in said[0]) == (created is None)


def test_a_restarted_exporter_is_a_reset_column_not_a_negative_count() -> None:
    bounds = (0.001, 0.002, math.inf)
    pages = [histogram_page("h_seconds", bounds, c, s) for c, s in
             [([1, 4, 5], 0.01), ([2, 6, 9], 0.02), ([0, 1, 2], 0.003), ([1, 3, 6], 0.008)]]
    endpoint = Scripted([(200, TEXT_TYPE, p) for p in pages])
    try:
        columns, _ = run(ScrapeSource(url=endpoint.url, metric="h_seconds", interval=0.001), lambda _: None, 3)
    finally:
        endpoint.close()
    assert [c.reset for c in columns] == [False, True, False]
    assert [c.counts[:3].tolist() for c in columns] == [[1, 1, 2], [0, 1, 1], [1, 1, 2]]


def test_bad_answers_are_named_and_the_source_goes_on_with_a_gap_column() -> None:
    bounds = (0.001, math.inf)
    endpoint = Scripted([
        (200, TEXT_TYPE, histogram_page("h_seconds", bounds, [1, 3], 0.01)),
        (500, "text/plain", "upstream exploded"),
        (500, "text/plain", "upstream\u2028exploded\x1c again\r\nat 12:00"),  # the first line, cut at line ends only
        (200, "text/html", "<html><body>Please log in</body></html>"),
        (200, TEXT_TYPE, "this is not { exposition\nat all\n"),
        (200, TEXT_TYPE, histogram_page("other_seconds", bounds, [1, 1], 0.1)),
        (200, TEXT_TYPE, "# TYPE h_seconds summary\nh_seconds{quantile=\"0.5\"} 0.1\nh_seconds_count 3\n"),
        (200, "application/openmetrics-text; version=1.0.0", histogram_page("h_seconds", bounds, [2, 9], 0.05)),
        (200, TEXT_TYPE, histogram_page("h_seconds", bounds, [2, 10], 0.06)),
    ])
    sleeps: list[float] = []
    try:
        source = ScrapeSource(url=endpoint.url, metric="h_seconds", interval=0.001)
        columns, said = run(source, sleeps.append, 1)
    finally:
        endpoint.close()
    url = endpoint.url
    assert said[0] == f"scrape: {url}: answered HTTP 500 Internal Server Error (upstream exploded); expected " \
                      "Prometheus text exposition (text/plain; version=0.0.4) or OpenMetrics with a histogram; " \
                      "asking again in 0.001s"
    assert said[1] == said[0].replace("; asking again in 0.001s", " (2 failures in a row); asking again in 0.002s"
                                      ).replace("(upstream exploded)", "(upstream?exploded? again)")
    assert said[2].startswith(f"scrape: {url}: answered an HTML page (text/html); expected Prometheus text")
    assert said[3].startswith(f"scrape: {url}: not exposition text (line 1: expected ")
    assert said[4].startswith(f"scrape: {url}: no histogram h_seconds (histograms there: other_seconds); expected")
    assert said[5].startswith(f"scrape: {url}: h_seconds is a summary, not a histogram")
    assert said[6].startswith(f"scrape: {url}: OpenMetrics answer without its '# EOF' line")
    assert said[7].startswith(f"scrape: {url} answered again after 7 failed scrapes")
    assert sleeps[1:8] == pytest.approx([0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064])  # backoff
    (column,) = columns
    assert column.gap and int(column.counts.sum()) == 7  # nothing lost: 3 -> 10 across the outage


def test_a_sample_line_is_cut_into_tokens_at_blanks_only() -> None:
    """`str.split()` also cut at `\\x1c`-`\\x1f`, `\\x85` and U+2028: `x 1\\x1c5` was read as the value 1 at 5 ms,
    without a word. Such a line is named as one that could not be read, on a real HTTP endpoint; the rest is kept."""
    bounds = (0.001, math.inf)
    odd = 'h_seconds_max 1\x1c5\nh_seconds_max{who="b"}\t1\u2028 2\n'  # the lines the metric's name is in are read
    endpoint = Scripted([(200, TEXT_TYPE, histogram_page("h_seconds", bounds, [1, 3], 0.01) + odd),
                         (200, TEXT_TYPE, histogram_page("h_seconds", bounds, [2, 10], 0.06) + odd)])
    try:
        source = ScrapeSource(url=endpoint.url, metric="h_seconds", interval=0.001)
        (column,), said = run(source, lambda _: None, 1)
    finally:
        endpoint.close()
    assert int(column.counts.sum()) == 7
    assert said == [f"scrape: {endpoint.url}: 2 exposition lines could not be read, skipped (line 6: expected a "
                    "number, got '1?5'; line 7: expected a number, got '1?')"]


def test_openmetrics_sent_as_text_plain_and_control_characters_in_labels() -> None:
    evil = 'who="\x1b[31mred\x07"'
    broken = histogram_page("h_seconds", (0.001, math.inf), [5, 3], 0.01, labels=evil)  # not cumulative
    fine = histogram_page("h_seconds", (0.001, math.inf), [1, 2], 0.01, labels='who="ok"')
    om = fine.replace("_count{", '_created{who="x"} 1.0\nh_seconds_count{').replace(
        '} 1\n', '} 1 # {trace_id="abc"} 0.0005 1.7e9\n', 1) + "# EOF\n"
    endpoint = Scripted([(200, TEXT_TYPE, broken + om)])
    try:
        source = ScrapeSource(url=endpoint.url, metric="h_seconds", interval=0.001)
        columns, said = run(source, lambda _: None, 1)
    finally:
        endpoint.close()
    assert said == ['scrape: ' + endpoint.url + ': h_seconds{who="?[31mred?"}: bucket counts decrease with le: '
                    'they are not cumulative']
    assert columns[0].stream.label == 'h_seconds{who="ok"}'


def test_refused_and_timed_out_endpoints_are_named_and_retried() -> None:
    port = free_port()
    page = histogram_page("h_seconds", (0.001, math.inf), [0, 2], 0.01)
    started: list[Scripted] = []

    def sleep(_: float) -> None:
        if not started:  # the endpoint comes up after the first refusal; its first answer is slow
            started.append(Scripted([(200, TEXT_TYPE, page), (200, TEXT_TYPE, page),
                                     (200, TEXT_TYPE, page.replace(" 2\n", " 5\n"))], delay_first_s=1.5, port=port))

    try:
        source = ScrapeSource(url=f"http://127.0.0.1:{port}/metrics", metric="h_seconds", interval=0.001,
                              timeout=0.3)
        columns, said = run(source, sleep, 1)
    finally:
        for s in started:
            s.close()
    assert said[0].startswith(f"scrape: http://127.0.0.1:{port}/metrics: connection refused; expected Prometheus")
    assert said[1].startswith(f"scrape: http://127.0.0.1:{port}/metrics: timed out; expected Prometheus")
    assert int(columns[0].counts.sum()) == 3


def _until_it_stops(source: ScrapeSource, asks_again: int) -> tuple[list[Interval], list[str], SourceError]:
    """Run a source until it raises SourceError: (its columns, its notices, the error); the test fails when it sleeps
    to ask again more than `asks_again` times."""
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        assert len(slept) <= asks_again, f"asked again {len(slept)} times"

    source.sleep, source.clock = sleep, lambda: 1.7e9 + sum(slept)
    got: list[Interval] = []
    said: list[str] = []
    with pytest.raises(SourceError) as err:
        for item in source.items():
            if isinstance(item, Interval):
                got.append(item)
            elif isinstance(item, Notice):
                said.append(item.message)
    return got, said, err.value


@pytest.mark.parametrize(("status", "reason"), [(404, "Not Found"), (401, "Unauthorized"), (403, "Forbidden")])
def test_an_answer_that_asking_again_will_not_change_stops_the_source_naming_url_and_status(status: int,
                                                                                           reason: str) -> None:
    endpoint = Scripted([(status, "text/plain", "nope")])
    try:
        _, said, err = _until_it_stops(ScrapeSource(url=endpoint.url, metric="h_seconds", interval=0.001, count=1),
                                       0)
    finally:
        endpoint.close()
    assert len(endpoint.requests) == 1 and said == []
    assert str(err) == (f"scrape: {endpoint.url}: answered HTTP {status} {reason} (nope); expected Prometheus text "
                        "exposition (text/plain; version=0.0.4) or OpenMetrics with a histogram; stopped: asking "
                        "again would get the same answer")


def test_a_404_after_good_scrapes_is_asked_again_and_a_run_bounded_by_count_gives_up_keeping_the_columns_given(
        ) -> None:
    """The route was there: gone for a moment (a redeploy), or for good, which --count's give-up ends."""
    bounds = (0.001, math.inf)
    endpoint = Scripted([(200, TEXT_TYPE, histogram_page("h_seconds", bounds, [1, 3], 0.01)),
                         (200, TEXT_TYPE, histogram_page("h_seconds", bounds, [2, 5], 0.02)),
                         (404, "text/plain", "gone")])
    give_up = scrape_mod.GIVE_UP
    try:
        got, said, err = _until_it_stops(ScrapeSource(url=endpoint.url, metric="h_seconds", interval=0.001, count=5),
                                         2 + give_up - 1)
    finally:
        endpoint.close()
    assert "answered HTTP 404 Not Found (gone)" in str(err) and f"gave up after {give_up} failed scrapes" in str(err)
    assert [int(c.counts.sum()) for c in got] == [2] and len(endpoint.requests) == 2 + give_up
    assert sum("404" in m for m in said) == give_up - 1


def test_a_404_for_a_moment_after_good_scrapes_is_one_gap_column() -> None:
    bounds = (0.001, math.inf)
    endpoint = Scripted([(200, TEXT_TYPE, histogram_page("h_seconds", bounds, [1, 3], 0.01)),
                         (404, "text/plain", "redeploying"),
                         (200, TEXT_TYPE, histogram_page("h_seconds", bounds, [2, 7], 0.03))])
    source = ScrapeSource(url=endpoint.url, metric="h_seconds", interval=0.001, count=1)
    source.sleep = lambda seconds: None
    try:
        items = list(source.items())
    finally:
        endpoint.close()
    (column,) = [i for i in items if isinstance(i, Interval)]
    assert int(column.counts.sum()) == 4 and column.gap
    said = [i.message for i in items if isinstance(i, Notice)]
    assert any("404 Not Found (redeploying)" in m for m in said) and any("answered again" in m for m in said)


@pytest.mark.parametrize("down", ["503", "refused"])
def test_a_run_bounded_by_count_gives_up_on_an_endpoint_that_keeps_failing(down: str) -> None:
    endpoint = Scripted([(503, "text/plain", "overloaded")])
    url = endpoint.url
    if down == "refused":
        endpoint.close()
        url = f"http://127.0.0.1:{free_port()}/metrics"
    give_up = scrape_mod.GIVE_UP
    try:
        _, said, err = _until_it_stops(ScrapeSource(url=url, metric="h_seconds", interval=0.5, count=1), give_up - 1)
    finally:
        endpoint.close()
    what = "answered HTTP 503 Service Unavailable (overloaded)" if down == "503" else "connection refused"
    expected = f"{url}: {what}; expected Prometheus text exposition (text/plain; version=0.0.4) or OpenMetrics " \
               "with a histogram"
    waited = sum(0.5 * 2**k for k in range(give_up - 1))  # the backoff before each retry
    assert str(err) == f"scrape: {expected}; gave up after {give_up} failed scrapes in a row ({waited:.0f}s), before " \
                       "--count 1 was reached"
    assert said == [f"scrape: {retry_message(expected, k, 0.5 * 2**(k - 1))}" for k in range(1, give_up)]
    if down == "503":
        assert len(endpoint.requests) == give_up


@pytest.mark.parametrize("match", [(), ("method=GET",)])
def test_a_run_bounded_by_count_waits_for_a_declared_histograms_series_without_giving_up(
        exporters, match: tuple[str, ...]) -> None:
    """A page that answers with the histogram declared but no series yet (or none --match keeps) is waited for, as
    documented: the endpoint is not failing, so `GIVE_UP` does not end the run; the first series is counted."""
    exporter = exporters()  # labelled: declared, no series before its first observation
    waits = scrape_mod.GIVE_UP + 2
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == waits - 1 and match:
            exporter.observe(0.002, "PUT")  # a series --match skips
        if len(slept) == waits:
            exporter.observe(0.002, "GET")
        elif len(slept) == waits + 1:
            exporter.observe(0.003, "GET")
            exporter.observe(0.004, "GET")

    source = ScrapeSource(url=exporter.url, metric=METRIC, interval=0.5, count=1, match=match)
    source.sleep, source.clock = sleep, lambda: 1.7e9 + sum(slept)
    items = list(source.items())
    columns = [i for i in items if isinstance(i, Interval)]
    said = [i.message for i in items if isinstance(i, Notice)]
    assert sum("has no series yet" in m or "no app_request_duration_seconds series match" in m
               for m in said) >= scrape_mod.GIVE_UP
    assert [int(c.counts.sum()) for c in columns] == [2]


def test_credentials_are_sent_but_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = Scripted([(500, "text/plain", "no"),
                         (200, TEXT_TYPE, histogram_page("h_seconds", (0.001, math.inf), [0, 2], 0.01))])
    url = endpoint.url.replace("http://", "http://alice:s3cr%40t@") + "?api_key=k3y&x=1"
    try:
        source = ScrapeSource(url=url, metric="h_seconds", interval=0.001)
        _, said = run(source, lambda _: None, 0)
        assert endpoint.requests[0]["Authorization"] == "Basic YWxpY2U6czNjckB0"  # alice:s3cr@t
        monkeypatch.setenv("LATENCYMAP_PROMETHEUS_TOKEN", "t0ken")
        source.scrape()
        assert endpoint.requests[-1]["Authorization"] == "Bearer t0ken"
    finally:
        endpoint.close()
    shown = " ".join(said) + repr(source.describe())
    assert "alice" not in shown and "s3cr" not in shown and "k3y" not in shown and "t0ken" not in shown
    assert f"{endpoint.url}?api_key=***&x=1" in shown


def test_url_parameters_are_hidden_by_the_rule_command_lines_have() -> None:
    """A presigned URL's signature is hidden, counts and file names are not: one rule, `secret_name`, for both."""
    from latencymap.sources.http_client import public_url

    url = "http://h:9090/metrics?X-Amz-Signature=s1g&hf_token_value=t0k&passes=2&max_tokens=5&token_file=/t"
    assert public_url(url) == (
        "http://h:9090/metrics?X-Amz-Signature=***&hf_token_value=***&passes=2&max_tokens=5&token_file=/t")


def test_a_redirect_to_another_host_gets_no_credentials() -> None:
    """`scrape http://alice:pw@127.0.0.1:A/metrics`, A answering 302 to localhost:B: B was sent alice's password."""
    endpoint = Scripted([(200, TEXT_TYPE, histogram_page("h_seconds", (0.001, math.inf), [0, 0], 0.0)),
                         (200, TEXT_TYPE, histogram_page("h_seconds", (0.001, math.inf), [1, 3], 0.01))])
    redirect = Redirect(to=f"http://localhost:{endpoint.port}")
    try:
        source = ScrapeSource(url=redirect.url.replace("http://", "http://alice:s3cretPW@") + "/metrics",
                              metric="h_seconds", interval=0.001)
        columns, said = run(source, lambda _: None, 1)
    finally:
        redirect.close()
        endpoint.close()
    assert redirect.requests[0]["Authorization"] == "Basic YWxpY2U6czNjcmV0UFc="  # alice:s3cretPW
    assert endpoint.requests and all("Authorization" not in r for r in endpoint.requests)
    assert said == [] and int(columns[0].counts.sum()) == 3


def test_bad_options_say_what_is_expected() -> None:
    import click

    with pytest.raises(click.BadParameter, match="expected an http:// or https:// URL"):
        ScrapeSource(url="ftp://host/metrics", metric="m")
    with pytest.raises(click.BadParameter, match="expected a metric name"):
        ScrapeSource(url="http://h/metrics", metric="bad name")
    with pytest.raises(click.BadParameter, match="expected LABEL=VALUE"):
        ScrapeSource(url="http://h/metrics", metric="m", match=("nolabel",))
    with pytest.raises(click.BadParameter, match="expected label names"):
        ScrapeSource(url="http://h/metrics", metric="m", sum_by=("le",))
    with pytest.raises(click.BadParameter, match="unknown latency unit"):
        ScrapeSource(url="http://h/metrics", metric="m", unit="fortnights")


def test_the_cli_uses_the_module_clock_and_sleep() -> None:
    assert ScrapeSource(url="http://h/metrics", metric="m").sleep is scrape_mod.default_sleep


def test_a_page_without_the_histogram_stops_the_source_naming_the_ones_it_has(exporters) -> None:
    exporter = exporters()
    exporter.observe(0.01, "GET")
    declared = exporters(name="other_seconds")  # a labelled histogram not observed yet: declared, no series
    summary = Scripted([(200, TEXT_TYPE, "# TYPE h_seconds summary\nh_seconds_count 3\nh_seconds_sum 0.3\n")])
    try:
        wrong = rf"scrape: {exporter.url}: no histogram app_request_duration_secs \(histograms there: {METRIC}\)"
        for url, metric, expected in (
                (exporter.url, "app_request_duration_secs", wrong + r".*\(--wait-for-metric waits for it to appear\)"),
                (summary.url, "h_seconds", rf"scrape: {summary.url}: h_seconds is a summary, not a histogram; only "
                                           r"histograms \(h_seconds_bucket with le labels\) can be mapped$")):
            source = ScrapeSource(url=url, metric=metric, interval=0.001)
            source.sleep = lambda _: None
            with pytest.raises(SourceError, match=expected):
                next(iter(source.items()))
        waiting = ScrapeSource(url=declared.url, metric="other_seconds", interval=0.001)
        waiting.sleep = lambda _: None
        first = next(iter(waiting.items()))
        assert isinstance(first, Notice) and "other_seconds has no series yet; asking again" in first.message
    finally:
        summary.close()


@pytest.mark.parametrize("form", ["negotiate", "text"])
@pytest.mark.parametrize("wait", [False, True])
def test_a_counter_or_a_gauge_stops_the_source_without_a_wait_that_cannot_help(exporters, form: str,
                                                                               wait: bool) -> None:
    """A real prometheus_client counter and gauge beside the histogram: the error ended "(--wait-for-metric waits
    for it to appear)", and `--wait-for-metric` then waited for ever; no wait turns a counter into a histogram.
    OpenMetrics (what `negotiate` gets) declares the counter as `reqs`, its sample `reqs_total`; the text format
    declares `reqs_total`."""
    exporter = exporters(form=form)
    exporter.observe(0.01, "GET")
    Counter("reqs", "Requests.", registry=exporter.registry).inc()
    Gauge("temp_celsius", "A gauge.", registry=exporter.registry).set(21.5)
    counter, total = ("is a counter", "is a sample of the counter reqs") if form == "negotiate" else \
        ("is a counter (reqs_total)", "is a counter")
    for metric, said in (("reqs", counter), ("temp_celsius", "is a gauge"), ("reqs_total", total)):
        source = ScrapeSource(url=exporter.url, metric=metric, interval=0.5, wait_for_metric=wait)
        slept: list[float] = []
        source.sleep = slept.append
        with pytest.raises(SourceError) as stopped:
            next(iter(source.items()))
        assert str(stopped.value) == (f"scrape: {exporter.url}: {metric} {said}, not a histogram; only histograms "
                                      f"({metric}_bucket with le labels) can be mapped")
        assert slept == []


def test_wait_for_metric_scrapes_until_the_histogram_appears_and_counts_from_its_first_page() -> None:
    bounds = (0.001, math.inf)
    before = "# TYPE up gauge\nup 1\n"  # client_golang: no labelled histogram before its first observation
    endpoint = Scripted([(200, TEXT_TYPE, before), (200, TEXT_TYPE, before), (200, TEXT_TYPE, before),
                         (200, TEXT_TYPE, histogram_page("h_seconds", bounds, [1, 3], 0.01)),
                         (200, TEXT_TYPE, histogram_page("h_seconds", bounds, [4, 7], 0.05))])
    sleeps: list[float] = []
    try:
        source = ScrapeSource(url=endpoint.url, metric="h_seconds", interval=0.5, wait_for_metric=True)
        columns, said = run(source, sleeps.append, 1)
    finally:
        endpoint.close()
    assert said == [f"scrape: {endpoint.url}: no histogram h_seconds (no histograms there); expected h_seconds_bucket "
                    "series; waiting for it "
                    "(--wait-for-metric), scraping every 0.5s"]  # told once, not at each scrape
    assert sleeps[:3] == [0.5, 0.5, 0.5]  # the interval, not a growing backoff
    (column,) = columns
    assert int(column.counts.sum()) == 4 and not column.gap  # 3 -> 7: from the first page that had it
    assert source.describe()["wait_for_metric"] is True


def many_series_page(series: int, events: int) -> str:
    """One classic histogram of `series` label sets, each with `events` observations of 1 ms."""
    lines = ["# TYPE h_seconds histogram"]
    for i in range(series):
        lab = f'pod="p{i:03d}"'
        lines += [f'h_seconds_bucket{{{lab},le="0.002"}} {events}', f'h_seconds_bucket{{{lab},le="+Inf"}} {events}',
                  f"h_seconds_sum{{{lab}}} {0.001 * events!r}", f"h_seconds_count{{{lab}}} {events}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("limits", "columns"), [({"duration": 10.0}, 3), ({"count": 3}, 3),
                                                 ({"count": 2, "duration": 100.0}, 2), ({"count": 0}, 0)])
def test_count_and_duration_stop_the_source_after_a_whole_scrape(limits: dict[str, float], columns: int) -> None:
    assert ScrapeSource.own_limits  # the CLI hands it --count and --duration instead of cutting the flow
    endpoint = Scripted([(200, TEXT_TYPE, many_series_page(20, n)) for n in range(1, 12)])
    try:
        source = ScrapeSource(url=endpoint.url, metric="h_seconds", interval=3.0, **limits)
        got, _ = run(source, lambda s: None, 10_000)  # the source stops itself
    finally:
        endpoint.close()
    per_stream: dict[str, list[Interval]] = {}
    for c in got:
        per_stream.setdefault(c.stream.label, []).append(c)
    assert len(got) == 20 * columns and all(len(v) == columns for v in per_stream.values())
    assert len({v[-1].end for v in per_stream.values()}) <= 1  # every stream ends on the same scrape


def test_duration_stops_during_an_outage_without_waiting_for_the_endpoint() -> None:
    endpoint = Scripted([(200, TEXT_TYPE, many_series_page(3, 1)), (500, "text/plain", "down")])
    sleeps: list[float] = []
    try:
        got, said = run(ScrapeSource(url=endpoint.url, metric="h_seconds", interval=3.0, duration=10.0),
                        sleeps.append, 10_000)
    finally:
        endpoint.close()
    assert got == [] and said and sum(sleeps) == pytest.approx(10.0)  # slept up to the deadline, then stopped


def test_duration_ends_on_time_when_the_next_scrape_would_come_after_it() -> None:
    """Scrapes at 0, 3, 6 and 9 s for `--duration 10`: the source ends at 10 s, not after a scrape at 12 s; with an
    interval longer than the duration, at the duration (it slept a whole interval past it)."""
    for interval, duration, columns in ((3.0, 10.0, 3), (10.0, 2.0, 0)):
        endpoint = Scripted([(200, TEXT_TYPE, many_series_page(2, n)) for n in range(1, 12)])
        sleeps: list[float] = []
        try:
            got, _ = run(ScrapeSource(url=endpoint.url, metric="h_seconds", interval=interval, duration=duration),
                         sleeps.append, 10_000)
        finally:
            endpoint.close()
        assert len(got) == 2 * columns and sum(sleeps) == pytest.approx(duration)


DEFAULT_LE = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, math.inf)
POW2_LE = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, math.inf)


def _pages(*pages: tuple[tuple[float, ...], dict[float, int], float]) -> Scripted:
    """An endpoint serving, scrape by scrape, `svc_seconds` pages of (bounds, events per bucket bound, _sum)."""
    served = []
    for bounds, events, total in pages:
        cumulative = list(itertools.accumulate(events.get(b, 0) for b in bounds))
        served.append((200, TEXT_TYPE, histogram_page("svc_seconds", bounds, cumulative, total)))
    return Scripted(served)


def test_a_redeploy_with_new_bounds_is_a_reset_column_of_what_the_new_process_holds() -> None:
    endpoint = _pages((DEFAULT_LE, {0.025: 1000}, 20.0), (DEFAULT_LE, {0.025: 1100}, 22.0),
                      (POW2_LE, {0.016: 30}, 0.6),  # restarted with power-of-two bounds: 30 events since
                      (POW2_LE, {0.016: 130}, 2.6), (POW2_LE, {0.016: 230}, 4.6))
    try:
        columns, said = run(ScrapeSource(url=endpoint.url, metric="svc_seconds", interval=0.3), lambda _: None, 4)
    finally:
        endpoint.close()
    assert [int(c.counts.sum()) for c in columns] == [100, 30, 100, 100]  # the pages' own truth: nothing lost
    assert [c.reset for c in columns] == [False, True, False, False] and not any(c.gap for c in columns)
    assert [c.source_buckets.total_time for c in columns if c.source_buckets] == pytest.approx([2.0, 0.6, 2.0, 2.0])
    assert all(a.end == b.start for a, b in itertools.pairwise(columns))  # no hole in time
    assert said == []


def test_new_bounds_while_the_counts_go_on_are_a_gap_column_then_counted_again() -> None:
    endpoint = _pages((DEFAULT_LE, {0.025: 1000}, 20.0), (DEFAULT_LE, {0.025: 1100}, 22.0),
                      (POW2_LE, {0.016: 1200}, 24.0),  # the count went on: nothing says where its 100 fell
                      (POW2_LE, {0.016: 1300}, 26.0))
    try:
        columns, said = run(ScrapeSource(url=endpoint.url, metric="svc_seconds", interval=0.3), lambda _: None, 3)
    finally:
        endpoint.close()
    assert [int(c.counts.sum()) for c in columns] == [100, 0, 100]
    assert [c.gap for c in columns] == [False, True, False] and not any(c.reset for c in columns)
    assert all(a.end == b.start for a, b in itertools.pairwise(columns))  # the span is there, marked
    assert len(said) == 1 and "the buckets changed" in said[0] and "column is a gap" in said[0]


def test_a_histogram_with_only_an_inf_bucket_is_left_out_with_a_note() -> None:
    pages = []
    for k in range(1, 5):  # job_seconds{job="cron"}: +Inf only, 10 events of 80 ms a scrape
        pages.append((200, TEXT_TYPE, histogram_page("job_seconds", (math.inf,), [10 * k], 0.8 * k, 'job="cron"')
                      + histogram_page("job_seconds", (0.1, math.inf), [5 * k, 5 * k], 0.05 * k, 'job="web"')
                      .split("\n", 1)[1]))
    endpoint = Scripted(pages)
    try:
        columns, said = run(ScrapeSource(url=endpoint.url, metric="job_seconds", interval=0.3), lambda _: None, 3)
    finally:
        endpoint.close()
    assert {c.stream.label for c in columns} == {'job_seconds{job="web"}'}
    assert [int(c.counts.sum()) for c in columns] == [5, 5, 5]
    assert said == ['scrape: job_seconds{job="cron"} has no finite bucket, only le="+Inf": its 10 events so far '
                    "(mean 80ms) hold no latency to place (histogram_quantile gives NaN); left out"]


def test_a_page_whose_histograms_all_have_only_an_inf_bucket_stops_the_source() -> None:
    endpoint = Scripted([(200, TEXT_TYPE, histogram_page("job_seconds", (math.inf,), [10 * k], 0.8 * k))
                         for k in range(1, 4)])
    try:
        with pytest.raises(SourceError, match=r'job_seconds has no finite bucket, only le="\+Inf": its 10 events so '
                                              r"far \(mean 80ms\).*nothing to map"):
            run(ScrapeSource(url=endpoint.url, metric="job_seconds", interval=0.3), lambda _: None, 3)
    finally:
        endpoint.close()


@pytest.mark.parametrize("form", ["text", "openmetrics"])
@pytest.mark.parametrize(("before", "expected_total"), [(0.01, 5.0), (1.0, 5.0)])
def test_a_restart_whose_counts_are_already_higher_is_a_reset_told_by_created(exporters, form: str, before: float,
                                                                              expected_total: float) -> None:
    exporter = exporters(name="job_seconds", labels=(), form=form)
    for _ in range(100):
        exporter.observe(before)
    pauses = itertools.count(1)

    def between(_: float) -> None:
        k = next(pauses)
        if k == 1:
            for _ in range(10):
                exporter.observe(before)
        elif k == 2:  # the process restarts; by the next scrape the new one made 500 observations of 10 ms
            exporter.restart()
            for _ in range(500):
                exporter.observe(0.01)

    columns, said = run(ScrapeSource(url=exporter.url, metric="job_seconds", interval=1.0), between, 2)
    assert said == []
    assert [int(c.counts.sum()) for c in columns] == [10, 500]  # 510: the new process's 500 all count
    assert [c.reset for c in columns] == [False, True] and not any(c.gap for c in columns)
    kept = columns[1].source_buckets
    assert kept is not None and kept.total_time == pytest.approx(expected_total, rel=1e-9)  # the new `_sum`, exact
    assert kept.counts.tolist() == [0, 500] + [0] * (len(DEFAULT_BUCKETS) - 2)  # all in (5 ms, 10 ms]


def _cut(page: str) -> str:
    """The first half of a page, as a scrape cut short gets it (a whole line at the end)."""
    return page[: len(page) // 2].rsplit("\n", 1)[0] + "\n"


def test_a_scrape_cut_short_is_skipped_for_its_series_and_the_next_whole_one_covers_it() -> None:
    pages = [histogram_page("svc_seconds", DEFAULT_LE, list(itertools.accumulate(
        [0, 0, 8 * k] + [0] * 9)), 0.02 * 8 * k) for k in range(7)]
    served = []
    for k, page in enumerate(pages):  # every second scrape cut in half: no +Inf bucket, no _sum or _count
        served.append((200, TEXT_TYPE, _cut(page) if k % 2 else page))
    endpoint = Scripted(served)
    try:
        columns, said = run(ScrapeSource(url=endpoint.url, metric="svc_seconds", interval=1.0), lambda _: None, 3)
    finally:
        endpoint.close()
    assert [int(c.counts.sum()) for c in columns] == [16, 16, 16]  # 48 events: all of them, none a gap
    assert not any(c.gap or c.reset for c in columns)
    assert [c.end - c.start for c in columns] == [2.0, 2.0, 2.0]  # each spans the scrape that was skipped
    assert [c.source_buckets.total_time for c in columns if c.source_buckets] == pytest.approx([0.32] * 3)
    assert said == [f"scrape: {endpoint.url}: svc_seconds: an incomplete reading, without the buckets above le=0.25, "
                    "_count, _sum (the page cut short?): this scrape is skipped for it, the next complete "
                    "one's column covers its time"]


def test_a_first_scrape_cut_short_is_no_baseline() -> None:
    pages = [histogram_page("svc_seconds", DEFAULT_LE, [0, 0] + [8 * k] * 10, 0.16 * k) for k in range(1, 4)]
    endpoint = Scripted([(200, TEXT_TYPE, _cut(pages[0])), *((200, TEXT_TYPE, p) for p in pages[1:])])
    try:
        columns, said = run(ScrapeSource(url=endpoint.url, metric="svc_seconds", interval=1.0), lambda _: None, 1)
    finally:
        endpoint.close()
    assert [int(c.counts.sum()) for c in columns] == [8] and not columns[0].gap  # 16 -> 24, from the second page
    assert len(said) == 1 and 'without le="+Inf", _count, _sum' in said[0]


def test_a_byte_order_mark_and_garbage_lines_are_handled_and_named_once(exporters) -> None:
    exporter = exporters(name="job_seconds", labels=(), buckets=POW2_MS_BUCKETS, form="text")
    exporter.observe(0.003)

    def garbled(accept: str) -> tuple[bytes, str]:  # prometheus_client's page behind a proxy that adds both
        lines = generate_latest(exporter.registry).decode().split("\n")
        lines.insert(3, "\x1b[31m<<< garbage from a proxy >>>")
        return ("\ufeff" + "\n".join(lines)).encode(), TEXT_TYPE

    exporter.render = garbled  # type: ignore[method-assign]

    def between(_: float) -> None:
        exporter.observe(0.003)
        exporter.observe(0.003)

    columns, said = run(ScrapeSource(url=exporter.url, metric="job_seconds", interval=1.0), between, 3)
    assert [int(c.counts.sum()) for c in columns] == [2, 2, 2]
    assert said == [f"scrape: {exporter.url}: 1 exposition line could not be read, skipped (line 4: expected a "
                    "sample line, got '?[31m<<< garbage from a proxy >>>')"]  # once, not at every scrape


def _gauge_page(bounds: tuple[float, ...], cumulative: list[int], total: float) -> str:
    """An OpenMetrics page with the gauge histogram `queue_wait_seconds`: the ages of the items queued now."""
    lines = ["# TYPE queue_wait_seconds gaugehistogram"]
    lines += [f'queue_wait_seconds_bucket{{le="{"+Inf" if math.isinf(b) else repr(b)}"}} {c}'
              for b, c in zip(bounds, cumulative, strict=True)]
    return "\n".join([*lines, f"queue_wait_seconds_gcount {cumulative[-1]}", f"queue_wait_seconds_gsum {total!r}",
                      "# EOF"]) + "\n"


def test_a_gauge_histogram_column_is_the_distribution_read_at_its_end_not_a_difference() -> None:
    """A gauge histogram is the distribution as it is now (its buckets go down as well as up): each column holds
    what its scrape read (buckets still cumulative over `le`), `_gsum` its time; never a reset, one note."""
    bounds = (0.001, 0.002, 0.004, math.inf)
    pages = [([3, 5, 9, 9], 0.02), ([1, 1, 4, 6], 0.03), ([2, 4, 8, 9], 0.025), ([0, 0, 0, 0], 0.0)]
    endpoint = Scripted([(200, "application/openmetrics-text; version=1.0.0; charset=utf-8",
                          _gauge_page(bounds, cumulative, total)) for cumulative, total in pages])
    try:
        columns, said = run(ScrapeSource(url=endpoint.url, metric="queue_wait_seconds", interval=0.3),
                            lambda _: None, 3)
    finally:
        endpoint.close()
    for column, (cumulative, total) in zip(columns, pages[1:], strict=True):
        own = column.source_buckets
        assert own is not None and own.counts.tolist() == np.diff(cumulative, prepend=0).tolist()
        assert int(column.counts.sum()) == cumulative[-1]
        assert own.total_time == pytest.approx(total)
        assert not column.reset and not column.gap
    assert all(a.end == b.start for a, b in itertools.pairwise(columns))
    assert len(said) == 1 and "queue_wait_seconds is a gauge histogram" in said[0]
    assert "not a difference" in said[0] and "first scrape" in said[0]


class Queue(Collector):
    """A collector giving one metric family as it is."""

    def __init__(self, family: Metric) -> None:
        self.family = family

    def collect(self) -> list[Metric]:
        return [self.family]


def test_a_gauge_histogram_in_the_text_format_is_read_as_one_too() -> None:
    """The text format 0.0.4 has no gauge histogram type: prometheus_client declares one a `histogram` there (what
    frameworks that call its `generate_latest` serve whatever is asked), /federate declares nothing; its `_gcount` and
    `_gsum` without a `_count` say what it is: each column what its scrape read, not buckets gone down as resets."""
    pages = [([3, 5, 9, 9], 0.02), ([1, 1, 4, 6], 0.03), ([2, 4, 8, 9], 0.025), ([0, 0, 0, 0], 0.0)]

    def page(cumulative: list[int], total: float) -> str:
        registry = CollectorRegistry()
        registry.register(Queue(GaugeHistogramMetricFamily(
            "queue_wait_seconds", "Ages of the items queued now.", gsum_value=total,
            buckets=list(zip(("0.001", "0.002", "0.004", "+Inf"), cumulative, strict=True)))))
        return generate_latest(registry).decode()

    assert "# TYPE queue_wait_seconds histogram" in page(*pages[0])
    endpoint = Scripted([(200, TEXT_TYPE, page(*p)) for p in pages])
    try:
        columns, said = run(ScrapeSource(url=endpoint.url, metric="queue_wait_seconds", interval=0.3),
                            lambda _: None, 3)
    finally:
        endpoint.close()
    assert [(int(c.counts.sum()), c.reset) for c in columns] == [(6, False), (9, False), (0, False)]
    assert [c.source_buckets.total_time for c in columns if c.source_buckets] == pytest.approx([0.03, 0.025, 0.0])
    assert len(said) == 1 and "queue_wait_seconds is a gauge histogram" in said[0]


def test_a_gauge_histograms_label_set_new_after_the_first_scrape_has_a_column_of_what_it_reads() -> None:
    """Each column of a gauge histogram is what its scrape read: a queue that first appears mid-run has one from its
    first scrape on (it had none until the next, as if its first reading were a baseline)."""
    def page(queues: dict[str, list[int]]) -> str:
        family = GaugeHistogramMetricFamily("queue_wait_seconds", "Ages of the items queued now.", labels=["queue"])
        for queue, cumulative in queues.items():
            family.add_metric([queue], list(zip(("0.001", "0.002", "+Inf"), cumulative, strict=True)),
                              gsum_value=0.001 * cumulative[-1])
        registry = CollectorRegistry()
        registry.register(Queue(family))
        return generate_openmetrics(registry).decode()

    pages = [{"a": [1, 2, 2]}, {"a": [0, 1, 1]}, {"a": [0, 1, 1], "b": [3, 4, 5]}, {"a": [0, 0, 0], "b": [0, 2, 2]}]
    endpoint = Scripted([(200, OPENMETRICS_TYPE, page(p)) for p in pages])
    try:
        columns, said = run(ScrapeSource(url=endpoint.url, metric="queue_wait_seconds", interval=0.3),
                            lambda _: None, 5)
    finally:
        endpoint.close()
    assert [(c.stream.label.split('"')[1], int(c.counts.sum())) for c in columns] == [
        ("a", 1), ("a", 1), ("b", 5), ("a", 0), ("b", 2)]
    assert (columns[2].start, columns[2].end) == (columns[1].start, columns[1].end)
    assert len(said) == 1 and "gauge histogram" in said[0]
