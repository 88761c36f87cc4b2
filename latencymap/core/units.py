"""Latency units: the one place where unit names and conversions live."""

from __future__ import annotations

import math

#: Interval times before this (1973) are relative (seconds since some start), not dates: views show offsets.
REAL_EPOCH = 1e8

UNIT_SECONDS: dict[str, float] = {
    "sec": 1.0,
    "millisec": 1e-3,
    "microsec": 1e-6,
    "nanosec": 1e-9,
}

_ALIASES: dict[str, str] = {
    "s": "sec", "sec": "sec", "secs": "sec", "second": "sec", "seconds": "sec",
    "ms": "millisec", "msec": "millisec", "msecs": "millisec", "millisec": "millisec",
    "millisecond": "millisec", "milliseconds": "millisec",
    "us": "microsec", "µs": "microsec", "μs": "microsec", "usec": "microsec", "usecs": "microsec",
    "microsec": "microsec", "microsecond": "microsec", "microseconds": "microsec",
    "ns": "nanosec", "nsec": "nanosec", "nsecs": "nanosec", "nanosec": "nanosec",
    "nanosecond": "nanosec", "nanoseconds": "nanosec",
}


def normalize_unit(name: str) -> str:
    """Canonical unit name (`millisec`, `microsec`, `nanosec`, `sec`) for any common spelling."""
    key = name.strip().lower()
    try:
        return _ALIASES[key]
    except KeyError:
        raise ValueError(f"unknown latency unit {name!r} (expected one of: ms, us, ns, s)") from None


def seconds_per(name: str) -> float | None:
    """Seconds in the unit `name` (any spelling `normalize_unit` takes), or None when `name` is not a unit."""
    canonical = _ALIASES.get(name.strip().lower())
    return None if canonical is None else UNIT_SECONDS[canonical]


def unit_seconds(unit: str) -> float:
    """Seconds in one `unit`."""
    return UNIT_SECONDS[normalize_unit(unit)]


#: Past a minute, with `format_duration(..., long_units=True)`: scales and suffixes, largest first.
_LONG_UNITS = ((86400.0, " days"), (3600.0, "h"), (60.0, "min"))
#: From this many days on, a duration is written in e-notation (`1.16e+292 days`) instead of grouped digits.
_GROUPED_MAX = 1e9


def format_duration(seconds: float | None, digits: int = 3, long_units: bool = False) -> str:
    """Human form of a duration: `0`, `750ns`, `128µs`, `1.5ms`, `2.05s`.

    With `long_units`, a minute or more is written in minutes, hours or days (`17.9min`, `7.73h`, `116 days`,
    `1 day`) instead of seconds (`1074s`, `27840s`, `10001000s`). Off by default: the views' bulk formatter
    (`latencymap.views.numbers`) writes exactly this function's default texts, seconds included.
    """
    if seconds is None or math.isnan(seconds):
        return "-"
    if seconds == 0:
        return "0"
    mag = abs(seconds)
    if long_units and mag >= 60:
        for scale, suffix in _LONG_UNITS:
            if mag >= scale:
                value = seconds / scale
                if abs(value) >= _GROUPED_MAX:  # past any real wait (1e300 ms from a broken clock): not 290 digits
                    return f"{value:.{digits}g}{suffix}"
                if abs(value) >= 10**digits:  # `_compact` would write all the digits: group them
                    return f"{value:,.0f}{suffix}"
                text = _compact(value, digits)
                return f"{text}{' day' if text in ('1', '-1') and scale == 86400.0 else suffix}"
    shown = _rounded(mag, digits)  # 999.6µs is `1ms`, not `1000µs`
    for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if shown >= scale or suffix == "ns":
            return f"{_compact(seconds / scale, digits)}{suffix}"
    raise AssertionError("unreachable")


def fit_duration(seconds: float, width: int) -> str:
    """A duration as the report writes it (`long_units`: `12.7 days`, `19.1h`) in at most `width` cells: with fewer
    digits where it must, then days as `d` (`13d`); the shortest of these when none fits. The unit is never lost."""
    texts = [format_duration(seconds, digits, long_units=True) for digits in (3, 2, 1)]
    texts += [t.replace(" days", "d").replace(" day", "d") for t in texts]
    return next((t for t in texts if len(t) <= width), min(texts, key=len))


#: `format_number`'s SI prefixes, largest first: counts reach 2**63 (9.2E), so rates of them go past G.
NUMBER_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def format_number(value: float | None, digits: int = 3) -> str:
    """Compact number: `0`, `0.25`, `12`, `1.5k`, `2.3M`, `338T`, `9.22E`; under 1e-4, `1.1e-5` (a value that is not
    0 never reads `0`)."""
    if value is None or math.isnan(value):
        return "-"
    shown = _rounded(abs(value), digits)  # 999.6 is `1k`, not `1000`
    for scale, suffix in NUMBER_PREFIXES:
        if shown >= scale:
            return f"{_compact(value / scale, digits)}{suffix}"
    return _compact(value, digits)


def plural(n: int, noun: str) -> str:
    """`1 event`, `2 events`, `1,024 events`."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _rounded(mag: float, digits: int) -> float:
    """`mag` rounded to `digits` significant digits, as it is written: the unit or prefix is chosen from this, so
    that a value that rounds up to the next one is written in it."""
    return float(f"{mag:.{digits}g}") if math.isfinite(mag) else mag


def _compact(value: float, digits: int) -> str:
    """`digits` significant digits, no exponent for large values (`12345`); a value under 1e-4 (not 0) in a short
    exponent form (`1.1e-5`), never `0`."""
    if value == int(value) and abs(value) < 10**digits:
        return str(int(value))
    text = f"{value:.{digits}g}"
    if "e" in text:
        if abs(value) >= 1:
            return f"{value:.0f}"
        mantissa, exponent = text.split("e")
        return f"{mantissa}e-{exponent.lstrip('-+').lstrip('0')}"
    return text


def format_bytes(size: int) -> str:
    """A size in powers of 1024: `512 MiB`, `1.5 GiB`."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.3g} {unit}"
        value /= 1024
    return f"{value:.3g} TiB"
