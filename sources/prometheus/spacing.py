"""How far apart a histogram's samples are, and the range `increase()` needs when a step is shorter than two of them.

`increase(x[step])` has a value only where the step holds two samples of a series. A step shorter than twice the
scrape interval holds one in some steps: those would be gap columns, and the events between their samples in no
column (a 7 s step over 5 s scrapes: 57 of 142 columns, 40% of the events). Such steps take `increase()` over the step
plus one scrape interval (at least two), as Grafana's `$__rate_interval` does, scaled to the step: each column is the
rate over that range times the step, so every pair of neighbouring samples is in some range and no event is counted
twice (over a steady rate the columns add up to the window's events exactly). The answers are scaled here, not in
PromQL: Prometheus 2.42 answers `histogram * scalar` with the histogram as it was.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .api import PrometheusAPI, Series, promql_duration
from .series import Matcher


def sample_spacing(api: PrometheusAPI, labels: dict[str, str], at: float, lookback: float) -> float | None:
    """The median spacing in seconds of the samples of the series `labels` (`__name__` included) in the `lookback`
    seconds before `at`; None under two samples."""
    exact = "{" + ",".join(Matcher(k, "=", v).promql() for k, v in sorted(labels.items())) + "}"
    got = api.query(f"{exact}[{promql_duration(lookback)}]", at)
    stamps = sorted({t for s in got for t, _ in (*s.floats, *s.histograms)})
    return float(np.median(np.diff(stamps))) if len(stamps) > 1 else None


def widened_range(step: float, spacing: float) -> float:
    """The range of `increase()` for a step shorter than two samples' spacing: the step and one spacing, at least two
    spacings, to the millisecond (rounded up)."""
    return float(np.ceil(max(step + spacing, 2 * spacing) * 1000) / 1000)


def scaled_series(series: list[Series], ratio: float) -> list[Series]:
    """`series` with every value times `ratio`: floats, and native histograms' count, sum and bucket counts."""
    return [Series(s.labels, [(t, v * ratio) for t, v in s.floats],
                   [(t, _scaled_histogram(h, ratio)) for t, h in s.histograms]) for s in series]


def _scaled_histogram(histogram: Any, ratio: float) -> Any:
    """A native histogram of the API (`{"count", "sum", "buckets": [[rule, left, right, count], ...]}`) times
    `ratio`; a value that is not a number is left as it is, for the reader to say so."""
    if not isinstance(histogram, dict):
        return histogram
    out = dict(histogram)
    for key in ("count", "sum"):
        if key in out:
            out[key] = _times(out[key], ratio)
    buckets = out.get("buckets")
    if isinstance(buckets, list):
        out["buckets"] = [[*b[:3], _times(b[3], ratio)] if isinstance(b, list) and len(b) == 4 else b
                          for b in buckets]
    return out


def _times(value: Any, ratio: float) -> Any:
    try:
        return repr(float(value) * ratio)
    except (TypeError, ValueError):
        return value


def short_step_note(metric: str, step: float, spacing: float, reach: float) -> str:
    """What a column is when `increase()` is taken over `reach` instead of the step, and the step that needs none."""
    return (f"prometheus: the samples of {metric} are {seconds_text(spacing)}s apart, so a {seconds_text(step)}s step "
            "holds two of them only in some steps, and increase() over it has no value in the others (their events "
            f"would be in no column): each column is increase() over the last {promql_duration(reach)} (the step and "
            "one scrape interval) scaled to the step, the rate over those samples times the step, so every event "
            f"counts once, spread over neighbouring columns; use --step {seconds_text(2 * spacing)} or more for "
            "columns counted from their own samples only")


def seconds_text(value: float) -> str:
    """Seconds as options and messages write them: `5`, `2.5`, `0.001`."""
    return f"{round(value, 3):g}"
