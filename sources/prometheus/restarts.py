"""A classic histogram's step across a restart that `NAME_created` tells, counted from the server's raw samples.

`increase()` takes a counter going down for a restart and adds the value before the drop, so the step counts the old
process's rise and the new one's count whole. A process that restarts with counts already higher than the old one's
goes up only: `increase()` counts the rise from the old value to the new one, missing the new process's counts up to
the old value, which can be the old process's whole lifetime. Where its `NAME_created` series changed in a step, the
step is counted from its raw samples (`NAME_bucket[step]`, `NAME_sum[step]` and `NAME_created[step]` at the step's
end; the step before's for the last sample before it): the samples split into processes where `_created` changes (or
a value goes down, as `increase()` splits them); each process counts its rise in the step, from zero where it started
in the step (its `_created` differs from the sample before's, in the step or just before it; or, born, it has no
sample in the step before and its `_created` is in the step or that one: a new label set, or one back after an outage
that made it stale, whose first sample already holds what it counted, even when it is its only one); the first
process's rise is extrapolated to the step's start and the last one's to its end at their own rates, by `increase()`'s
rules (no further than half the samples' spacing past a sample farther than 1.1 spacings from the edge, nor below zero).
A step without a restart or a birth counts exactly what `increase()` does. What the old process counted after its last
sample is in no sample and stays missed. PromQL cannot do this itself: range functions see one series, and nothing adds
the value before a `_created` change as a drop's value is added.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence

from .api import PrometheusAPI, Series, promql_duration
from .series import Labels, Matcher, labels_key

Sample = tuple[float, float]
_OWN = ("__name__", "le")  # the labels left out of a target's own label set, which its `_created` series shares


def _ms(t: float) -> int:
    return round(t * 1000)


def _restarted(before: Sample, after: Sample, created: Mapping[int, float]) -> bool:
    """Whether the process changed between two samples: the value went down, or `_created` changed."""
    was, now = created.get(_ms(before[0])), created.get(_ms(after[0]))
    return after[1] < before[1] or (was is not None and now is not None and was != now)


def _rate(segment: Sequence[Sample]) -> float:
    """A process's rise per second over its samples (0 under two)."""
    width = segment[-1][0] - segment[0][0]
    return (segment[-1][1] - segment[0][1]) / width if len(segment) > 1 and width > 0 else 0.0


def step_increase(samples: Sequence[Sample], before: Sample | None, after: Sample | None,
                  created: Mapping[int, float], start: float, end: float, born: bool = False) -> float | None:
    """The events of one counter series in the step (start, end] from its samples in it (sorted), the samples just
    before and after it, and its `_created` value per sample time in milliseconds; `born`: the series has no sample
    before the step and began counting just before it or in it, so its first sample counts whole. None under two
    samples in the step (`increase()` has no value there) unless born. A process with one sample in the step takes its
    rate at the edge from that sample and its neighbour outside the step."""
    if len(samples) < (1 if born and before is None else 2):
        return None
    # to the millisecond from the step's start, as the server keeps times: epoch seconds lose digits in differences
    base = _ms(start)
    samples = [((_ms(t) - base) / 1000, v) for t, v in samples]
    before = None if before is None else ((_ms(before[0]) - base) / 1000, before[1])
    after = None if after is None else ((_ms(after[0]) - base) / 1000, after[1])
    created = {ms - base: v for ms, v in created.items()}
    start, end = 0.0, (_ms(end) - base) / 1000
    segments: list[list[Sample]] = [[samples[0]]]
    for a, b in itertools.pairwise(samples):
        if _restarted(a, b, created):
            segments.append([b])
        else:
            segments[-1].append(b)
    fresh = (born and before is None) or (before is not None and _restarted(before, samples[0], created))
    total = sum(seg[-1][1] - (0.0 if i or fresh else seg[0][1]) for i, seg in enumerate(segments))
    if len(samples) > 1:
        spacing = (samples[-1][0] - samples[0][0]) / (len(samples) - 1)
    else:  # born, one sample: the spacing to the next one, if any
        spacing = 0.0 if after is None else after[0] - samples[0][0]

    def reach(gap: float) -> float:
        return spacing / 2 if gap >= 1.1 * spacing else gap

    first, last = segments[0], segments[-1]
    if len(first) == 1 and before is not None and not fresh:
        first = [before, *first]
    if len(last) == 1 and after is not None and not _restarted(last[-1], after, created):
        last = [*last, after]
    if not fresh and (rate := _rate(first)) > 0:
        to_start = reach(samples[0][0] - start)
        if samples[0][1] >= 0:
            to_start = min(to_start, samples[0][1] / rate)  # a counter is not extrapolated below zero
        total += rate * to_start
    return total + _rate(last) * reach(end - samples[-1][0])


