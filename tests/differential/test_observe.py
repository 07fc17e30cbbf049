"""The normalization must hide id values but keep every other difference visible."""

from __future__ import annotations

from .observe import ErrorObs, IdRoles, Recorder, normalize, same

TASK_A = "7e5e9ce4-4854-00f8-1940-6afcb918150a"
TASK_B = "4d1534e5-d660-0823-324e-23f7c93fb984"
INTERRUPT = "5dc5df8120dbab62d2cca8a9dd67033d"


class GraphValidationError(ValueError):
    """Stands in for graphruntime's subclass of a built-in error."""


def test_ids_become_roles_by_first_appearance() -> None:
    roles = IdRoles()
    value = {"a": TASK_A, "b": [TASK_B, f"sub:{TASK_A}|inner:{TASK_B}"], "i": INTERRUPT}
    assert normalize(value, roles) == {
        "a": "<id0>",
        "b": ["<id1>", "sub:<id0>|inner:<id1>"],
        "i": "<id2>",
    }


def test_non_ids_are_untouched() -> None:
    roles = IdRoles()
    assert normalize(["abc", "0123", "ABCDEF0123456789ABCDEF0123456789"], roles) == [
        "abc",
        "0123",
        "ABCDEF0123456789ABCDEF0123456789",
    ]


def test_tuple_and_list_stay_distinct() -> None:
    roles = IdRoles()
    assert not same(normalize((1, 2), roles), normalize([1, 2], roles))


def test_error_subclass_of_the_oracle_builtin_matches() -> None:
    roles = IdRoles()
    oracle = ErrorObs.of(ValueError("bad graph"), roles)
    assert same(oracle, ErrorObs.of(GraphValidationError("bad graph"), roles))
    assert not same(oracle, ErrorObs.of(GraphValidationError("other message"), roles))
    assert not same(oracle, ErrorObs.of(TypeError("bad graph"), roles))


def test_interrupt_lists_are_order_free() -> None:
    class Interrupt:
        def __init__(self, value: str, id: str) -> None:
            self.value, self.id = value, id

        def __repr__(self) -> str:
            return f"Interrupt({self.value!r}, {self.id!r})"

    first, second = Interrupt("left", TASK_A), Interrupt("right", TASK_B)
    a = normalize({"__interrupt__": [first, second]}, IdRoles())
    b = normalize({"__interrupt__": [second, first]}, IdRoles())
    assert a == b


def test_recorder_captures_errors_and_counts() -> None:
    def boom() -> None:
        raise KeyError("missing")

    rec = Recorder()
    rec.count("node")
    with rec.expect_error("boom"):
        boom()
    with rec.expect_error("fine"):
        pass
    entries = rec.finish()
    label, (kind, error) = entries[0]
    assert (label, kind, error.type, error.message) == ("boom", "raised", "KeyError", "'missing'")
    assert entries[1:] == [("fine", ("no error",)), ("final counts", {"node": 1})]


def test_an_error_stored_as_text_matches_a_subclass_of_the_builtin() -> None:
    assert same("ValueError('no destination')", "InvalidArgumentError('no destination')")
    assert not same("ValueError('no destination')", "InvalidArgumentError('other')")
    assert not same("TypeError('no destination')", "InvalidArgumentError('no destination')")
    assert not same("ValueError('x')", "NotAnError('x')")
