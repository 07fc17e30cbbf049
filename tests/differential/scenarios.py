"""The differential corpus: which scenario covers which item of the issue.

Scenarios live in themed modules and register themselves with ``@scenario``
(:mod:`.registry`); :func:`load_all` imports them all. ``test_differential`` runs each one
on langgraph (the oracle) and on graphruntime and compares the normalized transcripts;
``python -m tests.differential.show`` prints them.

Items of the issue: 1 state schemas and reducers · 2 channels · 3 builder · 4 execution ·
5 interrupts · 6 state API · 7 stream modes · X extras (Overwrite, unknown input keys,
input/output schema, get_config).

=================================== ======= ===============================================
scenario                            items   pins
=================================== ======= ===============================================
**scenarios_schemas**
typeddict_chain                     1 3 7   TypedDict chain, None return, second input
dataclass_state                     1       dataclass in/out, defaults written on input
pydantic_state                      1       pydantic model in nodes, ValidationError
annotated_reducers                  1 2     list/int/custom reducers, defaults visible
last_value_conflict                 2 4     InvalidUpdateError; get_state raises after
reducer_order_is_task_path_order    2 4     fold order = node name, then Send index
named_barrier                       2 3     add_edge([a, b], c) across different depths
ephemeral_triggers                  2 4     branch triggers last one step; loops
overwrite                           X 2     Overwrite / __overwrite__, two → error
input_keys_not_in_schema            X       unknown input/update keys ignored
input_output_schema                 X 7     input_schema / output_schema
**scenarios_builder**
add_sequence                        3       add_sequence, names, errors
entry_and_finish_point              3       set_entry_point / set_finish_point, name=
conditional_path_map                3       dict and list path maps, END, fan-out list
router_errors                       3 4     None / unmapped label / Send(END)
node_return_errors                  3 4     non-dict node return → InvalidUpdateError
invalid_graph_nodes                 3       duplicate / reserved node names
invalid_graph_edges                 3       invalid edges: which call raises, message
send_map_reduce                     2 3 4   Send map-reduce, topic, push task paths
send_from_start                     2 3     Sends from START, empty fan-out
**scenarios_execution**
parallel_superstep                  4 7     concurrent tasks, join, per-step values
command_goto_update                 4       Command(goto, update) + static edges, END
command_goto_send                   4       Command(goto=[Send, name])
command_list_return                 4       list of Commands and dicts
command_parent_as_input             4       Command(graph=PARENT) as input → error
command_goto_input                  4 6     Command(goto/update/Send) as input
recursion_limit                     4       limit N vs chain of N, resumed run, limit 0
recursion_limit_loop                4 6     endless loop, state after the error
retry_policy                        4       max_attempts, retry_on (type/tuple/callable)
retry_never_retries_interrupt       4 5     GraphInterrupt is never retried
failed_node_keeps_sibling_writes    4 6     error → pending writes, invoke(None) re-runs
async_nodes                         4 6 7   async nodes, ainvoke/astream/aget_state
async_failure_and_interrupt         4 5     async failure, interrupt, resume
get_config_in_nodes                 X       get_config in nodes/routers, metadata
**scenarios_interrupts**
interrupt_basic                     5 6     __interrupt__, get_state, resume re-runs node
interrupt_several_in_one_node       5       several interrupts matched by index
interrupt_parallel_resume_map       5 6     plain resume refused, resume map by id
interrupt_resume_map_all_at_once    5 2     one map for Send fan-out interrupts
interrupt_in_router                 5       interrupt in a router re-runs its source
interrupt_resume_values             5       falsy values, non-hex dicts as plain values
interrupt_resume_with_update        5       Command(resume=..., update=...)
new_input_discards_interrupt        5 6     new input replaces a pending interrupt
interrupt_stream_modes              5 7     __interrupt__ in updates/values/list modes
interrupt_without_checkpointer      5       interrupt with no saver; errors after
interrupt_before_compile            5 3 7   static interrupt_before, resume with None
interrupt_after_compile             5 3     static interrupt_after, "*"
interrupt_at_invoke_time            5       interrupt_before/after passed to invoke/stream
breakpoint_then_dynamic             5       breakpoint first, then interrupt()
resume_no_pending_interrupt_agreed  5 6     the agreed part of a resume with no interrupt
**scenarios_subgraphs**
subgraph_as_node                    5 7     subgraph node, stream(subgraphs=True)
subgraph_interrupt_as_node          5 6     child interrupt, child state, resume
subgraph_stream_interrupt_resume    5 7     namespaced chunks through interrupt/resume
subgraph_invoked_in_node            5       child.invoke() inside a node, resume
subgraph_called_twice_in_node       5       two child runs in one node
nested_subgraphs                    5 6     two levels, "|" namespaces, get_state
subgraph_error_resume               4 5     child failure, invoke(None) resumes inside
command_parent                      4       Command(graph=PARENT, goto, update)
subgraph_update_state               5 6     update_state on a child namespace
**scenarios_state_api**
get_state_snapshots                 6       snapshot fields, unknown thread, by id
history_limit_before_filter         6       get_state_history limit/before/filter
record_view_vs_live_view            5 6     live vs record view of interrupts
update_state_as_node                6       as_node inferred/explicit/unknown
update_state_special_nodes          6       fresh thread, as_node=END, ambiguity
update_state_during_interrupt       5 6     edit while paused, then resume
time_travel_replay                  6       invoke(None, old checkpoint) forks
time_travel_update_fork             6       update_state on an old checkpoint
update_only_command_input           6       Command(update) on a finished thread
empty_input                         4 6     EmptyInputError, invoke(None) no-op
**scenarios_streams**
stream_modes                        7       values/updates/custom/list of modes
stream_custom_parallel_and_async    7 4     custom from parallel/async/subgraph nodes
stream_values_per_step              7       one values chunk per step
**scenarios_loop**
stream_tasks_checkpoints_debug      7       tasks/checkpoints/debug modes, subgraphs
durability_exit                     7       durability sync/async/exit: saved history
stateful_subgraph                   5 6     checkpointer=True: accumulates, replays
child_graph_own_thread              5       a child graph with its own thread saves
bulk_update_state                   6       bulk_update_state, copy with updates
**scenarios_nodes**
runtime_context                     X 4     context= coerced, Runtime in nodes/subgraphs
node_attempts                       4       execution_info.node_attempt across retries
error_handlers                      4       error_handler=, NodeError, set_node_defaults
error_handler_resumes               4 6     a crashed handler reruns, not the node
root_state                          1 6 7   one-value state (__root__), dict state
managed_values                      1       RemainingSteps / IsLastStep, not stored
store_injection                     X       compile(store=), get_store, subgraphs
node_cache                          4 7     cache_policy, cached updates, clear_cache
untracked_value                     2 6     UntrackedValue through Send, never saved
run_control_drain                   4 6     RunControl.request_drain, GraphDrained
node_timeout                        4       async timeouts, retried, sync refused
**scenarios_functional**
functional_calls                    4 6 7   @task rounds, dependent and failing calls
functional_interrupt                5 6     a task interrupts; resume; entrypoint.final
functional_async                    4       async entrypoint gathering async tasks
=================================== ======= ===============================================

Deliberate differences from LangGraph are tested in ``test_intentional_differences``; the
scenarios touching them record only what both runtimes agree on.
"""

from __future__ import annotations

import importlib

__all__ = ("THEMES", "load_all")

THEMES = (
    "scenarios_schemas",
    "scenarios_builder",
    "scenarios_execution",
    "scenarios_interrupts",
    "scenarios_subgraphs",
    "scenarios_state_api",
    "scenarios_streams",
    "scenarios_loop",
    "scenarios_nodes",
    "scenarios_functional",
)


def load_all() -> None:
    """Import every themed module so its scenarios are registered."""
    for theme in THEMES:
        importlib.import_module(f"{__package__}.{theme}")
