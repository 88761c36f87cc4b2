"""Peers: streams that do the same work side by side (ranks of a job, disks, RAC instances, executors).

**Recognised from labels.** Two streams are peers when their labels are equal once every *identity field*
is masked, and they have the same datasource and unit. An identity field is a number after a word naming
an instance of something — `rank3` (and `rank3.pid42`), `inst 2`, `instance 2`, `node`, `host`, `worker`,
`executor`/`exec`, `gpu`, `cuda`, `disk`, `dev`/`device`, `shard`, `replica`, `cpu`, `core`, `partition`,
`vol`/`volume`, with an optional `_ - : = #` or space before the number — or a block device name
(`sda`, `vdb`, `xvdc`, `hdb`, `nvme0n1`, `nvme0n1p2`, `dm-3`, `md0`). So `train/rank0/data_wait` and
`train/rank1/data_wait` are peers, `train/rank0/step` is not their peer (another phase), and Spark's
per-stage streams are not peers (a stage is other work, not another instance).

**Compared interval by interval.** Columns are pooled into common windows as wide as the widest peer's
usual column (a column goes to the window holding its middle). Per peer: its mean latency (time / events)
over the whole range and its `ratio` to the median of the other peers' means; per window where at least two
peers have events, the peer with the highest mean is that window's slowest (as trace analysers count the
rank that is slowest or latest at each collective). Where several peers share the highest mean (identical histograms:
common where times are estimated from the buckets), each of them is *tied* for the slowest and counts the window as
one it was slowest in (`tied` in JSON: two of three disks 1.38x the third in every window are each slowest in all),
unless every peer with events shares it: such a window has no slowest and is not compared (`tied_windows`; the first
peer was credited with it, which made rank0 "consistently slowest" among 8 identical ranks).

**A slow peer** (a `slow_peer` finding) has `ratio >= peer_min_ratio` (1.25) and at least
`peer_min_events` (20) events, and either
- is *consistently* slowest: slowest in more windows than chance, one-sided binomial p x peers <= `peer_max_p`
  (0.01) against 1 / (peers active in the window), or k / (peers active) where k tie for it (it was picked among
  the peers; 16 identical ranks of a few events each tie often, and each tie would otherwise count against 1/16),
  over the windows it had events in (a disk that joined halfway, slowest in all 15 of its 15, was "too few
  intervals to tell" as if it had lost the other 15); or
- lost its extra time in a few intervals: at most three windows, where its mean was at least
  2**`stall_gap_octaves` (4x) its peers' (or `peer_min_ratio` for a slow phase short of that gap), hold at least
  half of its excess time (time - events x the peers' mean in each window, or their mean over the range in a window
  where no peer has events: the line then says `its peers' mean over the run`, and JSON `against` of each stall
  `run`, else `interval`; a phase's `both` where it has windows of each): a stall of that peer; or more than three
  such windows hold it (those past the worst three a tenth of it at least, `PHASE_REST`, or the worst three not
  half): a slow phase, said from when and for how many intervals it lasted. Each window must stand beyond how much
  the peer's ratio to its peers varies in its other windows, its peers' ratios varying over the same windows pooled
  in (a Student-t prediction test, Bonferroni-corrected over peers and windows; of at most 4 degrees of freedom where
  events are heavy-tailed): heavy-tailed events put some peer 4x its peers in some window by chance.
The finding names the other peers at or past `peer_min_ratio` too (`also` in JSON: five hosts equally slow, tied for
the slowest in every interval, are not one). Otherwise no peer is named slow (the members' numbers are still
reported). When no peer reaches the ratio but the one slowest most often is so in more windows than chance (p x
peers <= `peer_max_p`), the group says so with its ratio (`consistently_slowest` in JSON: a rank 10% slower in every
interval slows the whole job 10%): that is not noise; other peers that pass the same test are named with it (`so is
rank5`; `also` in JSON: peers tied for the slowest are not one). When the peer with the highest ratio was slowest in
so few windows that even "every one of them" could be chance (p x peers > `peer_max_p` at best), the group says it
has too few intervals to tell, and how many it would need; so it does when the peer is `peer_min_ratio` or more
above its peers in some windows but fewer than `MIN_REST` others are left to measure their noise by (a short run:
81x in 5 of 7 windows is no verdict of noise). Else they differ by noise.

**Why it matters** depends on the peers: ranks of a training job and Spark executors wait for each other (a
collective, a barrier, the end of a stage), so the slow one holds them all up; disks and other devices do not (a
failing or different device, a queue, a RAID rebuild, another path), nor do independent instances, nodes or shards.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from latencymap.analysis.findings import Finding, dur, pct, since, times
from latencymap.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from latencymap.core.percentiles import median_of
from latencymap.core.units import plural

#: An identity field (compiled when first used: a report of one stream has no peers to look for).
IDENTITY = (
    r"(?i)(?<![A-Za-z0-9])(?:(?P<word>rank|instance|inst|node|host|worker|executor|exec|gpu|cuda|disk|device|dev"
    r"|shard|replica|cpu|core|partition|volume|vol)[ _:=#-]?\d+(?:\.pid\d+)?"
    r"|(?P<disk>(?:sd|vd|xvd|hd)[a-z]{1,2}|nvme\d+n\d+(?:p\d+)?|dm-\d+|md\d+|loop\d+|zram\d+|nbd\d+|rbd\d+"
    r"|mmcblk\d+(?:p\d+)?))(?![A-Za-z0-9])")
#: Windows where the slow peer stalls: at most this many hold its excess.
STALL_WINDOWS = 3
#: A slow phase's intervals past its worst `STALL_WINDOWS` hold at least this share of its extra: else, where those
#: hold half of it, they are a stall, the others a stray interval or two (three at 10x and one at 2x half a minute
#: later are no phase).
PHASE_REST = 0.1
#: `student_sf`'s most degrees of freedom (past it, a p changes by under 20% out to 5 sd).
STUDENT_DF_MAX = 1000
#: Heavy-tailed noise (`_departures`): where one event's log varies this much or more (variance, as the interval means'
#: spread implies: events spread over more than a factor e per sd), a log interval mean is judged against a Student-t
#: of at most `HEAVY_DF` degrees of freedom. Such a mean has a longer upper tail than the normal, one event far out
#: lifting it (of 20 to 50 events from a lognormal of sigma 2, its 99.9th percentile is 4.2 to 4.7 sd out, not 3.1);
#: 4 degrees of freedom is the robust t model's usual choice (Lange, Little & Taylor, JASA 1989).
HEAVY_SPREAD = 1.0
HEAVY_DF = 4
#: Peers that wait for each other (training ranks, Spark executors): the slow one holds the others up.
SYNCHRONISED = frozenset({"rank", "gpu", "cuda", "executor", "exec"})
WHY = ("peers do the same work: the slow one holds the others up at every synchronisation (a collective, a "
       "barrier, the end of a stage); look at its host, device or data")
#: Devices do not wait on each other: a slow one is its own fault.
WHY_DEVICE = ("peers do the same work, and devices do not wait on each other: the slow one serves its share of the "
              "I/O slower (a failing or different device, a deeper queue, a RAID rebuild, another path or "
              "controller); look at its health, its queue and its errors")
#: Other independent peers (instances, nodes, shards): the slow one serves its share slower.
WHY_INDEPENDENT = ("peers do the same work: the slow one serves its share of it slower (another host or "
                   "configuration, more load or a hot share of the data, a noisy neighbour, another path); look at "
                   "its host, load and data")
DEVICES = frozenset({"disk", "device", "dev", "volume", "vol"})
#: Training ranks: a phase that ends in a collective lasts as long as the slowest rank's (`hidden_ranks`).
RANKS = frozenset({"rank", "gpu", "cuda"})
#: Ranks' means that agree to within this (max / min - 1) in most intervals: as ranks that wait for each other do.
SYNCED_SPREAD = 0.05


def slow_peer_why(kind: str, datasource: str) -> str:
    """Why a slow peer matters: it holds synchronised peers up (training ranks, Spark executors); a device or an
    independent instance is only slow itself."""
    if kind in SYNCHRONISED or datasource in ("training", "spark"):
        return WHY
    return WHY_DEVICE if kind in DEVICES else WHY_INDEPENDENT


@dataclass
class PeerStream:
    """One stream's columns, as the peers comparison needs them."""

    label: str
    datasource: str
    unit: str
    counts: np.ndarray
    time: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


