"""A two-node graph that pauses for a human answer and resumes.

Run it with ``make demo`` (or ``python -m examples.demo``). The code is the same as
with LangGraph: only the import prefix differs.
"""

from __future__ import annotations

from typing import TypedDict

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.errors import InvalidResumeError
from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Command, interrupt


class State(TypedDict, total=False):
    topic: str
    draft: str
    verdict: str


def write_draft(state: State) -> State:
    return {"draft": f"Three facts about {state['topic']}."}


def review(state: State) -> State:
    # Pauses the run; the value passed to Command(resume=...) becomes the return value.
    answer = interrupt({"question": "Publish this draft?", "draft": state["draft"]})
    return {"verdict": "published" if answer == "yes" else "rejected"}


def main() -> None:
    builder = StateGraph(State)
    builder.add_node("write_draft", write_draft)
    builder.add_node("review", review)
    builder.add_edge(START, "write_draft")
    builder.add_edge("write_draft", "review")
    builder.add_edge("review", END)
    graph = builder.compile(checkpointer=InMemorySaver())

    config: RunnableConfig = {"configurable": {"thread_id": "demo-1"}}

    paused = graph.invoke({"topic": "checkpoints"}, config)
    print("paused at:", graph.get_state(config).next)
    print("interrupt:", paused["__interrupt__"][0].value)

    final = graph.invoke(Command(resume="yes"), config)
    print("final state:", final)

    # The thread has no pending interrupt any more: graphruntime says so (LangGraph would
    # silently store the resume value).
    try:
        graph.invoke(Command(resume="yes again"), config)
    except InvalidResumeError as exc:
        print("second resume rejected:", exc)


if __name__ == "__main__":
    main()
