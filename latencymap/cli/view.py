"""`latencymap [view] [INPUT]...`: files or stdin as heat maps (the default command)."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import click

from latencymap.cli.analyses import InputAnalyses
from latencymap.cli.common import REGISTRY, VIEW_EPILOG, guarded, no_terminal_input, no_typed_records_in_tui
from latencymap.cli.options import format_kwargs, format_options, view_options
from latencymap.cli.running import prepare, show
from latencymap.flow.pipeline import input_flow
from latencymap.flow.stdin import wait_for_pipe
from latencymap.plugins import TextFormat
from latencymap.profiling.wanted import profile_wanted


@click.command("view", epilog=VIEW_EPILOG)
@click.argument("inputs", nargs=-1, metavar="[INPUT]...")
@click.option("--format", "--input-format", "input_format", default=None, metavar="NAME",
              help=f"Input format instead of auto-detection: {', '.join(sorted(REGISTRY.formats.names()))}.")
@click.option("--serve-metrics", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Serve the latest interval as OpenMetrics on http://127.0.0.1:PORT/metrics (in the Prometheus "
                   "text format 0.0.4 to a scraper that asks for text/plain and not OpenMetrics).")
@view_options
@format_options
def view(inputs: tuple[str, ...], input_format: str | None, serve_metrics: int | None, **kw: Any) -> None:
    """Show INPUT files (or stdin) as heat maps."""
    fmt_opts = format_kwargs(kw)

    no_terminal_input(inputs)
    tui = not (kw["plain"] or kw["once"] or kw["emit"]) and sys.stdout.isatty()
    no_typed_records_in_tui(inputs, tui)

    def body() -> int:
        # the profiler and the metrics server load only when asked for (`--plain` replays start faster)
        session: Any = contextlib.nullcontext(None)
        if profile_wanted(kw, list(inputs)):
            from latencymap.profiling.session import profile_session

            session = profile_session(kw, list(inputs))
        readers: list[TextFormat] = []
        # the analysis of the inputs read through a source (Spark event logs), as `report` takes it: the TUI's
        # stragglers panel and findings, once such an input has given its columns
        found = InputAnalyses(readers)
        with session as profile:
            flow = prepare(input_flow(list(inputs), REGISTRY, input_format, fmt_opts, readers=readers),
                           {**kw, "inputs": inputs, "input_format": input_format, **fmt_opts}, profile=profile)
            if (not inputs or "-" in inputs) and tui:
                # the TUI takes the terminal: leave it to the producer until it writes (or the run's time is up)
                wait_for_pipe(most=kw["duration"])
            if serve_metrics is None:
                return show(flow, kw, profile, analysis=found.analysis, straggler_stream=found.straggler_stream)
            from latencymap.outputs.metrics import metrics_served

            with metrics_served(flow, serve_metrics) as flow:
                return show(flow, kw, profile, analysis=found.analysis, straggler_stream=found.straggler_stream)

    guarded(body)
