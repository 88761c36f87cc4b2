"""`latencymap replay PATH`: a recording (or any input) at its original pace, with the TUI's replay keys."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import IO, Any

import click

from latencymap.cli.analyses import InputAnalyses
from latencymap.cli.common import REGISTRY, guarded, no_typed_records_in_tui, source_epilog
from latencymap.cli.options import (
    Finite,
    format_kwargs,
    format_options,
    seconds_text,
    time_window,
    view_options,
    window_words,
)
from latencymap.cli.running import prepare, show
from latencymap.core.errors import SourceError
from latencymap.core.model import Flow, Interval, Notice
from latencymap.flow.inputs import at_rest
from latencymap.flow.pipeline import Reading, column_flow, input_flow, limited
from latencymap.flow.recording import WindowSeen, windowed
from latencymap.flow.replay import BurstScan, ReplayClock
from latencymap.flow.spool import Spool
from latencymap.plugins import TextFormat


@click.command("replay", epilog=source_epilog((
    "latencymap replay trace.zst                                # the TUI, at the recorded pace",
    "latencymap replay trace.zst --speed 10 --start 30 --end 90 # seconds 30 to 90, ten times faster",
    "latencymap replay trace.zst --max --plain --once           # every frame, as fast as possible",
    "latencymap replay --input-format raw --unit us pairs.txt    # another input, with its format's options",
)))
@click.argument("path", metavar="PATH")
@click.option("--input-format", default=None, metavar="NAME", help="Input format instead of sniffing.")
@click.option("--speed", type=Finite(min=0, min_open=True), default=1.0, show_default=True,
              help="Replay at X times the original pace.")
@click.option("--max", "as_fast", is_flag=True, help="Replay as fast as possible.")
@click.option("--start", type=Finite(), default=None, metavar="T", help="Skip to T seconds after the first interval.")
@click.option("--end", type=Finite(), default=None, metavar="T", help="Stop at T seconds after the first interval.")
@view_options
@format_options
def replay(path: str, input_format: str | None, speed: float, as_fast: bool, start: float | None, end: float | None,
           **kw: Any) -> None:
    """Replay a recording (or any input) at its original pace.

    The format options (`--unit`, `--interval`, `--datasource`, ...) read an input that is not a recording; a
    recording carries how it was read."""
    time_window(start, end)
    fmt_opts = format_kwargs(kw)
    tui = not (kw["plain"] or kw["once"] or kw["emit"]) and sys.stdout.isatty()
    no_typed_records_in_tui([path], tui)

    def body() -> int:
        clock = ReplayClock(None if as_fast else speed)
        # the TUI's `n` key: where the bursts are, from a second read of the input; one that cannot be read twice
        # (stdin, a FIFO) is read once, for both
        spool = Spool(path) if tui and not at_rest(path) else None
        try:
            return shown(clock, spool)
        finally:
            if spool is not None:
                spool.close()  # its temporary file, once the replay and its burst scan are done with it

    def shown(clock: ReplayClock, spool: Spool | None) -> int:
        def bytes_of() -> IO[bytes] | None:
            return spool.reader() if spool is not None else None

        def flow_of(readers: list[TextFormat] | None = None) -> Flow:
            return input_flow([path], REGISTRY, input_format, fmt_opts, bytes_of(), readers=readers)

        readers: list[TextFormat] = []
        found = InputAnalyses(readers)  # a Spark event log's stragglers, as `latencymap LOG` shows them
        flow = read = flow_of(readers)
        if start is not None or end is not None:
            flow = _said_when_empty(flow, path, start, end)
        # --count as `report` takes it: a recording (a file) read to its end, a pipe as it comes; before the pace,
        # so that the intervals it leaves out are not waited for
        flow = limited(Reading.along(flow, read), kw["count"])
        bursts = None
        if tui:
            whole = start is None and end is None  # the whole input: read in columns, as `report` reads
            bursts = BurstScan(lambda: column_flow([path], REGISTRY, input_format, fmt_opts, bytes_of()) if whole
                               else windowed(flow_of(), start, end)).start()
        from latencymap.profiling.session import profile_session

        with profile_session(kw, [path]) as profile:
            flow = prepare(clock.pace(flow), {**kw, "count": None, "inputs": [path]}, source="replay",
                           profile=profile)
            return show(flow, {**kw, "screen_delay": 0.0}, profile, replay=clock, bursts=bursts,
                        analysis=found.analysis, straggler_stream=found.straggler_stream)

    guarded(body)


def _said_when_empty(flow: Flow, path: str, start: float | None, end: float | None) -> Iterator[Interval | Notice]:
    """`windowed(flow, start, end)`, which ends with a SourceError (exit code 1, after the view showed what it
    had: nothing) when the window held no interval of a recording that has some, saying where they are, as
    profile-export does for its samples: `--start 1000` past the end gave only `no data yet` and exit code 0."""
    seen = WindowSeen()
    yield from windowed(flow, start, end, seen)
    if not seen.shown and seen.covered is not None:
        raise SourceError(f"{path}: no interval {window_words(start, end)}; the recording's intervals cover 0 s to "
                          f"{seconds_text(seen.covered)} s")
