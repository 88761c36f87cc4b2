"""Without colour (NO_COLOR, saved `.txt` frames) every colour level has its own shade (hunt #16: two levels
shared each of `░` and `▒`, so a cell of 8 ev/s read as one of 700)."""

from __future__ import annotations

import re
from pathlib import Path

from rich.cells import cell_len

from latencymap.cli.common import REGISTRY
from latencymap.core.accumulator import Accumulator
from latencymap.flow.pipeline import input_flow
from latencymap.views.frame import LEVELS
from latencymap.views.options import SHADES, ViewOptions
from latencymap.views.plain import PlainRenderer

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "pylatencymap" / "example_latency_data.txt"


def test_every_level_has_its_own_one_cell_shade() -> None:
    assert len(SHADES) == LEVELS + 1 and SHADES[0] == " "
    assert len(set(SHADES)) == len(SHADES)
    assert all(len(s) == 1 and cell_len(s) == 1 and not s.isalnum() for s in SHADES)
    assert SHADES[-3:] == ("▒", "▓", "█")  # the darkest levels keep their blocks


def test_the_plain_legend_lists_a_different_shade_per_level() -> None:
    acc = Accumulator()
    acc.add(input_flow([str(EXAMPLE)], REGISTRY))
    text = PlainRenderer(ViewOptions(color=False)).render(acc)
    for legend in ("Frequency", "Intensity"):
        block = text[text.index(f"Latency {legend}"):]
        swatches = re.findall(r"   (\S) >", block)[:LEVELS]
        assert swatches == list(SHADES[1:]) and len(set(swatches)) == LEVELS, (legend, swatches)
