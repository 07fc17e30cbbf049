"""Which classes the serializer writes and instantiates: stored data never chooses one."""

from __future__ import annotations

import dataclasses
import enum
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Generic, TypeVar

import pytest
from pydantic import BaseModel

from graphruntime.checkpoint import (
    JsonSerializer,
    check_round_trip,
    parse_allowed_classes,
)
from graphruntime.errors import CheckpointError, SerializationError
from graphruntime.types import Interrupt, PregelTask, StateSnapshot
from tests.unit.checkpoint.serde_cases import Box, Color, Holder, Pair, same

ROOT = Path(__file__).resolve().parents[3]


def _payload(tag: str, cls: str, v: Any) -> tuple[str, bytes]:
    return "json", json.dumps({"__gr__": tag, "cls": cls, "v": v, "set": []}).encode()


@dataclasses.dataclass
class NeverDumped:
    """Importable and imported, but nothing ever stores one: loading must refuse it."""

    command: str = "rm -rf /"


class Shade(enum.Enum):
    DARK = 1


T = TypeVar("T")


class Wrapper(BaseModel, Generic[T]):
    value: T


# -- stored data never picks a class ---------------------------------------------------------


def test_refuses_to_import_modules_named_by_stored_data() -> None:
    module = "gr_never_imported_module"
    with pytest.raises(SerializationError) as info:
        JsonSerializer().loads_typed(_payload("dataclass", f"{module}:Thing", {}))
    message = str(info.value)
    assert module in message
    assert "allowed_modules" in message
    assert module not in sys.modules


@pytest.mark.parametrize(
    ("tag", "cls"),
    [
        ("dataclass", f"{__name__}:NeverDumped"),  # imported, never dumped: not allowed
        ("pydantic", "pydantic_settings:BaseSettings"),
        ("dataclass", "collections:OrderedDict"),
        ("namedtuple", "builtins:tuple"),
        ("pydantic", "os:system"),
        ("pydantic", "langchain_core.messages.base:BaseMessage"),  # not in the message list
    ],
)
def test_refuses_classes_outside_the_allowlist(tag: str, cls: str) -> None:
    with pytest.raises(SerializationError, match=r"Refusing to load class .*allowlist"):
        JsonSerializer().loads_typed(_payload(tag, cls, {}))


def test_refuses_a_class_stored_under_another_kind() -> None:
    serde = JsonSerializer(allowed_classes=[Shade])
    with pytest.raises(SerializationError, match="as a dataclass: it is a Enum"):
        serde.loads_typed(_payload("dataclass", f"{__name__}:Shade", {}))
    assert serde.loads_typed(("json", json.dumps(_enum("Shade", 1)).encode())) is Shade.DARK


def _enum(name: str, v: Any) -> dict[str, Any]:
    return {"__gr__": "enum", "cls": f"{__name__}:{name}", "v": v}


def _package(tmp_path: Path, name: str, source: str) -> None:
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(textwrap.dedent(source))


