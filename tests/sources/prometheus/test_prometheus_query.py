"""`latencymap prometheus` against a stub of the HTTP API: live catch-up, gaps, errors, long windows, options."""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import click
import pytest
from prometheus_support import Serving, free_port, reply

from latencymap.core.model import Interval, Notice
from latencymap.plugins import SourceError
from latencymap.sources.prometheus.api import MAX_POINTS, promql_duration
from latencymap.sources.prometheus.query import PrometheusSource, parse_time

Answer = tuple[int, str, str]
JSON = "application/json"
RESET_AT = 1010.0


def bucket_value(t: float, le: str) -> float:
    """The stub's increase of `h_seconds_bucket{le}` over the step ending at t (no value at t = 1000)."""
    total = float(int(t) % 7) + 0.4
    return total if le == "+Inf" else total / 2


def seconds(step: str) -> float:
    """A query_range step as the server reads it: float seconds or a duration (`10s`, `1500ms`)."""
    for suffix, scale in (("ms", 1e-3), ("s", 1.0), ("m", 60.0)):
        if step.endswith(suffix):
            return float(step.removesuffix(suffix)) * scale
    return float(step)


class Api(Serving):
    """A stub of /api/v1/query and /api/v1/query_range for a classic histogram `h_seconds` (one series)."""

    def __init__(self, fail: Callable[[int], Answer | None] = lambda n: None, port: int = 0) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urllib.parse.urlsplit(self.path)
                params = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query).items()}
                api.requests.append((parts.path, params))
                status, ctype, body = fail(len(api.requests)) or api.answer(parts.path, params)
                data = body.encode()
                reply(self, status, ctype, data)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler, path="", port=port)

    def answer(self, path: str, params: dict[str, str]) -> Answer:
        query = params["query"]
        if path == "/api/v1/query":
            times = [float(params["time"])]
        else:
            start, end, step = float(params["start"]), float(params["end"]), seconds(params["step"])
            assert (end - start) / step + 1 <= MAX_POINTS + 1e-6
            times = [start + i * step for i in range(round((end - start) / step) + 1)]
        times = [t for t in times if t != 1000.0]  # one step the server has no value for
        labels = {"job": "j"}
        if query.startswith("increase(h_seconds{") or query.startswith("increase(h_seconds["):
            result: list[dict[str, Any]] = []  # no native histogram of that name
        elif " unless " in query:  # no series began counting in any step
            result = []
        elif query.startswith("resets(h_seconds_count"):  # the process restarted in the step ending at RESET_AT
            result = [{"metric": labels, "values": [[t, "1"] for t in times if t == RESET_AT]}]
        elif "_sum" in query:
            result = [{"metric": labels, "values": [[t, str(bucket_value(t, "+Inf") * 0.01)] for t in times]}]
        else:
            result = [{"metric": {**labels, "le": le}, "values": [[t, str(bucket_value(t, le))] for t in times]}
                      for le in ("0.005", "+Inf")]
        if path == "/api/v1/query":
            result = [{"metric": r["metric"], "value": r["values"][0]} for r in result if r["values"]]
        kind = "vector" if path == "/api/v1/query" else "matrix"
        return 200, JSON, json.dumps({"status": "success", "data": {"resultType": kind, "result": result}})


@pytest.fixture
def api_factory() -> Iterator[Callable[..., Api]]:
    made: list[Api] = []

    def make(**kw: Any) -> Api:
        made.append(Api(**kw))
        return made[-1]

    yield make
    for a in made:
        a.close()


def live(source: PrometheusSource, start: float, columns: int) -> tuple[list[Interval], list[str], list[float]]:
    """Run a live source on a fake clock starting at `start`; (columns, notices, sleeps)."""
    now = [start]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    source.clock, source.sleep = (lambda: now[0]), sleep
    got: list[Interval] = []
    said: list[str] = []
    items = source.items()
    for item in items:
        if isinstance(item, Interval):
            got.append(item)
        elif isinstance(item, Notice):
            said.append(item.message)
        if len(got) >= columns:
            break
    items.close()
    return got, said, sleeps


