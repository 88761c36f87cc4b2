"""Numbers formatted in bulk read exactly as `format_number` / `format_duration` write each one."""

from __future__ import annotations

import numpy as np
import pytest

from latencymap.core.units import format_duration, format_number
from latencymap.views.numbers import TextCache, text_keys


def awkward_values() -> np.ndarray:
    """Values around every place the texts change: halves at the last digit, powers of ten and their neighbours,
    suffix thresholds, tiny values, NaN and zeros, rates as the maps show them."""
    rng = np.random.default_rng(2)
    powers = 10.0 ** np.arange(-16, 23)  # past 1e18: the T, P and E prefixes of counts up to 2**63 and their rates
    return np.concatenate([
        rng.lognormal(0, 9, 20000), -rng.lognormal(0, 9, 2000),
        (np.arange(1, 20000) + 0.5) / 10.0 ** rng.integers(0, 9, 19999),  # exact halves at some digit
        powers, -powers, np.nextafter(powers, 0), np.nextafter(powers, np.inf),
        [0.0, -0.0, np.nan, 5e-324, 1e-320, 9.9e-5, 9.99e-5, 9.996e-5, 9.9996e-5, -9.9996e-5, 1e-4, 999.95, 9999.5,
         99.995, 999_999.0, 999_999.9, 1e12, 999.95e12, 3.38106e14, 2e16, 2.0 ** 63, 2.0 ** 53 + 2,
         1.7e308, -1.7e308],
        np.arange(0, 3000, dtype=float),
        rng.integers(0, 3000, 20000) / (1 + rng.integers(-4000, 4000, 20000) * 1e-6),
        rng.uniform(0, 2e-3, 5000), rng.uniform(0, 2e-10, 2000),
    ])


@pytest.mark.parametrize("digits", [3, 4])
@pytest.mark.parametrize("duration", [False, True])
@pytest.mark.parametrize("style", [("", "", 0, ""), ("\x1b[0m  ", "", 9, ""), ("x=", "sum ", 9, "\n\n")])
def test_texts_are_the_functions_texts(digits: int, duration: bool, style: tuple[str, str, int, str]) -> None:
    values = awkward_values()
    function = format_duration if duration else format_number
    before, inner, align, after = style
    want = [f"{before}{inner + function(v, digits):>{align}}{after}".encode() for v in values.tolist()]
    cache = TextCache(digits, duration, *style)
    assert cache.texts(values) == want  # every key new
    assert cache.texts(values[::-1]) == want[::-1]  # every key known
    assert cache.texts(values[:1000].reshape(10, 100)) == want[:1000]


def test_most_values_take_the_vectorized_way() -> None:
    rng = np.random.default_rng(3)
    rates = rng.poisson(900, 10000) / (1 + rng.integers(-4000, 4000, 10000) * 1e-6)
    combo, _ = text_keys(rates, 4)
    assert (combo == -2).mean() < 0.001  # formatted one by one: only values within a hair of a rounding half


def test_infinity_raises_as_the_function_does() -> None:
    with pytest.raises(OverflowError):
        format_number(float("inf"))
    with pytest.raises(OverflowError):
        TextCache().texts(np.array([1.0, float("inf")]))
