"""Findings: what the diagnosis has to say, each with where, how much and why it matters.

A finding is emitted only when it would not hold for any stream (see thresholds.py): a `band` beyond the
main one when the stream is bimodal (its why fits its direction: a band faster than the main one is cache hits,
early errors or empty results, not a cache miss; with three or more bands each gets its own line; a slower band of
little time beside one holding most of it is minor), a `tail` holding half of the time in at most 10% of the events
(or 30% of it in at most 2%: a heavy tail), each episode (`appear`, `disappear`, `move`, `reshape`, `stall`; a band
or a move only in the recording's first columns is its start-up), a `drift` or `shift`, and across streams a
`slow_peer` (peers.py). Report JSON: `{"kind", "what", "why", "where": {"first_col", "last_col", "start", "end",
"low_s", "high_s"}, "events", "events_share", "time_s", "time_share"}` (columns inclusive and absolute, times epoch
seconds, latencies seconds; a key is null where it does not apply).

A finding's why names the causes its datasource's slow events usually have (or, where a reader knows the values are
something else, those of what they measure: a jHiccup log's hiccups, `Scope.measures`); a band that is (mostly) the
recording's start-up says so. Where a source's own analysis knows what made them slow (Spark: its stragglers'
executor slow in their stage, or partitions that read many times their stage's median bytes; tasks it keeps apart as
warm-up, the executors or their stage starting), the report words that instead (`with_cause`, `Finding.holds`: which
events a finding is about); a minor band keeps saying so before it.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from typing import Any

import numpy as np

from latencymap.analysis.bands import Band
from latencymap.analysis.drift import Drift
from latencymap.analysis.episodes import MIN_MOVE_OCTAVES, Episode, Region
from latencymap.analysis.silences import Silence
from latencymap.analysis.stalls import PARALLEL
from latencymap.analysis.tail import Tail
from latencymap.core.buckets import range_text
from latencymap.core.lean import dataclass
from latencymap.core.patterns import lazy_pattern
from latencymap.core.units import format_duration, format_number

#: The lead of a band's why when the stream has two bands (bimodal): the pair is two populations.
PAIR = "two populations, not one spread: the mean describes neither; "

#: The words of an Oracle wait event's findings (`WHY["oracle"]`): its events are waits, not requests. Its bands'
#: causes are its wait class's (`ORACLE_CLASSES`); `slow` and `fast` here are those of an event of no known class.
ORACLE_WAITS = {
    "noun": "waits",
    "slow": "the resource waited for was busy or slow (a device, another session, the network)",
    "fast": "the resource found free, or served from a cache",
}

#: The causes of an Oracle wait event's slower and faster bands by its wait class: (words of the event's name, slow,
#: fast); the first class with one of its words, whole, in the stream's label (which names the event), lower-cased,
#: gives them (a `block` is no `lock`, a `thread` no `read`).
ORACLE_CLASSES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("read",), "reads that went to disk, a busy device or path",  # `log file sequential read` too: the archiver's
     "reads served by the storage array's or the OS's cache"),
    (("log file", "log buffer"),  # commits and redo writes
     "a slow redo log write (a busy log device or path), commits queued behind LGWR's writes, a log switch",
     "a commit whose redo went out with another's (group commit), the log device's write cache"),
    (("sql*net",),  # the time between a client's calls, or the network's: not the database's
     "the client (its own work between calls, think time, an idle session) or a slow network: time outside the "
     "database",
     "calls sent back to back (a fetch or batch loop), a short network round trip"),
    (("enq:", "latch", "mutex", "lock", "cursor:", "buffer busy"),
     "another session holding the lock or latch longer (an uncommitted transaction, a hot row, block or index), a "
     "queue of waiters",
     "the lock or latch released soon after it was asked for: little contention"),
    (("write",), "writes queued on a busy device or path, a full write cache",
     "writes absorbed by the storage array's write cache"),
)

#: What a Spark stream's values are, by the task metric it maps (`--metric`, which its label names: `spark APP [stage N]
#: task gc`): its findings say their time in these words (`time_words`). Only a wait's (the shuffle's fetch wait: None)
#: is time waited, in the generic words; GC, CPU or run time is the tasks' work. A label that names none is the
#: source's default's, the tasks' whole time (duration).
SPARK_TIMES: dict[str, str | None] = {
    "duration": "task time",
    "run": "run time",
    "cpu": "CPU time",
    "gc": "GC time",
    "deserialize": "deserialize time",
    "fetch-wait": None,
    "shuffle-write": "shuffle write time",
    "scheduler-delay": "scheduler delay",
}


#: What one value of a Spark metric that spans up to the task's end is called (`the task ending in col 3 began 2s
#: before it`); the others (GC, CPU, fetch wait...) do not end when the task does: a stall says no start for them.
SPARK_SPANS = {"duration": "task", "run": "task's run"}


def time_words(time: str, span: str = "") -> dict[str, str]:
    """The `WHY` keys that say a stream's time, for values that are `time` (`GC time`) rather than waits: `waited` (a
    sum: `240ms of GC time`), `wait` (one event's: `their mean GC time`), `waiting` (all of it: `half of the GC
    time`) and `span` (one value as a span that ends when its event is counted, "" where it is none)."""
    return {"waited": f"of {time}", "wait": time, "waiting": f"the {time}", "span": span, "per second": time}

#: Why each finding matters, in the words of its datasource's events: `WHY[""]` has every key, a datasource only those
#: whose generic words are wrong for its events (`why` falls back to `WHY[""]`). Besides the finding kinds: `noun` (the
#: events), `waited` and `waited note` (what the report's summary and a stall call their time, and what it adds), `wait`
#: and `waiting` (one event's time, and all of it: `time_words`; `{waiting}` in another key's words), `slow` and
#: `fast` (what sends them to a slower band, or lets them finish in a faster one: a fast minority is not a cache
#: miss), and `none`/`count` (a silence's events: Spark logs a task when it ends, so a Spark silence is
#: no task *ending*: one may have run all along).
WHY: dict[str, dict[str, str]] = {
    "": {
        "noun": "events",
        # What a stream's values are where its reader says they measure something else (`Notice.measures`), as a diff
        # of two streams that measure different things names them: "" where these words have no name for them.
        "measured": "",
        "waited": "waited",
        "waited note": "",
        "wait": "wait",
        "waiting": "the waiting",
        "span": "wait",
        "per second": "time waited",  # an intensity map's title: time waited per second
        "slow": "a cache miss, a retry, another device or path",
        "fast": "cache hits, early errors, empty results",
        "none": "no events",
        "count": "{n} event{s}",
        "outliers": "one or two events far from the rest are outliers, not a population of their own: what held them "
                    "up (a stall, a retry, a timeout, a pause) is the cause to find",
        "outliers fast": "one or two events far faster than the rest are outliers, not a population of their own: an "
                         "early error, an empty or cached result?",
        "silence": "the work, the source or its path stopped (or the collector missed it): a throughput collapse is "
                   "often the incident, and the rate over the whole range counts these seconds",
        "silence end": "the work ended (or stopped) before the capture did: rates over the whole range count these "
                       "seconds",
        "silence start": "the capture began before the work did: rates over the whole range count these seconds",
        "bursts": "bursts, not a steady population: at those times something held many requests up at once (a GC "
                  "pause, a checkpoint or flush, a cron job, a network blip); look at what ran then",
        "tail": "a few slow events hold half of {waiting}: cutting them saves more than speeding up the rest",
        "heavy": "a few slow events hold a large share of {waiting}: what makes them slow is worth finding",
        "stall": "a pause: a handful of waits far above every usual band held the stream up; look at what ran "
                 "then (GC, a checkpoint, I/O, a lock, the network)",
        "recurring": "a pause that comes back: something periodic held the stream up each time (a cron job, a "
                     "periodic flush or checkpoint, GC); look at what runs at that period",
        "appear": "a latency band that is not usually there: something started or changed at that time",
        "startup": "only at the stream's start, not an incident in the run: warm-up (JIT compilation, cold "
                   "caches, connections and pools opening) or a load not yet steady; the columns after it are the "
                   "steady state",
        "disappear": "a usual band went missing: a cache warmed, a path stopped being taken, or load went away",
        "move": "the whole distribution moved: a change of device, load or configuration at that time",
        "reshape": "the mix between the usual bands changed at that time",
        # Not "while the rest went on as usual": a surge's rest may keep as little as 60% of its rate, as its line says.
        "surge": "more work of one kind at that time (a burst of cache hits, a batch, a scan, another client): nothing "
                 "slowed down or sped up, the mix did",
        "drift": "a trend, not noise: a growing queue, a leak or a filling device keeps going if left alone",
        "shift": "one lasting jump: something changed at that moment (a deploy, a failover, a cache, another device)",
    },
    # Tasks, logged when they end; a stage is one kind of work, and the first tasks on a cold executor warm it up.
    "spark": {
        "noun": "tasks",
        # another metric's where its label names one (`why`)
        **time_words(SPARK_TIMES["duration"] or "", SPARK_SPANS["duration"]),
        "slow": "skewed partitions, a spill, a slow executor, a shuffle fetch",
        "fast": "tiny or empty partitions, a skipped or cached input",
        "none": "no task ended",
        "count": "{n} task{s} ended",
        "outliers": "one or two tasks far slower than the rest, not a population of their own: a straggler (a skewed "
                    "partition, a spill, a slow executor: see Stragglers) or, at the start, warm-up (a cold "
                    "executor's JVM, JIT, the Python worker's start) is the cause to find",
        "outliers fast": "one or two tasks far faster than the rest, not a population of their own: an empty "
                         "partition, a cached or skipped input, a task that failed early?",
        "silence": "tasks are counted when they end, so the work need not have stopped: a task still running (a "
                   "straggler: see Stragglers) holds its stage while its siblings are done, or the driver was between "
                   "jobs (planning, collecting results, Python code)",
        "silence end": "no task ended after that: the driver's last work (collecting, writing results) or a task still "
                       "running when the log ends; rates over the whole range count these seconds",
        "silence start": "no task ended yet: the application starting (executors, the first stage's planning) or its "
                         "first tasks warming up; rates over the whole range count these seconds",
        "bursts": "bursts, not a steady population: the slow tasks ended in a few columns, one stage's stragglers or "
                  "skewed partitions (see Stragglers and Stages), or warm-up at the start; look at the stages that "
                  "ran then",
        "stall": "tasks far slower than every usual band ended then, not a pause of the work: a straggler (a skewed "
                 "partition, a spill, a slow executor: see Stragglers) or, at the start, warm-up (a cold executor's "
                 "JVM, JIT, the Python worker's start)",
        # Where the log says what made the stragglers among a finding's tasks slow (`with_cause`): that, not a guess.
        "tail": "a few slow tasks hold half of {waiting}: cutting them saves more than speeding up the rest",
        "heavy": "a few slow tasks hold a large share of {waiting}: what makes them slow is worth finding",
        "tail known": "a few slow tasks hold half of {waiting}: cutting them saves more than speeding up the rest; "
                      "{cause}",
        "heavy known": "a few slow tasks hold a large share of {waiting}; {cause}",
        "slow pair known": PAIR + "{cause}",
        "slow known": "a slower population than the main band: {cause}",
        "outliers known": "one or two tasks far slower than the rest, not a population of their own: {cause}",
        "bursts known": "bursts, not a steady population: the slow tasks ended in a few columns; {cause}",
        "stall known": "tasks far slower than every usual band ended then, not a pause of the work: {cause}",
        "startup": "only at the stream's start, not an incident in the run: its first tasks (the application or "
                   "the stage starting: cold executors, the JVM's start, JIT, the Python workers' start)",
        "appear": "tasks of another kind: a new stage (other work, other partition sizes) or a group of slow tasks "
                  "in one (skew, a spill)",
        "disappear": "a usual kind of task stopped ending: the stage that ran them finished",
        "move": "the tasks changed as a whole: a new stage began (other work, other partition sizes); compare the "
                "stages that ran then",
        "reshape": "the mix of task kinds changed: a stage ended or another began beside it",
        "surge": "more tasks of one kind ended at that time, besides the usual ones: a stage of many short (or empty) "
                 "partitions ran then",
        "drift": "a trend, not noise: tasks getting slower over the run (growing partitions, memory filling with "
                 "cached data) or later stages doing heavier work",
        "shift": "one lasting jump: from that moment the stages did other work (another job, other partition sizes), "
                 "or an executor was lost or added",
    },
    # Oracle wait events (event histograms, 10046 traces): a wait is short when a cache below the database served it
    # or the resource was free, not an early error or an empty result; long when it went to disk or queued.
    "oracle": ORACLE_WAITS,
    "oracle10046": ORACLE_WAITS,
    # A jHiccup log (an HdrHistogram log whose header says so: `Notice.measures`): how late a thread that only sleeps
    # (1 ms by default) woke. Its slow values are pauses of the platform the process runs on, not slow requests.
    "jhiccup": {
        "noun": "hiccups",
        "measured": "hiccups (how late a thread that only sleeps woke; its time is jHiccup's sum of them, not time "
                    "waited)",
        "waited": "of hiccups",
        "wait": "hiccup",
        "span": "hiccup",
        "per second": "hiccup time",
        "waited note": "as jHiccup sums them: a pause also adds the samples it kept from being taken (each shorter "
                       "by the sampling interval), so the sum can pass the run's length",
        "slow": "GC pauses, JVM safepoints, OS scheduling or CPU starvation, swapping, THP compaction, a VM's steal "
                "time",
        "fast": "a quiet platform at those times: no GC or safepoint, CPUs free for the thread",
        "outliers": "one or two hiccups far longer than the rest are outliers, not a population of their own: a single "
                    "pause of the platform (a GC pause or safepoint, the process descheduled or swapped out, its VM "
                    "paused) is the cause to find",
        "outliers fast": "one or two hiccups far shorter than the rest are outliers, not a population of their own: "
                         "the platform quieter than usual for a moment?",
        "silence": "no hiccup was recorded: the process (or its host or VM) was paused or stopped, or the log was not "
                   "written; rates over the whole range count these seconds",
        "bursts": "bursts, not a steady population: at those times the platform held the thread up (a GC pause or "
                  "safepoint, the process descheduled or starved of CPU, swapping, a VM's steal time); look at what "
                  "ran then",
        "tail": "a few long hiccups hold half of the time the thread was held up: the platform's longest pauses (GC, "
                "safepoints, the host) are the ones to cut",
        "heavy": "a few long hiccups hold a large share of the time the thread was held up: what paused the platform "
                 "then is worth finding",
        "stall": "a pause of the platform: the thread woke far later than every usual band, and every thread of the "
                 "process was likely held up as long; look at what ran then (a GC pause or safepoint, swapping, THP "
                 "compaction, the process descheduled or its VM paused)",
        "recurring": "a pause of the platform that comes back: something periodic held it up each time (GC at a "
                     "steady allocation rate, a cron job or other periodic work on the host); look at what runs at "
                     "that period",
        "startup": "only at the stream's start, not an incident in the run: the JVM starting (class loading, "
                   "JIT compilation, the heap growing, the first GCs: longer hiccups; CPUs kept busy, out of their "
                   "idle states: shorter ones) and the application's own start-up; the columns after it are the "
                   "steady state",
        "appear": "hiccups of a size not usually there: at that time the platform held the thread up that long (GC "
                  "pauses, JVM safepoints, OS scheduling or CPU starvation, swapping, a VM's steal time); look at what "
                  "ran then",
        "disappear": "a usual band of hiccups went away: the GC, the load on the host or the other work that caused "
                     "it stopped",
        "reshape": "the mix of the usual hiccup sizes changed at that time: the platform's pauses (GC pauses, JVM "
                   "safepoints, the host's CPU load, a VM's steal time) came more or less often than usual; look at "
                   "what ran then",
        "move": "the platform's hiccups moved as a whole: the host's load (other processes, CPU contention), the GC's "
                "work or the machine (a VM moved, a power state) changed at that time",
        "surge": "more hiccups of one size at that time beside the usual ones: the platform held the thread up that "
                 "long more often then (GC, safepoints, other load on the host's CPUs)",
        "drift": "a trend, not noise: the platform's pauses growing (a heap filling and GC working harder, load "
                 "building on the host) keep going if left alone",
        "shift": "one lasting jump: the platform changed at that moment (other load on the host or its CPUs, a GC or "
                 "heap setting, a VM moved or throttled)",
    },
    # Steps and data waits of a training loop: periodic checkpoints and eval passes; the first steps compile, warm up.
    "training": {
        "noun": "steps or waits",
        "slow": "a DataLoader that cannot keep up, a sync between ranks, a checkpoint",
        "fast": "a batch already prefetched, a cached sample, a short or empty batch",
        "outliers": "one or two steps or waits far from the rest are outliers, not a population of their own: the "
                    "first steps' warm-up (compilation, autotuning, workers starting), a checkpoint or an eval pass is "
                    "the cause to find",
        "silence": "no step or wait was timed: the loop hung (a collective, a DataLoader deadlock), ran untimed work "
                   "(an eval pass, a checkpoint), or its timings did not reach the collector",
        "bursts": "bursts, not a steady population: at those times the loop was held up (a checkpoint save, an eval "
                  "pass, a DataLoader stall or worker restart, a sync between ranks); look at what ran then",
        "stall": "a pause: a handful of steps or waits far above every usual band held the loop up; look at what ran "
                 "then (a DataLoader stall, a checkpoint save, an eval pass, a sync between ranks, GC)",
        "recurring": "a pause that comes back: something periodic held the loop up each time (each epoch's start "
                     "or end: the DataLoader's workers starting or shutting down; an eval pass or a checkpoint every "
                     "N steps)",
        "startup": "only at the stream's start, not an incident in the run: the loop's first steps "
                   "(compilation, autotuning, DataLoader workers starting, caches filling)",
        "move": "the whole distribution moved: another phase of the run (an eval pass, a new epoch, another batch "
                "size or sequence length) or another device or load",
        "shift": "one lasting jump: something changed at that moment (a throttled GPU or a busy host, another phase "
                 "of the run, another batch size or sequence length)",
    },
}


#: Per wait class of `ORACLE_CLASSES`, its words as one pattern of whole words, compiled at first use.
_ORACLE_CLASS_WORDS = [lazy_pattern(rf"(?<![a-z])(?:{'|'.join(map(re.escape, names))})(?![a-z])")
                       for names, _, _ in ORACLE_CLASSES]
#: The task metric a Spark stream's label names (`SPARK_TIMES`): `task METRIC` at its end, or before the ` (2)` of a
#: cut name another stream had or the ` [INPUT]` of a run shown apart.
_SPARK_METRIC = lazy_pattern(rf" task ({'|'.join(map(re.escape, SPARK_TIMES))})(?= \(\d+\)| \[|$)")


#: The keys of `WHY` that say a stream's time (`time_words`).
TIME_KEYS = frozenset(time_words(""))


def words_for(datasource: str, measures: str = "") -> str:
    """The `WHY` entry a stream is worded by: what its values measure (`Notice.measures`), else (or where this
    version has no words for that: a newer one's recording) its datasource."""
    return measures if measures and measures in WHY else datasource


def why(key: str, datasource: str = "", label: str = "") -> str:
    """`WHY[datasource][key]`, or the generic `WHY[""][key]` where the datasource has no words of its own; an Oracle
    wait event's `slow` and `fast` are its wait class's (`ORACLE_CLASSES`, by the event its stream's `label` names),
    a Spark stream's time (`time_words`) its task metric's (`SPARK_TIMES`, by the metric its `label` names); `{waiting}`
    in the words is the stream's `waiting`."""
    words = WHY.get(datasource, {})
    if datasource == "spark" and key in TIME_KEYS and (metrics := _SPARK_METRIC().findall(label)):
        time = SPARK_TIMES[metrics[-1]]
        if key == "span":
            return SPARK_SPANS.get(metrics[-1], "")
        return time_words(time)[key] if time else WHY[""][key]
    if words is ORACLE_WAITS and key in ("slow", "fast"):
        event = label.lower()
        for words_of, (_, slow, fast) in zip(_ORACLE_CLASS_WORDS, ORACLE_CLASSES, strict=True):
            if words_of().search(event):
                return slow if key == "slow" else fast
    said = words.get(key) or WHY[""][key]
    return said.replace("{waiting}", why("waiting", datasource, label)) if "{waiting}" in said else said


def intensity_what(datasource: str, measures: str = "", label: str = "") -> str:
    """What a stream's intensity map sums per second, in its words: `time waited`, Spark's `GC time` (by the metric
    its label names), a jHiccup log's `hiccup time`."""
    return why("per second", words_for(datasource, measures), label)


@dataclass
class Finding:
    """One thing worth saying about a stream (or a group of peers), with its evidence."""

    kind: str
    what: str
    why: str
    events: float
    events_share: float
    time_s: float
    time_share: float
    first_col: int | None = None
    last_col: int | None = None
    start: float | None = None
    end: float | None = None
    low_s: float | None = None
    high_s: float | None = None
    #: A band whose events came in a few columns (bursts): said on its own line, with when.
    bursts: bool = False
    #: The slow events whose cause its why leaves to find, where a source's own analysis may know it instead: a slow
    #: band ("slow", "slow pair" of a bimodal stream), "outliers", "bursts", a "stall", a "tail" or a "heavy" one (see
    #: `with_cause`); "" where none may.
    key: str = ""
    #: A slower band said as minor beside the one holding the time (`minor_lead`): the lead its why keeps when
    #: `with_cause` names the known cause; "" otherwise.
    minor: str = ""

    def holds(self, value_s: float, at: float) -> bool:
        """Whether an event of `value_s` seconds that ended at `at` (epoch seconds) is one of those it is about: in its
        latency range, and in its time (bursts: the whole range's, their columns holding most of the band's events)."""
        if self.low_s is None or self.high_s is None or not self.low_s <= value_s <= self.high_s:
            return False
        return self.bursts or (self.start is not None and self.end is not None and self.start <= at <= self.end)

    def line(self) -> str:
        """The finding as one text line: what (with where and how much), then why."""
        return f"{self.what} — {self.why}"

    def to_json(self) -> dict[str, Any]:
        """The report's finding object."""
        return {
            "kind": self.kind, "what": self.what, "why": self.why,
            "where": {"first_col": self.first_col, "last_col": self.last_col, "start": self.start, "end": self.end,
                      "low_s": self.low_s, "high_s": self.high_s},
            "events": self.events, "events_share": self.events_share, "time_s": self.time_s,
            "time_share": self.time_share,
        }


def with_cause(f: Finding, cause: str, datasource: str) -> Finding:
    """`f` with its why naming `cause`, what a source's own analysis says made its events slow (Spark: its
    stragglers'), instead of the causes its events usually have; `f` itself where its datasource has no such words
    for its kind. Its time is in the datasource's default words (`why` without a label): a source's analysis names
    causes only where it measured what the stream maps (`measures_mapped`: Spark's, task durations)."""
    if not f.key or f"{f.key} known" not in WHY.get(datasource, {}):
        return f
    return replace(f, why=f"{f.minor}; {cause}" if f.minor else why(f"{f.key} known", datasource).format(cause=cause))


def pct(share: float) -> str:
    """`61%`, `4%`, `0.3%`, `0%`, `99.9%` (never `100%` for a share short of all: it would hide the rest)."""
    v = 100.0 * share
    if 99.5 <= v < 100 - 1e-7:  # closer to 100 than that is rounding in float sums, not a missing event
        for digits in range(1, 6):
            text = f"{v:.{digits}f}"
            if float(text) < 100:
                return f"{text}%"
        return "99.99999%"
    if v >= 1 or v == 0:
        return f"{v:.0f}%"
    return f"{v:.1g}%"


def dur(seconds: float) -> str:
    """A latency for humans (`131µs`)."""
    return format_duration(seconds, long_units=True)


def span(low_s: float, high_s: float, high_slot: int = -1) -> str:
    """A latency range `131µs–1.05ms`; `≥low` where it ends in the open top bucket (`high_slot`, the slot of its
    upper edge), as the bucket table writes that bucket."""
    return range_text(low_s, high_s, high_slot, long_units=True)


def times(ratio: float, against: float | None = None) -> str:
    """`1,970×`, `3.92×`, `1.00×`, `0.50×`, `0.042×`; with more digits where these would round it across the
    threshold `against` (1.2496 against 1.25 is `1.2496×`, not `1.25×`): every ratio of a report is written by this one
    function."""
    if ratio >= 10:
        return f"{ratio:,.0f}×"
    text, more = (f"{ratio:.2f}", (f"{ratio:.{d}f}" for d in range(3, 17))) if ratio >= 0.1 else \
        (f"{ratio:.2g}", (f"{ratio:.{d}g}" for d in range(3, 17)))
    while against is not None and (float(text) >= against) != (ratio >= against):
        text = next(more, repr(ratio))
    return f"{text}×"


@dataclass
class Scope:
    """The diagnosed columns: absolute numbers, times, and totals."""

    first_col: int
    last_col: int
    start: float
    end: float
    t0: float
    events: float
    time_s: float
    #: The stream's datasource: findings name the causes its events usually have.
    datasource: str = ""
    #: The stream's label: an Oracle stream's names its wait event, whose class words its bands' causes.
    label: str = ""
    #: Columns dropped before column 0 (a history limit): column 0 is then no start of the recording.
    dropped: int = 0
    #: What the stream's values measure where its datasource does not say (`Notice.measures`: "jhiccup"), else "".
    measures: str = ""

    @property
    def words(self) -> str:
        """The `WHY` entry its findings are worded by: what its values measure, else (or where this version has no
        words for that: a newer one's recording) its datasource."""
        return words_for(self.datasource, self.measures)

    def when(self, first_col: int, last_col: int, start: float, end: float) -> str:
        """`cols 40–49 (t+40s–t+50s)`, `col 30 (t+30s–t+31s)`."""
        return f"{cols(first_col, last_col)} (t+{since(start - self.t0)}–t+{since(end - self.t0)})"


def since(seconds: float) -> str:
    """Time since the range's start: `40s`, `2.011s`; past 1,000 s in minutes, hours or days (`2.78h`), never
    `1e+04s`."""
    return f"{seconds:.4g}s" if abs(seconds) < 1000 else format_duration(seconds, 4, long_units=True)


def cols(first_col: int, last_col: int) -> str:
    """`cols 40–49`, or `col 30` for a single column."""
    return f"col {first_col}" if first_col == last_col else f"cols {first_col}–{last_col}"


def band_why(datasource: str, *, faster: bool = False, ratio: float = float("nan"), pair: bool = True,
             label: str = "", minor: str = "") -> str:
    """Why a band beyond the main one matters, with the causes a `datasource`'s events usually have (`label`: the
    stream's, see `why`).

    `faster`: the band lies below the main one (`ratio`: how many times faster its events are), so what lets events
    finish early is the cause, not what slows them; `pair`: the stream has just the two bands (bimodal), else the
    band is one of several and its line names it; `minor`: a slower band holds little of the time beside another that
    holds most of it (`2% of the time against 98% in 65.5ms–2.1s`): that one is the band to look at.
    """
    noun = why("noun", datasource)
    if faster:
        how = f" {times(ratio)} sooner" if ratio == ratio and ratio > 1 else " sooner"  # NaN: not known
        cause = f"({why('fast', datasource, label)}) is the cause to find"
        if pair:
            return PAIR + f"what lets {noun} of the faster band finish{how} {cause}"
        return f"a faster population than the main band: what lets these {noun} finish{how} {cause}"
    if minor:
        return f"{minor_lead(minor, pair)}; what sends {noun} to it ({why('slow', datasource, label)}) costs little " \
            "time"
    cause = f"({why('slow', datasource, label)}) is the cause to find"
    if pair:
        return PAIR + f"what sends {noun} to the slower band {cause}"
    return f"a slower population than the main band: what sends {noun} to it {cause}"


def minor_lead(minor: str, pair: bool) -> str:
    """`a slower population than the main band, but a minor one: 2% of the time against 98% in 65.5ms–2.1s, the band
    to look at first` (`pair`: of a bimodal stream): what a minor band's why says before its cause, known or not."""
    lead = (PAIR + "the slower band is") if pair else "a slower population than the main band, but"
    return f"{lead} a minor one: {minor}, the band to look at first"


def band_finding(b: Band, scope: Scope, main: Band, pair: bool = True, shift: Drift | None = None,
                 heavy: Band | None = None, startup: tuple[Episode, float] | None = None) -> Finding:
    """A band beyond the main one (one or two events: outliers, said so), its why fitting its direction: a band
    below the main one is a fast minority, not a slow one. `pair`: the stream has only these two bands; `shift`: the
    shift whose two sides the band and the main one are (one level before it, the other after), which explains them;
    `heavy`: the band that holds most of the time where this slower one holds little of it (`diagnosis.heavy_beside`):
    this one is then said as minor; `startup`: the recording's start-up episode that holds (most of) the band's
    events, which explains them, and how many came after it: those have a cause in the run to find (unless they
    are outliers)."""
    few = outliers(b)
    (events_share, time_share), (main_events, main_time) = b.shown_shares, main.shown_shares  # of the ranges named
    held = f"{few} event{'s' if few > 1 else ''} ({pct(events_share)})" if few else f"{pct(events_share)} of events"
    what = (f"band {span(b.low_s, b.high_s, b.high_slot)}: {held} {'takes' if few == 1 else 'take'} "
            f"{pct(time_share)} of the time (main band "
            f"{span(main.low_s, main.high_s, main.high_slot)}: {pct(main_events)} of events, {pct(main_time)} of the "
            "time)")
    faster = b.mode_slot < main.mode_slot
    if b.bursts and not faster:
        what += f"; {pct(b.burst_share)} of them in {burst_text(b.bursts, scope)}"
        (first, t_first), (last, t_last) = b.bursts[0], b.bursts[-1]
        return Finding("band", what, why("bursts", scope.words), b.events, b.events_share, b.time_s,
                       b.time_share, first, last, t_first, t_last, b.low_s, b.high_s, bursts=True, key="bursts")
    key = lead = ""
    if few:
        reason = why("outliers fast" if faster else "outliers", scope.words)
        key = "" if faster else "outliers"
    elif shift is not None and shift.at_col is not None and shift.at is not None:
        reason = (f"the levels before and after the shift at col {shift.at_col} (t+{since(shift.at - scope.t0)}), not "
                  "two populations at once: what changed at that moment is the cause to find")
    elif startup is not None:
        (e, later), noun = startup, why("noun", scope.words)
        where = scope.when(e.first_col, e.last_col, e.start, e.end)
        if round(later) < POPULATION:
            reason = (f"the stream's start-up at {where}, not a population of the run: what sent {noun} there is "
                      "the start-up's, not a cause to find in the steady state after it")
        else:
            reason = (f"the stream's start-up at {where} holds {pct(1 - later / b.events)} of them, not a "
                      f"population of the run: what sent {noun} there is the start-up's; the other {later:,.0f} came "
                      "after it, in the run: what sent them there is the cause to find")
    else:
        ratio = mean_s(main) / mean_s(b) if mean_s(b) > 0 else float("nan")
        minor = "" if heavy is None else (f"{pct(time_share)} of the time against {pct(heavy.shown_shares[1])} in "
                                          f"{span(heavy.low_s, heavy.high_s, heavy.high_slot)}")
        reason = band_why(scope.words, faster=faster, ratio=ratio, pair=pair, label=scope.label, minor=minor)
        key = "" if faster else "slow pair" if pair else "slow"
        lead = minor_lead(minor, pair) if minor and not faster else ""
    return Finding("band", what, reason, b.events, b.events_share, b.time_s, b.time_share,
                   scope.first_col, scope.last_col, scope.start, scope.end, b.low_s, b.high_s, key=key,
                   minor=lead)


def silence_finding(q: Silence, scope: Scope) -> Finding:
    """Columns without the events a continuous stream's usual rate says were due."""
    where = scope.when(q.first_col, q.last_col, q.start, q.end)
    ds = scope.words
    got = why("none", ds) if q.events == 0 else why("count", ds).format(n=f"{q.events:,.0f}", s="s" * (q.events != 1))
    what = (f"silence {where}: {got} in {dur(q.end - q.start)} where the usual {format_number(q.usual_rate)}/s "
            f"would give {q.expected:,.0f}")
    edge = "silence end" if q.last_col >= scope.last_col else "silence start" if q.first_col <= scope.first_col \
        else "silence"
    return Finding("silence", what, why(edge, ds), q.events, 0.0, 0.0, 0.0, q.first_col, q.last_col, q.start, q.end)


def burst_text(bursts: list[tuple[int, float]], scope: Scope) -> str:
    """`col 30 (t+30s)`, `cols 30, 60 and 90 (t+30s, t+60s, t+90s)`, or, on a period (some may be missing), `10 columns
    on a period of 10 from col 5 (t+5s) to col 115 (t+115s)`."""
    cols = [c for c, _ in bursts]
    at = [f"t+{since(t - scope.t0)}" for _, t in bursts]
    steps = [b - a for a, b in itertools.pairwise(cols)]
    step = min(steps, default=0)
    if len(cols) >= 4 and step >= 2 and all(d % step == 0 for d in steps):  # on a period, some maybe missed
        return (f"{len(cols)} columns on a period of {step} from col {cols[0]} ({at[0]}) to col {cols[-1]} "
                f"({at[-1]})")
    if len(cols) == 1:
        return f"col {cols[0]} ({at[0]})"
    shown = min(len(cols), 5)
    names = ", ".join(str(c) for c in cols[:shown - 1]) + f" and {cols[shown - 1]}"
    more = f", and {len(cols) - shown} more" if len(cols) > shown else ""
    return f"cols {names} ({', '.join(at[:shown])}{more})"


def mean_s(b: Band) -> float:
    """A band's mean latency (0 without events)."""
    return b.time_s / b.events if b.events > 0 else 0.0


#: A band of fewer events is a few outliers, not a population.
POPULATION = 3


def outliers(b: Band) -> int:
    """How many events a band of one or two holds (0: a population)."""
    return round(b.events) if 0 < b.events < POPULATION else 0


def tail_finding(t: Tail, scope: Scope, top_s: float) -> Finding:
    """A tail that holds at most a small share of the events: most of the time, or (heavy) a large share of it."""
    most = t.time_share >= 0.5
    # a dominant tail holds half of the time by definition (`tail_dominance`): said as what defines it, not a measure
    held = "half" if t.time_share == 0.5 else pct(t.time_share)
    what = (f"{'tail dominates' if most else 'heavy tail'}: {pct(t.events_share)} of events (≥ {dur(t.threshold_s)}) "
            f"take {held} of the time")
    key = "tail" if most else "heavy"
    return Finding("tail", what, why(key, scope.words, scope.label), t.events, t.events_share, t.time_s, t.time_share,
                   scope.first_col, scope.last_col, scope.start, scope.end, t.threshold_s, top_s, key=key)


def episode_what(e: Episode, scope: Scope, startup: bool = False) -> str:
    """`episode cols 40–49 (t+40s–t+50s): a band appeared at ...`, `start-up cols 0–1 (...): a band at ...` (`startup`:
    the recording's start-up, see `is_startup`), or `stall cols ...: 2 events of ...`."""
    where = scope.when(e.first_col, e.last_col, e.start, e.end)
    g, lost = e.gained, e.lost
    if e.kind == "stall" and g:
        mean = e.time_s / e.events if e.events > 0 else 0.0
        median = mean / 2.0 ** e.shift_octaves
        wait, one = why("wait", scope.words, scope.label), why("span", scope.words, scope.label)
        if e.began_before and one:  # said of the waits, in words that claim no other column
            least, most = e.began_before
            where = (f"{where[:-1]}; the {one} ending in col {e.first_col} began "
                     f"{dur(most) if dur(least) == dur(most) else span(least, most)} before it)")
        return (f"stall {where}: {e.events:.0f} event{'s' if e.events != 1 else ''} of "
                f"{span(g.low_s, g.high_s, g.high_slot)}, "
                f"{dur(e.time_s)} {why('waited', scope.words, scope.label)} = {pct(e.time_share)} of all the time "
                f"and {pct(g.time_share)} of those columns'; {'its' if e.events == 1 else 'their mean'} {wait} "
                f"({dur(mean)}) is {times(2.0 ** e.shift_octaves)} the stream's p50 ({dur(median)})")
    if e.kind == "appear" and g:
        what = f"a band {'' if startup else 'appeared '}at {span(g.low_s, g.high_s, g.high_slot)} with {shares(g)}"
    elif e.kind == "disappear" and lost:
        what = (f"the band at {span(lost.low_s, lost.high_s, lost.high_slot)} disappeared, down to "
                f"{pct(lost.events_share)} of events "
                f"(usually {pct(lost.baseline_share)})")
    elif e.kind == "surge" and g and e.gained_rate is not None and e.usual_rate is not None:
        what = (f"{format_number(e.gained_rate - e.usual_rate)} more events/s in "
                f"{span(g.low_s, g.high_s, g.high_slot)} on top of "
                f"the usual load ({format_number(e.gained_rate)}/s, usually {format_number(e.usual_rate)}/s), the "
                + ("rest at its usual rate" if (e.rest_ratio or 1.0) >= 0.9 else
                   f"rest at {pct(e.rest_ratio or 0.0)} of its usual rate"))
    elif e.kind == "move":
        what = f"latency moved {e.shift_octaves:+.1f} octaves" + (
            f": {span(lost.low_s, lost.high_s, lost.high_slot)} → {span(g.low_s, g.high_s, g.high_slot)}"
            if g and lost else "")
    elif g and startup:  # no before to shift from
        what = f"{shares(g)} in {span(g.low_s, g.high_s, g.high_slot)}"
    elif g:
        what = f"shares shifted toward {span(g.low_s, g.high_s, g.high_slot)}, now {shares(g)}"
    else:
        what = f"the latency shape changed ({e.kind})"
    if e.kind not in ("move", "surge") and abs(e.shift_octaves) >= MIN_MOVE_OCTAVES:
        what += f"; median {e.shift_octaves:+.1f} octaves"
    return f"{'start-up' if startup else 'episode'} {where}: {what}"


def shares(g: Region) -> str:
    """`85% of events (usually 67%) and 22% of the time (usually 35%)`: each usual share beside its own."""
    return (f"{pct(g.events_share)} of events (usually {pct(g.baseline_share)}) and {pct(g.time_share)} of the time "
            f"(usually {pct(g.baseline_time_share)})")


#: The episodes that, from the recording's first column, are its start-up: a band only there, the latency elsewhere, or
#: the usual bands in another mix (a cold cache's misses, a load not yet steady). Not a `surge`: more work of one kind
#: on top of the usual load is the run's own, at its start as later (a 10046 trace's first surge is one of five alike).
STARTUP_KINDS = ("appear", "move", "reshape")


def is_startup(e: Episode, scope: Scope, share: float) -> bool:
    """True when episode `e` is the recording's start-up: one of `STARTUP_KINDS` from its first column (0, none
    dropped before it) that ends within `share` of the columns up to the range's end (`Thresholds.startup_share`)."""
    return e.kind in STARTUP_KINDS and e.first_col == 0 and not scope.dropped \
        and e.last_col + 1 <= share * (scope.last_col + 1)


def episode_finding(e: Episode, scope: Scope, startup_share: float = 0.0) -> Finding:
    """An episode (a stall included) as a finding; one that `is_startup` (within `startup_share` of the columns) is
    said as the recording's start-up."""
    g = e.gained or e.lost
    startup = is_startup(e, scope, startup_share)
    reason = why("startup" if startup else e.kind if e.kind in WHY[""] else "reshape", scope.words)
    return Finding(e.kind, episode_what(e, scope, startup), reason, e.events, e.events_share,
                   e.time_s, e.time_share, e.first_col, e.last_col, e.start, e.end,
                   g.low_s if g else None, g.high_s if g else None, key="stall" if e.kind == "stall" else "")


#: This many stalls or more are also said as one recurring stall, with how often.
RECURRING_STALLS = 3


def recurring_finding(stalls: list[Episode], scope: Scope) -> Finding | None:
    """`recurring stall: 5 times, ~1.6s waited each, one every ~6.2s (cols 0, 6, ...): 8.3s = 53% of all the time`:
    `RECURRING_STALLS` or more pauses (not Spark's slow tasks ending) at a steady period: the times between them agree
    within a quarter of their median, or within a stall's columns (when in its columns a wait ended is not known)."""
    if len(stalls) < RECURRING_STALLS or scope.datasource == PARALLEL:
        return None
    ends = np.array([e.end for e in stalls])
    gaps = np.diff(ends)
    period = float(np.median(gaps))
    if np.any(np.abs(gaps - period) > max(0.25 * period, max(e.end - e.start for e in stalls))):
        return None
    waited = float(np.median([e.time_s for e in stalls]))
    time_s, time_share = sum(e.time_s for e in stalls), sum(e.time_share for e in stalls)
    named = ", ".join(str(e.first_col) if e.first_col == e.last_col else f"{e.first_col}–{e.last_col}"
                      for e in stalls)
    what = (f"recurring stall: {len(stalls)} times, ~{dur(waited)} {why('waited', scope.words, scope.label)} each, "
            f"one every ~{dur(period)} (cols {named}): {dur(time_s)} = {pct(time_share)} of all the time")
    low = [e.gained.low_s for e in stalls if e.gained]
    high = [e.gained.high_s for e in stalls if e.gained]
    return Finding("recurring", what, why("recurring", scope.words), sum(e.events for e in stalls),
                   sum(e.events_share for e in stalls), time_s, time_share, stalls[0].first_col, stalls[-1].last_col,
                   stalls[0].start, stalls[-1].end, min(low) if low else None, max(high) if high else None)


def drift_finding(d: Drift, scope: Scope) -> Finding:
    """A trend of the median, or one lasting jump of it."""
    where = scope.when(d.first_col, d.last_col, d.start, d.end)
    low, high = min(d.first_median_s, d.last_median_s), max(d.first_median_s, d.last_median_s)
    if d.kind == "shift" and d.at_col is not None and d.at is not None:
        what = (f"shift at col {d.at_col} (t+{since(d.at - scope.t0)}): the median went {dur(d.first_median_s)} → "
                f"{dur(d.last_median_s)} and stayed ({d.octaves:+.1f} octaves, {times(2.0 ** d.octaves)})")
        return Finding("shift", what, why("shift", scope.words), scope.events, 1.0, scope.time_s, 1.0, d.at_col,
                       d.last_col, d.at, d.end, low, high)
    what = (f"drift {where}: the median went {dur(d.first_median_s)} → {dur(d.last_median_s)} "
            f"({d.octaves:+.1f} octaves, {times(2.0 ** d.octaves)}; the trend explains {pct(d.r2)} of the "
            "column medians' variance)")
    return Finding("drift", what, why("drift", scope.words), scope.events, 1.0, scope.time_s, 1.0, d.first_col,
                   d.last_col, d.start, d.end, low, high)
