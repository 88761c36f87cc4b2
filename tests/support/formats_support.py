"""Helpers for the text-format tests: a registry that holds this issue's formats, and reports.

`report_json` goes through `latencymap report --format json` when the formats are registered as
entry points, else through the same pipeline in process (input_flow → Accumulator → build_report).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from latencymap.core.accumulator import Accumulator
from latencymap.core.deltas import Differ
from latencymap.core.model import Interval, Notice
from latencymap.flow.pipeline import input_flow
from latencymap.outputs.report import build_report
from latencymap.plugins import Registry, TextFormat, load_registry
from latencymap.sources.bcc_text import BccTextFormat
from latencymap.sources.bpftrace_json import BpftraceJsonFormat
from latencymap.sources.bpftrace_text import BpftraceTextFormat
from latencymap.sources.raw_values import RawValuesFormat
from latencymap.sources.trace10046 import Trace10046Format

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FORMATS: tuple[type[TextFormat], ...] = (BpftraceTextFormat, BpftraceJsonFormat, BccTextFormat, Trace10046Format,
                                         RawValuesFormat)


def registry() -> Registry:
    """The installed plugins plus this issue's formats (whether or not their entry points exist yet)."""
    reg = load_registry()
    for fmt in FORMATS:
        reg.formats.setdefault(fmt.name, fmt)
    return reg


def _cli_args(options: dict[str, Any]) -> list[str]:
    args: list[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if key == "cumulative":
            args.append("--cumulative" if value else "--per-interval")
        elif isinstance(value, (tuple, list)):
            for v in value:
                args += [flag, str(v)]
        else:
            args += [flag, str(value)]
    return args


def report_json(path: Path | str, input_format: str | None = None, **options: Any) -> dict[str, Any]:
    """`latencymap report --format json` of one input (options as the formats receive them)."""
    from latencymap.cli.common import REGISTRY
    from latencymap.cli.main import main

    if all(fmt.name in REGISTRY.formats for fmt in FORMATS):
        args = ["report", "--format", "json", *_cli_args(options)]
        if input_format:
            args += ["--input-format", input_format]
        result = CliRunner().invoke(main, [*args, str(path)])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)
    acc = Accumulator()
    acc.add(list(input_flow([str(path)], registry(), input_format, options)))
    return build_report(acc)


def totals_by_label(report: dict[str, Any]) -> dict[str, int]:
    """Total events per stream label in a JSON report."""
    return {s["stream"]["label"]: s["total"]["events"] for s in report["streams"]}


def read_items(fmt: type[TextFormat], text: str, name: str = "t.txt", **options: Any) -> list[Interval | Notice]:
    """Items of a small input, snapshots diffed."""
    return list(Differ(name=name).run(fmt(**options).read(text.splitlines(keepends=True), name)))


def read_live(monkeypatch: Any, fmt: type[TextFormat], arrivals: list[tuple[float, str]], name: str = "<stdin>",
              **options: Any) -> list[Interval | Notice]:
    """Items of an input read live (a pipe) in a printed-histogram format: each line arrives at its time (epoch
    seconds), which the reader's clock reads when the line is read."""
    module = sys.modules[fmt.__module__]
    now = [arrivals[0][0]]
    monkeypatch.setattr(module, "PrintReader", partial(module.PrintReader, clock=lambda: now[0]))

    def lines() -> Iterator[str]:
        for when, line in arrivals:
            now[0] = when
            yield line + "\n"
    reader = fmt(**options)
    return list(Differ(name=name).run(reader.read(lines(), name)))


def intervals(items: list[Any]) -> list[Interval]:
    return [i for i in items if isinstance(i, Interval)]


def notices(items: list[Any]) -> list[str]:
    return [i.message for i in items if isinstance(i, Notice)]


def open_top_records(path: Path) -> Path:
    """Three PyLatencyMap records (counts only, ns) with 1.5% of the events in the open top bucket, whose values are
    not known: p99 and p999 there are lower bounds only. Written to `path`."""
    records = []
    for i, n in enumerate((0, 1000, 2000)):
        records += ["<begin record>", f"timestamp, microsec, {(1_700_000_000 + i) * 1_000_000}, t{i}",
                    "latencyunit, nanosec", "label, top", "datasource, bpf", f"1024, {n}", f"{2**62}, {n * 15 // 1000}",
                    "<end record>"]
    path.write_text("\n".join(records) + "\n")
    return path
