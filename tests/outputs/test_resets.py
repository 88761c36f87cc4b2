"""Counter resets and gaps are visible: report JSON and text, plain frames, SVG and HTML mark the same columns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from resets_support import EXAMPLE, restarted_copy

from latencymap.cli.main import main
from latencymap.core.model import StreamId
from latencymap.protocol import format_record

RESTART_AFTER = 30  # the source restarts between records 30 and 31: column 30 is the reset column


@pytest.fixture
def restarted(tmp_path: Path) -> Path:
    path = tmp_path / "restarted.txt"
    path.write_text(restarted_copy(RESTART_AFTER))
    return path


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _json(path: Path) -> dict:
    return json.loads(_run("report", "--format", "json", str(path)))


def test_report_json_lists_the_restart_column_and_counts_the_new_values(restarted: Path) -> None:
    (stream,) = _json(restarted)["streams"]
    (original,) = _json(EXAMPLE)["streams"]
    assert stream["resets"] == [RESTART_AFTER]
    assert stream["gaps"] == [] and original["resets"] == [] and original["gaps"] == []
    # A restart changes the counters, not what happened: every column is the original's.
    assert stream["columns"] == original["columns"] == 71
    assert stream["buckets"] == original["buckets"]
    np.testing.assert_allclose(stream["frequency"], original["frequency"], rtol=1e-12)
    assert stream["total"]["events"] == original["total"]["events"]


def test_existing_report_keys_keep_their_values(restarted: Path) -> None:
    (stream,) = _json(restarted)["streams"]
    for key in ("stream", "columns", "start", "end", "buckets", "frequency", "intensity", "intensity_exact", "total",
                "errors", "bands", "bimodal", "tail", "episodes"):
        assert key in stream, key


def test_text_report_lists_resets(restarted: Path) -> None:
    text = _run("report", str(restarted))
    assert re.search(rf"counter reset.* column {RESTART_AFTER}\b", text), text
    assert "reset" not in _run("report", str(EXAMPLE))


def _gap_recording(tmp_path: Path) -> Path:
    stream = StreamId("svc", "bpf", "microsec")
    text = ""
    for k in range(6):
        counts = np.zeros(64, dtype=np.int64)
        counts[5 + k % 3] = 10 + k
        flags = ["gap"] if k == 2 else ["reset"] if k == 4 else []
        text += format_record(stream, 1000.0 + k + 1, counts, start=1000.0 + k, per_interval=True, flags=flags)
    path = tmp_path / "gaps.txt"
    path.write_text(text)
    return path


def test_report_json_lists_gaps_and_resets_of_a_recording(tmp_path: Path) -> None:
    path = _gap_recording(tmp_path)
    (stream,) = _json(path)["streams"]
    assert stream["gaps"] == [2] and stream["resets"] == [4]
    text = _run("report", str(path))
    assert re.search(r"gap.* column 2\b", text), text


def _marks(frame: str, width: int) -> list[tuple[int, str]]:
    """(cell index, mark) of the marked cells under each map of a plain frame (cells start under the title)."""
    lines = frame.splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.startswith("Latency") and "heat map" in line:
            start = line.index(line.split()[1])
            mark_line = next(x for x in lines[i + 1:] if "x=time" in x or x.strip().startswith("marks"))
            if not mark_line.strip().startswith("marks"):
                out.append((-1, ""))
                continue
            cells = mark_line[start: start + width]
            out += [(j, ch) for j, ch in enumerate(cells) if ch in "RG"]
    return out


def test_plain_frame_marks_the_reset_column(restarted: Path) -> None:
    frame = _run("--plain", "--once", "-n", "90", str(restarted))
    pad = 90 - 71
    assert _marks(frame, 90) == [(pad + RESTART_AFTER, "R"), (pad + RESTART_AFTER, "R")], frame
    assert "marks" not in _run("--plain", "--once", "-n", "90", str(EXAMPLE))


def test_plain_frame_marks_gaps(tmp_path: Path) -> None:
    frame = _run("--plain", "--once", "-n", "10", str(_gap_recording(tmp_path)))
    assert _marks(frame, 10) == [(4 + 2, "G"), (4 + 4, "R")] * 2, frame


def test_svg_and_html_mark_the_reset_column(restarted: Path, tmp_path: Path) -> None:
    svg = _run("report", "--format", "svg", str(restarted))
    marks = re.findall(r'<rect class="mark (\w+)[^"]*" data-col="(\d+)"', svg)
    assert marks == [("reset", str(RESTART_AFTER))] * 2, marks
    assert 'class="mark' not in _run("report", "--format", "svg", str(EXAMPLE))
    out = tmp_path / "r.html"
    _run("report", "--format", "html", "-o", str(out), str(restarted))
    page = out.read_text()
    assert len(re.findall(r'class="mark reset', page)) == 2
    assert re.search(rf"counter reset.* column {RESTART_AFTER}\b", page)
