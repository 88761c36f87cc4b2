"""`report --format svg|html`: cells against the accumulator, escaping, column merging, and headless Chromium."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from latencymap.cli.common import REGISTRY
from latencymap.cli.main import main
from latencymap.core.accumulator import Accumulator
from latencymap.flow.pipeline import input_flow
from latencymap.views.frame import quantize
from latencymap.views.options import BLUES, REDS
from latencymap.views.svg import MAX_COLUMNS, merge_columns, xterm_hex

SVG = "{http://www.w3.org/2000/svg}"


def load(*paths: Path) -> Accumulator:
    acc = Accumulator()
    acc.add(list(input_flow([str(p) for p in paths], REGISTRY)))
    return acc


def render(fmt: str, out: Path, *inputs: Path) -> str:
    result = CliRunner().invoke(main, ["report", "--format", fmt, "-o", str(out), *map(str, inputs)])
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8")


def svg_cells(path: Path) -> list[ET.Element]:
    root = ET.parse(path).getroot()
    return [e for e in root.iter(f"{SVG}rect") if "cell" in e.get("class", "").split()]


def test_xterm_palette() -> None:
    assert [xterm_hex(i) for i in (15, 21, 51, 196, 226, 208)] == [
        "#ffffff", "#0000ff", "#00ffff", "#ff0000", "#ffff00", "#ff8700"]
    assert xterm_hex(232) == "#080808" and xterm_hex(1) == "#800000"


def test_svg_cells_match_accumulator(tmp_path: Path, example_data: Path) -> None:
    out = tmp_path / "r.svg"
    render("svg", out, example_data)
    (hist,) = load(example_data).streams.values()
    lo, hi = hist.used_slots()
    cells = svg_cells(out)
    for kind, matrix, palette in (("frequency", hist.frequency(), BLUES), ("intensity", hist.intensity(), REDS)):
        values = matrix[:, lo: hi + 1]
        levels = quantize(values, float(values.max()))
        mine = {(int(e.get("data-col")), int(e.get("data-slot"))): e for e in cells if kind in e.get("class")}
        assert len(mine) == np.count_nonzero(values) == np.count_nonzero(levels)
        rng = np.random.default_rng(7)
        nonzero = np.argwhere(levels > 0)
        picks = [np.unravel_index(np.argmax(values), values.shape), *map(tuple, nonzero[rng.choice(len(nonzero), 8)])]
        for col, row in picks:
            cell = mine[(int(col), lo + int(row))]
            assert cell.get("fill") == xterm_hex(palette[levels[col, row]])
            assert int(cell.get("data-level")) == levels[col, row]
    # the most frequent cell is the darkest blue, and its tooltip tells its numbers
    col, row = np.unravel_index(np.argmax(hist.frequency()[:, lo: hi + 1]), (hist.n, hi - lo + 1))
    cell = next(e for e in cells if "frequency" in e.get("class") and e.get("data-col") == str(col)
                and e.get("data-slot") == str(lo + row))
    assert cell.get("fill") == "#0000ff"
    tip = cell.find(f"{SVG}title").text
    count = int(hist.counts[col, lo + row])
    assert f"count {count} " in tip and "latency 16ms–32ms" in tip and "of the column's events, cumulative" in tip
    share = 100 * count / hist.counts[col].sum()
    assert f"{share:.1f}% of the column" in tip


def test_svg_axes_legend_findings(tmp_path: Path, example_data: Path) -> None:
    text = render("svg", tmp_path / "r.svg", example_data)
    root = ET.fromstring(text.encode())
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert "db file sequential read latency data from gv$event_histogram" in texts
    assert {"1ms", "16ms", "4.1s"} <= set(texts)  # latency axis in human units
    assert "+0s" in texts and any(t.startswith("time since ") for t in texts)
    assert "legend (events/s)" in texts and "legend (s/s)" in texts
    assert len([e for e in root.iter(f"{SVG}rect") if "legend" in e.get("class", "")]) == 14
    assert any(t.startswith("multimodal (3 bands)") for t in texts)
    assert not any("tail" in t for t in texts)  # 48% of the events: not a tail worth a line
    assert any(t.startswith("— two populations, not one spread") for t in texts)  # the band finding's why
    assert any(t.startswith("band 4ms–256ms") for t in texts)


def test_several_streams_several_panels(tmp_path: Path, example_data: Path, fixtures: Path) -> None:
    text = render("svg", tmp_path / "r.svg", example_data, fixtures / "pylatencymap" / "test_SystemTap_data.txt")
    root = ET.fromstring(text.encode())
    panels = [g for g in root.iter(f"{SVG}g") if g.get("class") == "panel"]
    assert [p.get("data-stream")[:7] for p in panels] == ["db file", "Latency"]


def test_hostile_label_escaped(tmp_path: Path) -> None:
    src = tmp_path / "evil.txt"
    label = 'x</text><script>alert(1)</script>&"\x1b[31m'
    records = [f"<begin record>\ntimestamp, microsec, {i}000000, d\nlabel, {label}\n1, {5 * i}\n<end record>\n"
               for i in range(1, 4)]
    src.write_text("".join(records))
    for fmt in ("svg", "html"):
        text = render(fmt, tmp_path / f"r.{fmt}", src)
        assert "<script" not in text and "\x1b" not in text
        assert "&lt;script&gt;" in text
    ET.parse(tmp_path / "r.svg")


def test_long_history_merged(tmp_path: Path) -> None:
    src = tmp_path / "long.txt"
    n = 1000
    src.write_text("".join(f"<begin record>\ntimestamp, microsec, {i}000000, d\nlabel, long\n1, {i * (i % 7)}\n"
                           f"8, {i}\n<end record>\n" for i in range(1, n + 2)))
    (hist,) = load(src).streams.values()
    merged = merge_columns(hist)
    assert merged.group == 3 and len(merged.start) == 334 <= MAX_COLUMNS
    assert merged.counts.sum() == hist.counts.sum()
    np.testing.assert_allclose(merged.rates("frequency")[0], hist.counts[:3, 1:5].sum(axis=0) / 3.0)
    render("svg", tmp_path / "r.svg", src)
    cols = {int(e.get("data-col")) for e in svg_cells(tmp_path / "r.svg")}
    assert max(cols) == 333
    assert "3 intervals per column" in (tmp_path / "r.svg").read_text()


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cells: list[dict[str, str | None]] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "rect" and "cell" in (dict(attrs).get("class") or ""):
            self.cells.append(dict(attrs))


def test_html_self_contained(tmp_path: Path, example_data: Path) -> None:
    text = render("html", tmp_path / "r.html", example_data)
    parser = _Cells()
    parser.feed(text)
    svg_text = render("svg", tmp_path / "r.svg", example_data)
    assert len(parser.cells) == len(svg_cells(tmp_path / "r.svg")) > 100
    assert "default-src 'none'" in text
    assert not re.search(r"\b(src|href)\s*=|url\(|@import|<script|<link", text)
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text + svg_text)
    assert "<li>multimodal (3 bands): " in text and "— two populations" in text and "<title>" in text


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["svg", "html"])
def test_chromium_screenshot(tmp_path: Path, example_data: Path, fmt: str) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed on this machine (Debian package `chromium`)")
    page = tmp_path / f"report.{fmt}"
    render(fmt, page, example_data)
    png = tmp_path / f"{fmt}.png"
    width, height = 1200, 1000
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}", f"--window-size={width},{height}",
         page.as_uri()],
        capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (width, height)
    # a blank page compresses to ~5 KB; two coloured maps, legends and text are far larger
    assert len(data) > 40_000
