"""``stream_events(version="v3")``: a run stream over the graph's own v2 stream.

The run is an ordinary ``stream(..., version="v2", subgraphs=True)`` of the modes the
registered transformers need; the run stream converts each of its chunks to a
protocol event and pushes it through a :class:`StreamMux`. So the events are the
chunks the loop's stream sink collected, re-shaped, and a distributed run that
stored its chunks could replay them through the same mux.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from graphruntime._internal._config import RunnableConfig, ensure_config, merge_configs
from graphruntime._internal._constants import CONF, CONFIG_KEY_CHECKPOINT_NS, NS_SEP
from graphruntime.errors import InvalidArgumentTypeError
from graphruntime.pregel._callbacks import CONFIG_KEY_STREAM_MESSAGES_V2
from graphruntime.stream._mux import StreamMux
from graphruntime.stream._types import StreamTransformer
from graphruntime.stream.run_stream import AsyncGraphRunStream, GraphRunStream
from graphruntime.stream.transformers import (
    LifecycleTransformer,
    SubgraphTransformer,
    ValuesTransformer,
)

if TYPE_CHECKING:
    from graphruntime.pregel.main import Pregel

Factory = Callable[[tuple[str, ...]], Any]

# v3 decides these itself: the modes come from the transformers, and subgraph events
# must flow so that nested scopes fill
_OWNED_KWARGS = ("stream_mode", "subgraphs")


def reject_owned_kwargs(kwargs: dict[str, Any]) -> None:
    clashes = [k for k in _OWNED_KWARGS if k in kwargs]
    if clashes:
        raise InvalidArgumentTypeError(
            "stream_events(version='v3') / astream_events(version='v3') do not accept "
            f"{', '.join(clashes)}; v3 owns these (stream_mode is built from the "
            "transformers' required_stream_modes, subgraphs is always True)."
        )


def _normalize_stream_transformer_factories(
    specs: Sequence[Factory] | None,
) -> list[Factory]:
    """Transformer classes or ``scope -> transformer`` factories; instances are refused.

    A subgraph's handle builds fresh transformers for its own scope, which an
    instance cannot give.
    """
    factories: list[Factory] = []
    for spec in specs or ():
        if isinstance(spec, StreamTransformer):
            raise InvalidArgumentTypeError(
                "stream_events(version='v3') transformers must be scope-aware callables, "
                f"got pre-built instance {type(spec).__name__}. Pass the transformer class "
                "or a factory like `lambda scope: MyTransformer(scope, ...)`."
            )
        if not callable(spec):
            raise InvalidArgumentTypeError(
                "stream_events(version='v3') transformers must be scope-aware callables, "
                f"got {type(spec).__name__}."
            )

        def factory(scope: tuple[str, ...], _spec: Factory = spec) -> Any:
            return _spec(scope)

        factories.append(factory)
    return factories


def _parent_ns(config: RunnableConfig | None) -> tuple[str, ...]:
    """The namespace the caller runs in: ``()`` at the root, a task's inside a node."""
    ns = ensure_config(config).get(CONF, {}).get(CONFIG_KEY_CHECKPOINT_NS)
    return tuple(ns.split(NS_SEP)) if ns else ()


def _mux(graph: Pregel, config: RunnableConfig | None, extra: Any, *, is_async: bool) -> StreamMux:
    from graphruntime.stream._messages import MessagesTransformer  # needs langchain-core

    return StreamMux(
        factories=[
            ValuesTransformer,
            MessagesTransformer,
            LifecycleTransformer,
            SubgraphTransformer,
            *_normalize_stream_transformer_factories(graph.stream_transformers),
            *_normalize_stream_transformer_factories(extra),
        ],
        scope=_parent_ns(merge_configs(graph.config, config)),
        is_async=is_async,
    )


def _modes(mux: StreamMux) -> list[str]:
    modes: set[str] = set()
    for transformer in mux._transformers:
        modes.update(getattr(transformer, "required_stream_modes", ()))
    return sorted(modes)


def _v2_config(config: RunnableConfig | None) -> RunnableConfig:
    """``config`` asking for chat models to stream protocol events (``run.messages``)."""
    out: RunnableConfig = {**(config or {})}
    out[CONF] = {**out.get(CONF, {}), CONFIG_KEY_STREAM_MESSAGES_V2: True}
    return out


def stream_v3(
    graph: Pregel,
    input: Any,
    config: RunnableConfig | None,
    transformers: Sequence[Factory] | None,
    *,
    interrupt_before: Any = None,
    interrupt_after: Any = None,
    control: Any = None,
    **kwargs: Any,
) -> GraphRunStream:
    reject_owned_kwargs(kwargs)
    mux = _mux(graph, config, transformers, is_async=False)
    chunks = graph.stream(
        input,
        _v2_config(config),
        stream_mode=_modes(mux),  # type: ignore[arg-type]
        subgraphs=True,
        version="v2",
        # passed even when not given, as LangGraph does (a subclass sees its defaults)
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        control=control,
        **kwargs,
    )
    return GraphRunStream(iter(chunks), mux)


async def astream_v3(
    graph: Pregel,
    input: Any,
    config: RunnableConfig | None,
    transformers: Sequence[Factory] | None,
    *,
    interrupt_before: Any = None,
    interrupt_after: Any = None,
    control: Any = None,
    **kwargs: Any,
) -> AsyncGraphRunStream:
    reject_owned_kwargs(kwargs)
    mux = _mux(graph, config, transformers, is_async=True)
    chunks = graph.astream(
        input,
        _v2_config(config),
        stream_mode=_modes(mux),  # type: ignore[arg-type]
        subgraphs=True,
        version="v2",
        # passed even when not given, as LangGraph does (a subclass sees its defaults)
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        control=control,
        **kwargs,
    )
    return AsyncGraphRunStream(aiter(chunks), mux)
