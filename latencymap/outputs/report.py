"""`latencymap report`: a whole input analysed with no UI, as JSON (a stable contract) or text."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from latencymap.analysis.summary import stream_diagnosis
from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.percentiles import PERCENTILE_NAMES, PERCENTILES
from latencymap.core.sanitize import clean_text
from latencymap.core.units import format_duration, format_number


def _num(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def stream_report(hist: StreamHistory, acc: Accumulator) -> dict[str, Any]:
    """The JSON object of one stream."""
    used = hist.used_slots()
    lo, hi = used if used else (0, -1)
    slots = slice(lo, hi + 1)
    total = hist.totals()
    start = float(hist.meta_in("start", slice(0, 1))[0]) if hist.n else None
    end = float(hist.meta_in("end", slice(hist.n - 1, None))[0]) if hist.n else None
    return {
        "stream": {"label": hist.stream.label, "datasource": hist.stream.datasource, "unit": hist.stream.unit},
        "columns": hist.n,
        "start": start,
        "end": end,
        "buckets": [{"low": float(a), "high": float(b)}
                    for a, b in zip(hist.low[slots], hist.high[slots], strict=True)],
        "frequency": hist.frequency()[:, slots].tolist(),
        "intensity": hist.intensity()[:, slots].tolist(),
        "intensity_exact": hist.exact,
        "total": {
            "events": total.events,
            "time_s": total.time_s,
            "mean_s": _num(total.mean_s),
            **{f"{PERCENTILE_NAMES[q]}_s": _num(total.percentiles[q]) for q in PERCENTILES},
        },
        "errors": {"skipped_records": acc.skipped, "messages": list(acc.messages)},
        **stream_diagnosis(hist).to_json(),
    }


def build_report(acc: Accumulator) -> dict[str, Any]:
    """The whole report: one object per stream."""
    return {
        "streams": [stream_report(h, acc) for h in acc.streams.values()],
        "errors": {"skipped_records": acc.skipped, "messages": list(acc.messages)},
    }


def report_text(acc: Accumulator) -> str:
    """A short human summary of every stream."""
    out: list[str] = []
    for hist in acc.streams.values():
        s = hist.stream
        out.append(f"== {clean_text(s.label) or '(no label)'}  [{clean_text(s.datasource)}, {s.unit}]")
        if hist.n == 0:
            out.append("   no intervals (a single record is only a baseline)")
            continue
        t = hist.totals()
        span = float(hist.meta_in("end", slice(hist.n - 1, None))[0] - hist.meta_in("start", slice(0, 1))[0])
        rate = t.events / t.duration_s if t.duration_s else float("nan")
        how = "exact" if hist.exact else "estimated from bucket midpoints"
        out.append(f"   {hist.n} intervals over {span:.1f}s: {t.events} events ({format_number(rate)}/s), "
                   f"{t.time_s:.4g}s waited ({how})")
        pcts = "  ".join(f"p{f'{q * 100:g}'.replace('.', '')} {format_duration(v)}" for q, v in t.percentiles.items())
        out.append(f"   mean {format_duration(t.mean_s)}  {pcts}")
        out += [f"   {line}" for line in stream_diagnosis(hist).summary_lines()]
        out += _bucket_table(hist, t.counts)
    if acc.skipped:
        out.append(f"Skipped records: {acc.skipped}")
        out += [f"   {clean_text(m, 300)}" for m in acc.messages[:10]]
    if not acc.streams:
        out.append("No data.")
    return "\n".join(out) + "\n"


def _bucket_table(hist: StreamHistory, counts: np.ndarray) -> list[str]:
    used = hist.used_slots()
    if used is None:
        return []
    lo, hi = used
    total_time = hist.time_in().sum(axis=0)
    events, spent = counts.sum(), total_time.sum()
    rows = ["   bucket                 events   %events    %time"]
    for s in range(lo, hi + 1):
        rng = f"{format_duration(float(hist.low[s]))}–{format_duration(float(hist.high[s]))}"
        pe = 100 * counts[s] / events if events else 0
        pt = 100 * total_time[s] / spent if spent else 0
        rows.append(f"   {rng:<18} {int(counts[s]):>10}   {pe:6.2f}%  {pt:6.2f}%")
    return rows


def straggler_lines(stragglers: list[dict[str, Any]]) -> list[str]:
    """Text lines for straggler findings: the stragglers API's form or a source's own (Spark tasks)."""
    if not stragglers:
        return []
    out = [f"Stragglers: {len(stragglers)}"]
    for s in stragglers[:20]:
        name = s.get("key") or f"task {s.get('index')} (id {s.get('task_id')})"
        group = s.get("group") or f"stage {s.get('stage')}"
        median = s.get("reference_s") or s.get("group_median_s", s.get("stage_median_s"))
        ratio = s.get("ratio") or float("inf")
        out.append(f"   {clean_text(str(name))} in {clean_text(str(group))}: {format_duration(s['duration_s'])}, "
                   f"{ratio:.1f}x the reference {format_duration(median)}")
    return out
