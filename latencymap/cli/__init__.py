"""The `latencymap` command line: the group (`main`), shared options and runners, one module per command.

Kept empty so that `latencymap.cli.launch` can set process-wide settings before anything heavy is imported.
"""
