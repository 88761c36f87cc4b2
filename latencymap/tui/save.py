"""`s`: an SVG screenshot and a plain-text frame in the current directory."""

from __future__ import annotations

import time
from pathlib import Path

from textual.app import App

from latencymap.tui.heatmap import HeatMap


def save_frame(app: App, maps: list[HeatMap], header: str, directory: Path | None = None) -> tuple[Path, Path]:
    """Write `latencymap-<time>.svg` and `.txt`; returns both paths."""
    directory = directory or Path.cwd()
    stem = time.strftime("latencymap-%Y%m%d-%H%M%S")
    n = 0
    while (directory / f"{stem}.svg").exists() or (directory / f"{stem}.txt").exists():
        n += 1
        stem = f"{stem.split('.')[0]}.{n}"
    svg = Path(app.save_screenshot(filename=f"{stem}.svg", path=str(directory)))
    lines = [header.rstrip(), ""]
    for heatmap in maps:
        lines += [*heatmap.plain_lines(), ""]
    txt = directory / f"{stem}.txt"
    txt.write_text("\n".join(lines), encoding="utf-8")
    return svg, txt
