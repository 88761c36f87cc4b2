"""`latencymap diff --help` and `latencymap profile-export --help` end, like every command's, with the exit codes."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from latencymap.cli.common import EXIT_CODES
from latencymap.cli.main import main


@pytest.mark.parametrize("command", ["diff", "profile-export"])
def test_help_ends_with_its_own_examples_and_every_exit_code(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert text.endswith(" ".join(EXIT_CODES.replace("\b", "").split()))
    examples = text.split("Examples:", 1)[1].split("Exit codes:", 1)[0]
    commands = re.findall(r"latencymap [\w-]+", examples)
    assert commands and set(commands) == {f"latencymap {command}"}, examples
