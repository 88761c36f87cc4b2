"""How a viewing command runs its flow: strict mode, limits, profiling, recording, then a view or `--emit`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from latencymap.cli.common import EXIT_OK, guarded_source, say
from latencymap.cli.options import display_options
from latencymap.core import stopping
from latencymap.core.accumulator import DEFAULT_HISTORY
from latencymap.core.at_exit import close_at_exit
from latencymap.core.model import Flow, FlowItem, Notice, StreamId, unrolled
from latencymap.flow.pipeline import Reading, diffed, limited, strict
from latencymap.plugins import Source

if TYPE_CHECKING:
    from latencymap.flow.replay import BurstScan, ReplayClock
    from latencymap.profiling.session import ProfileSession


def emit(flow: Flow, compat: bool, profile: ProfileSession | None = None) -> int:
    """`--emit`: protocol records on stdout (per-interval with exact sums, or cumulative with --compat)."""
    from latencymap.flow.recording import Recorder, recorded

    recorder = Recorder("-", compat=compat, source="emit")
    if profile is not None:
        profile.record_to(recorder)
    stopping.reads_to_end()  # a source that ends itself at SIGTERM ends the command
    for item in recorded(flow, recorder):
        if isinstance(item, Notice):
            say(item)
    return EXIT_OK


def built(src: type[Source], options: dict[str, Any], kw: dict[str, Any]) -> Source:
    """Source `src` built from its `options`. One that stops itself at whole rounds (`own_limits`) takes `--count`
    and `--duration` from the command's `kw`, which then no longer limit the flow (`prepare`)."""
    if not src.own_limits:
        return src(**options)
    limits = {k: kw.get(k) for k in ("count", "duration")}
    kw.update(count=None, duration=None)
    return src(**options, **limits)


def source_flow(source: Source) -> Flow:
    """A source's items diffed into a flow that says whether what it reads is all there (`Source.at_rest`)."""
    reading = Reading()
    reading.name, reading.live = source.name, not source.at_rest()
    return Reading.along(diffed(guarded_source(source.items(), source.name), source.name), reading=reading)


def prepare(flow: Iterator[FlowItem], kw: dict[str, Any], source: str = "input",
            profile: ProfileSession | None = None) -> Iterator[FlowItem]:
    """Strict mode, limits, profiling and recording, as the command's options ask (the last two take intervals one
    by one)."""
    options = dict(kw)
    if "history" in options:  # what was kept, in the header: a budget or a number of columns, as the option says it
        options["history"] = str(options["history"] or DEFAULT_HISTORY)
    if kw.pop("strict"):
        flow = strict(flow)
    flow = limited(flow, kw.pop("count"), kw.pop("duration"))
    if profile is not None:
        from latencymap.profiling.session import profiled  # py-spy's machinery loads only for commands that use it

        flow = profiled(unrolled(flow), profile)
    path, force, compat = kw.pop("record_path", None), kw.pop("force", False), kw.pop("compat", False)
    if path:
        from latencymap.flow.recording import Recorder, read_ahead, recorded

        recorder = Recorder(path, force=force, compat=compat, source=source, options=options)
        close_at_exit(recorder.close)  # its frame ended and file closed even while the reading thread is blocked
        if profile is not None:
            profile.record_to(recorder)
        # records as they arrive, however the view is paced, and what the source passes on until the command ends
        flow = read_ahead(recorded(unrolled(flow), recorder), keep=lambda: not recorder.closed)
    return flow


def show(flow: Flow, kw: dict[str, Any], profile: ProfileSession | None = None, replay: ReplayClock | None = None,
         bursts: BurstScan | None = None, analysis: Callable[[], dict[str, Any] | None] | None = None,
         straggler_stream: Callable[[dict[str, Any]], StreamId | None] | None = None) -> int:
    """The flow in the view the options ask for (or on stdout as records with `--emit`); the exit code."""
    if kw.get("emit"):
        return emit(flow, kw.get("compat", False), profile)
    from latencymap.cli.display import run_view  # the views load only for commands that show a flow

    return run_view(flow, display_options(kw), plain=kw["plain"] or kw["once"], once=kw["once"],
                    screen_delay=kw["screen_delay"], history=kw["history"] or DEFAULT_HISTORY, profile=profile,
                    replay=replay, bursts=bursts, analysis=analysis, straggler_stream=straggler_stream,
                    recording=bool(kw.get("record_path")))
