"""The Redis side of draining (workers/_drain.py): the flag, the wake-ups, the residents.

Keys, per coordinator queue (and graph where it says so):

* ``draining:{queue}:{graph}``: the flag. Up (with a TTL) while a job will look at the
  run table again: a client that sees it up sends no coordinator message.
* ``sleepers:{queue}:{graph}``: the residents asleep, each scored with when it went to
  sleep (Redis' clock), refreshed every :data:`WAKE_POLL` seconds while it sleeps.
* ``wake:{queue}:job:{token}``: a resident's own wake-up list; ``wake:{queue}:{graph}``:
  the shared one, for a wake-up no sleeping resident took.
* ``resident:{queue}:{home}`` (one resident per worker) and ``resident:{queue}:{host}:{i}``
  (a host's slots: as many residents as it has cores, so that more workers on a host
  do not mean more, smaller batches), ``residents:{queue}`` (the live residents, each
  scored with when it counts as dead unless it is heard of again) and
  ``leaving:{queue}:{home}`` (the worker is shutting down: its resident leaves).

A job that stops taking runs (a drainer done, a resident leaving) lowers the flag only if
no other resident lives: one that does keeps it up and takes the pending wake-ups; the
last one lowers it (and drops them), then takes its last look.

A client wakes the resident that went to sleep last: under a moderate load the work
stays with the fewest residents (bigger batches, warm processes) and the others sleep.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from workers._redis_raw import OwnConnection, Script, command, lacks_script, raise_errors

log = logging.getLogger(__name__)

FLAG_TTL = 2.0
"""Seconds a raised flag lasts unless raised again."""

WAKE_POLL = 0.25
"""Seconds a resident sleeps on its wake-up lists before it looks at the broker's task queue."""

FRESH = 4 * WAKE_POLL
"""Seconds after which a sleeper not heard of is taken for dead (a killed resident)."""

# One round trip for a client. Flag down: nothing (it sends its message). Else the
# sleeper that went to sleep last is taken out of the set and woken on its own list; with
# none asleep, a wake-up on the shared list unless one is pending there. The job that
# pops a wake-up claims after the pop, so it takes every run committed before the push
# (a full batch's resident claims again); a run committed after the pop wakes another
# sleeper or pushes again.
_WAKE = """
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local now = redis.call('time')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('zremrangebyscore', KEYS[3], '-inf', ms - tonumber(ARGV[2]))
local last = redis.call('zpopmax', KEYS[3])
if last[1] then
  redis.call('lpush', ARGV[1] .. last[1], '1')
elseif redis.call('llen', KEYS[2]) == 0 then
  redis.call('lpush', KEYS[2], '1')
end
return 1
"""

# A resident going to sleep: the flags raised, itself in each graph's sleepers (scored by
# Redis' clock, as the clients read it), and whether its worker is shutting down.
# KEYS: the flags, then the sleepers sets, then the leaving key; ARGV: token, flag TTL ms.
_SLEEP = """
local n = (#KEYS - 1) / 2
local now = redis.call('time')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for i = 1, n do
  redis.call('set', KEYS[i], '1', 'px', ARGV[2])
  redis.call('zadd', KEYS[n + i], ms, ARGV[1])
end
return redis.call('exists', KEYS[#KEYS])
"""

# A resident woken (or not): out of each graph's sleepers (KEYS); ARGV: its token.
_UNSLEEP = """
for i = 1, #KEYS do
  redis.call('zrem', KEYS[i], ARGV[1])
end
return 0
"""
_SLEEPING = Script(_SLEEP)
_WOKEN = Script(_UNSLEEP)

_NOW = """
local now = redis.call('time')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
"""

# KEYS: the live residents, the worker's resident key, then its host's slots; ARGV:
# token, TTL ms. The slot taken (1-based), or 0.
_HOLD = (
    _NOW
    + """
if not redis.call('set', KEYS[2], ARGV[1], 'nx', 'px', ARGV[2]) then
  return 0
end
for i = 3, #KEYS do
  if redis.call('set', KEYS[i], ARGV[1], 'nx', 'px', ARGV[2]) then
    redis.call('zadd', KEYS[1], ms + tonumber(ARGV[2]), ARGV[1])
    return i - 2
  end
end
redis.call('del', KEYS[2])
return 0
"""
)
# the resident's keys (the worker's, its slot): refreshed, or freed, only by their holder
_KEEP = (
    _NOW
    + """
if redis.call('get', KEYS[2]) ~= ARGV[1] or redis.call('get', KEYS[3]) ~= ARGV[1] then
  return 0
end
redis.call('zadd', KEYS[1], ms + tonumber(ARGV[2]), ARGV[1])
redis.call('pexpire', KEYS[2], ARGV[2])
return redis.call('pexpire', KEYS[3], ARGV[2])
"""
)
_FREE = """
redis.call('zrem', KEYS[1], ARGV[1])
for i = 2, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[1] then
    redis.call('del', KEYS[i])
  end
end
return 0
"""

