"""Damaged Spark event logs, made from copies of the real fixtures: a corrupt byte in an lz4, zstd or snappy file, a
missing or empty file of a rolling log, a line that is no JSON. What cannot be read is said (file, byte or line),
counted as skipped (so that `--strict` stops), and reading goes on past it."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from latencymap.cli.main import main
from latencymap.sources.spark.blocks import Span
from latencymap.sources.spark.codecs import LZ4_HEADER, LZ4_HEADER_LEN, LZ4_MAGIC, Lz4BlockDecoder, xxh32
from latencymap.sources.spark.ingest import split, take_in
from latencymap.sources.spark.parse import EventParser
from latencymap.sources.spark.worker import answers_for

SPARK = Path(__file__).resolve().parents[3] / "fixtures" / "spark"
APP = json.loads((SPARK / "expected.json").read_text())["app_id"]
#: Tasks that ended in the fixtures' application.
TASKS = 85


def report(path: Path, *flags: str) -> tuple[int, dict[str, Any] | None, str]:
    """(exit code, the JSON report, stderr) of `latencymap report --format json [FLAGS] PATH`."""
    r = CliRunner().invoke(main, ["report", "--format", "json", *flags, str(path)])
    return r.exit_code, json.loads(r.stdout) if r.exit_code == 0 else None, r.stderr


def flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def events(rep: dict[str, Any]) -> int:
    return int(rep["streams"][0]["total"]["events"])


def lz4_blocks(data: bytes) -> list[tuple[int, int, int, int, int]]:
    """(offset, token, compressed length, decompressed length, checksum) of each block of an lz4-java stream."""
    out, pos = [], 0
    while pos < len(data):
        assert data[pos:pos + 8] == LZ4_MAGIC
        token, clen, dlen, check = struct.unpack_from(LZ4_HEADER, data, pos + 8)
        out.append((pos, token, clen, dlen, check))
        pos += LZ4_HEADER_LEN + clen
    return out


def test_every_block_of_the_real_lz4_log_passes_its_checksum() -> None:
    import lz4.block

    check = xxh32()
    assert check is not None
    data = (SPARK / "lz4" / f"{APP}.lz4").read_bytes()
    blocks = lz4_blocks(data)
    assert len(blocks) > 10
    for pos, _token, clen, dlen, checksum in blocks:
        if dlen:  # (the 0/0 block that ends the stream has checksum 0)
            body = data[pos + LZ4_HEADER_LEN:pos + LZ4_HEADER_LEN + clen]
            assert check(lz4.block.decompress(body, uncompressed_size=dlen)) == checksum
    out, gap = Lz4BlockDecoder().step(data)
    assert gap is None and out == (SPARK / "plain" / APP).read_bytes()


def test_a_corrupt_lz4_block_is_told_and_its_tasks_counted_lost(tmp_path: Path) -> None:
    log = tmp_path / f"{APP}.lz4"
    shutil.copy(SPARK / "lz4" / f"{APP}.lz4", log)
    flip(log, 40_000)
    bad = max(pos for pos, *_ in lz4_blocks((SPARK / "lz4" / f"{APP}.lz4").read_bytes()) if pos <= 40_000)
    code, rep, _ = report(log)
    assert code == 0 and rep is not None
    said = rep["errors"]["messages"]
    assert any(f"spark: {log}: bytes {bad:,} to " in m and "checksum" in m for m in said), said
    lost = TASKS - events(rep)
    assert lost > 0 and f"spark: {lost} tasks lost with the missing or damaged parts of the log" in " ".join(said)
    assert rep["errors"]["skipped_records"] >= lost
    code, _, err = report(log, "--strict")
    assert code == 2 and f"{log}: bytes {bad:,} to " in err


def test_a_damaged_lz4_header_is_passed_to_the_next_block(tmp_path: Path) -> None:
    data = (SPARK / "lz4" / f"{APP}.lz4").read_bytes()
    bad = lz4_blocks(data)[3][0]
    log = tmp_path / f"{APP}.lz4"
    log.write_bytes(data)
    flip(log, bad + 2)  # its magic
    code, rep, _ = report(log)
    assert code == 0 and rep is not None
    assert any(f"bytes {bad:,} to {lz4_blocks(data)[4][0]:,} could not be decoded" in m
               for m in rep["errors"]["messages"]), rep["errors"]
    assert 0 < events(rep) < TASKS


@pytest.mark.parametrize(("layout", "at"), [("zstd", 20_000), ("snappy", 40_000)])
def test_a_corrupt_zstd_or_snappy_byte_loses_only_its_frame_or_block(tmp_path: Path, layout: str, at: int) -> None:
    if layout == "zstd":
        log = tmp_path / f"eventlog_v2_{APP}"
        shutil.copytree(SPARK / "zstd" / f"eventlog_v2_{APP}", log)
        damaged = sorted(log.glob("events_1_*"))[0]
    else:
        log = damaged = tmp_path / f"{APP}.snappy"
        shutil.copy(SPARK / "snappy" / f"{APP}.snappy", log)
    flip(damaged, at)
    code, rep, _ = report(log)
    assert code == 0 and rep is not None
    told = [m for m in rep["errors"]["messages"] if m.startswith(f"spark: {damaged}: bytes ")]
    assert len(told) == 1 and "could not be decoded and were skipped" in told[0]
    start = int(told[0].split("bytes ")[1].split(" to ")[0].replace(",", ""))
    assert start <= at, told
    assert events(rep) == TASKS  # the stretch lost held no TaskEnd; what follows it (and events_2, 3) was read
    assert {s["stage"] for s in rep["source"]["stages"]} == {0, 1, 2, 3, 4}
    assert report(log, "--strict")[0] == 2


def test_the_worker_takes_in_the_damage_of_its_part(tmp_path: Path) -> None:
    log = tmp_path / f"{APP}.lz4"
    shutil.copy(SPARK / "lz4" / f"{APP}.lz4", log)
    flip(log, 60_000)
    alone = EventParser()
    tasks = alone.read_spans([Span(log)])
    mine, theirs = split([Span(log)], 0.3)
    assert theirs and theirs[0].start < 60_000
    both = EventParser()
    got = both.read_spans(mine)
    got += take_in(answers_for(theirs), theirs, both)
    assert got == tasks and both.damage == alone.damage and len(alone.damage) == 1


@pytest.mark.parametrize("damage", ["missing 2", "missing 1", "empty 2"])
def test_a_missing_or_empty_file_of_a_rolling_log_is_told(tmp_path: Path, damage: str) -> None:
    log = tmp_path / f"eventlog_v2_{APP}"
    shutil.copytree(SPARK / "rolling" / f"eventlog_v2_{APP}", log)
    how, index = damage.split()
    target = next(log.glob(f"events_{index}_*"))
    if how == "missing":
        target.unlink()
    else:
        target.write_bytes(b"")
    code, rep, _ = report(log)
    assert code == 0 and rep is not None
    said = " | ".join(rep["errors"]["messages"])
    if how == "missing":
        assert f"spark: {log}: events file {index} of the rolling log is missing" in said
    else:
        assert f"spark: {target}: empty, though later events files follow" in said
    lost = TASKS - events(rep)
    assert lost > 0 and f"spark: {lost} tasks lost" in said
    unfinished = [s for s in rep["source"]["stages"] if s["status"] == "unfinished"]
    assert all(f"events file {index} is {'missing' if how == 'missing' else 'empty'}" in s["unfinished_because"]
               for s in unfinished)
    if index == "2":
        assert [s["stage"] for s in unfinished] == [2]
    text = CliRunner().invoke(main, ["report", str(log)]).stdout
    assert "still running" not in text
    code, _, err = report(log, "--strict")
    assert code == 2 and (f"events file {index} of the rolling log is missing" in err or f"{target}: empty" in err)


def test_a_junk_line_is_told_with_its_file_and_line(tmp_path: Path) -> None:
    lines = (SPARK / "plain" / APP).read_bytes().splitlines(keepends=True)
    log = tmp_path / APP
    log.write_bytes(b"".join([*lines[:29], b"garbage, not a JSON line\n", *lines[29:]]))
    code, rep, _ = report(log)
    assert code == 0 and rep is not None
    assert events(rep) == TASKS and rep["errors"]["skipped_records"] == 1
    assert any(f"{log} line 30: non-JSON line not read" in m for m in rep["errors"]["messages"])
    assert report(log, "--strict")[0] == 2


def test_the_shipped_fixtures_read_whole_and_say_nothing() -> None:
    for layout in ("plain", "zstd", "lz4", "snappy", "rolling"):
        code, rep, _ = report(SPARK / layout, "--strict")
        assert code == 0 and rep is not None and events(rep) == TASKS
        assert rep["errors"]["skipped_records"] == 0, (layout, rep["errors"])
