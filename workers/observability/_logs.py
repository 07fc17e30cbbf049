"""JSON log lines (``GRAPHRUNTIME_LOG_FORMAT=json``) that carry the ids of what is running.

Everything logs through the standard library, Celery included; JSON lines come from
structlog's ``ProcessorFormatter`` set on the worker's handlers, so Celery's own lines
are JSON too. The ids (run, thread, graph, node, task, job) live in context variables,
bound around a job, a run and a node's attempt, and added to every line logged inside.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

_json = False
_NOTHING_BOUND: AbstractContextManager[None] = nullcontext()


def json_logs_enabled() -> bool:
    return _json


def json_formatter() -> logging.Formatter:
    """One JSON object per line: timestamp, level, logger, event, process, bound ids, extras,
    and the traceback as ``exception``."""
    import structlog

    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.CallsiteParameterAdder(
                [
                    structlog.processors.CallsiteParameter.PROCESS,
                    structlog.processors.CallsiteParameter.PROCESS_NAME,
                ]
            ),
            structlog.stdlib.ExtraAdder(),
        ],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
    )


def use_json_logs(loggers: Iterable[logging.Logger]) -> None:
    """Format every handler of ``loggers`` as JSON, and start binding ids in this process
    (and in the processes forked from it)."""
    global _json
    formatter = json_formatter()
    for logger in loggers:
        for handler in logger.handlers:
            handler.setFormatter(formatter)
    _json = True


def use_text_logs() -> None:
    """Stop binding ids (the handlers keep whatever formatter they have)."""
    global _json
    _json = False


def bound(**ids: Any) -> AbstractContextManager[Any]:
    """Add ``ids`` (those not None) to every line logged inside the block, in JSON mode."""
    if not _json:
        return _NOTHING_BOUND
    import structlog

    return structlog.contextvars.bound_contextvars(
        **{key: value for key, value in ids.items() if value is not None}
    )


def bound_ids() -> dict[str, Any]:
    """The ids bound here now (for tests and diagnostics)."""
    import structlog

    return structlog.contextvars.get_contextvars()
