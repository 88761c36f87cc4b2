"""Stragglers: items (tasks, ranks, steps) much slower than the other items of their group.

An item is a straggler when both hold, against its group (e.g. a Spark stage):

- ratio: `duration / reference >= min_ratio` (default 1.5, Spark's own speculation multiplier), so a
  group with a tiny spread (all tasks 100 ms +- 1 ms) never flags a task that is 3 ms slow;
- robust z: `0.6745 * (duration - reference) / MAD >= min_mad_score` (default 3.5, the
  Iglewicz-Hoaglin cut-off for the modified z-score), so a noisy group does not flag its upper
  half. The MAD is floored at 1% of the median: a group of identical durations leaves the
  decision to the ratio.

`reference` is the group median. Median and MAD ignore a few extreme items, so a couple of slow
items (stragglers or warm-up) neither shift the reference nor hide each other.

Warm-up (Spark starts a Python worker for the first tasks of a job, ~1.8 s): when items carry
`start`/`end`, the group's *first wave* is the items that started before any item of the group
ended. If the first wave is at most half of the group, its items are judged against the fastest
item of the wave instead of the median: that item paid the same start-up cost, so it is the best
estimate of "normal + warm-up". A uniformly slow first wave is therefore not flagged (reported
with `warmup=True` only when `include_warmup=True`), while a first-wave item much slower than its
wave-mates still is. A first wave of one item cannot be told from a straggler and is never flagged.
Without start/end times the first wave is unknown and every item is judged against the median.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Flag an item at least this many times slower than its reference (Spark speculation multiplier).
MIN_RATIO = 1.5
#: Modified z-score cut-off (Iglewicz & Hoaglin).
MIN_MAD_SCORE = 3.5
#: Groups with fewer items have no meaningful median.
MIN_GROUP = 4
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

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "key": self.item.key,
            "group": self.item.group,
            "duration_s": self.item.duration_s,
            "start": self.item.start,
            "end": self.item.end,
            "group_median_s": self.group_median_s,
            "reference_s": self.reference_s,
            "ratio": _finite(self.ratio),
            "mad_score": _finite(self.mad_score),
            "group_size": self.group_size,
            "warmup": self.warmup,
        }


def _finite(value: float) -> float | None:
    """JSON has no infinity: None instead."""
    return float(value) if np.isfinite(value) else None


def first_wave(items: list[Item]) -> np.ndarray:
    """Mask of the items that started before any item of the list ended (all False without times)."""
    if len(items) == 0 or any(i.start is None or i.end is None for i in items):
        return np.zeros(len(items), dtype=bool)
    starts = np.array([i.start for i in items], dtype=np.float64)
    ends = np.array([i.end for i in items], dtype=np.float64)
    return starts < ends.min()


def group_stragglers(
    items: list[Item],
    *,
    min_ratio: float = MIN_RATIO,
    min_mad_score: float = MIN_MAD_SCORE,
    min_group: int = MIN_GROUP,
    include_warmup: bool = False,
) -> list[Straggler]:
    """Stragglers of one group (see the module docstring for the rules)."""
    durations = np.array([i.duration_s for i in items], dtype=np.float64)
    ok = np.isfinite(durations) & (durations >= 0)
    if int(ok.sum()) < min_group:
        return []
    median = float(np.median(durations[ok]))
    mad = float(np.median(np.abs(durations[ok] - median)))
    mad = max(mad, MAD_FLOOR * median, np.finfo(np.float64).tiny)
    reference = np.full(len(items), median)
    wave = first_wave(items) & ok
    if 1 < wave.sum() <= ok.sum() // 2:
        reference[wave] = max(median, float(durations[wave].min()))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(reference > 0, durations / reference, np.inf)
    score = _MAD_TO_SIGMA * (durations - reference) / mad
    slow = ok & (ratio >= min_ratio) & (score >= min_mad_score)
    # Warm-up: first-wave items slow against the median but not against their wave.
    median_score = _MAD_TO_SIGMA * (durations - median) / mad
    with np.errstate(divide="ignore", invalid="ignore"):
        median_ratio = np.where(median > 0, durations / median, np.inf)
    warm = wave & ~slow & (median_ratio >= min_ratio) & (median_score >= min_mad_score)
    out = [
        Straggler(items[k], median, float(reference[k]), float(ratio[k]), float(score[k]), int(ok.sum()))
        for k in np.flatnonzero(slow)
    ]
    if include_warmup:
        out += [
            Straggler(items[k], median, median, float(median_ratio[k]), float(median_score[k]), int(ok.sum()), True)
            for k in np.flatnonzero(warm)
        ]
    return out


def find_stragglers(
    items: Iterable[Item],
    *,
    min_ratio: float = MIN_RATIO,
    min_mad_score: float = MIN_MAD_SCORE,
    min_group: int = MIN_GROUP,
    include_warmup: bool = False,
) -> list[Straggler]:
    """Stragglers of every group with at least `min_group` items, slowest ratio first."""
    groups: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        groups[item.group].append(item)
    found: list[Straggler] = []
    for members in groups.values():
        found += group_stragglers(
            members, min_ratio=min_ratio, min_mad_score=min_mad_score, min_group=min_group,
            include_warmup=include_warmup,
        )
    found.sort(key=lambda s: (s.warmup, -s.ratio))
    return found


def stragglers_to_json(stragglers: Iterable[Straggler]) -> list[dict[str, Any]]:
    """Plain-JSON list."""
    return [s.to_json() for s in stragglers]
