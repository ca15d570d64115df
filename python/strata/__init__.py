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

import numpy as np

from ._strata import Error, Handle, _Port, _Segment

__all__ = ["Error", "Handle", "Segment", "Port", "Message", "DTYPES"]

DTYPES = ("float64", "float32", "int64", "int32", "uint8")


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
        return self._seg._vector(name, _dtype_name(dtype), size, True).array()

    def find(self, name: str, dtype) -> np.ndarray:
        """The existing vector `name` (strata.Error code not_found if absent, ValueError if of another type)."""
        return self._seg._vector(name, _dtype_name(dtype), 0, False).array()

    def make(self, dtype, size: int) -> np.ndarray:
        """An unnamed vector of `size` zeros, reachable through save()/load() or a port."""
        return self._seg._make(_dtype_name(dtype), size).array()

    def save(self, array: np.ndarray) -> Handle:
        """A handle to the vector behind `array` (an array vector(), find(), make() or load() returned)."""
        if not isinstance(array, np.ndarray):
            raise TypeError(f"array: expected a numpy array, got {type(array).__name__}")
        return self._seg._save(array.__array_interface__["data"][0])

    def load(self, handle: Handle) -> np.ndarray:
        """The vector behind `handle`, checked (segment, generation, offset, type), as a numpy view."""
        return self._seg._load(handle).array()

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
        """Detaches (the last user removes the segment). Fails while arrays of it are alive."""
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


class Message:
    """A received message: `array` views the vector it names (no copy). The
    message's slot stays held - the producer cannot reuse it - until
    release() (or the end of a `with` block)."""

    def __init__(self, segment: Segment, sample):
        self._sample = sample
        self.handle: Handle = sample.handle
        self.array: np.ndarray = segment.load(self.handle)

    def release(self) -> None:
        self.array = None
        self._sample.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


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
        """Sends a vector (an array of the segment) or a Handle; waits while every slot is in use."""
        handle = obj if isinstance(obj, Handle) else self._segment.save(obj)
        self._port.send(handle, timeout)

    def recv(self, timeout: float | None = None) -> Message | None:
        """The next message, waiting for it; None at the end of the stream (every producer closed)."""
        sample = self._port.recv(timeout)
        return None if sample is None else Message(self._segment, sample)

    def close(self) -> None:
        self._port.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
