"""`report --format svg|html`: cells against the accumulator, escaping, column merging, and headless Chromium."""

from __future__ import annotations

import re
import subprocess
import xml.dom.minidom
import xml.etree.ElementTree as ET
from html import unescape as html_unescape
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from screenshot_support import Box, cell_centres, dark_pixels, find_offset, layout, rgb, screenshot
from skips_support import need_binary

from latencymap.cli.common import REGISTRY
from latencymap.cli.main import main
from latencymap.core.accumulator import Accumulator
from latencymap.flow.pipeline import input_flow
from latencymap.views.frame import MIN_ROWS, quantize, row_range
from latencymap.views.options import BLUES, REDS
from latencymap.views.svg import (
    MAX_COLUMNS,
    MAX_TICKS,
    TICK_SPACING,
    Merged,
    cell_width,
    merge_columns,
    time_ticks,
    xterm_hex,
)

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
    rows = row_range(hist)  # the rows every view fits to the data; here they hold every event on their own
    lo, hi = rows.lo, rows.hi
    assert rows.folds == (False, False) and (lo, hi) == hist.used_slots()
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
    assert "+0s" in texts and "time since the first interval (the input's times are not dates)" in texts  # not 1970
    assert "legend (events/s)" in texts and "legend (s/s)" in texts
    assert len([e for e in root.iter(f"{SVG}rect") if "legend" in e.get("class", "")]) == 14
    assert any(t.startswith("multimodal (3 bands)") for t in texts)
    assert not any("tail" in t for t in texts)  # 48% of the events: not a tail worth a line
    assert any(t.startswith("— a slower population than the main band") for t in texts)  # each band finding's why
    assert any(t.startswith("— a faster population than the main band") for t in texts)  # fits its direction
    # the text report's words and numbers, once: no second list of the bands below the findings
    assert any(t.startswith("71 intervals over 3.57min: 1,237,243 events (5.77k/s), 7.73h waited") for t in texts)
    assert not any(t.startswith("band 4ms–256ms: 76% of events") for t in texts)


def test_several_streams_several_panels(tmp_path: Path, example_data: Path, fixtures: Path) -> None:
    text = render("svg", tmp_path / "r.svg", example_data, fixtures / "pylatencymap" / "test_SystemTap_data.txt")
    root = ET.fromstring(text.encode())
    panels = [g for g in root.iter(f"{SVG}g") if g.get("class") == "panel"]
    assert [p.get("data-stream")[:7] for p in panels] == ["db file", "Latency"]


@pytest.mark.parametrize("fmt", ["svg", "html"])
def test_peers_come_first_as_the_text_report_words_them(tmp_path: Path, fixtures: Path, fmt: str) -> None:
    """Twelve ranks: the comparison that names the slow one is at the top, before the first stream's maps."""
    ranks = fixtures / "training" / "ranks12.txt"
    text = render(fmt, tmp_path / f"r.{fmt}", ranks)
    report = CliRunner().invoke(main, ["report", str(ranks)]).output.splitlines()
    head = next(i for i, line in enumerate(report) if line.startswith("peers "))
    verdict = next(line for line in report[head:] if line.strip().startswith("slow rank: rank7"))
    if fmt == "svg":
        root = ET.fromstring(text.encode())
        shown = [e.text or "" for e in root.iter(f"{SVG}text") if e.get("class") == "peers"]
        assert [line.strip() for line in shown[:13]] == [line.strip() for line in report[head: head + 13]]
        assert " ".join(shown).split() == " ".join(report[head: report.index(verdict) + 1]).split()
        assert text.index('class="peers"') < text.index('class="panel"')
    else:
        items = re.findall(r"<li>(.*?)</li>", text.split('<section class="stream"')[0], re.S)
        assert [html_unescape(i) for i in items] == report[head: report.index(verdict) + 1]
    assert "rank7" in verdict


def test_a_short_history_has_room_for_its_time_labels_and_titles(tmp_path: Path, fixtures: Path) -> None:
    """11 columns (jHiccup's V0 log): the axis labels overlapped and the titles ran past a 400 px picture."""
    out = tmp_path / "short.svg"
    render("svg", out, fixtures / "hdrhistogram" / "hiccup.140623.1028.10646.hlog")
    root = ET.parse(out).getroot()
    width = float(root.get("width", "0"))
    texts = list(root.iter(f"{SVG}text"))
    ticks = sorted(float(t.get("x", "0")) for t in texts
                   if t.get("text-anchor") == "middle" and re.fullmatch(r"\+[\d.]+[smh]", t.text or ""))
    per_map = sorted(set(ticks))
    assert len(per_map) >= 4 and len(ticks) == 2 * len(per_map)  # two maps, the same labels at the same places
    assert min(b - a for a, b in pairwise(per_map)) >= TICK_SPACING - 1  # ticks where their times fall: 79.9 px
    titles = [t for t in texts if (t.text or "").startswith(("datasource ", "Intensity heat map"))]
    assert len(titles) == 2
    # A monospace character at font-size 11 advances 0.602 em: every title ends inside the picture.
    assert all(float(t.get("x", "0")) + len(t.text or "") * 11 * 0.602 <= width for t in titles)


