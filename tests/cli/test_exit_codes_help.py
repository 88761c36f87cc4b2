"""Every command's `--help` ends with its own examples and the full list of exit codes."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from latencymap.cli.common import REGISTRY
from latencymap.cli.main import main

CODES = ("0 done", "1 a source or view failed", "2 bad usage", "130 interrupted", "143 terminated")


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
