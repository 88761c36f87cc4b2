"""Spark source: task durations from event logs and the REST API."""
