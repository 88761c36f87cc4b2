"""Stragglers: items (tasks, ranks, steps) much slower than the other items of their group.

An item is a straggler when both hold, against its group (e.g. a Spark stage):

- ratio: `duration / reference >= min_ratio` (default 1.5, Spark's own speculation multiplier), so a
  group with a tiny spread (all tasks 100 ms +- 1 ms) never flags a task that is 3 ms slow;
- robust z: `0.6745 * (duration - reference) / MAD >= min_mad_score` (default 3.5, the
  Iglewicz-Hoaglin cut-off for the modified z-score), so a noisy group does not flag its upper
  half. The MAD is floored at 1% of the median: a group of identical durations leaves the
  decision to the ratio;
- and `duration >= min_duration_s` (default 0: the caller's floor; Spark's is its speculation's
  `spark.speculation.minTaskRuntime`, 100 ms: a 70 ms task in a stage of 40 ms ones is no task to chase).

`reference` is the group median (`reference="median"`), or for warm-up items the fastest of their wave
(`reference="wave"`, below). Median and MAD are those of the items past warm-up (below), all of them when fewer
than `min_group` are: a first wave several times slower than the rest neither shifts the reference nor widens
the MAD (hiding a straggler among the rest); and median and MAD ignore a few extreme items, so a couple of slow
items neither shift the reference nor hide each other.

Warm-up: an item that pays a start-up cost its group's other items do not is *warm-up*, judged against
the other warm-up items of its group, not against the median:

- `cold` items: the caller knows they ran cold (Spark: the first task on each executor slot, which starts a
  Python worker; see sources/spark/summary.py);
- the group's *first wave*, when items carry `start`/`end`: the items that started before any item of the
  group ended, at most `slots` of them (the first by start) when the caller knows how many run at once —
  Spark launches the next task a few ms before it logs the end of the previous one, so "started before any
  ended" alone takes one task too many.

If the warm-up items are at most half of the group, they are judged against the fastest of them (it paid
the same start-up cost, so it is the best estimate of "normal + warm-up"): a uniformly slow first wave is
not flagged, a warm-up item much slower than its wave-mates still is. Cold items pay more than a wave's
warm items, so they are judged against the fastest cold item (`reference="cold"`; `"wave"` when every
warm-up item is cold), the others against the fastest warm-up item. A lone warm-up item, or a lone cold
one, cannot be told from a straggler and is never flagged as one. Warm-up items slow against the median
(>= the same ratio and score) are reported with `warmup=True`, and only when `include_warmup=True`: they
are not what to chase.
Without start/end times or cold flags every item is judged against the median.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from latencymap.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from latencymap.core.percentiles import median_of

_T = DEFAULT_THRESHOLDS

#: Flag an item at least this many times slower than its reference (Spark speculation multiplier).
MIN_RATIO = _T.straggler_min_ratio
#: Modified z-score cut-off (Iglewicz & Hoaglin).
MIN_MAD_SCORE = _T.straggler_min_mad_score
#: Groups with fewer items have no meaningful median.
MIN_GROUP = _T.straggler_min_group
#: MAD floor as a fraction of the median.
MAD_FLOOR = 0.01
_MAD_TO_SIGMA = 0.6745


@dataclass(frozen=True)
class Item:
    """One timed unit of work: `key` names it, `group` is what it is compared within."""

    key: str
    group: str
    duration_s: float
    start: float | None = None
    end: float | None = None
    #: The caller knows this item ran cold (it paid a start-up cost the others did not).
    cold: bool = False


@dataclass
class Straggler:
    """An item flagged as much slower than its group."""

    item: Item
    group_median_s: float
    reference_s: float
    ratio: float
    mad_score: float
    group_size: int
    warmup: bool = False
    #: Why a warm-up item is warm-up: "cold" (the caller said so) or "first wave".
    warmup_reason: str | None = None
    #: What `reference_s` is: "median" (the group's), "wave" (the fastest item of its warm-up wave) or "cold" (the
    #: fastest cold item of its group, where the wave has warm items too).
    reference: str = "median"
    #: Whether `group_median_s` is the median of the group's items past warm-up (not of all its items).
    median_past_warmup: bool = False

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "key": self.item.key,
            "group": self.item.group,
            "duration_s": self.item.duration_s,
            "start": self.item.start,
            "end": self.item.end,
            "group_median_s": self.group_median_s,
            "median_past_warmup": self.median_past_warmup,
            "reference_s": self.reference_s,
            "reference": self.reference,
            "ratio": _finite(self.ratio),
            "mad_score": _finite(self.mad_score),
            "group_size": self.group_size,
            "warmup": self.warmup,
            "warmup_reason": self.warmup_reason,
        }


def _finite(value: float) -> float | None:
    """JSON has no infinity: None instead."""
    return float(value) if np.isfinite(value) else None


def first_wave(items: list[Item], slots: int | None = None) -> np.ndarray:
    """Mask of the items that started before any item of the list ended, at most the first `slots` by start.

    All False without times.
    """
    if len(items) == 0 or any(i.start is None or i.end is None for i in items):
        return np.zeros(len(items), dtype=bool)
    starts = np.array([i.start for i in items], dtype=np.float64)
    ends = np.array([i.end for i in items], dtype=np.float64)
    wave = starts < ends.min()
    if slots is not None and wave.sum() > slots:
        first = np.flatnonzero(wave)[np.argsort(starts[wave], kind="stable")[:max(slots, 0)]]
        wave = np.zeros(len(items), dtype=bool)
        wave[first] = True
    return wave


def group_stragglers(
    items: list[Item],
    *,
    min_ratio: float = MIN_RATIO,
    min_mad_score: float = MIN_MAD_SCORE,
    min_group: int = MIN_GROUP,
    include_warmup: bool = False,
    slots: int | None = None,
    min_duration_s: float = 0.0,
) -> list[Straggler]:
    """Stragglers of one group (see the module docstring for the rules)."""
    durations = np.array([i.duration_s for i in items], dtype=np.float64)
    ok = np.isfinite(durations) & (durations >= 0)
    if int(ok.sum()) < min_group:
        return []
    cold = np.array([i.cold for i in items], dtype=bool) & ok
    wave = (first_wave(items, slots) | cold) & ok
    settled = ok & ~wave
    past_warmup = bool(wave.any()) and int(settled.sum()) >= min_group
    median, mad = _spread(durations[settled] if past_warmup else durations[ok])
    reference = np.full(len(items), median)
    label = np.full(len(items), "median", dtype=object)
    if wave.sum() <= ok.sum() // 2:
        warm_wave = wave & ~cold
        classes = ((warm_wave, wave, "wave"), (cold, cold, "cold" if warm_wave.any() else "wave"))
        for members, peers, name in classes:  # cold items against the fastest cold one: they paid the same cost
            if peers.sum() == 1:
                reference[members] = np.inf  # a lone warm-up item: never a straggler
            elif members.any():
                reference[members] = max(median, float(durations[peers].min()))
                label[members & (reference > median)] = name
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(reference > 0, durations / reference, np.inf)
        score = np.where(np.isfinite(reference), _MAD_TO_SIGMA * (durations - reference) / mad, -np.inf)
    slow = ok & (ratio >= min_ratio) & (score >= min_mad_score) & (durations >= min_duration_s)
    # Warm-up: warm-up items slow against the median but not against their wave.
    median_score = _MAD_TO_SIGMA * (durations - median) / mad
    with np.errstate(divide="ignore", invalid="ignore"):
        median_ratio = np.where(median > 0, durations / median, np.inf)
    warm = wave & ~slow & (median_ratio >= min_ratio) & (median_score >= min_mad_score) & (durations >= min_duration_s)
    out = [
        Straggler(items[k], median, float(reference[k]), float(ratio[k]), float(score[k]), int(ok.sum()),
                  reference=str(label[k]), median_past_warmup=past_warmup)
        for k in np.flatnonzero(slow)
    ]
    if include_warmup:
        out += [
            Straggler(items[k], median, median, float(median_ratio[k]), float(median_score[k]), int(ok.sum()), True,
                      "cold" if cold[k] else "first wave", median_past_warmup=past_warmup)
            for k in np.flatnonzero(warm)
        ]
    return out


def _spread(durations: np.ndarray) -> tuple[float, float]:
    """The median and the MAD (floored: see the module docstring) of a group's durations."""
    median = float(median_of(durations))
    mad = float(median_of(np.abs(durations - median)))
    return median, max(mad, MAD_FLOOR * median, np.finfo(np.float64).tiny)


