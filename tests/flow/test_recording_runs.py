"""Recordings of several inputs read in turn (streams one after another, each over the same seconds): windows and
pace by the recording's time; frames that carry a checksum; the notes of the recorded run kept in the recording."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zstandard
from zstd_support import blocks

from latencymap.core.accumulator import Accumulator
from latencymap.core.errors import NothingReadable
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.flow.pipeline import input_flow
from latencymap.flow.recording import MAX_NOTES, RECORDS_PER_FRAME, Recorder, recorded, windowed
from latencymap.flow.replay import ReplayClock
from latencymap.plugins import load_registry
from latencymap.protocol.grammar import NOTE_PREFIX

REGISTRY = load_registry()

A = StreamId("a", "bpf", "microsec")
B = StreamId("b", "bpf", "microsec")


def run_of(stream: StreamId, n: int, t0: float = 100.0) -> list[Interval]:
    return [Interval(stream, t0 + i, t0 + i + 1, np.full(64, i + 1, dtype=np.int64)) for i in range(n)]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


def kept(flow: list[Interval], start: float | None, end: float | None) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for iv in windowed(iter(flow), start, end):
        assert isinstance(iv, Interval)
        out.setdefault(iv.stream.label, []).append(iv.start)
    return out


def test_a_window_applies_to_each_stream_of_a_recording_that_holds_them_one_after_another() -> None:
    flow = run_of(A, 50) + run_of(B, 50)
    got = kept(flow, 5.0, 10.0)
    assert got == {"a": [105.0, 106.0, 107.0, 108.0, 109.0], "b": [105.0, 106.0, 107.0, 108.0, 109.0]}
    assert kept(flow, None, 3.0) == {"a": [100.0, 101.0, 102.0], "b": [100.0, 101.0, 102.0]}


def test_interleaved_streams_are_one_run_whenever_a_stream_first_comes() -> None:
    """Streams read together (two disks) share the window of the first interval, however late one starts."""
    a, b = run_of(A, 40), run_of(B, 20, t0=120.0)
    flow = sorted(a + b, key=lambda iv: (iv.end, iv.stream.label))
    got = kept(flow, 25.0, 30.0)
    assert got == {"a": [125.0, 126.0, 127.0, 128.0, 129.0], "b": [125.0, 126.0, 127.0, 128.0, 129.0]}


def test_a_window_passes_notices_after_it() -> None:
    flow: list = [*run_of(A, 20), Notice("said at the end", skipped=0)]
    assert [i.message for i in windowed(iter(flow), 0.0, 2.0) if isinstance(i, Notice)] == ["said at the end"]


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def clock(self) -> float:
        return self.now


def test_a_recording_of_streams_one_after_another_is_paced_by_its_time_not_once_per_stream() -> None:
    fake = FakeTime()
    clock = ReplayClock(10.0, sleep=fake.sleep, clock=fake.clock)
    out = list(clock.pace(iter(run_of(A, 50) + run_of(B, 50))))
    assert len(out) == 100
    assert fake.now == pytest.approx(49 / 10)  # 49 s of recording at ×10, not 9.8 s
    assert clock.position == 150.0


def test_replay_of_a_recording_of_two_inputs_keeps_both_in_the_window(tmp_path: Path) -> None:
    inputs = []
    for label in ("a", "b"):
        path = tmp_path / f"{label}.txt"
        path.write_text("".join(f"<begin record>\ntimestamp, microsec, {1_700_000_000 + i}000000, t{i}\n"
                                f"latencyunit, microsec\nlabel, {label}\n128, {i * 7}\n<end record>\n"
                                for i in range(30)))
        inputs.append(str(path))
    rec = tmp_path / "two.zst"
    assert cli("--plain", "--once", "--record", str(rec), *inputs).returncode == 0
    done = cli("replay", "--max", "--plain", "--once", "--start", "5", "--end", "10", str(rec))
    assert done.returncode == 0, done.stderr
    labels = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("Label:")]
    assert labels == ["a", "b"]
    assert done.stdout.count("Columns: 5 ") == 2


def frames(data: bytes) -> list[bytes]:
    """The zstd frames of `data`, in order."""
    out, pos = [], 0
    while pos < len(data):
        obj = zstandard.ZstdDecompressor().decompressobj()
        obj.decompress(data[pos:])
        end = len(data) - len(obj.unused_data)
        out.append(data[pos:end])
        pos = end
    return out




def zst_recording(path: Path, checksum: bool = True, layout: str = "blocks") -> bytes:
    """A recording of 30 intervals, as latencymap writes it (`blocks`: a block per record, up to RECORDS_PER_FRAME
    in a frame), or with a frame per record (`frames`: as latencymap wrote them until 2026-11-27; without
    `checksum`, as it wrote them before checksums)."""
    rec = Recorder(str(path))
    rng = np.random.default_rng(5)
    for i in range(30):
        rec.write(Interval(A, 100.0 + i, 101.0 + i, rng.integers(0, 10_000, 64) * (np.arange(64) < 20)))
    rec.close()
    if layout == "frames":
        old = zstandard.ZstdCompressor(level=3, write_checksum=checksum)
        path.write_bytes(b"".join(old.compress(text) for _, _, text in blocks(path.read_bytes()) if text))
    return path.read_bytes()


def report(path: Path) -> tuple[int, dict]:
    done = cli("report", "--format", "json", str(path))
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}


def test_recording_frames_carry_a_checksum(tmp_path: Path) -> None:
    data = zst_recording(tmp_path / "r.zst")
    (frame,) = frames(data)  # the header and 30 records: a frame (of up to RECORDS_PER_FRAME blocks)
    assert zstandard.get_frame_parameters(frame).has_checksum
    assert len(blocks(data)) == 32  # the header, a block per record, the empty last block written at close
    old = zst_recording(tmp_path / "old.zst", layout="frames")
    parts = frames(old)
    assert len(parts) == 31 and all(zstandard.get_frame_parameters(part).has_checksum for part in parts)


def read(path: Path) -> tuple[int, list[str]]:
    """Events and messages of reading `path` as `report` reads it (in this process: many reads)."""
    events, said = 0, []
    try:
        for item in input_flow([str(path)], REGISTRY):
            if isinstance(item, Interval):
                events += int(item.counts.sum())
            else:
                said.append(item.message)
    except NothingReadable as err:
        said.append(str(err))
    return events, said


@pytest.mark.parametrize("layout", ["blocks", "frames"])
def test_a_flipped_bit_in_a_recording_is_never_read_as_other_numbers(tmp_path: Path, layout: str) -> None:
    """Without checksums many flips in a record's frame decode to other counts with no word said; with them, every
    one is told, naming the file (a record a frame, as until 2026-11-27, or a record a block of a frame)."""
    for checksum in (False, True):
        path = tmp_path / f"{checksum}.zst"
        data = zst_recording(path, checksum, "frames" if not checksum else layout)
        whole, said = read(path)
        assert not said
        start, end, _ = blocks(data)[16]  # the 16th record's block (its frame, with a frame per record)
        silent = 0
        for pos in range(start, end):
            flipped = bytearray(data)
            flipped[pos] ^= 0x08
            path.write_bytes(bytes(flipped))
            events, said = read(path)
            if events != whole and not said:
                silent += 1
            elif said:
                assert all(str(path) in m for m in said)
        assert silent > 10 if not checksum else silent == 0


def test_a_recording_without_checksums_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "old.zst"
    data = zst_recording(path, checksum=False, layout="frames")
    assert not any(zstandard.get_frame_parameters(f).has_checksum for f in frames(data))
    code, doc = report(path)
    assert code == 0 and doc["streams"][0]["columns"] == 30 and not doc["errors"]["messages"]


def test_a_frame_that_fails_its_checksum_is_one_skipped_record_named_by_file(tmp_path: Path) -> None:
    """The data of the frame decodes, only its checksum tells: the reader skips that frame (in a recording of a
    frame per record, one record) and reads on (flow/inputs.py reads a zstd input frame by frame)."""
    path = tmp_path / "r.zst"
    data = zst_recording(path, layout="frames")
    parts = frames(data)
    at = sum(len(p) for p in parts[:15])
    flipped = bytearray(data)
    flipped[at + len(parts[15]) - 2] ^= 0x01  # in the frame's checksum itself: the data decodes, the check fails
    path.write_bytes(bytes(flipped))
    _, doc = report(path)
    assert doc["streams"][0]["columns"] == 29 and doc["errors"]["skipped_records"] == 1
    assert any(str(path) in m and "(in a recording, one record)" in m for m in doc["errors"]["messages"])


def test_a_recording_whose_checksum_fails_loses_that_frame_only(tmp_path: Path) -> None:
    """A frame of a recording holds up to RECORDS_PER_FRAME records: all of them are lost (which one is wrong is
    not known), and the records of the frames around it are read."""
    path = tmp_path / "r.zst"
    rec = Recorder(str(path))
    for i in range(RECORDS_PER_FRAME * 3):
        rec.write(run_of(A, 1, t0=100.0 + i)[0])
    rec.close()
    data = path.read_bytes()
    parts = frames(data)
    assert len(parts) == 4
    flipped = bytearray(data)
    flipped[len(parts[0]) + len(parts[1]) - 1] ^= 0x40  # the second frame's checksum
    path.write_bytes(bytes(flipped))
    _, doc = report(path)
    assert doc["streams"][0]["columns"] == 2 * RECORDS_PER_FRAME
    assert doc["errors"]["skipped_records"] == RECORDS_PER_FRAME
    (said,) = doc["errors"]["messages"]
    assert said.startswith(f"{path}: a zstd frame that cannot be decoded (corrupt) at byte {len(parts[0]):,}")
    assert f"(in a recording, up to {RECORDS_PER_FRAME} records)" in said


def test_the_notes_of_the_recorded_run_are_kept_in_the_recording(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    rec = Recorder(str(path))
    flow = [run_of(A, 2)[0], Notice("in.txt: read as bpf", skipped=0), Notice("in.txt: line 9: bad; record skipped"),
            run_of(A, 2)[1]]
    assert len(list(recorded(iter(flow), rec))) == 4
    text = path.read_text()
    notes = [json.loads(line[len(NOTE_PREFIX):]) for line in text.splitlines() if line.startswith(NOTE_PREFIX)]
    assert notes == [{"message": "in.txt: read as bpf", "skipped": 0},
                     {"message": "in.txt: line 9: bad; record skipped", "skipped": 1}]
    assert text.index(NOTE_PREFIX) < text.rindex("<begin record>")  # in its place in the flow
    code, doc = report(path)
    assert code == 0 and doc["errors"] == {"skipped_records": 1, "messages": [  # what the recorded run skipped
        f"{path}: as recorded: in.txt: read as bpf", f"{path}: as recorded: in.txt: line 9: bad; record skipped"]}
    assert cli("--plain", "--once", str(path)).stdout.rstrip().endswith("skipped records: 1")
    strict = cli("report", "--strict", "--format", "json", str(path))  # nothing of the recording itself was skipped
    assert strict.returncode == 0 and json.loads(strict.stdout) == doc
    notes = [Notice(f"in.txt: line {n}: bad; record skipped") for n in (3, 4)]
    list(recorded(iter(notes), Recorder(str(tmp_path / "notes-only.txt"))))
    assert report(tmp_path / "notes-only.txt")[0] == 0  # a recorded skip does not make the recording unreadable


def test_a_note_that_says_what_a_stream_measures_keeps_it_in_the_recording(tmp_path: Path) -> None:
    """A jHiccup log's note (`Notice.measures`) keeps its stream and what it measures in the note line: a recording
    read back marks the stream's history as the log did."""
    path = tmp_path / "r.txt"
    flow = [Notice("in.hlog: logged by jHiccup", skipped=0, measures=(A, "jhiccup")), *run_of(A, 2)]
    list(recorded(iter(flow), Recorder(str(path))))
    (note,) = [json.loads(line[len(NOTE_PREFIX):]) for line in path.read_text().splitlines()
               if line.startswith(NOTE_PREFIX)]
    assert note == {"message": "in.hlog: logged by jHiccup", "skipped": 0, "measures": "jhiccup",
                    "stream": {"label": "a", "datasource": "bpf", "unit": "microsec"}}
    acc = Accumulator()
    acc.add(input_flow([str(path)], REGISTRY))
    assert acc.streams[A].measures == "jhiccup" and acc.streams[A].n == 2


