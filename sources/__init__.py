"""Sources and text formats shipped with latencymap (installed as `latencymap.sources`)."""
