# SPDX-License-Identifier: MIT
"""strata from Python: shared segments, zero-copy numpy vectors, handles and ports.

    import numpy as np, strata
    seg = strata.Segment("run42", size=1 << 30)           # open or create
    a = seg.vector("field", np.float64, 1_000_000)         # a numpy view of a strata::vector<double>
    a[:] = 1.0
    h = seg.save(a)                                         # picklable strata.Handle
    b = strata.Segment("run42").load(h)                     # same pages, another process too

See docs/python.md.
"""

from __future__ import annotations

import os
import pickle
import re
import weakref

import numpy as np

from . import bench  # benchmark results (strata.bench, pure Python)
from ._strata import Error, Handle, Message, _Port, _Region, _Segment

__all__ = [
    "Error", "Handle", "Segment", "Port", "Message", "Region", "DTYPES", "bench", "open_handle", "shared_origin",
]  # fmt: skip

DTYPES = ("float64", "float32", "int64", "int32", "uint8")


# The arrays of segments this process holds (what vector(), find(), make() and
# load() returned), by id: (segment name, segment directory, handle, read_only).
# strata.dask sends these by handle to workers on this node; an entry goes
# when its array is collected, before its id can be reused.
_shared: dict[int, tuple[str, str, Handle, bool]] = {}


def _share(seg: _Segment, array: np.ndarray) -> np.ndarray:
    key = id(array)
    handle = seg._save(array.__array_interface__["data"][0])
    _shared[key] = (seg.name, os.path.dirname(seg.path), handle, not array.flags.writeable)
    weakref.finalize(array, _shared.pop, key, None)
    return array


def shared_origin(array) -> tuple[str, str, Handle, bool, np.ndarray] | None:
    """Where `array` lives when it is a view of a segment vector this process
    opened (vector(), find(), make(), load(), or any numpy view of one):
    (segment name, segment directory, handle of the vector, read_only, the
    vector's whole array); None for any other array.

    >>> import os, numpy as np, strata
    >>> seg = strata.Segment(f"doctest-origin-{os.getpid()}", "create_only", 1 << 20)
    >>> a = seg.vector("v", np.int32, 8)
    >>> name, _, handle, read_only, whole = strata.shared_origin(a[2:].reshape(2, 3))
    >>> name == seg.name, handle == seg.save(a), read_only, whole is a
    (True, True, False, True)
    >>> strata.shared_origin(np.zeros(3)) is None
    True
    >>> del a, whole; seg.close()
    """
    if not isinstance(array, np.ndarray):
        return None
    while isinstance(array.base, np.ndarray):
        array = array.base
    found = _shared.get(id(array))
    return None if found is None else (*found, array)


def _dtype_name(dtype) -> str:
    name = np.dtype(dtype).name
    if name not in DTYPES:
        raise ValueError(f"dtype={name}: not supported (expected one of {', '.join(DTYPES)})")
    return name


