"""The analysis of the sources inputs are read through (Spark event logs given as paths): for `report` and the view."""

from __future__ import annotations

import math
from typing import Any

from latencymap.core.model import StreamId
from latencymap.plugins import Source, TextFormat

#: A source and the streams of its input shown under another name (`TextFormat.shown_as`).
Analysed = list[tuple[Source, dict[StreamId, StreamId]]]


def analysed_sources(readers: list[TextFormat]) -> Analysed:
    """The sources the inputs were read through (Spark event logs given as paths), in input order, for their analysis;
    each with the streams of its input shown under another name."""
    return [(reader.source, reader.shown_as) for reader in readers if reader.source is not None]


def shown_stream(source: Source, shown: dict[StreamId, StreamId], straggler: dict[str, Any]) -> StreamId | None:
    """The stream that counted a straggler's task (the source's `straggler_stream`), under the name its input showed
    it (`shown`); None where none did."""
    stream = source.straggler_stream(straggler) if hasattr(source, "straggler_stream") else None
    return shown.get(stream, stream) if stream is not None else None


def run_name(source: Source, extra: dict[str, Any]) -> str:
    """The input a source read, and its application, as read: `LOG (NAME ID)`."""
    app = extra.get("application") or {}
    who = " ".join(str(app[k]) for k in ("name", "id") if app.get(k))
    return f"{source.options.get('target', '')}{f' ({who})' if who else ''}"


class InputAnalyses:
    """The analysis of the sources the inputs are read through, as the TUI asks for it (`analysis`, then
    `straggler_stream` of the stragglers it lists): known once an input read through one has given its columns."""

    def __init__(self, readers: list[TextFormat]) -> None:
        #: The formats the inputs are read with, as the flow appends them (`input_flow`).
        self.readers = readers
        #: The source and shown streams of each straggler of the last analysis, by its id (the dict kept with it).
        self._whose: dict[int, tuple[dict[str, Any], Source, dict[StreamId, StreamId]]] = {}

    def analysis(self) -> dict[str, Any] | None:
        """None while no input is read through a source with an analysis; one input's analysis as its source gives
        it; several's stragglers (slowest ratio first, each group named by its input), warm-up tasks kept apart (so
        named) and stages."""
        done = [(s, shown, s.analysis()) for s, shown in analysed_sources(self.readers) if hasattr(s, "analysis")]
        self._whose = {}
        if not done:
            return None
        if len(done) == 1:
            source, shown, found = done[0]
            self._whose = {id(s): (s, source, shown) for key in ("stragglers", "warmup") for s in found.get(key) or []}
            return found
        stragglers: list[dict[str, Any]] = []
        warmup: list[dict[str, Any]] = []
        stages: list[dict[str, Any]] = []
        for source, shown, found in done:
            run = source.options.get("target", "")
            for key, into in (("stragglers", stragglers), ("warmup", warmup)):
                for s in found.get(key) or []:
                    named = {**s, "group": f"{run} stage {s.get('stage')}.{s.get('attempt', 0)}"}
                    self._whose[id(named)] = (named, source, shown)
                    into.append(named)
            stages += found.get("stages") or []
        stragglers.sort(key=_ratio, reverse=True)
        first = done[0][2]
        return {"stragglers": stragglers, "warmup": warmup, "stages": stages,
                **{k: first[k] for k in ("metric", "analysed") if all(f.get(k) == first.get(k) for *_, f in done)}}

    def straggler_stream(self, straggler: dict[str, Any]) -> StreamId | None:
        """The stream shown that counted a straggler (or a warm-up task kept apart) of the last analysis; None where
        none did."""
        kept = self._whose.get(id(straggler))
        return shown_stream(kept[1], kept[2], straggler) if kept is not None and kept[0] is straggler else None


def _ratio(straggler: dict[str, Any]) -> float:
    """A straggler's ratio to its reference, for the order (none: last)."""
    ratio = straggler.get("ratio")
    return float(ratio) if isinstance(ratio, int | float) and not math.isnan(ratio) else -math.inf
