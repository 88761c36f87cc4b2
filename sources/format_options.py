"""The shipped text formats' own command-line options, in a module that imports nothing heavy.

`report` and `view` offer every format's options. The plugin registry builds a shipped format's options from here
(by the names its table gives) without importing the format itself, which happens when an input needs it.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from latencymap.core.units import normalize_unit

DEFAULT_INTERVAL = 1.0
DEFAULT_EVENT = "db file sequential read"
#: What `--datasource` may say: the datasources whose bucket values the protocol defines.
DATASOURCES = ("oracle", "bpf", "systemtap", "dtrace")


def _unit(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return normalize_unit(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


def interval_option() -> click.Option:
    """`--interval`: seconds per column (shared by every reader that needs it, with one meaning)."""
    return click.Option(
        ["--interval"], type=click.FloatRange(min=0, min_open=True), default=DEFAULT_INTERVAL, show_default=True,
        metavar="S", help="Seconds per column: how raw values and 10046 waits are grouped (input time), the "
                          "least time between bpftrace/bcc prints and between PyLatencyMap records that carry no "
                          "timestamps (read faster, as from a file, they are this far apart), and how long an "
                          "HdrHistogram percentile distribution (.hgrm) covers when it does not say.")


def unit_option() -> click.Option:
    """`--unit`: the latency unit when the input does not state it."""
    return click.Option(
        ["--unit"], default=None, callback=_unit, metavar="UNIT",
        help="Latency unit (ns, us, ms, s) of raw values (default us, or the unit their header names: latency_ms), "
             "of HdrHistogram logs (default ns), of HdrHistogram percentile distributions (.hgrm, wrk2; default ms) "
             "and of bpftrace maps whose name does not say it (@usecs, @nsecs...); bcc headers state their own unit.")


def cumulative_option() -> click.Option:
    """`--cumulative/--per-interval`: how bpftrace/bcc counts behave (default: detected)."""
    return click.Option(
        ["--cumulative/--per-interval"], default=None,
        help="bpftrace/bcc histograms: counts keep growing (map never cleared) or restart at every print "
             "(cleared). Default: detected from the first prints of each map.")


def event_option() -> click.Option:
    """`--event`: which 10046 wait events to map."""
    return click.Option(["--event"], multiple=True, default=(DEFAULT_EVENT,), show_default=True, metavar="NAME",
                        help="10046 traces: wait event to map (repeatable; 'all' for every event).")


def time_unit_option() -> click.Option:
    """`--time-unit`: the unit of raw values' time column."""
    return click.Option(["--time-unit"], default=None, callback=_unit, metavar="UNIT",
                        help="Raw values: unit of the time column (s, ms, us, ns; default s, or the unit the "
                             "header names: time_ms).")


def datasource_option() -> click.Option:
    """`--datasource`: the datasource of PyLatencyMap records that do not say it."""
    return click.Option(["--datasource"], type=click.Choice(DATASOURCES, case_sensitive=False), default=None,
                        help="PyLatencyMap records: the datasource of records that have no 'datasource' line "
                             "(default bpf: bucket values are lower bounds; oracle: upper bounds).")


#: Each option by the name the plugin registry's table of shipped formats gives it.
OPTIONS: dict[str, Callable[[], click.Option]] = {
    "interval": interval_option, "unit": unit_option, "cumulative": cumulative_option, "event": event_option,
    "time_unit": time_unit_option, "datasource": datasource_option,
}
