"""OpenTelemetry spans (``GRAPHRUNTIME_TRACING=otel``) through the OpenTelemetry API only.

Which SDK, sampler and exporter record them is the application's choice: the standard
``OTEL_*`` variables with ``opentelemetry-instrument``, or its own code run at import
(e.g. in the module of a registered graph). Without tracing, a span is a shared no-op
context manager: the hooks pay a flag check.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from workers.errors import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

_tracer: Tracer | None = None
_NO_SPAN: AbstractContextManager[Any] = nullcontext()
ATTRIBUTE_PREFIX = "graphruntime."


def tracing_enabled() -> bool:
    return _tracer is not None


def enable_tracing(mode: str, tracer_provider: TracerProvider | None = None) -> None:
    """``otel``: spans from now on (in this process and those forked from it); ``off``: none.

    ``tracer_provider``: where the spans go (default: OpenTelemetry's global provider).

    Raises :class:`ConfigurationError` when ``otel`` is asked for and the
    ``opentelemetry`` API is not installed.
    """
    global _tracer
    if mode == "off":
        _tracer = None
        return
    if mode != "otel":
        raise ConfigurationError(f"GRAPHRUNTIME_TRACING={mode!r}: give 'otel' or 'off'")
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ConfigurationError(
            "GRAPHRUNTIME_TRACING=otel, but the OpenTelemetry API is not installed: "
            "pip install 'graphruntime[otel]' (plus an SDK and exporter, e.g. opentelemetry-sdk "
            "and opentelemetry-exporter-otlp), or unset GRAPHRUNTIME_TRACING."
        ) from exc
    _tracer = trace.get_tracer("graphruntime.workers", tracer_provider=tracer_provider)


def span(name: str, attributes: dict[str, Any]) -> AbstractContextManager[Any]:
    """A current span ``name`` with ``graphruntime.<key>`` attributes (None values left out);
    the span itself, or None without tracing, is what ``with`` gives."""
    if _tracer is None:
        return _NO_SPAN
    return _tracer.start_as_current_span(
        name,
        attributes={ATTRIBUTE_PREFIX + k: v for k, v in attributes.items() if v is not None},
        record_exception=True,
        set_status_on_exception=True,
    )


def mark_failed(span: Any, error: BaseException) -> None:
    """Record a node's error on its span (the node's errors are returned, not raised)."""
    if span is None:
        return
    from opentelemetry.trace import Status, StatusCode

    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))


def annotate(**attributes: Any) -> None:
    """Set ``graphruntime.<key>`` attributes on the current span (if tracing)."""
    if _tracer is None:
        return
    from opentelemetry import trace

    current = trace.get_current_span()
    for key, value in attributes.items():
        if value is not None:
            current.set_attribute(ATTRIBUTE_PREFIX + key, value)
