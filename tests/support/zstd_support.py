"""The layout of zstd data as a recording writes it: where its blocks and frames end, and each block decoded."""

from __future__ import annotations

import zstandard

from latencymap.flow.zstd_frames import ZstdFrames


def layout(data: bytes) -> tuple[list[int], list[int]]:
    """Where each block (the last of a frame with its checksum) and each frame of `data` end."""
    cuts: list[int] = []
    ends: list[int] = []
    ZstdFrames(0, cuts, ends).feed(data)
    return [c for c in cuts if c <= len(data)], [e for e in ends if e <= len(data)]


def blocks(data: bytes) -> list[tuple[int, int, bytes]]:
    """(start, end, decoded text) of each whole block of `data`, decoded a frame at a time, block by block (a frame's
    first block starts at its magic number)."""
    out, start, dobj = [], 0, None
    for cut in layout(data)[0]:
        dobj = dobj or zstandard.ZstdDecompressor().decompressobj()
        out.append((start, cut, dobj.decompress(data[start:cut])))
        start = cut
        if dobj.eof:
            dobj = None
    return out
