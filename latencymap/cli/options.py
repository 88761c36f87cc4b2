"""Options shared by the commands: PyLatencyMap's view options, limits, profiling, and the formats' own."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from latencymap.cli.common import REGISTRY
from latencymap.core.accumulator import HistoryLimit, parse_history
from latencymap.profiling import DEFAULT_RATE

if TYPE_CHECKING:
    from latencymap.views.options import ViewOptions


class _History(click.ParamType):
    """`--history`: a memory budget (`512M`) or a number of columns (`5000`); None: the default budget."""

    name = "history"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> HistoryLimit:
        if isinstance(value, HistoryLimit):
            return value
        try:
            return parse_history(str(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)


HISTORY = _History()


def history_option(help_text: str) -> Any:
    """`--history SIZE|N` (a memory budget, or columns per stream: `parse_history`), with the command's own help;
    None when not given (the default budget)."""
    return click.option("--history", type=HISTORY, default=None, metavar="SIZE|N", help=help_text)


class Finite(click.FloatRange):
    """A float option that NaN and infinities cannot pass (click's float takes `nan` and `inf`, and every range check
    passes NaN): a speed, a time, a delay or a scale that is not a number is bad usage, not a crash later on."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number

    def _describe_range(self) -> str:
        return "finite" if self.min is None and self.max is None else super()._describe_range()


#: The largest colour scale `--frequency_maxval` and `--intensity_maxval` may pin (events/s, or the stream's unit per
#: second): past any real rate, and far from the float range that the legend's steps must stay in.
MAX_SCALE = 1e15


