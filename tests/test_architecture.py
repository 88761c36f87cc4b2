"""The package's layers: no import cycles, UI and CLI libraries where they belong, light imports stay light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TREES = {"latencymap": ROOT / "latencymap", "latencymap.sources": ROOT / "sources"}
TUI_LIBRARIES = ("textual", "rich", "plotext", "textual_plotext")


def module_files() -> dict[str, Path]:
    """Every module of latencymap and latencymap.sources (mapped from sources/), by dotted name."""
    modules: dict[str, Path] = {}
    for package, tree in TREES.items():
        for path in tree.rglob("*.py"):
            parts = list(path.relative_to(tree).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Modules `name` imports anywhere in its file (functions included), except under `if TYPE_CHECKING:`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", 0) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in modules else base)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: {m for m in imports_of(name, path, modules) if m in modules and m != name}
            for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_latencymap_sources_links_to_the_sources_folder() -> None:
    link = ROOT / "latencymap" / "sources"
    assert link.is_symlink() and link.resolve() == (ROOT / "sources").resolve()


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles_counting_imports_inside_functions() -> None:
    graph = import_graph()
    assert len(graph) > 100
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def _importers_of(libraries: tuple[str, ...]) -> set[str]:
    modules = module_files()
    return {name for name, path in modules.items()
            if any(m == lib or m.startswith(lib + ".") for m in imports_of(name, path, modules) for lib in libraries)}


def test_terminal_ui_libraries_only_in_the_tui() -> None:
    outside = {m for m in _importers_of(TUI_LIBRARIES) if not m.startswith("latencymap.tui")}
    assert not outside


def test_click_only_in_the_cli_and_sources() -> None:
    importers = _importers_of(("click",))
    outside = {m for m in importers if not m.startswith(("latencymap.cli", "latencymap.sources"))}
    assert not outside
    assert "latencymap.cli.main" in importers


def _loaded_modules(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, cwd=ROOT.parent)
    return set(out.stdout.split())


def test_instrument_loads_no_ui_or_cli_library() -> None:
    loaded = _loaded_modules("import latencymap.instrument")
    assert "latencymap.instrument" in loaded
    assert not {"textual", "click", "plotext", "rich"} & loaded


def test_report_loads_no_textual() -> None:
    fixture = ROOT / "fixtures" / "pylatencymap" / "example_latency_data.txt"
    code = ("from latencymap.cli.main import main\n"
            "import contextlib, io\n"
            f"with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            f"    main(['report', {str(fixture)!r}])")
    loaded = _loaded_modules(code)
    assert "latencymap.outputs.report" in loaded
    assert not {"textual", "plotext"} & loaded


@pytest.mark.slow
def test_import_linter_contracts_hold() -> None:
    result = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
    assert result.stdout.count(" KEPT") >= 3
