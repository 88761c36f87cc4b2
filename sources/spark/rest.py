"""Polling the Spark REST API (driver UI :4040 or History Server :18080) for finished tasks.

A History Server says when an application completed. A driver's UI never does: it answers while the application
runs and goes away with it. So a driver that refuses the connection after it has answered has ended its
application: the stream ends there (with a notice), keeping every task read up to that moment.

Each poll asks the application (its start, and its end once completed), its stages, the task lists of stages with
newly finished tasks, the tasks still running in active stages (`taskList?status=RUNNING`: a hung task is a straggler
while it runs, as `--follow` shows it), and its jobs (their submission and completion: the time in and outside jobs).

Credentials in the URL (`http://user:password@host:18080`) are sent as basic auth, and a query
(`?token=...`, as a gateway in front of the History Server may want) is kept on every request; messages show the URL
without the user info and with secret-looking query values replaced by ***.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from latencymap.core.errors import InputError
from latencymap.core.json_input import json_input
from latencymap.core.sanitize import redact_address
from latencymap.sources.http_client import EndpointError, basic_auth, open_url

from .parse import AppInfo, ExecutorInfo, RunningTask, SparkTask, StageEnd, bytes_read, failure_cause

PAGE = 1000
FINISHED = {"SUCCESS": (False, False), "FAILED": (True, False), "KILLED": (False, True)}
#: How Spark's failure reasons other than an exception start their error message (`TaskFailedReason.toErrorString`).
OTHER_FAILURES = re.compile(r"^(FetchFailed|ExecutorLostFailure|TaskResultLost|TaskCommitDenied|Resubmitted|"
                            r"UnknownReason)\b")
DONE_STAGE = {"COMPLETE", "FAILED", "SKIPPED"}

Fetch = Callable[[str], Any]


class RestError(OSError):
    """The REST API did not answer as Spark's does."""


class DriverGone(RestError):
    """Nothing listens at the URL any more (connection refused or reset)."""


class NoDriver(InputError):
    """Nothing answers at the URL as a Spark driver or History Server does (exit code 2)."""


def is_url(target: str) -> bool:
    """True for http(s) URLs."""
    return target.startswith(("http://", "https://"))


def api_base(url: str) -> str:
    """`http://host:4040` -> `http://host:4040/api/v1` (an `/api/v1` already there is kept; a query is left out:
    `with_query` puts it back on each request)."""
    parts = urllib.parse.urlsplit(url)
    url = urllib.parse.urlunsplit(parts._replace(query="", fragment="")).rstrip("/")
    return url if url.endswith("/api/v1") else url + "/api/v1"


def with_query(url: str, query: str) -> str:
    """`url` with the parameters of `query` after its own."""
    return f"{url}{'&' if '?' in url else '?'}{query}" if query else url


def fetch_json(url: str, timeout: float = 10.0) -> Any:
    """GET a URL and decode its JSON (stdlib only); user:password in the URL is sent as basic auth."""
    target, headers = basic_auth(url)
    request = urllib.request.Request(target, headers=headers)
    try:
        with open_url(request, timeout) as resp:
            return json_input(resp.read())
    except EndpointError as err:
        raise RestError(_said(url, err)) from None
    except urllib.error.URLError as err:
        if isinstance(err.reason, (ConnectionRefusedError, ConnectionResetError)):
            raise DriverGone(_said(url, err.reason)) from None
        raise RestError(_said(url, err)) from None
    except (ConnectionRefusedError, ConnectionResetError) as err:
        raise DriverGone(_said(url, err)) from None
    except (OSError, ValueError) as err:
        raise RestError(_said(url, err)) from None


def _said(url: str, err: BaseException) -> str:
    """`URL: error` without credentials (`redact_address`)."""
    return f"{redact_address(url)}: {redact_address(str(err))}"


