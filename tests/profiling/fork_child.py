"""A profiling target that forks, as a torch DataLoader does on Linux: children keep the parent's thread ids.

Usage: python fork_child.py; the first child loops in `leaf_a()` (sleeping), the second in `leaf_b()`
(busy), the parent in `parent_work()`. Prints `ready <child a> <child b>` once both run;
each child exits when its parent is gone.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def leaf_a() -> None:
    """Sleep a little (an idle worker)."""
    time.sleep(0.003)


def leaf_b() -> None:
    """Compute a little (a busy worker)."""
    sum(range(20000))


def child_work(leaf: Callable[[], None], parent: int) -> None:
    """Call `leaf` until the parent is gone."""
    while os.getppid() == parent:
        leaf()


def parent_work() -> None:
    """Alternate short sleeps and sums, forever."""
    while True:
        time.sleep(0.002)
        sum(range(10000))


def main() -> None:
    parent = os.getpid()
    children = []
    for leaf in (leaf_a, leaf_b):
        pid = os.fork()
        if pid == 0:
            child_work(leaf, parent)
            os._exit(0)
        children.append(pid)
    print("ready", *children, flush=True)
    parent_work()


if __name__ == "__main__":
    main()