def already_slow(durations_s: np.ndarray, so_far_s: float, *, min_ratio: float = MIN_RATIO,
                 min_mad_score: float = MIN_MAD_SCORE, min_group: int = MIN_GROUP,
                 min_duration_s: float = 0.0) -> tuple[float, float] | None:
    """(ratio, group median) when an item still running for `so_far_s` is a straggler already against the items of
    its group that ended (`durations_s`), by the same rule (against the median); None when not, or when fewer than
    `min_group` ended."""
    d = np.asarray(durations_s, dtype=np.float64)
    d = d[np.isfinite(d) & (d >= 0)]
    if d.size < min_group:
        return None
    median, mad = _spread(d)
    ratio = so_far_s / median if median > 0 else np.inf
    slow = (ratio >= min_ratio and _MAD_TO_SIGMA * (so_far_s - median) / mad >= min_mad_score
            and so_far_s >= min_duration_s)
    return (float(ratio), median) if slow else None


def find_stragglers(
    items: Iterable[Item],
    *,
    min_ratio: float | None = None,
    min_mad_score: float | None = None,
    min_group: int | None = None,
    include_warmup: bool = False,
    slots: dict[str, int] | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    min_duration_s: float = 0.0,
) -> list[Straggler]:
    """Stragglers of every group with at least `min_group` items, slowest ratio first (warm-up last).

    Unset cut-offs come from `thresholds`; `slots` gives, per group, how many items run at once; an item shorter
    than `min_duration_s` is none.
    """
    groups: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        groups[item.group].append(item)
    found: list[Straggler] = []
    for name, members in groups.items():
        found += group_stragglers(
            members,
            min_ratio=thresholds.straggler_min_ratio if min_ratio is None else min_ratio,
            min_mad_score=thresholds.straggler_min_mad_score if min_mad_score is None else min_mad_score,
            min_group=thresholds.straggler_min_group if min_group is None else min_group,
            include_warmup=include_warmup, slots=(slots or {}).get(name), min_duration_s=min_duration_s,
        )
    found.sort(key=lambda s: (s.warmup, -s.ratio))
    return found


