"""One langgraph-sdk scenario over every endpoint, run against `langgraph dev` and against
`graphrun serve`; :func:`run` returns what each step answered, in order, for
:mod:`tests.api_diff.normalize` to compare."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
from langgraph_sdk import get_sync_client

APPROVAL, CHAIN, FAILING = "api_approval", "api_chain", "api_failing"
SYSTEM_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")


def system_assistant(graph: str) -> str:
    return str(uuid.uuid5(SYSTEM_NAMESPACE, graph))


class Steps:
    """Each step's answer (or its HTTP status when refused), by name."""

    def __init__(self) -> None:
        self.answers: list[tuple[str, Any]] = []

    def __call__(self, name: str, call: Callable[[], Any]) -> Any:
        try:
            value = call()
        except httpx.HTTPStatusError as exc:
            value = {"http_status": exc.response.status_code}
        except Exception as exc:  # noqa: BLE001 - the SDK raises a run's error from wait()
            value = {"raised": f"{type(exc).__name__}: {exc}"}
        self.answers.append((name, value))
        return value


def _parts(stream: Any) -> list[Any]:
    return [[part.event, part.data] for part in stream]


def run(url: str) -> list[tuple[str, Any]]:
    client: Any = get_sync_client(url=url)
    step = Steps()
    approval = system_assistant(APPROVAL)

    # --- assistants ---------------------------------------------------------------------
    step("assistants.search", lambda: client.assistants.search(graph_id=APPROVAL))
    step("assistants.get", lambda: client.assistants.get(approval))
    step("assistants.count", lambda: client.assistants.count(graph_id=APPROVAL))
    step("assistants.get_graph", lambda: client.assistants.get_graph(APPROVAL))
    step("assistants.get_schemas", lambda: client.assistants.get_schemas(approval))
    made = step(
        "assistants.create",
        lambda: client.assistants.create(
            APPROVAL, config={"tags": ["a"]}, metadata={"team": "ops"}, name="ops"
        ),
    )
    mine = made["assistant_id"]
    step(
        "assistants.update",
        lambda: client.assistants.update(mine, metadata={"level": 2}, name="ops2"),
    )
    step("assistants.get_versions", lambda: client.assistants.get_versions(mine))
    step("assistants.set_latest", lambda: client.assistants.set_latest(mine, 1))
    step("assistants.search.metadata", lambda: client.assistants.search(metadata={"team": "ops"}))
    step("assistants.delete", lambda: client.assistants.delete(mine))
    step("assistants.get.deleted", lambda: client.assistants.get(mine))

    # --- threads ------------------------------------------------------------------------
    marker = uuid.uuid4().hex
    thread = step("threads.create", lambda: client.threads.create(metadata={"case": marker}))
    tid = thread["thread_id"]
    step("threads.get.new", lambda: client.threads.get(tid))
    step("threads.get_state.new", lambda: client.threads.get_state(tid))
    step(
        "threads.create.exists",
        lambda: client.threads.create(thread_id=tid, if_exists="raise"),
    )
    step(
        "threads.create.do_nothing",
        lambda: client.threads.create(thread_id=tid, if_exists="do_nothing"),
    )
    step("threads.update", lambda: client.threads.update(tid, metadata={"owner": "ann"}))

    # --- a run that waits for a human ------------------------------------------------------
    step(
        "runs.stream.interrupt",
        lambda: _parts(
            client.runs.stream(
                tid,
                APPROVAL,
                input={"topic": "cats"},
                stream_mode=["values", "updates"],
                stream_resumable=True,
            )
        ),
    )
    step("threads.get.interrupted", lambda: client.threads.get(tid))
    step("threads.get_state.interrupted", lambda: client.threads.get_state(tid))
    step(
        "threads.search.interrupted",
        lambda: client.threads.search(status="interrupted", metadata={"case": marker}),
    )
    step(
        "threads.count.interrupted",
        lambda: client.threads.count(status="interrupted", metadata={"case": marker}),
    )
    step(
        "runs.create.reject_busy_thread_is_not_busy",
        lambda: client.runs.list(tid),
    )
    step(
        "runs.wait.resume",
        lambda: client.runs.wait(tid, APPROVAL, command={"resume": "yes"}),
    )
    step("threads.get.done", lambda: client.threads.get(tid))
    step("threads.search.metadata", lambda: client.threads.search(metadata={"case": marker}))
    step("threads.count", lambda: client.threads.count(metadata={"case": marker}))
    step("runs.list", lambda: client.runs.list(tid))
    runs = client.runs.list(tid)
    step("runs.get", lambda: client.runs.get(tid, runs[0]["run_id"]))
    step("threads.get_history", lambda: client.threads.get_history(tid, limit=2))
    history = client.threads.get_history(tid, limit=10)
    paused = next(h for h in history if h["next"] == ["review"])
    step(
        "threads.get_state.checkpoint",
        lambda: client.threads.get_state(tid, checkpoint_id=paused["checkpoint_id"]),
    )
    step(
        "threads.update_state",
        lambda: client.threads.update_state(tid, {"answer": "edited"}, as_node="publish"),
    )
    step("threads.get_state.edited", lambda: client.threads.get_state(tid))
    step(
        "runs.wait.resume.nothing_pending",
        lambda: client.runs.wait(tid, APPROVAL, command={"resume": "again"}),
    )

    # --- Agent Inbox's "ignore": update_state(None, as_node=END) on a paused thread ---------
    inbox = client.threads.create(metadata={"case": marker, "inbox": True})
    client.runs.wait(inbox["thread_id"], APPROVAL, input={"topic": "dogs"})
    step(
        "threads.update_state.end",
        lambda: client.threads.update_state(inbox["thread_id"], None, as_node="__end__"),
    )
    step("threads.get.ignored", lambda: client.threads.get(inbox["thread_id"]))

    # --- background runs, join, stateless runs --------------------------------------------
    other = client.threads.create()
    started = client.runs.create(other["thread_id"], CHAIN, input={"topic": "x"})
    # its status depends on how fast the workers are: pending, running or success
    step("runs.create", lambda: {k: v for k, v in started.items() if k != "status"})
    step("runs.join", lambda: client.runs.join(other["thread_id"], started["run_id"]))
    step(
        "runs.join_stream.after_end",
        lambda: _parts(client.runs.join_stream(other["thread_id"], started["run_id"])),
    )
    step(
        "runs.stream.custom",
        lambda: _parts(
            client.runs.stream(
                other["thread_id"], CHAIN, input={"topic": "y"}, stream_mode=["updates", "custom"]
            )
        ),
    )
    step("runs.wait.stateless", lambda: client.runs.wait(None, CHAIN, input={"topic": "z"}))
    step(
        "runs.stream.stateless",
        lambda: _parts(client.runs.stream(None, CHAIN, input={"topic": "w"})),
    )
    step(
        "runs.create.if_not_exists",
        lambda: client.runs.wait(
            str(uuid.uuid4()), CHAIN, input={"topic": "v"}, if_not_exists="create"
        ),
    )

    # --- a chat, as Agent Chat UI streams it -------------------------------------------------
    step(
        "runs.stream.chat",
        lambda: _parts(
            client.runs.stream(
                None,
                "api_chat",
                input={"messages": [{"type": "human", "content": "hi", "id": "m-1"}]},
                stream_mode=["values", "messages-tuple"],
            )
        ),
    )

    # --- Agent Inbox's resume: stream_mode "events", read for each node's on_chain_start ---
    waiting = client.threads.create()
    client.runs.wait(waiting["thread_id"], APPROVAL, input={"topic": "inbox"})
    step(
        "runs.stream.events.nodes",
        lambda: [
            (p.data["event"], p.data["metadata"]["langgraph_node"])
            for p in client.runs.stream(
                waiting["thread_id"], APPROVAL, command={"resume": "yes"}, stream_mode="events"
            )
            if p.event == "events"
            and p.data.get("event") in ("on_chain_start", "on_chain_end")
            and p.data.get("metadata", {}).get("langgraph_node") == p.data.get("name")
        ],
    )

    # --- errors -------------------------------------------------------------------------
    failed = client.threads.create()
    step(
        "runs.wait.error",
        lambda: client.runs.wait(failed["thread_id"], FAILING, input={"topic": "boom"}),
    )
    step("threads.get.error", lambda: client.threads.get(failed["thread_id"]))
    step(
        "runs.stream.error",
        lambda: _parts(client.runs.stream(None, FAILING, input={"topic": "bang"})),
    )
    missing = str(uuid.uuid4())
    step("threads.get.missing", lambda: client.threads.get(missing))
    step(
        "runs.create.missing_thread",
        lambda: client.runs.create(missing, CHAIN, input={"topic": "x"}),
    )
    step(
        "runs.create.missing_assistant",
        lambda: client.runs.create(tid, str(uuid.uuid4()), input={"topic": "x"}),
    )
    step(
        "runs.create.bad_body",
        lambda: client.http.post(f"/threads/{tid}/runs", json={"input": {}}),
    )
    step("runs.get.missing", lambda: client.runs.get(tid, str(uuid.uuid4())))

    # --- copy, delete -----------------------------------------------------------------------
    copied = step("threads.copy", lambda: client.threads.copy(tid))
    step("threads.get_state.copy", lambda: client.threads.get_state(copied["thread_id"]))
    step("threads.delete", lambda: client.threads.delete(copied["thread_id"]))
    step("threads.get.deleted", lambda: client.threads.get(copied["thread_id"]))

    # --- store ------------------------------------------------------------------------------
    ns = ["diff", marker]
    step("store.put_item", lambda: client.store.put_item(ns, "k1", {"color": "red"}))
    step("store.put_item.2", lambda: client.store.put_item(ns, "k2", {"color": "blue"}))
    step("store.get_item", lambda: client.store.get_item(ns, "k1"))
    step(
        "store.search_items",
        lambda: client.store.search_items(ns, filter={"color": "blue"}),
    )
    step("store.list_namespaces", lambda: client.store.list_namespaces(prefix=ns))
    step("store.delete_item", lambda: client.store.delete_item(ns, "k1"))
    step("store.get_item.deleted", lambda: client.store.get_item(ns, "k1"))

    # --- crons ------------------------------------------------------------------------------
    cron = step(
        "crons.create_for_thread",
        lambda: client.crons.create_for_thread(
            tid, APPROVAL, schedule="0 0 1 1 *", input={"topic": "yearly"}
        ),
    )
    step("crons.search", lambda: client.crons.search(thread_id=tid))
    step("crons.count", lambda: client.crons.count(thread_id=tid))
    step("crons.delete", lambda: client.crons.delete(cron["cron_id"]))
    step("crons.count.after", lambda: client.crons.count(thread_id=tid))
    return step.answers