def epoch_ms(stamp: str) -> int:
    """`2026-11-21T01:23:51.746GMT` -> epoch milliseconds."""
    text = stamp.removesuffix("GMT").removesuffix("Z")
    dt = datetime.fromisoformat(text).replace(tzinfo=UTC)
    return round(dt.timestamp() * 1000)


def stamp_ms(value: Any) -> int | None:
    """A REST date as epoch ms; None when it is missing or no date."""
    try:
        return epoch_ms(value) if isinstance(value, str) and value else None
    except ValueError:
        return None


def attempt_times(app: dict[str, Any]) -> tuple[int | None, int | None]:
    """(start, end) in epoch ms of an `/applications/ID` answer's latest attempt: its end only once it completed
    (a running attempt's `endTime` is -1 ms) and not before its start; None where not known."""
    attempts = [a for a in app.get("attempts") or () if isinstance(a, dict)]
    if not attempts:
        return None, None
    latest = max(attempts, key=lambda a: str(a.get("startTime", "")))
    start = stamp_ms(latest.get("startTime"))
    end = stamp_ms(latest.get("endTime")) if latest.get("completed") is True else None
    return start, end if end is not None and start is not None and end >= start else None


def app_clock_ms(app: dict[str, Any]) -> int | None:
    """The driver's clock when it answered `/applications/ID` (epoch ms): its running attempt's start plus the
    `duration` a live driver gives it (its time so far); None where it gives none (0: a History Server, an older
    Spark) or the attempt completed."""
    attempts = [a for a in app.get("attempts") or () if isinstance(a, dict)]
    if not attempts:
        return None
    latest = max(attempts, key=lambda a: str(a.get("startTime", "")))
    start, duration = stamp_ms(latest.get("startTime")), latest.get("duration")
    if latest.get("completed") is True or start is None or isinstance(duration, bool) or \
            not isinstance(duration, int) or duration <= 0:
        return None
    return start + duration


def job_from_rest(job: Any) -> tuple[int, list[int | None]] | None:
    """A `/jobs` entry as (job id, [submission, completion]) in epoch ms, as the event log's JobStart and JobEnd give
    them (None where not given: a running job has no completion); None for an entry without a job id."""
    if not isinstance(job, dict) or isinstance(job.get("jobId"), bool) or not isinstance(job.get("jobId"), int):
        return None
    return job["jobId"], [stamp_ms(job.get("submissionTime")), stamp_ms(job.get("completionTime"))]


def end_reason(t: dict[str, Any]) -> str:
    """A taskList entry's end as the event log's `Task End Reason` names it (`Success`, `TaskKilled`,
    `ExceptionFailure`...), from its status and error message."""
    if t["status"] == "SUCCESS":
        return "Success"
    if t["status"] == "KILLED":
        return "TaskKilled"
    other = OTHER_FAILURES.match(str(t.get("errorMessage") or ""))
    return other.group(1) if other else "ExceptionFailure"


def task_from_rest(stage: int, attempt: int, t: dict[str, Any]) -> SparkTask | None:
    """A finished task of a taskList answer as a SparkTask; None for a task still running."""
    if t.get("status") not in FINISHED or t.get("duration") is None:
        return None
    failed, killed = FINISHED[t["status"]]
    launch = epoch_ms(t["launchTime"])
    finish = launch + int(t["duration"])
    m = t.get("taskMetrics") or {}
    read, write = m.get("shuffleReadMetrics") or {}, m.get("shuffleWriteMetrics") or {}
    getting = int(t.get("gettingResultTime") or 0)
    return SparkTask(
        stage, attempt, int(t["taskId"]), int(t["index"]), int(t["attempt"]), launch, finish,
        str(t.get("executorId") or ""), str(t.get("host") or ""), failed, killed, bool(t.get("speculative")),
        end_reason(t), finish - getting if getting > 0 else 0,
        m.get("executorRunTime"), m.get("executorCpuTime"), m.get("jvmGcTime"), m.get("executorDeserializeTime"),
        m.get("resultSerializationTime"), read.get("fetchWaitTime"), write.get("writeTime"),
        bytes_read((m.get("inputMetrics") or {}).get("bytesRead"), read.get("remoteBytesRead"),
                   read.get("localBytesRead")),
    )


