"""``stream_events(version="v3")``: a run stream over the graph's own v2 stream.

The run is an ordinary ``stream(..., version="v2", subgraphs=True)`` of the modes the
registered transformers need; the run stream converts each of its chunks to a
protocol event and pushes it through a :class:`StreamMux`. So the events are the
chunks the loop's stream sink collected, re-shaped, and a distributed run that
stored its chunks could replay them through the same mux.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from graphruntime._internal._config import RunnableConfig, ensure_config, merge_configs
from graphruntime._internal._constants import CONF, CONFIG_KEY_CHECKPOINT_NS, NS_SEP
from graphruntime.errors import InvalidArgumentTypeError, NotSupportedError
from graphruntime.pregel._callbacks import CONFIG_KEY_STREAM_MESSAGES_V2, as_runnable
from graphruntime.pregel._callbacks import astream_events as lc_astream_events
from graphruntime.pregel._callbacks import astream_log as lc_astream_log
from graphruntime.stream._mux import StreamMux
from graphruntime.stream._types import StreamTransformer
from graphruntime.stream.run_stream import AsyncGraphRunStream, GraphRunStream
from graphruntime.stream.transformers import (
    LifecycleTransformer,
    SubgraphTransformer,
    ValuesTransformer,
)


class StreamingGraph(Protocol):
    """What an event stream needs of a graph (``Pregel`` is one)."""

    @property
    def config(self) -> RunnableConfig | None: ...
    @property
    def stream_transformers(self) -> Sequence[Callable[[tuple[str, ...]], Any]]: ...
    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]: ...
    def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]: ...


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


def _mux(
    graph: StreamingGraph, config: RunnableConfig | None, extra: Any, *, is_async: bool
) -> StreamMux:
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
    graph: StreamingGraph,
    input: Any,
    config: RunnableConfig | None,
    transformers: Sequence[Factory] | None,
    *,
    interrupt_before: Any = None,
    interrupt_after: Any = None,
    control: Any = None,
    **kwargs: Any,
) -> GraphRunStream:
    return GraphRunStream(
        *_v3_run(
            graph,
            input,
            config,
            transformers,
            False,
            # passed even when not given, as LangGraph does (a subclass sees its defaults)
            {
                "interrupt_before": interrupt_before,
                "interrupt_after": interrupt_after,
                "control": control,
                **kwargs,
            },
        )
    )


async def astream_v3(
    graph: StreamingGraph,
    input: Any,
    config: RunnableConfig | None,
    transformers: Sequence[Factory] | None,
    *,
    interrupt_before: Any = None,
    interrupt_after: Any = None,
    control: Any = None,
    **kwargs: Any,
) -> AsyncGraphRunStream:
    return AsyncGraphRunStream(
        *_v3_run(
            graph,
            input,
            config,
            transformers,
            True,
            {
                "interrupt_before": interrupt_before,
                "interrupt_after": interrupt_after,
                "control": control,
                **kwargs,
            },
        )
    )


def _v3_run(
    graph: StreamingGraph,
    input: Any,
    config: RunnableConfig | None,
    transformers: Sequence[Factory] | None,
    is_async: bool,
    kwargs: dict[str, Any],
) -> tuple[Any, StreamMux]:
    """The v2 stream a v3 run reads (``graph.stream`` or ``astream``) and its mux."""
    reject_owned_kwargs(kwargs)
    mux = _mux(graph, config, transformers, is_async=is_async)
    method = graph.astream if is_async else graph.stream
    chunks = method(
        input,
        _v2_config(config),
        stream_mode=_modes(mux),
        subgraphs=True,
        version="v2",
        **kwargs,
    )
    return (aiter(chunks) if is_async else iter(chunks)), mux  # type: ignore[arg-type]


class PregelEvents:
    """The event streams of a ``Pregel`` graph (a base class: the runs are its streams)."""

    config: RunnableConfig | None
    stream_transformers: Sequence[Callable[[tuple[str, ...]], Any]]

    if TYPE_CHECKING:  # Pregel's

        def stream(
            self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
        ) -> Iterator[Any]: ...
        def astream(
            self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
        ) -> AsyncIterator[Any]: ...

    def stream_events(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        version: Literal["v1", "v2", "v3"] = "v2",
        transformers: Sequence[Callable[[tuple[str, ...]], Any]] | None = None,
        **kwargs: Any,
    ) -> GraphRunStream:
        """A run stream (``version="v3"``) whose projections the caller reads.

        ``transformers``: extra :class:`StreamTransformer` classes or ``scope ->
        transformer`` factories. Other keywords go to :meth:`stream`, but for
        ``stream_mode`` and ``subgraphs``, which v3 decides. LangChain has no
        synchronous v1/v2 event stream: use :meth:`astream_events` for those.
        """
        if version == "v3":
            return stream_v3(self, input, config, transformers, **kwargs)
        raise NotSupportedError(
            f"stream_events(version={version!r}) is not available synchronously (nor in "
            "LangChain): use astream_events for v1/v2, or version='v3'."
        )

    def astream_events(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        version: Literal["v1", "v2", "v3"] = "v2",
        transformers: Sequence[Callable[[tuple[str, ...]], Any]] | None = None,
        **kwargs: Any,
    ) -> Any:
        """LangChain's event stream (v1/v2 dicts), or an awaitable run stream (v3).

        For v1/v2 (needs langchain-core) the filters ``include_names`` / ``_types`` /
        ``_tags`` and ``exclude_*`` are LangChain's; other keywords go to
        :meth:`astream`.
        """
        if version == "v3":
            return astream_v3(self, input, config, transformers, **kwargs)
        if transformers is not None:
            raise InvalidArgumentTypeError("transformers= is only for astream_events(version='v3')")
        return lc_astream_events(self, input, config, version=version, **kwargs)

    def astream_log(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """LangChain's run log stream (``RunLogPatch`` chunks; needs langchain-core).

        Its filters (``include_names`` ...), ``diff`` and ``with_streamed_output_list``
        are LangChain's; other keywords go to :meth:`astream`.
        """
        return lc_astream_log(self, input, config, **kwargs)

    def __or__(self, other: Any) -> Any:
        """``graph | runnable``: a LangChain RunnableSequence (needs langchain-core)."""
        return as_runnable(self) | other

    def __ror__(self, other: Any) -> Any:
        return other | as_runnable(self)
