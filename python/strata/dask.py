# SPDX-License-Identifier: MIT
"""dask.distributed moves arrays of strata segments by handle within a node
and as data across nodes (docs/python.md, "dask across nodes").

Importing this module (in every process: `dask worker --preload strata.dask`,
or `client.register_plugin(strata.dask.Plugin())`) replaces distributed's
serializer of numpy arrays with one that looks at each array and at the
connection it is about to cross:

- an array that lives in a strata segment (strata.shared_origin: what
  Segment.vector/find/make/load returned, or a numpy view of it) sent to a
  process on the same node goes as its handle, its dtype, shape, strides and
  offset: the recipient loads the same pages (no copy, its writes are seen
  by everyone who maps the segment);
- any other array, or any array sent to another node, goes as data through
  distributed's own numpy serializer: the recipient gets its own copy.

"The same node" is one machine (its boot id) and one network namespace:
every process that imports this module says its node in distributed's
connection handshake, and a handle goes only to a recipient that said the same
node. A process that did not import it (the scheduler, which relays results to
clients without deserializing them) gets data, so a relayed result never
reaches another node as a handle; a handle that does arrive on another node
anyway (a scheduler given the preload) raises instead of loading. Being able
to open the segment file is not the test: nodes emulated by network
namespaces share /dev/shm, and must still get the bytes.
"""

from __future__ import annotations

import os

import numpy as np
from distributed.comm.core import Comm
from distributed.diagnostics.plugin import WorkerPlugin
from distributed.protocol import dask_deserialize, dask_serialize

# Imported before registering: its own registration for np.ndarray runs on
# import and must not replace ours later; ours falls back to it.
from distributed.protocol import numpy as _numpy_serializers

import strata

__all__ = ["Plugin", "same_node", "transfers"]

_transfers = {"handle": 0, "data": 0, "handle_bytes": 0, "data_bytes": 0}


def transfers() -> dict[str, int]:
    """What this process sent so far: arrays by handle and as data, and their bytes."""
    return dict(_transfers)


def _this_node() -> str:
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    return f"{boot}:net{os.stat('/proc/self/ns/net').st_ino}"


NODE = _this_node()
_KEY = "strata-node"
_handshake_info = Comm.handshake_info


def _handshake_with_node(self: Comm) -> dict:
    return {**_handshake_info(self), _KEY: NODE}


# distributed has no hook to add to the handshake: each end of a connection
# learns the other's node from the handshake both ends already exchange.
Comm.handshake_info = _handshake_with_node


def same_node(context: dict | None) -> bool:
    """Whether distributed's serialization `context` joins two processes of
    this node that both loaded strata.dask."""
    try:
        return context["sender"][_KEY] == context["recipient"][_KEY] == NODE
    except (KeyError, TypeError):
        return False  # an end that did not say its node: data is always right


@dask_serialize.register(np.ndarray)
def _serialize(x: np.ndarray, context: dict | None = None):
    origin = strata.shared_origin(x)
    if origin is None or not same_node(context):
        _transfers["data"] += 1
        _transfers["data_bytes"] += x.nbytes
        return _numpy_serializers.serialize_numpy_ndarray(x, context=context)
    name, directory, handle, read_only, whole = origin
    _transfers["handle"] += 1
    _transfers["handle_bytes"] += x.nbytes
    start = whole.__array_interface__["data"][0]
    header = {
        "strata": {
            "node": NODE,
            "segment": name,
            "dir": directory,
            "handle": [handle.segment, handle.generation, handle.offset, handle.type],
            "read_only": read_only,
            "dtype": x.dtype.str,
            "shape": list(x.shape),
            "strides": list(x.strides),
            "offset": x.__array_interface__["data"][0] - start,
        }
    }
    return header, []


@dask_deserialize.register(np.ndarray)
def _deserialize(header: dict, frames: list):
    ref = header.get("strata")
    if ref is None:
        return _numpy_serializers.deserialize_numpy_ndarray(header, frames)
    if ref["node"] != NODE:
        raise ValueError(
            f"array by handle from node {ref['node']} reached node {NODE} (relayed by a process that "
            "loaded strata.dask without deserializing, e.g. a scheduler given the preload): load it "
            "in workers and clients only"
        )
    handle = strata.Handle()
    handle.segment, handle.generation, handle.offset, handle.type = ref["handle"]
    mode = "read_only" if ref["read_only"] else "open_only"
    whole = strata.Segment(ref["segment"], mode, dir=ref["dir"]).load(handle)
    return np.ndarray(
        tuple(ref["shape"]),
        np.dtype(ref["dtype"]),
        buffer=whole,
        offset=ref["offset"],
        strides=tuple(ref["strides"]),
    )


class Plugin(WorkerPlugin):
    """Installs the serializer on every worker of a cluster, present and future
    (unpickling the plugin imports this module):
    `client.register_plugin(strata.dask.Plugin())`."""

    name = "strata.dask"

    def setup(self, worker) -> None:
        """Nothing more to do: the import registered the serializer."""
