# SPDX-License-Identifier: MIT
"""An external task that reads a data block by its handle ([handle:K]) with
strata, touching every page once, and reports on one JSON line how this
process's resident memory grew meanwhile: anonymous memory (where a copy of
the block would land) and shared memory (the block's own pages, mapped from
its segment). Usage: read_block_by_handle.py HANDLE_TEXT"""

import json
import sys

import numpy as np
import strata


def resident() -> dict[str, int]:
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssShmem"):
                found[key] = int(value.split()[0]) * 1024
    return found


before = resident()
block = strata.open_handle(sys.argv[1])
checksum = int(block.view(np.uint64).sum(dtype=np.uint64))
after = resident()
try:
    block[0] = 0
    refused = False
except ValueError:
    refused = True
print(
    json.dumps(
        {
            "size": int(block.size),
            "dtype": block.dtype.name,
            "checksum": checksum,
            "write_refused": refused,
            "anon_growth": after["RssAnon"] - before["RssAnon"],
            "shmem_growth": after["RssShmem"] - before["RssShmem"],
        }
    )
)
