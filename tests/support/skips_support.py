"""Skips that say why, and the CI guard that lets only the legitimate ones through.

Every skip in the suite goes through these helpers, so its reason starts with a category:
`missing component: tmux — apt-get install tmux (.ci/install-system.sh)`. A *missing component* is one that
`.ci/install-system.sh` or `pip install -e '.[dev]'` installs (a binary, a Python package, PyLatencyMap, a block
device); the other categories are things no install can change on a machine (`not root`, `no BTF`, `no GPU`,
`not Linux`).

This module is also a pytest plugin (tests/conftest.py loads it). With `CI=true` in the environment, a skip of a
missing component, or a skip that names no category, is turned into a failure naming what is missing; locally a
skip stays a skip. The terminal summary counts the skips by category either way.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
from collections import Counter
from types import ModuleType
from typing import Any, NoReturn

import pytest

MISSING = "missing component"
NOT_ROOT = "not root"
NO_BTF = "no BTF"
NO_GPU = "no GPU"
NOT_LINUX = "not Linux"
#: Skips CI accepts: nothing an install script could fix.
ALLOWED_IN_CI = (NOT_ROOT, NO_BTF, NO_GPU, NOT_LINUX)
CATEGORIES = (MISSING, *ALLOWED_IN_CI)
UNCATEGORISED = "uncategorised"
SEPARATOR = " — "
DEV = "pip install -e '.[dev]'"
SYSTEM = ".ci/install-system.sh (as root)"


def reason(category: str, subject: str, detail: str) -> str:
    """`category: subject — detail`, the form every skip reason of the suite takes."""
    assert category in CATEGORIES, category
    assert SEPARATOR not in subject, subject
    return f"{category}: {subject}{SEPARATOR}{detail}"


def classify(text: str) -> tuple[str, str]:
    """(category, subject) of a skip reason; (UNCATEGORISED, the reason) for one not made by `reason`."""
    text = text.removeprefix("Skipped: ")
    for category in CATEGORIES:
        prefix = category + ": "
        if text.startswith(prefix):
            return category, text[len(prefix):].split(SEPARATOR, 1)[0]
    return UNCATEGORISED, text


def skip_missing(component: str, remedy: str) -> NoReturn:
    """Skip now (a test, or a whole module at import): `component` is not installed here (`remedy` installs it)."""
    __tracebackhide__ = True
    pytest.skip(reason(MISSING, component, remedy), allow_module_level=True)


def skip_because(category: str, subject: str, detail: str) -> NoReturn:
    """Skip now for a reason no install can change (`not root`, `no BTF`, `no GPU`, `not Linux`)."""
    __tracebackhide__ = True
    assert category in ALLOWED_IN_CI, category
    pytest.skip(reason(category, subject, detail), allow_module_level=True)


def find_binary(*names: str) -> str | None:
    """The first of `names` on PATH, or None."""
    return next((path for path in map(shutil.which, names) if path), None)


def need_binary(*names: str, remedy: str) -> str:
    """The path of the first of `names` on PATH; skips (missing component `names[0]`) when none is."""
    __tracebackhide__ = True
    path = find_binary(*names)
    if path is None:
        skip_missing(names[0], remedy)
    return path


def has_module(name: str) -> bool:
    """True when `name` can be imported (its top package is found without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def need_module(name: str, remedy: str = DEV) -> ModuleType:
    """`import name`, or skip (missing component `name`); replaces `pytest.importorskip`."""
    __tracebackhide__ = True
    try:
        return importlib.import_module(name)
    except ImportError as err:
        skip_missing(name.split(".")[0], f"{remedy} ({err})")


def requires(missing: bool, component: str, remedy: str) -> pytest.MarkDecorator:
    """A mark skipping the test (missing component `component`) when `missing` is true."""
    return pytest.mark.skipif(missing, reason=reason(MISSING, component, remedy))


def requires_binary(*names: str, remedy: str) -> pytest.MarkDecorator:
    """A mark skipping the test when none of `names` is on PATH."""
    return requires(find_binary(*names) is None, names[0], remedy)


def requires_module(name: str, remedy: str = DEV) -> pytest.MarkDecorator:
    """A mark skipping the test when the Python module `name` cannot be imported."""
    return requires(not has_module(name), name.split(".")[0], remedy)


def requires_root() -> pytest.MarkDecorator:
    """A mark skipping the test when not run as root."""
    return pytest.mark.skipif(os.geteuid() != 0, reason=reason(NOT_ROOT, "root", "the test needs uid 0"))


# The plugin.

def ci_enabled() -> bool:
    """True when the environment says this is CI (`CI=true`, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _skip_text(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _guard(report: Any) -> None:
    """Turn a skip CI must not accept into a failure that names the missing component."""
    if not report.skipped or hasattr(report, "wasxfail") or not ci_enabled():
        return
    text = _skip_text(report).removeprefix("Skipped: ")
    category, subject = classify(text)
    if category in ALLOWED_IN_CI:
        return
    report.outcome = "failed"
    report.ci_guard = (category, subject)
    if category == MISSING:
        report.longrepr = (f"CI=true and a component the suite installs is missing: {subject}\n  skip reason: {text}\n"
                           f"  install it with {SYSTEM} and {DEV}")
    else:
        report.longrepr = (f"CI=true and this skip names no category: {text}\n  skip through tests/support/"
                           "skips_support.py so that CI can tell a missing component from a machine limit")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    _guard(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    outcome = yield
    _guard(outcome.get_result())


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Skips by category (and the ones CI turned into failures), always printed."""
    kept: Counter[str] = Counter()
    subjects: dict[str, Counter[str]] = {}
    failed: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        category, subject = classify(_skip_text(report))
        kept[category] += 1
        subjects.setdefault(category, Counter())[subject] += 1
    for key in ("failed", "error"):
        for report in terminalreporter.stats.get(key, []):
            guarded = getattr(report, "ci_guard", None)
            if guarded:
                failed[f"{guarded[0]}: {guarded[1]}"] += 1
    terminalreporter.section("skips by category")
    for category in (*CATEGORIES, UNCATEGORISED):
        names = ", ".join(f"{s} ×{n}" for s, n in sorted(subjects.get(category, Counter()).items()))
        allowed = "allowed in CI" if category in ALLOWED_IN_CI else "fails under CI=true"
        terminalreporter.write_line(f"{kept[category]:4d} {category} ({allowed}){': ' + names if names else ''}")
    if failed:
        terminalreporter.write_line(f"CI guard: skips turned into failures: {sum(failed.values())} ("
                                    + ", ".join(f"{k} ×{n}" for k, n in sorted(failed.items())) + ")", red=True)
    elif ci_enabled():
        terminalreporter.write_line("CI guard: on (CI=true); no skip of a missing component", green=True)
