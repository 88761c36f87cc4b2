"""SVG and HTML reports of Spark logs list each log's stragglers under the stream that counted their tasks: one log,
several logs (their own streams, shown apart or going on in one), `--per-stage` (the stage's stream), other inputs
beside them (none), and those no stream can be told to hold in a section of their own."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from skips_support import requires_module

from latencymap.cli.main import main
from latencymap.core.sanitize import cut_label
from latencymap.outputs.report import straggler_lines

#: The slow partition of each application the real job runs, in the order it runs them: the second's name begins as
#: a stage of the first's label would, and is long enough to be cut in its own.
RUNS = (("nightly-etl", 6), ("nightly-etl stage 0 backfill " + "x" * 200, 7), ("nightly-etl", 9))
JOB = textwrap.dedent(f"""
    import sys, time
    from pyspark import SparkConf, SparkContext

    for app, slow in {RUNS!r}:
        conf = (SparkConf().setMaster("local[2]").setAppName(app)
                .set("spark.eventLog.enabled", "true").set("spark.eventLog.dir", sys.argv[1])
                .set("spark.eventLog.rolling.enabled", "false").set("spark.eventLog.compress", "false")
                .set("spark.ui.enabled", "false").set("spark.ui.showConsoleProgress", "false")
                .set("spark.driver.memory", "512m"))
        sc = SparkContext(conf=conf)
        sc.setLogLevel("ERROR")

        def work(i, rows, slow=slow):
            time.sleep(2.0 if i == slow else 0.2)
            return [sum(1 for _ in rows)]

        sc.parallelize(range(48), 12).mapPartitionsWithIndex(work).collect()
        sc.stop()
""")


def svg_findings(svg: str) -> tuple[dict[str, list[str]], list[str]]:
    """Each stream panel's finding lines, by stream label; the lines of the stragglers on no stream."""
    panels = re.split(r'<g class="panel" data-stream="([^"]*)"', svg)
    found = {html.unescape(label): [html.unescape(t).strip() for t in re.findall(r'class="finding">([^<]*)<', body)]
             for label, body in zip(panels[1::2], panels[2::2], strict=True)}
    nowhere = [html.unescape(t).strip() for t in re.findall(r'class="unplaced">([^<]*)<', svg)]
    return found, nowhere


def html_findings(page: str) -> tuple[dict[str, list[str]], list[str]]:
    """Each stream section's finding lines, by stream label; the lines of the stragglers on no stream."""
    sections = re.split(r'<section class="(stream" data-stream="[^"]*|unplaced)">', page)
    found, nowhere = {}, []
    for head, body in zip(sections[1::2], sections[2::2], strict=True):
        lines = [html.unescape(t).strip() for t in re.findall(r"<li>([^<]*)</li>", body.split("</ul>")[0])]
        if head == "unplaced":
            nowhere = lines
        else:
            found[html.unescape(head.split('data-stream="')[1])] = lines
    return found, nowhere


def reports(*args: str) -> list[tuple[dict[str, list[str]], list[str]]]:
    """The SVG and the HTML report of `args`, read back as (findings by stream, stragglers on no stream)."""
    out = []
    for fmt, read in (("svg", svg_findings), ("html", html_findings)):
        r = CliRunner().invoke(main, ["report", "--format", fmt, *args])
        assert r.exit_code == 0, r.output
        out.append(read(r.output))
    return out


def stragglers(lines: list[str]) -> list[str]:
    """The straggler lines among a stream's findings (run headings and their `Stragglers: N` included)."""
    heads = [k for k, line in enumerate(lines) if line.startswith("Stragglers: ") or re.fullmatch(r"\S+ \(.+\):", line)]
    return lines[heads[0]:] if heads else []


FIXTURE_STRAGGLERS = ["Stragglers: 2",
                      "task 5 (id 9) in stage 2.0: 2.55s, 7.5x the stage median without warm-up (338ms)",
                      "task 21 (id 25) in stage 2.0: 2.54s, 7.5x the stage median without warm-up (338ms)"]


def test_two_logs_of_one_application_at_one_time_each_list_theirs_and_other_inputs_none(fixtures: Path) -> None:
    """The same run as a plain and an lz4 log: the second goes back into the first's time, so it is its own stream
    `LABEL [INPUT]`; both list their stragglers (several inputs used to drop every one); a SystemTap input beside
    them lists none (one log's stragglers used to be listed under every stream)."""
    plain, lz4 = str(fixtures / "spark" / "plain"), str(fixtures / "spark" / "lz4")
    systemtap = str(fixtures / "pylatencymap" / "test_SystemTap_data.txt")
    for found, nowhere in reports(plain, lz4, systemtap):
        assert len(found) == 3 and not nowhere
        assert stragglers(found["spark latencymap-fixture task duration"]) == FIXTURE_STRAGGLERS
        assert stragglers(found[f"spark latencymap-fixture task duration [{lz4}]"]) == FIXTURE_STRAGGLERS
        (other,) = [lines for label, lines in found.items() if not label.startswith("spark ")]
        assert not stragglers(other)


def test_the_same_log_twice_lists_its_stragglers_once_in_each_stream(fixtures: Path) -> None:
    plain = str(fixtures / "spark" / "plain")
    for found, nowhere in reports(plain, plain):
        assert list(found) == ["spark latencymap-fixture task duration",
                               f"spark latencymap-fixture task duration [{plain}]"] and not nowhere
        assert all(stragglers(lines) == FIXTURE_STRAGGLERS for lines in found.values())