def test_allowed_modules_may_be_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _package(
        tmp_path,
        "gr_allowed_pkg",
        """
        import dataclasses

        @dataclasses.dataclass
        class Thing:
            n: int
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    data = _payload("dataclass", "gr_allowed_pkg.models:Thing", {"n": 3})
    with pytest.raises(SerializationError, match="Refusing"):
        JsonSerializer().loads_typed(data)
    assert "gr_allowed_pkg.models" not in sys.modules
    # A prefix must end at a dot: "gr_allowed" does not allow "gr_allowed_pkg".
    with pytest.raises(SerializationError, match="Refusing"):
        JsonSerializer(allowed_modules=["gr_allowed"]).loads_typed(data)
    try:
        thing = JsonSerializer(allowed_modules=["gr_allowed_pkg"]).loads_typed(data)
        assert type(thing).__qualname__ == "Thing"
        assert thing.n == 3
    finally:
        sys.modules.pop("gr_allowed_pkg.models", None)
        sys.modules.pop("gr_allowed_pkg", None)


def test_allowed_modules_resolve_names_only_through_namespaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _package(
        tmp_path,
        "gr_walk_pkg",
        """
        import dataclasses
        import types

        @dataclasses.dataclass
        class Thing:
            n: int

        Alias = Thing
        holder = types.SimpleNamespace(Thing=Thing)

        def __getattr__(name):
            raise AssertionError(f"module __getattr__ called for {name}")
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    serde = JsonSerializer(allowed_modules=["gr_walk_pkg"])
    try:
        for name in ("gr_walk_pkg.models:Alias", "gr_walk_pkg.models:holder.Thing"):
            with pytest.raises(SerializationError, match="Refusing"):
                serde.loads_typed(_payload("dataclass", name, {"n": 1}))
        # Hidden behind module __getattr__ (never called): not found, refused.
        with pytest.raises(SerializationError, match="Refusing"):
            serde.loads_typed(_payload("dataclass", "gr_walk_pkg.models:Lazy", {"n": 1}))
        assert serde.loads_typed(_payload("dataclass", "gr_walk_pkg.models:Thing", {"n": 1}))
    finally:
        sys.modules.pop("gr_walk_pkg.models", None)
        sys.modules.pop("gr_walk_pkg", None)


# -- a plain JsonSerializer(): classes this process dumped ----------------------------------------


def test_local_classes_load_in_the_process_that_dumped_them() -> None:
    @dataclasses.dataclass
    class Local:
        value: int

    data = JsonSerializer().dumps_typed(Local(1))
    assert JsonSerializer().loads_typed(data) == Local(1)
    with pytest.raises(SerializationError, match="defined inside a function"):
        JsonSerializer(strict=True).loads_typed(data)


def test_unknown_local_class_says_why() -> None:
    name = f"{__name__}:test_unknown_local_class_says_why.<locals>.Gone"
    with pytest.raises(SerializationError, match="module level"):
        JsonSerializer().loads_typed(_payload("dataclass", name, {}))


# -- strict serializers: only declared classes ---------------------------------------------------


def test_strict_serializer_refuses_undeclared_classes_when_writing() -> None:
    serde = JsonSerializer(strict=True, allowed_classes=[Box])
    with pytest.raises(SerializationError) as info:
        serde.dumps_typed({"doc": Box([Holder(item=1)])})
    message = str(info.value)
    assert message.startswith("Cannot serialize value['doc'].item[0]: ")
    assert "tests.unit.checkpoint.serde_cases:Holder is not in this serializer's allowlist" in (
        message
    )
    assert "allowed_classes=[Holder]" in message
    assert "GRAPHRUNTIME_SERDE_ALLOW=tests.unit.checkpoint.serde_cases:Holder" in message
    assert serde.strict


def test_strict_serializer_reads_declared_and_module_classes_only() -> None:
    learned = JsonSerializer().dumps_typed([Pair(1, 2)])
    declared = JsonSerializer(strict=True, allowed_classes=[Pair])
    assert same(declared.loads_typed(learned), [Pair(1, 2)])
    by_module = JsonSerializer(strict=True, allowed_modules=["tests.unit.checkpoint"])
    assert same(by_module.loads_typed(learned), [Pair(1, 2)])
    with pytest.raises(SerializationError, match="allowlist"):
        JsonSerializer(strict=True).loads_typed(learned)


def test_allow_adds_classes_and_checks_them() -> None:
    serde = JsonSerializer(strict=True)
    with pytest.raises(SerializationError):
        serde.dumps_typed(Box(1))
    serde.allow(Box, Color)
    assert serde.loads_typed(serde.dumps_typed([Box(Color.RED)])) == [Box(Color.RED)]
    with pytest.raises(SerializationError, match="takes classes"):
        serde.allow(Box(1))  # type: ignore[arg-type]
    with pytest.raises(SerializationError, match="cannot be stored"):
        serde.allow(Path)
    serde.allow(Box)  # again: fine


def test_two_classes_with_one_name_cannot_both_be_allowed() -> None:
    def make() -> type:
        @dataclasses.dataclass
        class Twin:
            n: int

        return Twin

    first, second = make(), make()
    serde = JsonSerializer(strict=True, allowed_classes=[first])
    with pytest.raises(SerializationError, match="another allowed class has that name"):
        serde.allow(second)
    with pytest.raises(SerializationError, match="name of another allowed class"):
        serde.dumps_typed(second(1))
    # Learning serializers do not take the twin either: it would load as the first.
    with pytest.raises(SerializationError, match="name of another allowed class"):
        JsonSerializer(allowed_classes=[first]).dumps_typed(second(1))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"allowed_modules": "myapp"}, "list of module names"),
        ({"allowed_modules": ["myapp:Order"]}, "Bad allowed_modules entry"),
        ({"allowed_modules": [""]}, "Bad allowed_modules entry"),
        ({"allowed_classes": Box}, "list of classes"),
        ({"allowed_classes": ["myapp:Order"]}, "parse_allowed_classes"),
    ],
)
def test_bad_configuration_is_rejected(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(SerializationError, match=match):
        JsonSerializer(**kwargs)


def test_parametrized_generics_need_the_class_itself() -> None:
    value = Wrapper[int](value=1)
    with pytest.raises(SerializationError, match="parametrized generic"):
        JsonSerializer(strict=True, allowed_modules=[__name__]).dumps_typed(value)
    serde = JsonSerializer(strict=True, allowed_classes=[Wrapper[int]])
    assert serde.loads_typed(serde.dumps_typed(value)) == value


def test_graphruntime_types_are_always_allowed() -> None:
    serde = JsonSerializer(strict=True)
    task = PregelTask("id", "node", ("__pregel_pull", "node"), interrupts=(Interrupt(1, "i"),))
    snapshot = StateSnapshot({"a": 1}, ("node",), {}, None, None, None, (task,), ())
    assert same(serde.fresh().loads_typed(serde.dumps_typed([task, snapshot])), [task, snapshot])


# -- check_round_trip: as a fresh process would load it ----------------------------------------


def _script_class() -> type:
    @dataclasses.dataclass
    class Script:
        n: int

    Script.__module__ = "__main__"
    Script.__qualname__ = "Script"
    return Script


def test_check_round_trip_refuses_classes_from_main_even_when_declared() -> None:
    script = _script_class()
    for serde in (JsonSerializer(), JsonSerializer(strict=True, allowed_classes=[script])):
        serde.loads_typed(serde.dumps_typed(script(1)))  # fine in this process
        with pytest.raises(SerializationError) as info:
            check_round_trip({"input": [script(1)]}, serde)
        message = str(info.value)
        assert message.startswith("Cannot serialize value['input'][0]: class __main__:Script")
        assert "define it in an importable module and add it to the allowlist" in message


def test_check_round_trip_ignores_what_this_process_learned() -> None:
    serde = JsonSerializer()
    serde.loads_typed(serde.dumps_typed(Box(1)))  # learned
    with pytest.raises(SerializationError, match="not in this serializer's allowlist"):
        check_round_trip(Box(1), serde)
    check_round_trip(Box(1), JsonSerializer(allowed_classes=[Box]))
    check_round_trip(Box(1), JsonSerializer(allowed_modules=["tests.unit.checkpoint"]))


def test_check_round_trip_uses_other_serializers_as_they_are() -> None:
    class Refusing:
        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            return "x", b""

        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            raise CheckpointError("cannot read")

    with pytest.raises(CheckpointError, match="cannot read"):
        check_round_trip(1, Refusing())


def test_what_check_round_trip_accepts_a_fresh_process_loads(tmp_path: Path) -> None:
    serde = JsonSerializer(strict=True, allowed_modules=["tests.unit.checkpoint"])
    value = {"box": Box(Holder(item=(Color.RED, b"x"))), "pair": Pair(1)}
    check_round_trip(value, serde)
    kind, data = serde.dumps_typed(value)
    (tmp_path / "data.json").write_bytes(data)
    script = textwrap.dedent(
        f"""
        import sys
        from graphruntime.checkpoint import JsonSerializer
        serde = JsonSerializer(strict=True, allowed_modules=["tests.unit.checkpoint"])
        data = open(sys.argv[1], "rb").read()
        print(repr(serde.loads_typed(({kind!r}, data))))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "data.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == repr(value)


# -- parse_allowed_classes (GRAPHRUNTIME_SERDE_ALLOW) ------------------------------------------


def test_parse_allowed_classes() -> None:
    spec = f" {__name__}:Shade , ,tests.unit.checkpoint.serde_cases:Box,"
    assert parse_allowed_classes(spec) == (Shade, Box)
    assert parse_allowed_classes("") == ()


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("myapp.models.Order", "write module:qualname"),
        (":Order", "write module:qualname"),
        ("gr_no_such_module_xyz:Order", "cannot import"),
        (f"{__name__}:Missing", "has no class"),
        (f"{__name__}:_payload", "has no class"),
        ("pathlib:Path", "cannot be stored"),
        (f"{__name__}:f.<locals>.X", "defined at module level"),
    ],
)
def test_parse_allowed_classes_rejects_bad_entries(spec: str, match: str) -> None:
    with pytest.raises(SerializationError, match=match):
        parse_allowed_classes(spec)


# -- LangChain messages ----------------------------------------------------------------------------


def test_langchain_message_classes_are_allowed_by_default() -> None:
    messages = pytest.importorskip(
        "langchain_core.messages", reason="langchain-core (graphruntime[messages]) is not installed"
    )
    values = [
        messages.HumanMessage("hi", id="1"),
        messages.AIMessage(
            "", id="2", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1"}]
        ),
        messages.AIMessageChunk("part", id="3"),
        messages.SystemMessage("be brief"),
        messages.ToolMessage("result", tool_call_id="c1", artifact={"raw": (1, 2)}),
        messages.FunctionMessage("out", name="f"),
        messages.ChatMessage("x", role="critic"),
        messages.RemoveMessage(id="1"),
        messages.HumanMessageChunk("a"),
        messages.SystemMessageChunk("b"),
        messages.ToolMessageChunk("c", tool_call_id="c1"),
        messages.FunctionMessageChunk("d", name="f"),
        messages.ChatMessageChunk("e", role="r"),
    ]
    serde = JsonSerializer(strict=True)
    check_round_trip(values, serde)
    loaded = serde.loads_typed(serde.dumps_typed(values))
    assert loaded == values
    assert [type(m) for m in loaded] == [type(m) for m in values]
    assert loaded[4].artifact == {"raw": (1, 2)}
