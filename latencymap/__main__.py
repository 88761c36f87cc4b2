"""`python -m latencymap`."""

from __future__ import annotations

from latencymap.cli import main

if __name__ == "__main__":
    main()
