"""A compressed input cut before anything could be read from it is said to be so the same way whatever the compressor
(and whether a piece of a line came out before the cut or not), and fails as an input of which no record could be
read (exit 1); a complete but empty one is no data (exit 0)."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from latencymap.core.errors import NothingReadable
from latencymap.core.model import Notice
from latencymap.flow.inputs import CutShort
from latencymap.flow.pipeline import column_flow
from latencymap.plugins import load_registry

SAID = "the compressed data ends early (cut short or corrupt): nothing could be decompressed"


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


CUTS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda d: gzip.compress(d)[:40],  # the header and a little of the stream: nothing comes out
    "bzip2": lambda d: bz2.compress(d)[:-20],  # its only block cut: bzip2 gives a block whole or nothing
    "xz": lambda d: lzma.compress(d)[:50],  # a piece of the first record comes out
    "zstd": lambda d: _zstd(d)[:100],  # its first frame cut: its header says how much it holds
}


def run(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", *map(str, args)], capture_output=True, timeout=60,
                          input=stdin.decode("latin-1") if stdin is not None else None, text=True,
                          encoding="latin-1", env={**os.environ, "NO_COLOR": "1"})


def flow(path: str, stdin: io.BytesIO | None = None) -> tuple[list[object], str]:
    items: list[object] = []
    with pytest.raises(NothingReadable) as err:
        items.extend(column_flow([path], load_registry(), stdin=stdin))
    return items, str(err.value)


@pytest.mark.parametrize("compressor", sorted(CUTS))
def test_cut_before_anything_is_said_the_same_way_and_fails(example_data: Path, tmp_path: Path,
                                                            compressor: str) -> None:
    cut = tmp_path / f"cut.{compressor}"
    cut.write_bytes(CUTS[compressor](example_data.read_bytes()))
    items, message = flow(str(cut))
    assert message == f"{cut}: {SAID}"
    assert any(isinstance(item, CutShort) for item in items)
    assert not any(isinstance(i, Notice) and "empty input" in i.message for i in items)
    r = run("report", cut)
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("No data.") and r.stderr.strip().splitlines()[-1] == f"latencymap: {cut}: {SAID}"
    piped = run("report", stdin=cut.read_bytes())
    assert piped.returncode == 1 and piped.stderr.strip().splitlines()[-1] == f"latencymap: <stdin>: {SAID}"


def test_a_recording_cut_inside_its_header_line_is_cut_short_not_of_an_unknown_format(example_data: Path,
                                                                                    tmp_path: Path) -> None:
    rec = tmp_path / "rec.txt"
    assert run("--plain", "--once", "--record", rec, example_data).returncode == 0
    cut = tmp_path / "rec.xz"
    cut.write_bytes(lzma.compress(rec.read_bytes())[:50])  # decompresses to `# latencymap-r`: no format tells
    assert lzma.LZMADecompressor().decompress(cut.read_bytes()).startswith(b"# latencymap")
    assert flow(str(cut))[1] == f"{cut}: {SAID}"
    r = run("report", cut)
    assert r.returncode == 1 and "unrecognised" not in r.stderr and r.stderr.endswith(f"{cut}: {SAID}\n")


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress, _zstd])
def test_a_complete_empty_compressed_input_is_no_data(tmp_path: Path, compress: Callable[[bytes], bytes]) -> None:
    empty = tmp_path / "empty.packed"
    empty.write_bytes(compress(b"\n"))
    items = list(column_flow([str(empty)], load_registry()))
    assert [(type(i), getattr(i, "message", "")) for i in items] == [(Notice, f"{empty}: empty input, nothing to read")]
    r = run("report", empty)
    assert r.returncode == 0 and "No data." in r.stdout


def test_an_input_that_is_not_compressed_and_not_of_a_format_is_still_unknown(tmp_path: Path) -> None:
    odd = tmp_path / "odd.txt"
    odd.write_text("# latencymap-r")
    r = run("report", odd)
    assert r.returncode == 2 and "unrecognised input format" in r.stderr
