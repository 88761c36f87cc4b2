"""Spark REST polling against a local stub serving the driver answers recorded by fixtures/spark/generate.py."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from prometheus_support import Redirect, Scripted, free_port
from spark_support import stub_driver

from latencymap.sources.spark.rest import (
    DriverGone,
    NoDriver,
    RestError,
    RestPoller,
    api_base,
    choose_app,
    epoch_ms,
    fetch_json,
    rest_tasks,
    with_query,
)
from latencymap.sources.spark.source import SparkSource, collect

SPARK = Path(__file__).resolve().parents[3] / "fixtures" / "spark"
EXPECTED = json.loads((SPARK / "expected.json").read_text())


def completed_answers() -> dict[str, object]:
    """The recorded answers, with the application marked completed."""
    answers = json.loads((SPARK / "rest" / "responses.json").read_text())
    app_path = f"/applications/{EXPECTED['app_id']}"
    for attempt in answers[app_path]["attempts"]:
        attempt["completed"] = True
    return answers


@pytest.fixture
def driver() -> Iterator[str]:
    """A stub driver UI: the recorded answers, with the application marked completed."""
    with stub_driver(completed_answers(), empty_task_pages=True) as url:
        yield url


def signature(intervals: list) -> list[tuple]:
    return [(iv.stream, iv.start, iv.end, iv.counts.tolist(), np.round(iv.time, 9).tolist()) for iv in intervals]


def test_rest_gives_the_event_log_intervals(driver: str) -> None:
    rest = SparkSource(target=driver, interval=0.5, poll=0.01)
    log = SparkSource(target=str(SPARK / "plain"), interval=0.5)
    assert signature(collect(rest)) == signature(collect(log))
    assert sorted(t.task_id for t in rest.tasks) == sorted(t.task_id for t in log.tasks)


def test_rest_stragglers_match(driver: str) -> None:
    rest = SparkSource(target=driver, poll=0.01)
    collect(rest)
    got = sorted((s["stage"], s["index"]) for s in rest.analysis()["stragglers"])
    assert got == sorted((s["stage"], s["index"]) for s in EXPECTED["stragglers"])
    assert rest.analysis()["application_time"] is None  # these recorded answers have no /jobs: time in jobs unknown


@pytest.mark.parametrize("metric", ["run", "cpu", "gc", "deserialize", "fetch-wait", "shuffle-write"])
def test_rest_metrics_match_the_log(driver: str, metric: str) -> None:
    rest = collect(SparkSource(target=driver, interval=1.0, poll=0.01, metric=metric))
    log = collect(SparkSource(target=str(SPARK / "plain"), interval=1.0, metric=metric))
    assert signature(rest) == signature(log)


def test_rest_helpers() -> None:
    assert api_base("http://h:4040/") == "http://h:4040/api/v1"
    assert api_base("http://h:18080/api/v1") == "http://h:18080/api/v1"
    assert api_base("http://h:18080/?token=T") == api_base("http://h:18080/api/v1/?token=T#x") == "http://h:18080/api/v1"
    assert with_query("http://h/api/v1/applications", "token=T") == "http://h/api/v1/applications?token=T"
    assert with_query("http://h/t?offset=0", "token=T") == "http://h/t?offset=0&token=T"
    assert with_query("http://h/t?offset=0", "") == "http://h/t?offset=0"
    assert epoch_ms("1970-01-01T00:00:01.250GMT") == 1250
    apps = [{"id": "a-1", "attempts": [{"completed": True, "startTime": "2026-01-01T00:00:00.000GMT"}]},
            {"id": "a-2", "attempts": [{"completed": False, "startTime": "2025-01-01T00:00:00.000GMT"}]}]
    assert choose_app(apps, None)["id"] == "a-2"
    assert choose_app(apps, "a-1")["id"] == "a-1"


def test_the_poller_takes_the_applications_start_end_and_jobs_from_each_poll() -> None:
    """The end only once the application completed (a running one's `endTime` is -1 ms); jobs once a poll, merged
    (a job the driver no longer lists is kept); an API that does not give them leaves them unknown, asked once."""
    base = "http://driver:4040/api/v1/applications"
    start, end = "2026-11-21T01:23:50.000GMT", "2026-11-21T01:24:00.500GMT"
    app = {"id": "app-1", "attempts": [{"startTime": start, "endTime": "1969-12-31T23:59:59.999GMT",
                                        "completed": False}]}
    jobs = [[{"jobId": 0, "submissionTime": "2026-11-21T01:23:51.746GMT", "completionTime":
              "2026-11-21T01:23:52.001GMT", "status": "SUCCEEDED"},
             {"jobId": 1, "submissionTime": "2026-11-21T01:23:53.000GMT", "status": "RUNNING"}],
            [{"jobId": 1, "submissionTime": "2026-11-21T01:23:53.000GMT", "completionTime":
              "2026-11-21T01:23:59.999GMT", "status": "FAILED"}]]
    asked: list[str] = []

    def fetch(url: str) -> object:
        asked.append(url.removeprefix(base))
        if url.endswith("/jobs"):
            return jobs.pop(0)
        return [app] if url == base else app if url == f"{base}/app-1" else []

    poller = RestPoller("http://driver:4040", fetch=fetch)
    assert not poller.app_completed() and poller.poll() == []
    assert (poller.app.start_ms, poller.app.end_ms) == (epoch_ms(start), None)
    assert poller.jobs == {0: [epoch_ms("2026-11-21T01:23:51.746GMT"), epoch_ms("2026-11-21T01:23:52.001GMT")],
                           1: [epoch_ms("2026-11-21T01:23:53.000GMT"), None]}
    app["attempts"][0].update(completed=True, endTime=end)
    assert poller.app_completed() and poller.poll() == []
    assert (poller.app.start_ms, poller.app.end_ms) == (epoch_ms(start), epoch_ms(end))
    assert poller.jobs[0][1] == epoch_ms("2026-11-21T01:23:52.001GMT")
    assert poller.jobs[1] == [epoch_ms("2026-11-21T01:23:53.000GMT"), epoch_ms("2026-11-21T01:23:59.999GMT")]
    assert asked.count("/app-1/jobs") == 2 and asked.count("/app-1/stages") == 2

    def no_jobs(url: str) -> object:
        if url.endswith("/jobs"):
            asked.append(url)
            raise RestError(f"{url}: HTTP Error 404: Not Found")
        return fetch(url)

    asked.clear()
    poller = RestPoller("http://driver:4040", fetch=no_jobs)
    for _ in range(3):
        poller.poll()
    assert poller.jobs == {} and asked.count(f"{base}/app-1/jobs") == 1


def test_a_driver_going_away_mid_poll_ends_the_stream_and_keeps_what_was_read() -> None:
    """The recorded answers of a running app (never `completed`); the driver stops while its 3rd stage is read."""
    answers = json.loads((SPARK / "rest" / "responses.json").read_text())
    stages = answers[f"/applications/{EXPECTED['app_id']}/stages"]
    cut = f"/stages/{stages[2]['stageId']}/0/taskList"

    def fetch(url: str) -> object:
        path = url.removeprefix("http://driver:4040/api/v1")
        if cut in path:
            raise DriverGone(f"{url}: [Errno 111] Connection refused")
        return answers[path]

    notes: list[str] = []
    got = list(rest_tasks("http://driver:4040", poll_s=0, fetch=fetch, note=notes.append))
    ((tasks, ended, app),) = got
    assert ended and app.app_id == EXPECTED["app_id"]
    read = {int(s["stageId"]) for s in stages[:2]}
    expected = [t for stage in stages[:2] for t in answers[f"/applications/{EXPECTED['app_id']}/stages/"
                                                          f"{stage['stageId']}/0/taskList?offset=0&length=1000"]]
    assert {t.stage for t in tasks} == read
    assert sorted(t.task_id for t in tasks) == sorted(t["taskId"] for t in expected)
    app_url = f"http://driver:4040/api/v1/applications/{EXPECTED['app_id']}"
    assert notes == [f"spark: http://driver:4040/api/v1 stopped answering ({app_url}{cut}?offset=0&length=1000: "
                     f"[Errno 111] Connection refused): the application {EXPECTED['app_id']} ended; tasks that "
                     "finished after the last poll are only in its event log"]


def test_an_answer_nested_too_deeply_is_a_rest_error() -> None:
    """5,000 `[` made json.loads raise RecursionError, which no caller catches."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from latencymap.sources.spark.rest import RestError, fetch_json

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"[" * 5000 + b"]" * 5000)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/api/v1/applications"
        with pytest.raises(RestError, match="nested too deeply to decode"):
            fetch_json(url)
    finally:
        server.shutdown()
        server.server_close()


