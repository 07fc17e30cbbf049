"""The error tree holds for every raise a user can see.

Every ``raise`` in graphruntime, checkpoint_pg and workers raises a class that derives
from :class:`graphruntime.errors.GraphRuntimeError` (a subclass that also derives from
``ValueError``/``TypeError``/... where callers expect the built-in). The scan is by AST:
a ``raise`` of a built-in exception class fails, except where the rules below say a
built-in is what the protocol asks for, or the allow-list names the place and the reason.
Every exception class the packages define must derive from the tree too.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("graphruntime", "checkpoint_pg", "workers")

BUILTIN_EXCEPTIONS = frozenset(
    name
    for name in dir(builtins)
    if isinstance(getattr(builtins, name), type)
    and issubclass(getattr(builtins, name), BaseException)
)

# Decorators of pydantic validators: a ValueError/AssertionError raised there becomes the
# model's ValidationError, which is what pydantic's callers catch.
VALIDATOR_DECORATORS = frozenset(
    {"field_validator", "model_validator", "validator", "root_validator", "field_serializer"}
)

# Dunder methods whose protocol is a built-in exception (getattr(), dict access, iteration).
PROTOCOL_RAISES: dict[str, frozenset[str]] = {
    "__getattr__": frozenset({"AttributeError"}),
    "__getattribute__": frozenset({"AttributeError"}),
    "__getitem__": frozenset({"KeyError", "IndexError"}),
    "__delitem__": frozenset({"KeyError"}),
    "__next__": frozenset({"StopIteration"}),
    "__anext__": frozenset({"StopAsyncIteration"}),
}

# AssertionError marks a state the code makes impossible (a bug here, never a user's).
ALWAYS_ALLOWED = frozenset({"AssertionError"})

# Raises still of a built-in class, each with why. Keys: (path, enclosing function, class).
ALLOWED: dict[tuple[str, str, str], str] = {
    ("workers/messages.py", "_path", "ValueError"): (
        "called only from TaskPath's pydantic validator, which turns it into the "
        "message's ValidationError"
    ),
    ("graphruntime/stream/run_stream.py", "_missing_projection", "AttributeError"): (
        "the body of the run streams' __getattr__: getattr() and hasattr() need an AttributeError"
    ),
}

# Exception classes outside the tree, each with why it never reaches a user.
ALLOWED_CLASSES: dict[tuple[str, str], str] = {
    ("graphruntime/checkpoint/_serde_kinds.py", "Refusal"): (
        "the encoder's internal signal; serde turns it into a SerializationError"
    ),
    ("workers/errors.py", "RemoteTraceback"): (
        "never raised: the worker's traceback text, set as the rebuilt error's __cause__"
    ),
}


@dataclass(frozen=True)
class Raise:
    path: str
    line: int
    function: str
    name: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.path, self.function, self.name)

    def __str__(self) -> str:
        return f"{self.path}:{self.line} in {self.function}(): raise {self.name}"


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            path = file.relative_to(ROOT).as_posix()
            yield path, ast.parse(file.read_text("utf-8"), filename=path)


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _raised_name(node: ast.Raise) -> str | None:
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    return exc.id if isinstance(exc, ast.Name) else None


def _only_raises(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body that is only (a docstring and) a raise: an abstract or protocol method."""
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return len(body) == 1 and isinstance(body[0], ast.Raise)


def _builtin_raises(path: str, tree: ast.Module) -> Iterator[Raise]:
    def visit(node: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child)
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                name = _raised_name(child)
                if name in BUILTIN_EXCEPTIONS and not _allowed_by_rule(name, function):
                    found.append(Raise(path, child.lineno, _name(function), name))
            visit(child, function)

    found: list[Raise] = []
    visit(tree, None)
    yield from found