class Segment:
    """A named shared segment (strata::Segment): every process that opens the
    same name sees the same objects. mode: create_only, open_only,
    open_or_create (default), recreate, read_only (arrays are not
    writeable); size in bytes to create. dir: the segment directory (default
    $STRATA_SHM_DIR, else the private /dev/shm/strata-<uid>)."""

    def __init__(
        self,
        name: str,
        mode: str = "open_or_create",
        size: int = 0,
        *,
        dir: str = "",
        group_access: bool = False,
    ):
        self._seg = _Segment(name, mode, size, dir, group_access)

    name = property(lambda self: self._seg.name)
    size = property(lambda self: self._seg.size)
    id = property(lambda self: self._seg.id)
    path = property(lambda self: self._seg.path)
    free_bytes = property(lambda self: self._seg.free_bytes)
    is_open = property(lambda self: self._seg.is_open)

    def vector(self, name: str, dtype, size: int) -> np.ndarray:
        """Finds the vector `name` or creates it with `size` zeros; a numpy view of it (no copy)."""
        return _share(self._seg, self._seg._vector(name, _dtype_name(dtype), size, True).array())

    def find(self, name: str, dtype) -> np.ndarray:
        """The existing vector `name` (strata.Error code not_found if absent, ValueError if of another type)."""
        return _share(self._seg, self._seg._vector(name, _dtype_name(dtype), 0, False).array())

    def make(self, dtype, size: int) -> np.ndarray:
        """An unnamed vector of `size` zeros, reachable through save()/load() or a port."""
        return _share(self._seg, self._seg._make(_dtype_name(dtype), size).array())

    def save(self, array: np.ndarray) -> Handle:
        """A handle to the vector behind `array` (an array vector(), find(), make() or load() returned)."""
        if not isinstance(array, np.ndarray):
            raise TypeError(f"array: expected a numpy array, got {type(array).__name__}")
        return self._seg._save(array.__array_interface__["data"][0])

    def load(self, handle: Handle) -> np.ndarray:
        """The vector behind `handle`, checked (segment, generation, offset, type), as a numpy view."""
        return _share(self._seg, self._seg._load(handle).array())

    def _known_addresses(self) -> set[int]:
        return set(self._seg._addresses())

    def erase(self, name: str, dtype) -> None:
        """Destroys the vector `name`; arrays still viewing it must not be used afterwards."""
        self._seg._erase(name, _dtype_name(dtype))

    def port(
        self,
        name: str,
        role: str,
        *,
        slots: int | None = None,
        consumers: int | None = None,
        sync: str = "blocking",
    ) -> Port:
        """Opens (creating on first use) the port `name` as "producer" or "consumer" (see Port)."""
        return Port(self, name, role, slots=slots, consumers=consumers, sync=sync)

    def close(self) -> None:
        """Detaches (the last user removes the segment). Fails (busy) while arrays of it are
        alive. A thread that samples frames (a profiler; dask's workers run one) can keep a
        returned frame's arrays alive for a moment after `del`: in such a process, let the
        segment detach when it and its arrays are collected instead of calling close()."""
        self._seg.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self._seg.is_open:
            return
        if exc_type is None:
            self.close()
            return
        # An exception's traceback may still hold arrays of the segment: then it
        # detaches when collected, and the original exception is what the caller sees.
        try:
            self.close()
        except Error:
            pass

    def __repr__(self):
        if not self.is_open:
            return "strata.Segment(closed)"
        return f"strata.Segment(name={self.name!r}, size={self.size})"


def open_handle(text: str, *, dir: str = "") -> np.ndarray:
    """The object behind a handle in text form, as a numpy array over its
    bytes (no copy): "shm:<segment>:<id>:<generation>:<offset>:<type>:<ro|rw>",
    as an OCR program's ocrDbGetShmHandle or an external task's [handle:K]
    gives it (docs/shm.md, "Handles as text"). A "ro" handle opens the
    segment read_only: the array is not writeable. The array keeps the
    segment attached while it lives (the segment's liveness rules apply: the
    last user to detach removes it). Errors: ValueError naming the text and
    what is wrong with it; strata.Error (code not_found) when the segment is
    gone, as Segment() and Segment.load() raise them.

    >>> import os, numpy as np, strata
    >>> seg = strata.Segment(f"doctest-open-handle-{os.getpid()}", "create_only", 1 << 20)
    >>> a = seg.vector("block", np.uint8, 16); a[:] = 7
    >>> h = seg.save(a)
    >>> text = f"shm:{seg.name}:{h.segment:x}:{h.generation:x}:{h.offset:x}:{h.type:x}:ro"
    >>> b = strata.open_handle(text)
    >>> int(b.sum()), b.flags.writeable
    (112, False)
    >>> del a, b; seg.close()
    """
    fields = text.split(":") if isinstance(text, str) else []
    form = "shm:<segment>:<id>:<generation>:<offset>:<type>:<ro|rw>"
    if len(fields) != 7 or fields[0] != "shm" or not fields[1]:
        raise ValueError(f"handle={text!r}: not a handle of the form {form}")
    if fields[6] not in ("ro", "rw"):
        raise ValueError(f"handle={text!r}: the access {fields[6]!r} is neither ro nor rw")
    numbers = []
    for what, field in zip(("segment id", "generation", "offset", "type"), fields[2:6]):
        if not re.fullmatch(r"[0-9a-f]{1,16}", field):
            raise ValueError(f"handle={text!r}: the {what} {field!r} is not a hexadecimal number below 2**64")
        numbers.append(int(field, 16))
    handle = Handle()
    handle.segment, handle.generation, handle.offset, handle.type = numbers
    segment = Segment(fields[1], "open_only" if fields[6] == "rw" else "read_only", dir=dir)
    return segment.load(handle)


