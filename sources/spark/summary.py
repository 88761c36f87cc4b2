"""Straggler tasks (through `latencymap.analysis.stragglers`), warm-up, and per-stage summaries with skew.

Warm-up from the event log: PySpark starts a Python worker the first time an executor runs more tasks at
once than it has workers (the first task on each of its slots; ~2 s in local mode), so a task is *cold* when
it raises its executor's concurrency above the Python workers it has, up to the executor's `Total Cores`
(SparkListenerExecutorAdded). Concurrency at a task's launch counts the executor's tasks still running
then, a task ending within `OVERLAP_MS` of the launch counting as ended (Spark launches the next task a few
ms before it logs the end of the one whose slot it takes). Idle workers are reused; a failed or killed task
loses its worker (PySpark's worker exits on an exception; Spark reuses a worker only after a task that ended
its output normally), so the next task needing one there starts one: the first task on an executor after a
Python task failed there took 1.8-2.4 s more than its stage's others in a real local-cluster run. That PySpark
kills workers after a minute idle is not modelled. A stage's first wave is also capped at the cores of the executors
that ran it (less those its tasks still running hold). Cold and first-wave tasks are judged against their wave
(see analysis/stragglers.py) and listed with `warmup: true` only with `--include-warmup`; `"warmup"` always lists
them apart.
"""

from __future__ import annotations

import heapq
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from latencymap.core.percentiles import median_of
from latencymap.core.sanitize import clean_label, cut_label

from .parse import AppInfo, ExecutorInfo, RunningTask, SparkTask, StageEnd

#: A task ending this close after another's launch had already freed its slot.
OVERLAP_MS = 100
#: A stage name (its call site, `count at /path/job.py:61`) is shown in at most this many characters.
STAGE_NAME_CHARS = 80
#: An executor is slow in a stage when its median task is at least this many times the median of the other executors'
#: tasks there, over at least SLOW_EXECUTOR_TASKS tasks of its own and MIN_GROUP of the others' (`analysis.stragglers`:
#: fewer have no meaningful median), and when more than half of its tasks (SLOW_EXECUTOR_TASKS at least) also took
#: this many times the median of the others' tasks running at the same time (`concurrent_ratios`): an executor whose
#: only core a straggler held ran its tasks only while the stage's others did, not after, when the others' tasks ran
#: alone and faster: its median and theirs differ, its tasks and theirs at the time do not. Warm-up tasks are left
#: out, and so is each straggler of its own in turn: the executor must be slow by its other tasks, whichever of its
#: stragglers is explained by it (a straggler does not make its own executor slow).
SLOW_EXECUTOR_RATIO = 2.0
SLOW_EXECUTOR_TASKS = 2
#: The folders of a call site's file (`at /path/to/job.py:61`): the file and line say where.
_CALL_SITE_DIRS = re.compile(r"(?<= at )\S*/(?=[^/\s]+:\d+)")


def stage_name(name: str | None) -> str | None:
    """A stage's name as shown: its call site's file without folders, cut in the middle to STAGE_NAME_CHARS (names
    that differ at either end stay apart); None for no name."""
    if name is None or not name.strip():
        return None
    return cut_label(clean_label(_CALL_SITE_DIRS.sub("", name.strip())), STAGE_NAME_CHARS)


def group_of(task: SparkTask) -> str:
    """Stragglers are judged within a stage attempt."""
    return f"{task.stage}.{task.stage_attempt}"


def cold_tasks(tasks: Iterable[SparkTask], executors: dict[str, ExecutorInfo] | None = None) -> set[int]:
    """Task ids that ran cold: each raised its executor's concurrency above the Python workers it had (started by
    the cold tasks before it, less those lost with a failed or killed task), up to its cores."""
    by_executor: dict[str, list[SparkTask]] = defaultdict(list)
    for t in tasks:
        by_executor[t.executor].append(t)
    cold: set[int] = set()
    for executor, members in by_executor.items():
        info = (executors or {}).get(executor)
        cap = info.cores if info is not None and info.cores else None
        running: list[tuple[int, bool]] = []  # (finish, whether it lost its worker)
        workers = 0
        for t in sorted(members, key=lambda t: (t.launch_ms, t.task_id)):
            while running and running[0][0] <= t.launch_ms + OVERLAP_MS:
                workers = max(0, workers - heapq.heappop(running)[1])
            level = len(running) + 1
            if level > workers and (cap is None or level <= cap):
                cold.add(t.task_id)
                workers = level
            heapq.heappush(running, (t.finish_ms, t.failed or t.killed))
    return cold