def _name(function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> str:
    return "<module>" if function is None else function.name


def _allowed_by_rule(name: str, function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> bool:
    if name in ALWAYS_ALLOWED:
        return True
    if function is None:
        return False
    if name in PROTOCOL_RAISES.get(function.name, ()):
        return True
    decorators = {_decorator_name(d) for d in function.decorator_list}
    if decorators & VALIDATOR_DECORATORS:
        return name in ("ValueError", "AssertionError")
    if name == "NotImplementedError":
        return "abstractmethod" in decorators or _only_raises(function)
    return False


def _all_builtin_raises() -> list[Raise]:
    return [r for path, tree in _sources() for r in _builtin_raises(path, tree)]


def test_no_raise_of_a_builtin_exception() -> None:
    offending = [str(r) for r in _all_builtin_raises() if r.key not in ALLOWED]
    assert not offending, (
        "raise a class of the error tree (graphruntime.errors, checkpoint_pg.errors, "
        "workers.errors; one that also derives from the built-in where callers expect it):\n"
        + "\n".join(offending)
    )


def test_every_allowance_is_still_needed() -> None:
    found = {r.key for r in _all_builtin_raises()}
    stale = [key for key in ALLOWED if key not in found]
    assert not stale, f"remove these allow-list entries, nothing raises there now: {stale}"


def _exception_classes() -> Iterator[tuple[str, ast.ClassDef]]:
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                yield path, node


def _base_names(node: ast.ClassDef) -> list[str]:
    names = []
    for base in node.bases:
        if isinstance(base, ast.Attribute):
            names.append(base.attr)
        elif isinstance(base, ast.Name):
            names.append(base.id)
    return names


def test_every_exception_class_derives_from_the_tree() -> None:
    classes = list(_exception_classes())
    in_tree = {"GraphRuntimeError"}
    grew = True
    while grew:  # a class is in the tree when one of its bases is
        grew = False
        for _, node in classes:
            if node.name not in in_tree and any(b in in_tree for b in _base_names(node)):
                in_tree.add(node.name)
                grew = True
    outside = [
        f"{path}:{node.lineno} class {node.name}"
        for path, node in classes
        if node.name not in in_tree
        and any(b in BUILTIN_EXCEPTIONS for b in _base_names(node))
        and not any(b.endswith("Warning") for b in _base_names(node))  # warned, not raised
        and (path, node.name) not in ALLOWED_CLASSES
    ]
    assert not outside, "derive these from the package's root error:\n" + "\n".join(outside)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f():\n    raise ValueError('x')\n", ["ValueError"]),
        ("def f():\n    raise TypeError\n", ["TypeError"]),
        ("raise ImportError('x')\n", ["ImportError"]),
        ("def f(e):\n    raise e\n", []),
        ("def f():\n    try:\n        pass\n    except ValueError:\n        raise\n", []),
        ("def __getattr__(name):\n    raise AttributeError(name)\n", []),
        ("def f(name):\n    raise AttributeError(name)\n", ["AttributeError"]),
        ("class A:\n    def run(self):\n        raise NotImplementedError\n", []),
        (
            "class A:\n    def run(self):\n        x = 1\n        raise NotImplementedError(x)\n",
            ["NotImplementedError"],
        ),
        (
            "class M:\n    @field_validator('a')\n    def check(cls, v):\n"
            "        raise ValueError('bad')\n",
            [],
        ),
        (
            "class M:\n    @field_validator('a')\n    def check(cls, v):\n"
            "        raise TypeError('bad')\n",
            ["TypeError"],
        ),
    ],
)
def test_the_scan_finds_what_it_should(source: str, expected: list[str]) -> None:
    assert [r.name for r in _builtin_raises("x.py", ast.parse(source))] == expected


def test_the_general_classes_belong_to_graphruntime_errors() -> None:
    """They are defined below graphruntime.errors (so the lowest modules can raise them)
    but name it as their home: users import them there, and pickle and the workers'
    rebuild of a remote error find them there."""
    import pickle

    import graphruntime.errors as errors
    from workers.errors import error_info, rebuild_error

    general = (
        errors.GraphRuntimeError,
        errors.InvalidArgumentError,
        errors.InvalidArgumentTypeError,
        errors.UsageError,
        errors.NotSupportedError,
        errors.MissingDependencyError,
    )
    for cls in general:
        assert cls.__module__ == "graphruntime.errors"
        assert getattr(errors, cls.__name__) is cls
        assert cls.__name__ in errors.__all__
        error = cls("what was wrong; what to do")
        assert type(pickle.loads(pickle.dumps(error))) is cls
        rebuilt = rebuild_error(error_info(error))
        assert type(rebuilt) is cls
        assert str(rebuilt) == "what was wrong; what to do"
    assert issubclass(errors.InvalidArgumentError, ValueError)
    assert issubclass(errors.InvalidArgumentTypeError, TypeError)
    assert issubclass(errors.UsageError, RuntimeError)
    assert issubclass(errors.NotSupportedError, NotImplementedError)
    assert issubclass(errors.MissingDependencyError, ImportError)
