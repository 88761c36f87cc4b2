"""`latencymap spark PATH|URL`: Spark task latencies from event logs (any layout) or the REST API."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import click

from latencymap.core.errors import InputError, SourceError
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.sanitize import StreamNames, clean_text
from latencymap.core.units import format_duration, plural
from latencymap.plugins import Item, Source

from .binning import (
    METRICS,
    LiveBinner,
    Streams,
    batch_intervals,
    implausible,
    live_intervals,
    past_top_notices,
    plausible,
    stream_for,
    stream_key,
    without_metrics,
)
from .blocks import Damage
from .codecs import CodecError
from .eventlog import EVENTS_FILE, EventLog, check_event_log, find_event_log
from .parse import AppInfo, EventParser, ExecutorInfo, RunningTask, SparkTask, StageEnd

REMEDY = "pip install 'latencymap[spark]'"
#: A straggler task is at least this long (s): Spark's own speculation never speculates a shorter one
#: (spark.speculation.minTaskRuntime, 100 ms), whose multiplier is `--straggler-ratio`'s default.
MIN_TASK_S = 0.1


def interval_ms(seconds: float | None) -> int | None:
    """`--interval S` in whole milliseconds (at least 1); None for automatic."""
    return None if seconds is None else max(1, round(seconds * 1000))


class SparkSource(Source):
    """Task durations (or another task metric) of a Spark application, with exact intensity."""

    name: ClassVar[str] = "spark"
    examples: ClassVar[tuple[str, ...]] = (
        "latencymap spark /tmp/spark-events",
        "latencymap spark LOG --metric gc --per-stage",
        "latencymap spark /tmp/spark-events --follow",
        "latencymap spark http://localhost:4040",
        "latencymap report spark fixtures/spark/zstd",
    )
    summary: ClassVar[str] = (
        "Spark task latencies: PATH is an event log (file, eventlog_v2_* dir, dir of apps) or http://HOST:4040|18080"
    )

    @classmethod
    def params(cls) -> list[click.Parameter]:
        from latencymap.analysis.stragglers import MIN_MAD_SCORE, MIN_RATIO

        return [
            click.Argument(["target"], metavar="PATH|URL"),
            click.Option(["--app"], metavar="ID", default=None,
                         help="Application in a directory of logs or on a History Server (default: the latest)."),
            click.Option(["--follow"], is_flag=True, help="Tail a running application's log until it ends."),
            click.Option(["--metric"], type=click.Choice(list(METRICS)), default="duration", show_default=True,
                         help="Task metric to map: " + "; ".join(f"{k}: {v[0]}" for k, v in METRICS.items()) + "."),
            click.Option(["--stage", "stages"], type=int, multiple=True, metavar="ID",
                         help="Only this stage (repeat)."),
            click.Option(["--per-stage"], is_flag=True, help="One stream (heat map) per stage."),
            click.Option(["--interval"], type=click.FloatRange(min=0, min_open=True), default=None, metavar="S",
                         help="Column width in seconds (default: automatic, 100-200 columns; 1 s when live)."),
            click.Option(["--engine"], type=click.Choice(["local", "spark"]), default="local", show_default=True,
                         help="Read the logs here, or with PySpark as a distributed job (same numbers)."),
            click.Option(["--master"], default=None, metavar="URL", help="Spark master for --engine spark."),
            click.Option(["--poll"], type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
                         metavar="S",
                         help="Seconds between polls with --follow or a REST URL."),
            click.Option(["--straggler-ratio"], type=click.FloatRange(min=1), default=MIN_RATIO, show_default=True,
                         help="A straggler is at least this many times its stage's median..."),
            click.Option(["--straggler-score"], type=click.FloatRange(min=0), default=MIN_MAD_SCORE, show_default=True,
                         help="...and this many robust standard deviations (MAD) above it."),
            click.Option(["--straggler-min"], type=click.FloatRange(min=0), default=MIN_TASK_S, show_default=True,
                         metavar="S",
                         help="...and at least this many seconds long (Spark's spark.speculation.minTaskRuntime: "
                              "it never speculates a shorter task)."),
            click.Option(["--include-warmup"], is_flag=True,
                         help="List warm-up tasks (first tasks on cold executor slots, a stage's first wave) among "
                              "the stragglers, flagged warmup: true (always listed apart under 'warmup')."),
        ]

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.tasks: list[SparkTask] = []
        #: Every task read, whatever --stage keeps: warm-up is placed where it happened.
        self.all_tasks: list[SparkTask] = []
        self.executors: dict[str, ExecutorInfo] = {}
        #: How stage attempts ended, by (stage, attempt); None where the source cannot tell.
        self.stage_ends: dict[tuple[int, int], StageEnd] | None = None
        self.app = AppInfo()
        #: Stage names by stage id; tasks launched with no end logged (a running or cut log's).
        self.stage_names: dict[int, str] = {}
        self.running: list[RunningTask] = []
        #: Each job's [submission, completion] (epoch ms), by job id.
        self.jobs: dict[int, list[int | None]] = {}
        #: The streams items() made, by stream key (`stream_key`): where the stragglers' tasks are counted.
        self.streams: Streams = {}
        self._analysis: dict[str, Any] | None = None
        self._notes: list[str] = []
        self._parser: EventParser | None = None
        #: Parts of the log that are missing or could not be decoded: (the index of the events file, what).
        self._holes: list[tuple[int, str]] = []
        self._stage_files: dict[int, str] = {}
        #: Whether tasks still running run to the clock now (a live log followed, a driver polled), not to the log's
        #: last time; a polled REST API's: until when it saw them running (`RestPoller.seen_ms`), and how far its clock
        #: is ahead of this machine's (ms).
        self._clock = False
        self._seen: tuple[int | None, int] = (None, 0)

    @property
    def _stages(self) -> frozenset[int] | None:
        stages = self.options.get("stages") or ()
        return frozenset(stages) if stages else None

    def _streams(self, app_name: str) -> tuple[str, bool]:
        """(the name streams are labelled with, one stream per stage): `--stage N` alone is the stream of stage N;
        several `--stage` are named in the label, so that neither is taken for the whole application's stream."""
        wanted, per_stage = self._stages, bool(self.options.get("per_stage"))
        if wanted is None or per_stage or len(wanted) == 1:
            return app_name, per_stage or wanted is not None
        return f"{app_name} stages {'+'.join(str(s) for s in sorted(wanted))}", False

    def _opt(self, name: str, default: Any = None) -> Any:
        value = self.options.get(name)
        return default if value is None else value

    def straggler_options(self) -> dict[str, Any]:
        """Options for `find_stragglers`, from the command line."""
        out = {}
        if self.options.get("straggler_ratio") is not None:
            out["min_ratio"] = self.options["straggler_ratio"]
        if self.options.get("straggler_score") is not None:
            out["min_mad_score"] = self.options["straggler_score"]
        out["min_duration_s"] = self._opt("straggler_min", MIN_TASK_S)
        if self.options.get("include_warmup"):
            out["include_warmup"] = True
        return out

    def items(self) -> Iterator[Item]:
        from .rest import is_url

        target = str(self.options["target"])
        if is_url(target):
            yield from self._live(self._rest_batches(target))
        elif self._opt("follow", False):
            yield from self._live(self._follow_batches(target))
        elif self._opt("engine", "local") == "spark":
            yield from self._engine(target)
        else:
            yield from self._batch(target)

    def _batch(self, target: str) -> Iterator[Item]:
        from .ingest import read_tasks
        from .summary import last_time_ms

        log = find_event_log(target, self.options.get("app"))
        yield from self._chosen(log, target)
        yield from self._missing_parts(log)
        parser = EventParser()
        try:
            check_event_log(log)
            tasks = read_tasks(log, parser)
        except CodecError as err:
            raise SourceError(f"spark: cannot read the Spark event log: {err}") from None
        self._check_stages({t.stage for t in tasks}, log)
        self._holes += [(_file_index(d.path), f"{Path(d.path).name} has a part that could not be decoded")
                        for d in parser.damage]
        self._stage_files = parser.stage_files
        yield from _damage_notices(parser.damage)
        yield from self._batch_of(parser, tasks, log.app_id)
        if self._holes:
            yield from _lost_tasks(tasks, self.running)
        yield from self._log_state(log, parser.app, last_time_ms(self.all_tasks, self.running),
                                   {Path(d.path) for d in parser.damage if d.resumed is None})

    def _missing_parts(self, log: EventLog) -> Iterator[Notice]:
        """The events files of a rolling log that are missing (a gap in the numbering) or empty though others follow:
        what they held (tasks, stage ends, the application's start) is lost."""
        missing, empty = log.missing(), log.empty()
        if not missing and not empty:
            return
        read = ", ".join(str(_file_index(str(p))) for p in log.files())
        for k in missing:
            self._holes.append((k, f"events file {k} is missing"))
            first = " (its first part: the application's start and name are lost too)" if k == 1 else ""
            yield Notice(f"spark: {log.path}: events file {k} of the rolling log is missing{first} (files read: "
                         f"{read}): the tasks and stage ends it held are lost", 1)
        for path in empty:
            k = _file_index(str(path))
            self._holes.append((k, f"events file {k} is empty"))
            yield Notice(f"spark: {path}: empty, though later events files follow: the tasks and stage ends it "
                         "held are lost", 1)

    def _chosen(self, log: EventLog, target: str) -> Iterator[Notice]:
        """Which application of a directory of several is read; that a part of a rolling log named (`target`) is
        read with the others (a part alone lacks what they hold: the application's start, its stages' ends)."""
        if log.among > 1:
            yield Notice(f"spark: {log.path.parent} holds {log.among} applications; read: the latest, {log.app_id} "
                         "(--app ID reads another)", 0)
        if log.rolling and Path(target).is_file():
            yield Notice(f"spark: {target} is a part of the rolling event log {log.path} "
                         f"({plural(len(log.files()), 'events file')}): the whole application is read "
                         f"(cat {target} | latencymap report: that part alone)", 0)

    def _check_stages(self, have: set[int], log: EventLog) -> None:
        """InputError when `--stage` names no stage that has tasks (`have`); the error lists those that do."""
        wanted = self._stages
        if wanted is not None and not wanted & have:
            missing = ", ".join(str(s) for s in sorted(wanted))
            known = ", ".join(str(s) for s in sorted(have)) or "none: no task ended"
            raise InputError(f"--stage {missing}: no such stage in {log.app_id} (its stages: {known})")

    def _log_state(self, log: EventLog, app: AppInfo, last_ms: int | None,
                   unread: set[Path] | None = None) -> Iterator[Notice]:
        """What the log's state says about its last stage: no end logged yet (still written or its driver dead: how
        long ago its last event was, from its tasks' last time `last_ms`), cut short, or started (ApplicationStart)
        and never ended. `unread`: files whose end was not read as they are damaged (told already)."""
        from .codecs import ends_early

        running = not log.finished()
        if running:
            yield Notice(f"spark: no application end logged yet (in-progress log): it is still running, or its driver "
                         f"died{self._last_event(last_ms)}; the last stage may be partial", 0)
        files, cut = log.files(), False
        for path in files[:-1] if running else files:
            early = ends_early(path) if path not in (unread or ()) else None
            if early:
                cut = True
                yield Notice(f"spark: the compressed log ends early: {path}: {early}; what followed is missing", 0)
        if not running and not app.ended and app.start_ms is not None and not cut:
            yield Notice("spark: the log has no application end (SparkListenerApplicationEnd): it is cut short, or "
                         "its driver died; the last stage may be partial", 0)

    def _last_event(self, tasks_ms: int | None) -> str:
        """` (its last event 9.6min ago)`: how long before now the log's last time (its tasks' last end or launch,
        `tasks_ms`; a job's submission or end; the application's start) was; "" where it has none."""
        times = [tasks_ms, self.app.start_ms, *(t for span in self.jobs.values() for t in span)]
        last = max((t for t in times if t is not None), default=None)
        if last is None:
            return ""
        ago = time.time() - last / 1000
        return f" (its last event {format_duration(ago, long_units=True)} ago)" if ago >= 1 else \
            " (its last event under a second ago)"

    def batch_items(self, batches: Iterable[list[bytes]], fallback_name: str,
                    where: str | None = None) -> Iterator[Item]:
        """The intervals (and notices) of a whole log's lines, given in batches; `fallback_name` names the stream
        when the log does not say the application's name, `where` (default: the same) the input in messages."""
        parser = EventParser()
        parser.begin(where or fallback_name)
        tasks = [t for lines in batches for t in parser.parse(lines)]
        yield from self._batch_of(parser, tasks, fallback_name, where)

    def _batch_of(self, parser: EventParser, tasks: list[SparkTask], fallback_name: str,
                  where: str | None = None) -> Iterator[Item]:
        """The intervals (and notices) of a whole log's tasks, read by `parser`; `where` names the input."""
        self.app, self.executors, self.all_tasks = parser.app, parser.executors, tasks
        self.stage_ends, self.stage_names, self.jobs = parser.stage_ends, parser.stage_names, parser.jobs
        self.tasks = tasks if self._stages is None else [t for t in tasks if t.stage in self._stages]
        self.running = [] if parser.app.ended else parser.running()
        name, per_stage = self._streams(self._app_name(fallback_name))
        self.streams = {}
        yield from past_top_notices(batch_intervals(self.tasks, name, self._opt("metric", "duration"), self._stages,
                                                    per_stage, interval_ms(self.options.get("interval")),
                                                    self.streams), set())
        left = without_metrics(self.tasks, self._opt("metric", "duration"))
        if left is not None:
            yield left
        if not parser.task_end_lines:  # (TaskEnd lines that could not be read are told below)
            yield self._no_task(where or fallback_name)
        if parser.bad_lines:
            yield _unread(parser, parser.bad_lines)
        bogus = implausible(self.tasks)
        if bogus:
            yield _implausible(bogus)

    def _no_task(self, where: str) -> Notice:
        """What a log in which no task ended holds: an application that ran none, tasks still running, or no
        application at all."""
        app = self.app
        who = f"the application {clean_text(app.name or '(no name)', 120)} ({clean_text(app.app_id or 'no id', 80)})"
        if self.running:
            return Notice(f"spark: {who} was read: no task has ended yet ({len(self.running)} running)", 0)
        if app.start_ms is not None or app.app_id:
            ended = "ended" if app.ended else "did not log its end"
            return Notice(f"spark: {who} was read: it ran no task (it {ended})", 0)
        return Notice(f"spark: {clean_text(where, 200)}: a Spark event log with no application start and no task "
                      "in it: nothing to map", 0)

    def _engine(self, target: str) -> Iterator[Item]:
        from .engine import engine_report

        log = find_event_log(target, self.options.get("app"))
        yield from self._chosen(log, target)
        try:
            check_event_log(log)
        except CodecError as err:
            raise SourceError(f"spark: cannot read the Spark event log: {err}") from None
        result = engine_report(
            [log], self._opt("metric", "duration"), self._stages, self._streams("")[1],
            interval_ms(self.options.get("interval")), self.options.get("master"), self.straggler_options())
        self._check_stages(result.stages, log)
        self.app, self.jobs = result.app, result.jobs
        self._analysis = {**result.analysis, **self._measured(result.last_ms)}
        app_name = self._app_name()
        name = self._streams(app_name)[0]
        intervals, self.streams = result.intervals, dict(result.streams)
        if name != app_name:  # several --stage in one stream: its label names them, as the local reader's does
            stream = stream_for(StreamNames(), name, self._opt("metric", "duration"))
            intervals = [replace(iv, stream=stream) for iv in intervals]
            self.streams = {key: stream for key in self.streams}
        yield from past_top_notices(intervals, set())
        if not result.stages and not result.bad_lines and not result.implausible:
            yield self._no_task(log.app_id)
        if result.bad_lines:
            yield _unread_of(result.problems, result.bad_lines)
        if result.implausible:
            yield _implausible(result.implausible)
        if result.metricless is not None:
            yield result.metricless
        yield from self._log_state(log, result.app, result.last_ms)

    def _app_name(self, fallback: str = "") -> str:
        return self.app.name or self.app.app_id or fallback

    def _follow_batches(self, target: str) -> Iterator[tuple[list[SparkTask], bool]]:
        from .follow import follow_tasks

        parser = self._parser = EventParser()
        self.app, self.executors, self.stage_ends = parser.app, parser.executors, parser.stage_ends
        self.stage_names, self.jobs = parser.stage_names, parser.jobs
        for tasks, ended in follow_tasks(target, self.options.get("app"), self._opt("poll", 1.0), parser=parser,
                                         note=self._notes.append):
            # (the analysis reads these from another thread: each is replaced whole, never changed in place)
            self.running = [] if parser.app.ended else parser.running()
            self._clock = not ended
            yield tasks, ended

    def _rest_batches(self, url: str) -> Iterator[tuple[list[SparkTask], bool]]:
        from .rest import RestPoller, rest_tasks

        polled: list[RestPoller] = []

        def poller(made: RestPoller) -> None:
            self.executors, self.stage_ends, self.stage_names = made.executors, made.stage_ends, made.stage_names
            self.jobs = made.jobs
            polled.append(made)

        for tasks, ended, app in rest_tasks(url, self.options.get("app"), self._opt("poll", 1.0),
                                            note=self._notes.append, on_poller=poller):
            # (as with --follow: each replaced whole, for the analysis in another thread)
            self.app, (made,) = app, polled
            self._seen = (made.seen_ms, made.clock_ahead_ms)
            self.running = [] if ended else made.running
            self._clock = not ended
            yield tasks, ended

    def _live(self, batches: Iterator[tuple[list[SparkTask], bool]]) -> Iterator[Item]:
        width = interval_ms(self.options.get("interval")) or 1000
        binner = LiveBinner("", self._opt("metric", "duration"), self._stages, self._streams("")[1],
                            width_ms=width, grace_ms=max(3000, 2 * width))
        self.streams = binner.streams

        bogus = told_bogus = late = told_bad = told_problems = 0

        def named() -> Iterator[tuple[list[SparkTask], bool]]:
            nonlocal bogus
            for tasks, ended in batches:
                binner.app_name = self._streams(self._app_name("spark"))[0]
                kept = [t for t in tasks if self._stages is None or t.stage in self._stages]
                self.tasks += kept
                self.all_tasks += tasks
                bogus += sum(not plausible(t) for t in kept)
                yield tasks, ended

        def notices() -> Iterator[Notice]:
            nonlocal told_bogus, late, told_bad, told_problems
            parser = self._parser
            if parser is not None and parser.bad_lines > told_bad:
                yield _unread(parser, parser.bad_lines - told_bad, told_problems)
                told_bad, told_problems = parser.bad_lines, len(parser.problems)
            if binner.late > late:
                yield Notice(f"spark: {binner.late - late} tasks logged late, counted in a later column", 0)
                late = binner.late
            if bogus > told_bogus:
                yield _implausible(bogus - told_bogus)
                told_bogus = bogus
            while self._notes:
                yield Notice(self._notes.pop(0), 0)

        for item in past_top_notices(live_intervals(named(), binner, time.time), set()):
            yield from notices()
            yield item
        yield from notices()
        left = without_metrics(self.tasks, self._opt("metric", "duration"))
        if left is not None:
            yield left

    def analysis(self) -> dict[str, Any]:
        """`{"stragglers": [...], "warmup": [...], "stages": [...], "metric", "analysed"}` for the tasks read so far
        (after items()): `analysed` is the task metric stragglers and stages measure, `metric` the one mapped."""
        if self._analysis is not None:
            return self._analysis
        from .summary import last_time_ms, spark_analysis

        (seen, ahead), every = self._seen, self.running
        now = int(time.time() * 1000) + ahead if self._clock else None
        running = [r for r in every if self._stages is None or r.stage in self._stages]
        out = {**spark_analysis(self.tasks, self.executors, all_tasks=self.all_tasks, ends=self.stage_ends,
                                names=self.stage_names, running=running, now_ms=now,
                                seen_ms=seen if self._clock else None, **self.straggler_options()),
               **self._measured(last_time_ms(self.all_tasks, every))}
        for stage in out["stages"] if self._holes else ():
            why = self._lost_end(stage["stage"]) if stage.get("status") == "unfinished" else None
            if why:
                stage["unfinished_because"] = why
        return out

    def _lost_end(self, stage: int) -> str | None:
        """Why a stage's end may be in a part of the log that is missing or could not be decoded: a part at or
        after the events file it was submitted in (any, when its submission was not read); None when none is."""
        where = self._stage_files.get(stage)
        since = _file_index(where) if where is not None else 0
        holes = [what for k, what in self._holes if k >= since]
        return f"a part of the log is lost: {'; '.join(holes)}" if holes else None

    def straggler_stream(self, straggler: dict[str, Any]) -> StreamId | None:
        """The stream items() counted a straggler's task under: its stage's with one stream per stage, else the
        application's; None when it made no such stream (no task there had a value of the metric mapped)."""
        return self.streams.get(stream_key(straggler["stage"], self._streams("")[1]))

    def _measured(self, last_ms: int | None) -> dict[str, Any]:
        """What the analysis measures, and of which application; the application's time in and outside jobs
        (`application_time`; `last_ms`: the log's last time, its end when the application logged none)."""
        from .summary import application_time

        return {"metric": self._opt("metric", "duration"), "analysed": "duration",
                "application": {"id": self.app.app_id or None, "name": self.app.name or None},
                "application_time": application_time(self.app, self.jobs, last_ms)}

    def at_rest(self) -> bool:
        """A log read once, to its end (not followed, nor a REST server polled)."""
        from .rest import is_url

        return not self._opt("follow", False) and not is_url(str(self.options.get("target", "")))

    def describe(self) -> dict[str, Any]:
        keep = ("metric", "stages", "per_stage", "interval", "engine", "follow")
        return {"source": self.name, **{k: self.options[k] for k in keep if self.options.get(k) not in (None, ())}}


