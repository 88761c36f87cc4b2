"""Exports of a selection: collapsed stacks (flamegraph.pl input) and speedscope JSON ("sampled" profiles).

Collapsed stacks: one line per stack, `root;...;leaf count`, frames as `function (file:line)`
(`;` inside a frame becomes `,`, line breaks become spaces, so every line splits back). Speedscope:
https://www.speedscope.app/file-format-schema.json, one "sampled" profile per thread in time order,
stacks root first as indices into the shared frames, consecutive equal stacks merged, weights in
seconds (samples × 1/rate).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from latencymap import __version__
from latencymap.core.sanitize import clean_label
from latencymap.profiling.samples import Sample, split_frame
from latencymap.profiling.store import ProfileStore

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
FORMATS = ("collapsed", "speedscope")


def _clean(frame: str) -> str:
    """A frame as a collapsed line holds it: no `;` (the separator), no line end, no control character (a function
    named with an escape sequence would drive the terminal the export is written to)."""
    return clean_label(frame.replace(";", ",").replace("\r", " ").replace("\n", " "))


def collapsed_text(counts: Mapping[tuple[str, ...], int]) -> str:
    """`frame;frame;frame count` lines, sorted by stack (empty stacks skipped)."""
    lines = [f"{';'.join(_clean(f) for f in stack)} {count}"
             for stack, count in sorted(counts.items()) if stack and count > 0]
    return "".join(line + "\n" for line in lines)


def speedscope_doc(samples: Sequence[Sample], name: str) -> dict[str, Any]:
    """A speedscope file: shared frames, one sampled profile per thread."""
    frames: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    by_thread: dict[tuple[int, int], list[Sample]] = {}
    for sample in samples:
        by_thread.setdefault((sample.pid, sample.tid), []).append(sample)
    profiles = []
    for (pid, tid), thread_samples in by_thread.items():
        stacks: list[list[int]] = []
        weights: list[float] = []
        previous: tuple[str, ...] | None = None
        for sample in thread_samples:
            if sample.stack == previous:
                weights[-1] += sample.weight
                continue
            ids = []
            for frame in sample.stack:
                if frame not in index:
                    function, path, line = split_frame(frame)
                    entry: dict[str, Any] = {"name": function}
                    if path:
                        entry["file"] = path
                    if line is not None:
                        entry["line"] = line
                    index[frame] = len(frames)
                    frames.append(entry)
                ids.append(index[frame])
            stacks.append(ids)
            weights.append(sample.weight)
            previous = sample.stack
        weights = [round(w, 9) for w in weights]
        profiles.append({"type": "sampled", "name": f"pid {pid} thread {tid}", "unit": "seconds",
                         "startValue": 0, "endValue": round(sum(weights), 9), "samples": stacks, "weights": weights})
    return {"$schema": SPEEDSCOPE_SCHEMA, "version": "0.0.1", "name": name, "exporter": f"latencymap {__version__}",
            "activeProfileIndex": 0, "shared": {"frames": frames}, "profiles": profiles}


def export_range(store: ProfileStore, t0: float, t1: float, fmt: str, name: str) -> str:
    """The samples of [t0, t1) as collapsed stacks or speedscope JSON text."""
    if fmt == "collapsed":
        return collapsed_text(store.stack_counts(t0, t1))
    if fmt == "speedscope":
        return json.dumps(speedscope_doc(store.samples(t0, t1), name)) + "\n"
    raise ValueError(f"unknown profile export format {fmt!r}; expected one of {', '.join(FORMATS)}")


def write_export(store: ProfileStore, t0: float, t1: float, fmt: str, path: Path, name: str) -> Path:
    """Write one export to `path`; returns it."""
    path.write_text(export_range(store, t0, t1, fmt, name), encoding="utf-8")
    return path
