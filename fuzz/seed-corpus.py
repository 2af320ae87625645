#!/usr/bin/env python3
"""Seed corpora for the fuzz targets from the test fixtures.

corpus/blob: every blob of every fixture keybox.
corpus/scan: keyboxes made of a fixture's first blobs, and of its header
with each single blob, up to 64 KiB each.
corpus/keyboxd_db: the databases a real keyboxd made from the fixtures.
"""
import glob
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))
os.makedirs(os.path.join(here, "corpus/blob"), exist_ok=True)
os.makedirs(os.path.join(here, "corpus/scan"), exist_ok=True)
os.makedirs(os.path.join(here, "corpus/keyboxd_db"), exist_ok=True)
for path in glob.glob(os.path.join(here, "../tests/fixtures/keyboxd/*.db")):
    name = os.path.basename(path)
    open(os.path.join(here, f"corpus/keyboxd_db/{name}"), "wb").write(open(path, "rb").read())
for path in glob.glob(os.path.join(here, "../tests/fixtures/*.kbx")):
    name = os.path.basename(path)
    data = open(path, "rb").read()
    blobs, off = [], 0
    while off + 4 <= len(data):
        (length,) = struct.unpack(">I", data[off:off + 4])
        if length < 5 or off + length > len(data):
            break
        blobs.append(data[off:off + length])
        off += length
    for i, blob in enumerate(blobs):
        open(os.path.join(here, f"corpus/blob/{name}-{i}"), "wb").write(blob)
    for k in range(1, len(blobs)):
        joined = b"".join(blobs[:k + 1])
        if len(joined) > 65536:
            break
        open(os.path.join(here, f"corpus/scan/{name}-{k}"), "wb").write(joined)
    for i, blob in enumerate(blobs[1:], 1):
        if len(blobs[0]) + len(blob) <= 65536:
            open(os.path.join(here, f"corpus/scan/{name}-h{i}"), "wb").write(blobs[0] + blob)