def _unread(parser: EventParser, bad: int, told: int = 0) -> Notice:
    """`bad` more lines could not be read; where the first ones are (problems from `told` on)."""
    return _unread_of(parser.told()[told:], bad)


def _unread_of(shown: list[str], bad: int) -> Notice:
    """`bad` lines could not be read; `shown` says where the first ones are."""
    where = ": " + "; ".join(shown) + (f"; {bad - len(shown)} more" if bad > len(shown) else "") if shown else ""
    return Notice(f"spark: {bad} event-log lines could not be parsed{where}", bad)


#: Damaged stretches of compressed files told one by one; those past them in one notice.
TOLD_DAMAGE = 3


def _damage_notices(damage: list[Damage]) -> Iterator[Notice]:
    """Each stretch of a compressed file that could not be decoded (the first TOLD_DAMAGE), and what it lost."""
    for d in damage[:TOLD_DAMAGE]:
        where = (f"bytes {d.at:,} to {d.resumed:,} could not be decoded and were skipped" if d.resumed is not None
                 else f"from byte {d.at:,} on it could not be decoded: the rest of the file was not read")
        held = f"{d.lost} TaskEnd lines at least" if d.lost else "the lines they held"
        yield Notice(f"spark: {clean_text(d.path, 200)}: {where} ({clean_text(d.what, 200)}); lost: {held}", 1)
    rest = damage[TOLD_DAMAGE:]
    if rest:
        yield Notice(f"spark: {len(rest)} more damaged stretches of compressed event-log files skipped "
                     f"({sum(d.lost for d in rest)} TaskEnd lines lost at least)", len(rest))


def _lost_tasks(tasks: list[SparkTask], running: list[RunningTask]) -> Iterator[Notice]:
    """How many tasks the parts of the log that are lost held, by the gaps in the task ids read (Spark numbers an
    application's task attempts from 0, one after the other); tasks after the last read are not counted."""
    ids = {t.task_id for t in tasks} | {r.task_id for r in running}
    top = max(ids, default=-1)
    lost = top + 1 - len(ids)
    if lost > 0:
        yield Notice(f"spark: {lost} tasks lost with the missing or damaged parts of the log ({lost} of the task "
                     f"ids 0 to {top} not read)", lost)


def _file_index(path: str) -> int:
    """The index of a rolling log's events file (1 for any other file)."""
    m = EVENTS_FILE.match(Path(path).name)
    return int(m.group(1)) if m else 1


def _implausible(n: int) -> Notice:
    return Notice(f"spark: {n} tasks with a Finish Time outside 1970-2527 not mapped", n)


def collect(source: SparkSource) -> list[Interval]:
    """Every Interval of a source (Notices dropped): handy in tests and scripts."""
    return [item for item in source.items() if isinstance(item, Interval)]