def peer_key(label: str) -> tuple[str, str, str] | None:
    """(label with identity fields masked as `*`, this stream's identity, field kind); None without one."""
    found = list(re.finditer(IDENTITY, label))
    if not found:
        return None
    kind = (found[0].group("word") or "disk").lower()
    return re.sub(IDENTITY, _mask, label), "/".join(m.group(0) for m in found), kind


def _mask(m: re.Match[str]) -> str:
    """`rank3.pid42` -> `rank*`, `inst 2` -> `inst *`, `sdb` -> `*`."""
    return re.sub(r"\d+(?:\.pid\d+)?$", "*", m.group(0)) if m.group("word") else "*"


@dataclass
class Member:
    """One peer's totals and how often it was the slowest."""

    label: str
    name: str
    events: float
    time_s: float
    mean_s: float
    ratio: float = float("nan")
    slowest: int = 0
    #: Windows whose highest mean it shared with some of the other peers (not all of those with events).
    tied: int = 0

    @property
    def wins(self) -> int:
        """The windows it counts as slowest in, for the test against chance: alone or tied."""
        return self.slowest + self.tied

    def slowest_text(self) -> str:
        """`slowest in 6`, `slowest in 0, tied for it in 40`."""
        return f"slowest in {self.slowest:,}" + (f", tied for it in {self.tied:,}" if self.tied else "")

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {"label": self.label, "name": self.name, "events": self.events, "time_s": self.time_s,
                "mean_s": _num(self.mean_s), "ratio": _num(self.ratio), "slowest": self.slowest, "tied": self.tied}


@dataclass
class PeerGroup:
    """Peers sharing a masked label, compared window by window."""

    key: str
    kind: str
    datasource: str
    unit: str
    window_s: float
    windows: int
    start: float
    members: list[Member]
    slow: dict[str, Any] | None = None
    finding: Finding | None = None
    contested: int = 0
    #: Windows whose highest mean every peer with events shared (identical histograms): no peer's slowest.
    tied: int = 0
    stalls: list[dict[str, Any]] = field(default_factory=list)
    undecided: str | None = None  # why a peer that looks slow is not named: too few intervals to tell
    #: Why no peer could be judged at all (too few intervals or events, nothing compared): no verdict of noise.
    unjudged: str | None = None
    #: A peer slowest in more intervals than chance, but by less than `peer_min_ratio`: not named slow, not noise
    #: either (`{"label", "name", "ratio", "slowest", "compared_windows", "expected_slowest", "p_value", "min_ratio"}`).
    consistent: dict[str, Any] | None = None
    #: `peer_min_ratio`: no ratio is written rounded across it.
    min_ratio: float = DEFAULT_THRESHOLDS.peer_min_ratio
    #: Ranks of a training job only (None for other peers): slow ranks that waiting for each other hides here (see
    #: `hidden_ranks`), and whether the ranks' means agree interval by interval, as ranks that wait for each other do.
    hidden: list[dict[str, Any]] | None = None
    #: (events, time) per (member, window): what `hidden_ranks` reads across groups.
    grid: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The report's peer-group object."""
        out = {"key": self.key, "field": self.kind, "datasource": self.datasource, "unit": self.unit,
               "window_s": self.window_s, "windows": self.windows, "compared_windows": self.contested,
               "tied_windows": self.tied,
               "members": [m.to_json() for m in self.members], "slow": self.slow,
               "finding": self.finding.to_json() if self.finding else None,
               "undecided": self.undecided or (None if self.hidden else self.unjudged),
               "consistently_slowest": self.consistent}
        if self.hidden is not None:
            out["hidden"] = self.hidden
        return out

    def lines(self) -> list[str]:
        """The text report's lines for this group."""
        tied = f", all tied in {self.tied:,}" if self.tied else ""
        head = (f"peers {self.key} ({len(self.members)} {self.kind}s, {plural(self.contested, 'interval')} of "
                f"{self.window_s:.3g}s compared{tied}):")
        rows = [f"   {m.name}: mean {dur(m.mean_s)} ({times(m.ratio, self.min_ratio)} its peers), {m.slowest_text()}"
                for m in self.members]
        if not self.finding and self.hidden:  # an undecided beside them: whether the others waited for a rank
            return [head, *rows, *self._hidden_lines(), *([f"   {self.undecided}"] if self.undecided else [])]
        verdict = self.finding.line() if self.finding else self.undecided or self._below() or self.unjudged or \
            "no slow peer: they differ by noise"
        return [head, *rows, f"   {verdict}"]

    def _hidden_lines(self) -> list[str]:
        """`no rank slower than its peers here, but ...`, then one line per rank that waiting hides."""
        return [f"   no {self.kind} slower than its peers here, but {self.kind}s that wait for each other (a "
                f"collective, a barrier) all take as long as the slowest here, which hides it:",
                *(f"   {self._hidden_line(h)}" for h in self.hidden or [])]

    def _hidden_line(self, h: dict[str, Any]) -> str:
        """What one entry of `hidden` says: every rank together, a rank timed inside this, or one the others waited
        for."""
        at = ", ".join(f"t+{since(w['start'] - self.start)}" for w in h["windows"])
        if h["how"] == "together":
            then = "; ".join(f"{o['name']} was, in peers {o['key']} ({times(o['ratio'])} its peers' at "
                             f"t+{since(o['start'] - self.start)})" for o in h.get("slow_then") or [])
            return (f"every {self.kind} together: {times(h['ratio'])} their usual mean at {at}, all within "
                    f"{SYNCED_SPREAD:.0%} of each other: either all slowed at once, or one was slow before the wait "
                    f"and held the others; " + (f"the likely one: {then}" if then else
                                                f"time that part (compute) per {self.kind} to tell"))
        if h["how"] == "inside":
            return (f"{h['name']}: slow in peers {h['key']} ({times(h['ratio'])} its peers'); every {self.kind}'s "
                    f"mean here rose with it, to at least {h['name']}'s mean there ({at}): that is timed inside "
                    f"this, before the wait")
        at = ", ".join(f"{times(w['ratio'])} at t+{since(w['start'] - self.start)}" for w in h["windows"])
        also = "".join(f"; it is the slow {self.kind} of peers {o['key']} ({times(o['ratio'])} its peers')"
                       for o in h["slow_in"])
        return (f"{h['name']}: {times(h['ratio'])} its peers' mean here ({at}): the others waited for it there, so it "
                f"is the likely straggler, slow outside what is timed here"
                + (also or "; time its other phases (compute, data_wait) to see which"))

    def member_lines(self, label: str) -> list[tuple[str, list[tuple[float, float]]]]:
        """What the comparison says of the member `label`, each line with the spans (epoch seconds) it is about:
        its slow-peer finding, or which peer is the slow one; its small steady gap; what waiting hides of it or of
        every member together. Nothing for a member of a group with no slow peer."""
        me = next((m for m in self.members if m.label == label), None)
        if me is None:
            return []
        out: list[tuple[str, list[tuple[float, float]]]] = []
        if self.slow is not None and self.finding is not None:
            if self.slow["label"] == label:
                phase = self.slow.get("phase")
                spans = [phase] if phase else self.slow.get("stalls") or []
                out.append((self.finding.line(), [(s["start"], s["end"]) for s in spans]))
            else:
                out.append((f"peers {self.key}: the slow {self.kind} is {self.slow['name']}, "
                            f"{times(self.slow['ratio'], self.min_ratio)} its peers'; {me.name}: "
                            f"{times(me.ratio, self.min_ratio)}", []))
        if self.consistent is not None and self.consistent["label"] == label:
            out.append((self._below() or "", []))
        for h in self.hidden or []:
            if h["how"] == "together" or h.get("name") == me.name:
                out.append((self._hidden_line(h), [(w["start"], w["end"]) for w in h["windows"]]))
        return out

    def _below(self) -> str | None:
        """`no rank ≥1.25× its peers, but rank5 is consistently slowest (1.10× its peers, slowest in 60 of 60
        intervals, 3.75 expected by chance): a small steady gap, not noise ...`."""
        c = self.consistent
        if c is None:
            return None
        sync = self.kind in SYNCHRONISED or self.datasource in ("training", "spark")
        tied = f" and tied for it in {c['tied']:,}" if c.get("tied") else ""
        return (f"no {self.kind} ≥{c['min_ratio']:.3g}× its peers, but {c['name']} is consistently slowest "
                f"({times(c['ratio'], self.min_ratio)} its peers, slowest in {c['slowest']:,}{tied} of "
                f"{_of(c['compared_windows'], self.contested)}, "
                f"{by_chance(c['expected_slowest'])} expected by chance){_so_are(c.get('also', []))}: a small "
                "steady gap, not noise"
                + (f"; {self.kind}s that wait for each other all run that much slower" if sync else ""))


