"""`latencymap [view] INPUT`: a Spark event log read as an input shows what `latencymap spark LOG` shows."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from latencymap.cli.main import main

SPARK = Path(__file__).resolve().parents[2] / "fixtures" / "spark" / "plain"


@pytest.mark.parametrize("options", [["--plain", "--once"], ["--once", "--num-records", "40"]])
def test_plain_view_of_a_log_is_the_spark_sources(options: list[str]) -> None:
    """The plain frame of `latencymap LOG` is the one of `latencymap spark LOG` (neither prints the source's
    analysis: that is the TUI's panel and `report`'s)."""
    source = CliRunner().invoke(main, ["spark", *options, str(SPARK)])
    view = CliRunner().invoke(main, [*options, str(SPARK)])
    assert source.exit_code == view.exit_code == 0, (source.output, view.output)
    assert "Label: spark latencymap-fixture task duration" in view.stdout and "max(sum)" in view.stdout
    assert view.stdout == source.stdout