class Scale(Finite):
    """`--frequency_maxval` / `--intensity_maxval`: -1 autoscales, a number above 0 (up to MAX_SCALE) pins the colour
    scale. 0 or another negative is a usage error: PyLatencyMap 1.3 divides by it (0 crashes it, a negative gives
    it colours below its palette), so no meaning of its can be kept."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number == -1:
            return -1
        if number <= 0:
            self.fail(f"{value!r}: expected -1 (autoscale) or a scale above 0", param, ctx)
        if number > MAX_SCALE:
            self.fail(f"{value!r}: expected a scale up to 1e15 (or -1: autoscale)", param, ctx)
        return number


def seconds_text(t: float) -> str:
    """Seconds as the user would write them: 30, 30.5, 1234.125 (to the ms)."""
    text = f"{t:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def window_words(start: float | None, end: float | None) -> str:
    """The asked-for range in words, relative to the first interval (replay's --start/--end too)."""
    if start is not None and end is not None:
        return f"between {seconds_text(start)} s and {seconds_text(end)} s"
    return f"from {seconds_text(start)} s on" if start is not None else f"before {seconds_text(end or 0.0)} s"


def time_window(start: float | None, end: float | None) -> None:
    """`--start T` / `--end T` (seconds after the first interval: replay, profile-export): a usage error when the
    range they give is empty."""
    if start is not None and end is not None and start >= end:
        raise click.UsageError(f"--start {seconds_text(start)} is not before --end {seconds_text(end)}: "
                               "the range is empty")


def _multi(*names: str) -> list[str]:
    """Each PyLatencyMap option name in its underscore and kebab-case spellings."""
    out: list[str] = []
    for name in names:
        out.append(name)
        if "_" in name:
            out.append(name.replace("_", "-"))
    return out


#: PyLatencyMap 1.3's long options (its argparse's, but --help): a command line may abbreviate them as it did.
PYLATENCYMAP_OPTIONS = ("--num_records", "--min_bucket", "--max_bucket", "--frequency_maxval", "--intensity_maxval",
                        "--screen_delay", "--debug_level")
_PYLATENCYMAP_NAMES = frozenset(name[2:] for name in PYLATENCYMAP_OPTIONS)


def pylatencymap_abbreviations(command: click.Command, args: list[str], ctx: click.Context | None = None) -> list[str]:
    """`args` for `command`, each abbreviated PyLatencyMap option written in full, as PyLatencyMap's argparse reads
    them: a long option that `command` does not have (`--num`, `--frequency_m=40`, `--num-rec`) stands for the one
    PyLatencyMap option whose names (either spelling) begin with it; one that begins several (`--m`) is a usage
    error naming them (in `ctx`). Only PyLatencyMap's options are abbreviated (`--d` is `--debug_level`, as there,
    though `--duration` begins with it too), and never an option `command` has (`replay --max`). Values
    (`--record --nu`) and what follows `--` are left as they are."""
    options = [p for p in command.params if isinstance(p, click.Option)]
    known = {name: p for p in options for name in (*p.opts, *p.secondary_opts)}
    ours = [p for p in options if p.name in _PYLATENCYMAP_NAMES]
    if not ours or not any(arg.startswith("--") and arg.partition("=")[0] not in known for arg in args if arg != "--"):
        return args
    out = list(args)
    at = 0
    while at < len(out):
        arg = out[at]
        at += 1
        if arg == "--":
            break
        if arg[:1] != "-" or arg == "-":
            continue
        name, eq, _ = arg.partition("=")
        option = known.get(name)
        if option is None and arg.startswith("--") and len(name) > 2:
            found = [p for p in ours if any(n.startswith(name) for n in p.opts if n.startswith("--"))]
            if len(found) > 1:
                *first, last = [_underscored(p) for p in found]
                raise click.UsageError(f"Ambiguous option {name!r}: it could be {', '.join(first)} or {last}.", ctx)
            if found:
                option = found[0]
                out[at - 1] = _underscored(option) + arg[len(name):]
        elif option is None and not arg.startswith("--"):
            # short options run together (`-d1`, `-xn 5`): the first that takes a value ends them
            for end, ch in enumerate(arg[1:], start=2):
                short = known.get(f"-{ch}")
                if short is None or _takes_value(short):
                    at += short.nargs if short is not None and end == len(arg) else 0
                    break
            continue
        if option is not None and not eq and _takes_value(option):
            at += option.nargs
    return out


def _underscored(option: click.Option) -> str:
    """A PyLatencyMap option's name as PyLatencyMap spells it (`--num_records`)."""
    return next(n for n in option.opts if n.startswith("--") and "-" not in n[2:])


def _takes_value(option: click.Option) -> bool:
    return not (option.is_flag or option.count)


def limit_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--count`, `--duration`, `--strict`."""
    f = click.option("--strict", is_flag=True, help="Stop with exit code 2 at the first bad record.")(f)
    f = click.option("--duration", type=Finite(min=0, min_open=True), default=None, metavar="S",
                     help="Stop after S seconds of wall-clock time (how long a live source runs; a file is read "
                          "whole unless reading it takes longer, which a note then says: --count limits a file).")(f)
    f = click.option("--count", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Keep N intervals of each stream (a source reporting several streams each round runs N "
                          "rounds). A file is read to its end, a stream's intervals past N left out with a note; a "
                          "live input stops once every stream seen has N and no new one came for an interval.")(f)
    return f


def profile_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--profile PID`, `--profile-subprocesses`, `--profile-rate HZ`."""
    f = click.option("--profile-rate", type=click.IntRange(1, 1000), default=DEFAULT_RATE, show_default=True,
                     metavar="HZ", help="Stack samples per second for --profile.")(f)
    f = click.option("--profile-subprocesses", is_flag=True,
                     help="With --profile: sample the target's child processes too.")(f)
    f = click.option("--profile", "profile_pid", type=int, default=None, metavar="PID",
                     help="Sample PID's Python stacks with py-spy (the [profile] extra) and attach them to the "
                          "columns by time; recordings keep them.")(f)
    return f


class _WithRecordOrEmit(click.Option):
    """A flag that changes what `--record` or `--emit` writes: a usage error without either (it would do nothing)."""

    def handle_parse_result(self, ctx: click.Context, opts: Any, args: list[str]) -> Any:
        if opts.get(self.name) and not opts.get("record_path") and not opts.get("emit"):
            raise click.UsageError(f"{self.opts[0]} changes what --record or --emit writes; without either it does "
                                   "nothing", ctx)
        return super().handle_parse_result(ctx, opts, args)


def view_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Every option of a command that shows a flow: PyLatencyMap's, history, recording, emitting, limits, profiling."""
    opts = [
        click.option("--plain", is_flag=True, help="PyLatencyMap-style ANSI frames instead of the TUI."),
        click.option("--once", is_flag=True, help="Print only the final frame (implies --plain)."),
        click.option(*_multi("--num_records"), "-n", type=click.IntRange(min=1), default=90, show_default=True,
                     help="Columns (time intervals) shown."),
        click.option(*_multi("--min_bucket"), type=click.IntRange(-1, 63), default=-1, show_default=True,
                     help="Pin the lowest row: log2 of the input's bucket value; -1: rows fit the data."),
        click.option(*_multi("--max_bucket"), type=click.IntRange(0, 64), default=64, show_default=True,
                     help="Pin the highest row: log2 of the input's bucket value; 64: rows fit the data."),
        click.option(*_multi("--frequency_maxval"), type=Scale(), default=-1, show_default=True,
                     help="Pin the frequency colour scale (events/s, above 0); -1 autoscale."),
        click.option(*_multi("--intensity_maxval"), type=Scale(), default=-1, show_default=True,
                     help="Pin the intensity colour scale, in the stream's latency unit per second as in "
                          "PyLatencyMap (millisec/s for millisec records; above 0); -1 autoscale."),
        click.option(*_multi("--screen_delay"), type=Finite(min=0), default=0.1, show_default=True,
                     help="Seconds between plain frames (replaying files)."),
        click.option(*_multi("--debug_level"), "-d", type=int, default=0, hidden=True,
                     help="Accepted for PyLatencyMap compatibility; ignored."),
        history_option("History kept for scrolling back: a memory budget for all streams (512M, 2G; default a "
                       "quarter of RAM; the oldest columns go first), or N columns per stream."),
        click.option("--record", "record_path", type=click.Path(dir_okay=False), default=None, metavar="PATH",
                     help="Record the normalized stream to PATH as it arrives (.zst: zstd frames)."),
        click.option("--force", is_flag=True, help="Let --record overwrite an existing file."),
        click.option("--compat", is_flag=True, cls=_WithRecordOrEmit,
                     help="With --record or --emit: write only what PyLatencyMap 1.3 reads (cumulative records)."),
        click.option("--emit", is_flag=True,
                     help="Write the stream to stdout as protocol records instead of showing it (a connector)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return profile_options(limit_options(f))


#: The names of the view options, to tell them from a source's own options.
VIEW_NAMES = {p.name for p in view_options(lambda **_: None).__click_params__}  # type: ignore[attr-defined]


def format_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Every installed format's own options."""
    for param in REGISTRY.format_params():
        f.__click_params__ = [*getattr(f, "__click_params__", []), param]  # type: ignore[attr-defined]
    return f


def format_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Take the formats' options out of a command's keyword arguments."""
    names = {p.name for p in REGISTRY.format_params()}
    return {k: kwargs.pop(k) for k in list(kwargs) if k in names}


def display_options(kw: dict[str, Any]) -> ViewOptions:
    """The view options a command's keyword arguments ask for."""
    from latencymap.views.options import ViewOptions

    low, high = kw["min_bucket"], kw["max_bucket"]
    if low >= 0 and high < 64 and low > high:
        raise click.UsageError(f"--min_bucket {low} is above --max_bucket {high}: no row would be left to show")
    return ViewOptions(
        num_records=kw["num_records"], min_bucket=low, max_bucket=high,
        frequency_maxval=kw["frequency_maxval"], intensity_maxval=kw["intensity_maxval"],
    )