def stage_cores(tasks: Iterable[SparkTask], executors: dict[str, ExecutorInfo] | None = None,
                running: Iterable[RunningTask] = ()) -> dict[tuple[int, int], int]:
    """Cores of the executors that ran each stage attempt (a task that ended, or one still `running`), where every one
    of them is known."""
    used: dict[tuple[int, int], set[str]] = defaultdict(set)
    for key, executor in [((t.stage, t.stage_attempt), t.executor) for t in tasks] + \
            [((r.stage, r.stage_attempt), r.executor) for r in running]:
        used[key].add(executor)
    out = {}
    for key, names in used.items():
        cores = [(executors or {}).get(n) for n in names]
        if all(c is not None and c.cores for c in cores):
            out[key] = sum(c.cores for c in cores if c is not None and c.cores)
    return out


def executor_spans(tasks: Iterable[SparkTask], executors: dict[str, ExecutorInfo] | None,
                   running: Iterable[RunningTask] = ()) -> list[tuple[int, float | None, float | None]] | None:
    """The cores of the executors that ran `tasks` or run `running`, each as (cores, added, removed) in epoch ms
    (None: not logged), for `stage_skew`; None unless every one's cores are known."""
    infos = [(executors or {}).get(name) for name in {t.executor for t in tasks} | {r.executor for r in running}]
    if not infos or not all(i is not None and i.cores for i in infos):
        return None
    return [(i.cores, i.added_ms, i.removed_ms) for i in infos if i is not None and i.cores]


def straggler_items(tasks: Iterable[SparkTask], cold: set[int] | None = None) -> list[Any]:
    """Tasks as the straggler API's Items: key = task id, group = stage attempt, wall times in seconds."""
    from latencymap.analysis.stragglers import Item

    cold = cold or set()
    return [Item(str(t.task_id), group_of(t), t.duration_ms / 1000.0, t.launch_ms / 1000.0, t.finish_ms / 1000.0,
                 t.task_id in cold) for t in tasks]


def wave_slots(cores: int | None, tasks: list[SparkTask], running: Iterable[RunningTask] = ()) -> int | None:
    """How many of a stage attempt's tasks that ended can be in its first wave: its `cores`, less those held by its
    tasks still `running` that were launched before any of them ended (None: not known)."""
    if cores is None or not tasks:
        return cores
    first_end = min(t.finish_ms for t in tasks)
    return max(0, cores - sum(r.launch_ms < first_end for r in running))


def find_task_stragglers(tasks: list[SparkTask], cold: set[int] | None = None,
                         cores: dict[tuple[int, int], int] | None = None, running: Iterable[RunningTask] = (),
                         **options: Any) -> list[dict[str, Any]]:
    """Straggler tasks as report objects, slowest ratio first (options go to `find_stragglers`); `running`: the tasks
    still running, whose cores the first wave of their stage attempt cannot use (`wave_slots`)."""
    from latencymap.analysis.stragglers import find_stragglers  # the single call site of the straggler API

    by_id = {(group_of(t), str(t.task_id)): t for t in tasks}
    groups: dict[tuple[int, int], list[SparkTask]] = defaultdict(list)
    for t in tasks:
        groups[(t.stage, t.stage_attempt)].append(t)
    live = list(running)
    slots = {f"{s}.{a}": wave_slots(n, groups[(s, a)], [r for r in live if (r.stage, r.stage_attempt) == (s, a)])
             for (s, a), n in (cores or {}).items()}
    slots_known = {group: n for group, n in slots.items() if n is not None}
    found = find_stragglers(straggler_items(tasks, cold), slots=slots_known, **options)
    return [straggler_json(by_id[(s.item.group, s.item.key)], s.ratio, s.group_median_s, s.warmup,
                           s.warmup_reason, s.reference_s, s.reference, s.median_past_warmup) for s in found]


