"""``Pregel.batch``/``abatch``: one ``invoke`` per input, on threads or as asyncio tasks.

Both read the configs and the concurrency limit the same way (:func:`plan`), and keep the
results in input order; a failure is returned in its place with ``return_exceptions``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from graphruntime._internal._config import RunnableConfig
from graphruntime.errors import InvalidArgumentError

Calls = list[tuple[Any, RunnableConfig | None]]


def plan(
    inputs: Sequence[Any], config: RunnableConfig | Sequence[RunnableConfig] | None
) -> tuple[Calls, int | None]:
    """Each input with its config, and how many may run at once (None: no limit)."""
    if not inputs:
        return [], None
    configs = _configs(config, len(inputs))
    limit = (configs[0] or {}).get("max_concurrency") or None
    return list(zip(inputs, configs, strict=True)), limit


def in_threads(
    invoke: Callable[[Any, RunnableConfig | None], Any],
    calls: Calls,
    limit: int | None,
    return_exceptions: bool,
) -> list[Any]:
    def one(call: tuple[Any, RunnableConfig | None]) -> Any:
        try:
            return invoke(*call)
        except Exception as exc:
            if return_exceptions:
                return exc
            raise

    if len(calls) <= 1:
        return [one(call) for call in calls]
    with concurrent.futures.ThreadPoolExecutor(max_workers=limit) as pool:
        return list(pool.map(one, calls))


async def in_tasks(
    ainvoke: Callable[[Any, RunnableConfig | None], Awaitable[Any]],
    calls: Calls,
    limit: int | None,
    return_exceptions: bool,
) -> list[Any]:
    semaphore = asyncio.Semaphore(limit) if limit else None

    async def one(value: Any, cfg: RunnableConfig | None) -> Any:
        if semaphore is None:
            return await ainvoke(value, cfg)
        async with semaphore:
            return await ainvoke(value, cfg)

    return list(
        await asyncio.gather(
            *(one(value, cfg) for value, cfg in calls), return_exceptions=return_exceptions
        )
    )


def _configs(
    config: RunnableConfig | Sequence[RunnableConfig] | None, n: int
) -> list[RunnableConfig | None]:
    if config is None or isinstance(config, dict):
        return [config] * n
    configs: list[RunnableConfig | None] = list(config)
    if len(configs) != n:
        raise InvalidArgumentError(f"batch() got {len(configs)} configs for {n} inputs")
    return configs
