"""Captures in the exact shapes the field's tools print them: PyLatencyMap's Oracle SQL*Plus scripts, `dtrace` with
PyLatencyMap's `pread_tracedata.d`, SystemTap `@hist_log` printed per key.

Each builder follows the printing code of the tool it imitates (quoted in its docstring), so a test built on it
reads what a user would pipe in.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "pylatencymap" / "example_latency_data.txt"
DAY_US = 86_400_000_000


def oracle_time_of_day(micros: int, day: dt.date) -> str:
    """SQL*Plus's text of `systimestamp` at `micros` after midnight UTC: `26-AUG-13 04.26.51.653754 PM +00:00`."""
    t = dt.datetime.combine(day, dt.time(), dt.UTC) + dt.timedelta(microseconds=micros)
    return t.strftime("%d-%b-%y %I.%M.%S.%f %p +00:00").upper()


def shifted_example(shift_us: int) -> str:
    """PyLatencyMap's Oracle sample with every timestamp moved by `shift_us`, as `ora_latency.sql` writes it.

    The script prints `timestamp, microsec, <1e6 * (hour*3600 + minute*60 + second) of systimestamp>,<systimestamp>`:
    microseconds since midnight, so a capture that runs past midnight starts again near 0.
    """
    day = dt.date(2013, 8, 26)

    def moved(m: re.Match[str]) -> str:
        since_start = int(m.group(1)) + shift_us
        date = day + dt.timedelta(days=since_start // DAY_US)
        micros = since_start % DAY_US
        return f"timestamp, microsec, {micros},{oracle_time_of_day(micros, date)}"

    return re.sub(r"timestamp, microsec, (\d+),.*", moved, EXAMPLE.read_text())


def example_timestamps() -> list[int]:
    """The sample's timestamps (µs since midnight), in order."""
    return [int(x) for x in re.findall(r"timestamp, microsec, (\d+),", EXAMPLE.read_text())]


def midnight_shift(records_before: int) -> int:
    """The shift that puts midnight between record `records_before` - 1 and record `records_before` of the sample."""
    stamps = example_timestamps()
    return DAY_US - (stamps[records_before - 1] + stamps[records_before]) // 2


def quantize_rows(counts: dict[int, int]) -> list[str]:
    """DTrace's `quantize()` table as `printa` prints it: header, then `value |@@@ count` rows with a zero row on
    either side of the used range (how dtrace frames it)."""
    values = sorted(counts)
    lo, hi = values[0], values[-1]
    frame = [lo // 2 if lo > 1 else (0 if lo == 1 else -1), *[v for v in _powers(lo, hi)], hi * 2]
    total = sum(counts.values()) or 1
    lines = ["           value  ------------- Distribution ------------- count    "]
    for v in frame:
        c = counts.get(v, 0)
        bar = "@" * round(40 * c / total)
        lines.append(f"{v:>16} |{bar:<40} {c:<8} ")
    return lines


def _powers(lo: int, hi: int) -> list[int]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v = v * 2 if v else 1
    return out


def dtrace_capture(records: Sequence[dict[str, dict[int, int]]], *, start_us: int = 1_006_592_395_604,
                   label: str = "pread latency measured with DTrace") -> str:
    """`dtrace -s pread_tracedata.d` output (not `-q`): each `tick-10s` firing prints the probe line, then

    ```
    printf("\\n<begin record>"); printf("\\ntimestamp,musec,%d,%Y",timestamp/1000,walltimestamp);
    printf("\\nlabel, ..."); printf("\\nlatencyunit, nanosec"); printa(@pread); printf("\\n<end record>");
    ```
    `printa` of a keyed `quantize` aggregation prints, per key, a blank line, the key indented on its own line and
    the table. `records` holds, per firing, the cumulative counts per key (nanosecond bucket values).
    """
    out = [" CPU     ID                    FUNCTION:NAME"]
    for k, tables in enumerate(records):
        micros = start_us + k * 10_000_000
        wall = dt.datetime(2013, 8, 27, 10, 54, 53) + dt.timedelta(seconds=10 * k)
        out.append("   3  72639                        :tick-10s ")
        out += ["<begin record>", f"timestamp,musec,{micros},{wall:%Y %b %d %H:%M:%S}", f"label, {label}",
                "latencyunit, nanosec"]
        for key, counts in tables.items():
            out += ["", f"  {key:<50}", *quantize_rows(counts)]
        out += ["", "", "<end record>"]
    return "\n".join(out) + "\n"


def systemtap_keyed_capture(records: Sequence[dict[str, dict[int, int]]], *, start_us: int = 1_426_358_407_973_575,
                            label: str = "block I/O latency per device") -> str:
    """A SystemTap script printing one `@hist_log` per key in PyLatencyMap records:

    ```
    printf("\\n<begin record>\\n"); printf("timestamp, microsec, %d, %s\\n", gettimeofday_us(), ctime(...))
    printf("label, ...\\n"); printf("latencyunit, microsec\\n"); printf("datasource, systemtap\\n")
    foreach (dev in lat) { printf("%s\\n", dev); print(@hist_log(lat[dev])) }
    printf("\\n<end record>\\n")
    ```
    """
    out: list[str] = []
    for k, tables in enumerate(records):
        stamp = dt.datetime(2015, 3, 14, 19, 40, 7) + dt.timedelta(seconds=3 * k)
        out += ["", "<begin record>", f"timestamp, microsec, {start_us + 3_000_000 * k}, {stamp:%a %b %d %H:%M:%S %Y}",
                f"label, {label}", "latencyunit, microsec", "datasource, systemtap"]
        for key, counts in tables.items():
            out.append(key)
            out.append("value |-------------------------------------------------- count")
            values = sorted(counts)
            for v in [values[0] // 2, *_powers(values[0], values[-1]), values[-1] * 2]:
                c = counts.get(v, 0)
                out.append(f"{v:>7} |{'@' * min(50, c // 10):<50}{c:>5}")
            out.append("")
        out += ["", "<end record>"]
    return "\n".join(out) + "\n"
