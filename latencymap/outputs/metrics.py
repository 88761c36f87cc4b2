"""OpenMetrics / Prometheus exposition of latencymap's streams, and a tiny loopback server for it.

Two encodings of the same families: OpenMetrics 1.0 (`report --format openmetrics`; served by default) and the
Prometheus text format 0.0.4 (`report --format prometheus`, for what reads only that: node_exporter's textfile
collector, `promtool check metrics`; served to a scraper whose Accept header asks for `text/plain` and not
OpenMetrics). The text format has no `# UNIT`, no `# EOF` and no gauge histogram: the latest interval's histogram
is written as prometheus_client writes a gauge histogram there, a `histogram` family of `_bucket` lines alone
(`histogram_quantile()` reads them) and the gauges `_gcount` and `_gsum`.

Per stream (labels `label`, `datasource`, `unit`):
- `latencymap_latency_seconds`, a histogram: counters since the start (of the input for `report`, of the server
  for `--serve-metrics`): `_bucket{le="<bucket high in seconds>"}` cumulative counts of every slot of the stream's
  layout but the open top one (63 bounds, empty ones too: the same set in every exposition, as a client library's),
  `le="+Inf"` (the top slot's events counted there only: its values may pass any bound), `_count`, and
  `_sum` (time waited, seconds: exact or estimated like the intensity map). They only grow, so Prometheus'
  `rate()` and `histogram_quantile()` work on them as on any client library's histogram.
- `latencymap_interval_latency_seconds`, a gauge histogram: the latest interval alone (`_bucket`, `_gcount`,
  `_gsum`), the heat map's newest column.
- the gauges `latencymap_interval_seconds` (the latest interval's length) and
  `latencymap_interval_end_timestamp_seconds` (its end, Unix time, as Prometheus reads any `_timestamp_seconds`).
  A stream whose input's times are not dates (before `REAL_EPOCH`: a time of day, as PyLatencyMap's Oracle
  scripts write, or seconds since a start) has no sample there, its day being unknown; the served exposition
  gives one where such a stream is live and timed by the time of day (`latencymap.profiling.clock.judge`: its
  columns end at the clock's time of day), moved by the whole days since the epoch, as the profiler does.

`--serve-metrics PORT` (view command) starts `MetricsServer` on 127.0.0.1:PORT; `served(flow, server)`
passes every item through, adding each interval to its stream's counters and keeping it as the newest.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.buckets import TOP_SLOT, bounds_seconds
from latencymap.core.errors import InputError
from latencymap.core.history import interval_time
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.sanitize import clean_text
from latencymap.core.timebase import judge
from latencymap.core.units import REAL_EPOCH

FAMILY = "latencymap_latency_seconds"
INTERVAL_FAMILY = "latencymap_interval_latency_seconds"
CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: The end gauge's HELP: why a stream may have no sample.
END_HELP = ("End of the latest interval, Unix time. No sample for a stream whose input times are not dates "
            "(a time of day, as PyLatencyMap's Oracle scripts write, or seconds since a start): its day is not "
            "known (one served live and timed by the time of day has it).")


@dataclass(slots=True)
class Latest:
    """The newest interval of one stream, in seconds-based buckets, and the stream's counters since the start
    (`total_counts`, `total_time_s`; the newest interval alone when not given)."""

    stream: StreamId
    counts: np.ndarray
    time_s: np.ndarray
    high_s: np.ndarray
    start: float
    end: float
    duration: float
    total_counts: np.ndarray | None = None
    total_time_s: float | None = None
    #: Seconds to add to `end` for Unix time: 0 for dates, whole days for a live time of day; None: not known.
    to_epoch: float | None = None

    def add_to(self, before: Latest | None) -> Latest:
        """This interval as the newest, its counters `before`'s (none: zero) plus its own."""
        spent = float(np.asarray(self.time_s).sum())
        if before is None or before.total_counts is None:
            self.total_counts, self.total_time_s = self.counts.copy(), spent
        else:
            self.total_counts, self.total_time_s = before.total_counts + self.counts, (before.total_time_s or 0) + spent
        return self

    def end_timestamp(self) -> float | None:
        """The end in Unix time; None when the input's times are not dates and their day is not known."""
        if self.end >= REAL_EPOCH:
            return self.end
        return None if self.to_epoch is None else self.end + self.to_epoch