def straggler_json(t: SparkTask, ratio: float, median_s: float, warmup: bool = False,
                   reason: str | None = None, reference_s: float | None = None,
                   reference: str = "median", past_warmup: bool = False) -> dict[str, Any]:
    """One straggler in the report's shape, plus its flags: `ratio` is `duration_s / reference_s`, the reference
    being the stage median (`reference: "median"`; of its tasks past warm-up when `median_past_warmup`), the fastest
    task of its warm-up wave (`"wave"`) or its stage's fastest cold task (`"cold"`)."""
    return {
        "stage": t.stage, "attempt": t.stage_attempt, "index": t.index, "task_id": t.task_id,
        "task_attempt": t.attempt, "executor": t.executor, "host": t.host, "duration_s": t.duration_ms / 1000.0,
        "start": t.launch_ms / 1000.0, "end": t.finish_ms / 1000.0, "read_bytes": t.read_bytes,
        "ratio": float(ratio) if np.isfinite(ratio) else None,
        "reference_s": median_s if reference_s is None else reference_s, "reference": reference,
        "stage_median_s": median_s, "median_past_warmup": past_warmup,
        "failed": t.failed, "killed": t.killed, "speculative": t.speculative, "end_reason": t.reason,
        "warmup": warmup, "warmup_reason": reason, "running": False,
    }


def running_stragglers(tasks: list[SparkTask], running: list[RunningTask], now_ms: int, cold: set[int] | None = None,
                       cores: dict[tuple[int, int], int] | None = None, **options: Any) -> list[dict[str, Any]]:
    """Tasks still running (no end logged) that are stragglers already: their time so far (to `now_ms`, the log's
    last time) is one against the tasks of their stage attempt that ended (`already_slow`), those past warm-up
    (`cold`, the first wave capped at the stage's `cores`) where MIN_GROUP are; `duration_s` is that time so far,
    `end` None, `running` true. Options: `min_ratio`, `min_mad_score`, `min_duration_s` (the others are ignored)."""
    from latencymap.analysis.stragglers import MIN_GROUP, already_slow

    rule = {k: v for k, v in options.items() if k in ("min_ratio", "min_mad_score", "min_duration_s")}
    ended: dict[tuple[int, int], list[SparkTask]] = defaultdict(list)
    for t in tasks:
        ended[(t.stage, t.stage_attempt)].append(t)
    usual: dict[tuple[int, int], tuple[np.ndarray, bool]] = {}
    for key, members in ended.items():
        d = np.array([t.duration_ms for t in members], dtype=np.float64) / 1000.0
        warm = warmup_mask(members, cold, wave_slots((cores or {}).get(key), members,
                                                     [r for r in running if (r.stage, r.stage_attempt) == key]))
        past = bool(warm.any()) and int((~warm).sum()) >= MIN_GROUP
        usual[key] = (d[~warm] if past else d, past)
    out = []
    for r in running:
        so_far = max(0, now_ms - r.launch_ms)
        durations, past = usual.get((r.stage, r.stage_attempt), (np.empty(0), False))
        slow = already_slow(durations, so_far / 1000.0, **rule)
        if slow is None:
            continue
        ratio, median = slow
        out.append({
            "stage": r.stage, "attempt": r.stage_attempt, "index": r.index, "task_id": r.task_id,
            "task_attempt": r.attempt, "executor": r.executor, "host": r.host, "duration_s": so_far / 1000.0,
            "start": r.launch_ms / 1000.0, "end": None, "read_bytes": None,
            "ratio": ratio if np.isfinite(ratio) else None,
            "reference_s": median, "reference": "median", "stage_median_s": median, "median_past_warmup": past,
            "failed": False, "killed": False, "speculative": r.speculative, "end_reason": None,
            "warmup": False, "warmup_reason": None, "running": True,
        })
    return out


def warmup_mask(tasks: list[SparkTask], cold: set[int] | None = None, cores: int | None = None) -> np.ndarray:
    """Which of a stage attempt's tasks are warm-up as the straggler analysis sees them: cold, or in the stage's
    first wave (at most `cores` of them)."""
    from latencymap.analysis.stragglers import first_wave

    items = straggler_items(tasks, cold)
    return first_wave(items, cores) | np.array([i.cold for i in items], dtype=bool)