def test_no_peers_no_peers_section(tmp_path: Path, example_data: Path) -> None:
    assert 'class="peers"' not in render("svg", tmp_path / "r.svg", example_data)
    assert 'class="peers"' not in render("html", tmp_path / "r.html", example_data)


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


#: A bpftrace map key (JSON escapes) holding what XML 1.0 forbids (lone surrogates, U+FFFE, U+FFFF), the line and
#: paragraph separators, and what it allows though unusual (noncharacters U+FDD0, U+1FFFF; U+10FFFF; a pair).
ODD_KEY = "a\\ufffeb\\uffff\\udfff\\ud800c\\u2028d\\u2029e\\ufdd0\\ud83f\\udfff\\udbff\\udfff\\ud83d\\ude00"
ODD_LABEL = "@x[a?b???c?d?e\ufdd0\U0001ffff\U0010ffff\U0001f600]"


@pytest.mark.slow
def test_a_label_holding_what_xml_forbids_gives_an_svg_that_parses_and_chromium_shows(tmp_path: Path) -> None:
    """U+FFFE/U+FFFF in a label made the SVG invalid XML (minidom and Chromium refused it, exit code 0), and a lone
    surrogate (a JSON input's `\\ud800`) ended the report in a UnicodeEncodeError."""
    src = tmp_path / "odd.json"
    src.write_text("".join(f'{{"type": "time", "data": "01:43:0{k}\\n"}}\n{{"type": "hist", "data": {{"@x": '
                           f'{{"{ODD_KEY}": [{{"min": 4, "max": 7, "count": {count}}}]}}}}}}\n'
                           for k, count in enumerate((269, 300))))
    page = tmp_path / "r.svg"
    render("svg", page, src)
    texts = [t.firstChild.data for t in xml.dom.minidom.parse(str(page)).getElementsByTagName("text") if t.firstChild]
    assert ODD_LABEL in texts
    browser = need_binary("chromium", "chromium-browser", remedy="apt-get install chromium (.ci/install-system.sh)")
    proc = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           page.as_uri()], capture_output=True, timeout=120, check=False, text=True)
    assert proc.returncode == 0 and "parsererror" not in proc.stdout and ODD_LABEL in proc.stdout, proc.stdout[:2000]


def test_long_history_merged(tmp_path: Path) -> None:
    src = tmp_path / "long.txt"
    n = 1000
    src.write_text("".join(f"<begin record>\ntimestamp, microsec, {i}000000, d\nlabel, long\n1, {i * (i % 7)}\n"
                           f"8, {i}\n<end record>\n" for i in range(1, n + 2)))
    (hist,) = load(src).streams.values()
    merged = merge_columns(hist)
    assert merged.group == 3 and len(merged.start) == 334 <= MAX_COLUMNS
    assert merged.counts.sum() == hist.counts.sum()
    rows = row_range(hist)
    assert (merged.lo, merged.hi) == (rows.lo, rows.hi) and rows.hi - rows.lo + 1 == MIN_ROWS  # padded to MIN_ROWS
    np.testing.assert_allclose(merged.rates("frequency")[0], hist.counts[:3, rows.lo: rows.hi + 1].sum(axis=0) / 3.0)
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
    assert "<li>multimodal (3 bands): " in text and "— not one spread" in text and "<title>" in text


def expected_levels(hist) -> dict[str, tuple[np.ndarray, tuple[int, ...]]]:
    """Each map's colour level per (column, row) as the accumulator implies it, and its palette."""
    lo, hi = hist.used_slots()
    out = {}
    for kind, matrix, palette in (("frequency", hist.frequency(), BLUES), ("intensity", hist.intensity(), REDS)):
        values = matrix[:, lo: hi + 1]
        out[kind] = quantize(values, float(values.max())), palette
    return out