def _names(names: list[str]) -> str:
    """`rank5, rank6, rank7 +2 more`: the first `ALSO_NAMED` names and a count of the rest."""
    return ", ".join(names[:ALSO_NAMED]) + (f" +{len(names) - ALSO_NAMED:,} more" if len(names) > ALSO_NAMED else "")


def _so_are(also: list[str]) -> str:
    """`; so are rank5, rank6`: the other peers as consistently slowest (tied ones, most often)."""
    return f"; so {'is' if len(also) == 1 else 'are'} {_names(also)}" if also else ""


def _num(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def binomial_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    ks = np.arange(k, n + 1)
    logc = np.array([math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) for j in ks])
    return float(min(1.0, np.exp(logc + ks * math.log(p) + (n - ks) * math.log1p(-p)).sum()))


def student_sf(t: Any, df: int) -> Any:
    """P(T >= t) for T Student-t with `df` (a whole number >= 1) degrees of freedom, of a number or each of an array
    (Abramowitz & Stegun 26.7.3-4: P(|T| <= t) a finite sum in cos(theta)**2, theta = atan(t / sqrt(df))). Past
    `STUDENT_DF_MAX` degrees of freedom, that many: a sum as long as the intervals of a long run otherwise, for a p
    larger by under 20% where one of a few thousand intervals is judged (5 sd out)."""
    df = min(df, STUDENT_DF_MAX)
    a = np.abs(np.asarray(t, dtype=np.float64))
    theta = np.arctan(a / math.sqrt(df))
    c2, term, total = np.cos(theta) ** 2, np.ones_like(a), np.ones_like(a)
    for j in range(1 + df % 2, df - 1, 2):  # odd df: 2/3, 2*4/(3*5), ...; even df: 1/2, 1*3/(2*4), ...
        term *= c2 * j / (j + 1)
        total += term
    inside = (2 * (theta + (np.sin(theta) * np.cos(theta) * total if df > 1 else 0.0)) / math.pi if df % 2
              else np.sin(theta) * total)
    upper = np.where(np.isinf(a), 0.0, np.maximum(0.0, (1.0 - inside) / 2))
    out = np.where(np.asarray(t) < 0, 1.0 - upper, upper)
    return float(out) if out.ndim == 0 else out


def group_peers(streams: list[PeerStream]) -> dict[tuple[str, str, str], list[tuple[PeerStream, str, str]]]:
    """Streams by (masked label, datasource, unit), with their identities; only groups of two or more."""
    groups: dict[tuple[str, str, str], list[tuple[PeerStream, str, str]]] = defaultdict(list)
    if len(streams) < 2:
        return {}
    for s in streams:
        key = peer_key(s.label)
        if key is not None:
            groups[(key[0], s.datasource, s.unit)].append((s, key[1], key[2]))
    return {k: v for k, v in groups.items() if len({name for _, name, _ in v}) >= 2}


def _windows(members: list[PeerStream]) -> tuple[float, float, np.ndarray, np.ndarray]:
    """(width, origin, events, time) per (peer, window)."""
    width = max(float(median_of(s.ends - s.starts)) for s in members)
    origin = min(float(s.starts[0]) for s in members)
    width = width if width > 0 else 1.0
    idx = [np.floor(((s.starts + s.ends) / 2 - origin) / width).astype(np.int64) for s in members]
    n = int(max(int(i.max()) for i in idx)) + 1
    ev, tm = np.zeros((len(members), n)), np.zeros((len(members), n))
    for k, (s, i) in enumerate(zip(members, idx, strict=True)):
        np.add.at(ev[k], i, s.counts.sum(axis=1))
        np.add.at(tm[k], i, s.time.sum(axis=1))
    return width, origin, ev, tm


def by_chance(expected: float) -> str:
    """How many intervals a peer is slowest in by chance, as the report writes it: `3.75`, `15`, `1,800`."""
    return f"{expected:,.0f}" if expected >= 1000 else f"{expected:.3g}"


def ratios_to_others(values: np.ndarray) -> np.ndarray:
    """Each value over the median of the other peers' finite values (itself left out: with two peers, the slow one
    against the other alone); NaN where that median is missing or not positive. 2-D `values` (peers by interval):
    each column on its own."""
    values = np.asarray(values, dtype=np.float64)
    ref = others_median(values)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ref > 0, values / ref, np.nan)


