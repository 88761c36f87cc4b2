"""The view options' own checks: `--compat` needs something to write."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from latencymap.cli.main import main


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


@pytest.mark.parametrize("args", [["--compat"], ["--compat", "--force"], ["--force", "--compat"]])
def test_compat_without_record_or_emit_is_a_usage_error(example_data: Path, args: list[str]) -> None:
    """`--compat` only changes what --record or --emit writes: alone it would do nothing without a word."""
    code, out = invoke("--plain", "--once", *args, example_data)
    assert code == 2
    assert out.rstrip().endswith("Error: --compat changes what --record or --emit writes; without either it does "
                                 "nothing")


def test_compat_with_record_or_emit_writes_pylatencymap_records(example_data: Path, tmp_path: Path) -> None:
    recording = tmp_path / "r.txt"
    code, out = invoke("--plain", "--once", "--record", recording, "--compat", example_data)
    assert code == 0 and "Columns: " in out and '"format": "compat"' in recording.read_text()
    run = subprocess.run([sys.executable, "-m", "latencymap", "--emit", "--compat", str(example_data)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "\n<begin record>\n" in run.stdout
