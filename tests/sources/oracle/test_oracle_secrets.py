"""The Oracle password never shows: not in argv, logs, recordings, crash output or the process title."""

from __future__ import annotations

import io
import logging
import os
import pickle
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest
from test_oracle import DSN, PASSWORD, collect, invoke, make_source, wire_cli
from test_oracle_double import DatabaseError, FakeClock, FakeDb, example_rows

import latencymap.sources.oracle.source as oracle
from latencymap.sources.oracle.auth import PASSWORD_ENV, Secret, resolve_password
from latencymap.sources.oracle.errors import OracleError, describe_error, redact, shown_dsn

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def cli_db(monkeypatch: pytest.MonkeyPatch) -> dict:
    return wire_cli(monkeypatch)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_password_from_the_environment():
    secret = resolve_password("scott", DSN, external_auth=False, environ={PASSWORD_ENV: PASSWORD}, stdin=Tty())
    assert secret is not None and secret.reveal() == PASSWORD


def test_password_prompt_only_on_a_terminal():
    asked: list[str] = []
    secret = resolve_password("scott", DSN, external_auth=False, environ={}, stdin=Tty(),
                              prompt=lambda text: asked.append(text) or PASSWORD)
    assert secret is not None and secret.reveal() == PASSWORD and asked == [f"Oracle password for scott@{DSN}: "]
    with pytest.raises(OracleError, match=f"set {PASSWORD_ENV}, run on a terminal.*--external-auth"):
        resolve_password("scott", DSN, external_auth=False, environ={}, stdin=io.StringIO(),
                         prompt=lambda text: pytest.fail("prompted without a terminal"))


def test_the_password_prompt_shows_control_characters_of_user_and_dsn_as_question_marks():
    """The prompt goes to the terminal: an escape sequence in --user or --dsn is shown as `?`, as every message
    shows text from outside, not run by the terminal."""
    asked: list[str] = []
    resolve_password("perf\x1b[31mstat", "db\x1b]0;T\x07:1521/x", external_auth=False, environ={}, stdin=Tty(),
                     prompt=lambda text: asked.append(text) or PASSWORD)
    assert asked == ["Oracle password for perf?[31mstat@db?]0;T?:1521/x: "]


def test_external_auth_needs_no_password_and_connects_without_one():
    assert resolve_password(None, DSN, external_auth=True, environ={}, stdin=io.StringIO()) is None
    db = FakeDb(example_rows()[:2])
    collect(make_source(db, FakeClock(), user=None, external_auth=True))
    assert db.connects[0]["password"] is None and db.connects[0]["external_auth"] is True


