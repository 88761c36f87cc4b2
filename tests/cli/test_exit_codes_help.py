"""Every command's `--help` ends with its own examples and the full list of exit codes."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from latencymap.cli.common import REGISTRY
from latencymap.cli.main import main

CODES = ("0 done", "1 a source or view failed", "2 bad usage", "130 interrupted", "143 terminated", "129 hung up")


def _help(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


@pytest.mark.parametrize("name", sorted(REGISTRY.sources))
def test_source_help_shows_its_own_examples_and_every_exit_code(name: str) -> None:
    text = _help(name)
    examples = text.split("Examples:", 1)[1].split("Exit codes:", 1)[0]
    commands = re.findall(r"latencymap [\w-]+", examples)
    assert commands and all(c == f"latencymap {name}" or c == "latencymap report" for c in commands), examples
    assert "fixtures/pylatencymap" not in text
    for code in CODES:
        assert code in text, (name, code)


@pytest.mark.parametrize("command", [(), ("view",), ("replay",), ("report",)])
def test_every_command_lists_every_exit_code(command: tuple[str, ...]) -> None:
    text = _help(*command)
    for code in CODES:
        assert code in text, (command, code)
    assert "Ctrl-C" in text


def test_report_help_has_its_own_examples_its_sources_and_what_the_gate_metrics_mean() -> None:
    """`report --help` showed the top-level examples (two not even `report`), never listed the sources it runs,
    and offered `tail.time_share > 50%` as a gate, which holds on nearly every stream (>= 50% by construction)."""
    text = _help("report")
    examples = text.split("Examples:", 1)[1].split("Sources", 1)[0]
    commands = re.findall(r"latencymap [\w-]+", examples)
    assert commands and set(commands) == {"latencymap report"}, examples
    for shown in ("--format json", "--fail-if 'p99 > 20ms'", "--fail-if 'tail.events_share < 5%'",
                  "--format html -o io.html", "latencymap report scrape http", "--metric NAME --count 60"):
        assert shown in examples, shown
    sources = text.split("Sources", 1)[1].split("--fail-if metrics", 1)[0]
    for name in REGISTRY.sources.names():
        assert f" {name} {REGISTRY.sources.summary(name).split()[0]}" in sources, name
    metrics = text.split("--fail-if metrics", 1)[1].split("Exit codes:", 1)[0]
    for name in ("p50 p90 p99 p999 mean", "bands", "bimodal", "tail.events_share", "tail.time_share"):
        assert f" {name} " in metrics, name
    assert "one or two far outliers" in metrics
    assert "50% by construction, no gate" in metrics
    assert "'tail.time_share > 50% or" not in text


def test_view_help_has_its_own_examples() -> None:
    """`view --help` showed the top-level examples, `latencymap report ...` among them; now only the view's
    (`latencymap FILE`, the default command), which `latencymap --help` shows with a report's."""
    examples = _help("view").split("Examples:", 1)[1].split("Exit codes:", 1)[0]
    assert "report" not in examples
    assert "latencymap --datasource oracle fixtures/pylatencymap/example_latency_data.txt" in examples
    assert "latencymap report --format json" in _help().split("Examples:", 1)[1]
