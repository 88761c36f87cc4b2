"""Report every fixture (JSON, text, OpenMetrics; also re-read from a recording) into a folder, or compare two folders.

    python bench/report_fixtures.py save DIR [--chunk N]   # one file per (fixture, format)
    python bench/report_fixtures.py compare BEFORE AFTER    # byte-identical, or the differences

`--chunk N` seals history chunks every N columns (default: the accumulator's own), so that small fixtures go
through the compressed cold-chunk path too. Inputs whose times come from the wall clock (bcc prints without time
lines) are compared with their `start`/`end` (and the episodes' times) left out.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SKIP_SUFFIXES = {".md", ".py", ".crc", ".json.meta", ".payloads", ".java", ".sh"}
#: Fixtures read through a source subcommand rather than as an input file.
SOURCES = {"spark/zstd": ["spark"], "spark/plain": ["spark"], "spark/rolling": ["spark"]}
#: Inputs timed by the clock when read (no time lines; a percentile printout): their start/end differ from run to run.
WALL_CLOCK = re.compile(r"bcc/biolatency_(usecs|msecs|usecs_D)\.txt|bcc/biolatency_usecs_j\.txt|.*\.hgrm")
FORMATS = ("json", "text", "openmetrics")


def inputs() -> list[tuple[str, list[str]]]:
    """(name, report arguments) for every fixture that is an input."""
    out: list[tuple[str, list[str]]] = [(name, [*cmd, str(FIXTURES / name)]) for name, cmd in SOURCES.items()]
    for path in sorted(FIXTURES.rglob("*")):
        rel = path.relative_to(FIXTURES).as_posix()
        if (not path.is_file() or path.suffix in SKIP_SUFFIXES or rel.startswith(("spark/", "profile/", "training/"))
                or path.name in ("NOTICE",) or rel.endswith((".bt", ".reference.json"))):
            continue
        out.append((rel, [str(path)]))
    return out


def run(args: list[str]) -> tuple[int, str]:
    """`latencymap ARGS` in this process: (exit code, stdout)."""
    from latencymap.cli.main import main

    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.stdout


def record(args: list[str], path: Path) -> bool:
    """Record an input with `--record` (a separate process) to `path`; False when it cannot."""
    cmd = [*args[:1], "--plain", "--once", "--record", str(path), *args[1:]] if args[0] in ("spark",) else \
        ["--plain", "--once", "--record", str(path), *args]
    done = subprocess.run([sys.executable, "-m", "latencymap", *cmd], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False)
    return done.returncode == 0 and path.exists()


def save(folder: Path, chunk: int | None) -> None:
    """Every fixture's reports into `folder`."""
    if chunk is not None:
        from latencymap.core import accumulator

        setter = getattr(accumulator, "set_chunk_columns", None)
        if setter is None:
            sys.exit("this tree has no chunked history (--chunk)")
        setter(chunk)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in inputs():
            key = name.replace("/", "__")
            rec = Path(tmp) / f"{key}.rec"
            variants = [("", args)]
            if record(args, rec):
                variants.append(("rec.", [str(rec)]))
            for prefix, vargs in variants:
                for fmt in FORMATS:
                    code, out = run(["report", "--format", fmt, *vargs])
                    out = out.replace(tmp, "RECORDINGS")  # a recording's notes name it: the same in every save
                    (folder / f"{prefix}{key}.{fmt}").write_text(f"exit {code}\n{out}")
            print(f"{name}: {len(variants)} input(s)", file=sys.stderr)


def _strip_clock(doc: Any) -> Any:
    """A report with the wall-clock times left out."""
    if isinstance(doc, dict):
        return {k: _strip_clock(v) for k, v in doc.items() if k not in ("start", "end")}
    if isinstance(doc, list):
        return [_strip_clock(v) for v in doc]
    return doc


def _paths(a: Any, b: Any, at: str = "") -> list[str]:
    """Where two JSON documents differ (key paths)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(set(a) | set(b)) for p in _paths(a.get(k), b.get(k), f"{at}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        found = [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in _paths(x, y, f"{at}[{i}]")]
        return sorted({re.sub(r"\[\d+\]", "[]", p) for p in found})
    return [] if a == b else [at or "."]


def compare(before: Path, after: Path) -> int:
    """0 when every file is the same (modulo wall-clock times where they apply); prints what differs."""
    names = sorted({p.name for p in before.iterdir()} | {p.name for p in after.iterdir()})
    bad = same = loose = 0
    for name in names:
        a, b = before / name, after / name
        if not (a.exists() and b.exists()):
            print(f"only in {'after' if b.exists() else 'before'}: {name}")
            bad += 1
            continue
        ta, tb = a.read_text(), b.read_text()
        if ta == tb:
            same += 1
            continue
        fixture = name.removeprefix("rec.").rsplit(".", 1)[0].replace("__", "/")
        if WALL_CLOCK.fullmatch(fixture) and name.endswith(".json"):
            ja, jb = (json.loads(t.split("\n", 1)[1]) for t in (ta, tb))
            if _strip_clock(ja) == _strip_clock(jb):
                loose += 1
                continue
        if WALL_CLOCK.fullmatch(fixture) and not name.endswith(".json"):
            strip = re.compile(r"over [0-9.]+s|\(t\+[^)]*\)|end_timestamp_seconds\{[^}]*\} \S+")
            if strip.sub("", ta) == strip.sub("", tb):
                loose += 1
                continue
        bad += 1
        if name.endswith(".json") and ta.startswith("exit 0") and tb.startswith("exit 0"):
            ja, jb = (json.loads(t.split("\n", 1)[1]) for t in (ta, tb))
            print(f"DIFFERS: {name}: {', '.join(_paths(ja, jb))}")
        else:
            lines = [line for line in tb.splitlines() if line not in ta.splitlines()]
            print(f"DIFFERS: {name}: {len(lines)} new line(s), e.g. {lines[:1]}")
    print(f"{same} identical, {loose} identical but for wall-clock times, {bad} different, of {len(names)}")
    return 1 if bad else 0


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("save")
    s.add_argument("folder", type=Path)
    s.add_argument("--chunk", type=int, default=None)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    ns = ap.parse_args()
    if ns.cmd == "save":
        save(ns.folder, ns.chunk)
    else:
        sys.exit(compare(ns.before, ns.after))


if __name__ == "__main__":
    main()
