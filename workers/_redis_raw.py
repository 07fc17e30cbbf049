"""Redis commands packed here and sent on a connection of one's own, several per round trip.

redis-py's command path (the pool's checkout and checks, argument encoding, a pipeline
object, response callbacks) costs more CPU than the round trip itself on the hot paths: a
client's submit (workers/_celery_wire.py) and a resident's sleep between runs
(workers/_drain_flag.py). There a call is the same few commands every time: they are
packed once in the Redis protocol (RESP) and written at once, on a connection made with
the broker pool's settings, whose parser reads the replies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from redis.exceptions import NoScriptError, ResponseError

__all__ = ("READ_TIMEOUT", "OwnConnection", "Script", "command", "connect")


READ_TIMEOUT = 10.0
"""Seconds a reply may take on a connection of one's own when the client's settings set no
socket timeout: a resident's ``BLPOP`` waits 0.25 s, a submit's script a round trip; a
half-open connection then raises instead of blocking its caller for ever."""


def connect(redis: Any) -> Any:
    """A new connection with ``redis``'s pool settings (a read timeout at least), not lent
    by its pool."""
    pool = redis.connection_pool
    kwargs = dict(pool.connection_kwargs)
    if kwargs.get("socket_timeout") is None:
        kwargs["socket_timeout"] = READ_TIMEOUT
    return pool.connection_class(**kwargs)


def command(*args: bytes) -> bytes:
    """A command in the Redis protocol (RESP): redis-py's own packer costs 20 µs a call,
    most of a round trip, checking and encoding argument by argument."""
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


class Script:
    """A Lua script called by its SHA1 (``EVALSHA``); its text goes (``EVAL``) only when
    Redis lacks it (restarted, or its scripts flushed)."""

    def __init__(self, text: str) -> None:
        self.text = text.encode()
        self.sha = hashlib.sha1(self.text).hexdigest().encode()  # its id, not a secret

    def call(self, keys: Sequence[bytes], args: Sequence[bytes]) -> bytes:
        """The ``EVALSHA`` command."""
        return command(b"EVALSHA", self.sha, b"%d" % len(keys), *keys, *args)

    def load(self, keys: Sequence[bytes], args: Sequence[bytes]) -> bytes:
        """The ``EVAL`` command (Redis keeps the script for the next ``EVALSHA``)."""
        return command(b"EVAL", self.text, b"%d" % len(keys), *keys, *args)


class OwnConnection:
    """One connection of a redis-py client's pool settings, not lent by its pool.

    Not thread-safe: one caller at a time (a resident's loop). An error reply leaves it
    usable; any other error (a lost connection, a timeout) drops it, and the next call
    connects again.
    """

    def __init__(self, redis: Any) -> None:
        self._redis = redis
        self._conn: Any = None

    def calls(self, commands: Sequence[bytes]) -> list[Any]:
        """Send ``commands`` (packed with :func:`command`) in one write and read their
        replies, in order; an error reply is returned in its place as its
        ``ResponseError`` (:class:`~redis.exceptions.NoScriptError` for an unknown script)."""
        conn = self._conn
        if conn is None:
            conn = self._conn = connect(self._redis)
        replies: list[Any] = []
        try:
            conn.send_packed_command(list(commands))
            for _ in commands:
                try:
                    replies.append(conn.read_response())
                except ResponseError as exc:
                    replies.append(exc)
        except BaseException:
            self.close()
            raise
        return replies

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.disconnect()


def raise_errors(replies: Sequence[Any]) -> None:
    """Raise the first error reply of ``replies`` (as a redis-py pipeline would)."""
    for reply in replies:
        if isinstance(reply, ResponseError):
            raise reply


def lacks_script(reply: Any) -> bool:
    """Whether ``reply`` says Redis does not know the script called."""
    return isinstance(reply, NoScriptError)
