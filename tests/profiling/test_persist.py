"""Samples in recordings: Recorder.annotate, profile lines, and loading them back (plain and .zst)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from profiling_support import frame, phase_samples

from latencymap.cli.common import REGISTRY
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.flow.pipeline import input_flow
from latencymap.flow.recording import Recorder
from latencymap.profiling.persist import MAX_PAYLOAD, PREFIX, TAG, decode, encode, load_profile, payloads
from latencymap.profiling.samples import Sample
from latencymap.profiling.session import ProfileSession
from latencymap.profiling.store import ProfileStore

T0 = 1_700_000_000.0


def interval(k: int) -> Interval:
    counts = np.zeros(NSLOTS, dtype=np.int64)
    counts[10] = k + 1
    return Interval(StreamId("s", "bpf", "microsec"), T0 + k, T0 + k + 1, counts)


def test_payloads_round_trip_to_the_microsecond() -> None:
    samples = phase_samples(T0, 0.5, "f") + phase_samples(T0 + 0.0031, 0.5, "g", tid=9)
    back = [s for p in payloads(samples) for s in decode(p)]
    assert len(back) == len(samples)
    for a, b in zip(samples, back, strict=True):
        assert (a.pid, a.tid, a.stack) == (b.pid, b.tid, b.stack)
        assert abs(a.time - b.time) < 2e-6 and abs(a.weight - b.weight) < 1e-6


def test_big_batches_are_split_under_the_protocol_line_limit() -> None:
    deep = tuple(frame(f"level{k}", k, "/very/long/path/" + "x" * 40 + ".py") for k in range(30))
    samples = [Sample(T0 + k / 100, 1, 1, (*deep, frame(f"leaf{k}"))) for k in range(3000)]
    parts = list(payloads(samples))
    assert len(parts) > 2 and all(len(p) <= MAX_PAYLOAD for p in parts)
    assert sum(len(decode(p)) for p in parts) == 3000


def test_a_stack_too_deep_for_one_line_keeps_its_ends_and_stays_under_the_limit() -> None:
    deep = tuple(frame(f"recurse{k}", k, "/very/long/path/" + "x" * 40 + ".py") for k in range(3000))
    (line, other) = payloads([Sample(T0, 1, 1, deep), Sample(T0 + 0.01, 1, 1, deep[:3])])
    assert len(line) <= MAX_PAYLOAD
    (sample,) = decode(line)
    marker = next(k for k, f in enumerate(sample.stack) if f.startswith("… "))
    tail = sample.stack[marker + 1:]
    assert sample.stack[:marker] == deep[:marker] and tail == deep[len(deep) - len(tail):] and len(tail) >= marker - 1
    assert sample.stack[marker] == f"… {len(deep) - len(sample.stack) + 1} frames …" and marker > 100
    assert decode(other)[0].stack == deep[:3]


@pytest.mark.parametrize("bad", ["{", "{}", '{"t0": 1, "threads": [], "stacks": [], "samples": [[0, 0, 0, 1]]}',
                                 pytest.param("[" * 5000 + "]" * 5000, id="nested-too-deeply")])  # RecursionError
def test_malformed_payloads_raise_value_error(bad: str) -> None:
    with pytest.raises(ValueError):
        decode(bad)


@pytest.mark.parametrize("name", ["rec.txt", "rec.zst"])
def test_annotations_sit_between_records_and_readers_ignore_them(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    rec = Recorder(str(path))
    samples = phase_samples(T0, 3.0, "f")
    for k in range(3):
        rec.write(interval(k))
        for p in payloads(samples[k * 100:(k + 1) * 100]):
            rec.annotate(TAG, p)
    rec.close()
    rec.annotate(TAG, encode(samples[:1]))  # after close: nothing, no error
    intervals = [i for i in input_flow([str(path)], REGISTRY) if isinstance(i, Interval)]
    assert [int(i.counts[10]) for i in intervals] == [1, 2, 3]
    store, messages = load_profile([str(path)])
    assert store is not None and messages == [] and len(store) == 300
    if name.endswith(".txt"):
        lines = path.read_text().splitlines()
        assert sum(line.startswith(PREFIX) for line in lines) == 3
        assert lines[lines.index("<end record>") + 1].startswith(PREFIX)


def test_compat_recordings_get_no_annotations(tmp_path: Path) -> None:
    path = tmp_path / "compat.txt"
    rec = Recorder(str(path), compat=True)
    rec.write(interval(0))
    rec.annotate(TAG, encode(phase_samples(T0, 0.1, "f")))
    rec.close()
    assert "latencymap-profile" not in path.read_text()
    assert load_profile([str(path)]) == (None, [])


def test_annotate_refuses_what_would_break_the_line() -> None:
    rec = Recorder("/dev/null", force=True)
    with pytest.raises(ValueError):
        rec.annotate(TAG, "two\nlines")
    with pytest.raises(ValueError):
        rec.annotate("Bad Tag", "x")
    rec.close()


def test_concurrent_annotations_never_split_a_record(tmp_path: Path) -> None:
    path = tmp_path / "busy.zst"
    rec = Recorder(str(path))
    payload = encode(phase_samples(T0, 0.2, "f"))

    def annotate() -> None:
        for _ in range(300):
            rec.annotate(TAG, payload)

    rec.write(interval(0))
    thread = threading.Thread(target=annotate)
    thread.start()
    for k in range(1, 300):
        rec.write(interval(k))
    thread.join()
    rec.close()
    intervals = [i for i in input_flow([str(path)], REGISTRY) if isinstance(i, Interval)]
    assert len(intervals) == 300
    store, _ = load_profile([str(path)])
    assert store is not None and len(store) == 300 * 20


def test_loader_skips_non_recordings_stdin_and_counts_bad_lines(tmp_path: Path, example_data: Path) -> None:
    assert load_profile([str(example_data), "-", str(tmp_path / "missing.txt")]) == (None, [])
    path = tmp_path / "rec.txt"
    rec = Recorder(str(path))
    rec.write(interval(0))
    rec.annotate(TAG, encode(phase_samples(T0, 0.1, "f")))
    rec.annotate(TAG, '{"v": 1}')
    rec.close()
    store, messages = load_profile([str(path)])
    assert store is not None and len(store) == 10
    assert messages == [f"{path}: 1 malformed profile line skipped"]


def test_a_session_holds_profile_lines_until_the_first_record(tmp_path: Path) -> None:
    path = tmp_path / "slow-source.txt"
    rec = Recorder(str(path))
    session = ProfileSession(ProfileStore(), echo=False)
    session.record_to(rec)
    for k in range(250):  # more batches than readers sniff lines, before any record
        session._on_samples(phase_samples(T0 + k, 0.1, "f"))
    assert PREFIX not in path.read_text()
    rec.write(interval(0))
    session._on_samples(phase_samples(T0 + 300, 0.1, "f"))
    session._on_samples(phase_samples(T0 + 301, 0.1, "f"))
    session.stop()
    rec.close()
    lines = path.read_text().splitlines()
    assert lines[1] == "<begin record>" and sum(line.startswith(PREFIX) for line in lines) == 252
    intervals = [i for i in input_flow([str(path)], REGISTRY) if isinstance(i, Interval)]
    assert len(intervals) == 1
    store, _ = load_profile([str(path)])
    assert store is not None and len(store) == 252 * 10 and len(session.store) == 252 * 10


def test_a_recorded_process_frame_loses_its_secrets_when_read() -> None:
    """Recordings made before the command lines were cleaned: their secrets reach no export or view."""
    from latencymap.profiling.persist import decode, encode
    from latencymap.profiling.samples import Sample

    frame = 'process 7:"python x.py --password=hunter2 --db postgresql://bob:s3cret@db/t --hf-token hf_SECRETTOKEN" ()'
    (sample,) = decode(encode([Sample(1.0, 7, 7, (frame, "main (/x.py:1)"))]))
    assert sample.stack == ('process 7:"python x.py --password=*** --db postgresql://db/t --hf-token ***" ()',
                            "main (/x.py:1)")
