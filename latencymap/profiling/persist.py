"""Samples in recordings: `# latencymap-profile <json>` lines between records, and a loader for them.

Each line is self-contained (its own stack and thread tables), so a recording cut anywhere keeps
every complete line:
`{"v": 1, "t0": <epoch s>, "threads": [[pid, tid], ...], "stacks": [[frame, ...], ...],
"samples": [[<µs after t0>, <thread index>, <stack index>, <weight µs>], ...]}`, stacks root
first. Lines stay under 60,000 characters (the protocol reader cuts lines at 64 KiB): a single
sample whose stack alone is longer keeps its outermost and innermost frames around one
`… N frames …` frame. Protocol readers (latencymap's and PyLatencyMap's) skip these lines as noise
between records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from latencymap.core.json_input import json_input
from latencymap.profiling.samples import Sample, clean_frame
from latencymap.profiling.store import ProfileStore

TAG = "profile"
PREFIX = f"# latencymap-{TAG} "
MAX_PAYLOAD = 60_000
#: A frame longer than this is cut when a stack must be shortened to fit MAX_PAYLOAD.
MAX_FRAME = 2000
#: The loader reads lines up to this long (one huge stack); longer ones are skipped.
MAX_LINE = 8 * 1024 * 1024
BATCH = 2000


def encode(samples: Sequence[Sample]) -> str:
    """One compact JSON payload for `samples`."""
    t0 = min(s.time for s in samples)
    threads: dict[tuple[int, int], int] = {}
    stacks: dict[tuple[str, ...], int] = {}
    rows = []
    for s in samples:
        th = threads.setdefault((s.pid, s.tid), len(threads))
        st = stacks.setdefault(s.stack, len(stacks))
        rows.append([round((s.time - t0) * 1e6), th, st, round(s.weight * 1e6)])
    doc = {"v": 1, "t0": round(t0, 6), "threads": [list(k) for k in threads], "stacks": [list(k) for k in stacks],
           "samples": rows}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def payloads(samples: Sequence[Sample]) -> Iterator[str]:
    """Payloads for `samples`, split so that each stays under MAX_PAYLOAD where it can."""
    for at in range(0, len(samples), BATCH):
        yield from _split(samples[at: at + BATCH])


def _split(samples: Sequence[Sample]) -> Iterator[str]:
    text = encode(samples)
    if len(text) <= MAX_PAYLOAD:
        yield text
        return
    if len(samples) == 1:
        yield _elided(samples[0])
        return
    half = len(samples) // 2
    yield from _split(samples[:half])
    yield from _split(samples[half:])


def _elided(sample: Sample) -> str:
    """The payload of one sample whose stack is too long, its middle frames replaced by `… N frames …`."""
    stack = tuple(frame[:MAX_FRAME] for frame in sample.stack)
    keep = len(stack)
    while True:
        head = (keep + 1) // 2
        tail = stack[len(stack) - (keep - head):]
        trimmed = (*stack[:head], f"… {len(stack) - keep} frames …", *tail) if keep < len(stack) else stack
        text = encode([replace(sample, stack=trimmed)])
        if len(text) <= MAX_PAYLOAD or keep == 0:
            return text
        keep = keep * 3 // 4


def decode(payload: str) -> list[Sample]:
    """The samples of one payload; ValueError when it is malformed."""
    try:
        doc: Any = json_input(payload)
        t0 = float(doc["t0"])
        threads = [(int(p), int(t)) for p, t in doc["threads"]]
        stacks = [tuple(clean_frame(str(f)) for f in st) for st in doc["stacks"]]
        return [Sample(t0 + dt / 1e6, threads[th][0], threads[th][1], stacks[st], w / 1e6)
                for dt, th, st, w in doc["samples"]]
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise ValueError(f"bad profile line: {err}") from None


def _lines(stream: Any) -> Iterator[str]:
    while True:
        line = stream.readline(MAX_LINE)
        if not line:
            return
        if len(line) == MAX_LINE and not line.endswith("\n"):
            while (rest := stream.readline(MAX_LINE)) and not rest.endswith("\n"):
                pass
            continue
        yield line


def scan(lines: Iterable[str], store: ProfileStore) -> tuple[int, int]:
    """Add the samples of every profile line to `store`; returns (lines read, bad lines skipped)."""
    good = bad = 0
    for line in lines:
        if not line.startswith(PREFIX):
            continue
        try:
            store.add(decode(line[len(PREFIX):]))
            good += 1
        except ValueError:
            bad += 1
    return good, bad


def recorded_payloads(paths: Iterable[str]) -> Iterator[str]:
    """The profile payloads of the recordings at `paths`, as recorded (their frames cleaned as `decode` cleans
    them), for a recording made of them; malformed lines are left out (`load_profile` counts them)."""
    from latencymap.core.errors import InputError
    from latencymap.flow.inputs import open_text
    from latencymap.flow.recording import HEADER_PREFIX

    for path in paths:
        try:
            stream, _ = open_text(path)
        except InputError:
            continue
        with stream:
            if not stream.readline(MAX_LINE).startswith(HEADER_PREFIX):
                continue
            for line in _lines(stream):
                if line.startswith(PREFIX):
                    try:
                        yield from payloads(decode(line[len(PREFIX):]))
                    except ValueError:
                        continue


def load_profile(paths: Iterable[str]) -> tuple[ProfileStore | None, list[str]]:
    """A store of the samples in recordings at `paths` (None when they hold none), and messages.

    Only recordings (a `# latencymap-recording` first line) are scanned; standard input (`-`) is
    not: it cannot be read twice.
    """
    from latencymap.core.errors import InputError
    from latencymap.flow.inputs import open_text
    from latencymap.flow.recording import HEADER_PREFIX

    store = ProfileStore()
    messages: list[str] = []
    found = False
    for path in paths:
        if path in ("-", ""):
            continue
        try:
            stream, name = open_text(path)
        except InputError:
            continue  # the input flow reports it
        with stream:
            if not stream.readline(MAX_LINE).startswith(HEADER_PREFIX):
                continue  # only latencymap recordings hold profile lines
            good, bad = scan(_lines(stream), store)
        found = found or good > 0
        if bad:
            messages.append(f"{name}: {bad} malformed profile line{'s' if bad > 1 else ''} skipped")
    return (store if found else None), messages
