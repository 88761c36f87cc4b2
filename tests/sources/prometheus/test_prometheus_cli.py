"""`latencymap scrape` end to end: the real CLI over a live, driven prometheus_client exporter; record and report."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_support import POW2_MS_BUCKETS, TEXT_TYPE, Exporter, Scripted, histogram_page

from latencymap.core.model import Interval
from latencymap.protocol import ProtocolReader

METRIC = "app_request_duration_seconds"
STREAMS = {("GET",): f'{METRIC}{{method="GET"}}', ("POST",): f'{METRIC}{{method="POST"}}'}


@pytest.fixture
def driven() -> Iterator[Exporter]:
    """An exporter observing GET and POST latencies without pause until the test ends."""
    exporter = Exporter(buckets=POW2_MS_BUCKETS)
    exporter.observe(0.001, "GET")
    exporter.observe(0.001, "POST")
    stop = threading.Event()

    def drive() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            exporter.observe(0.0005 * (1 + k % 400), "GET" if k % 3 else "POST")
            time.sleep(0.001)

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    yield exporter
    stop.set()
    thread.join(timeout=5)
    exporter.close()


def latencymap(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], capture_output=True, text=True,
                          timeout=timeout)


def intervals_of(text: str) -> list[Interval]:
    return [item for item in ProtocolReader("emit").feed(text.splitlines()) if isinstance(item, Interval)]


@pytest.mark.slow
@pytest.mark.parametrize("form", ["negotiate", "text"])
def test_a_scrape_run_counts_exactly_the_observations_between_its_first_and_last_scrape(driven: Exporter,
                                                                                        form: str) -> None:
    driven.form = form
    scrapes = 6
    r = latencymap("scrape", driven.url, "--metric", METRIC, "--interval", "0.2", "--emit",
                   "--count", str(scrapes - 1))  # each stream's columns
    assert r.returncode == 0, r.stderr
    assert len(driven.served) == scrapes  # the baseline and one scrape per column pair
    first, last = driven.served[0], driven.served[-1]
    columns = intervals_of(r.stdout)
    assert len(columns) == 2 * (scrapes - 1)
    for labels, label in STREAMS.items():
        got = sum(int(iv.counts.sum()) for iv in columns if iv.stream.label == label)
        assert got == last[labels] - first[labels] > 0
    assert {iv.stream.unit for iv in columns} == {"millisec"}


@pytest.mark.slow
def test_record_then_report_and_replay_give_the_same_counts(driven: Exporter, tmp_path: Path) -> None:
    rec = tmp_path / "scrape.rec"
    secret_url = driven.url.replace("http://", "http://bob:hunter2@") + "?api_key=k3y"
    live = latencymap("scrape", secret_url, "--metric", METRIC, "--interval", "0.2", "--count", "3", "--emit",
                      "--record", str(rec))
    assert live.returncode == 0, live.stderr
    emitted = intervals_of(live.stdout)
    report = latencymap("report", "--format", "json", str(rec))
    assert report.returncode == 0, report.stderr
    streams = {s["stream"]["label"]: s for s in json.loads(report.stdout)["streams"]}
    first, last = driven.served[0], driven.served[-1]
    for labels, label in STREAMS.items():
        assert streams[label]["stream"] == {"label": label, "datasource": "prometheus", "unit": "millisec"}
        assert streams[label]["columns"] == 3
        assert streams[label]["total"]["events"] == sum(int(iv.counts.sum()) for iv in emitted
                                                        if iv.stream.label == label) == last[labels] - first[labels]
    replay = latencymap("replay", "--max", "--emit", str(rec))
    assert replay.returncode == 0, replay.stderr
    again = intervals_of(replay.stdout)
    assert [(iv.stream, iv.start, iv.end, iv.counts.tolist()) for iv in again] == \
        [(iv.stream, iv.start, iv.end, iv.counts.tolist()) for iv in emitted]
    text = rec.read_text()
    assert "hunter2" not in text + live.stderr and "bob" not in text and "k3y" not in text
    header = json.loads(text.splitlines()[0].removeprefix("# latencymap-recording "))
    assert header["source"] == "scrape" and header["options"]["url"] == driven.url + "?api_key=***"


def test_a_json_report_of_a_scrape_says_what_was_scraped_without_its_secrets(driven: Exporter) -> None:
    secret_url = driven.url.replace("http://", "http://bob:hunter2@") + "?api_key=k3y"
    r = latencymap("report", "--format", "json", "scrape", secret_url, "--metric", METRIC, "--interval", "0.2",
                   "--count", "2")
    assert r.returncode == 0, r.stderr
    source = json.loads(r.stdout)["source"]
    assert source["name"] == "scrape" and source["metric"] == METRIC and source["interval"] == 0.2
    assert source["url"] == driven.url + "?api_key=***"
    assert "hunter2" not in r.stdout + r.stderr and "k3y" not in r.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGINT, 130, "interrupted (Ctrl-C)"),
                                                   (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_a_report_stopped_by_a_signal_reports_what_was_read(driven: Exporter, sig: int, code: int, said: str) -> None:
    """A live `report SOURCE` without --count runs until stopped: Ctrl-C used to throw the whole run away."""
    proc = subprocess.Popen([sys.executable, "-m", "latencymap", "report", "--format", "json", "scrape", driven.url,
                             "--metric", METRIC, "--interval", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 30
    while len(driven.served) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    doc = json.loads(out)
    assert {s["stream"]["label"] for s in doc["streams"]} == set(STREAMS.values())
    assert all(s["columns"] >= 2 and s["total"]["events"] > 0 for s in doc["streams"])
    assert any(said in m and "covers what was read until then" in m for m in doc["errors"]["messages"])


@pytest.mark.slow
def test_duration_ends_every_series_on_the_same_scrape() -> None:
    """`--duration` used to cut the flow at the first column past the deadline: one series got one more column."""
    lines = ["# TYPE h_seconds histogram"]
    for i in range(40):
        lab = f'pod="p{i:02d}"'
        lines += [f'h_seconds_bucket{{{lab},le="0.002"}} 1', f'h_seconds_bucket{{{lab},le="+Inf"}} 1',
                  f"h_seconds_sum{{{lab}}} 0.001",
                  f"h_seconds_count{{{lab}}} 1"]
    endpoint = Scripted([(200, TEXT_TYPE, "\n".join(lines) + "\n")])
    try:
        done = latencymap("scrape", endpoint.url, "--metric", "h_seconds", "--interval", "0.2", "--duration", "1.1",
                          "--emit")
    finally:
        endpoint.close()
    assert done.returncode == 0, done.stderr
    columns: dict[str, list[Interval]] = {}
    for iv in intervals_of(done.stdout):
        columns.setdefault(iv.stream.label, []).append(iv)
    assert len(columns) == 40
    # 5 scrapes in 1.1 s unloaded; a loaded machine (CI beside other jobs) gets fewer in: the same count for each
    assert len({len(v) for v in columns.values()}) == 1 and len(next(iter(columns.values()))) >= 3
    assert len({v[-1].end for v in columns.values()}) == 1


def test_a_repeated_metric_is_a_usage_error_naming_both(driven: Exporter) -> None:
    """click keeps only the last of a repeated option: the first histogram would be left out without a word."""
    r = latencymap("scrape", driven.url, "--metric", METRIC, "--metric", "other_seconds", "--count", "2", "--emit")
    assert r.returncode == 2 and r.stdout == ""
    assert f"--metric: given 2 times ('{METRIC}', 'other_seconds')" in r.stderr
    same = latencymap("scrape", driven.url, "--metric", METRIC, "--metric", METRIC, "--count", "1", "--interval",
                      "0.2", "--emit")
    assert same.returncode == 0 and intervals_of(same.stdout)


@pytest.mark.slow
@pytest.mark.parametrize(("status", "words"), [(404, "answered HTTP 404 Not Found"),
                                               (503, "answered HTTP 503 Service Unavailable")])
def test_scrape_count_ends_with_exit_1_naming_the_url_and_status_on_an_endpoint_that_fails(status: int,
                                                                                           words: str) -> None:
    """`scrape URL --count 1` against a 404 used to ask again forever; a 503 that never ends gives up."""
    endpoint = Scripted([(status, "text/plain", "no such page")])
    try:
        r = latencymap("scrape", endpoint.url, "--metric", "h_seconds", "--count", "1", "--interval", "0.01",
                       "--emit", timeout=30)
    finally:
        endpoint.close()
    assert r.returncode == 1 and r.stdout == ""
    assert f"{endpoint.url}: {words} (no such page)" in r.stderr
    assert ("stopped: asking again would get the same answer" if status == 404 else
            "gave up after 5 failed scrapes in a row") in r.stderr
    assert len(endpoint.requests) == (1 if status == 404 else 5)


def test_a_sum_that_goes_down_while_the_buckets_rise_is_no_negative_time_in_the_report() -> None:
    """Prometheus allows negative observations, so a `_sum` that falls while no bucket does is no reset; but a
    negative time for a latency column is nonsense: that column's time is unknown (estimated from its buckets), with
    one note per series, and never summed with another series' time into a wrong "exact" one."""
    bounds = (0.005, 0.01, 0.025, 0.05, 0.1, float("inf"))

    def page(n: int, a: float, b: float) -> str:  # pod b's _sum falls by 1 s a scrape as its 100 events come
        return (histogram_page("svc_seconds", bounds, [0, 0, n, n, n, n], a, 'pod="a"')
                + histogram_page("svc_seconds", bounds, [0, 0, n, n, n, n], b, 'pod="b"').split("\n", 1)[1])

    endpoint = Scripted([(200, TEXT_TYPE, page(n, 2.0 * k, 5.0 - k)) for k, n in enumerate((100, 200, 300, 400))])
    try:
        r = latencymap("report", "--format", "json", "scrape", endpoint.url, "--metric", "svc_seconds", "--sum",
                       "--interval", "0.05", "--count", "3")
    finally:
        endpoint.close()
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    stream = report["streams"][0]
    assert stream["total"]["events"] == 600
    assert 0.01 <= stream["total"]["mean_s"] <= 0.025  # every event lies in (10 ms, 25 ms]: not 5 ms
    assert stream["source_buckets"]["time_s"] is None  # no exact time: estimated from the buckets
    assert all(v >= 0 for row in stream["intensity"] for v in row)
    said = [m for m in r.stderr.splitlines() if "_sum went down" in m]
    assert len(said) == 1 and 'svc_seconds{pod="b"}: _sum went down (from 5 to 4)' in said[0], r.stderr
