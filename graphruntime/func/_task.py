"""``@task``: a function whose calls, inside a running graph, become tasks of the step."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, Generic, ParamSpec, TypeVar

from graphruntime._internal._config import get_config
from graphruntime._internal._constants import CACHE_NS_WRITES, CONF, CONFIG_KEY_CALL
from graphruntime.cache import BaseCache, CachePolicy
from graphruntime.errors import InvalidArgumentTypeError, UsageError
from graphruntime.pregel._cache import identifier
from graphruntime.pregel._call import call_name
from graphruntime.pregel._timeout import check_timeout_supported
from graphruntime.types import RetryPolicy, TimeoutPolicy
from graphruntime.warnings import LangGraphDeprecatedSinceV05

__all__ = ("policies", "task", "timeout_policy")

P = ParamSpec("P")
T = TypeVar("T")


def timeout_policy(
    timeout: float | timedelta | TimeoutPolicy | None,
    func: Callable[..., Any],
    kind: str,
    name: str,
) -> TimeoutPolicy | None:
    """``timeout`` as a policy; ValueError when ``func`` is sync (it cannot be cancelled)."""
    policy = TimeoutPolicy.coerce(timeout)
    if policy is not None:
        check_timeout_supported(func, name, kind)
    return policy


def policies(retry_policy: RetryPolicy | Sequence[RetryPolicy] | None) -> tuple[RetryPolicy, ...]:
    if retry_policy is None:
        return ()
    if isinstance(retry_policy, RetryPolicy):
        return (retry_policy,)
    return tuple(retry_policy)


class _TaskFunction(Generic[P, T]):
    """A ``@task`` function: calling it inside an entrypoint or a node schedules it."""

    def __init__(
        self,
        func: Callable[P, Awaitable[T]] | Callable[P, T],
        *,
        retry_policy: Sequence[RetryPolicy],
        cache_policy: CachePolicy[Any] | None = None,
        timeout: TimeoutPolicy | None = None,
        name: str | None = None,
    ) -> None:
        if name is not None:
            if hasattr(func, "__func__") and hasattr(func, "__self__"):
                # a bound method: rename a copy, not the function its class shares
                method = functools.partial(func.__func__, func.__self__)
                method.__name__ = name  # type: ignore[attr-defined]
                func = method
            else:
                func.__name__ = name
        self.func = func
        self.retry_policy = retry_policy
        self.cache_policy = cache_policy
        self.timeout = timeout
        functools.update_wrapper(self, func)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Schedule the call; returns a future of its result (``.result()`` or ``await``)."""
        config = get_config()
        call = config[CONF].get(CONFIG_KEY_CALL)
        if call is None:
            raise UsageError(
                f"@task {getattr(self.func, '__name__', self.func)!r} was called outside a "
                "graph: call tasks from an @entrypoint, a graph node or another task."
            )
        return call(
            self.func,
            (args, kwargs),
            retry_policy=self.retry_policy,
            cache_policy=self.cache_policy,
            timeout=self.timeout,
            # the call's run is a child of the caller's (its config's callbacks)
            callbacks=config.get("callbacks"),
        )

    def clear_cache(self, cache: BaseCache[Any]) -> None:
        """Forget this task's cached results."""
        cache.clear([self._cache_namespace()])

    def _cache_namespace(self) -> tuple[str, ...]:
        return (CACHE_NS_WRITES, identifier(self.func) or "__dynamic__", call_name(self.func))

    async def aclear_cache(self, cache: BaseCache[Any]) -> None:
        """Async twin of :meth:`clear_cache`."""
        await cache.aclear([self._cache_namespace()])


def task(
    __func_or_none__: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy[Any] | None = None,
    timeout: float | timedelta | TimeoutPolicy | None = None,
    **kwargs: Any,
) -> Any:
    """Make a function a task: called from an ``@entrypoint`` (or a node, or another
    task) it runs as a task of the same step and returns a future of its result.

    With a checkpointer its arguments and result must be serializable: the result is
    saved, and a call that finished is not run again when its caller runs again.

    Args:
        name: the task's name (default: the function's).
        retry_policy: retry the call on failures these policies match.
        cache_policy: cache the call's result by its arguments (the entrypoint's or the
            graph's ``cache`` holds it); a cached call does not run.
        timeout: limits on each attempt (async functions only): seconds or a
            ``timedelta`` cap its run time, a ``TimeoutPolicy`` may also cap idle time.
            Past a limit the attempt is cancelled and fails with ``NodeTimeoutError``
            (which ``retry_policy`` may retry). Enforced under ``ainvoke``/``astream``.
    """
    if "retry" in kwargs:
        warnings.warn(
            "`retry` is deprecated and will be removed. Please use `retry_policy` instead.",
            category=LangGraphDeprecatedSinceV05,
            stacklevel=2,
        )
        retry = kwargs.pop("retry")
        if retry_policy is None:
            retry_policy = retry
    if kwargs:
        raise InvalidArgumentTypeError(f"task() got unexpected keyword arguments: {sorted(kwargs)}")
    retry_policies = policies(retry_policy)

    def decorator(func: Callable[..., Any]) -> _TaskFunction[Any, Any]:
        label = name or getattr(func, "__name__", type(func).__name__)
        policy = timeout_policy(timeout, func, "Task", str(label))
        return _TaskFunction(
            func,
            retry_policy=retry_policies,
            cache_policy=cache_policy,
            timeout=policy,
            name=name,
        )

    if __func_or_none__ is not None:
        return decorator(__func_or_none__)
    return decorator
