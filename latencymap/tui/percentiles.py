"""A p50/p99 over time strip under the maps (plotext), for the columns on screen."""

from __future__ import annotations

import numpy as np
from textual_plotext import PlotextPlot

from latencymap.core.accumulator import StreamHistory
from latencymap.core.percentiles import PERCENTILES
from latencymap.core.units import format_duration

SHOWN = (0.50, 0.99)
COLORS = {0.50: "cyan", 0.99: "red"}


def percentile_series(hist: StreamHistory, first: int, stop: int) -> dict[float, np.ndarray]:
    """p50 and p99 (seconds) of each column in [first, stop), from the accumulator's estimates."""
    pct = hist.column_stats(slice(first, stop)).percentiles
    return {q: pct[:, PERCENTILES.index(q)] for q in SHOWN}


class PercentileStrip(PlotextPlot):
    """p50/p99 per column in the stream's unit, log scale; `p` hides it."""

    DEFAULT_CSS = "PercentileStrip { height: 1fr; min-height: 8; width: 1fr; }"

    def __init__(self) -> None:
        super().__init__(id="percentiles")
        self._shown: tuple | None = None

    def show(self, hist: StreamHistory | None, first: int, stop: int) -> None:
        """Plot the window (skipped when unchanged)."""
        key = None if hist is None else (id(hist), first, stop, hist.n)
        if key == self._shown:
            return
        self._shown = key
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        if hist is None or stop <= first:
            plt.title("percentiles: waiting for data")
            self.refresh()
            return
        xs = np.arange(first, stop)
        low, high = np.inf, -np.inf
        for q, series in percentile_series(hist, first, stop).items():
            ok = np.isfinite(series) & (series > 0)
            if ok.any():
                logs = np.log10(series[ok])
                low, high = min(low, float(logs.min())), max(high, float(logs.max()))
                plt.plot(xs[ok].tolist(), logs.tolist(), color=COLORS[q], marker="braille")
        if np.isfinite(low):
            ticks = list(range(int(np.floor(low)), int(np.ceil(high)) + 1))
            plt.yticks([float(k) for k in ticks], [format_duration(10.0**k) for k in ticks])
        plt.title("p50 (cyan) / p99 (red) per column, log scale")
        self.refresh()
