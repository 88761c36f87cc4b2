"""Static reports opened in headless Chromium: screenshots decoded (Pillow) and read back against the SVG's layout."""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from skips_support import need_binary, need_module

SVG = "{http://www.w3.org/2000/svg}"
#: A pixel of text: grey to black (every palette colour but white has a channel at 255).
DARK = 160


def screenshot(page: Path, png: Path, width: int, height: int, profile: Path) -> np.ndarray:
    """`page` rendered by headless Chromium in a `width` x `height` window; its pixels (rows, columns, RGB)."""
    browser = need_binary("chromium", "chromium-browser", remedy="apt-get install chromium (.ci/install-system.sh)")
    image = need_module("PIL.Image")
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--force-device-scale-factor=1", f"--user-data-dir={profile}", f"--screenshot={png}",
         f"--window-size={width},{height}", page.as_uri()],
        capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with image.open(png) as img:
        assert img.format == "PNG" and img.size == (width, height)
        return np.asarray(img.convert("RGB"))


def rgb(hex_colour: str) -> tuple[int, int, int]:
    """`#rrggbb` as (r, g, b)."""
    return int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16)


@dataclass
class Box:
    """A rectangle in page pixels."""

    x: float
    y: float
    width: float
    height: float

    def centre(self) -> tuple[float, float]:
        return self.x + self.width / 2, self.y + self.height / 2

    def inside(self, pixels: np.ndarray) -> bool:
        """Wholly inside the picture."""
        rows, cols = pixels.shape[:2]
        return self.within(Box(0, 0, cols, rows))

    def within(self, other: Box) -> bool:
        """Wholly inside `other`."""
        return (self.x >= other.x and self.y >= other.y and self.x + self.width <= other.x + other.width
                and self.y + self.height <= other.y + other.height)


@dataclass
class Label:
    """One `<text>` of the SVG: its content and the box its glyphs take (monospace, ~0.6 em a character)."""

    text: str
    box: Box


@dataclass
class Layout:
    """Where the SVG of one stream draws: each map's plot area and legend swatches, and its labels."""

    plots: dict[str, Box]
    legends: dict[str, list[Box]]  # by level, 0 first
    labels: list[Label]


def _translate(element: ET.Element) -> tuple[float, float]:
    found = re.fullmatch(r"translate\(([-\d.]+)[ ,]+([-\d.]+)\)", element.get("transform", ""))
    return (float(found.group(1)), float(found.group(2))) if found else (0.0, 0.0)


def layout(svg_root: ET.Element, dx: float = 0.0, dy: float = 0.0) -> Layout:
    """The first stream's layout, shifted by (dx, dy) plus its panel's translation."""
    panel = next((g for g in svg_root.iter(f"{SVG}g") if g.get("class") == "panel"), svg_root)
    px, py = _translate(panel)
    dx, dy = dx + px, dy + py

    def box(e: ET.Element) -> Box:
        return Box(float(e.get("x", 0)) + dx, float(e.get("y", 0)) + dy, float(e.get("width")), float(e.get("height")))

    plots, legends, labels = {}, {}, []
    for e in panel.iter(f"{SVG}rect"):
        classes = e.get("class", "").split()
        if classes[:1] == ["plot"]:
            plots[classes[1]] = box(e)
        elif classes[:1] == ["legend"]:
            legends.setdefault(classes[1], []).append(box(e))
    for e in panel.iter(f"{SVG}text"):
        size = float(e.get("font-size", 11))
        width = 0.6 * size * len(e.text or "")
        x, y = float(e.get("x")) + dx, float(e.get("y")) + dy
        left = {"end": x - width, "middle": x - width / 2}.get(e.get("text-anchor", "start"), x)
        if not e.get("transform"):
            labels.append(Label(e.text or "", Box(left - 2, y - 0.85 * size, width + 4, 1.15 * size)))
    return Layout(plots, legends, labels)


def cell_centres(plot: Box, ncols: int, nrows: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel (row, column) indexes of every cell's centre: columns left to right, row 0 (fastest) at the bottom."""
    xs = plot.x + (np.arange(ncols) + 0.5) * plot.width / ncols
    ys = plot.y + plot.height - (np.arange(nrows) + 0.5) * plot.height / nrows
    return np.floor(ys).astype(int), np.floor(xs).astype(int)


def dark_pixels(pixels: np.ndarray, box: Box) -> int:
    """How many text-dark pixels the box holds."""
    x0, y0 = max(0, int(box.x)), max(0, int(box.y))
    part = pixels[y0: int(np.ceil(box.y + box.height)), x0: int(np.ceil(box.x + box.width))]
    return int(np.count_nonzero((part < DARK).all(axis=2)))


def find_offset(pixels: np.ndarray, svg_root: ET.Element, expected: dict[str, list[str]], reach: int = 200) -> tuple:
    """Where the SVG sits on a page: the (dx, dy) at which every legend swatch shows its colour inside."""
    base = layout(svg_root)
    swatches = [(box, colour) for kind, boxes in base.legends.items()
                for box, colour in zip(boxes, expected[kind], strict=True)]
    fits = np.ones((reach, reach), dtype=bool)  # [dy, dx]: each swatch's centre pixel has its colour
    for box, colour in swatches:
        cx, cy = map(int, box.centre())
        window = pixels[cy: cy + reach, cx: cx + reach]
        match = np.zeros((reach, reach), dtype=bool)
        match[: window.shape[0], : window.shape[1]] = (window == rgb(colour)).all(axis=2)
        fits &= match
    found = [(int(dx), int(dy)) for dy, dx in np.argwhere(fits)
             if all(_solid(pixels, box, int(dx), int(dy), colour) for box, colour in swatches)]
    assert found, "the legend swatches are nowhere on the page"
    return found[len(found) // 2]  # the middle of the (few pixels wide) range of offsets that fit


def _solid(pixels: np.ndarray, box: Box, dx: int, dy: int, colour: str) -> bool:
    x0, y0 = int(box.x) + dx + 2, int(box.y) + dy + 2
    part = pixels[y0: y0 + int(box.height) - 3, x0: x0 + int(box.width) - 3]
    return part.size > 0 and bool((part == rgb(colour)).all())
