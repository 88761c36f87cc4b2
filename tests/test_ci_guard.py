"""The CI guard (tests/support/skips_support.py): under CI=true a skip of a missing component fails, naming it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from skips_support import ALLOWED_IN_CI, MISSING, NOT_ROOT, UNCATEGORISED, classify, reason

REPO = Path(__file__).resolve().parents[1]

TESTS = """
import pytest
from skips_support import NO_BTF, NOT_ROOT, requires_binary, skip_because, skip_missing

@requires_binary("no-such-tool-here", remedy="apt-get install no-such-tool-here")
def test_missing_binary():
    pass

def test_missing_in_the_body():
    skip_missing("pyarrow", "pip install -e '.[dev]'")

def test_not_root():
    skip_because(NOT_ROOT, "root", "the test needs uid 0")

def test_no_btf():
    skip_because(NO_BTF, "/sys/kernel/btf/vmlinux", "no BTF")

def test_runs():
    assert True

@pytest.mark.xfail(reason="known")
def test_expected_to_fail():
    assert False
"""


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str | None,
        source: str = TESTS) -> pytest.RunResult:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    pytester.makepyfile(test_guarded=source)
    return pytester.runpytest("-p", "skips_support", "-p", "no:textual-snapshot", "-ra")


def test_reasons_carry_their_category() -> None:
    text = reason(MISSING, "tmux", "apt-get install tmux")
    assert text == "missing component: tmux — apt-get install tmux"
    assert classify("Skipped: " + text) == (MISSING, "tmux")
    assert classify(reason(NOT_ROOT, "root", "uid 1000")) == (NOT_ROOT, "root")
    assert classify("could not import 'torch'") == (UNCATEGORISED, "could not import 'torch'")
    assert set(ALLOWED_IN_CI) == {"not root", "no BTF", "no GPU", "not Linux"}


def test_locally_every_skip_stays_a_skip(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(pytester, monkeypatch, None)
    result.assert_outcomes(passed=1, skipped=4, xfailed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*skips by category*", "   2 missing component (fails under CI=true): "
                                 "no-such-tool-here ×1, pyarrow ×1", "   1 not root (allowed in CI): root ×1",
                                 "   1 no BTF (allowed in CI): /sys/kernel/btf/vmlinux ×1"])


def test_under_ci_a_missing_component_fails_naming_it(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(pytester, monkeypatch, "true")
    # The skipif mark skips in setup (an error there), the body's skip in the call (a failure).
    result.assert_outcomes(passed=1, skipped=2, xfailed=1, failed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*CI=true and a component the suite installs is missing: no-such-tool-here",
        "*CI=true and a component the suite installs is missing: pyarrow",
        "CI guard: skips turned into failures: 2 (missing component: no-such-tool-here ×1, "
        "missing component: pyarrow ×1)",
        "SKIPPED * not root: root — the test needs uid 0",
    ])


def test_under_ci_only_legitimate_skips_pass(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    legit = TESTS.split("@requires_binary")[0] + TESTS[TESTS.index("def test_not_root"):]
    result = run(pytester, monkeypatch, "true", legit)
    result.assert_outcomes(passed=1, skipped=2, xfailed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["CI guard: on (CI=true); no skip of a missing component"])


def test_under_ci_a_skip_without_category_fails(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(pytester, monkeypatch, "true", "import pytest\n\ndef test_plain():\n    pytest.skip('tmux missing')\n")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*this skip names no category: tmux missing"])


def test_under_ci_a_module_skipped_at_import_fails(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    source = "from skips_support import need_module\nnothing = need_module('no_such_module_here')\n\ndef test_x():\n" \
             "    pass\n"
    local = run(pytester, monkeypatch, None, source)
    local.assert_outcomes(skipped=1)
    ci = run(pytester, monkeypatch, "true", source)
    assert ci.ret != 0
    ci.stdout.fnmatch_lines(["*CI=true and a component the suite installs is missing: no_such_module_here"])


@pytest.mark.slow
@pytest.mark.parametrize("ci", [None, "true"])
def test_a_machine_without_tmux_fails_ci_naming_it(tmp_path: Path, ci: str | None) -> None:
    """The real tmux test on a PATH where tmux is not (as after `apt-get remove tmux`)."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = str(tmp_path)  # an empty folder: no tmux, nor anything else
    if ci:
        env["CI"] = ci
    target = "tests/tui/test_escape.py::test_a_real_terminal_keeps_its_title_and_screen"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", target], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    if ci:
        assert proc.returncode == 1, proc.stdout[-2000:]
        assert "CI=true and a component the suite installs is missing: tmux" in proc.stdout
        assert "1 error" in proc.stdout
    else:
        assert proc.returncode == 0, proc.stdout[-2000:]
        line = next(x for x in proc.stdout.splitlines() if x.startswith("SKIPPED [1] tests/tui/test_escape.py:"))
        assert line.endswith(": missing component: tmux — apt-get install tmux (.ci/install-system.sh)")
        assert "1 skipped" in proc.stdout


@pytest.mark.slow
def test_tests_that_start_grpc_run_after_every_other_test() -> None:
    """tests/conftest.py orders them last: a fork beside gRPC's threads (DataLoader workers, preexec_fn) can abort."""

    def collected(*args: str) -> list[str]:
        out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *args],
                             cwd=REPO, capture_output=True, text=True, timeout=300)
        return [line for line in out.stdout.splitlines() if "::" in line]

    order, grpc = collected(), collected("-m", "grpc")
    assert len(grpc) >= 10 and set(grpc) <= set(order)
    assert order[-len(grpc):] == grpc
