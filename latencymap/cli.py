"""The `latencymap` command line: view (default), report, and one subcommand per installed source."""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from latencymap import __version__
from latencymap.exports import write_text
from latencymap.inputs import InputError
from latencymap.model import Notice
from latencymap.pipeline import Flow, StrictError, diffed, guarded_source, input_flow, limited, strict
from latencymap.plain import PlainOptions
from latencymap.plugins import Registry, Source, SourceError, load_registry
from latencymap.profiling.cli import profile_options
from latencymap.recording import Recorder, RecordingError, recorded, windowed
from latencymap.replay import BurstScan, ReplayClock
from latencymap.report import build_report, report_text, source_lines
from latencymap.views import run_view

if TYPE_CHECKING:
    from latencymap.profiling.session import ProfileSession

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143

EXAMPLES = """\b
Examples:
  latencymap fixtures/pylatencymap/example_latency_data.txt
  cat fixtures/pylatencymap/example_latency_data.txt | latencymap --plain --once
  latencymap report --format json fixtures/pylatencymap/test_SystemTap_data.txt
  some_connector | latencymap -n 120 --min_bucket 7

\b
Exit codes: 0 done; 1 a source or view failed; 2 bad usage, unreadable input,
or a bad record under --strict; 130 interrupted.
"""

REGISTRY: Registry = load_registry()


class DefaultGroup(click.Group):
    """Runs `view` when the first argument is not a subcommand, so `latencymap FILE` works."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["view", *args]
        return super().parse_args(ctx, args)


def _multi(*names: str) -> list[str]:
    """Each PyLatencyMap option name in its underscore and kebab-case spellings."""
    out: list[str] = []
    for name in names:
        out.append(name)
        if "_" in name:
            out.append(name.replace("_", "-"))
    return out


def limit_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--strict", is_flag=True, help="Stop with exit code 2 at the first bad record.")(f)
    f = click.option("--duration", type=float, default=None, metavar="S", help="Stop after S seconds.")(f)
    f = click.option("--count", type=int, default=None, metavar="N", help="Stop after N intervals.")(f)
    return f


def view_options(f: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option("--plain", is_flag=True, help="PyLatencyMap-style ANSI frames instead of the TUI."),
        click.option("--once", is_flag=True, help="Print only the final frame (implies --plain)."),
        click.option(*_multi("--num_records"), "-n", type=int, default=90, show_default=True,
                     help="Columns (time intervals) shown."),
        click.option(*_multi("--min_bucket"), type=int, default=-1, show_default=True,
                     help="Lowest row: log2 of the input's bucket value; -1 autotunes."),
        click.option(*_multi("--max_bucket"), type=int, default=64, show_default=True,
                     help="Highest row: log2 of the input's bucket value; 64 autotunes."),
        click.option(*_multi("--frequency_maxval"), type=float, default=-1, show_default=True,
                     help="Pin the frequency colour scale (events/s); -1 autoscale."),
        click.option(*_multi("--intensity_maxval"), type=float, default=-1, show_default=True,
                     help="Pin the intensity colour scale (s/s); -1 autoscale."),
        click.option(*_multi("--screen_delay"), type=float, default=0.1, show_default=True,
                     help="Seconds between plain frames (replaying files)."),
        click.option(*_multi("--debug_level"), "-d", type=int, default=0, hidden=True,
                     help="Accepted for PyLatencyMap compatibility; ignored."),
        click.option("--history", type=int, default=200_000, show_default=True,
                     help="Columns kept per stream for scrolling back."),
        click.option("--record", "record_path", type=click.Path(dir_okay=False), default=None, metavar="PATH",
                     help="Record the normalized stream to PATH as it arrives (.zst: zstd frames)."),
        click.option("--force", is_flag=True, help="Let --record overwrite an existing file."),
        click.option("--compat", is_flag=True, help="Record only what PyLatencyMap 1.3 reads (cumulative records)."),
        click.option("--emit", is_flag=True,
                     help="Write the stream to stdout as protocol records instead of showing it (a connector)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return profile_options(limit_options(f))


def format_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for param in REGISTRY.format_params():
        f.__click_params__ = [*getattr(f, "__click_params__", []), param]  # type: ignore[attr-defined]
    return f


def _format_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    names = {p.name for p in REGISTRY.format_params()}
    return {k: kwargs.pop(k) for k in list(kwargs) if k in names}


def _plain_options(kw: dict[str, Any]) -> PlainOptions:
    return PlainOptions(
        num_records=max(1, kw["num_records"]), min_bucket=kw["min_bucket"], max_bucket=kw["max_bucket"],
        frequency_maxval=kw["frequency_maxval"], intensity_maxval=kw["intensity_maxval"],
    )


class Terminated(BaseException):
    """SIGTERM, turned into an exception so that `finally` blocks flush and restore the terminal."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


