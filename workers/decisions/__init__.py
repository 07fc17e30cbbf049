"""What a wait's answers mean, and decisions turned into resume values.

One place for the request formats the inbox, the CLI and ``resume_many`` understand:
LangChain's ``HumanInTheLoopMiddleware`` (batched ``HITLRequest``, per-call
``ToolApprovalRequest``), LangGraph's Agent Inbox, choice lists (a ``response_schema``
enum or an ``options`` list), and plain questions. Decisions use LangChain's vocabulary
(approve, edit, reject, respond) in every format; a decision the wait does not allow
is refused with what it does allow (:class:`DecisionError`). Pure: no I/O.

>>> review = read_request({"action_requests": [{"name": "send", "args": {"to": "a"}}],
...                        "review_configs": [{"action_name": "send",
...                                            "allowed_decisions": ["approve"]}]})
>>> answer(review, "approve")
{'decisions': [{'type': 'approve'}]}
"""

from __future__ import annotations

from workers.decisions._answer import DecisionInput, action_filter, answer
from workers.decisions._model import (
    DECISIONS,
    Action,
    Choices,
    Decision,
    DecisionError,
    DecisionType,
    Option,
    Question,
    Request,
    Review,
    decisions_of,
)
from workers.decisions._read import read_request, schema_decisions

__all__ = (
    "DECISIONS",
    "Action",
    "Choices",
    "Decision",
    "DecisionError",
    "DecisionInput",
    "DecisionType",
    "Option",
    "Question",
    "Request",
    "Review",
    "action_filter",
    "answer",
    "decisions_of",
    "read_request",
    "schema_decisions",
)
