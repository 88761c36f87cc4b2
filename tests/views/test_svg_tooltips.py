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


def test_the_open_top_bucket_reads_as_open_in_tooltips_and_on_the_latency_axis(tmp_path: Path) -> None:
    """A raw value of 10**20 µs is counted in the top bucket, which is open: its cells' tooltips read
    `latency ≥4611686018427s` and say so, as the text report's `≥53,375,996 days` row, not `…–9223372036855s`
    (the time waited, 1e14 s, lay above that); the axis's top edge is `∞`. The same in the HTML report."""
    path = tmp_path / "v.txt"
    path.write_text("100\n200\n150\n300\n1e20\n")
    acc = load(path)
    for text in (render_svg(acc), render_html(acc)):
        tips = [unescape(t).split("\n") for t in re.findall(r'data-slot="63"[^>]*><title>([^<]*)</title>', text)]
        assert len(tips) == 2  # one cell on each map
        for tip in tips:
            assert tip[1] == "latency ≥4611686018427s (the top bucket: open, it counts longer values too)"
        assert "9223372036855s" not in text
        ticks = re.findall(r'<text [^>]*text-anchor="end">([^<]*)</text>', text)
        assert ticks.count("∞") == 2 and ticks[0] == "64µs"
    other = [unescape(t) for t in re.findall(r'data-slot="7"[^>]*><title>([^<]*)</title>', render_svg(acc))]
    assert other and all(t.split("\n")[1] == "latency 64µs–128µs" for t in other)


def test_tooltip_counts_are_exact_past_2_53(tmp_path: Path) -> None:
    """Counts were folded through float64: 2**53 + 1 read 9007199254740992, 2**62 - 1 read 4611686018427387904. The
    tooltips hold the counts read, their rates in P (not `461168602G/s`), each bucket 50.0% of its column."""
    path = tmp_path / "huge.txt"
    path.write_text("<begin record>\ntimestamp, microsec, 1795000010000000, a\ncounts, interval\n"
                    "start, microsec, 1795000000000000\nlatencyunit, microsec\nlabel, big\n"
                    f"256, {2**53 + 1}\n512, {2**62 - 1}\n1024, {2**62 - 1}\n<end record>\n")
    acc = load(path)
    for text in (unescape(render_svg(acc)), unescape(render_html(acc))):
        counts = re.findall(r"count (\d+) \((\S+)/s\)", text)
        assert counts == [(str(2**53 + 1), "901T"), (str(2**62 - 1), "461P"), (str(2**62 - 1), "461P")]
        assert "50.0% of the column's events, cumulative 100.0%" in text


def test_tooltips_give_a_date_only_where_the_inputs_times_are_dates(example_data: Path, fixtures: Path) -> None:
    """The PyLatencyMap example's times are a time of day (not dates): its tooltips say the time since the first
    interval, as its axis does, not a 1970 date; a dated input's say the column's start in UTC."""
    acc = load(example_data)
    for text in (unescape(render_svg(acc)), unescape(render_html(acc))):
        spans = re.findall(r"<title>(\+[^\n]*)\n", text)
        assert spans and all(s.endswith(" since the first interval") for s in spans), spans[:3]
        assert "1970" not in text and "UTC" not in text
    dated = unescape(render_svg(load(fixtures / "hdrhistogram" / "jHiccup-2.0.7S.logV2.hlog")))
    spans = re.findall(r"<title>(\+[^\n]*)\n", dated)
    assert spans and all(re.search(r" \(2015-09-0\d \d\d:\d\d:\d\d UTC\)$", s) for s in spans), spans[:3]
    assert spans[0].startswith("+0s–") and spans[0].endswith("(2015-09-08 23:05:32 UTC)")  # the axis' start


def test_an_intensity_cells_tooltip_says_what_its_streams_time_is(fixtures: Path) -> None:
    """A jHiccup log's intensity cells hold hiccup time, as its map's title says; the tooltip said `time waited`."""
    text = render_svg(load(fixtures / "hdrhistogram" / "jHiccup-2.0.7S.logV2.hlog"))
    titles = [t.text or "" for t in ET.fromstring(text.encode()).iter(f"{SVG}title")]
    timed = [t.split("\n")[2] for t in titles if "of the column's time" in t]
    assert timed and all(line.startswith("hiccup time ") for line in timed), timed[:3]