def others_median(values: np.ndarray) -> np.ndarray:
    """The median of the other peers' finite values, per value (NaN where none; 2-D: per column)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return np.full(values.shape, math.nan)
    cols = values.reshape(len(values), -1)
    finite = np.isfinite(cols)
    order = np.argsort(np.where(finite, cols, np.inf), axis=0, kind="stable")
    ordered = np.take_along_axis(cols, order, axis=0)  # each column's finite values first, sorted
    m = finite.sum(axis=0)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(len(cols))[:, None], cols.shape), axis=0)
    left = m - finite  # the others' finite values (a thousand peers: no thousand medians, the sorted ones but its own)

    def at(j: np.ndarray) -> np.ndarray:
        """The j-th of the others' sorted finite values (a value not finite: ranked past them, all of them)."""
        return np.take_along_axis(ordered, np.clip(np.where(j < rank, j, np.minimum(j + 1, m - 1)), 0, None), axis=0)

    half = (left - 1) // 2
    ref = np.where(left % 2 == 1, at(half), (at(half) + at(half + 1)) / 2)
    return np.where(left > 0, ref, np.nan).reshape(values.shape)


#: A slow peer's intervals risen above its peers are judged against at least this many others: with fewer, a peer
#: 81x its peers in 5 of 7 intervals cannot pass the test (Bonferroni over peers and intervals) and is undecided,
#: not "noise".
MIN_REST = 5
#: How many other peers as slow (by their ratio) a slow peer's finding names; the rest are counted.
ALSO_NAMED = 3
#: Two window means this close (relative) are a tie: the same histogram, summed in another order.
TIE_RTOL = 1e-9


def compare(key: str, datasource: str, unit: str, group: list[tuple[PeerStream, str, str]],
            th: Thresholds = DEFAULT_THRESHOLDS) -> PeerGroup:
    """One peer group's comparison and its slow peer, if any (see the module docstring)."""
    group = sorted(group, key=lambda m: natural_key(m[1]))
    streams = [s for s, _, _ in group]
    width, origin, ev, tm = _windows(streams)
    members = [Member(s.label, name, float(ev[k].sum()), float(tm[k].sum()),
                      float(tm[k].sum() / ev[k].sum()) if ev[k].sum() > 0 else float("nan"))
               for k, (s, name, _) in enumerate(group)]
    for m, ratio in zip(members, ratios_to_others(np.array([m.mean_s for m in members])).tolist(), strict=True):
        m.ratio = ratio
    with np.errstate(divide="ignore", invalid="ignore"):
        wmean = np.where(ev > 0, tm / ev, -np.inf)
    active = (ev > 0).sum(axis=0)
    contested = active >= 2
    top = wmean.max(axis=0)
    with np.errstate(invalid="ignore"):
        at_top = (ev > 0) & (wmean >= top - TIE_RTOL * np.abs(top)) & contested
    sharing = at_top.sum(axis=0)
    all_tied = contested & (sharing == active)
    contested &= ~all_tied  # no one's slowest: no evidence for or against any peer
    for k, m in enumerate(members):
        m.slowest = int((at_top[k] & (sharing == 1)).sum())
        m.tied = int((at_top[k] & (sharing > 1) & contested).sum())
    out = PeerGroup(key, group[0][2], datasource, unit, width, ev.shape[1], origin, members,
                    contested=int(contested.sum()), tied=int(all_tied.sum()), min_ratio=th.peer_min_ratio,
                    grid=(ev, tm))
    # a peer's chance of being among a window's slowest: one of `active`, or `sharing` of them where that many tie
    _judge(out, ev, tm, wmean, sharing / np.maximum(active, 1), contested, th)
    return out


def rank_order(streams: list[tuple[str, str]]) -> list[int]:
    """Indexes of (label, datasource) pairs in report order: training streams by run, then rank number (`rank2` before
    `rank10`, whatever order their writers connected in), a rank's phases as they came, in the places training streams
    held; every other stream where it was."""
    at = [i for i, (label, ds) in enumerate(streams) if ds == "training" and peer_key(label) is not None]
    if len(at) < 2:
        return list(range(len(streams)))

    def key(i: int) -> tuple[Any, ...]:
        label = streams[i][0]
        first = re.search(IDENTITY, label)
        assert first is not None
        return label[:first.start()], natural_key(first.group(0)), i

    out = list(range(len(streams)))
    for place, i in zip(at, sorted(at, key=key), strict=True):
        out[place] = i
    return out


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key putting `rank2` before `rank10` (numbers compare as numbers)."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part)


