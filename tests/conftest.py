from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

#: Skips by category, and under CI=true no skip of a missing component (tests/support/skips_support.py).
pytest_plugins = ["skips_support", "pytester"]

#: `pytest --hypothesis-profile long`: 100 times the examples of every property test that scales with the
#: profile (see tests/sources/properties_support.py), no deadline; for a soak run, not for CI.
settings.register_profile("long", max_examples=10_000, deadline=None)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `grpc` run after all others.

    gRPC's core threads outlive its servers and channels, and a fork() beside them (DataLoader workers,
    `preexec_fn`) can abort the child before it runs anything (seen in CI: SIGABRT).
    """
    items.sort(key=lambda item: item.get_closest_marker("grpc") is not None)


@pytest.fixture(autouse=True)
def _fresh_command() -> None:
    """Each test starts as a command does: no stop asked yet (a `--duration` run in an earlier test asks its
    sources to end, and a receiver started directly would end at once)."""
    from latencymap.core import stopping

    stopping.begin()


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def example_data() -> Path:
    return FIXTURES / "pylatencymap" / "example_latency_data.txt"


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[str]:
    """The local zone of the test (its parameter, `indirect=True`), for the reader and the C library alike."""
    monkeypatch.setenv("TZ", request.param)
    time.tzset()
    yield request.param
    monkeypatch.undo()
    time.tzset()