def test_live_polls_each_step_then_catches_up_after_an_outage(api_factory) -> None:
    # four queries a step (buckets, sum, resets, born); the second poll's first one fails, and the retries' first ones
    outage = {5: (500, "text/plain", "boom"), 6: (200, "text/html", "<!DOCTYPE html><p>proxy</p>"),
              7: (200, JSON, "{not json"), 8: (200, JSON, '{"data": 1}')}
    api = api_factory(fail=lambda n: outage.get(n))
    source = PrometheusSource(url=api.url + "/api/v1", metric="h_seconds", step=10.0, delay=1.0, kind="classic")
    columns, said, sleeps = live(source, start=951.0, columns=8)
    assert [c.end for c in columns] == [950.0, 960.0, 970.0, 980.0, 990.0, 1000.0, 1010.0, 1020.0]
    assert all(c.end - c.start == 10.0 for c in columns)
    off = 0.0  # counted less the server's increases, so far: carried over the polls and the catch-up query
    for c in columns:
        if c.end == 1000.0:
            assert c.gap and c.counts.sum() == 0  # the server has no value for this step
        else:
            off += int(c.counts.sum()) - bucket_value(c.end, "+Inf")
            assert not c.gap and abs(off) <= 0.5
            assert c.source_buckets is not None and c.source_buckets.total_time == pytest.approx(
                bucket_value(c.end, "+Inf") * 0.01)
    instant, ranged = f"{api.url}/api/v1/query", f"{api.url}/api/v1/query_range"
    expected = "expected the Prometheus HTTP API's JSON"
    assert said[0].startswith(f"prometheus: {instant}: answered HTTP 500 Internal Server Error (boom); {expected}")
    assert said[1].startswith(f"prometheus: {ranged}: answered an HTML page (text/html); {expected}")
    assert said[2].startswith(f"prometheus: {ranged}: answered '{{not json', not JSON; {expected}")
    assert said[3].startswith(f"prometheus: {ranged}: JSON without a status; {expected}")
    assert said[4] == f"prometheus: {api.url} answered again after 4 failed attempts; caught up on 10 steps"
    assert [c.end for c in columns if c.reset] == [RESET_AT]  # the server's resets(), caught up on
    ranges = [p for path, p in api.requests if path == "/api/v1/query_range"]
    assert ranges[-3:] == [
        {"query": "increase(h_seconds_sum[10s])", "start": "960", "end": "1050", "step": "10s"},
        {"query": "resets(h_seconds_count[10s]) > 0 or "
                  "h_seconds_count < last_over_time(h_seconds_count[600s] offset 10s) or "
                  "changes(h_seconds_created[10s]) > 0 or "
                  "h_seconds_created != last_over_time(h_seconds_created[600s] offset 10s)",
         "start": "960", "end": "1050", "step": "10s"},
        {"query": "(h_seconds_created unless last_over_time(h_seconds_created[600s] offset 10s)) > time() - 20.0",
         "start": "960", "end": "1050", "step": "10s"}]
    assert sleeps == [10.0, 10.0, 20.0, 30.0, 30.0]  # to the next step, then backoff