class Port:
    """A port of a segment (strata::Port): a ring of `slots` message slots;
    every consumer receives every message (fan-out to `consumers`), and a slot
    is reused only when each consumer released it (backpressure). Messages
    carry handles, so a vector of any size goes across in constant time.
    sync: "blocking" (futex, the default), "busy_poll" (spins; lowest
    latency) or "mpi" (waits through MPI messages; needs libstrata-mpi and
    MPI initialized). The first user sets the shape."""

    def __init__(
        self,
        segment: Segment,
        name: str,
        role: str,
        *,
        slots: int | None = None,
        consumers: int | None = None,
        sync: str = "blocking",
    ):
        self._segment = segment
        self._port = _Port(segment._seg, name, role, slots, consumers, sync)

    name = property(lambda self: self._port.name)
    role = property(lambda self: self._port.role)
    messages = property(lambda self: self._port.messages)

    def send(self, obj, timeout: float | None = None) -> None:
        """Sends `obj` by handle; waits while every slot is in use.

        - a Handle, or an array that vector(), find(), make() or load()
          returned: its handle, no copy;
        - another 1-D contiguous numpy array of a dtype in DTYPES: copied once
          into a new vector of the segment, received as an array;
        - anything else picklable (dicts, tuples, n-d arrays, ...): pickled
          into the segment, unpickled by each receiver (Message.object).

        Copied arrays and pickled objects take segment space until the
        segment is removed.

        >>> import os, numpy as np, strata
        >>> seg = strata.Segment(f"doctest-port-{os.getpid()}", "create_only", 1 << 20)
        >>> out, inp = seg.port("p", "producer"), seg.port("p", "consumer")
        >>> out.send({"step": 3, "dt": 0.5})
        >>> with inp.recv() as m:
        ...     m.object
        {'step': 3, 'dt': 0.5}
        >>> out.send(np.arange(4, dtype=np.int32))
        >>> with inp.recv() as m:
        ...     m.array.dtype.name, m.array.tolist()
        ('int32', [0, 1, 2, 3])
        >>> out.close(); inp.close(); seg.close()
        """
        # A Handle, or an array sent before, goes without a Python-level lookup.
        if not self._port.send(obj, timeout):
            self._port.send(self._handle_of(obj), timeout)

    def _handle_of(self, obj) -> Handle:
        if isinstance(obj, Handle):
            return obj
        seg = self._segment
        if isinstance(obj, np.ndarray):
            if obj.__array_interface__["data"][0] in seg._known_addresses():
                handle = seg.save(obj)
                self._port._remember(obj, handle)
                return handle
            if obj.ndim == 1 and obj.dtype.name in DTYPES and obj.flags.c_contiguous:
                copy = seg.make(obj.dtype, obj.size)
                copy[:] = obj
                return seg.save(copy)
        try:
            data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError) as e:
            raise TypeError(f"obj: a {type(obj).__name__} is neither an array nor picklable: {e}") from e
        return seg._seg._make_blob(data)

    def recv(self, timeout: float | None = None) -> Message | None:
        """The next message, waiting for it; None at the end of the stream (every producer closed)."""
        return self._port.recv(timeout)

    def close(self) -> None:
        self._port.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Region:
    """A tiered memory region (strata::Region, docs/regions.md): one
    contiguous range of bytes in memory, in a file, or split between both.
    array() is a numpy view of it (no copy); np.asarray(region) and
    memoryview(region) are too. Make one with Region.memory(),
    Region.storage() or Region.combined().

    >>> import numpy as np, os, tempfile, strata
    >>> path = os.path.join(tempfile.mkdtemp(), "data.bin")
    >>> r = strata.Region.storage(8192, path)
    >>> a = r.array(np.float64)                 # 1024 float64 over the file's pages
    >>> a[:] = 2.5
    >>> r.sync()                                # durable in the file now
    >>> np.fromfile(path, np.float64)[:3]
    array([2.5, 2.5, 2.5])
    >>> del a
    >>> r.close(unlink=True)

    Bad arguments raise ValueError naming the parameter, its value and the
    cause, and leave nothing behind:

    >>> strata.Region.storage(4096, path, offset=3)
    Traceback (most recent call last):
    ...
    ValueError: invalid_argument: Region::storage: offset=3: not a multiple of the page size 4096
    >>> os.path.exists(path)
    False
    """

    def __init__(self, region: _Region):
        self._r = region

    @classmethod
    def memory(cls, size: int) -> Region:
        """Anonymous private memory of `size` bytes, zeroed.

        >>> import strata
        >>> r = strata.Region.memory(100)
        >>> r.kind, r.size, int(r.array().sum())
        ('memory', 100, 0)
        """
        return cls(_Region.memory(size))

    @classmethod
    def storage(
        cls,
        size: int,
        path: str | os.PathLike,
        *,
        offset: int = 0,
        writeback: str = "kernel",
        read_only: bool = False,
        create_only: bool = False,
        allow_other_owner: bool = False,
    ) -> Region:
        """`size` bytes of the file (or block device) `path` from `offset` (a
        page multiple), created 0600 if absent and grown to hold the range.
        writeback: "kernel" (stores reach the page cache; sync() makes them
        durable) or "explicit_sync" (stores stay private until sync(); close(discard=True)
        drops them). A symbolic link, or a file of another user unless
        allow_other_owner, is refused."""
        return cls(
            _Region.storage(
                size, os.fspath(path), offset, writeback, read_only, create_only, allow_other_owner
            )
        )

    @classmethod
    def combined(
        cls,
        size: int,
        path: str | os.PathLike,
        *,
        factor: float | str = 0.5,
        order: str = "memory_first",
        offset: int = 0,
        writeback: str = "kernel",
        create_only: bool = False,
        allow_other_owner: bool = False,
    ) -> Region:
        """`size` bytes: `factor` of them (in [0, 1], or "auto": what fits in
        the memory this process may use) in memory, the rest in the file
        `path`. order: "memory_first" or "storage_first".

        >>> import os, tempfile, strata
        >>> path = os.path.join(tempfile.mkdtemp(), "c.bin")
        >>> r = strata.Region.combined(1 << 16, path, factor=0.25)
        >>> r.memory_bytes, r.storage_bytes, r.tier(0), r.tier(r.size - 1)
        (16384, 49152, 'memory', 'storage')
        >>> r.close(unlink=True)
        """
        return cls(
            _Region.combined(
                size, os.fspath(path), factor, order, offset, writeback, create_only, allow_other_owner
            )
        )

    size = property(lambda self: self._r.size, doc="Bytes in the region.")
    kind = property(lambda self: self._r.kind, doc='"memory", "storage" or "combined".')
    path = property(lambda self: self._r.path, doc="The file of the storage part; empty for memory.")
    memory_bytes = property(lambda self: self._r.memory_bytes, doc="Bytes placed in memory.")
    storage_bytes = property(lambda self: self._r.storage_bytes, doc="Bytes placed on storage.")
    is_open = property(lambda self: self._r.is_open)

    def array(self, dtype=np.uint8) -> np.ndarray:
        """The whole region as a 1-D numpy array of `dtype` (no copy); it keeps
        the region mapped while it lives. The size must be a multiple of the
        dtype's itemsize."""
        dt = np.dtype(dtype)
        if self.size % dt.itemsize:
            raise ValueError(
                f"dtype={dt.name}: region size {self.size} is not a multiple of its itemsize {dt.itemsize}"
            )
        view = self._r.array()
        return view if dt == np.uint8 else view.view(dt)

    def __array__(self, dtype=None, copy=None):
        if copy:
            raise ValueError("copy=True: a Region is viewed, never copied; use np.array(region.array())")
        return self.array(np.uint8 if dtype is None else dtype)

    def __buffer__(self, flags):
        return memoryview(self._r.array())

    def __len__(self) -> int:
        return self.size

    def tier(self, offset: int) -> str:
        """Where byte `offset` lives: "memory" or "storage"."""
        return self._r.tier(offset)

    def sync(self, offset: int = 0, length: int | None = None) -> None:
        """Makes the storage-backed changes in [offset, offset+length) durable (default: all)."""
        self._r.sync(offset, length)

    def sync_async(self, offset: int = 0, length: int | None = None) -> None:
        """Starts writing back the changes without waiting; a later sync() is the barrier."""
        self._r.sync_async(offset, length)

    def advise(self, advice: str) -> None:
        """normal, sequential, random, read_mostly or write_mostly (madvise/fadvise)."""
        self._r.advise(advice)

    def stats(self) -> dict[str, int]:
        """size, memory_bytes, storage_bytes, resident_bytes, dirty_bytes (from /proc/self/smaps)."""
        return self._r.stats()

    def close(self, *, discard: bool = False, unlink: bool = False, roll_back: bool = False) -> None:
        """Unmaps. discard: changes since the last sync() never reach the file
        (needs writeback="explicit_sync"); unlink: remove the file; roll_back:
        undo what creating the region did to the file system. Fails (code
        busy) while arrays of the region are alive.

        >>> import numpy as np, os, tempfile, strata
        >>> path = os.path.join(tempfile.mkdtemp(), "d.bin")
        >>> r = strata.Region.storage(4096, path, writeback="explicit_sync")
        >>> a = r.array(); a[:] = 7; del a
        >>> r.close(discard=True)                   # the 7s never reach the file
        >>> open(path, "rb").read() == bytes(4096)
        True
        """
        self._r.close(discard, unlink, roll_back)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._r.is_open:
            try:
                self.close()
            except Error:
                if exc_type is None:
                    raise

    def __repr__(self):
        if not self.is_open:
            return "strata.Region(closed)"
        return f"strata.Region(kind={self.kind!r}, size={self.size}, path={self.path!r})"
