"""Task metrics in ms, time columns (fixed or automatic width) and their exact histograms as Intervals."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping

import numpy as np

from latencymap.core.buckets import NSLOTS, TOP_SLOT, bin_extremes, bin_values, past_top, past_top_note
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.sanitize import StreamNames, clean_label, clean_text

from .parse import SparkTask

DATASOURCE = "spark"
UNIT = "millisec"
#: Interval widths (ms) automatic binning chooses from.
NICE_MS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000,
           600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000)
MAX_COLUMNS = 200
#: Longest run of empty columns written one by one; a longer idle stretch becomes one empty column (so a task
#: logged with a bogus time, e.g. a Finish Time of 0, cannot make years of columns).
MAX_EMPTY_COLUMNS = 1000
#: Finish times (epoch ms) outside [0, 2**44), after the year 2500, are bogus: such tasks are not binned.
MAX_FINISH_MS = 1 << 44
#: Metric values (ms) of this or more are no task's (and their sums would overflow): they are not binned.
MAX_VALUE_MS = 1e30
#: Per column: counts, sums (ms) and the (2, NSLOTS) smallest and largest value (ms) per slot.
Columns = dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
#: The streams a reader made, by stream key: the stage (one stream per stage), or None (the application's).
Streams = dict[int | None, StreamId]


def _scheduler_delay(t: SparkTask) -> float | None:
    """The Spark UI's scheduler delay: what the task's wall time does not spend in its own phases."""
    if t.run_ms is None or t.deserialize_ms is None:
        return None
    getting = t.finish_ms - t.getting_result_ms if t.getting_result_ms > 0 else 0
    return float(max(0, t.duration_ms - t.run_ms - t.deserialize_ms - (t.result_serialize_ms or 0) - getting))


def _ns(value: float | None) -> float | None:
    return None if value is None else value / 1e6


#: --metric name -> (what it is, value in ms or None when the task does not have it).
METRICS: dict[str, tuple[str, Callable[[SparkTask], float | None]]] = {
    "duration": ("task wall time, launch to finish", lambda t: float(t.duration_ms)),
    "run": ("Executor Run Time", lambda t: t.run_ms),
    "cpu": ("Executor CPU Time", lambda t: _ns(t.cpu_ns)),
    "gc": ("JVM GC Time", lambda t: t.gc_ms),
    "deserialize": ("Executor Deserialize Time", lambda t: t.deserialize_ms),
    "fetch-wait": ("shuffle Fetch Wait Time", lambda t: t.fetch_wait_ms),
    "shuffle-write": ("Shuffle Write Time", lambda t: _ns(t.shuffle_write_ns)),
    "scheduler-delay": ("duration minus run, deserialize, result serialize, getting result", _scheduler_delay),
}


def auto_interval_ms(first_ms: int, last_ms: int, max_columns: int = MAX_COLUMNS) -> int:
    """The narrowest nice width that fits [first, last] in at most `max_columns` epoch-aligned columns."""
    for width in NICE_MS:
        if last_ms // width - first_ms // width + 1 <= max_columns:
            return width
    return NICE_MS[-1]


def stream_for(names: StreamNames, app_name: str, metric: str, stage: int | None = None) -> StreamId:
    """The stream of an application's metric, or of one stage of it, named by the run's `names`: a long application
    name is cut in the middle, so its stages stay apart (the name comes from the log)."""
    where = f" stage {stage}" if stage is not None else ""
    return StreamId(names.name(clean_label(f"spark {app_name}{where} task {metric}")), DATASOURCE, UNIT)


def plausible(t: SparkTask) -> bool:
    """True when the task's Finish Time can be placed in a column."""
    return 0 <= t.finish_ms < MAX_FINISH_MS


def without_metrics(tasks: list[SparkTask], metric: str) -> Notice | None:
    """The note that the map of `metric` (a Task Metrics one) leaves out the attempts that logged no Task Metrics
    (those a lost executor or a fetch failure ended), counted by their end reason; None when there are none."""
    placed = [t for t in tasks if plausible(t)]
    return metrics_note(metric, Counter(metricless_reason(t, metric) for t in placed), len(placed))


