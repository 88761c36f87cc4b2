"""`latencymap profile-export RECORDING`: the profile samples a recording holds, as collapsed stacks or speedscope."""

from __future__ import annotations

import click

from latencymap.cli.common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, REGISTRY, guarded, source_epilog, tell
from latencymap.cli.options import Finite, time_window, window_words
from latencymap.cli.options import seconds_text as _seconds
from latencymap.core.model import Interval
from latencymap.flow.inputs import open_text
from latencymap.flow.pipeline import input_flow
from latencymap.outputs.files import check_output, write_text


def first_interval_start(path: str) -> float | None:
    """Start of the first interval of an input (the origin of replay's --start/--end), or None."""
    for item in input_flow([path], REGISTRY):
        if isinstance(item, Interval):
            return item.start
    return None


@click.command("profile-export", epilog=source_epilog((
    "latencymap profile-export run.zst > all.folded          # flamegraph.pl all.folded",
    "latencymap profile-export run.zst --start 30 --end 31 --format speedscope -o hot.json",
)))
@click.argument("path", metavar="RECORDING")
@click.option("--start", type=Finite(), default=None, metavar="T",
              help="From T seconds after the first interval (as replay --start); default: the first sample.")
@click.option("--end", type=Finite(), default=None, metavar="T",
              help="Up to T seconds after the first interval (as replay --end); default: the last sample.")
@click.option("--format", "out_format", type=click.Choice(["collapsed", "speedscope"]), default="collapsed",
              show_default=True, help="collapsed: flamegraph.pl input lines; speedscope: speedscope JSON.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write to a file instead of stdout.")
def profile_export(path: str, start: float | None, end: float | None, out_format: str, output: str | None) -> None:
    """Export the profile samples a recording holds (recorded with --profile PID), without the TUI."""
    from latencymap.profiling.export import export_range
    from latencymap.profiling.persist import load_profile

    time_window(start, end)

    def body() -> int:
        check_output(output)
        open_text(path)[0].close()  # a recording that cannot be opened says why (exit 2), not "no samples"
        store, messages = load_profile([path])
        for message in messages:
            tell(message, "latencymap: profile")
        if store is None:
            tell(f"{path}: no profile samples (record with --profile PID)")
            return EXIT_USAGE
        span = store.span()
        assert span is not None
        origin = first_interval_start(path) if start is not None or end is not None else None
        origin = span[0] if origin is None else origin
        t0 = span[0] if start is None else origin + start
        t1 = span[1] + 1.0 if end is None else origin + end
        if store.count(t0, t1) == 0:
            tell(f"{path}: no profile samples {window_words(start, end)}; the profile covers "
                 f"{_seconds(span[0] - origin)} s to {_seconds(span[1] - origin)} s")
            return EXIT_FAIL
        text = export_range(store, t0, t1, out_format, f"{path} [{t0:.3f}, {t1:.3f})")
        write_text(text, output)
        return EXIT_OK

    guarded(body)