def stragglers_to_json(stragglers: Iterable[Straggler]) -> list[dict[str, Any]]:
    """Plain-JSON list."""
    return [s.to_json() for s in stragglers]


#: A straggler read more than its group's usual input when it read at least this many times the median item's bytes.
READ_RATIO = 1.5
#: Those bytes explain its slowness when it took at most this many times its bytes' ratio of the median item's time
#: (its time per byte at most twice the median item's: a task's time grows with its partition, not faster). A task
#: 8.7x its stage's median time that read 1.6x its bytes spent most of that time on something else.
READ_EXPLAINS = 2.0


def time_ratio(s: dict[str, Any]) -> float | None:
    """A straggler's (a report object's) time over its group's median item's, whatever its reference; None when
    either is not known, infinite when the median is 0."""
    took, usual = s.get("duration_s"), s.get("stage_median_s", s.get("group_median_s"))
    if took is None or usual is None:
        return None
    return took / usual if usual > 0 else float("inf")


def input_explains(s: dict[str, Any]) -> bool:
    """Whether a straggler's bytes read (`read_ratio`: over its group's median item's) explain its slowness: it read
    READ_RATIO times as much or more, and took at most READ_EXPLAINS times that ratio of the median's time."""
    ratio, took = s.get("read_ratio"), time_ratio(s)
    return (ratio is not None and bool(s.get("read_bytes")) and ratio >= READ_RATIO
            and (took is None or took <= READ_EXPLAINS * ratio))


def known_cause(s: dict[str, Any]) -> str | None:
    """What the log says made a straggler (a report object: Spark's) slow: "executor" (the executor it ran on was slow
    in its group: `slow_executor`), "input" (its bytes read explain it: `input_explains`), else None (not known)."""
    if s.get("slow_executor"):
        return "executor"
    return "input" if input_explains(s) else None