class FakeDriver:
    """Stands in for the `oracledb` module: records init_oracle_client and connect calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def init_oracle_client(self, **kw: object) -> None:
        self.calls.append(("init_oracle_client", kw))

    def connect(self, **kw: object) -> types.SimpleNamespace:
        self.calls.append(("connect", kw))
        return types.SimpleNamespace(call_timeout=0)


def test_driver_glue_thin_by_default_thick_for_external_auth(monkeypatch):
    driver = FakeDriver()
    monkeypatch.setitem(sys.modules, "oracledb", driver)
    monkeypatch.setattr(oracle, "_thick_ready", False)
    conn = oracle.connect(dsn=DSN, user="scott", password=Secret(PASSWORD), thick=False, external_auth=False,
                          call_timeout_s=12)
    assert driver.calls == [("connect", {"dsn": DSN, "user": "scott", "password": PASSWORD})]
    assert conn.call_timeout == 12000
    driver.calls.clear()
    oracle.connect(dsn=DSN, user=None, password=None, thick=False, external_auth=True, call_timeout_s=10)
    oracle.connect(dsn=DSN, user=None, password=None, thick=True, external_auth=True, call_timeout_s=10)
    assert driver.calls == [("init_oracle_client", {}), ("connect", {"dsn": DSN, "externalauth": True}),
                            ("connect", {"dsn": DSN, "externalauth": True})]


def test_secret_hides_itself():
    secret = Secret(PASSWORD)
    assert PASSWORD not in repr(secret) and PASSWORD not in str(secret) and PASSWORD not in f"{secret}"
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    source = make_source(FakeDb([]), FakeClock())
    for shown in (repr(source), repr(source.describe()), repr(vars(source)), repr(source.options)):
        assert PASSWORD not in shown


@pytest.mark.parametrize("args", [["--dsn", f"scott/{PASSWORD}@{DSN}", "--user", "scott"],
                                  ["--dsn", DSN, "--user", f"scott/{PASSWORD}"]])
def test_password_in_argv_is_refused(cli_db, args):
    cli_db["db"] = FakeDb(example_rows()[:2])
    res = invoke("oracle", *args, "--plain", "--once")
    assert res.exit_code == 1 and "must not carry a password" in res.stderr
    assert PASSWORD not in res.output and not cli_db["db"].connects


def test_no_password_anywhere_in_output_recording_or_logs(cli_db, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    rows = example_rows()
    cli_db["db"] = FakeDb([*rows[:3], DatabaseError("ORA-03113: end-of-file on communication channel"), *rows[3:6]],
                          connect_script=[None, DatabaseError(f"ORA-12541: TNS:no listener ({PASSWORD})")])
    rec = tmp_path / "rec.txt"
    res = invoke("oracle", "--dsn", DSN, "--user", "scott", "--plain", "--once", "--count", "5", "--record", str(rec))
    assert res.exit_code == 0, res.output
    assert PASSWORD not in res.output and PASSWORD not in caplog.text
    text = rec.read_text()
    assert '"dsn": "dbhost:1521/ORCLPDB1"' in text and PASSWORD not in text


def test_driver_error_quoting_the_password_is_redacted(cli_db):
    cli_db["db"] = FakeDb([], connect_script=[DatabaseError(f"ORA-01017: invalid credential {PASSWORD} for scott")])
    res = invoke("oracle", "--dsn", DSN, "--user", "scott", "--plain", "--once")
    assert res.exit_code == 1 and "***" in res.stderr and PASSWORD not in res.output



@pytest.mark.parametrize("password", ["Zq9\u2028wx7", "Zq9\x1cwx7", "Zq9\nwx7"])
def test_a_password_holding_a_line_break_is_hidden_whole_in_the_drivers_error(cli_db, password):
    """The driver's first line was cut at `\\x1c` and U+2028 too, then redacted: the password, cut in two, matched no
    more and its first part was shown. The driver's text is redacted whole, then cut at line ends only."""
    cli_db["db"] = FakeDb([], connect_script=[DatabaseError(f"ORA-01017: invalid credential {password} for scott")])
    res = invoke("oracle", "--dsn", DSN, "--user", "scott", "--plain", "--once", env={PASSWORD_ENV: password})
    assert res.exit_code == 1 and "Zq9" not in res.output and "wx7" not in res.output
    assert "ORA-01017: invalid credential *** for scott" in res.stderr


CHILD = textwrap.dedent("""
    import sys, time
    import latencymap.cli.main as cli
    import latencymap.sources.oracle.source as oracle

    ready, mode = sys.argv[1], sys.argv[2]
    state = {"n": 0}

    class Cursor:
        def execute(self, sql, binds):
            state["n"] += 1
            if state["n"] == 3:
                with open(ready, "w") as fh:
                    fh.write(str("setproctitle" in sys.modules))
        def fetchall(self):
            if mode == "crash":
                return [("not-a-number", "db file sequential read", 2, 1)]
            return [(1, "db file sequential read", 2, 10 * state["n"])]
        def close(self):
            pass

    class Connection:
        version = "19.3.0.0.0"
        call_timeout = 0
        def cursor(self):
            return Cursor()
        def close(self):
            pass

    oracle.connect = lambda **kw: Connection()
    oracle.driver_problem = lambda: None
    if "oracle" not in cli.main.commands:
        cli.main.add_command(cli.source_command(oracle.OracleSource))
    cli.main(["oracle", "--dsn", "dbhost:1521/ORCLPDB1", "--user", "scott", "--interval", "0.1", "--plain",
              "--record", ready + ".rec"], prog_name="latencymap")
""")