def _judge(g: PeerGroup, ev: np.ndarray, tm: np.ndarray, wmean: np.ndarray, top_chance: np.ndarray,
           contested: np.ndarray, th: Thresholds) -> None:
    """Name the slow peer of a group when there is one (sets `slow` and `finding`); `top_chance`: per window, the
    chance that a peer is among its slowest, as many as tie for it of the peers with events."""
    ok = [k for k, m in enumerate(g.members) if m.events >= th.peer_min_events and math.isfinite(m.ratio)]
    if g.contested == 0:  # no verdict of noise where nothing was compared
        g.unjudged = ("no slow peer: they were the same in every interval" if g.tied else
                       f"nothing to compare: no interval held events of two {g.kind}s")
        return
    if len(ok) < 1:
        g.unjudged = f"too few events to tell: no {g.kind} has {th.peer_min_events:,} or more"
        return
    trials = [_trials(ev[i], contested, top_chance) for i in range(len(g.members))]
    k = max(ok, key=lambda i: g.members[i].ratio)
    m = g.members[k]
    n, chance = trials[k]
    if m.ratio < th.peer_min_ratio:
        _consistent_below(g, ok, trials, th)
        return
    p = binomial_sf(m.wins, n, chance)
    others = np.delete(wmean, k, axis=0)
    overall = m.mean_s / m.ratio
    alone = ~np.isfinite(others).any(axis=0)  # no peer had events: compared with their mean over the range
    ref_w = np.array([overall if none else median_of(col[np.isfinite(col)]) for col, none in zip(others.T, alone,
                                                                                                 strict=True)])
    excess_w = np.where(ev[k] > 0, tm[k] - ev[k] * ref_w, 0.0)
    excess = float(excess_w[excess_w > 0].sum())
    gap = 2.0 ** th.stall_gap_octaves
    peers = _peer_ratios(ev, wmean, k)
    far = _rose(g, ev, k, wmean, ref_w, gap, th, peers, STALL_WINDOWS) | \
        _rose(g, ev, k, wmean, ref_w, th.peer_min_ratio, th, peers)
    worst = sorted(int(w) for w in np.argsort(-excess_w)[:STALL_WINDOWS] if far[w] and excess_w[w] > 0)
    top, over = float(sum(excess_w[w] for w in worst)), float(excess_w[far & (excess_w > 0)].sum())
    lasting = int(far.sum()) > STALL_WINDOWS and (over - top >= PHASE_REST * excess or top < 0.5 * excess)
    held = over if lasting else top
    stalled = excess > 0 and held >= 0.5 * excess
    consistent = p * len(g.members) <= th.peer_max_p  # the peer was picked among them (as `_consistent_below`)
    if not (consistent or stalled):
        best = chance ** n * len(g.members)  # slowest in every interval it was compared in, picked among the peers
        if best > th.peer_max_p and 0 < chance < 1:
            need = math.ceil(math.log(th.peer_max_p / len(g.members)) / math.log(chance))
            g.undecided = (f"too few intervals to tell: {m.name} is {times(m.ratio, th.peer_min_ratio)} its peers' "
                           f"mean and {m.slowest_text()} of {_of(n, g.contested)}, but "
                           f"{plural(n, 'interval')} cannot rule out chance (p >= {best:.2g} even if "
                           f"slowest in all; {need} or more needed: a longer run or shorter intervals)")
            return
        with np.errstate(divide="ignore", invalid="ignore"):
            rw = wmean[k] / ref_w
        seen = np.isfinite(rw) & (ref_w > 0)
        risen = seen & (rw >= th.peer_min_ratio)
        rest = int((seen & ~risen).sum())
        if risen.any() and rest < MIN_REST:  # the phase test has too little to measure noise by: no verdict of noise
            g.undecided = (f"too few intervals to tell: {m.name} is {times(m.ratio, th.peer_min_ratio)} its peers' "
                           f"mean, {times(th.peer_min_ratio)} or more above them in {int(risen.sum())} of "
                           f"{plural(int(seen.sum()), 'interval')}, but {rest} other{'s' if rest != 1 else ''} "
                           f"cannot tell that from how much its and its peers' intervals differ by chance (a longer "
                           "run or shorter intervals)")
        return
    spans: list[dict[str, Any]] = [
        {"start": g.start + w * g.window_s, "end": g.start + (w + 1) * g.window_s, "excess_s": float(excess_w[w]),
         "ratio": float(wmean[k, w] / ref_w[w]), "against": "run" if alone[w] else "interval"} for w in worst]
    slow_at = np.flatnonzero(far)
    phase = {"start": g.start + slow_at[0] * g.window_s, "end": g.start + (slow_at[-1] + 1) * g.window_s,
             "intervals": int(slow_at[-1] - slow_at[0] + 1), "slow_intervals": int(slow_at.size), "excess_s": held,
             "ratio": float(median_of(wmean[k, far] / ref_w[far])),
             "against": _against(int(alone[far].sum()), int(far.sum()))} if stalled and lasting else None
    also = [g.members[i].name for i in ok if i != k and g.members[i].ratio >= th.peer_min_ratio]
    g.slow = {"label": m.label, "name": m.name, "ratio": m.ratio, "consistent": consistent, "slowest": m.slowest,
              "tied": m.tied,
              "compared_windows": n, "chance": chance, "p_value": p, "excess_s": excess,
              "stalls": spans if stalled else [], "phase": phase, "also": also}
    tied = f" and tied for it in {m.tied:,}" if m.tied else ""
    how = (f"slowest in {m.slowest:,}{tied} of {_of(n, g.contested)} ({by_chance(chance * n)} expected by chance)"
           + ("" if consistent else ": not consistently"))
    if phase is not None:
        mean, note = _mean_words(phase["against"], int(alone[far].sum()))
        how += f"; {_lasted(g, phase)}, {times(phase['ratio'])} {mean} (the median{f'; {note}' if note else ''}), " \
               f"{pct(held / excess)} of its extra {dur(excess)}"
    elif stalled:
        where = ", ".join(f"t+{since(s['start'] - g.start)}" for s in spans)
        run = sum(s["against"] == "run" for s in spans)
        mean, note = _mean_words(_against(run, len(spans)), run)
        how += (f"; {pct(sum(s['excess_s'] for s in spans) / excess)} of its extra {dur(excess)} in "
                f"{len(spans)} interval{'s' if len(spans) > 1 else ''} ({where}), up to "
                f"{times(max(s['ratio'] for s in spans))} {mean}{f' ({note})' if note else ''}")
    if also:
        how += f"; also ≥{th.peer_min_ratio:.3g}× their peers: {_names(also)}"
    named = m.name if m.label == m.name else f"{m.name} ({m.label})"
    what = (f"slow {g.kind}: {named}, mean {dur(m.mean_s)}, {times(m.ratio, th.peer_min_ratio)} its "
            f"peers'; {how}")
    first, last = (phase, phase) if phase is not None else (spans[0], spans[-1]) if stalled else (None, None)
    total_t = float(tm.sum())
    g.finding = Finding("slow_peer", what, slow_peer_why(g.kind, g.datasource) + (" and what it did then" if stalled
                                                                                   else ""), m.events,
                        m.events / max(float(ev.sum()), 1e-300), m.time_s, m.time_s / max(total_t, 1e-300),
                        start=first["start"] if first else g.start,
                        end=last["end"] if last else g.start + g.windows * g.window_s)


def _against(alone: int, of: int) -> str:
    """What a slow peer's intervals were compared with: `interval` (its peers' mean in each), `run` (their mean over
    the range: none of them had events in any of those `of` intervals, `alone` of which are such) or `both`."""
    return "interval" if not alone else "run" if alone == of else "both"


def _mean_words(against: str, alone: int) -> tuple[str, str]:
    """(`its peers' mean there`, and a note of where that was their mean over the run: `alone` intervals where they
    had no events) for what the intervals were compared with (`_against`)."""
    if against == "run":
        return "its peers' mean over the run", "they had no events then"
    if against == "both":
        return "its peers' mean there", (f"their mean over the run in the {plural(alone, 'interval')} where they had "
                                         "none")
    return "its peers' mean there", ""


def _lasted(g: PeerGroup, phase: dict[str, Any]) -> str:
    """`slow from t+6s for 6 intervals (to the end)`, `slow in 5 of 7 intervals from t+3s (to t+10s)`."""
    n, slow = phase["intervals"], phase["slow_intervals"]
    end, at = phase["end"] - g.start, f"t+{since(phase['start'] - g.start)}"
    until = "to the end" if end >= g.windows * g.window_s else f"to t+{since(end)}"
    return (f"slow from {at} for {plural(n, 'interval')}" if slow == n else
            f"slow in {slow:,} of {plural(n, 'interval')} from {at}") + f" ({until})"


