"""`python -m latencymap`."""

from __future__ import annotations

from latencymap.cli.launch import main

if __name__ == "__main__":
    main()
