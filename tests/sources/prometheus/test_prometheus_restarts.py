"""`restarts.step_increase`: a step's events from its raw samples, by hand-counted cases (the real server's are in
test_prometheus_server.py)."""

from __future__ import annotations

import pytest

from latencymap.sources.prometheus.restarts import step_increase


def test_a_rise_across_a_created_change_counts_the_old_rise_and_the_new_count_whole() -> None:
    # step (0, 4]; old process 10/s at 0.5, 1.5; new one created between, at 2.5 and 3.5 it holds 400 and 410
    samples = [(0.5, 105.0), (1.5, 115.0), (2.5, 400.0), (3.5, 410.0)]
    created = {500: 1.0, 1500: 1.0, 2500: 2.0, 3500: 2.0}
    # 10 (old rise) + 410 (new, from zero) + 0.5 s at 10/s before the first sample + 0.5 s at 10/s after the last
    assert step_increase(samples, (-0.5, 95.0), None, created, 0.0, 4.0) == pytest.approx(430.0)
    assert step_increase(samples, None, None, {}, 0.0, 4.0) == pytest.approx((410 - 105) * 4 / 3)  # increase()'s


def test_a_restart_just_before_the_step_counts_the_new_process_from_zero() -> None:
    samples = [(0.5, 300.0), (1.5, 310.0), (2.5, 320.0), (3.5, 330.0)]
    created = {-500: 1.0, 500: 2.0, 1500: 2.0, 2500: 2.0, 3500: 2.0}
    # 330 since its creation, and 0.5 s at 10/s after the last sample; nothing before its creation
    assert step_increase(samples, (-0.5, 200.0), None, created, 0.0, 4.0) == pytest.approx(335.0)


def test_a_process_with_one_sample_in_the_step_takes_its_rate_from_its_neighbour_outside() -> None:
    samples = [(0.5, 105.0), (1.5, 115.0), (2.5, 125.0), (3.5, 400.0)]
    created = {500: 1.0, 1500: 1.0, 2500: 1.0, 3500: 2.0, 4500: 2.0}
    # 20 + 400 + 0.5 s at 10/s (old) + 0.5 s at 40/s (new: 400 -> 440 by 4.5)
    assert step_increase(samples, None, (4.5, 440.0), created, 0.0, 4.0) == pytest.approx(445.0)
    assert step_increase(samples, None, None, created, 0.0, 4.0) == pytest.approx(425.0)  # no neighbour: no rate
    assert step_increase(samples[:1], None, None, created, 0.0, 4.0) is None  # no increase() either


def test_a_series_born_in_the_step_counts_its_first_sample_whole() -> None:
    # a label set created in the step (0, 4] (no sample before it): its first sample at 2.5 already holds 150
    samples = [(2.5, 150.0), (3.5, 160.0)]
    created = {2500: 7.0, 3500: 7.0}
    # all 160 since its creation, and 0.5 s at 10/s after the last sample; nothing before its creation
    assert step_increase(samples, None, None, created, 0.0, 4.0, born=True) == pytest.approx(165.0)
    assert step_increase(samples, None, None, created, 0.0, 4.0) == pytest.approx(20.0)  # increase()'s: the rise
    # one sample in the step (no increase() at all): 150, and 1.5 s at the 10/s its next sample gives
    assert step_increase(samples[:1], None, (4.5, 170.0), created, 0.0, 4.0, born=True) == pytest.approx(165.0)
    assert step_increase(samples[:1], None, None, created, 0.0, 4.0, born=True) == pytest.approx(150.0)
    assert step_increase([], None, None, created, 0.0, 4.0, born=True) is None