def running_from_rest(stage: int, attempt: int, t: Any) -> tuple[RunningTask, int | None] | None:
    """A taskList entry still running as a RunningTask (as the event log's TaskStart gives it), with the time until
    which the API saw it running (its launch plus the `duration` so far it gives it: None when it gives none); None
    for an entry that is not a running task."""
    if not isinstance(t, dict) or t.get("status") != "RUNNING":
        return None
    try:
        launch = epoch_ms(t["launchTime"])
        task = RunningTask(stage, attempt, int(t["taskId"]), int(t["index"]), int(t["attempt"]), launch,
                           str(t.get("executorId") or ""), str(t.get("host") or ""), bool(t.get("speculative")))
    except (KeyError, TypeError, ValueError):
        return None
    duration = t.get("duration")
    return task, launch + duration if isinstance(duration, int) and not isinstance(duration, bool) else None


def executor_from_rest(e: dict[str, Any]) -> ExecutorInfo:
    """An ExecutorInfo from an `/allexecutors` entry (a missing or odd field is unknown)."""
    cores = e.get("totalCores")
    known = cores if isinstance(cores, int) and not isinstance(cores, bool) and cores > 0 else None
    try:
        added = epoch_ms(str(e["addTime"])) if e.get("addTime") else None
    except ValueError:
        added = None
    return ExecutorInfo(str(e.get("id") or ""), added, known, stamp_ms(e.get("removeTime")))


def stage_end_from_rest(stage: dict[str, Any]) -> StageEnd | None:
    """How a stage attempt of a `/stages` answer ended; None while it has not."""
    status = stage.get("status")
    if status not in ("COMPLETE", "FAILED"):
        return None
    tasks = stage.get("numTasks")
    failure = failure_cause(str(stage.get("failureReason") or "failed")) if status == "FAILED" else None
    return StageEnd(int(stage["stageId"]), int(stage["attemptId"]), tasks if isinstance(tasks, int) else None,
                    failure)


def choose_app(apps: list[dict[str, Any]], app: str | None) -> dict[str, Any]:
    """The application to follow: `app` (id or part of it), else a running one, else the latest started
    (InputError when there is none, or `app` matches none or several)."""
    if not apps:
        raise InputError("spark: the REST API lists no applications")
    if app is not None:
        chosen = [a for a in apps if a.get("id") == app] or [a for a in apps if app in str(a.get("id"))]
        if len(chosen) != 1:
            raise InputError(f"spark: {len(chosen)} applications match {app!r} (applications: "
                             + ", ".join(str(a.get("id")) for a in apps) + ")")
        return chosen[0]
    running = [a for a in apps if not _completed(a)]
    return max(running or apps, key=lambda a: str((a.get("attempts") or [{}])[-1].get("startTime", "")))


def _completed(app: dict[str, Any]) -> bool:
    attempts = app.get("attempts") or []
    return bool(attempts) and all(a.get("completed") for a in attempts)


