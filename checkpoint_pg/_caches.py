"""What a saver remembers between calls: blobs known stored, and recently loaded steps."""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import suppress

from graphruntime.checkpoint import CheckpointTuple

__all__ = ("BlobKey", "KnownBlobs", "StepCache")

BlobKey = tuple[str, str, str, str]
"""``(thread_id, checkpoint_ns, channel, version key)`` of a stored blob."""


class StepCache:
    """The last few checkpoints task jobs loaded, decoded, by (thread, ns, id)."""

    def __init__(self, capacity: int = 4) -> None:
        self.capacity = capacity
        self._items: OrderedDict[tuple[str, str, str], CheckpointTuple] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> CheckpointTuple | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, str, str], value: CheckpointTuple) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def forget_thread(self, thread_id: str) -> None:
        with self._lock:
            for key in [k for k in self._items if k[0] == thread_id]:
                del self._items[key]


class KnownBlobs:
    """A bounded set of blob keys seen stored: a hint that lets a put reference an
    unchanged value instead of sending it again (the put statement still checks).

    First in, first out: good enough for the pattern it serves (a thread's next put
    reuses the blobs of the checkpoint just put or loaded).
    """

    def __init__(self, capacity: int = 16_384) -> None:
        self._keys: dict[BlobKey, None] = {}
        self._capacity = capacity

    def __contains__(self, key: BlobKey) -> bool:
        return key in self._keys

    def add(self, key: BlobKey) -> None:
        self._keys[key] = None
        if len(self._keys) > self._capacity:
            # Another thread may have trimmed it first.
            with suppress(StopIteration, KeyError, RuntimeError):
                del self._keys[next(iter(self._keys))]

    def discard(self, key: BlobKey) -> None:
        self._keys.pop(key, None)

    def forget_thread(self, thread_id: str) -> None:
        for key in [k for k in list(self._keys) if k[0] == thread_id]:
            self._keys.pop(key, None)