def _guarded(fn: Callable[[], int]) -> None:
    """Run a command body, turning known failures into one line and an exit code."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        code = fn()
    except (InputError, StrictError) as err:
        click.echo(f"latencymap: {err}", err=True)
        code = EXIT_USAGE
    except SourceError as err:  # a source died mid-stream: what it gave before was shown and recorded
        click.echo(f"latencymap: {err}", err=True)
        code = EXIT_FAIL
    except RecordingError as err:
        click.echo(f"latencymap: {err}", err=True)
        code = err.exit_code
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    except Terminated:
        code = EXIT_TERMINATED
    except BrokenPipeError:
        code = EXIT_OK
    sys.exit(code)


def _emit(flow: Flow, compat: bool, profile: ProfileSession | None = None) -> int:
    """`--emit`: protocol records on stdout (per-interval with exact sums, or cumulative with --compat)."""
    recorder = Recorder("-", compat=compat, source="emit")
    if profile is not None:
        profile.record_to(recorder)
    for item in recorded(flow, recorder):
        if isinstance(item, Notice):
            click.echo(f"latencymap: {item.message}", err=True)
    return EXIT_OK


def _prepare(flow: Flow, kw: dict[str, Any], source: str = "input", profile: ProfileSession | None = None) -> Flow:
    """Strict mode, limits, profiling and recording, as the command's options ask."""
    from latencymap.profiling.session import profiled  # py-spy's machinery loads only for commands that run

    options = dict(kw)
    if kw.pop("strict"):
        flow = strict(flow)
    flow = profiled(limited(flow, kw.pop("count"), kw.pop("duration")), profile)
    path, force, compat = kw.pop("record_path", None), kw.pop("force", False), kw.pop("compat", False)
    if path:
        recorder = Recorder(path, force=force, compat=compat, source=source, options=options)
        if profile is not None:
            profile.record_to(recorder)
        flow = recorded(flow, recorder)
    return flow


def _view(flow: Flow, kw: dict[str, Any], profile: ProfileSession | None = None, replay: ReplayClock | None = None,
          bursts: BurstScan | None = None) -> int:
    if kw.get("emit"):
        return _emit(flow, kw.get("compat", False), profile)
    return run_view(flow, _plain_options(kw), plain=kw["plain"] or kw["once"], once=kw["once"],
                    screen_delay=kw["screen_delay"], history=kw["history"], profile=profile, replay=replay,
                    bursts=bursts)


@click.group(cls=DefaultGroup, epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="latencymap")
def main() -> None:
    """Latency heat maps over time: frequency (how often) and intensity (how much time).

    Reads PyLatencyMap records (and every format below) from files or stdin, or runs a
    live source. With no subcommand, shows INPUT (default stdin) in the TUI, or as plain ANSI
    frames when stdout is not a terminal or with --plain.
    """


@main.command("view", epilog=EXAMPLES)
@click.argument("inputs", nargs=-1, metavar="[INPUT]...")
@click.option("--format", "--input-format", "input_format", default=None, metavar="NAME",
              help=f"Input format instead of auto-detection: {', '.join(sorted(REGISTRY.formats))}.")
