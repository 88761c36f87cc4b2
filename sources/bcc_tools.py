"""Which bcc tool printed an input, told by its banner, when that tool is known to clear its map after each print.

bcc's tools print a banner once attached, then each interval `print_log2_hist` and `clear()` (bcc 0.26, read in their
source): biolatency, runqlat, funclatency, funcinterval, cpudist, ext4dist, btrfsdist, xfsdist, zfsdist, nfsdist,
hardirqs and softirqs (their `-d` histograms), tcprtt, tcpcong (`-d`) and dbstat. Their prints are per-interval:
counts that grow for many prints are their load rising, never a cumulative map. libbpf-tools' biolatency, runqlat,
cpudist, hardirqs and the fsdist tools print the same banners and clear their maps too.

Left to detection (`print_modes`), as their output cannot tell: argdist (no banner; `-c` keeps its maps, printed the
same), readahead (`Tracing... Hit Ctrl-C to end.`, the banner of bcc's examples and of scripts copied from them, some
never cleared), libbpf-tools' funclatency (`Tracing vfs_read.  Hit Ctrl-C to exit`: some builds never clear its
table), biolatency `-j` (no banner; other scripts call `print_json_hist` too); bitesize and tcpsynbl print once, at
exit (one print is per-interval anyway), and of sizes.
"""

from __future__ import annotations

import re

_END = r"\.\.\. Hit Ctrl-C to end\."
#: Each tool known to clear and its banner (a whole line); the file-system tools' name is taken from the line.
_CLEARING: tuple[tuple[str, re.Pattern[str]], ...] = tuple((tool, re.compile(pattern)) for tool, pattern in (
    ("biolatency", rf"Tracing block device I/O{_END}"),
    ("runqlat", rf"Tracing run queue latency{_END}"),
    ("funclatency", rf'Tracing \d+ functions? for ".*"{_END}'),
    ("funcinterval", rf'Tracing (?:kprobe function|uprobe function|tracepoint) for ".*"{_END}'),
    ("cpudist", rf"Tracing (?:on|off)-CPU time{_END}"),
    ("{}dist", rf"Tracing (ext4|btrfs|XFS|xfs|ZFS|zfs|NFS|nfs) operation latency{_END}"),
    ("hardirqs", rf"Tracing hard irq event time{_END}"),
    ("softirqs", rf"Tracing soft irq event time{_END}"),
    ("tcprtt", rf"Tracing TCP RTT{_END}"),
    ("tcpcong", rf"Tracing tcp congestion control status duration{_END}"),
    ("dbstat", r"Tracing database queries for pids .* slower than \d+ ms\.\.\."),
))


def clearing_tool(line: str) -> str | None:
    """The bcc tool whose banner `line` (stripped) is, when that tool clears its map after each print; else None."""
    for tool, banner in _CLEARING:
        match = banner.fullmatch(line)
        if match is not None:
            return tool.format(*(name.lower() for name in match.groups()))
    return None
