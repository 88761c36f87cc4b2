"""`s`: an SVG screenshot and a plain-text frame in the current directory."""

from __future__ import annotations

import time
from pathlib import Path

from textual.app import App


class NotSaved(Exception):
    """Why `s` saved nothing (neither file is left behind)."""


def save_frame(app: App, lines: list[str], directory: Path | None = None) -> tuple[Path, Path]:
    """Write `latencymap-<time>.svg` (the screen) and `.txt` (`lines`); returns both paths. Raises `NotSaved` saying
    why, with the directory, when either could not be written (an unwritable or removed directory, a full disk)."""
    try:
        directory = directory or Path.cwd()
    except FileNotFoundError:
        raise NotSaved("the current directory no longer exists") from None
    stem = time.strftime("latencymap-%Y%m%d-%H%M%S")
    n = 0
    while (directory / f"{stem}.svg").exists() or (directory / f"{stem}.txt").exists():
        n += 1
        stem = f"{stem.split('.')[0]}.{n}"
    svg, txt = directory / f"{stem}.svg", directory / f"{stem}.txt"
    screenshot = app.export_screenshot()
    written: list[Path] = []
    try:
        for path, text in ((svg, screenshot), (txt, "\n".join(lines))):
            with path.open("x", encoding="utf-8") as out:
                written.append(path)
                out.write(text)
    except OSError as err:
        for path in written:
            path.unlink(missing_ok=True)
        why = err.strerror or str(err)
        raise NotSaved(f"{why}: cannot write in {directory}") from err
    return svg, txt


def saved_words(paths: tuple[Path, Path]) -> str:
    """The saved files as `s` names them: relative to the current directory (their names, there)."""
    try:
        here = Path.cwd()
    except FileNotFoundError:
        here = None
    return " and ".join(str(p.relative_to(here)) if here is not None and p.is_relative_to(here) else str(p)
                        for p in paths)