def inline_svg(page_text: str) -> ET.Element:
    """The first `<svg>` of a page."""
    start = page_text.index("<svg ")
    return ET.fromstring(page_text[start: page_text.index("</svg>", start) + len("</svg>")])


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["svg", "html"])
def test_chromium_shows_the_accumulator_cells_legends_and_labels(tmp_path: Path, example_data: Path, fmt: str) -> None:
    page = tmp_path / f"report.{fmt}"
    text = render(fmt, page, example_data)
    root = ET.fromstring(text.encode()) if fmt == "svg" else inline_svg(text)
    width, height = int(root.get("width")), int(root.get("height"))
    # The SVG alone gets a window of exactly its declared size: whatever it draws outside is not in the picture.
    window = (width, height) if fmt == "svg" else (width + 100, height + 200)
    pixels = screenshot(page, tmp_path / f"{fmt}.png", *window, tmp_path / "profile")
    (hist,) = load(example_data).streams.values()
    levels = expected_levels(hist)
    colours = {kind: [xterm_hex(p) for p in palette] for kind, (_, palette) in levels.items()}
    dx, dy = (0, 0) if fmt == "svg" else find_offset(pixels, root, colours)
    drawn = layout(root, dx, dy)
    area = Box(dx, dy, width, height)  # the SVG's own viewport: it clips what lies outside
    assert area.inside(pixels)
    for kind, (level, palette) in levels.items():
        plot = drawn.plots[kind]
        assert plot.within(area), (kind, plot)
        rows, cols = cell_centres(plot, *level.shape)
        shown = pixels[rows[None, :], cols[:, None]]  # (columns, rows, RGB)
        want = np.array([rgb(c) for c in colours[kind]])[level]
        wrong = np.argwhere((shown != want).any(axis=2))
        assert len(wrong) == 0, f"{kind}: {len(wrong)} of {level.size} cells show another colour: {wrong[:5].tolist()}"
        assert np.count_nonzero(level == 6) > 0 and np.count_nonzero(level == 0) > 0  # both ends of the scale seen
        assert len(drawn.legends[kind]) == len(palette)
        for swatch, colour in zip(drawn.legends[kind], colours[kind], strict=True):
            x, y = swatch.centre()
            assert swatch.within(area) and tuple(pixels[int(y), int(x)]) == rgb(colour), (kind, swatch)
    texts = {label.text for label in drawn.labels}
    assert {"legend (events/s)", "legend (s/s)", "1ms", "4.1s", "+0s", hist.stream.label} <= texts
    for label in drawn.labels:
        assert label.box.within(area), label
        glyphs = sum(ch.isalnum() for ch in label.text)
        assert dark_pixels(pixels, label.box) >= 5 * glyphs, label


def test_the_time_axis_names_the_start_when_times_are_dates(tmp_path: Path, fixtures: Path) -> None:
    text = render("svg", tmp_path / "r.svg", fixtures / "hdrhistogram" / "jHiccup-2.0.7S.logV2.hlog")
    texts = [t.text or "" for t in ET.fromstring(text.encode()).iter(f"{SVG}text")]
    assert "time since 2015-09-08 23:05:32 UTC" in texts


def _merged(starts: list[float], ends: list[float]) -> Merged:
    n = len(starts)
    zeros = np.zeros((n, 1))
    return Merged(zeros, zeros, np.array(ends) - np.array(starts), np.array(starts, dtype=np.float64),
                  np.array(ends, dtype=np.float64), 0, 0, 1, np.zeros(n, dtype=np.uint8))


@pytest.mark.parametrize(("seconds", "step", "unit"), [(214.5, 50.0, "s"), (11.4, 2.0, "s"), (3 * 3600.0, 1800.0, "m"),
                                                       (0.9, 0.2, "ms"), (40 * 3600.0, 6 * 3600.0, "h")])
def test_time_ticks_are_round_in_one_unit_at_their_columns(seconds: float, step: float, unit: str) -> None:
    """Uneven columns (every third one 1.5 times as long): each tick at its time's place inside its column."""
    lengths = np.resize([1.0, 1.0, 1.5], 170)
    edges = 1_700_000_000.0 + np.concatenate(([0.0], np.cumsum(lengths))) * seconds / lengths.sum()
    m = _merged(edges[:-1].tolist(), edges[1:].tolist())
    cell_w = cell_width(170)
    x, labels = time_ticks(m, cell_w)
    scale = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}[unit]
    numbers = [float(label[1:-len(unit)]) for label in labels]
    assert all(label.startswith("+") and label.endswith(unit) and label[-len(unit) - 1].isdigit() for label in labels)
    assert numbers == [pytest.approx(k * step / scale) for k in range(len(labels))]
    assert 3 <= len(labels) <= MAX_TICKS and np.diff(x).min() * cell_w >= TICK_SPACING - 1
    when = np.interp(x, np.arange(171), edges - edges[0])  # the time at each tick's place on the axis
    assert when == pytest.approx(np.arange(len(labels)) * step, abs=1e-6 + 1e-9 * seconds)  # epoch floats: 0.2 µs


