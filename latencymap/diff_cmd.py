"""The `latencymap diff BASELINE CANDIDATE` command (registered by cli.py)."""

from __future__ import annotations

import json
from typing import Any

import click

from latencymap.accumulator import Accumulator
from latencymap.compare import compare, compare_text
from latencymap.exports import write_text

BATCH = 4096


def accumulate(flow: Any) -> Accumulator:
    """Every interval of a flow, in an accumulator."""
    acc = Accumulator()
    batch: list[Any] = []
    for item in flow:
        batch.append(item)
        if len(batch) >= BATCH:
            acc.add(batch)
            batch.clear()
    acc.add(batch)
    return acc


@click.command("diff")
@click.argument("baseline", metavar="BASELINE")
@click.argument("candidate", metavar="CANDIDATE")
@click.option("--format", "out_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output format.")
@click.option("--input-format", default=None, metavar="NAME", help="Input format of both files instead of sniffing.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the diff to a file instead of stdout.")
def diff(baseline: str, candidate: str, out_format: str, input_format: str | None, output: str | None) -> None:
    """Compare two inputs: per-bucket share changes, percentile deltas, bands that appeared or vanished."""
    from latencymap.cli import EXIT_OK, REGISTRY, _guarded
    from latencymap.pipeline import input_flow

    def body() -> int:
        base = accumulate(input_flow([baseline], REGISTRY, input_format))
        cand = accumulate(input_flow([candidate], REGISTRY, input_format))
        result = compare(base, cand)
        text = json.dumps(result) + "\n" if out_format == "json" else compare_text(result)
        write_text(text, output)
        return EXIT_OK

    _guarded(body)
