"""The human-in-the-loop request/response shapes (as ``langgraph.prebuilt.interrupt``).

Plain TypedDicts: a node passes a ``HumanInterrupt`` to ``interrupt()`` and resumes
with a ``HumanResponse``.
"""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

__all__ = ("ActionRequest", "HumanInterrupt", "HumanInterruptConfig", "HumanResponse")


class HumanInterruptConfig(TypedDict):
    """Which answers the human may give: ignore, respond (text), edit, accept."""

    allow_ignore: bool
    allow_respond: bool
    allow_edit: bool
    allow_accept: bool


class ActionRequest(TypedDict):
    """The action waiting for approval: its name and its arguments."""

    action: str
    args: dict[str, Any]


class HumanInterrupt(TypedDict):
    """What a paused graph asks the human: the action, the allowed answers, a description."""

    action_request: ActionRequest
    config: HumanInterruptConfig
    description: str | None


class HumanResponse(TypedDict):
    """The human's answer: ``accept``/``ignore`` (no args), ``response`` (text), ``edit``."""

    type: Literal["accept", "ignore", "response", "edit"]
    args: str | ActionRequest | None