# A job stops taking runs. KEYS: the live residents, the resident's own wake-up list (or
# any key), then per graph its flag, shared wake-up list and sleepers; ARGV: the
# resident's token ('' for a drainer). The flags and shared lists go only if no other
# resident lives. A resident leaving is no longer one (taken out of the live residents
# here, not when it frees its keys after its last look): of two residents that leave at
# once, the second to lower sees none left and lowers, and its last look takes what a
# client queued while the flags were up. 1: lowered.
_LOWER = (
    _NOW
    + """
local n = (#KEYS - 2) / 3
if ARGV[1] ~= '' then
  redis.call('del', KEYS[2])
  redis.call('zrem', KEYS[1], ARGV[1])
  for i = 1, n do
    redis.call('zrem', KEYS[2 + 2 * n + i], ARGV[1])
  end
end
redis.call('zremrangebyscore', KEYS[1], '-inf', ms)
if redis.call('zcard', KEYS[1]) > 0 then
  return 0
end
for i = 1, 2 * n do
  redis.call('del', KEYS[2 + i])
end
return 1
"""
)


class DrainFlag:
    """The Redis keys of one coordinator queue's drainers and residents."""

    def __init__(
        self, redis: Any, queue: str, home: str = "", host: str = "", slots: int = 1
    ) -> None:
        self.redis = redis
        self.queue = queue
        self.home = home
        """The worker whose resident this job may be."""
        self.host = host
        self.slots = slots
        """How many residents :attr:`host` has at most."""
        self._slot = 0  # the slot this job holds (1-based; 0: none)
        self._own: OwnConnection | None = None  # a resident's, for its sleeps
        self._sleep_calls: tuple[tuple[Any, ...], list[bytes], list[bytes]] | None = None

    # --- keys ------------------------------------------------------------------------

    def key(self, graph: str) -> str:
        return f"graphruntime:draining:{self.queue}:{graph}"

    def wake_key(self, graph: str) -> str:
        return f"graphruntime:wake:{self.queue}:{graph}"

    def own_key(self, token: str) -> str:
        return f"graphruntime:wake:{self.queue}:job:{token}"

    def sleepers_key(self, graph: str) -> str:
        return f"graphruntime:sleepers:{self.queue}:{graph}"

    def leaving_key(self) -> str:
        return f"graphruntime:leaving:{self.queue}:{self.home}"

    def residents_key(self) -> str:
        return f"graphruntime:residents:{self.queue}"

    def resident_key(self) -> str:
        """The key of :attr:`home`'s resident: one resident per worker."""
        return f"graphruntime:resident:{self.queue}:{self.home}"

    def slot_keys(self) -> list[str]:
        """The keys of :attr:`host`'s resident slots."""
        return [f"graphruntime:resident:{self.queue}:{self.host}:{i}" for i in range(self.slots)]

    # --- a client --------------------------------------------------------------------

    def wake_call(self, graph: str) -> tuple[list[str], list[str | int]]:
        """The keys and arguments of :data:`_WAKE` for ``graph`` (the client's submit
        extends the script with its message: workers/_celery_wire.py)."""
        keys = [self.key(graph), self.wake_key(graph), self.sleepers_key(graph)]
        return keys, [self.own_key(""), int(FRESH * 1000)]

    def wake(self, graph: str) -> bool:
        """Whether a job drains ``graph``'s runs now, waking a resident if one sleeps, in
        one round trip; False when Redis cannot say (the caller sends its message)."""
        keys, args = self.wake_call(graph)
        try:
            woke = self.redis.eval(_WAKE, len(keys), *keys, *args)
        except Exception as exc:  # noqa: BLE001 - the caller sends its message then
            log.debug("reading the drain flag failed: %s", exc)
            return False
        return bool(woke)

    # --- a drainer -------------------------------------------------------------------

    def raise_(self, graphs: Sequence[str], *, resident: bool = False) -> bool:
        """Raise the flags; with ``resident``, whether :attr:`home` is shutting down (read
        in the same round trip)."""
        if len(graphs) == 1 and not resident:  # a drainer of one graph: no pipeline object
            self.redis.set(self.key(graphs[0]), "1", px=int(FLAG_TTL * 1000))
            return False
        pipe = self.redis.pipeline(transaction=False)
        for graph in graphs:
            pipe.set(self.key(graph), "1", px=int(FLAG_TTL * 1000))
        if resident:
            pipe.exists(self.leaving_key())
        return resident and bool(pipe.execute()[-1])

    def lower(self, graphs: Sequence[str], token: str | None = None) -> bool:
        """This job stops taking runs: a resident's (``token``) own wake-ups dropped and
        it out of the sleepers; the flags down and their pending wake-ups dropped unless
        another resident lives (whether they were). The caller's claim that follows is
        the look the dropped wake-ups asked for."""
        keys = [self.residents_key(), self.own_key(token or "")]
        keys += [self.key(graph) for graph in graphs]
        keys += [self.wake_key(graph) for graph in graphs]
        keys += [self.sleepers_key(graph) for graph in graphs]
        return bool(self.redis.eval(_LOWER, len(keys), *keys, token or ""))

    # --- a resident ------------------------------------------------------------------

    def sleep(self, graphs: Sequence[str], token: str, timeout: float) -> tuple[bool, bool]:
        """Wait up to ``timeout`` seconds for a client's wake-up (the claim that follows
        must come after it), the flags raised and this resident among the sleepers first,
        in the same round trip; whether one came, and whether :attr:`home` is shutting
        down. It is nobody's sleeper when this returns (taken out after the wait, in the
        same round trip): woken, it works; else it sleeps again or leaves.

        The same commands every time, packed once, on a connection of this flag's own
        (workers/_redis_raw.py): a resident sleeps between every two rounds."""
        calls, loads = self._sleeping(graphs, token, timeout)
        if self._own is None:
            self._own = OwnConnection(self.redis)
        leaving, popped, woken = self._own.calls(calls)
        if lacks_script(leaving) or lacks_script(woken):  # Redis restarted: sent in full
            leaving, woken = self._own.calls(loads)
        raise_errors([leaving, popped, woken])
        return popped is not None, bool(leaving)

    def _sleeping(
        self, graphs: Sequence[str], token: str, timeout: float
    ) -> tuple[list[bytes], list[bytes]]:
        """:meth:`sleep`'s commands (``EVALSHA``, ``BLPOP``, ``EVALSHA``), and its scripts'
        calls by their text; made once per resident."""
        key = (tuple(graphs), token, timeout)
        if self._sleep_calls is not None and self._sleep_calls[0] == key:
            return self._sleep_calls[1], self._sleep_calls[2]
        sleepers = [self.sleepers_key(graph).encode() for graph in graphs]
        keys = [self.key(graph).encode() for graph in graphs] + sleepers
        keys.append(self.leaving_key().encode())
        lists = [self.own_key(token).encode()] + [self.wake_key(g).encode() for g in graphs]
        args = [token.encode(), b"%d" % int(FLAG_TTL * 1000)]
        wait = command(b"BLPOP", *lists, repr(float(timeout)).encode())
        calls = [_SLEEPING.call(keys, args), wait, _WOKEN.call(sleepers, args[:1])]
        loads = [_SLEEPING.load(keys, args), _WOKEN.load(sleepers, args[:1])]
        self._sleep_calls = (key, calls, loads)
        return calls, loads

    def hold(self, token: str) -> bool:
        """Become :attr:`home`'s resident, unless a live one is or :attr:`host` has
        all the residents it may have."""
        keys = [self.residents_key(), self.resident_key(), *self.slot_keys()]
        ttl = int(FLAG_TTL * 1000)
        self._slot = int(self.redis.eval(_HOLD, len(keys), *keys, token, ttl))
        return self._slot > 0

    def _held(self) -> list[str]:
        slot = self.slot_keys()[self._slot - 1] if self._slot else self.resident_key()
        return [self.residents_key(), self.resident_key(), slot]

    def keep(self, token: str) -> bool:
        """Stay the resident a while longer; False if this job no longer is."""
        ttl = int(FLAG_TTL * 1000)
        return bool(self.redis.eval(_KEEP, 3, *self._held(), token, ttl))

    def free(self, token: str) -> None:
        try:
            self.redis.eval(_FREE, 3, *self._held(), token)
        finally:
            self._slot = 0
            self.close()

    def close(self) -> None:
        """Close the connection :meth:`sleep` made (a resident leaving)."""
        own, self._own = self._own, None
        if own is not None:
            own.close()

    # --- the worker's main process ---------------------------------------------------

    def leave(self, within: float) -> None:
        """:attr:`home` is shutting down: its resident leaves (within :data:`WAKE_POLL`
        seconds if it sleeps, after its batch if it works); the mark lasts ``within``
        seconds (a resident's longest stay)."""
        self.redis.set(self.leaving_key(), "1", px=int(within * 1000))

    def stay(self) -> None:
        """:attr:`home` starts: a mark of its last shutdown is gone."""
        self.redis.delete(self.leaving_key())
