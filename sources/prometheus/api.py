"""A small client for the Prometheus HTTP API (`/api/v1/query`, `/api/v1/query_range`), standard library only.

Answers are normalized to a list of `Series`: labels, float points and native-histogram points. A range longer
than the server's 11,000 points per series is asked for in pieces. Errors name the URL (without credentials)
and the server's own error text; `EndpointError.transient` is False for a query the server refuses (bad PromQL).
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from latencymap.core.json_input import json_input
from latencymap.core.sanitize import clean_text

from .transport import EndpointError, http_get, public_url

MAX_POINTS = 11_000
EXPECTED = "the Prometheus HTTP API's JSON ({\"status\": \"success\", \"data\": ...})"


@dataclass(slots=True)
class Series:
    """One result series: its labels, `(t, value)` points and `(t, histogram object)` points."""

    labels: dict[str, str]
    floats: list[tuple[float, float]] = field(default_factory=list)
    histograms: list[tuple[float, dict[str, Any]]] = field(default_factory=list)


def api_root(url: str) -> str:
    """`http://host:9090/` or `.../api/v1` -> `http://host:9090` (a path prefix such as /prometheus is kept)."""
    url = url.rstrip("/")
    return url.removesuffix("/api/v1").rstrip("/")


def promql_duration(seconds: float) -> str:
    """A PromQL range duration: `15s`, `1500ms`."""
    ms = max(1, round(seconds * 1000))
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _point(raw: Any, where: str) -> tuple[float, Any]:
    if not isinstance(raw, (list, tuple)) or len(raw) != 2:
        raise EndpointError(f"{where}: expected [time, value] points; expected {EXPECTED}")
    try:
        return float(raw[0]), raw[1]
    except (TypeError, ValueError):
        raise EndpointError(f"{where}: a point's time is not a number; expected {EXPECTED}") from None


def parse_result(doc: Any, where: str) -> list[Series]:
    """The series of a query or query_range answer (vector, matrix or scalar)."""
    if not isinstance(doc, dict) or "status" not in doc:
        raise EndpointError(f"{where}: JSON without a status; expected {EXPECTED}")
    if doc["status"] != "success":
        raise EndpointError(f"{where}: the server says {clean_text(str(doc.get('errorType', 'error')), 40)}: "
                            f"{clean_text(str(doc.get('error', '')), 300)}", transient=False)
    data = doc.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise EndpointError(f"{where}: answer without data.result; expected {EXPECTED}")
    if data.get("resultType") == "scalar":
        t, v = _point(data["result"], where)
        return [Series({}, [(t, float(v))])]
    out: list[Series] = []
    for raw in data["result"]:
        if not isinstance(raw, dict) or not isinstance(raw.get("metric", {}), dict):
            raise EndpointError(f"{where}: a result without its metric labels; expected {EXPECTED}")
        series = Series({str(k): str(v) for k, v in raw.get("metric", {}).items()})
        floats = raw.get("values") or ([raw["value"]] if "value" in raw else [])
        hists = raw.get("histograms") or ([raw["histogram"]] if "histogram" in raw else [])
        for p in floats:
            t, v = _point(p, where)
            try:
                series.floats.append((t, float(v)))
            except (TypeError, ValueError):
                raise EndpointError(f"{where}: value {str(v)[:30]!r} is not a number; expected {EXPECTED}") from None
        for p in hists:
            t, h = _point(p, where)
            series.histograms.append((t, h))
        out.append(series)
    return out


class PrometheusAPI:
    """Queries against one server."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.root = api_root(url)
        self.shown = public_url(self.root)
        self.timeout = timeout

    def _get(self, path: str, params: dict[str, str]) -> list[Series]:
        url = f"{self.root}{path}?{urllib.parse.urlencode(params)}"
        where = f"{self.shown}{path}"
        resp = _get_json(url, self.timeout, where)
        return parse_result(resp, where)

    def data(self, path: str, params: dict[str, str]) -> Any:
        """The `data` of a successful answer from another endpoint (`/api/v1/series`, `/api/v1/metadata`)."""
        where = f"{self.shown}{path}"
        doc = _get_json(f"{self.root}{path}?{urllib.parse.urlencode(params)}", self.timeout, where)
        if not isinstance(doc, dict) or doc.get("status") != "success" or "data" not in doc:
            raise EndpointError(f"{where}: not a successful answer; expected {EXPECTED}")
        return doc["data"]

    def series(self, match: str, start: float, end: float) -> list[dict[str, str]]:
        """The label sets (`__name__` included) of the series `match` selects that have samples in [start, end]."""
        found = self.data("/api/v1/series", {"match[]": match, "start": _stamp(start), "end": _stamp(end)})
        return [{str(k): str(v) for k, v in s.items()} for s in found if isinstance(s, dict)] \
            if isinstance(found, list) else []

    def metadata(self, metric: str | None = None) -> dict[str, set[str]]:
        """Metric name -> the types its scrape targets declare (`/api/v1/metadata`): every metric, or one."""
        found = self.data("/api/v1/metadata", {"metric": metric} if metric else {})
        if not isinstance(found, dict):
            return {}
        return {str(name): {str(m.get("type")) for m in entries if isinstance(m, dict)}
                for name, entries in found.items() if isinstance(entries, list)}

    def query(self, promql: str, at: float) -> list[Series]:
        """An instant query evaluated at `at` (epoch seconds)."""
        return self._get("/api/v1/query", {"query": promql, "time": _stamp(at)})

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[Series]:
        """A range query; long ranges are asked for in pieces of at most MAX_POINTS steps, merged per series."""
        merged: dict[tuple[tuple[str, str], ...], Series] = {}
        begin = start
        while begin <= end + 1e-9:
            stop = min(end, begin + (MAX_POINTS - 1) * step)
            for s in self._get("/api/v1/query_range", {"query": promql, "start": _stamp(begin),
                                                         "end": _stamp(stop), "step": promql_duration(step)}):
                key = tuple(sorted(s.labels.items()))
                have = merged.setdefault(key, Series(s.labels))
                have.floats += s.floats
                have.histograms += s.histograms
            begin = stop + step
        return list(merged.values())


def _stamp(t: float) -> str:
    """Epoch seconds to the millisecond, as the server reads them: `1795749178.83`, `960`."""
    return f"{t:.3f}".rstrip("0").rstrip(".")


def _get_json(url: str, timeout: float, where: str) -> Any:
    resp = http_get(url, "application/json", timeout, EXPECTED, shown=where)
    try:
        return json_input(resp.body)
    except ValueError:
        head = clean_text(resp.body[:60].decode("utf-8", "replace"), 60)
        raise EndpointError(f"{where}: answered {head!r}, not JSON; expected {EXPECTED}") from None