class RestPoller:
    """New finished tasks at each `poll()`, each task once; stages seen complete are not asked again; the tasks
    running at the poll (`running`), and until when the API saw them running (`seen_ms`)."""

    def __init__(self, url: str, app: str | None = None, fetch: Fetch = fetch_json) -> None:
        self.base, self.query, self._fetch = api_base(url), urllib.parse.urlsplit(url).query, fetch
        chosen = choose_app(self.fetch(f"{self.base}/applications"), app)
        self.app = AppInfo(str(chosen["id"]), str(chosen.get("name") or chosen["id"]))
        self._seen: set[int] = set()
        self._done: set[tuple[int, int]] = set()
        self._finished_counts: dict[tuple[int, int], int] = {}
        #: Tasks of the poll under way, not yet returned (what a poll cut short had read).
        self.unreturned: list[SparkTask] = []
        #: How stage attempts ended, by (stage, attempt).
        self.stage_ends: dict[tuple[int, int], StageEnd] = {}
        #: Each stage's name (its call site), by stage id.
        self.stage_names: dict[int, str] = {}
        #: The application's executors (`/allexecutors`: their cores), asked again when a task names a new one.
        self.executors: dict[str, ExecutorInfo] = {}
        self._executors_asked = False
        #: Each job's [submission, completion] (epoch ms), by job id, as the event log's `EventParser.jobs`; emptied
        #: and no longer asked when the API does not give them (the time in jobs is then unknown).
        self.jobs: dict[int, list[int | None]] = {}
        self._jobs_known = True
        #: The tasks running at the last poll (none of them finished then), by task id; replaced whole at each poll.
        self.running: list[RunningTask] = []
        #: The driver's clock at the last answer to `app_completed` (None where it gives none: `app_clock_ms`), and
        #: how far it is ahead of this machine's then (ms; 0 where it gives none).
        self.clock_ms: int | None = None
        self.clock_ahead_ms = 0
        #: Until when the API saw `running` running (epoch ms, its clock): the driver's clock at the poll, or the
        #: latest time so far it gave a running task (a History Server's: its log's last update); None: unknown.
        self.seen_ms: int | None = None

    def fetch(self, url: str) -> Any:
        """The answer at `url`, the query of the URL given kept on it."""
        return self._fetch(with_query(url, self.query))

    def app_completed(self) -> bool:
        """True once the API says every attempt of the application completed; takes in its start and end."""
        asked = time.time()
        answer = self.fetch(f"{self.base}/applications/{urllib.parse.quote(self.app.app_id)}")
        self.clock_ms = app_clock_ms(answer) if isinstance(answer, dict) else None
        if isinstance(answer, dict):
            self.app.start_ms, self.app.end_ms = attempt_times(answer)
            if self.clock_ms is not None:
                self.clock_ahead_ms = self.clock_ms - round((asked + time.time()) * 500)
        return _completed(answer)

    def poll(self) -> list[SparkTask]:
        """Tasks finished since the last poll (and `running`: those running now)."""
        app_path = f"{self.base}/applications/{urllib.parse.quote(self.app.app_id)}"
        running: list[tuple[RunningTask, int | None]] = []
        for stage in self.fetch(f"{app_path}/stages"):
            key = (int(stage["stageId"]), int(stage["attemptId"]))
            if key in self._done:
                continue
            if stage.get("name") is not None:
                self.stage_names[key[0]] = str(stage["name"])
            finished = sum(int(stage.get(k) or 0) for k in ("numCompleteTasks", "numFailedTasks", "numKilledTasks"))
            if finished and finished != self._finished_counts.get(key):
                self._stage_tasks(app_path, *key)
                self._finished_counts[key] = finished
            if stage.get("status") == "ACTIVE" and stage.get("numActiveTasks"):
                running += self._running_tasks(app_path, *key)
            end = stage_end_from_rest(stage)
            if end is not None:
                self.stage_ends[key] = end
            if stage.get("status") in DONE_STAGE:
                self._done.add(key)
        seen = [s for s in [self.clock_ms, *(s for _, s in running)] if s is not None]
        self.running = sorted((r for r, _ in running if r.task_id not in self._seen), key=lambda r: r.task_id)
        self.seen_ms = max(seen, default=None)
        if self._jobs_known:
            self._ask_jobs(app_path)
        new, self.unreturned = self.unreturned, []
        if not self._executors_asked or any(t.executor not in self.executors for t in new):
            self._ask_executors(app_path)
        return new

    def _ask_executors(self, app_path: str) -> None:
        """The executors' cores; an API that does not give them leaves them unknown (as an event log without
        ExecutorAdded does)."""
        self._executors_asked = True
        try:
            answer = self.fetch(f"{app_path}/allexecutors")
        except DriverGone:
            raise
        except RestError:
            return
        for e in answer if isinstance(answer, list) else []:
            if isinstance(e, dict):
                info = executor_from_rest(e)
                self.executors[info.executor] = info

    def _ask_jobs(self, app_path: str) -> None:
        """Every job's submission and completion (one request, whatever the number of tasks); jobs the driver no
        longer lists (past `spark.ui.retainedJobs`) are kept as last read."""
        try:
            answer = self.fetch(f"{app_path}/jobs")
        except DriverGone:
            raise
        except RestError:
            answer = None
        if not isinstance(answer, list):
            self._jobs_known = False
            self.jobs.clear()
            return
        for job in map(job_from_rest, answer):
            if job is not None:
                self.jobs[job[0]] = job[1]

    def _running_tasks(self, app_path: str, stage: int, attempt: int) -> list[tuple[RunningTask, int | None]]:
        """A stage attempt's running tasks (`running_from_rest`; an API that does not filter by status gives them
        all, of which those running are kept); an answer that is not a task list leaves the rest unknown."""
        out: list[tuple[RunningTask, int | None]] = []
        offset = 0
        while True:
            try:
                page = self.fetch(f"{app_path}/stages/{stage}/{attempt}/taskList?status=RUNNING&offset={offset}"
                                  f"&length={PAGE}")
            except DriverGone:
                raise
            except RestError:  # (its finished tasks are read apart: only what runs now is unknown)
                return out
            if not isinstance(page, list):
                return out
            out += [r for r in (running_from_rest(stage, attempt, t) for t in page) if r is not None]
            if len(page) < PAGE:
                return out
            offset += PAGE

    def _stage_tasks(self, app_path: str, stage: int, attempt: int) -> None:
        offset = 0
        while True:
            page = self.fetch(f"{app_path}/stages/{stage}/{attempt}/taskList?offset={offset}&length={PAGE}")
            for raw in page:
                task = task_from_rest(stage, attempt, raw)
                if task is not None and task.task_id not in self._seen:
                    self._seen.add(task.task_id)
                    self.unreturned.append(task)
            if len(page) < PAGE:
                return
            offset += PAGE