def _rose(g: PeerGroup, ev: np.ndarray, k: int, wmean: np.ndarray, ref_w: np.ndarray, at: float,
          th: Thresholds, peers: tuple[np.ndarray, np.ndarray], most: int | None = None) -> np.ndarray:
    """The intervals where peer `k`'s mean is `at` times its peers' (`ref_w`) or more and beyond how much its ratio
    to them varies in its other intervals: a stall (`at` = 2**`stall_gap_octaves`), or a slow phase (2.5x for two
    seconds, `at` = `peer_min_ratio`) short of a stall's gap, which ranks' intervals that do not line up split.
    Each is judged against the intervals not risen (`_departures`, pooled with the peers' own ratios, `peers`),
    Bonferroni-corrected over peers and intervals; none where fewer than 2 such are left. The intervals beside a
    risen one count too: one that a stall spilled into only makes them vary more (the test stricter), and left out,
    a run of 6 intervals of 2 peers kept 2 or 3 to judge a stall by. A peer whose events are heavy-tailed (a lognormal
    of sigma 2: one in a hundred ~100x the median) is 4x its peers in some interval by chance; its other intervals
    and its peers' vary as much, and an interval mean of such events is judged as heavy-tailed (`HEAVY_DF`).

    `most`: a stall's; only that many of the highest are judged, corrected over those rather than every interval (a
    real stall in a run of 7 intervals is still found), and an interval where no peer has events (its peers' mean
    over the range for reference: nothing to weigh it by) is one by its gap alone, as a rank that stalled runs on
    after its peers stopped."""
    weight = _ratio_weight(ev, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.log(wmean[k] / ref_w)
    seen = (ref_w > 0) & np.isfinite(x) & np.isfinite(weight)
    risen = seen & (x >= math.log(at))
    alone = (ref_w > 0) & np.isfinite(x) & ~np.isfinite(weight) & (x >= math.log(at)) if most is not None else \
        np.zeros_like(risen)
    if most is not None and risen.sum() > most:
        risen &= x >= np.sort(x[risen])[-most]
    if not risen.any():
        return alone
    p = _departures(x, weight, risen, seen, peers, spill=False)
    if p is None:
        return alone
    return alone | risen & _significant(p, g, risen if most is not None else seen, th)


def _trials(ev: np.ndarray, contested: np.ndarray, top_chance: np.ndarray) -> tuple[int, float]:
    """A peer's test against chance: the compared intervals it had events in (a peer that joined late or left early
    is slowest in none of the others by its absence, not by chance) and its mean chance of being slowest in them."""
    mine = contested & (ev > 0)
    n = int(mine.sum())
    return n, float(np.mean(top_chance[mine])) if n else 0.0


def _of(n: int, contested: int) -> str:
    """`30 intervals`, or `the 15 intervals it had events in, of 30` for a peer without events in some of them."""
    if n == contested:
        return plural(n, "interval")
    return f"the {plural(n, 'interval')} it had events in, of {contested:,}"


def _consistent_below(g: PeerGroup, ok: list[int], trials: list[tuple[int, float]], th: Thresholds) -> None:
    """Set `consistent` when a peer is slowest in more intervals than chance though no peer reaches `peer_min_ratio`:
    a small but steady gap (a rank 10% slow slows every step of the job), not noise. The peer picked is the one
    least likely slowest so often by chance, so its p is taken times the number of peers (Bonferroni): among 8
    identical peers one would otherwise reach p <= 0.01 in ~8% of runs."""
    def p_of(i: int) -> float:
        return binomial_sf(g.members[i].wins, *trials[i])

    def passes(i: int) -> bool:
        return g.members[i].ratio > 1 and p_of(i) * len(g.members) <= th.peer_max_p

    k = min(ok, key=lambda i: (p_of(i), -g.members[i].wins, -g.members[i].ratio))
    m = g.members[k]
    best = min(trials[i][1] ** trials[i][0] for i in ok) * len(g.members)  # slowest in all its intervals
    if best > th.peer_max_p:  # no peer could be told consistently slowest: no verdict of noise either
        n, chance = trials[k]
        need = math.ceil(math.log(th.peer_max_p / len(g.members)) / math.log(chance)) if 0 < chance < 1 else None
        g.unjudged = (f"too few intervals to tell: no {g.kind} is {times(th.peer_min_ratio)} its peers' mean, and "
                      f"{plural(n, 'interval')} cannot tell a small steady gap from noise (p >= {best:.2g} even "
                      f"if one were slowest in all{f'; {need} or more needed' if need else ''})")
        return
    if passes(k):
        n, chance = trials[k]
        also = [g.members[i].name for i in ok if i != k and passes(i)]
        g.consistent = {"label": m.label, "name": m.name, "ratio": m.ratio, "slowest": m.slowest, "tied": m.tied,
                        "compared_windows": n, "expected_slowest": chance * n, "p_value": p_of(k),
                        "min_ratio": th.peer_min_ratio, "also": also}


def find_peers(streams: list[PeerStream], thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[PeerGroup]:
    """Every peer group among the streams, compared (see the module docstring)."""
    groups = [compare(key, ds, unit, group, thresholds) for (key, ds, unit), group in group_peers(streams).items()
              if all(len(s.starts) for s, _, _ in group)]
    hidden_ranks(groups, thresholds)
    return groups


def _means(ev: np.ndarray, tm: np.ndarray) -> np.ndarray:
    """Mean per (member, window); NaN where a member has no events."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ev > 0, tm / ev, np.nan)


def _spread(wm: np.ndarray) -> np.ndarray:
    """max / min - 1 of the members' means per window where all of them have events (NaN elsewhere)."""
    full = np.isfinite(wm).all(axis=0) & (np.nan_to_num(wm, nan=0.0) > 0).all(axis=0)
    out = np.full(wm.shape[1], np.nan)
    out[full] = wm[:, full].max(axis=0) / wm[:, full].min(axis=0) - 1
    return out


def _siblings(g: PeerGroup, o: PeerGroup) -> bool:
    """Other phases of the same ranks: `ddp/rank*/compute` beside `ddp/rank*/step`."""
    return (o is not g and o.datasource == g.datasource and o.unit == g.unit and o.kind == g.kind
            and o.key.split("*", 1)[0] == g.key.split("*", 1)[0]
            and {m.name for m in o.members} == {m.name for m in g.members})


def hidden_ranks(groups: list[PeerGroup], th: Thresholds = DEFAULT_THRESHOLDS) -> None:
    """For ranks of a training job with no slow rank named, the slow ranks that waiting for each other hides.

    A phase that ends in a collective (an all_reduce, a barrier) lasts as long as the slowest rank's on every rank,
    so its time cannot show which rank is slow. Two things still can, and only these are said (in `hidden`):
    - `inside`: a rank named slow in another phase of the same ranks, in intervals where every rank's mean here is
      at least its mean there and no rank stands out here (within `peer_min_ratio`): that phase is timed inside this
      one, and the others waited for it;
    - `waited_for`: a rank whose peers' mean here rose `peer_min_ratio` or more above its own usual (its median over
      the intervals) and above its mean then, in intervals that hold at least half of its shortfall against them, or
      three quarters with what the intervals beside them hold past its steady shortfall (where such a wait spills over
      an interval's edge; a rank simply faster everywhere has that shortfall beside any interval), and half of that
      is not made up elsewhere: the others waited for it, so it is the likely straggler, slow outside what is
      timed here (with the other phases where it is the slow rank).
    - `together`: intervals not explained by `inside` where every rank's mean rose `peer_min_ratio` or more above
      the group's usual (the median over intervals), all within `SYNCED_SPREAD` of each other, each rank's rise
      beyond how much its own other intervals vary (`_all_beyond_noise`; nothing where too few are left to tell):
      all ranks slowed at once, or one slow before the wait held the others; what is timed here cannot tell which.
    """
    ranks = [g for g in groups if g.grid is not None and (g.kind in RANKS or g.datasource == "training")]
    for g in ranks:
        assert g.grid is not None
        g.hidden = []
        wm = _means(*g.grid)
        spread = _spread(wm)
        if g.finding or g.undecided or g.consistent:
            continue
        siblings = [o for o in ranks if _siblings(g, o)]
        for o in siblings:
            inside = _inside(g, wm, o, th)
            if inside is not None:
                g.hidden.append(inside)
        fast = _waited_for(g, wm, th)
        if fast is not None and fast["how"] == "undecided":
            g.undecided = fast["why"]
        elif fast is not None:
            fast["slow_in"] = [{"key": o.key, "ratio": o.slow["ratio"]} for o in siblings
                               if o.slow is not None and o.slow["name"] == fast["name"]]
            g.hidden.append(fast)
        g.hidden.sort(key=lambda h: natural_key(h["name"]))
        explained = [w["start"] for h in g.hidden if h["how"] == "inside" for w in h["windows"]]
        together = _together(g, wm, spread, explained, th)
        if together is not None:
            together["slow_then"] = _slow_then(together, siblings)
            g.hidden.append(together)


def _slow_then(together: dict[str, Any], siblings: list[PeerGroup]) -> list[dict[str, Any]]:
    """The slow ranks of sibling groups (other phases timed per rank) with a stall or a slow phase in a `together`
    interval: the likely one that was slow before the wait; of its stalls and its slow phase (its stalls then are
    only its worst three intervals), the one overlapping those intervals most (its group's intervals need not line up
    with these: a stall in the interval before can touch one by microseconds)."""
    out = []
    for o in siblings:
        slow = o.slow or {}
        spans = [*(slow.get("stalls") or []), *([slow["phase"]] if slow.get("phase") else [])]
        overlap = [(sum(max(0.0, min(s["end"], w["end"]) - max(s["start"], w["start"])) for w in together["windows"]),
                    s) for s in spans]
        best = max(overlap, key=lambda pair: pair[0], default=None)
        if best is not None and best[0] > 0:
            s = best[1]
            out.append({"key": o.key, "name": slow["name"], "ratio": s["ratio"], "start": s["start"], "end": s["end"]})
    return out


def _together(g: PeerGroup, wm: np.ndarray, spread: np.ndarray, explained: list[float],
              th: Thresholds) -> dict[str, Any] | None:
    """`together` (see `hidden_ranks`): the intervals where every rank rose above the usual at once, each beyond how
    much its own other intervals vary (nothing where too few are left to tell)."""
    assert g.grid is not None
    level = np.array([median_of(c) if np.isfinite(c).all() else math.nan for c in wm.T])
    seen = np.isfinite(level) & np.isfinite(spread)
    if seen.sum() < 2:
        return None
    usual = float(median_of(level[seen]))
    starts = g.start + np.arange(g.windows) * g.window_s
    rose = seen & (level >= g.min_ratio * usual) & (spread <= SYNCED_SPREAD) & ~np.isin(starts, explained)
    if not rose.any() or usual <= 0:
        return None
    beyond = _all_beyond_noise(g.grid[0], wm, rose, seen, th)
    if beyond is None:
        return None
    rose &= beyond
    if not rose.any():
        return None
    windows = [{"start": float(starts[w]), "end": float(starts[w] + g.window_s), "ratio": float(level[w] / usual)}
               for w in np.flatnonzero(rose)[:STALL_WINDOWS]]
    return {"how": "together", "name": "", "ratio": max(w["ratio"] for w in windows), "windows": windows}


def _all_beyond_noise(ev: np.ndarray, wm: np.ndarray, rose: np.ndarray, seen: np.ndarray,
                      th: Thresholds) -> np.ndarray | None:
    """Of the intervals `rose`, those where every rank's mean stands above its other intervals by more than they vary
    (`ev`: events per rank and interval); None where fewer than 2 intervals, not risen and not beside one, are left.

    Each rank's log mean against its own other intervals (`_departures`). Independent ranks all rise that far at
    once by chance with the product of their p, at most the largest p to the power of the ranks: that, times the
    intervals (the risen ones were picked), must reach `peer_max_p`. Ranks that wait for each other rise as one.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        ps = [_departures(np.log(wm[k]), ev[k], rose, seen) for k in range(len(wm))]
    if any(p is None for p in ps):
        return None
    worst = np.nan_to_num(np.max(np.array(ps), axis=0), nan=1.0)
    return rose & (worst ** len(wm) * int(seen.sum()) <= th.peer_max_p)


def _departures(x: np.ndarray, weight: np.ndarray, far: np.ndarray, seen: np.ndarray,
                peers: tuple[np.ndarray, np.ndarray] | None = None, spill: bool = True) -> np.ndarray | None:
    """One-sided p per interval of `far` (NaN elsewhere) that `x` stands that far above its mean over the other
    intervals `seen`, not `far` nor (`spill`: a wait that spills over an interval's edge) beside one (`weight`: the
    inverse of each interval's variance, up to a factor); None where fewer than 2 such intervals are left to measure
    how much they vary.

    A prediction test: Student-t with one degree of freedom fewer than the intervals it is measured over. `peers`:
    the same measure of the other peers (`x` and `weight` per peer and interval, as `_peer_ratios` gives), whose
    variation over those intervals, each about its own mean, is pooled with this one's: n peers' ratios to each
    other carry n - 1 independent contrasts an interval, so the degrees of freedom are the pooled ones times
    (n - 1) / n (with two peers, the other's ratio is this one's inverted: nothing more). Where that variation, per
    event, reaches `HEAVY_SPREAD`, at most `HEAVY_DF` degrees of freedom: heavy-tailed events.
    """
    rest = ~far & ~_beside(far) if spill else ~far
    quiet = seen & np.isfinite(x) & np.isfinite(weight) & rest
    if quiet.sum() < 2:
        return None
    h, xq = weight[quiet], x[quiet]
    mean = float((h * xq).sum() / h.sum())
    ss, dof, rows = float((h * (xq - mean) ** 2).sum()), int(quiet.sum()) - 1, 1
    for px, pw in zip(*peers, strict=True) if peers is not None else ():
        q = rest & np.isfinite(px) & np.isfinite(pw)
        if q.sum() >= 2:
            hq, pq = pw[q], px[q]
            ss += float((hq * (pq - (hq * pq).sum() / hq.sum()) ** 2).sum())
            dof += int(q.sum()) - 1
        rows += 1
    var, df = ss / dof, max(1, dof * (rows - 1) // rows) if rows > 1 else dof
    df = min(df, HEAVY_DF) if var >= HEAVY_SPREAD else df
    out = np.full(far.shape, math.nan)
    at = np.flatnonzero(far & seen & np.isfinite(x) & np.isfinite(weight))
    sd = np.sqrt(var * (1.0 / weight[at] + 1.0 / h.sum()))
    gap = x[at] - mean
    with np.errstate(divide="ignore", invalid="ignore"):
        out[at] = student_sf(np.where(sd > 0, gap / sd, np.where(gap > 0, math.inf, 0.0)), df)
    return out


def _inside(g: PeerGroup, wm: np.ndarray, o: PeerGroup, th: Thresholds) -> dict[str, Any] | None:
    """`inside` (see `hidden_ranks`) for the slow rank of sibling group `o`, judged at its stalls."""
    if o.slow is None or not o.slow["stalls"] or o.grid is None:
        return None
    name = o.slow["name"]
    ko = next(i for i, m in enumerate(o.members) if m.name == name)
    owm = _means(*o.grid)
    windows = []
    for s in o.slow["stalls"]:
        wo = round((s["start"] - o.start) / o.window_s)
        wg = math.floor(((s["start"] + s["end"]) / 2 - g.start) / g.window_s)
        if not (0 <= wg < g.windows and 0 <= wo < o.windows):
            return None
        here = wm[:, wg]
        theirs = float(owm[ko, wo])
        if not (np.isfinite(here).all() and here.min() > 0 and theirs > 0):
            return None
        if here.min() < 0.9 * theirs or here.max() > th.peer_min_ratio * here.min():
            return None
        windows.append({"start": g.start + wg * g.window_s, "end": g.start + (wg + 1) * g.window_s,
                        "ratio": float(here.min() / theirs)})
    label = next(m.label for m in g.members if m.name == name)
    return {"how": "inside", "name": name, "label": label, "key": o.key, "ratio": o.slow["ratio"],
            "windows": windows}


def _waited_for(g: PeerGroup, wm: np.ndarray, th: Thresholds) -> dict[str, Any] | None:
    """`waited_for` (see `hidden_ranks`): the rank with the least time here, when the others waited for it."""
    assert g.grid is not None
    ev, tm = g.grid
    ok = [k for k, m in enumerate(g.members) if m.events >= th.peer_min_events and math.isfinite(m.ratio)]
    if not ok:
        return None
    k = min(ok, key=lambda i: g.members[i].ratio)
    m = g.members[k]
    if m.ratio >= 1:
        return None
    others = np.delete(wm, k, axis=0)
    ref = np.array([median_of(c[np.isfinite(c)]) if np.isfinite(c).any() else math.nan for c in others.T])
    valid = (ev[k] > 0) & np.isfinite(ref)
    short = np.where(valid, ev[k] * np.nan_to_num(ref) - tm[k], 0.0)
    usual = float(median_of(wm[k][np.isfinite(wm[k])]))
    level = np.nan_to_num(ref)  # the others rose above its usual, it did not drop below it: they waited
    far = valid & (np.nan_to_num(wm[k], nan=np.inf) * th.peer_min_ratio <= level) & \
        (level >= th.peer_min_ratio * usual) & (short > 0)
    if not _concentrated(far, short, valid, ev[k]):
        return None
    beyond = _beyond_noise(g, ev, k, wm, far, valid, ref, th)
    if beyond is None:  # too few other intervals to judge it by: a short run says it cannot tell, not "noise"
        rose = np.flatnonzero(far)
        at = ", ".join(f"t+{since(w * g.window_s)}" for w in rose[:STALL_WINDOWS]) + (
            f" and {plural(rose.size - STALL_WINDOWS, 'more interval')}" if rose.size > STALL_WINDOWS else "")
        return {"how": "undecided", "name": m.name, "why": (
            f"too few intervals to tell: {m.name} is {times(m.ratio)} its peers' mean here, and they rose "
            f"{times(th.peer_min_ratio)} or more above it at {at}, as ranks do that wait for it, but "
            f"{plural(int(valid.sum()), 'interval')} compared leave fewer than 2 others, not beside those, "
            f"to tell that from how much {m.name}'s intervals differ by chance (a longer run or shorter intervals)")}
    far &= beyond
    if not _concentrated(far, short, valid, ev[k]):
        return None
    worst = sorted(int(w) for w in np.argsort(-np.where(far, short, -np.inf))[:STALL_WINDOWS] if far[w])
    windows = [{"start": g.start + w * g.window_s, "end": g.start + (w + 1) * g.window_s,
                "short_s": float(short[w]), "ratio": float(wm[k, w] / ref[w])} for w in worst]
    return {"how": "waited_for", "name": m.name, "label": m.label, "ratio": m.ratio, "short_s": float(short.sum()),
            "windows": windows, "slow_in": []}


def _concentrated(far: np.ndarray, short: np.ndarray, valid: np.ndarray, events: np.ndarray) -> bool:
    """Whether the intervals `far` hold at least half of a rank's shortfall, or three quarters with what the intervals
    beside them hold past its steady shortfall, and half of that is not made up elsewhere (see `hidden_ranks`)."""
    near = _beside(far)  # a wait that spills over an interval's edge: the shortfall beside it is the same wait's
    owed = float(short[short > 0].sum())
    held = float(short[far].sum())
    if held < 0.5 * owed:  # beside it, only what passes its steady shortfall (that a rank always fast has everywhere)
        steady = max(float(median_of(short[valid] / events[valid])), 0.0) if valid.any() else 0.0
        held += float(np.maximum(short - steady * events, 0.0)[near].sum())
        held = held if held >= 0.75 * owed else 0.0
    return bool(far.any()) and held > 0 and float(short.sum()) >= 0.5 * held


def _beside(far: np.ndarray) -> np.ndarray:
    """The intervals next to one of `far`, not in it."""
    near = np.zeros_like(far)
    near[1:] |= far[:-1]
    near[:-1] |= far[1:]
    return near & ~far


def _beyond_noise(g: PeerGroup, ev: np.ndarray, k: int, wm: np.ndarray, far: np.ndarray, valid: np.ndarray,
                  ref: np.ndarray, th: Thresholds) -> np.ndarray | None:
    """Of the intervals `far`, those where rank `k` stands further below its peers than its other intervals vary
    (`ev`: events per peer and interval); None where fewer than 2 intervals, not far and not beside one, are left to
    measure how much they vary.

    Rank k's log ratio to its peers' median, per interval, against its mean over those other intervals, weighted by
    events (the variance of a mean of e events goes as 1 / e): a one-sided prediction test, Student-t with one
    degree of freedom fewer than the intervals it is measured over. Its p is taken times the ranks and the
    intervals (the fastest rank and its most departing intervals were picked: Bonferroni, as `_consistent_below`
    does) and must reach `peer_max_p`. Ranks that wait for each other agree in every other interval, so a real wait
    stands out by far; independent noise of a few events an interval does not.
    """
    weight = _ratio_weight(ev, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        below = -np.log(wm[k] / ref)
    seen = valid & np.isfinite(below) & np.isfinite(weight)
    p = _departures(below, weight, far, seen)
    if p is None:
        return None
    return far & _significant(p, g, seen, th)


def _peer_ratios(ev: np.ndarray, wmean: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every peer but `k`'s log ratio to the median of the others' means per interval, and its weight
    (`_ratio_weight`): how much peers' ratios vary by chance, beside peer `k`'s (`wmean`: NaN or -inf where none)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.log(ratios_to_others(wmean))
    rows = [j for j in range(len(ev)) if j != k]
    return x[rows], _ratio_weights(ev)[rows]


def _ratio_weight(ev: np.ndarray, k: int) -> np.ndarray:
    """Per interval, the inverse variance (up to a factor) of peer `k`'s log ratio to its peers' mean: the variance of
    a mean of e events goes as 1 / e, its own and the peers' median's (`ev`: events per peer and interval)."""
    return _ratio_weights(ev)[k]


def _ratio_weights(ev: np.ndarray) -> np.ndarray:
    """`_ratio_weight` of every peer (rows of `ev`)."""
    others_ev = others_median(np.where(ev > 0, ev, np.nan))
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / (1.0 / ev + 1.0 / others_ev)


def _significant(p: np.ndarray, g: PeerGroup, seen: np.ndarray, th: Thresholds) -> np.ndarray:
    """Where a p of `_departures` (NaN: not tested) reaches `peer_max_p`, Bonferroni-corrected over the group's
    peers and the intervals compared (the peer and its intervals were picked)."""
    return np.nan_to_num(p, nan=1.0) * len(g.members) * int(seen.sum()) <= th.peer_max_p
