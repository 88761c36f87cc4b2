"""Parse `bpftrace -f json` output lines: hist and map events, printf markers, bucket rows to slots.

Observed with bpftrace 0.17: one JSON object per line, `{"type": ..., "data": ...}`. A hist is
`{"@name": [rows]}` or, keyed, `{"@name": {"k1,k2": [rows]}}`; rows are `{"min", "max", "count"}`
with `max` inclusive, and the negative bucket has no `min`. Maps are `{"@name": value}` or
`{"@name": {"k1,k2": value}}`. Multi-part keys are joined with `,`. Blank lines appear for empty maps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Event:
    """One output line: `kind` is the bpftrace type (`hist`, `map`, `printf`, `time`, ...)."""

    kind: str
    name: str = ""
    data: Any = None


def parse_line(line: str) -> Event | None:
    """The event on one output line; None for blank lines. ValueError for text that is not bpftrace JSON."""
    text = line.strip()
    if not text:
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not bpftrace JSON: {text[:120]!r}") from err
    if not isinstance(obj, dict) or "type" not in obj:
        raise ValueError(f"not a bpftrace JSON event: {text[:120]!r}")
    kind, data = str(obj["type"]), obj.get("data")
    if kind in ("hist", "map", "stats", "lhist") and isinstance(data, dict) and len(data) == 1:
        name, value = next(iter(data.items()))
        return Event(kind, name, value)
    return Event(kind, "", data)


def keyed(data: Any) -> dict[str, Any]:
    """A hist's or map's entries by key string (`""` for an unkeyed one)."""
    if isinstance(data, dict):
        return {str(k): v for k, v in data.items()}
    return {"": data}


def split_key(key: str, parts: int) -> list[str]:
    """A joined multi-part key split into `parts` fields (the last one keeps any extra commas)."""
    fields = key.split(",", parts - 1)
    if len(fields) != parts:
        raise ValueError(f"map key {key!r} has not {parts} parts")
    return fields
