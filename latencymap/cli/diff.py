"""`latencymap diff BASELINE CANDIDATE`: what changed between two inputs."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from latencymap.cli.common import EXIT_FAIL, EXIT_OK, REGISTRY, guarded, source_epilog
from latencymap.cli.options import format_kwargs, format_options, limit_options
from latencymap.cli.running import prepare
from latencymap.cli.tuning import keep_freed_memory
from latencymap.core.accumulator import accumulate
from latencymap.core.sanitize import clean_text
from latencymap.flow.inputs import at_rest
from latencymap.flow.pipeline import column_flow
from latencymap.outputs.compare import compare, compare_text
from latencymap.outputs.files import check_output, write_text
from latencymap.plugins import TextFormat

#: What `diff --help` says of `--fail-on-change` before the exit codes.
FAIL_ON_CHANGE = """\b
With --fail-on-change, exit code 1 also when a pair of streams changed,
a stream is on one side only, or no stream was read on either side
(as a failed --fail-if gate of 'report').
"""


@click.command("diff", epilog=source_epilog((
    "latencymap diff baseline.txt candidate.txt",
    "latencymap diff --format json -o diff.json before.zst after.zst",
    "latencymap diff --input-format bcc --unit us monday.log tuesday.log",
    "latencymap diff --fail-on-change baseline.txt candidate.txt   # in CI",
)).replace("\b\nExit codes:", FAIL_ON_CHANGE + "\n\b\nExit codes:"))
@click.argument("baseline", metavar="BASELINE")
@click.argument("candidate", metavar="CANDIDATE")
@click.option("--format", "out_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output format.")
@click.option("--input-format", default=None, metavar="NAME", help="Input format of both files instead of sniffing.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the diff to a file instead of stdout.")
@click.option("--fail-on-change", is_flag=True,
              help="Exit with code 1 when a pair changed (beyond chance, by a shift, share or rate that matters), a "
                   "stream is on one side only, or neither side has a stream; 0 otherwise. The diff is written "
                   "either way.")
@limit_options
@format_options
def diff(baseline: str, candidate: str, out_format: str, input_format: str | None, output: str | None,
         fail_on_change: bool, **kw: Any) -> None:
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
        readers: tuple[list[TextFormat], list[TextFormat]] = ([], [])
        base = accumulate(prepare(column_flow([baseline], REGISTRY, input_format, fmt_opts, readers=readers[0]),
                                  dict(kw)))
        cand = accumulate(prepare(column_flow([candidate], REGISTRY, input_format, fmt_opts, readers=readers[1]),
                                  dict(kw)))
        untimed = tuple({s for reader in side for s in reader.untimed_streams()} for side in readers)
        result = compare(base, cand, (untimed[0], untimed[1]))
        text = json.dumps(result) + "\n" if out_format == "json" else compare_text(result)
        write_text(text, output)
        if fail_on_change and changed(result):
            return EXIT_FAIL
        return EXIT_OK

    guarded(body)


def changed(result: dict[str, Any]) -> bool:
    """Whether a diff fails `--fail-on-change`: a pair changed, a stream is on one side only, or neither side had
    one."""
    return (any(pair["changed"] for pair in result["pairs"]) or bool(result["only_in_baseline"])
            or bool(result["only_in_candidate"]) or not result["pairs"])


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
