"""SVG/HTML cell tooltips: one line each for the time, the latency range, the count and the share, joined by line
breaks the `<title>` shows as such (not the `?` that cleaning the whole text made of them)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html import unescape
from pathlib import Path

from latencymap.cli.common import REGISTRY
from latencymap.core.accumulator import Accumulator
from latencymap.flow.pipeline import input_flow
from latencymap.views.html import render_html
from latencymap.views.svg import esc_lines, render_svg

SVG = "{http://www.w3.org/2000/svg}"


def load(path: Path) -> Accumulator:
    acc = Accumulator()
    acc.add(list(input_flow([str(path)], REGISTRY)))
    return acc


def check_lines(tip: str) -> None:
    lines = tip.split("\n")
    assert len(lines) == 4 and "?" not in tip
    assert lines[0].startswith("+") and lines[1].startswith("latency ")
    assert lines[2].startswith(("count ", "time waited ")) and "of the column's" in lines[3]


def test_svg_cell_tooltips_have_a_line_each(example_data: Path) -> None:
    text = render_svg(load(example_data))
    assert "&#10;latency " in text
    titles = [t.text or "" for t in ET.fromstring(text.encode()).iter(f"{SVG}title")]
    cells = [t for t in titles if "of the column's" in t]
    assert cells and all("\n" in t for t in cells)
    for tip in cells:
        check_lines(tip)


def test_html_cell_tooltips_too(example_data: Path) -> None:
    text = render_html(load(example_data))
    cells = [unescape(t) for t in re.findall(r"<title>([^<]*of the column[^<]*)</title>", text)]
    assert cells
    for tip in cells:
        check_lines(tip)


def test_each_line_is_still_cleaned() -> None:
    joined = esc_lines(["a\x1b[2J<b>", "c\u202ed"])
    assert joined == "a?[2J&lt;b&gt;&#10;c?d"  # a control character in a line is no line break
