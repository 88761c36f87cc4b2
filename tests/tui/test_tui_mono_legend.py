"""The TUI under NO_COLOR: its legend shows one shade per level, the map's cells the same shades (hunt #16)."""

from __future__ import annotations

import re

from tui_support import example_items
from tui_support import run_ended as run

from latencymap.tui.app import LatencyMapApp
from latencymap.tui.heatmap import HeatMap
from latencymap.views.frame import LEVELS
from latencymap.views.options import SHADES


def test_the_mono_legend_has_a_shade_per_level() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="mono")

    async def scenario(pilot) -> None:
        for heat in app.query(HeatMap):
            assert heat.spec is not None and heat.spec.rows >= LEVELS + 2  # a legend line per level
            lines = [s.text for s in heat.build_strips(heat.size.width, "mono")]
            legend = [m[1] for line in lines if (m := re.search(r" (\S)\1 >", line))]
            assert legend == list(SHADES[1:]) and len(set(legend)) == LEVELS, legend
            cells = {ch for line in lines[:heat.spec.rows] for ch in line[9: 9 + heat.cells]}
            assert len(cells & set(SHADES[1:])) >= 3  # the map draws them

    run(app, scenario, size=(160, 50))