def test_user_info_and_a_query_in_the_url_reach_every_request() -> None:
    """`http://alice:pw@host/?token=T`: urllib took `alice:pw@host` for the host ("Name or service not known"),
    and the query ended up inside the path (`/?token=T/api/v1/applications`)."""
    with stub_driver(completed_answers(), empty_task_pages=True,
                     guard=("Basic YWxpY2U6czNjcmV0UFc=", "token=SECRETQ")) as url:  # alice:s3cretPW
        rest = SparkSource(target=url.replace("http://", "http://alice:s3cretPW@") + "/?token=SECRETQ", interval=0.5,
                           poll=0.01)
        got = collect(rest)
    assert signature(got) == signature(collect(SparkSource(target=str(SPARK / "plain"), interval=0.5)))


@pytest.mark.parametrize("given, shown", [("http://alice:s3cretPW@127.0.0.1:{port}", "http://127.0.0.1:{port}"),
                                          ("http://127.0.0.1:{port}/?token=s3cretPW", "http://127.0.0.1:{port}/?token=***")])
def test_no_driver_says_the_true_cause_and_no_secret(given: str, shown: str) -> None:
    """The password was printed, with a false cause (`Name or service not known`: the host is 127.0.0.1)."""
    port = free_port()
    with pytest.raises(NoDriver) as caught:
        list(rest_tasks(given.format(port=port), poll_s=0))
    asked = "http://127.0.0.1:{port}/api/v1/applications" + ("?token=***" if "token" in given else "")
    assert str(caught.value) == (f"spark: no Spark REST API answers at {shown.format(port=port)} "
                                 f"({asked.format(port=port)}: [Errno 111] Connection refused): is a driver's UI "
                                 "(port 4040) or a History Server (18080) there?")