def test_per_stage_stragglers_are_on_their_stages_stream_only(fixtures: Path) -> None:
    for found, nowhere in reports("spark", "--per-stage", str(fixtures / "spark" / "plain")):
        assert len(found) == 5 and not nowhere
        for label, lines in found.items():
            assert stragglers(lines) == (FIXTURE_STRAGGLERS if " stage 2 " in label else []), label


def renamed(plain: Path, path: Path, name: str) -> Path:
    """The fixture's log as application `name` (its own id, so that two copies are two applications)."""
    path.write_bytes(plain.read_bytes().replace(b'"App Name":"latencymap-fixture"', f'"App Name":"{name}"'.encode())
                     .replace(plain.name.encode(), path.name.encode()))
    return path


def test_a_name_cut_in_its_label_lists_its_stragglers_under_its_stream(fixtures: Path, tmp_path: Path) -> None:
    """An application name long enough to be cut in the stream's label: its stragglers are on its stream (they were
    listed after the streams, as on none), with `--per-stage` on its stage 2's, and given twice on each of its two
    streams (the second shown apart)."""
    plain = next((fixtures / "spark" / "plain").iterdir())
    name = "long-" + "x" * 240
    cut = renamed(plain, tmp_path / "local-cut", name)
    label = cut_label(f"spark {name} task duration")
    for found, nowhere in reports(str(cut), str(plain)):
        assert set(found) == {label, "spark latencymap-fixture task duration"} and not nowhere
        assert all(stragglers(lines) == FIXTURE_STRAGGLERS for lines in found.values())
    for found, nowhere in reports(str(cut), str(cut)):
        assert list(found) == [label, f"{label} [{cut}]"] and not nowhere
        assert all(stragglers(lines) == FIXTURE_STRAGGLERS for lines in found.values())
    for found, nowhere in reports("spark", "--per-stage", str(cut)):
        assert len(found) == 5 and not nowhere
        for shown, lines in found.items():
            assert stragglers(lines) == (FIXTURE_STRAGGLERS if shown == cut_label(f"spark {name} stage 2 task duration")
                                         else []), shown


def test_applications_whose_names_begin_alike_list_their_own(fixtures: Path, tmp_path: Path) -> None:
    """`etl` and `etl stage 2` (whose label begins as a stage of `etl`'s would): each stream lists its own
    application's stragglers; `etl`'s used to go to `etl stage 2`'s stream, none to its own."""
    plain = next((fixtures / "spark" / "plain").iterdir())
    logs = [renamed(plain, tmp_path / f"local-{k}", name) for k, name in enumerate(("etl", "etl stage 2"))]
    for found, nowhere in reports(*map(str, logs)):
        assert list(found) == ["spark etl task duration", "spark etl stage 2 task duration"] and not nowhere
        assert all(stragglers(lines) == FIXTURE_STRAGGLERS for lines in found.values())


def test_stragglers_of_a_stage_that_made_no_stream_are_listed_apart(fixtures: Path, tmp_path: Path) -> None:
    """With `--per-stage --metric shuffle-write`, a stage none of whose tasks has a Shuffle Write Time makes no
    stream: its stragglers are not lost, they are listed under their input after the streams."""
    plain = next((fixtures / "spark" / "plain").iterdir())
    log = tmp_path / plain.name
    log.write_bytes(b"\n".join(re.sub(rb'"Shuffle Write Time":\d+,?', b"", line) if b'"Stage ID":2,' in line
                                else line for line in plain.read_bytes().splitlines()) + b"\n")
    for found, nowhere in reports("spark", "--per-stage", "--metric", "shuffle-write", str(log)):
        assert len(found) == 4 and not any(stragglers(lines) for lines in found.values())
        head = f"== spark analysis of {log} (latencymap-fixture {plain.name}):"
        assert "".join(nowhere[: len(nowhere) - 3]).replace(" ", "") == head.replace(" ", "")  # wrapped in SVG
        assert nowhere[-3:] == FIXTURE_STRAGGLERS


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Event logs of three real local Spark applications run one after the other (`RUNS`), in that order."""
    out = tmp_path_factory.mktemp("spark-events")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", JOB, out.resolve().as_uri()], env=env, cwd=out,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    logs = sorted(p for p in out.iterdir() if p.is_file())  # local-<start ms>: in the order they ran
    assert len(logs) == len(RUNS)
    return logs


@pytest.mark.slow
@pytest.mark.timeout(300)
@requires_module("pyspark")
def test_real_spark_runs_list_their_stragglers_under_their_applications_streams(three_runs: list[Path]) -> None:
    """Two runs of one application (the second after the first: one stream going on) and another application whose
    name begins as the first's stage 0 stream would and is cut in its label: the stream of the two lists each run's
    stragglers under its run, the other application's lists its own; each run's planted slow task among them, as
    the JSON report gives them."""
    r = CliRunner().invoke(main, ["report", "--format", "json", *map(str, three_runs)])
    assert r.exit_code == 0, r.output
    analyses = json.loads(r.output)["sources"]
    listed = [[line.strip() for line in straggler_lines(a["stragglers"])] for a in analyses]
    for found, (_, slow) in zip(listed, RUNS, strict=True):
        assert any(line.startswith(f"task {slow} (id {slow}) in stage 0.0: ") for line in found), found
    heads = [f"{log} (nightly-etl {log.name}):" for log in three_runs]
    for found, nowhere in reports(*map(str, three_runs)):
        other = cut_label(f"spark {RUNS[1][0]} task duration")
        assert set(found) == {"spark nightly-etl task duration", other} and not nowhere
        assert stragglers(found["spark nightly-etl task duration"]) == [heads[0], *listed[0], heads[2], *listed[2]]
        assert stragglers(found[other]) == listed[1]