def metricless_reason(task: SparkTask, metric: str) -> str | None:
    """Why the map of `metric` leaves `task` out for want of Task Metrics (its end reason); None when it does not."""
    if metric == "duration" or task.run_ms is not None or METRICS[metric][1](task) is not None:
        return None
    return task.reason or "no reason logged"


def metrics_note(metric: str, reasons: Mapping[str | None, int], placed: int) -> Notice | None:
    """`without_metrics`'s note from the count of each `metricless_reason` (None: kept) over `placed` attempts."""
    left = {reason: n for reason, n in reasons.items() if reason is not None and n}
    if not left:
        return None
    why = ", ".join(f"{clean_text(reason, 80)} {n:,}" for reason, n in sorted(left.items()))
    return Notice(f"spark: --metric {metric}: {sum(left.values()):,} of {placed:,} task attempts logged no "
                  f"Task Metrics ({why}): left out of the map (--metric duration maps every attempt)", skipped=0)


def implausible(tasks: list[SparkTask]) -> int:
    """How many tasks `plausible` rejects."""
    try:
        finish = np.array([t.finish_ms for t in tasks], dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        return sum(not plausible(t) for t in tasks)
    return int(np.count_nonzero((finish < 0) | (finish >= MAX_FINISH_MS)))


def task_values(tasks: Iterable[SparkTask], metric: str, stages: frozenset[int] | None = None,
                per_stage: bool = False) -> dict[int | None, tuple[np.ndarray, np.ndarray]]:
    """Per stream key (stage, or None for all): finish times (ms) and metric values (ms), in task order."""
    tasks = tasks if isinstance(tasks, list) else list(tasks)
    try:
        return _task_arrays(tasks, metric, stages, per_stage)
    except (OverflowError, TypeError, ValueError):  # a value NumPy cannot hold: task by task, as it always was
        return _task_lists(tasks, metric, stages, per_stage)


def _task_arrays(tasks: list[SparkTask], metric: str, stages: frozenset[int] | None,
                 per_stage: bool) -> dict[int | None, tuple[np.ndarray, np.ndarray]]:
    """`task_values` with NumPy: the same selection as `_task_lists` (None and NaN fail `< MAX_VALUE_MS`)."""
    finish = np.array([t.finish_ms for t in tasks], dtype=np.int64)
    if metric == "duration":  # finish - launch, exact while both are within ±2**62
        launch = np.array([t.launch_ms for t in tasks], dtype=np.int64)
        if np.any((launch > 2**62) | (launch < -(2**62)) | (finish > 2**62) | (finish < -(2**62))):
            raise ValueError("times too far apart to subtract in int64")
        values = (finish - launch).astype(np.float64)
    else:
        value_of = METRICS[metric][1]
        values = np.array([value_of(t) for t in tasks], dtype=np.float64)  # None -> NaN
    if np.any(np.abs(values - MAX_VALUE_MS) < MAX_VALUE_MS * 1e-15):
        raise ValueError("an integer just below MAX_VALUE_MS compares exactly only task by task")
    keep = (finish >= 0) & (finish < MAX_FINISH_MS) & (values < MAX_VALUE_MS)
    if stages is None and not per_stage:
        return {None: (finish[keep], values[keep])} if keep.any() else {}
    stage = np.array([t.stage for t in tasks], dtype=np.int64)
    if stages is not None:
        keep &= np.isin(stage, np.array(sorted(stages), dtype=np.int64))
    finish, values, stage = finish[keep], values[keep], stage[keep]
    if not per_stage:
        return {None: (finish, values)} if len(finish) else {}
    order = np.argsort(stage, kind="stable")  # each stage's tasks together, in task order
    keys, starts = np.unique(stage[order], return_index=True)
    bounds = [*starts.tolist(), len(order)]
    return {k: (finish[order[bounds[i]:bounds[i + 1]]], values[order[bounds[i]:bounds[i + 1]]])
            for i, k in enumerate(keys.tolist())}


def _task_lists(tasks: list[SparkTask], metric: str, stages: frozenset[int] | None,
                per_stage: bool) -> dict[int | None, tuple[np.ndarray, np.ndarray]]:
    """`task_values` one task at a time."""
    value_of = METRICS[metric][1]
    finish: dict[int | None, list[int]] = defaultdict(list)
    values: dict[int | None, list[float]] = defaultdict(list)
    for t in tasks:
        if (stages is not None and t.stage not in stages) or not plausible(t):
            continue
        v = value_of(t)
        if v is None or not v < MAX_VALUE_MS:
            continue
        key = stream_key(t.stage, per_stage)
        finish[key].append(t.finish_ms)
        values[key].append(v)
    return {k: (np.asarray(finish[k], dtype=np.int64), np.asarray(values[k], dtype=np.float64)) for k in finish}


def cells(finish_ms: np.ndarray, values: np.ndarray, width_ms: int) -> Columns:
    """Per column holding a counted value: (counts, sums_ms, extremes_ms) with `bin_values` and `bin_extremes`
    (values they drop fill no column)."""
    keep = np.isfinite(values) & (values >= 0)
    col, values = finish_ms[keep] // width_ms, values[keep]
    order = np.argsort(col, kind="stable")
    col, values = col[order], values[order]
    uniq, starts = np.unique(col, return_index=True)
    bounds = [*starts.tolist(), len(col)]
    return {c: _binned(values[bounds[i]:bounds[i + 1]]) for i, c in enumerate(uniq.tolist())}


def _binned(values_ms: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts, sums and extremes per slot of one column's values (ms)."""
    counts, sums = bin_values(values_ms)
    return counts, sums, bin_extremes(values_ms)


def spans_covering(filled: list[int], start: int, stop: int) -> list[tuple[int, int]]:
    """`[first, stop)` column spans from `start` to `stop`: each filled column (sorted, in range) alone, the empty
    ones between them one by one, or as one span when more than MAX_EMPTY_COLUMNS in a row."""
    out: list[tuple[int, int]] = []
    pos = start
    for c in [*filled, stop]:
        if c - pos > MAX_EMPTY_COLUMNS:
            out.append((pos, c))
        else:
            out += [(k, k + 1) for k in range(pos, c)]
        if c < stop:
            out.append((c, c + 1))
            pos = c + 1
    return out


def intervals_from_cells(stream: StreamId, columns: Columns, width_ms: int) -> list[Interval]:
    """One Interval per filled column and per empty column between them (see `spans_covering`), exact time in s."""
    if not columns:
        return []
    filled = sorted(columns)
    empty = (np.zeros(NSLOTS, dtype=np.int64), np.zeros(NSLOTS), np.full((2, NSLOTS), np.nan))
    out = []
    for first, stop in spans_covering(filled, filled[0], filled[-1] + 1):
        counts, sums_ms, extremes_ms = columns.get(first, empty) if stop == first + 1 else empty
        out.append(Interval(stream, first * width_ms / 1000.0, stop * width_ms / 1000.0, counts.copy(),
                            sums_ms / 1000.0, extremes=extremes_ms / 1000.0))
    return out


def merge_in_time(per_stream: Iterable[list[Interval]]) -> list[Interval]:
    """All streams' Intervals in time order (stable on stream label)."""
    merged = [iv for ivs in per_stream for iv in ivs]
    merged.sort(key=lambda iv: (iv.start, iv.stream.label))
    return merged


def stream_key(stage: int, per_stage: bool) -> int | None:
    """The key of the stream that counts a task of `stage`: the stage with one stream per stage, else None."""
    return stage if per_stage else None


def batch_intervals(tasks: list[SparkTask], app_name: str, metric: str = "duration",
                    stages: frozenset[int] | None = None, per_stage: bool = False,
                    width_ms: int | None = None, made: Streams | None = None) -> list[Interval]:
    """Intervals of a finished application (automatic width unless given); `made` gets the stream of each key."""
    groups = task_values(tasks, metric, stages, per_stage)
    if not groups:
        return []
    if width_ms is None:
        lo = min(int(f.min()) for f, _ in groups.values())
        hi = max(int(f.max()) for f, _ in groups.values())
        width_ms = auto_interval_ms(lo, hi)
    out, names = [], StreamNames()
    for key in sorted(groups, key=lambda k: -1 if k is None else k):
        stream = stream_for(names, app_name, metric, key)
        out.append(intervals_from_cells(stream, cells(*groups[key], width_ms), width_ms))
        if out[-1] and made is not None:
            made[key] = stream
    return merge_in_time(out)


class LiveBinner:
    """Columns of a running application: a column is emitted once `grace` has passed after its end.

    A task arriving for a column already emitted (the log is written in 96 KiB steps) goes into the
    oldest open column, so no event is lost; columns of a stream stay contiguous.
    """

    def __init__(self, app_name: str, metric: str = "duration", stages: frozenset[int] | None = None,
                 per_stage: bool = False, width_ms: int = 1000, grace_ms: int = 3000) -> None:
        self.app_name, self.metric, self.stages, self.per_stage = app_name, metric, stages, per_stage
        self.width_ms, self.grace_ms = width_ms, grace_ms
        self._open: dict[int | None, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        self._next: dict[int | None, int] = {}
        self._names = StreamNames()
        #: The stream of each key, as last emitted.
        self.streams: Streams = {}
        self.late = 0

    def add(self, tasks: Iterable[SparkTask]) -> None:
        """Put tasks in their columns."""
        for key, (finish, values) in task_values(tasks, self.metric, self.stages, self.per_stage).items():
            columns = self._open[key]
            floor = self._next.get(key)
            for f, v in zip((finish // self.width_ms).tolist(), values.tolist(), strict=True):
                if floor is not None and f < floor:
                    f = floor
                    self.late += 1
                columns[f].append(v)

    def ready(self, now_ms: float) -> list[Interval]:
        """Columns whose end is at least `grace` in the past."""
        return self._emit(int((now_ms - self.grace_ms) // self.width_ms))

    def flush(self) -> list[Interval]:
        """Every remaining column (the application has ended)."""
        last = max((max(c) for c in self._open.values() if c), default=None)
        return [] if last is None else self._emit(last + 1)

    def _emit(self, upto: int) -> list[Interval]:
        """Columns strictly before `upto`, per stream from its next column on."""
        out: list[list[Interval]] = []
        for key, columns in self._open.items():
            if not columns and key not in self._next:
                continue
            start = self._next.get(key, min(columns) if columns else upto)
            if start >= upto:
                continue
            stream = self.streams[key] = stream_for(self._names, self.app_name, self.metric, key)
            width = self.width_ms
            ivs = []
            for first, stop in spans_covering(sorted(c for c in columns if start <= c < upto), start, upto):
                counts, sums, extremes = _binned(np.asarray(columns.pop(first, []) if stop == first + 1 else [],
                                                            dtype=np.float64))
                ivs.append(Interval(stream, first * width / 1000.0, stop * width / 1000.0, counts, sums / 1000.0,
                                    extremes=extremes / 1000.0))
            self._next[key] = upto
            out.append(ivs)
        return merge_in_time(out)


def past_top_notices(intervals: Iterable[Interval], told: set[StreamId]) -> Iterator[Interval | Notice]:
    """The intervals; before the first of a stream not yet `told` whose top slot holds a value (ms) past its nominal
    end, the note that says so (the stream is then added to `told`)."""
    for iv in intervals:
        if iv.extremes is not None and iv.stream not in told:
            most = iv.extremes[1, TOP_SLOT:] * 1000.0  # only the top slot holds such values
            if past_top(most) is not None:
                told.add(iv.stream)
                yield Notice(f"spark: {iv.stream.label}: a task's {past_top_note(float(most[0]), UNIT)}", 0)
        yield iv


def live_intervals(batches: Iterator[tuple[list[SparkTask], bool]], binner: LiveBinner,
                   clock: Callable[[], float]) -> Iterator[Interval]:
    """Intervals as a live reader's task batches arrive; everything left when it says the app ended."""
    for tasks, ended in batches:
        binner.add(tasks)
        yield from (binner.flush() if ended else binner.ready(clock() * 1000.0))
