"""What the Spark report says on the committed real logs when something is off: failed attempts, another metric, a
log cut short, files that are not logs, options that match nothing, a URL where no driver answers."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from latencymap.cli.main import main
from latencymap.outputs.report import SHOWN_STRAGGLERS, straggler_lines
from latencymap.sources.spark import source as source_module

SPARK = Path(__file__).resolve().parents[3] / "fixtures" / "spark"
EXPECTED = json.loads((SPARK / "expected.json").read_text())
APP = EXPECTED["app_id"]


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_stage_lines_count_failed_attempts_apart() -> None:
    code, text, _ = run("report", "spark", str(SPARK / "zstd"))
    assert code == 0
    bimodal = EXPECTED["bimodal"]
    code, out, _ = run("report", "--format", "json", "spark", str(SPARK / "zstd"))
    stage = next(s for s in json.loads(out)["source"]["stages"] if s["stage"] == bimodal["stage"])
    head = f"   stage {bimodal['stage']}.0 ({stage['name']}): "
    (line,) = [line for line in text.splitlines() if line.startswith(head)]
    assert line.startswith(f"{head}{bimodal['tasks']} tasks, 1 failed attempt, median ")
    assert (stage["tasks"], stage["succeeded"], stage["failed"], stage["num_tasks"], stage["status"]) == \
        (bimodal["tasks"] + 1, bimodal["tasks"], 1, bimodal["tasks"], "complete")


def test_another_metric_says_what_stragglers_and_stages_measure() -> None:
    _, plain, _ = run("report", "spark", str(SPARK / "zstd"))
    code, out, _ = run("report", "spark", str(SPARK / "zstd"), "--metric", "gc")
    assert code == 0
    assert "Stragglers: 2" in plain and "\nStages: " in plain
    assert "Stragglers (by task duration; the maps show gc): 2" in out
    assert "\nStages (by task duration; the maps show gc): " in out
    _, doc, _ = run("report", "--format", "json", "spark", str(SPARK / "zstd"), "--metric", "gc")
    source = json.loads(doc)["source"]
    assert (source["metric"], source["analysed"]) == ("gc", "duration")


def test_a_directory_with_other_files_reads_its_log_and_lists_only_logs(tmp_path: Path) -> None:
    shutil.copy(SPARK / "plain" / APP, tmp_path / APP)
    for name in ("notes.txt", "README"):
        (tmp_path / name).write_text("what these logs are\n")
    os.utime(tmp_path / APP, (1, 1))  # the notes are newer than the log
    code, out, err = run("report", "spark", str(tmp_path))
    assert code == 0, err
    assert "No data." not in out and "Stragglers: 2" in out and "holds" not in err
    code, _, err = run("report", "spark", str(tmp_path), "--app", "nope")
    assert code == 2 and err == f"latencymap: {tmp_path}: no application matching 'nope' (applications: {APP})\n"
    code, _, err = run("report", "spark", str(tmp_path / "notes.txt"))
    assert code == 2 and "not a Spark event log" in err


def test_several_applications_in_a_directory_say_which_is_read(tmp_path: Path) -> None:
    shutil.copy(SPARK / "plain" / APP, tmp_path / APP)
    shutil.copy(SPARK / "lz4" / f"{APP}.lz4", tmp_path / "local-1795225699999.lz4")
    os.utime(tmp_path / APP, (1, 1))
    code, out, err = run("report", "spark", str(tmp_path))
    said = f"spark: {tmp_path} holds 2 applications; read: the latest, local-1795225699999 (--app ID reads another)"
    assert code == 0 and said in err and said in out


def test_an_app_that_names_another_application_than_the_logs_is_an_error() -> None:
    for path in (SPARK / "plain" / APP, SPARK / "zstd" / f"eventlog_v2_{APP}"):
        code, _, err = run("report", "spark", str(path), "--app", "local-2")
        assert code == 2 and f"the log of application {APP}, not 'local-2'" in err, err
    assert run("report", "spark", str(SPARK / "plain" / APP), "--app", APP)[0] == 0


def test_a_stage_that_is_not_there_is_a_usage_error_listing_those_that_are() -> None:
    code, out, err = run("report", "spark", str(SPARK / "zstd"), "--stage", "99")
    assert code == 2 and out == ""
    assert err == f"latencymap: --stage 99: no such stage in {APP} (its stages: 0, 1, 2, 3, 4)\n"
    assert run("report", "spark", str(SPARK / "zstd"), "--stage", "99", "--stage", "2")[0] == 0


def test_a_compressed_log_cut_short_is_told(tmp_path: Path) -> None:
    rolled = tmp_path / f"eventlog_v2_{APP}"
    shutil.copytree(SPARK / "zstd" / f"eventlog_v2_{APP}", rolled)
    last = sorted(rolled.glob("events_*"))[-1]
    last.write_bytes(last.read_bytes()[:-700])  # inside its last zstd frame, as a copy cut short leaves it
    code, out, err = run("report", "spark", str(rolled))
    assert code == 0
    said = f"spark: the compressed log ends early: {last}: its last zstd frame, at byte "
    assert said in err and said in out
    lz4 = tmp_path / f"{APP}.lz4"
    lz4.write_bytes((SPARK / "lz4" / f"{APP}.lz4").read_bytes()[:40_000])
    code, out, err = run("report", "spark", str(lz4))
    assert code == 0 and f"spark: the compressed log ends early: {lz4}: its last lz4 block, at byte " in err
    for whole in (SPARK / "zstd", SPARK / "lz4", SPARK / "plain"):
        assert "ends early" not in run("report", "spark", str(whole))[2]


def test_a_log_without_its_application_end_is_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log still named `.inprogress` may be that of a driver killed long ago: not said to be running, but with how
    long before now its last event was (the clock the reader reads set 9 min 36 s past it)."""
    lines = (SPARK / "plain" / APP).read_bytes().splitlines(keepends=True)
    cut = tmp_path / APP
    cut.write_bytes(b"".join(lines[: len(lines) // 2]))
    code, _, err = run("report", "spark", str(cut))
    assert code == 0 and "spark: the log has no application end (SparkListenerApplicationEnd)" in err
    running = tmp_path / "running"
    running.mkdir()
    (running / f"{APP}.inprogress").write_bytes(b"".join(lines[: len(lines) // 2]))
    now = last_event_s(lines[: len(lines) // 2]) + 576.0
    monkeypatch.setattr(source_module, "time", SimpleNamespace(time=lambda: now))
    code, text, err = run("report", "spark", str(running))
    said = ("spark: no application end logged yet (in-progress log): it is still running, or its driver died (its "
            "last event 9.6min ago); the last stage may be partial")
    assert code == 0 and said in err and said in text, err
    assert "the application is still running" not in err and "(SparkListenerApplicationEnd)" not in err


def last_event_s(lines: list[bytes]) -> float:
    """A log's last time (epoch s): the latest task end or launch (of a task with no end), job submission or end, or
    the application's start."""
    times, ended = [], set()
    for line in lines:
        e = json.loads(line)
        kind = e["Event"]
        if kind == "SparkListenerTaskEnd":
            times.append(e["Task Info"]["Finish Time"])
            ended.add(e["Task Info"]["Task ID"])
        elif kind in ("SparkListenerJobStart", "SparkListenerJobEnd"):
            times.append(e.get("Submission Time") or e.get("Completion Time"))
        elif kind == "SparkListenerApplicationStart":
            times.append(e["Timestamp"])
    times += [json.loads(line)["Task Info"]["Launch Time"] for line in lines
              if b'"SparkListenerTaskStart"' in line and json.loads(line)["Task Info"]["Task ID"] not in ended]
    return max(t for t in times if t) / 1000


def test_a_url_where_no_driver_answers_is_a_plain_input_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    code, out, err = run("report", "spark", f"http://127.0.0.1:{port}")
    assert code == 2 and out == ""
    assert err.startswith(f"latencymap: spark: no Spark REST API answers at http://127.0.0.1:{port} (")
    assert "DriverGone" not in err and "rest.py" not in err and len(err.splitlines()) == 1


def test_a_long_straggler_list_says_how_many_it_leaves_out() -> None:
    found = [{"stage": 0, "attempt": 0, "index": k, "task_id": k, "task_attempt": 0, "duration_s": 1.0,
              "ratio": 5.0, "reference_s": 0.2, "reference": "median", "stage_median_s": 0.2} for k in range(25)]
    lines = straggler_lines(found)
    assert lines[0] == "Stragglers: 25" and len(lines) == 1 + SHOWN_STRAGGLERS + 1
    assert lines[-1] == f"   … {25 - SHOWN_STRAGGLERS} more (--format json lists them all)"
    assert len(straggler_lines(found[:SHOWN_STRAGGLERS])) == 1 + SHOWN_STRAGGLERS


@pytest.mark.parametrize(("flags", "said"), [
    ({"failed": True, "end_reason": "ExceptionFailure"}, " — failed attempt (ExceptionFailure)"),
    ({"killed": True, "end_reason": "TaskKilled"}, " — killed attempt (TaskKilled)"),
    ({"speculative": True, "end_reason": "Success"}, " — speculative attempt"),
    ({}, "")])
def test_straggler_lines_say_what_became_of_the_attempt(flags: dict, said: str) -> None:
    s = {"stage": 2, "attempt": 0, "index": 6, "task_id": 22, "task_attempt": 1, "duration_s": 1.5, "ratio": 6.0,
         "reference_s": 0.25, "reference": "median", "stage_median_s": 0.25, **flags}
    assert straggler_lines([s])[1] == f"   task 6 (id 22, attempt 1) in stage 2.0: 1.5s, 6.0x the stage median " \
                                      f"(250ms){said}"