def run_child(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[bytes], Path, Path, Path]:
    script, ready = tmp_path / "child.py", tmp_path / f"ready-{mode}"
    script.write_text(CHILD)
    out, err = tmp_path / f"{mode}.out", tmp_path / f"{mode}.err"
    env = {**os.environ, PASSWORD_ENV: PASSWORD, "PYTHONPATH": str(REPO / "tests" / "sources")}
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen([sys.executable, str(script), str(ready), mode], stdout=o, stderr=e, env=env,
                                stdin=subprocess.DEVNULL)
    return proc, ready, out, err


def test_process_title_and_cmdline_never_show_the_password(tmp_path):
    proc, ready, out, err = run_child(tmp_path, "run")
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() or not ready.read_text():
            assert proc.poll() is None, err.read_text()
            assert time.monotonic() < deadline, "the child never sampled"
            time.sleep(0.05)
        proc_dir = Path(f"/proc/{proc.pid}")
        cmdline = (proc_dir / "cmdline").read_bytes()
        titles = [(t / "comm").read_text() for t in (proc_dir / "task").iterdir()]
        assert b"child.py" in cmdline and PASSWORD.encode() not in cmdline
        assert all(PASSWORD not in title for title in titles)
        assert ready.read_text() == "False"  # setproctitle was never imported
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    for path in (out, err, Path(str(ready) + ".rec")):
        assert PASSWORD not in path.read_text(errors="replace")


def test_crash_output_never_shows_the_password(tmp_path):
    proc, _, out, err = run_child(tmp_path, "crash")
    assert proc.wait(timeout=60) != 0
    stderr = err.read_text()
    assert "latencymap: oracle: the source failed: ValueError" in stderr  # a crash, told in one line
    assert PASSWORD not in stderr and PASSWORD not in out.read_text()


@pytest.mark.parametrize("password", ["listener", "e", "connect", "start", "check", "SCOTT", "at"])
def test_redaction_never_touches_latencymaps_own_words(cli_db, password):
    cli_db["db"] = FakeDb([], connect_script=[DatabaseError("ORA-12541: TNS:no listener")])
    res = invoke("oracle", "--dsn", DSN, "--user", "scott", "--plain", "--once", env={PASSWORD_ENV: password})
    assert res.exit_code == 1
    (line,) = res.stderr.splitlines()
    remedy = "no listener at that address: start it (lsnrctl start), or check host and port in --dsn"
    assert line.startswith(f"latencymap oracle: cannot connect to {DSN}: ORA-12541: TNS:no ")
    assert line.endswith(" — " + remedy)  # the remedy, untouched, whatever the password
    driver = "ORA-12541: TNS:no *** —" if password == "listener" else "ORA-12541: TNS:no listener —"
    assert driver in line  # in the driver's text, only a whole word is the password; `e` mangles nothing


def test_redaction_still_hides_the_password_in_the_drivers_text_and_the_connect_string():
    secrets = [Secret("S3cr3t")]
    err = DatabaseError('DPY-4000: cannot connect using "scott/S3cr3t@dbhost" (S3cr3t) S3cr3tly')
    line = describe_error(err, user="scott", doing=f"cannot connect to {shown_dsn('dbhost/S3cr3t', secrets)}",
                          secrets=secrets)
    assert line.startswith("cannot connect to dbhost/***: DPY-4000: ")
    assert '"scott/***@dbhost" (***) S3cr3tly' in line  # inside a longer word it is not the password
    assert redact("pw=S3cr3t;", secrets) == "pw=***;" and redact("a.b", ["."]) == "a***b"
