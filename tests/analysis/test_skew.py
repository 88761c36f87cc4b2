"""Stage skew metrics: task time past the cores of the executors that ran it (`overcommitted`)."""

from __future__ import annotations

import numpy as np

from latencymap.analysis.skew import overcommitted, stage_skew


def test_tasks_overlapping_on_a_one_core_executor_are_measured_not_clamped_away() -> None:
    # executor "a" (1 core): tasks [0, 10] and [8, 20] overlap for 2; executor "b" (1 core): back to back, no overlap
    starts, ends = np.array([0.0, 8.0, 0.0, 10.0]), np.array([10.0, 20.0, 10.0, 20.0])
    groups = ["a", "a", "b", "b"]
    assert overcommitted(starts, ends, groups, {"a": 1, "b": 1}) == 2.0
    assert overcommitted(starts, ends, groups, {"a": 2, "b": 1}) == 0.0
    skew = stage_skew(ends - starts, starts, ends, cores=2)
    assert skew["utilisation"] == 42 / 40 and skew["wasted_core_s"] == 0.0  # over 100%: the overlap says why


def test_three_tasks_at_once_on_two_cores_count_the_third() -> None:
    starts, ends = np.array([0.0, 0.0, 5.0]), np.array([10.0, 10.0, 7.0])
    assert overcommitted(starts, ends, ["x"] * 3, {"x": 2}) == 2.0
    assert overcommitted(starts, ends, ["x"] * 3, {"x": 3}) == 0.0


def test_cores_there_part_of_the_wall_count_only_then() -> None:
    """Cores (count, from, to) bound to the wall: 2 all along, 2 from 2 (None: the wall's start) to 6."""
    starts, ends = np.array([0.0, 0.0, 1.0]), np.array([10.0, 4.0, 5.0])
    skew = stage_skew(ends - starts, starts, ends, cores=4, spans=[(2, None, None), (2, 2.0, 6.0)])
    assert skew["available_core_s"] == 2 * 10 + 2 * 4 and skew["wasted_core_s"] == 28 - 18
    assert skew["utilisation"] == 18 / 28
    whole = stage_skew(ends - starts, starts, ends, cores=4, spans=[(2, -5.0, 50.0), (2, 12.0, 20.0)])
    assert whole["available_core_s"] == 20  # one there before and after the wall, one only after it
    assert stage_skew(ends - starts, starts, ends, cores=4)["available_core_s"] == 40