def slow_executors(tasks: list[SparkTask], warm: np.ndarray, stragglers: set[int] | None = None
                   ) -> list[dict[str, Any]]:
    """The executors slow in a stage attempt (see SLOW_EXECUTOR_RATIO), slowest first: each with its tasks and
    median, the others' (`others_tasks`, `others_median_s`), `ratio` and how many of the stage's `stragglers` (task
    ids) it ran. Warm-up tasks (`warm`) are left out, and each of its own stragglers in turn when judging it."""
    kept = [t for t, w in zip(tasks, warm, strict=True) if not w and not t.failed and not t.killed]
    by_executor: dict[str, list[SparkTask]] = defaultdict(list)
    for t in kept:
        by_executor[t.executor].append(t)
    if len(by_executor) < 2:
        return []
    out = []
    for executor, mine in by_executor.items():
        others = [t for t in kept if t.executor != executor]
        own: list[int | None] = [t.task_id for t in mine if t.task_id in (stragglers or ())]
        if not all(executor_slow([t for t in mine if t.task_id != left_out], others) for left_out in own or [None]):
            continue
        median, usual = _median_ms(mine), _median_ms(others)
        out.append({"executor": executor, "tasks": len(mine), "median_s": median / 1000.0,
                    "others_tasks": len(others), "others_median_s": usual / 1000.0, "ratio": median / usual,
                    "stragglers": sum(t.executor == executor and t.task_id in (stragglers or ()) for t in tasks)})
    return sorted(out, key=lambda e: -e["ratio"])


def _median_ms(tasks: list[SparkTask]) -> float:
    return float(median_of(np.sort(np.array([t.duration_ms for t in tasks], dtype=np.float64))))


def executor_slow(mine: list[SparkTask], others: list[SparkTask]) -> bool:
    """Whether tasks of one executor (`mine`) show it slow against the other executors' tasks of their stage (see
    SLOW_EXECUTOR_RATIO)."""
    from latencymap.analysis.stragglers import MIN_GROUP

    if len(mine) < SLOW_EXECUTOR_TASKS or len(others) < MIN_GROUP:
        return False
    usual = _median_ms(others)
    return usual > 0 and _median_ms(mine) >= SLOW_EXECUTOR_RATIO * usual and \
        slow_at_the_time(concurrent_ratios(mine, others))


def concurrent_ratios(mine: list[SparkTask], others: list[SparkTask]) -> np.ndarray:
    """Each of `mine` that ran while one of `others` did: its duration over the median duration of `others` running
    at the same time (any overlap of launch to finish)."""
    if not others:
        return np.empty(0)
    order = sorted(others, key=lambda t: t.launch_ms)
    launch = np.array([t.launch_ms for t in order], dtype=np.int64)
    finish = np.array([t.finish_ms for t in order], dtype=np.int64)
    took = finish - launch
    longest = int(took.max())
    out = []
    for t in mine:
        lo, hi = np.searchsorted(launch, t.launch_ms - longest), np.searchsorted(launch, t.finish_ms)
        during = took[lo:hi][finish[lo:hi] > t.launch_ms]
        usual = median_of(during) if during.size else 0.0
        if usual > 0:
            out.append(t.duration_ms / usual)
    return np.array(out, dtype=np.float64)


