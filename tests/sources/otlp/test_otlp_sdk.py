"""Acceptance: the real SDK exporting to `listen --otlp` and `--otlp-grpc`, delta and cumulative, protobuf and JSON.

Every observation the SDK made is counted once (cross-checked with the SDK's in-memory reader on the same
meter provider), explicit buckets keep the SDK's own counts and sum, exponential histograms at scale >= 0 fold
exactly onto the slots of the observed values, and coarser scales are spread and keep their own buckets.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from otlp_support import by_label, messages, push_and_receive, slot_totals

from latencymap.core.buckets import bin_values

ROUTES = ("/cart", "/pay")
#: The gRPC exporter starts gRPC in this process: those cases run last (tests/conftest.py).
GRPC = [pytest.param(name, marks=pytest.mark.grpc) for name in ("grpc", "grpc+gzip")]


class Lognormal:
    """Request latencies (ms) on two routes, recorded into an explicit and an exponential histogram."""

    def __init__(self, per_push: int = 300, seed: int = 22) -> None:
        self.rng = np.random.default_rng(seed)
        self.per_push = per_push
        self.values: dict[str, list[float]] = {route: [] for route in ROUTES}

    def setup(self, meter: Any) -> tuple[Any, Any]:
        return meter.create_histogram("rpc.explicit", unit="ms"), meter.create_histogram("rpc.expo", unit="ms")

    def __call__(self, instruments: tuple[Any, Any], n: int) -> None:
        for value, route in zip(self.rng.lognormal(2.5, 1.4, self.per_push).tolist(),
                                self.rng.integers(0, len(ROUTES), self.per_push).tolist(), strict=True):
            for instrument in instruments:
                instrument.record(value, {"route": ROUTES[route]})
            self.values[ROUTES[route]].append(value)


@pytest.mark.slow
@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
@pytest.mark.parametrize("encoding", ["protobuf", "protobuf+gzip", "json", *GRPC])
def test_every_observation_is_counted_once(encoding: str, temporality: str) -> None:
    record = Lognormal()
    got, pusher = push_and_receive(encoding, temporality, record)
    streams = by_label(got)
    assert not [m for m in messages(got)[1:]], messages(got)
    for route in ROUTES:
        values = np.array(record.values[route])
        explicit = streams[f"acceptance/rpc.explicit{{route={route}}}"]
        expo = streams[f"acceptance/rpc.expo{{route={route}}}"]
        sdk_explicit = pusher.sdk[("rpc.explicit", (("route", route),))]
        sdk_expo = pusher.sdk[("rpc.expo", (("route", route),))]
        assert sdk_explicit.count == sdk_expo.count == len(values)  # the SDK's own in-memory count
        for columns in (explicit, expo):
            assert slot_totals(columns).sum() == len(values)
            assert not any(c.reset for c in columns)
            assert all(b.start == a.end for a, b in itertools.pairwise(columns))  # columns tile time
        # explicit bounds: the SDK's own buckets and sum, kept beside the spread slots
        assert np.sum([c.source_buckets.counts for c in explicit], axis=0).tolist() == list(sdk_explicit.bucket_counts)
        assert explicit[0].source_buckets.bounds == (*(float(b) for b in sdk_explicit.explicit_bounds), math.inf)
        spent = sum(c.source_buckets.total_time for c in explicit)
        assert spent == pytest.approx(values.sum() / 1e3, rel=1e-9)
        # exponential at scale >= 0: exactly the slots of the observed values
        assert sdk_expo.scale >= 0
        assert all(c.source_buckets is not None and c.source_buckets.bounds == () for c in expo)  # only the sum
        assert sum(c.source_buckets.total_time for c in expo) == pytest.approx(values.sum() / 1e3, rel=1e-9)
        np.testing.assert_array_equal(slot_totals(expo), bin_values(values)[0])


@pytest.mark.slow
def test_values_on_powers_of_two_fold_by_the_documented_rule() -> None:
    values = [0.0, 0.5, 1.0, 2.0, 3.0, 8.0, 1024.0, 1000.0, 2.0**20]

    class PowersOfTwo:
        def setup(self, meter: Any) -> Any:
            return meter.create_histogram("pow2.expo", unit="us")

        def __call__(self, histogram: Any, n: int) -> None:
            for value in values:
                histogram.record(value)

    got, _pusher = push_and_receive("protobuf", "delta", PowersOfTwo(), pushes=2)
    [columns] = by_label(got).values()
    assert columns[0].stream.unit == "microsec"
    twice = np.array(values * 2)
    np.testing.assert_array_equal(slot_totals(columns), bin_values(np.nextafter(twice, 0))[0])
    assert not np.array_equal(slot_totals(columns), bin_values(twice)[0])


@pytest.mark.slow
@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
def test_coarse_scales_are_spread_and_keep_their_buckets(temporality: str) -> None:
    class Wide:
        def __init__(self) -> None:
            self.values: list[float] = []

        def setup(self, meter: Any) -> Any:
            return meter.create_histogram("wide.expo", unit="ns")

        def __call__(self, histogram: Any, n: int) -> None:
            for value in np.geomspace(1.5 + n, 3e9, 40).tolist():
                histogram.record(value)
                self.values.append(value)

    record = Wide()
    got, pusher = push_and_receive("json", temporality, record, pushes=3, expo_max_size=4)
    [columns] = by_label(got).values()
    [sdk] = pusher.sdk.values()
    assert sdk.scale < 0
    assert slot_totals(columns).sum() == len(record.values) == sdk.count
    assert all(c.source_buckets is not None for c in columns)
    assert sum(int(c.source_buckets.counts.sum()) for c in columns) == sdk.count
    for column in columns:  # own buckets: zero bucket, the gap below the first bucket, then powers of two
        exponents = np.log2(np.array(column.source_buckets.bounds[2:]))
        assert (exponents == np.round(exponents)).all()
    low, high = bin_values(np.array([min(record.values)]))[0].argmax(), bin_values(np.array([3e9]))[0].argmax()
    spread = np.flatnonzero(slot_totals(columns))
    assert spread.min() >= low - (1 << -sdk.scale) and spread.max() <= high + (1 << -sdk.scale)
