"""`s`: an SVG screenshot and a plain-text frame in the current directory."""

from __future__ import annotations

import time
from pathlib import Path

from textual.app import App


def save_frame(app: App, lines: list[str], directory: Path | None = None) -> tuple[Path, Path]:
    """Write `latencymap-<time>.svg` (the screen) and `.txt` (`lines`); returns both paths."""
    directory = directory or Path.cwd()
    stem = time.strftime("latencymap-%Y%m%d-%H%M%S")
    n = 0
    while (directory / f"{stem}.svg").exists() or (directory / f"{stem}.txt").exists():
        n += 1
        stem = f"{stem.split('.')[0]}.{n}"
    svg = Path(app.save_screenshot(filename=f"{stem}.svg", path=str(directory)))
    txt = directory / f"{stem}.txt"
    txt.write_text("\n".join(lines), encoding="utf-8")
    return svg, txt
