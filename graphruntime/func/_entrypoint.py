"""``@entrypoint``: a workflow function as a graph of one node."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeVar, get_args, get_origin

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import PREVIOUS
from graphruntime.cache import BaseCache, CachePolicy
from graphruntime.channels import EphemeralValue, LastValue
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.constants import END, START
from graphruntime.errors import InvalidArgumentError, InvalidArgumentTypeError, NotSupportedError
from graphruntime.func._node import entry_node_func
from graphruntime.func._task import policies, timeout_policy
from graphruntime.pregel import Pregel
from graphruntime.pregel._node import NodeSpec
from graphruntime.store.base import BaseStore
from graphruntime.types import RetryPolicy, TimeoutPolicy
from graphruntime.warnings import LangGraphDeprecatedSinceV05, LangGraphDeprecatedSinceV10

__all__ = ("entrypoint",)

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")


class entrypoint(Generic[T]):
    """Make a function a workflow: a graph of one node that runs it.

    The function takes one positional argument, the run's input, and may ask for
    ``config``, ``writer``, ``store``, ``runtime`` and ``previous`` (the value the last
    run on the thread saved; None without a checkpointer). Its return value is the run's
    output and the next ``previous``, unless it returns :class:`entrypoint.final`.

    Args:
        checkpointer: saves the thread, so ``interrupt()`` can resume and ``previous``
            and finished task results survive between runs.
        store: the store nodes and tasks get as ``store``.
        cache: where cached results are kept (its tasks' with a ``cache_policy``).
        context_schema: the schema of the run's context.
        cache_policy: cache the entrypoint's own result by its input.
        retry_policy: retry the entrypoint's function on failures these policies match.
        timeout: limits on each attempt of the (async) function, as ``@task``'s.
    """

    def __init__(
        self,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        cache: BaseCache[Any] | None = None,
        context_schema: type[Any] | None = None,
        cache_policy: CachePolicy[Any] | None = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        **kwargs: Any,
    ) -> None:
        if "config_schema" in kwargs:
            warnings.warn(
                "`config_schema` is deprecated and will be removed. Please use "
                "`context_schema` instead.",
                category=LangGraphDeprecatedSinceV10,
                stacklevel=2,
            )
            config_schema = kwargs.pop("config_schema")
            if context_schema is None:
                context_schema = config_schema
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
            raise InvalidArgumentTypeError(
                f"entrypoint() got unexpected keyword arguments: {sorted(kwargs)}"
            )
        self.checkpointer = checkpointer
        self.store = store
        self.cache = cache
        self.cache_policy = cache_policy
        self.retry_policy = retry_policy
        self.timeout = TimeoutPolicy.coerce(timeout)
        self.context_schema = context_schema

    @dataclass(frozen=True, slots=True, kw_only=True)
    class final(Generic[R, S]):
        """Return ``value`` to the caller while saving ``save`` as the next ``previous``."""

        value: R
        save: S

    def __call__(self, func: Callable[..., Any]) -> Pregel:
        """Build the workflow's graph around ``func``."""
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise NotSupportedError("Generators are not supported in the Functional API.")
        name = func.__name__
        timeout = timeout_policy(self.timeout, func, "Node", name)
        sig = inspect.signature(func)
        first = next(iter(sig.parameters), None)
        if first is None:
            raise InvalidArgumentError("Entrypoint function must have at least one parameter")
        annotation = sig.parameters[first].annotation
        input_type = Any if annotation is inspect.Signature.empty else annotation
        output_type, save_type = _return_types(sig.return_annotation)
        node = NodeSpec(
            name=name,
            func=entry_node_func(func),
            triggers=(START,),
            input_keys=START,
            writers=(_write_final,),
            retry_policy=policies(self.retry_policy),
            cache_policy=self.cache_policy,
            timeout=timeout,
        )
        return Pregel(
            nodes={name: node},
            channels={
                START: EphemeralValue(input_type, key=START),
                END: LastValue(output_type, key=END),
                PREVIOUS: LastValue(save_type, key=PREVIOUS),
            },
            input_channels=START,
            output_channels=END,
            stream_channels=END,
            stream_mode="updates",
            stream_eager=True,
            checkpointer=self.checkpointer,
            store=self.store,
            cache=self.cache,
            context_schema=self.context_schema,
        )


def _return_types(annotation: Any) -> tuple[Any, Any]:
    """(output type, saved type) from the function's return annotation."""
    if annotation is inspect.Signature.empty or annotation is entrypoint.final:
        return Any, Any
    if get_origin(annotation) is entrypoint.final:
        args = get_args(annotation)
        if len(args) != 2:
            raise InvalidArgumentTypeError(
                "Please an annotation for both the return_ and the save values. For "
                "example, `-> entrypoint.final[int, str]` would assign a return_ a type of "
                "`int` and save the type `str`."
            )
        return args[0], args[1]
    return annotation, annotation


def _write_final(output: Any, config: RunnableConfig) -> list[tuple[str, Any]]:
    """The entrypoint's result: what the caller gets (END) and what is saved (PREVIOUS)."""
    if isinstance(output, entrypoint.final):
        return [(END, output.value), (PREVIOUS, output.save)]
    return [(END, output), (PREVIOUS, output)]