@click.option("--serve-metrics", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Serve the latest interval as OpenMetrics on http://127.0.0.1:PORT/metrics.")
@view_options
@format_options
def view(inputs: tuple[str, ...], input_format: str | None, serve_metrics: int | None, **kw: Any) -> None:
    """Show INPUT files (or stdin) as heat maps."""
    fmt_opts = _format_kwargs(kw)

    def body() -> int:
        from latencymap.metrics import metrics_served
        from latencymap.profiling.session import profile_session

        with profile_session(kw, list(inputs)) as profile:
            flow = _prepare(input_flow(list(inputs), REGISTRY, input_format, fmt_opts), {**kw, "inputs": inputs},
                            profile=profile)
            with metrics_served(flow, serve_metrics) as flow:
                return _view(flow, kw, profile)

    _guarded(body)


@main.command("replay", epilog=EXAMPLES)
@click.argument("path", metavar="PATH")
@click.option("--speed", type=float, default=1.0, show_default=True, help="Replay at X times the original pace.")
@click.option("--max", "as_fast", is_flag=True, help="Replay as fast as possible.")
@click.option("--start", type=float, default=None, metavar="T", help="Skip to T seconds after the first interval.")
@click.option("--end", type=float, default=None, metavar="T", help="Stop at T seconds after the first interval.")
@view_options
def replay(path: str, speed: float, as_fast: bool, start: float | None, end: float | None, **kw: Any) -> None:
    """Replay a recording (or any input) at its original pace."""

    def body() -> int:
        if speed <= 0:
            raise click.BadParameter("must be > 0", param_hint="--speed")
        clock = ReplayClock(None if as_fast else speed)
        flow = windowed(input_flow([path], REGISTRY), start, end)
        bursts = None
        if not (kw["plain"] or kw["once"] or kw.get("emit")):  # the TUI's `n` key: where the bursts are
            bursts = BurstScan(lambda: windowed(input_flow([path], REGISTRY), start, end)).start()
        from latencymap.profiling.session import profile_session

        with profile_session(kw, [path]) as profile:
            flow = _prepare(clock.pace(flow), {**kw, "inputs": [path]}, source="replay", profile=profile)
            return _view(flow, {**kw, "screen_delay": 0.0}, profile, replay=clock, bursts=bursts)

    _guarded(body)


def _parse_gates(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[Any]:
    from latencymap.gates import GateError, parse_gate

    try:
        return [parse_gate(v) for v in value]
    except GateError as err:
        raise click.BadParameter(str(err), ctx, param) from None


def _gate_failures(acc: Any, gates: list[Any]) -> int:
    from latencymap.gates import check_gates

    failures = check_gates(acc, gates)
    for line in failures:
        click.echo(f"latencymap: {line}", err=True)
    return EXIT_FAIL if failures else EXIT_OK


@main.command("report", epilog=EXAMPLES, context_settings={"ignore_unknown_options": True})
@click.argument("inputs", nargs=-1, metavar="[INPUT]... | SOURCE [SOURCE OPTIONS]", type=click.UNPROCESSED)
@click.option("--format", "out_format", default="text", show_default=True,
              type=click.Choice(["text", "json", "svg", "html", "parquet", "openmetrics"]),
              help="Report format (parquet needs -o and the [export] extra).")
@click.option("--input-format", default=None, metavar="NAME",
              help=f"Input format instead of auto-detection: {', '.join(sorted(REGISTRY.formats))}.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the report to a file instead of stdout.")
@click.option("--fail-if", "fail_if", multiple=True, metavar="EXPR", callback=_parse_gates,
              help="Exit 1 when EXPR holds for any stream, e.g. 'p99 > 20ms' (see latencymap/gates.py).")
@limit_options
@format_options
def report(inputs: tuple[str, ...], out_format: str, input_format: str | None, output: str | None,
           fail_if: list[Any], **kw: Any) -> None:
    """Analyse whole INPUTs (default stdin), or a source run to its end (`report spark LOG`), with no UI."""
    fmt_opts = _format_kwargs(kw)

    def body() -> int:
        from latencymap.accumulator import Accumulator

        acc = Accumulator()
        source = _report_source(list(inputs))
        if source is not None:
            flow = _prepare(diffed(guarded_source(source.items(), source.name), source.name), kw, source=source.name)
        else:
            flow = _prepare(input_flow(list(inputs), REGISTRY, input_format, fmt_opts), kw)
        batch: list[Any] = []
        for item in flow:
            batch.append(item)
            if len(batch) >= 4096:
                acc.add(batch)
                batch.clear()
        acc.add(batch)
        extra = source.analysis() if source is not None and hasattr(source, "analysis") else {}
        stragglers = {h.stream.label: extra.get("stragglers", []) for h in acc.streams.values()} if extra else None
        if out_format not in ("text", "json"):
            from latencymap.exports import write_report

            write_report(acc, out_format, output, stragglers=stragglers)
            return _gate_failures(acc, fail_if)
        if out_format == "json":
            doc = build_report(acc)
            if source is not None:
                doc["source"] = {"name": source.name, **extra}
            text = json.dumps(doc) + "\n"
        else:
            text = report_text(acc) + "".join(f"{line}\n" for line in source_lines(extra))
        write_text(text, output)
        return _gate_failures(acc, fail_if)

    _guarded(body)


def _report_source(args: list[str]) -> Source | None:
    """The source named by the first argument of `report`, built from the rest; None for plain inputs."""
    if not args or args[0] not in REGISTRY.sources:
        for arg in args:
            if arg.startswith("-") and arg != "-":
                raise click.UsageError(f"no such option: {arg}")
        return None
    src = REGISTRY.sources[args[0]]
    reason = src.unavailable()
    if reason:
        raise InputError(f"{src.name}: {reason}")
    cmd = click.Command(src.name, params=src.params())
    ctx = cmd.make_context(f"latencymap report {src.name}", args[1:])
    return src(**ctx.params)


def source_command(src: type[Source]) -> click.Command:
    """A subcommand for one source plugin: its own options plus the view options."""

    def callback(**kw: Any) -> None:
        view_kw = {k: kw.pop(k) for k in list(kw) if k in _VIEW_NAMES}

        def body() -> int:
            reason = src.unavailable()
            if reason:
                click.echo(f"latencymap {src.name}: {reason}", err=True)
                return EXIT_FAIL
            source = src(**kw)
            from latencymap.profiling.session import profile_session

            with profile_session(view_kw) as profile:
                flow = _prepare(diffed(guarded_source(source.items(), src.name), src.name), {**view_kw, **kw},
                                source=src.name, profile=profile)
                return _view(flow, {**view_kw, "screen_delay": 0.0}, profile)

        _guarded(body)

    cmd = click.Command(src.name, callback=view_options(callback), help=src.summary, epilog=EXAMPLES)
    cmd.params = [*src.params(), *getattr(callback, "__click_params__", [])[::-1]]
    return cmd


_VIEW_NAMES = {p.name for p in view_options(lambda **_: None).__click_params__}  # type: ignore[attr-defined]

for _src in REGISTRY.sources.values():
    if _src.name not in main.commands:
        main.add_command(source_command(_src))

from latencymap.diff_cmd import diff as _diff  # noqa: E402 (after main exists)

main.add_command(_diff)

from latencymap.profiling.cli import profile_export as _profile_export  # noqa: E402 (after main exists)

main.add_command(_profile_export)
