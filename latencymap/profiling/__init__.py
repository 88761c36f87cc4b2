"""Profiling: py-spy samples of a target's Python stacks, attached to heat-map columns by time."""
