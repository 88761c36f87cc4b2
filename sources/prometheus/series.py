"""Classic histograms out of exposition samples, label matchers, and the per-series differ.

A classic histogram `NAME` is the cumulative series `NAME_bucket{le="..."}` plus `NAME_sum` and `NAME_count`,
one histogram per label set (without `le`), and `NAME_created` where the client writes it (its process's start of
counting). The differ turns two readings of one histogram into per-bucket counts for the time between them: a
histogram whose `_created` changed, or whose `_count` or any bucket went down, was reset (the process restarted), so
that interval counts what it holds now, never a negative number, whatever its bounds (a redeploy with new `le`
bounds); bounds that changed without a reset cannot be diffed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from latencymap.core.buckets import MAX_COUNT

from .exposition import Exposition, Sample

Labels = tuple[tuple[str, str], ...]
_MATCHER = re.compile(r"\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)(.*)$", re.S)


class SeriesError(ValueError):
    """A histogram whose samples do not make one."""


@dataclass(frozen=True)
class Matcher:
    """`label=value`, `label!=value`, `label=~regex` or `label!~regex`, as in PromQL (regexes fully anchored)."""

    label: str
    op: str
    value: str

    def matches(self, labels: dict[str, str]) -> bool:
        """True when a label set passes (a missing label is the empty string)."""
        got = labels.get(self.label, "")
        if self.op in ("=", "!="):
            return (got == self.value) == (self.op == "=")
        return (re.fullmatch(self.value, got) is not None) == (self.op == "=~")

    def promql(self) -> str:
        """The matcher in a PromQL selector, its value quoted and escaped."""
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'{self.label}{self.op}"{escaped}"'


def parse_matcher(text: str) -> Matcher:
    """`method=GET`, `code!=200`, `path=~/api/.*` -> Matcher; ValueError saying what is expected."""
    m = _MATCHER.match(text)
    if m is None:
        raise ValueError(f"expected LABEL=VALUE (or !=, =~, !~), got {text!r}")
    label, op, value = m.groups()
    if label == "le":
        raise ValueError("le is the bucket bound, not a label to match on")
    if op in ("=~", "!~"):
        try:
            re.compile(value)
        except re.error as err:
            raise ValueError(f"{text!r}: bad regular expression: {err}") from None
    return Matcher(label, op, value)


def selector(metric: str, matchers: Sequence[Matcher]) -> str:
    """A PromQL series selector: `metric{a="b",c=~"d"}`."""
    inner = ",".join(m.promql() for m in matchers)
    return f"{metric}{{{inner}}}" if inner else metric


def labels_key(labels: dict[str, str], drop: Iterable[str] = ("le",)) -> Labels:
    """A hashable, sorted label set without the named labels."""
    skip = set(drop)
    return tuple(sorted((k, v) for k, v in labels.items() if k not in skip))


def describe_labels(metric: str, key: Labels) -> str:
    """`metric{a="b",c="d"}`: how a stream is named."""
    if not key:
        return metric
    inner = ",".join(f'{k}="{v}"' for k, v in key)
    return f"{metric}{{{inner}}}"


@dataclass(slots=True)
class Reading:
    """One histogram read at one instant: upper bounds (metric unit, last +Inf), cumulative counts, sum."""

    bounds: tuple[float, ...]
    cumulative: np.ndarray
    total: float | None = None
    #: `_created`: when the process began counting this series (epoch seconds); a new one is a restart.
    created: float | None = None
    #: What the page lacked of a complete histogram (`le="+Inf"`, `_count`, `_sum`): a page cut short, maybe.
    missing: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        return int(self.cumulative[-1]) if len(self.cumulative) else 0


def _whole(value: float, what: str) -> int:
    if not (math.isfinite(value) and 0 <= value < MAX_COUNT):
        raise SeriesError(f"{what} is {value}, expected a count from 0 to 2**62")
    return round(value)


def build_reading(buckets: dict[float, float], count: float | None, total: float | None,
                  created: float | None = None) -> Reading:
    """A Reading from `le -> cumulative value` plus `_count`, `_sum` and `_created`; SeriesError when it is no
    histogram."""
    if not buckets:
        raise SeriesError("no _bucket series")
    bounds = sorted(buckets)
    missing = tuple(what for what, absent in (('le="+Inf"', not math.isinf(bounds[-1]) and count is None),
                                              ("_count", count is None), ("_sum", total is None)) if absent)
    values = [_whole(buckets[b], f'bucket le="{b}"') for b in bounds]
    if count is not None:
        whole = _whole(count, "_count")
        if not math.isinf(bounds[-1]):  # the +Inf bucket is mandatory, but _count says the same
            bounds.append(math.inf)
            values.append(whole)
        elif whole != values[-1]:
            raise SeriesError(f'_count {whole} differs from the le="+Inf" bucket {values[-1]}')
    cumulative = np.asarray(values, dtype=np.int64)
    if (np.diff(cumulative) < 0).any():
        raise SeriesError("bucket counts decrease with le: they are not cumulative")
    if total is not None and not math.isfinite(total):
        total = None
    if created is not None and not math.isfinite(created):
        created = None
    return Reading(tuple(bounds), cumulative, total, created, missing)


def is_gauge_histogram(page: Exposition, metric: str) -> bool:
    """Whether the page's histogram `metric` is a gauge histogram: declared one (OpenMetrics `gaugehistogram`,
    protobuf type 5), or with `_gcount` and no `_count` where the page cannot declare one (the text format 0.0.4:
    prometheus_client declares it a `histogram` there, /federate declares nothing)."""
    if page.types.get(metric) == "gaugehistogram":
        return True
    names = {s.name for s in page.samples}
    return f"{metric}_gcount" in names and f"{metric}_count" not in names


def histogram_readings(samples: Iterable[Sample], metric: str, matchers: Sequence[Matcher] = (),
                       gauge: bool = False) -> tuple[dict[Labels, Reading], list[str]]:
    """The readings of histogram `metric` per label set (matchers applied), and why any label set was refused;
    `gauge`: an OpenMetrics gauge histogram, whose count and sum are `_gcount` and `_gsum`."""
    g = "g" if gauge else ""
    bucket_name, sum_name, count_name = f"{metric}_bucket", f"{metric}_{g}sum", f"{metric}_{g}count"
    created_name = f"{metric}_created"
    buckets: dict[Labels, dict[float, float]] = {}
    sums: dict[Labels, float] = {}
    counts: dict[Labels, float] = {}
    created: dict[Labels, float] = {}
    problems: list[str] = []
    for s in samples:
        if s.name not in (bucket_name, sum_name, count_name, created_name):
            continue
        if not all(m.matches(s.labels) for m in matchers):
            continue
        key = labels_key(s.labels)
        if s.name == bucket_name:
            le = s.labels.get("le")
            try:
                bound = float(le) if le is not None else math.nan
            except ValueError:
                bound = math.nan
            if math.isnan(bound):
                problems.append(f"{describe_labels(metric, key)}: line {s.line}: bucket without a numeric le label")
                buckets.setdefault(key, {})[math.nan] = 0.0
                continue
            buckets.setdefault(key, {})[bound] = s.value
        elif s.name == sum_name:
            sums[key] = s.value
        elif s.name == created_name:
            created[key] = s.value
        else:
            counts[key] = s.value
    out: dict[Labels, Reading] = {}
    for key, by_le in buckets.items():
        if any(math.isnan(b) for b in by_le):
            continue
        try:
            out[key] = build_reading(by_le, counts.get(key), sums.get(key), created.get(key))
        except SeriesError as err:
            problems.append(f"{describe_labels(metric, key)}: {err}")
    return out, problems


def per_bucket(cumulative: np.ndarray) -> np.ndarray:
    """Cumulative bucket counts -> the count of each bucket alone."""
    return np.diff(cumulative, prepend=0)


def restarted(prev_created: float | None, cur_created: float | None) -> bool:
    """True when both readings have a `_created` and it changed: another process (or a re-created series) counts."""
    return prev_created is not None and cur_created is not None and prev_created != cur_created


def incomplete(cur: Reading, prev: Reading | None) -> str | None:
    """What makes `cur` no whole reading of the histogram `prev` was (a page cut short), or None: no `+Inf` bucket,
    buckets that are a strict prefix of `prev`'s, or a `_count` or `_sum` that `prev` had."""
    cut = 'le="+Inf"' in cur.missing
    lacks = [what for what in cur.missing if cut or (prev is not None and what not in prev.missing)]
    if prev is not None and len(cur.bounds) < len(prev.bounds) and prev.bounds[: len(cur.bounds)] == cur.bounds:
        lacks = [f"the buckets above le={cur.bounds[-1]:g}", *(w for w in lacks if w != 'le="+Inf"')]
    return ", ".join(lacks) or None


