from __future__ import annotations

import re
from pathlib import Path

import pytest
from skips_support import need_binary

from latencymap.sources.bcc_tools import clearing_tool

#: Each tool's banner as its source prints it (bcc 0.26: `print("..." % args)`), the arguments, and the tool it names.
BANNERS = [
    ("biolatency", "Tracing block device I/O... Hit Ctrl-C to end.", ()),
    ("runqlat", "Tracing run queue latency... Hit Ctrl-C to end.", ()),
    ("funclatency", 'Tracing %d functions for \\"%s\\"... Hit Ctrl-C to end.', (1, "c:clock_nanosleep")),
    ("funcinterval", 'Tracing %s for \\"%s\\"... Hit Ctrl-C to end.', ("uprobe function", "c:malloc")),
    ("cpudist", "Tracing %s-CPU time... Hit Ctrl-C to end.", ("off",)),
    ("ext4dist", "Tracing ext4 operation latency... Hit Ctrl-C to end.", ()),
    ("btrfsdist", "Tracing btrfs operation latency... Hit Ctrl-C to end.", ()),
    ("xfsdist", "Tracing XFS operation latency... Hit Ctrl-C to end.", ()),
    ("zfsdist", "Tracing ZFS operation latency... Hit Ctrl-C to end.", ()),
    ("nfsdist", "Tracing NFS operation latency... Hit Ctrl-C to end.", ()),
    ("hardirqs", "Tracing hard irq event time... Hit Ctrl-C to end.", ()),
    ("softirqs", "Tracing soft irq event time... Hit Ctrl-C to end.", ()),
    ("tcprtt", "Tracing TCP RTT... Hit Ctrl-C to end.", ()),
    ("tcpcong", "Tracing tcp congestion control status duration... Hit Ctrl-C to end.", ()),
    ("dbstat", "Tracing database queries for pids %s slower than %d ms...", ("1234, 5678", 0)),
]


def printed(fmt: str, args: tuple[object, ...]) -> str:
    """The line a banner's format string prints."""
    return fmt.replace('\\"', '"') % args if args else fmt


@pytest.mark.parametrize(("tool", "fmt", "args"), BANNERS)
def test_each_clearing_tool_is_told_by_its_banner(tool: str, fmt: str, args: tuple[object, ...]) -> None:
    assert clearing_tool(printed(fmt, args)) == tool


@pytest.mark.parametrize("line", [
    "Tracing... Hit Ctrl-C to end.",  # readahead, and bcc's examples (bitehist never clears: one print at exit)
    "Tracing vfs_read.  Hit Ctrl-C to exit",  # libbpf-tools funclatency: some builds never clear its table
    "Tracing block I/O... Hit Ctrl-C to end.",  # bitesize: one print, at exit, of sizes
    "Tracing SYN backlog size. Ctrl-C to end.",  # tcpsynbl: the same
    "Tracing hard irq events... Hit Ctrl-C to end.",  # hardirqs -C: counts, no histogram
    "[18:04:54]",  # argdist prints no banner: its time lines, then its histograms (kept with -c)
    "  Tracing block device I/O... Hit Ctrl-C to end. and more",
])
def test_other_lines_name_no_clearing_tool(line: str) -> None:
    assert clearing_tool(line) is None


def clears_after_printing(source: str) -> bool:
    """Whether a `clear()` follows a tool's last print_log2_hist in a block that holds that print (run whenever it
    prints, not under a condition of its own)."""
    lines = source.splitlines()
    at = max(k for k, line in enumerate(lines) if "print_log2_hist(" in line)

    def indent(k: int) -> int:
        return len(lines[k]) - len(lines[k].lstrip())

    def header(j: int) -> int:
        """The line that opens the block holding line `j`."""
        return next(k for k in range(j - 1, -1, -1) if lines[k].strip() and indent(k) < indent(j))
    return any(header(j) < at for j in range(at + 1, len(lines))
               if re.fullmatch(r"\s*\w+(?:\[\"\w+\"\])?\.clear\(\)\s*", lines[j]))


def installed_source(tool: str) -> str:
    """The source of bcc's `tool` as Debian's bpfcc-tools installs it."""
    return Path(need_binary(f"{tool}-bpfcc", remedy="apt-get install bpfcc-tools (.ci/install-system.sh)")).read_text()


@pytest.mark.parametrize(("tool", "fmt", "args"), BANNERS)
def test_the_installed_tool_prints_that_banner_and_clears_after_printing(tool: str, fmt: str,
                                                                         args: tuple[object, ...]) -> None:
    """The truth, from the tool's own source (bcc 0.26): it prints that banner, and clears its table after printing."""
    source = installed_source(tool)
    assert f'print("{fmt}"' in source
    assert clears_after_printing(source)


def test_argdist_keeps_its_maps_with_c_and_prints_no_banner() -> None:
    """Why argdist is left to detection: its clear() is skipped by -c, and no line of its output says -c."""
    source = installed_source("argdist")
    assert not clears_after_printing(source) and "if not self.cumulative:\n" in source
    assert 'print("Tracing' not in source