def test_a_recording_keeps_at_most_max_notes_and_counts_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    rec = Recorder(str(path))
    flow: list = [Notice(f"n{i}", skipped=0) for i in range(MAX_NOTES + 7)] + run_of(A, 1)
    list(recorded(iter(flow), rec))
    lines = [line for line in path.read_text().splitlines() if line.startswith(NOTE_PREFIX)]
    assert len(lines) == MAX_NOTES + 1 and "7 more notes of the recorded run" in lines[-1]


def test_a_note_of_what_a_stream_measures_is_kept_past_max_notes(tmp_path: Path) -> None:
    """60 jHiccup logs recorded together give 120 notes (each its `logged by jHiccup` and its lowest-value note):
    past MAX_NOTES the rest were counted, not kept, and the streams after the 50th read back as requests'
    latencies. What a stream measures is part of its data, as its records are: kept; plain notes are still counted."""
    path = tmp_path / "r.txt"
    streams = [StreamId(f"h{i}.hlog", "hdrhistogram", "nanosec") for i in range(MAX_NOTES)]
    flow: list = [n for s in streams for n in (Notice(f"{s.label}: logged by jHiccup", skipped=0,
                                                      measures=(s, "jhiccup")), Notice(f"{s.label}: low", skipped=0))]
    list(recorded(iter(flow + [iv for s in streams for iv in run_of(s, 2)]), Recorder(str(path))))
    lines = [line for line in path.read_text().splitlines() if line.startswith(NOTE_PREFIX)]
    assert len(lines) == 1.5 * MAX_NOTES + 1 and f"{MAX_NOTES // 2} more notes of the recorded run" in lines[-1]
    acc = Accumulator()
    acc.add(input_flow([str(path)], REGISTRY))
    assert {h.measures for h in acc.streams.values()} == {"jhiccup"} and len(acc.streams) == MAX_NOTES