def rest_tasks(url: str, app: str | None = None, poll_s: float = 1.0, sleep: Callable[[float], None] = time.sleep,
               fetch: Fetch = fetch_json, note: Callable[[str], None] | None = None,
               on_poller: Callable[[RestPoller], None] | None = None,
               ) -> Iterator[tuple[list[SparkTask], bool, AppInfo]]:
    """(new tasks, ended, app) after each poll, until the application completes or its driver goes away;
    `on_poller` is given the poller (its executors and stage ends) once it is made."""
    try:
        poller = RestPoller(url, app, fetch)  # nothing answering here yet is an error, not an end
    except RestError as err:
        raise NoDriver(f"spark: no Spark REST API answers at {redact_address(url)} ({err}): is a driver's UI "
                       "(port 4040) or a History Server (18080) there?") from None
    if on_poller is not None:
        on_poller(poller)
    yield from _polls(poller, poll_s, sleep, note)


def _polls(poller: RestPoller, poll_s: float, sleep: Callable[[float], None], note: Callable[[str], None] | None,
           ) -> Iterator[tuple[list[SparkTask], bool, AppInfo]]:
    """`rest_tasks` once its poller is made."""
    while True:
        try:
            ended = poller.app_completed()
            tasks = poller.poll()
        except DriverGone as err:
            if note is not None:
                note(f"spark: {redact_address(poller.base)} stopped answering ({err}): the application "
                     f"{poller.app.app_id} ended; tasks that finished after the last poll are only in its event log")
            yield poller.unreturned, True, poller.app
            return
        yield tasks, ended, poller.app
        if ended:
            return
        sleep(poll_s)