def diff_readings(prev: Reading, cur: Reading) -> tuple[np.ndarray, float | None, bool] | None:
    """(per-bucket counts in `cur`'s bounds, sum, reset) for the time between two readings; None when their bounds
    differ and no counter went down: nothing says how the events since `prev` spread over the new buckets.

    A `_created` that changed, or a counter that went down (any `le` counter, or a finite bucket's own count though
    every `le` counter went up, or across different bounds any bound both have, `+Inf` and so `_count` among them), is
    a reset: the process restarted, and `cur` holds exactly the events since, whatever its bounds (its `_sum` their
    exact time). The `+Inf` bucket's own count may dip without one: Micrometer writes its `_count` there, read apart
    from the other buckets, so it can lag an event they hold; that dip counts no event."""
    if restarted(prev.created, cur.created):
        reset = True
    elif prev.bounds == cur.bounds:
        finite = np.isfinite(np.asarray(cur.bounds, dtype=float))
        reset = bool((cur.cumulative < prev.cumulative).any()
                     or (per_bucket(cur.cumulative) < per_bucket(prev.cumulative))[finite].any())
    else:
        before = dict(zip(prev.bounds, prev.cumulative.tolist(), strict=True))
        reset = any(b in before and int(c) < before[b] for b, c in zip(cur.bounds, cur.cumulative.tolist(),
                                                                          strict=True))
        if not reset:
            return None
    if reset:
        return per_bucket(cur.cumulative), cur.total, True
    counts = np.clip(per_bucket(cur.cumulative) - per_bucket(prev.cumulative), 0, None)
    spent = None
    if cur.total is not None and prev.total is not None:
        spent = cur.total - prev.total
    return counts, spent, False
