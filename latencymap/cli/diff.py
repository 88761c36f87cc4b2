"""`latencymap diff BASELINE CANDIDATE`: what changed between two inputs."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from latencymap.cli.common import EXIT_OK, REGISTRY, guarded, source_epilog
from latencymap.cli.options import format_kwargs, format_options, limit_options
from latencymap.cli.running import prepare
from latencymap.cli.tuning import keep_freed_memory
from latencymap.core.accumulator import accumulate
from latencymap.core.sanitize import clean_text
from latencymap.flow.inputs import at_rest
from latencymap.flow.pipeline import column_flow
from latencymap.outputs.compare import compare, compare_text
from latencymap.outputs.files import check_output, write_text


@click.command("diff", epilog=source_epilog((
    "latencymap diff baseline.txt candidate.txt",
    "latencymap diff --format json -o diff.json before.zst after.zst",
    "latencymap diff --input-format bcc --unit us monday.log tuesday.log",
)))
@click.argument("baseline", metavar="BASELINE")
@click.argument("candidate", metavar="CANDIDATE")
@click.option("--format", "out_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output format.")
@click.option("--input-format", default=None, metavar="NAME", help="Input format of both files instead of sniffing.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the diff to a file instead of stdout.")
@limit_options
@format_options
def diff(baseline: str, candidate: str, out_format: str, input_format: str | None, output: str | None,
         **kw: Any) -> None:
    """Compare two inputs: per-bucket share changes, percentile deltas, bands that appeared or vanished.

    The format options (`--datasource oracle`, `--event NAME`, ...) apply to both inputs."""
    fmt_opts = format_kwargs(kw)
    if baseline == candidate == "-":
        raise click.UsageError("'-' (stdin) can be read once: give it as BASELINE or CANDIDATE, not both")
    if _one_input_read_once(baseline, candidate):
        names = " and ".join(dict.fromkeys(f"'{clean_text(path)}'" for path in (baseline, candidate)))
        raise click.UsageError(f"{names} {'is' if baseline == candidate else 'are'} one input that can be read "
                               "once (a pipe, a FIFO): give it as BASELINE or CANDIDATE, not both")

    def body() -> int:
        check_output(output)
        keep_freed_memory()
        # --count, --duration and --strict limit each input, read one after the other (--duration's time from each
        # one's start)
        base = accumulate(prepare(column_flow([baseline], REGISTRY, input_format, fmt_opts), dict(kw)))
        cand = accumulate(prepare(column_flow([candidate], REGISTRY, input_format, fmt_opts), dict(kw)))
        result = compare(base, cand)
        text = json.dumps(result) + "\n" if out_format == "json" else compare_text(result)
        write_text(text, output)
        return EXIT_OK

    guarded(body)


def _one_input_read_once(baseline: str, candidate: str) -> bool:
    """Whether BASELINE and CANDIDATE name one input that can be read only once (`ff ff` with `ff` a FIFO, the same
    `/dev/fd/N`, `- /dev/stdin` of a pipe): the second side would wait forever for a writer that has gone."""
    if at_rest(baseline) or at_rest(candidate):
        return False
    try:
        first, second = (os.fstat(0) if path == "-" else os.stat(path) for path in (baseline, candidate))
    except OSError:  # one that cannot be opened says so when it is read
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)