def test_live_goes_on_after_a_refused_connection() -> None:
    port = free_port()
    source = PrometheusSource(url=f"http://127.0.0.1:{port}", metric="h_seconds", step=10.0, delay=1.0)
    servers: list[Api] = []
    now = [951.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds
        if not servers:  # the server comes up after the first refusal
            servers.append(Api(port=port))

    source.clock, source.sleep = (lambda: now[0]), sleep
    items = source.items()
    try:
        first = next(items)
        column = next(i for i in items if isinstance(i, Interval))
    finally:
        items.close()
        for s in servers:
            s.close()
    where = f"http://127.0.0.1:{port}/api/v1/query"
    assert isinstance(first, Notice) and first.message.startswith(
        f"prometheus: {where}: connection refused; expected the Prometheus HTTP API's JSON")
    assert column.end == 950.0 and int(column.counts.sum()) == round(bucket_value(950.0, "+Inf"))


def test_a_query_the_server_refuses_stops_with_its_reason(api_factory) -> None:
    refusal = json.dumps({"status": "error", "errorType": "bad_data", "error": "1:12: parse error: unexpected"})
    api = api_factory(fail=lambda n: (400, JSON, refusal))
    source = PrometheusSource(url=api.url, metric="h_seconds", step=10.0)
    with pytest.raises(SourceError, match=r"/api/v1/query: answered HTTP 400 Bad Request \(.*parse error"):
        live(source, 951.0, 1)


def test_a_window_that_cannot_be_read_stops_naming_the_url() -> None:
    port = free_port()
    source = PrometheusSource(url=f"http://127.0.0.1:{port}", metric="h_seconds", start="100", end="200", step=10.0,
                              kind="classic")
    with pytest.raises(SourceError, match=rf"127\.0\.0\.1:{port}/api/v1/query_range: connection refused; "
                                          r"expected the Prometheus HTTP API's JSON"):
        list(source.items())


def test_an_answer_nested_too_deeply_is_not_json(api_factory) -> None:
    """5,000 `[` made json.loads raise RecursionError, which escaped as a traceback."""
    api = api_factory(fail=lambda n: (200, JSON, "[" * 5000 + "]" * 5000))
    source = PrometheusSource(url=api.url, metric="h_seconds", start="100", end="200", step=10.0, kind="classic")
    with pytest.raises(SourceError, match=r"/api/v1/query_range: answered '\[\[\[.*', not JSON; expected"):
        list(source.items())


def test_long_windows_are_asked_in_pieces(api_factory) -> None:
    api = api_factory()
    steps = MAX_POINTS * 2 + 5
    source = PrometheusSource(url=api.url, metric="h_seconds", start="0", end=str(steps), step=1.0)
    columns = [i for i in source.items() if isinstance(i, Interval)]
    assert [c.end for c in columns] == [float(t) for t in range(1, steps + 1)]
    assert sum(c.gap for c in columns) == 1
    ranges = [p for path, p in api.requests if path == "/api/v1/query_range" and "_sum" not in p["query"]]
    assert len([p for p in ranges if p["query"].startswith("increase(h_seconds_bucket")]) == 3


def test_the_query_follows_the_options() -> None:
    source = PrometheusSource(url="http://h:9090", metric="lat_seconds_bucket", match=("method=GET", "code!~5.."),
                              sum_by=("job,instance",), step=1.5)
    buckets, sums = source._promql("classic", 1.5)
    sel = 'method="GET",code!~"5.."'
    assert buckets == f"sum by (le, job, instance) (increase(lat_seconds_bucket{{{sel}}}[1500ms]))"
    assert sums == f"sum by (job, instance) (increase(lat_seconds_sum{{{sel}}}[1500ms]))"
    native, none = PrometheusSource(url="http://h", metric="x", sum_all=True)._promql("native", 60)
    assert native == "sum by () (increase(x[60s]))" and none is None
    assert promql_duration(0.25) == "250ms" and promql_duration(300) == "300s"


def test_times() -> None:
    now = 1_800_000_000.0
    assert parse_time("now", now) == now
    assert parse_time("-1h", now) == now - 3600 and parse_time("now-90s", now) == now - 90
    assert parse_time("1700000000.5", now) == 1700000000.5
    assert parse_time("2026-11-23T10:00:00Z", now) == parse_time("2026-11-23T11:00:00+01:00", now) == 1795428000.0
    with pytest.raises(click.BadParameter, match="expected now, -1h, epoch seconds or"):
        parse_time("yesterday", now)
    for option, given in (("--start", {"start": "yesterday"}), ("--end", {"start": "-1h", "end": "tomorrow"})):
        with pytest.raises(click.BadParameter) as bad:
            PrometheusSource(url="http://h", metric="m", **given)
        assert bad.value.param_hint == option and "got '" in bad.value.message
    with pytest.raises(click.BadParameter, match="--end must be after --start"):
        PrometheusSource(url="http://h", metric="m", start="200", end="100")
    with pytest.raises(click.BadParameter, match="shorter than one step"):
        PrometheusSource(url="http://h", metric="m", start="100", end="110", step=15)
    with pytest.raises(click.BadParameter, match="expected an http"):
        PrometheusSource(url="h:9090", metric="m")


def test_le_spelled_two_ways_adds_up() -> None:
    from latencymap.sources.prometheus.api import Series
    from latencymap.sources.prometheus.query import _classic_tables

    series = [Series({"le": "1"}, [(10.0, 2.0), (20.0, 1.0)]), Series({"le": "1.0"}, [(10.0, 3.0)]),
              Series({"le": "+Inf"}, [(10.0, 9.0), (20.0, 4.0)]), Series({"le": "junk"}, [(10.0, 1.0)])]
    ((key, (les, stamps, table)),) = _classic_tables(series).items()
    assert key == () and les.tolist() == [1.0, math.inf] and stamps == [10.0, 20.0]
    assert table.tolist() == [[5.0, 9.0], [1.0, 4.0]]


def test_a_window_that_is_not_whole_steps_says_what_it_leaves_out(api_factory) -> None:
    api = api_factory()
    items = list(PrometheusSource(url=api.url, metric="h_seconds", start="100", end="129", step=10.0,
                                  kind="classic").items())
    assert [c.end for c in items if isinstance(c, Interval)] == [110.0, 120.0]
    said = [i.message for i in items if isinstance(i, Notice)]
    assert said == ["prometheus: the window is not a whole number of 10s steps: its last 9s, 1970-01-01T00:02:00Z "
                    "to 1970-01-01T00:02:09Z, are left out (no column)"]


def test_fractional_times_are_sent_to_the_millisecond(api_factory) -> None:
    api = api_factory()
    start = 1_795_749_178.83  # `--start -5m`: now, to the microsecond; math.isclose(t, round(t)) at this size
    source = PrometheusSource(url=api.url, metric="h_seconds", start=repr(start), end=repr(start + 20.0004),
                              step=2.5, kind="classic")
    columns = [c for c in source.items() if isinstance(c, Interval)]
    assert [c.end for c in columns] == [round(start + 2.5 * (k + 1), 3) for k in range(8)]
    assert not any(c.gap for c in columns)
    (first, *_) = [p for path, p in api.requests if path == "/api/v1/query_range"]
    assert (first["start"], first["end"], first["step"]) == ("1795749181.33", "1795749198.83", "2500ms")


class GaugeApi(Api):
    """The stub serving `h_seconds` as a gauge histogram: `_bucket` series, no `_sum` (it has `_gsum`), and the
    targets' metadata saying so."""

    def answer(self, path: str, params: dict[str, str]) -> Answer:
        if path == "/api/v1/metadata":
            return 200, JSON, json.dumps({"status": "success", "data": {
                "h_seconds": [{"type": "gaugehistogram", "help": "Queue ages.", "unit": ""}]}})
        if "_sum" in params["query"]:
            result: list[Any] = []
            kind = "vector" if path == "/api/v1/query" else "matrix"
            return 200, JSON, json.dumps({"status": "success", "data": {"resultType": kind, "result": result}})
        return super().answer(path, params)


def test_a_gauge_histogram_is_not_read_as_counters_and_the_error_says_what_reads_it() -> None:
    api = GaugeApi()
    try:
        source = PrometheusSource(url=api.url, metric="h_seconds", start="900", end="990", step=10.0)
        with pytest.raises(SourceError, match=r"h_seconds is a gauge histogram \(the targets' metadata\).*"
                                              r"increase\(\) over them.*latencymap scrape TARGET"):
            list(source.items())
    finally:
        api.close()


class TextGaugeApi(GaugeApi):
    """The gauge histogram as Prometheus has it from a text-format page (prometheus_client declares it a `histogram`
    there): the metadata says `histogram`, and its `_gcount` series are there."""

    def answer(self, path: str, params: dict[str, str]) -> Answer:
        if path == "/api/v1/metadata":
            return 200, JSON, json.dumps({"status": "success", "data": {
                "h_seconds": [{"type": "histogram", "help": "Queue ages.", "unit": ""}]}})
        if path == "/api/v1/series":
            found = [{"__name__": "h_seconds_gcount", "job": "j"}] if "h_seconds_gcount" in params["match[]"] else []
            return 200, JSON, json.dumps({"status": "success", "data": found})
        return super().answer(path, params)


def test_a_gauge_histogram_declared_a_histogram_is_known_by_its_gcount() -> None:
    api = TextGaugeApi()
    try:
        source = PrometheusSource(url=api.url, metric="h_seconds", start="900", end="990", step=10.0)
        with pytest.raises(SourceError, match=r"h_seconds is a gauge histogram \(its h_seconds_gcount series\)"):
            list(source.items())
    finally:
        api.close()
