"""Exports: collapsed stacks that split back, speedscope JSON valid against our schema of the documented format."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

from profiling_support import SCHEMA, frame, phase_samples
from schema_check import violations

from latencymap.profiling.export import collapsed_text, export_range, speedscope_doc, write_export
from latencymap.profiling.samples import Sample
from latencymap.profiling.store import ProfileStore

T0 = 1_700_000_000.0


def parse_collapsed(text: str) -> dict[tuple[str, ...], int]:
    """Every line must be `frame;frame;... count` with an integer count."""
    out: dict[tuple[str, ...], int] = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        assert stack and count.isdigit(), line
        out[tuple(stack.split(";"))] = int(count)
    return out


def check_speedscope(doc: dict) -> None:
    """Valid against the schema, and consistent: indices in range, one weight per sample."""
    assert violations(doc, SCHEMA) == []
    frames = doc["shared"]["frames"]
    for profile in doc["profiles"]:
        assert len(profile["samples"]) == len(profile["weights"])
        assert all(0 <= i < len(frames) for stack in profile["samples"] for i in stack)
        assert abs(profile["endValue"] - profile["startValue"] - sum(profile["weights"])) < 1e-6


def store_of(samples: list[Sample]) -> ProfileStore:
    store = ProfileStore()
    store.add(samples)
    return store


def test_collapsed_lines_split_back_into_the_same_counts() -> None:
    store = store_of(phase_samples(T0, 1.0, "fast_phase") + phase_samples(T0 + 1.0, 0.5, "slow_phase"))
    parsed = parse_collapsed(export_range(store, T0, T0 + 2, "collapsed", "x"))
    assert parsed == store.stack_counts(T0, T0 + 2)
    assert sum(parsed.values()) == 150
    assert parse_collapsed(export_range(store, T0 + 1, T0 + 2, "collapsed", "x")) == {
        (frame("<module>", 40), frame("main", 30), frame("slow_phase", 10)): 50}


def test_collapsed_frames_cannot_break_the_line_format() -> None:
    text = collapsed_text({("a;b (x.py:1)", "c\nd (y.py:2)"): 3, (): 4, ("z",): 0})
    assert text == "a,b (x.py:1);c d (y.py:2) 3\n"
    # a function named with an escape sequence and a bell turned the terminal red and rang it (`profile-export`)
    assert collapsed_text({("ev\x1b[31mil\x07 (t.py:14)",): 1}) == "ev?[31mil? (t.py:14) 1\n"


def test_speedscope_is_valid_time_ordered_and_weighted_in_seconds() -> None:
    samples = phase_samples(T0, 0.3, "fast_phase") + phase_samples(T0 + 0.3, 0.2, "slow_phase")
    samples += phase_samples(T0, 0.5, "idle", tid=2)
    doc = speedscope_doc(sorted(samples, key=lambda s: s.time), "sel")
    check_speedscope(doc)
    assert len(doc["profiles"]) == 2
    main = doc["profiles"][0]
    names = [[doc["shared"]["frames"][i]["name"] for i in stack] for stack in main["samples"]]
    assert names == [["<module>", "main", "fast_phase"], ["<module>", "main", "slow_phase"]]
    assert main["weights"] == [0.3, 0.2] and main["unit"] == "seconds"
    assert doc["shared"]["frames"][0] == {"name": "<module>", "file": "/app/work.py", "line": 40}


def test_the_schema_check_rejects_broken_documents() -> None:
    doc = speedscope_doc(phase_samples(T0, 0.1, "f"), "sel")
    for breakage in (lambda d: d.pop("shared"), lambda d: d["profiles"][0].update(type="evented"),
                     lambda d: d["profiles"][0].update(unit="minutes"),
                     lambda d: d["profiles"][0]["samples"].append(["0"]),
                     lambda d: d["shared"]["frames"].append({"file": "x.py"})):
        broken = copy.deepcopy(doc)
        breakage(broken)
        assert violations(broken, SCHEMA), breakage


def test_empty_selection_exports_are_still_valid(tmp_path: Path) -> None:
    store = store_of(phase_samples(T0, 0.1, "f"))
    path = write_export(store, T0 + 10, T0 + 11, "speedscope", tmp_path / "e.json", "none")
    check_speedscope(json.loads(path.read_text()))
    assert export_range(store, T0 + 10, T0 + 11, "collapsed", "none") == ""


def test_speedscope_counts_match_the_store() -> None:
    samples = [Sample(T0 + k / 100, 1, 1, (frame("main"), frame("f" if k % 3 else "g"))) for k in range(90)]
    store = store_of(samples)
    doc = json.loads(export_range(store, T0, T0 + 1, "speedscope", "x"))
    check_speedscope(doc)
    (profile,) = doc["profiles"]
    leaf = Counter()
    for stack, w in zip(profile["samples"], profile["weights"], strict=True):
        leaf[doc["shared"]["frames"][stack[-1]]["name"]] += round(w * 100)
    assert leaf == {"f": 60, "g": 30}