def test_time_ticks_skip_times_no_column_holds() -> None:
    """Ten seconds, ninety missing, ten more: no tick stands for a time in the gap."""
    starts = [float(t) for t in (*range(10), *range(100, 110))]
    x, labels = time_ticks(_merged(starts, [t + 1 for t in starts]), 40.0)
    # +10s and +100s would share a place (the gap has none): the step is the next one, 20s
    assert labels == ["+0s", "+100s"] and x.tolist() == [0.0, 10.0]


def test_svg_time_axis_of_the_oracle_sample_is_round(tmp_path: Path, example_data: Path) -> None:
    text = render("svg", tmp_path / "r.svg", example_data)
    root = ET.fromstring(text.encode())
    ticks = [t.text for t in root.iter(f"{SVG}text") if (t.text or "").startswith("+")]
    assert ticks == ["+0s", "+50s", "+100s", "+150s", "+200s"] * 2  # was +0s +36.24s +69.47s +105.7s +2.37m ...


@pytest.mark.parametrize("fmt", ["svg", "html"])
def test_the_subtitle_counts_gap_columns_apart_from_the_intervals(tmp_path: Path, fmt: str) -> None:
    """`3 intervals and 1 gap`, as the text report's header says them (it said `4 intervals`)."""
    path = tmp_path / "gappy.txt"
    path.write_text("".join(f"<begin record>\ntimestamp, microsec, {(1_700_000_001 + k) * 1_000_000}, t{k}\n"
                            "counts, interval\nlatencyunit, microsec\nlabel, svc\n"
                            + ("flags, gap\n" if k == 2 else "1024, 100\n") + "<end record>\n" for k in range(4)))
    page = html_unescape(render(fmt, tmp_path / f"gappy.{fmt}", path))
    assert "datasource bpf, unit microsec, 3 intervals and 1 gap<" in page


@pytest.mark.parametrize("fmt", ["svg", "html"])
def test_the_subtitle_counts_its_intervals_in_words(tmp_path: Path, fixtures: Path, example_data: Path,
                                                    fmt: str) -> None:
    """`1 interval`, as the text report says it (it said `1 intervals`); `2,000 intervals` as `diff` counts them."""
    one = html_unescape(render(fmt, tmp_path / f"one.{fmt}", fixtures / "hdrhistogram" / "service_ms.hgrm"))
    assert "datasource hdrhistogram, unit microsec, 1 interval<" in one and "1 intervals" not in one
    many = html_unescape(render(fmt, tmp_path / f"many.{fmt}", example_data))
    n = next(iter(load(example_data).streams.values())).n
    assert n > 1 and f", {n:,} intervals<" in many


@pytest.mark.parametrize("fmt", ["svg", "html"])
def test_a_one_bucket_stream_keeps_its_modes_line_where_no_bucket_table_follows(tmp_path: Path, fixtures: Path,
                                                                                fmt: str) -> None:
    """The text report leaves out `unimodal: 100% of events in 1.02ms–2.05ms` above a bucket table of that one row;
    the SVG and HTML reports have no such table (a heat map of many rows): the line is the only one naming the
    range, and stays. (`ramp` fills one bucket; `sc`'s first print, counted since bpftrace's banner, holds a sleep
    of 4-8 ms.)"""
    text = render(fmt, tmp_path / f"out.{fmt}", fixtures / "bpftrace" / "sleeps_keyed_cumulative.txt")
    assert text.count("unimodal: 100% of events in 1.02ms–2.05ms") == 1, fmt
    assert text.count("unimodal: 100% of events in 1.02ms–8.19ms") == 1, fmt


def test_an_intensity_title_says_what_a_jhiccup_logs_time_is(tmp_path: Path, fixtures: Path) -> None:
    """A jHiccup log's intensity map sums hiccups, which jHiccup fills with the samples they hid: no time waited."""
    svg = render("svg", tmp_path / "h.svg", fixtures / "hdrhistogram" / "jHiccup-2.0.7S.logV2.hlog")
    titles = re.findall(r"Intensity heat map: [^(<]*per second", svg)
    assert titles and set(titles) == {"Intensity heat map: hiccup time per second"}, titles