def latest_of_history(hist: StreamHistory) -> Latest | None:
    """The last column of a history, with counters over every column read (those a `--history` limit dropped
    too: their sums are kept); None when it has none."""
    if hist.n == 0:
        return None
    k = hist.n - 1
    _, high = bounds_seconds(hist.stream.datasource, hist.stream.unit)
    last = slice(k, k + 1)
    counts, times, _ = hist.slot_sums(all_seen=True)
    return Latest(hist.stream, hist.counts_in(last)[0], hist.time_in(last)[0], high,
                  float(hist.meta_in("start", last)[0]), float(hist.meta_in("end", last)[0]),
                  float(hist.meta_in("dur", last)[0]), counts, float(times.sum()))


def latest_of_interval(iv: Interval) -> Latest:
    """An interval as it arrives, its time as a history keeps it (`interval_time`: a rebinned stream's rows fitted to
    its source's exact sum), so that the served `_sum` is the report's (but where the rows cannot take that sum,
    `core.row_times`: then the nearest they can)."""
    _, high = bounds_seconds(iv.stream.datasource, iv.stream.unit)
    return Latest(iv.stream, np.asarray(iv.counts).copy(), interval_time(iv).copy(), high, iv.start, iv.end,
                  iv.duration)


def escape_label(value: str) -> str:
    """A label value: control characters neutralised, then `\\`, `"` and newline escaped."""
    return clean_text(value, 200).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(stream: StreamId, extra: str = "") -> str:
    parts = [f'label="{escape_label(stream.label)}"', f'datasource="{escape_label(stream.datasource)}"',
             f'unit="{escape_label(stream.unit)}"']
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}"


def _le(bound: str) -> str:
    return f'le="{bound}"'


def _float(v: float) -> str:
    return repr(float(v))


def _histogram_lines(family: str, stream: StreamId, counts: np.ndarray, high_s: np.ndarray,
                     time_s: float) -> tuple[list[str], str, str]:
    """`_bucket` lines of every slot but the open top one, whatever their counts, and `+Inf`; the count and the sum,
    as values. The `le` set is the stream's whole layout, the same in every exposition: one that grew as slower rows
    filled read as new buckets to a scraper (latencymap's own said `buckets changed` and lost the interval), and
    `rate()` and `histogram_quantile()` take a histogram's buckets as fixed. The top slot counts every longer value
    too (`core.buckets`): its events are under `+Inf` only, not under its nominal upper bound."""
    counts = np.asarray(counts, dtype=np.int64)
    cum = np.cumsum(counts)
    out = [f"{family}_bucket{_labels(stream, _le(_float(high_s[s])))} {int(cum[s])}" for s in range(TOP_SLOT)]
    total = int(counts.sum())
    out.append(f"{family}_bucket{_labels(stream, _le('+Inf'))} {total}")
    return out, str(total), _float(time_s)


def _header(name: str, help_text: str, kind: str, openmetrics: bool) -> list[str]:
    """A family's `# HELP`, `# TYPE` and (OpenMetrics only: the text format has none) `# UNIT` lines."""
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *([f"# UNIT {name} seconds"] if openmetrics else [])]


def openmetrics_text(latest: list[Latest], openmetrics: bool = True) -> str:
    """The exposition: OpenMetrics, ending in `# EOF`; or (`openmetrics` false) the Prometheus text format 0.0.4."""
    out = _header(FAMILY, "Latency histogram of each stream since the start.", "histogram", openmetrics)
    for item in latest:
        counts = item.counts if item.total_counts is None else item.total_counts
        spent = float(np.asarray(item.time_s).sum()) if item.total_time_s is None else item.total_time_s
        buckets, count, total = _histogram_lines(FAMILY, item.stream, counts, item.high_s, spent)
        out += [*buckets, f"{FAMILY}_count{_labels(item.stream)} {count}",
                f"{FAMILY}_sum{_labels(item.stream)} {total}"]
    help_text = "Latency histogram of the latest interval of each stream."
    newest = [_histogram_lines(INTERVAL_FAMILY, x.stream, x.counts, x.high_s, float(np.asarray(x.time_s).sum()))
              for x in latest]
    if openmetrics:
        out += _header(INTERVAL_FAMILY, help_text, "gaugehistogram", openmetrics)
        for item, (buckets, count, total) in zip(latest, newest, strict=True):
            out += [*buckets, f"{INTERVAL_FAMILY}_gcount{_labels(item.stream)} {count}",
                    f"{INTERVAL_FAMILY}_gsum{_labels(item.stream)} {total}"]
    else:  # as prometheus_client writes a gauge histogram in the text format
        out += _header(INTERVAL_FAMILY, help_text, "histogram", openmetrics)
        out += [line for buckets, _, _ in newest for line in buckets]
        for suffix, gauge_help, k in (("gcount", "Events in the latest interval of each stream.", 1),
                                      ("gsum", "Time waited in the latest interval of each stream.", 2)):
            out += _header(f"{INTERVAL_FAMILY}_{suffix}", gauge_help, "gauge", openmetrics)
            out += [f"{INTERVAL_FAMILY}_{suffix}{_labels(item.stream)} {lines[k]}"
                    for item, lines in zip(latest, newest, strict=True)]
    for name, gauge_help, values in (
            ("latencymap_interval_seconds", "Length of the latest interval.", [x.duration for x in latest]),
            ("latencymap_interval_end_timestamp_seconds", END_HELP, [x.end_timestamp() for x in latest])):
        out += _header(name, gauge_help, "gauge", openmetrics)
        out += [f"{name}{_labels(item.stream)} {_float(v)}" for item, v in zip(latest, values, strict=True)
                if v is not None]
    if openmetrics:
        out.append("# EOF")
    return "\n".join(out) + "\n"


