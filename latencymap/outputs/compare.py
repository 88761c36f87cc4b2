"""`latencymap diff`: what changed between a baseline and a candidate, stream by stream.

Streams are paired by identity (label, datasource, unit); when each side has exactly one stream
they are paired whatever their labels. Each side's whole history is pooled into one histogram.
Buckets are matched by their range in seconds (streams of different units rarely share ranges).

Per pair: each bucket's share of the events (frequency share) and of the time (time share) on
both sides and the change in percentage points; percentile and mean deltas and ratios (the report's: a rebinned or
HdrHistogram stream's from its source's own buckets, `stream_total`; one in the open top bucket, its values not
known, is that bucket's low, written `≥low`, its sides listed under `open`, its change a bound or, both sides bounds,
not told); the shift
in octaves (`log2(candidate / baseline)`) of the median and of the mean log2 latency; bands found
in the candidate that overlap no baseline band ("appeared"), and the reverse ("vanished"); and a band present on both
sides (each side's one band overlapping the other's one) whose share of the events or of the time changed a lot
("changed": at least ×`BAND_CHANGE_RATIO` either way, by at least `BAND_MIN_EVENTS_CHANGE` of the events or
`BAND_MIN_TIME_CHANGE` of the time), such as a slow band that went from 1% to 4% of the events.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from latencymap.analysis.bands import Band
from latencymap.analysis.summary import stream_diagnosis
from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.buckets import percentile_duration
from latencymap.core.percentiles import PERCENTILE_NAMES
from latencymap.core.sanitize import clean_text
from latencymap.core.source_totals import SourceTotals
from latencymap.core.units import format_duration, plural
from latencymap.outputs.report import read_errors, read_notes, stream_total

#: Share changes below this (absolute, as a fraction) count as no change.
EPSILON = 1e-9
_STATS = (*PERCENTILE_NAMES.values(), "mean")
#: A band on both sides changed when its share of the events, or of the time, grew or shrank at least this many times
#: ...
BAND_CHANGE_RATIO = 2.0
#: ... by at least this much of the events (1 percentage point), or of the time (10 points): noise in a band of 0.1%
#: or a minor band's time is no change.
BAND_MIN_EVENTS_CHANGE = 0.01
BAND_MIN_TIME_CHANGE = 0.10


def pair_streams(base: Accumulator, cand: Accumulator) -> tuple[list[tuple[StreamHistory, StreamHistory]],
                                                                  list[StreamHistory], list[StreamHistory]]:
    """(pairs, only in baseline, only in candidate)."""
    b, c = list(base.streams.values()), list(cand.streams.values())
    if len(b) == 1 and len(c) == 1:
        return [(b[0], c[0])], [], []
    by_id = {h.stream: h for h in c}
    pairs = [(h, by_id.pop(h.stream)) for h in b if h.stream in by_id]
    paired = {id(p[0]) for p in pairs}
    return pairs, [h for h in b if id(h) not in paired], list(by_id.values())


def _pooled(hist: StreamHistory) -> dict[tuple[float, float], tuple[int, float]]:
    """{(low, high): (events, time)} of every bucket with events over the whole history; events as Python integers,
    exact past 2**53 (as `report` counts them), never rounded through floats."""
    counts = hist.counts.sum(axis=0)
    times = hist.time.sum(axis=0)
    return {(float(hist.low[s]), float(hist.high[s])): (int(counts[s]), float(times[s]))
            for s in np.flatnonzero(counts)}


def _sums(pooled: dict[tuple[float, float], tuple[int, float]]) -> tuple[int, float]:
    """(events, time) of a pooled history."""
    return sum(v[0] for v in pooled.values()), sum(v[1] for v in pooled.values())


def _log2_center(hist: StreamHistory) -> float:
    """Event-weighted mean of log2 of the bucket centres (geometric; the zero bucket counts at half its top)."""
    counts = hist.counts.sum(axis=0).astype(np.float64)
    total = counts.sum()
    if total <= 0:
        return math.nan
    centre = np.where(hist.low > 0, np.sqrt(hist.low * hist.high), hist.high / 2)
    return float((counts * np.log2(centre)).sum() / total)


def _stats(hist: StreamHistory, source: SourceTotals | None) -> tuple[dict[str, float], set[str]]:
    """Percentiles and mean (s) as the report gives them (`stream_total`: a rebinned or HdrHistogram stream's from
    its source's own buckets, `source`), and the percentiles that are a lower bound only (`open`: in the open top
    bucket, its values not known)."""
    total = stream_total(hist.totals(), source, hist.stream.unit, hist.n)
    out = {k: total[f"{k}_s"] for k in _STATS}
    at_least = {k for k in _STATS if f"{k}_s" in total.get("open", ())}
    return {k: math.nan if v is None else float(v) for k, v in out.items()}, at_least


def _open_sides(base: bool, cand: bool) -> dict[str, list[str]]:
    """`{"open": [sides]}`: the sides whose statistic is a lower bound only (the open top bucket's low, as the
    report's `total.open`); nothing when neither is."""
    sides = [side for side, bound in (("baseline", base), ("candidate", cand)) if bound]
    return {"open": sides} if sides else {}


def _num(v: float) -> float | None:
    return None if v is None or math.isnan(v) or math.isinf(v) else float(v)


def _octaves(new: float, old: float) -> float:
    if not (new > 0 and old > 0):
        return math.nan
    return math.log2(new / old)


def _overlaps(a: Band, b: Band) -> bool:
    return a.low_s < b.high_s and b.low_s < a.high_s


def _share_changed(old: float, new: float, least: float) -> bool:
    """True when a share went from `old` to `new` by at least `BAND_CHANGE_RATIO` times either way and `least`."""
    low, high = min(old, new), max(old, new)
    return high - low >= least and high >= BAND_CHANGE_RATIO * low


def bands_changed(base: list[Band], cand: list[Band]) -> list[dict[str, Any]]:
    """The bands present on both sides (a baseline band and the one candidate band overlapping it, which overlaps no
    other baseline band) whose share of the events or of the time changed a lot (`_share_changed`), the largest
    change of the time share first. The band of most events on both sides is left out when another is said: its
    shares only make room for the others'."""
    out, main = [], None
    for b in base:
        over = [o for o in cand if _overlaps(b, o)]
        if len(over) != 1 or sum(_overlaps(o, over[0]) for o in base) != 1:
            continue
        c = over[0]
        if _share_changed(b.events_share, c.events_share, BAND_MIN_EVENTS_CHANGE) or \
                _share_changed(b.time_share, c.time_share, BAND_MIN_TIME_CHANGE):
            out.append({"baseline": b.to_json(), "candidate": c.to_json(),
                        "events_share_change": c.events_share - b.events_share,
                        "time_share_change": c.time_share - b.time_share})
            if b is max(base, key=lambda x: x.events) and c is max(cand, key=lambda x: x.events):
                main = out[-1]
    if main is not None and len(out) > 1:
        out.remove(main)
    return sorted(out, key=lambda x: -abs(x["time_share_change"]))


def compare_streams(base: StreamHistory, cand: StreamHistory,
                    sources: tuple[SourceTotals | None, SourceTotals | None]) -> dict[str, Any]:
    """The JSON object of one pair (see the module docstring); `sources`, each side's own buckets where its source
    has them (`Accumulator.sources`)."""
    pb, pc = _pooled(base), _pooled(cand)
    (eb, tb), (ec, tc) = _sums(pb), _sums(pc)
    buckets = []
    for key in sorted(set(pb) | set(pc)):
        cb, sb = pb.get(key, (0, 0.0))
        cc, sc = pc.get(key, (0, 0.0))
        fb, fc = (cb / eb if eb else 0.0), (cc / ec if ec else 0.0)
        xb, xc = (sb / tb if tb else 0.0), (sc / tc if tc else 0.0)
        buckets.append({"low": key[0], "high": key[1], "baseline_events": cb, "candidate_events": cc,
                        "baseline_events_share": fb, "candidate_events_share": fc, "events_share_change": fc - fb,
                        "baseline_time_share": xb, "candidate_time_share": xc, "time_share_change": xc - xb})
    (sb_, ob), (sc_, oc) = _stats(base, sources[0]), _stats(cand, sources[1])
    stats = {k: {"baseline_s": _num(sb_[k]), "candidate_s": _num(sc_[k]), "delta_s": _num(sc_[k] - sb_[k]),
                 "ratio": _num(sc_[k] / sb_[k]) if sb_[k] else None,
                 **_open_sides(k in ob, k in oc)} for k in _STATS}
    db, dc = stream_diagnosis(base), stream_diagnosis(cand)
    appeared = [b.to_json() for b in dc.bands if not any(_overlaps(b, o) for o in db.bands)]
    vanished = [b.to_json() for b in db.bands if not any(_overlaps(b, o) for o in dc.bands)]
    grown = bands_changed(db.bands, dc.bands)
    shift = _log2_center(cand) - _log2_center(base)
    changed = (any(abs(b["events_share_change"]) > EPSILON or abs(b["time_share_change"]) > EPSILON for b in buckets)
               or bool(appeared or vanished or grown))
    return {
        "baseline": _identity(base, eb, tb), "candidate": _identity(cand, ec, tc),
        "changed": changed,
        "shift_octaves": _num(shift),
        "median_shift_octaves": _num(_octaves(sc_["p50"], sb_["p50"])),
        "percentiles": stats,
        "buckets": buckets,
        "bands_appeared": appeared,
        "bands_vanished": vanished,
        "bands_changed": grown,
        "bimodal": {"baseline": db.bimodal, "candidate": dc.bimodal},
    }


def _identity(hist: StreamHistory, events: int, time_s: float) -> dict[str, Any]:
    s = hist.stream
    return {"label": s.label, "datasource": s.datasource, "unit": s.unit, "columns": hist.n,
            "events": events, "time_s": time_s}


def compare(base: Accumulator, cand: Accumulator) -> dict[str, Any]:
    """The whole diff: pairs plus streams found on one side only."""
    pairs, only_b, only_c = pair_streams(base, cand)
    return {
        "pairs": [compare_streams(b, c, (base.sources.get(b.stream), cand.sources.get(c.stream))) for b, c in pairs],
        "only_in_baseline": [_identity(h, *_sums(_pooled(h))) for h in only_b],
        "only_in_candidate": [_identity(h, *_sums(_pooled(h))) for h in only_c],
        "errors": {"baseline": read_errors(base), "candidate": read_errors(cand)},
    }


def _pp(change: float) -> str:
    return f"{100 * change:+.1f}pp"


def compare_text(result: dict[str, Any]) -> str:
    """The diff for humans. With several pairs, a summary comes first (how many changed, each changed pair with how
    much, the most first); then the changed pairs in that order, then the unchanged ones, one line each."""
    pairs = result["pairs"]
    changed = sorted((p for p in pairs if p["changed"]), key=_how_much)
    several = len(pairs) > 1
    out = _summary(result, changed) if several else []
    for pair in changed if several else pairs:
        out += _pair_lines(pair)
    if several:
        out += [f"{_heading(p)}  no change: {_events_text(p, short=True)}" for p in pairs if not p["changed"]]
    for key, side in (("only_in_baseline", "baseline"), ("only_in_candidate", "candidate")):
        for s in result[key]:
            out.append(f"== {clean_text(s['label']) or '(no label)'}: only in the {side}")
    if not out:
        out.append("No data on either side.")
    for side, errors in result["errors"].items():  # what reading each side skipped and said
        out += read_notes(errors["skipped_records"], errors["messages"], whose=f" ({side})",
                          left_out=errors.get("messages_left_out", 0))
    return "\n".join(out) + "\n"


def _name(pair: dict[str, Any]) -> str:
    b, c = pair["baseline"], pair["candidate"]
    name = clean_text(c["label"]) or "(no label)"
    if b["label"] != c["label"]:
        name = f"{clean_text(b['label']) or '(no label)'} → {name}"
    return name


def _heading(pair: dict[str, Any]) -> str:
    b, c = pair["baseline"], pair["candidate"]
    return f"== {_name(pair)}  [{_both(b, c, 'datasource')}, {_both(b, c, 'unit')}]"


def _events_text(pair: dict[str, Any], short: bool = False) -> str:
    """The events and intervals of both sides; `short`, once when they are the same."""
    b, c = pair["baseline"], pair["candidate"]
    if short and (b["events"], b["columns"]) == (c["events"], c["columns"]):
        return f"{plural(int(b['events']), 'event')} in {plural(b['columns'], 'interval')} on both sides"
    return (f"baseline {plural(int(b['events']), 'event')} in {plural(b['columns'], 'interval')}; "
            f"candidate {plural(int(c['events']), 'event')} in {plural(c['columns'], 'interval')}")


def _moved(pair: dict[str, Any]) -> float:
    """The share of the events that changed bucket (half the summed share changes: what one side must move to
    become the other)."""
    return sum(abs(row["events_share_change"]) for row in pair["buckets"]) / 2


def _how_much(pair: dict[str, Any]) -> tuple[float, float, int, str]:
    """The order of changed pairs, the most first: by latency shift (either way), then by the events that changed
    bucket, then by the bands that came or went, each as the summary writes it (its last digits are noise); then by
    name."""
    shift = pair["shift_octaves"]
    return (-round(abs(shift) if shift is not None else 0.0, 2), -round(_moved(pair), 3),
            -(len(pair["bands_appeared"]) + len(pair["bands_vanished"]) + len(pair["bands_changed"])), _name(pair))


def _summary(result: dict[str, Any], changed: list[dict[str, Any]]) -> list[str]:
    """The lines before the pairs: how many changed, and each changed pair with how much, the most first."""
    pairs = result["pairs"]
    only = [f"{len(result[key]):,} only in the {side}" for key, side in
            (("only_in_baseline", "baseline"), ("only_in_candidate", "candidate")) if result[key]]
    head = f"{len(changed):,} of {plural(len(pairs), 'pair')} changed, {len(pairs) - len(changed):,} unchanged"
    out = [head + (f"; {', '.join(only)}" if only else "") + (":" if changed else "")]
    width = min(40, max((len(_name(p)) for p in changed), default=0))
    for pair in changed:
        shift, p99 = pair["shift_octaves"], pair["percentiles"]["p99"]
        how = [f"{shift:+.2f} octaves (×{2 ** shift:.2f})" if shift is not None else "no shift known",
               f"p99 {_dur(p99, 'baseline')} → {_dur(p99, 'candidate')}",
               f"{100 * _moved(pair):.1f}% of events changed bucket"]
        bands = len(pair["bands_appeared"]), len(pair["bands_vanished"]), len(pair["bands_changed"])
        kinds = ("appeared", "vanished", "changed")
        how += [f"{plural(n, 'band')} {what}" for n, what in zip(bands, kinds, strict=True) if n]
        out.append(f"   {_name(pair):<{width}}  {', '.join(how)}")
    return [*out, ""]


def _pair_lines(pair: dict[str, Any]) -> list[str]:
    """One pair in full: its events, percentiles, bands and, when it changed, every bucket's shares."""
    out = [_heading(pair), f"   {_events_text(pair)}"]
    if not pair["changed"]:
        out.append("   no change: same shares in every bucket, same bands")
    shift = pair["shift_octaves"]
    if shift is not None and abs(shift) > EPSILON:
        out.append(f"   latency shifted {shift:+.2f} octaves (×{2 ** shift:.2f}, event-weighted log2 mean)")
    for change in pair["bands_changed"]:  # a band's share is the summary words a shift of the mean can hide
        b, c = change["baseline"], change["candidate"]
        where = _span(c) if _span(b) == _span(c) else f"{_span(b)} → {_span(c)}"
        out.append(f"   band changed: {where}: {_shares(b, c, 'events_share')} of events, "
                   f"{_shares(b, c, 'time_share')} of the time")
    for k, s in pair["percentiles"].items():
        bound = _bound(s)
        ratio = f" ({bound}×{s['ratio']:.2f})" if s["ratio"] is not None and bound is not None else ""
        delta = "" if s["delta_s"] is None or bound is None else \
            bound + _delta(s["delta_s"], s["baseline_s"], s["candidate_s"])
        out.append(f"   {k:<5} {_dur(s, 'baseline'):>9} → {_dur(s, 'candidate'):>9}  {delta}{ratio}")
    for band in pair["bands_appeared"]:
        out.append(f"   band appeared: {_span(band)} ({100 * band['events_share']:.1f}% of events, "
                   f"{100 * band['time_share']:.1f}% of the time)")
    for band in pair["bands_vanished"]:
        out.append(f"   band vanished: {_span(band)} (was {100 * band['events_share']:.1f}% of events)")
    if pair["changed"]:
        out.append("   bucket                 %events (base → cand, change)      %time (base → cand, change)")
        for row in pair["buckets"]:
            rng = f"{format_duration(row['low'])}–{format_duration(row['high'])}"
            out.append(f"   {rng:<18} {100 * row['baseline_events_share']:6.2f}% → "
                       f"{100 * row['candidate_events_share']:6.2f}% {_pp(row['events_share_change']):>9}   "
                       f"{100 * row['baseline_time_share']:6.2f}% → {100 * row['candidate_time_share']:6.2f}% "
                       f"{_pp(row['time_share_change']):>9}")
    return out


def _both(b: dict[str, Any], c: dict[str, Any], key: str) -> str:
    """The pair's `key` (datasource, unit): once when both sides have it, else `baseline → candidate`."""
    if b[key] == c[key]:
        return clean_text(c[key])
    return f"{clean_text(b[key])} → {clean_text(c[key])}"


def _delta(delta: float, base: float | None, cand: float | None) -> str:
    """A statistic's change, signed: `+0` when it is float noise (within EPSILON of the values, as the bucket shares
    count no change), not `-0ns`."""
    scale = max(abs(base or 0.0), abs(cand or 0.0))
    if abs(delta) <= EPSILON * scale or delta == 0:
        return "+0"
    return f"{'+' if delta >= 0 else '-'}{format_duration(abs(delta))}"


def _dur(stat: dict[str, Any], side: str) -> str:
    """A statistic's value on one side (`baseline`, `candidate`): `≥low` where it is a lower bound only."""
    return percentile_duration(stat[f"{side}_s"], side in stat.get("open", ()))


def _bound(stat: dict[str, Any]) -> str | None:
    """How a statistic's change holds: exactly (``), at least (`≥`: the candidate's is a lower bound only), at most
    (`≤`: the baseline's is), or not known (None: both are)."""
    return {(): "", ("candidate",): "≥", ("baseline",): "≤"}.get(tuple(stat.get("open", ())))


def _shares(b: dict[str, Any], c: dict[str, Any], key: str) -> str:
    """`1.0% → 4.0% (×4.00)`: a band's share `key` on both sides."""
    ratio = f" (×{c[key] / b[key]:.2f})" if b[key] > 0 else ""
    return f"{100 * b[key]:.1f}% → {100 * c[key]:.1f}%{ratio}"


def _span(band: dict[str, Any]) -> str:
    return f"{format_duration(band['low_s'])}–{format_duration(band['high_s'])}"