def recount(api: PrometheusAPI, metric: str, matchers: Sequence[Matcher], group: Callable[[dict[str, str]], Labels],
            step: float, resets: frozenset[tuple[float, Labels]], buckets: list[Series],
            sums: list[Series]) -> tuple[list[Series], list[Series]]:
    """`buckets` and `sums` (the answers to `increase()`, per `group` of raw labels) with the reset steps whose
    `_created` changed counted from the raw samples instead."""
    names = (f"{metric}_bucket", f"{metric}_sum", f"{metric}_created")
    pick = "{" + ",".join([f'__name__=~"{"|".join(names)}"', *(m.promql() for m in matchers)]) + "}"
    within = f"{pick}[{promql_duration(step)}]"
    counted: dict[tuple[float, Labels, str, str], float] = {}  # (step end, key, name, le) -> events
    for end in sorted({t for t, _ in resets}):
        now, earlier, later = api.query(within, end), api.query(within, end - step), api.query(within, end + step)
        created: dict[Labels, dict[int, float]] = {}
        for s in (*earlier, *now, *later):
            if s.labels.get("__name__") == names[2]:
                created.setdefault(labels_key(s.labels, _OWN), {}).update((_ms(t), v) for t, v in s.floats)
        last = {labels_key(s.labels, ()): s.floats[-1] for s in earlier if s.floats}
        first = {labels_key(s.labels, ()): s.floats[0] for s in later if s.floats}
        steps = []  # (series, its samples just before and after the step, its `_created` by time, born) of reset keys
        changed: set[Labels] = set()  # the keys with a `_created` change in the step or just before it, or born
        for s in now:
            key, ident = group(s.labels), labels_key(s.labels, _OWN)
            if s.labels.get("__name__") == names[2] or (end, key) not in resets or not s.floats:
                continue
            before = last.get(labels_key(s.labels, ()))
            before = before if before is not None and before[0] < s.floats[0][0] else None
            after = first.get(labels_key(s.labels, ()))
            after = after if after is not None and after[0] > s.floats[-1][0] else None
            stamps = created.get(ident, {})
            since = stamps.get(_ms(s.floats[0][0]))
            born = before is None and since is not None and since > end - 2 * step
            steps.append((s, before, after, stamps, born))
            if born or len({stamps[_ms(t)] for t, _ in (*([before] if before else []), *s.floats)
                            if _ms(t) in stamps}) > 1:
                changed.add(key)
        for s, before, after, stamps, born in steps:
            key = group(s.labels)
            value = step_increase(s.floats, before, after, stamps, end - step, end, born) if key in changed else None
            if value is not None:
                at = (end, key, s.labels.get("__name__", ""), s.labels.get("le", ""))
                counted[at] = counted.get(at, 0.0) + value
    if not counted:
        return buckets, sums
    return _replaced(buckets, counted, names[0]), _replaced(sums, counted, names[1])


def _replaced(series: list[Series], counted: dict[tuple[float, Labels, str, str], float], name: str) -> list[Series]:
    """`series` with the values at the counted steps replaced, and added where `increase()` had none (a series born
    with one sample in its step), as new series where the answer had none of that label set."""
    adding: dict[tuple[Labels, str], dict[float, float]] = {}
    for (t, key, counted_name, le), v in counted.items():
        if counted_name == name:
            adding.setdefault((key, le), {})[t] = v
    out = []
    for s in series:
        key, le = labels_key(s.labels, ("le", "__name__")), s.labels.get("le", "")
        mine = adding.pop((key, le), {})
        points = {round(t, 3): v for t, v in s.floats} | mine
        out.append(Series(s.labels, sorted(points.items()), s.histograms))
    for (key, le), points in adding.items():
        out.append(Series({**dict(key), **({"le": le} if le else {})}, sorted(points.items())))
    return out