def test_a_compat_recording_keeps_no_notes(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    list(recorded(iter([Notice("x", skipped=0), *run_of(A, 2)]), Recorder(str(path), compat=True)))
    assert NOTE_PREFIX not in path.read_text()


def test_report_of_a_recording_says_what_the_recorded_run_said(tmp_path: Path, example_data: Path) -> None:
    rec = tmp_path / "ex.zst"
    assert cli("--plain", "--once", "--record", str(rec), str(example_data)).returncode == 0
    text = cli("report", str(rec)).stdout
    assert f"{rec}: as recorded: {example_data}: 'db file sequential read latency data from gv$event_histogram' " \
           "has no 'datasource' line: read as bpf" in text


def test_report_of_a_spark_recording_says_where_the_stragglers_are(tmp_path: Path, fixtures: Path) -> None:
    rec = tmp_path / "spark.zst"
    log = fixtures / "spark" / "zstd"
    assert cli("--plain", "--once", "--record", str(rec), str(log)).returncode == 0
    assert "Stragglers:" in cli("report", str(log)).stdout
    text = cli("report", str(rec)).stdout
    assert "Stragglers:" not in text
    assert "a recording keeps the histograms, not Spark's per-task analysis (the stragglers and the per-stage " \
           f"summaries); for them, report what was recorded: latencymap report {log}" in text


def test_an_interval_that_ends_before_one_of_its_stream_written_earlier_is_flagged_overlap(tmp_path: Path) -> None:
    """The run had it in that stream (processes sharing an OpenTelemetry series send overlapping columns): read back
    without a flag it went back into the stream's time, another run shown apart. Flagged `overlap`, it stays in the
    stream; an interval of another stream, or one after every earlier one of its stream, is not flagged."""
    path = tmp_path / "r.txt"
    a = run_of(A, 4)
    flow = [a[0], a[2], a[1], *run_of(B, 1, t0=100.5), a[3], Interval(A, 101.5, 102.0, a[0].counts)]
    list(recorded(iter(flow), Recorder(str(path))))
    records = path.read_text().split("<begin record>")[1:]
    assert ["flags, overlap" in r for r in records] == [False, False, True, False, False, True]
    code, doc = report(path)
    assert code == 0 and [(s["stream"]["label"], s["columns"]) for s in doc["streams"]] == [("a", 5), ("b", 1)]