def report_openmetrics(acc: Accumulator, openmetrics: bool = True) -> str:
    """`report --format openmetrics` (or `prometheus`: the text format 0.0.4): every stream's counters over the
    whole input, and its last interval."""
    return openmetrics_text([x for x in (latest_of_history(h) for h in acc.streams.values()) if x is not None],
                            openmetrics)


def wants_text_format(accept: str | None) -> bool:
    """Whether a scraper's Accept header asks for the Prometheus text format and not OpenMetrics (which is served
    otherwise, an empty or `*/*` Accept included)."""
    accept = (accept or "").lower()
    return "text/plain" in accept and "application/openmetrics-text" not in accept


class MetricsServer:
    """Serves each stream's counters since it started, and its newest interval, at http://127.0.0.1:PORT/metrics
    from a daemon thread."""

    def __init__(self, port: int, host: str = "127.0.0.1", clock: Callable[[], float] = time.time) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._latest: dict[StreamId, Latest] = {}
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] not in ("/", "/metrics"):
                    self.send_error(404)
                    return
                text = wants_text_format(self.headers.get("Accept"))
                body = server_self.text(openmetrics=not text).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", TEXT_CONTENT_TYPE if text else CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="latencymap-metrics", daemon=True)
        self._thread.start()

    def update(self, iv: Interval) -> None:
        """Keep `iv` as its stream's newest interval."""
        item = latest_of_interval(iv)
        with self._lock:
            before = self._latest.get(iv.stream)
            item.to_epoch = _live_shift(iv.end, self._clock()) if before is None else before.to_epoch
            self._latest[iv.stream] = item.add_to(before)

    def text(self, openmetrics: bool = True) -> str:
        """The current exposition (`openmetrics` false: in the Prometheus text format 0.0.4)."""
        with self._lock:
            items = list(self._latest.values())
        return openmetrics_text(items, openmetrics)

    def close(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()
        self.httpd.server_close()


def _live_shift(end: float, now: float) -> float | None:
    """Seconds to add to a stream's column ends for Unix time, judged by its first column (`end`, arriving at
    `now`): 0 for dates; the whole days since the epoch for a live time of day; None when not known."""
    if end >= REAL_EPOCH:
        return 0.0
    verdict = judge(end, now)
    return -verdict.shift if verdict.not_now is None and verdict.shift else None


def served(flow: Iterator[Interval | Notice], server: MetricsServer) -> Iterator[Interval | Notice]:
    """Pass the flow through, publishing each interval."""
    for item in flow:
        if isinstance(item, Interval):
            server.update(item)
        yield item


@contextmanager
def metrics_served(flow: Iterator[Interval | Notice], port: int | None) -> Iterator[Iterator[Interval | Notice]]:
    """`flow` tapped by a MetricsServer on 127.0.0.1:`port` for the duration of the block (None: untouched)."""
    if port is None:
        yield flow
        return
    try:
        server = MetricsServer(port)
    except OSError as err:
        raise InputError(f"--serve-metrics: cannot listen on 127.0.0.1:{port}: {err.strerror or err}") from None
    try:
        yield served(flow, server)
    finally:
        server.close()
