"""Options before a subcommand (`latencymap --strict report FILE`) are a usage error that gives the line to type,
not an input file named `report`; and `--strict`'s fatal message does not say that reading went on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from latencymap.core.errors import StrictError
from latencymap.core.model import Notice
from latencymap.flow.pipeline import strict

GARBAGE = "<begin record>\nlabel, x\n1, 2\ngarbage\n<end record>\n"


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", *map(str, args)], capture_output=True, text=True,
                          timeout=60, cwd=cwd, stdin=subprocess.DEVNULL,
                          env={**os.environ, "NO_COLOR": "1"})


@pytest.mark.parametrize(("args", "right"), [
    (["--strict", "report", "g.txt"], "latencymap report --strict g.txt"),
    (["--count", "5", "--plain", "report", "--format", "json", "g.txt"],
     "latencymap report --count 5 --plain --format json g.txt"),
    (["--plain", "view", "g.txt"], "latencymap view --plain g.txt"),
])
def test_options_before_the_subcommand_say_where_they_go(tmp_path: Path, args: list[str], right: str) -> None:
    (tmp_path / "g.txt").write_text(GARBAGE)
    r = run(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().endswith(f"Error: options go after the subcommand: {right}")
    assert "No such file" not in r.stderr


def test_an_option_value_or_a_file_named_like_a_command_is_not_a_subcommand(tmp_path: Path,
                                                                           example_data: Path) -> None:
    (tmp_path / "report").write_text(example_data.read_text())  # a file named `report` in the current directory
    r = run("--plain", "--once", "report", cwd=tmp_path)
    assert r.returncode == 0 and "Columns: 71" in r.stdout
    r = run("--plain", "--once", "--record", "replay", str(example_data), cwd=tmp_path)  # --record's value
    assert r.returncode == 0 and (tmp_path / "replay").read_text().startswith("# latencymap-recording")
    assert run("--help", "report").returncode == 0


def test_a_strict_message_does_not_say_the_record_was_skipped(tmp_path: Path) -> None:
    (tmp_path / "g.txt").write_text(GARBAGE)
    r = run("report", "--strict", "g.txt", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == ("latencymap: g.txt: line 4: expected '<key>, <value>' or '<bucket value>, <count>', "
                                "got 'garbage'")


@pytest.mark.parametrize("tail", ["; record skipped", "; row skipped", "; line skipped", "; point skipped",
                                  "; skipped", "; left out"])
def test_strict_drops_every_readers_went_on_tail(tail: str) -> None:
    with pytest.raises(StrictError) as err:
        list(strict(iter([Notice("f: line 3: bad" + tail)])))
    assert str(err.value) == "f: line 3: bad"
    assert list(strict(iter([note := Notice("f: a note; record skipped", skipped=0)]))) == [note]
