"""Seed example from shared/seeds/004_ffe582f2959067ea.txt,
section "使用多个中断 -> 扩展示例:引入非确定性的错误代码"
(seed lines 705-758).

Command(resume=..., update=...) changes which interrupt() calls happen, so the
answer lands on the wrong interrupt (index-based matching).

The seed says it prints:

    {'__interrupt__': (Interrupt(value='what is your name?', resumable=True, ns=[...],
        when='during'),)}
    Name: N/A. Age: John
    {'human_node': {'age': 'John', 'name': 'N/A'}}

The code below is the seed text verbatim, written against ``langgraph``;
tests/seeds/test_seed_examples.py also runs it with the import prefix swapped to
``graphruntime``.
"""
import uuid
from typing import TypedDict, Optional

from langgraph.graph import StateGraph
from langgraph.constants import START 
from langgraph.types import interrupt, Command
from langgraph.checkpoint.memory import MemorySaver


class State(TypedDict):
    """The graph state."""

    age: Optional[str]
    name: Optional[str]


def human_node(state: State):
    if not state.get('name'):
        name = interrupt("what is your name?")
    else:
        name = "N/A"

    if not state.get('age'):
        age = interrupt("what is your age?")
    else:
        age = "N/A"

    print(f"Name: {name}. Age: {age}")

    return {
        "age": age,
        "name": name,
    }


builder = StateGraph(State)
builder.add_node("human_node", human_node)
builder.add_edge(START, "human_node")

# A checkpointer must be enabled for interrupts to work!
checkpointer = MemorySaver()
graph = builder.compile(checkpointer=checkpointer)

config = {
    "configurable": {
        "thread_id": uuid.uuid4(),
    }
}

for chunk in graph.stream({"age": None, "name": None}, config):
    print(chunk)

for chunk in graph.stream(Command(resume="John", update={"name": "foo"}), config):
    print(chunk)