def slow_at_the_time(ratios: np.ndarray) -> bool:
    """Whether more than half of an executor's `concurrent_ratios` (and SLOW_EXECUTOR_TASKS) reach
    SLOW_EXECUTOR_RATIO: one straggler of its own does not make an executor slow."""
    return ratios.size >= SLOW_EXECUTOR_TASKS and float(np.sort(ratios)[(ratios.size - 1) // 2]) >= SLOW_EXECUTOR_RATIO


def overlap_ms(tasks: list[SparkTask], executors: dict[str, ExecutorInfo] | None,
               running: list[RunningTask] | None = None, now_ms: int | None = None) -> float | None:
    """Task time beyond the cores of the executors that ran it (ms): the time-integral of each executor's tasks
    (with those still `running`, seen until `now_ms`) running past its `Total Cores` (Spark counts in a task's time
    the lag before its end is logged, so a 1-core executor's tasks overlap); None when an executor's cores are not
    known."""
    from latencymap.analysis.skew import overcommitted

    live = running if running and now_ms is not None else []
    caps = {}
    names = [t.executor for t in tasks] + [r.executor for r in live]
    for name in set(names):
        info = (executors or {}).get(name)
        if info is None or not info.cores:
            return None
        caps[name] = info.cores
    return overcommitted(np.array([t.launch_ms for t in tasks] + [r.launch_ms for r in live], dtype=np.float64),
                         np.array([t.finish_ms for t in tasks] + [max(now_ms or 0, r.launch_ms) for r in live],
                                  dtype=np.float64), names, caps)


def stage_summary(stage: int, attempt: int, tasks: list[SparkTask], cores: int | None = None,
                  ends: dict[tuple[int, int], StageEnd] | None = None, cold: set[int] | None = None,
                  stragglers: set[int] | None = None, name: str | None = None,
                  running: list[RunningTask] | None = None, now_ms: int | None = None,
                  executors: dict[str, ExecutorInfo] | None = None) -> dict[str, Any]:
    """Task attempts, median, p99, max, skew (max / median) and the other skew metrics (analysis/skew.py) of a
    stage attempt; the skew of its other tasks when warm-up tasks (`cold`, the first wave) that are not
    `stragglers` (task ids) are left out (`warmup_tasks` left out, `skew_after_warmup`, `max_after_warmup_s`:
    None when none is, or fewer than MIN_GROUP tasks are left); how many attempts succeeded, failed, were killed or
    speculative; and how the stage ended (`status`: "complete", "failed", "unfinished" when no end is known,
    None when `ends` is None: the source cannot tell). `name`: the stage's name in the log (shown by `stage_name`).
    `running`: its tasks launched with no end logged, seen running until `now_ms`: counted (`running`, the longest
    `running_max_s`), their cores busy in the wall and waste; the durations are those of the tasks that ended.
    `executors` (their cores) gives `overlap_core_s`, the task time past the executors' cores (`overlap_ms`), and
    bounds each executor's cores in `available_core_s` to the time it was there (added to removed);
    `slow_executors` lists the executors slow in the stage, `read_median_bytes` is the median task's bytes read.

    Times are computed in the source's milliseconds and given in seconds: no float noise from epoch seconds."""
    from latencymap.analysis.skew import stage_skew
    from latencymap.analysis.stragglers import MIN_GROUP

    ms = np.sort(np.array([t.duration_ms for t in tasks], dtype=np.float64))
    d = ms / 1000.0
    median = float(median_of(d))
    live = running if running and now_ms is not None else []
    so_far = [max(0, now_ms - r.launch_ms) for r in live] if now_ms is not None else []
    skew = stage_skew(ms, np.array([t.launch_ms for t in tasks] + [r.launch_ms for r in live], dtype=np.float64),
                      np.array([t.finish_ms for t in tasks] + [now_ms] * len(live), dtype=np.float64), cores,
                      float(sum(so_far)), executor_spans(tasks, executors, live) if cores else None)
    for key in ("wall_s", "task_time_s", "available_core_s", "wasted_core_s"):  # milliseconds above
        if skew[key] is not None:
            skew[key] = skew[key] / 1000.0
    warmup = warmup_mask(tasks, cold, wave_slots(cores, tasks, live))
    warm = warmup & np.array([t.task_id not in (stragglers or ()) for t in tasks], dtype=bool)
    rest = np.sort(np.array([t.duration_ms for t, w in zip(tasks, warm, strict=True) if not w],
                            dtype=np.float64)) / 1000.0
    after = warm.any() and rest.size >= MIN_GROUP and median_of(rest) > 0
    read = np.sort(np.array([t.read_bytes for t in tasks if t.read_bytes is not None], dtype=np.float64))
    over = overlap_ms(tasks, executors, live, now_ms) if cores else None
    end = (ends or {}).get((stage, attempt))
    status = None if ends is None else "unfinished" if end is None else "complete" if end.completed else "failed"
    return {
        "stage": stage, "attempt": attempt, "name": stage_name(name), "tasks": len(tasks),
        "median_s": median, "p99_s": round(float(np.quantile(ms, 0.99)) / 1000.0, 6), "max_s": float(d[-1]),
        **skew,
        "warmup_tasks": int(warm.sum()),
        "skew_after_warmup": float(rest[-1] / median_of(rest)) if after else None,
        "max_after_warmup_s": float(rest[-1]) if after else None,
        "overlap_core_s": over / 1000.0 if over is not None else None,
        "slow_executors": slow_executors(tasks, warmup, stragglers),
        "read_median_bytes": float(median_of(read)) if read.size else None,
        "succeeded": sum(not t.failed and not t.killed for t in tasks),
        "failed": sum(t.failed for t in tasks), "killed": sum(t.killed for t in tasks),
        "speculative": sum(t.speculative for t in tasks),
        "running": len(live), "running_max_s": max(so_far) / 1000.0 if so_far else None,
        "num_tasks": end.tasks if end is not None else None,
        "status": status, "failure": end.failure if end is not None else None,
    }


def stage_summaries(tasks: Iterable[SparkTask], cores: dict[tuple[int, int], int] | None = None,
                    ends: dict[tuple[int, int], StageEnd] | None = None, cold: set[int] | None = None,
                    stragglers: set[int] | None = None, names: dict[int, str] | None = None,
                    running: list[RunningTask] | None = None, now_ms: int | None = None,
                    executors: dict[str, ExecutorInfo] | None = None) -> list[dict[str, Any]]:
    """One summary per stage attempt, in stage order (`ends`, `cold`, `stragglers`, stage `names`, `running`
    tasks seen until `now_ms`, `executors`: see `stage_summary`)."""
    groups: dict[tuple[int, int], list[SparkTask]] = defaultdict(list)
    for t in tasks:
        groups[(t.stage, t.stage_attempt)].append(t)
    live: dict[tuple[int, int], list[RunningTask]] = defaultdict(list)
    for r in running or ():
        live[(r.stage, r.stage_attempt)].append(r)
    return [stage_summary(s, a, groups[(s, a)], (cores or {}).get((s, a)), ends, cold, stragglers,
                          (names or {}).get(s), live.get((s, a)), now_ms, executors)
            for s, a in sorted(groups)]


def last_time_ms(tasks: Iterable[SparkTask], running: Iterable[RunningTask]) -> int | None:
    """The log's last time as its tasks say it: the latest end, or launch of a task still running."""
    return max([t.finish_ms for t in tasks] + [r.launch_ms for r in running], default=None)


def spark_analysis(tasks: list[SparkTask], executors: dict[str, ExecutorInfo] | None = None,
                   include_warmup: bool = False, all_tasks: list[SparkTask] | None = None,
                   ends: dict[tuple[int, int], StageEnd] | None = None, names: dict[int, str] | None = None,
                   running: list[RunningTask] | None = None, now_ms: int | None = None,
                   seen_ms: int | None = None, **options: Any) -> dict[str, Any]:
    """What `report --format json` adds for Spark: `stragglers`, `warmup` (kept apart) and `stages`.

    `all_tasks` (default `tasks`): every task of the application, when `tasks` keeps only some stages, so
    that warm-up is placed where it happened. `ends`: how stage attempts ended (None: the source cannot tell).
    `names`: stage names by stage id. `running`: tasks launched with no end logged (a running or cut log), seen
    running until the log's last time: those already stragglers then are listed (`running: true`, their time so far),
    and their cores are busy in their stage's waste. `now_ms`: the clock, where the log is followed live: those
    stragglers' time so far, and their stage's, run to it (`so_far_to`: "clock", else "log"). Only those slow at the
    log's last time: Spark buffers the events it logs (spark.eventLog.buffer.kb), so a task whose end is still in
    that buffer would look slower and slower by the clock; one slow already at the log's last time was that slow.
    `seen_ms`: until when the source saw `running` running, where it knows it (a Spark REST API's answer: the
    driver's clock at its last poll): the log's last time is then that time, where it is later.
    """
    every = all_tasks if all_tasks is not None else tasks
    cold, cores = cold_tasks(every, executors), stage_cores(tasks, executors, running or ())
    last = last_time_ms(every, running or ())
    if running and seen_ms is not None:
        last = seen_ms if last is None else max(last, seen_ms)
    now = max(now_ms, last) if now_ms is not None and last is not None else last
    found = find_task_stragglers(tasks, cold, cores, running or (), include_warmup=True, **options)
    if running and last is not None:
        at_last = running_stragglers(tasks, running, last, cold, cores, **options)
        slow = {s["task_id"] for s in at_last}
        clocked = at_last if now_ms is None else running_stragglers(tasks, running, now or last, cold, cores,
                                                                     **options)
        found += [{**s, "so_far_to": "clock" if now_ms is not None else "log"} for s in clocked
                  if s["task_id"] in slow]
        found.sort(key=lambda s: (s["warmup"], -(s["ratio"] if s["ratio"] is not None else float("inf"))))
    slow = {s["task_id"] for s in found if not s["warmup"] and not s["running"]}
    stages = stage_summaries(tasks, cores, ends, cold, slow, names, running, now, executors)
    explain_stragglers(found, stages)
    return {"stragglers": [s for s in found if include_warmup or not s["warmup"]],
            "warmup": [s for s in found if s["warmup"]], "stages": stages}


def explain_stragglers(found: list[dict[str, Any]], stages: list[dict[str, Any]]) -> None:
    """What the log says of each straggler's cause, added to it: `slow_executor` (true when it ran on an executor
    slow in its stage: `slow_executors`), `read_ratio` (its bytes read over its stage's median task's, None when
    either is not logged or the median is 0) and the `cause` they give (`known_cause`: "executor", "input", None)."""
    from latencymap.analysis.stragglers import known_cause

    by_stage = {(st["stage"], st["attempt"]): st for st in stages}
    for s in found:
        st = by_stage.get((s["stage"], s["attempt"])) or {}
        s["slow_executor"] = any(e["executor"] == s["executor"] for e in st.get("slow_executors") or ())
        usual, read = st.get("read_median_bytes"), s.get("read_bytes")
        s["read_ratio"] = read / usual if read is not None and usual else None
        s["cause"] = known_cause(s)


def application_time(app: AppInfo, jobs: dict[int, list[int | None]], last_ms: int | None) -> dict[str, Any] | None:
    """The application's time and how much of it no job ran (Sparklens' driver time: the driver's own work, start-up,
    planning, Python code between jobs, collecting results): `duration_s` (its start to its end, or to `last_ms`,
    the log's last time, when no end is logged: `ended` false), `jobs`, `in_jobs_s` (the time some job ran; a job
    with no end logged runs to the end), `outside_jobs_s`, split into `before_jobs_s` (start-up, to the first job),
    `between_jobs_s` and `after_jobs_s`; the longest stretch between jobs (`longest_between_s`, before job
    `longest_before_job`). None without the application's start or any job's."""
    start = app.start_ms
    end = app.end_ms if app.end_ms else last_ms
    if start is None or end is None or end < start:
        return None
    spans = sorted((min(end, max(start, s)), min(end, e if e is not None else end), job)
                   for job, (s, e) in jobs.items() if s is not None)
    if not spans:
        return None
    busy, at, between = 0, spans[0][0], 0
    longest: tuple[int, int | None] = (0, None)
    for s, e, job in spans:
        if s > at:
            between += s - at
            if s - at > longest[0]:
                longest = (s - at, job)
        busy += max(0, e - max(s, at))
        at = max(at, e)
    return {"duration_s": (end - start) / 1000.0, "jobs": len(spans), "in_jobs_s": busy / 1000.0,
            "outside_jobs_s": (end - start - busy) / 1000.0, "before_jobs_s": (spans[0][0] - start) / 1000.0,
            "between_jobs_s": between / 1000.0, "after_jobs_s": (end - at) / 1000.0,
            "longest_between_s": longest[0] / 1000.0, "longest_before_job": longest[1],
            "ended": app.end_ms is not None}