def test_a_redirect_to_another_host_gets_no_credentials() -> None:
    """A 302 to another host was followed with alice's password; now without it (a refusal there says why)."""
    target = Scripted([(200, "application/json", "[]"), (401, "text/plain", "who?")])
    redirect = Redirect(to=f"http://localhost:{target.port}")
    url = redirect.url.replace("http://", "http://alice:s3cretPW@") + "/api/v1/applications"
    try:
        assert fetch_json(url) == []
        with pytest.raises(RestError) as caught:
            fetch_json(url)
    finally:
        redirect.close()
        target.close()
    assert [r["Authorization"] for r in redirect.requests] == ["Basic YWxpY2U6czNjcmV0UFc="] * 2  # alice:s3cretPW
    assert len(target.requests) == 2 and all("Authorization" not in r for r in target.requests)
    assert str(caught.value) == (f"{redirect.url}/api/v1/applications: answered HTTP 401 Unauthorized at "
                                 f"http://localhost:{target.port}/api/v1/applications, where a redirect led: "
                                 "credentials are not sent on to another scheme, host or port (give that URL instead)")


def test_the_poller_gives_the_tasks_running_and_until_when_the_driver_saw_them_running() -> None:
    """A running task (status RUNNING, its duration so far) is listed running, not as a task, until it finishes: then
    it is read once as a finished task. An API that does not filter the task list by status gives every task: only
    those running are kept. The driver's clock is its running attempt's start plus its duration (0: none given)."""
    base = "http://driver:4040/api/v1/applications/app-1"
    start = epoch_ms("2026-11-21T01:23:50.000GMT")
    app = {"id": "app-1", "attempts": [{"startTime": "2026-11-21T01:23:50.000GMT", "duration": 9000,
                                        "completed": False}]}

    def task(task_id: int, status: str, duration: int) -> dict[str, object]:
        return {"taskId": task_id, "index": task_id - 10, "attempt": 0, "launchTime": "2026-11-21T01:23:51.000GMT",
                "duration": duration, "executorId": "driver", "host": "h", "status": status, "speculative": False}

    tasks = [task(10, "SUCCESS", 200), task(11, "RUNNING", 7500), task(12, "RUNNING", 7500)]
    stage = {"stageId": 3, "attemptId": 0, "status": "ACTIVE", "numActiveTasks": 2, "numCompleteTasks": 1}
    asked: list[str] = []
    broken = False

    def fetch(url: str) -> object:
        path = url.removeprefix(base)
        asked.append(path)
        if path == "/stages":
            return [stage]
        if "taskList" in path:
            if broken and "status=RUNNING" in path:
                raise RestError(f"{url}: HTTP Error 500: Server Error")
            return tasks  # every task, whatever the status asked (as an API that does not filter)
        return [app] if url.endswith("/applications") else app if path == "" else []

    poller = RestPoller("http://driver:4040", fetch=fetch)
    assert not poller.app_completed()
    assert [t.task_id for t in poller.poll()] == [10]
    assert [(r.task_id, r.stage, r.index, r.launch_ms, r.executor) for r in poller.running] == \
        [(11, 3, 1, start + 1000, "driver"), (12, 3, 2, start + 1000, "driver")]
    assert poller.clock_ms == poller.seen_ms == start + 9000
    assert abs(poller.clock_ahead_ms - (start + 9000 - time.time() * 1000)) < 60_000
    assert "/stages/3/0/taskList?status=RUNNING&offset=0&length=1000" in asked

    tasks[1] = task(11, "SUCCESS", 8000)
    stage.update(numActiveTasks=1, numCompleteTasks=2)
    app["attempts"][0]["duration"] = 0  # no clock given: the latest time so far given a running task
    tasks[2] = task(12, "RUNNING", 8500)
    assert not poller.app_completed()
    assert [t.task_id for t in poller.poll()] == [11]  # once, as a finished task
    assert [r.task_id for r in poller.running] == [12]
    assert poller.clock_ms is None and poller.seen_ms == start + 1000 + 8500

    broken = True  # the running tasks cannot be asked: none known running, the stream goes on
    assert poller.poll() == [] and poller.running == []

    stage.update(status="COMPLETE", numActiveTasks=0, numCompleteTasks=3)
    tasks[2] = task(12, "SUCCESS", 9000)
    asked.clear()
    assert [t.task_id for t in poller.poll()] == [12] and poller.running == []
    assert not any("status=RUNNING" in path for path in asked)
