"""Mermaid flowchart text for a drawable graph, byte for byte as LangGraph writes it."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from graphruntime.errors import GraphValidationError

if TYPE_CHECKING:
    from graphruntime.drawing._parts import Edge, Node


class CurveStyle(Enum):
    """How Mermaid draws edges (its ``flowchart.curve`` setting)."""

    BASIS = "basis"
    BUMP_X = "bumpX"
    BUMP_Y = "bumpY"
    CARDINAL = "cardinal"
    CATMULL_ROM = "catmullRom"
    LINEAR = "linear"
    MONOTONE_X = "monotoneX"
    MONOTONE_Y = "monotoneY"
    NATURAL = "natural"
    STEP = "step"
    STEP_AFTER = "stepAfter"
    STEP_BEFORE = "stepBefore"


@dataclass
class NodeStyles:
    """CSS for the ``default``, ``first`` and ``last`` node classes."""

    default: str = "fill:#f2f0ff,line-height:1.2"
    first: str = "fill-opacity:0"
    last: str = "fill:#bfb6fc"


class MermaidDrawMethod(Enum):
    """LangGraph's PNG renderers; both need the network, so neither is available here."""

    PYPPETEER = "pyppeteer"
    API = "api"


# A name wrapped in Markdown markers (``__start__``) is put in <p> so Mermaid keeps it as is.
_MARKDOWN_MARKERS = tuple("*_`")
_SAFE_ID_CHARS = frozenset(string.ascii_letters + string.digits + "_-")
_LABEL_ESCAPES = {
    "[": "#91;",
    "]": "#93;",
    "(": "#40;",
    ")": "#41;",
    "{": "#123;",
    "}": "#125;",
    '"': "#quot;",
    "<": "#60;",
    ">": "#62;",
    "|": "#124;",
}
_NODE_FORMAT = "{0}({1})"
_FIRST_FORMAT = "{0}([{1}]):::first"
_LAST_FORMAT = "{0}([{1}]):::last"


def safe_id(label: str) -> str:
    """A Mermaid node id: unsafe characters become ``\\<hex code point>``."""
    return "".join(ch if ch in _SAFE_ID_CHARS else "\\" + format(ord(ch), "x") for ch in label)


def _escape_label(text: str) -> str:
    text = text.replace("#", "#35;")
    for char, entity in _LABEL_ESCAPES.items():
        text = text.replace(char, entity)
    return text


def _metadata_value(value: Any) -> str | None:
    scalars = (str, int, float, bool)
    if isinstance(value, scalars):
        return str(value)
    if isinstance(value, (list, tuple, set)) and all(isinstance(v, scalars) for v in value):
        items = [str(v) for v in value]
        return ", ".join(sorted(items) if isinstance(value, set) else items)
    return None  # nested structures are not shown


def _metadata_lines(metadata: Mapping[str, Any]) -> list[str]:
    lines = []
    for key, value in metadata.items():
        shown = _metadata_value(value)
        if shown is not None:
            lines.append(_escape_label(f"{key} = {shown}"))
    return lines


def _edge_arrow(edge: Edge, wrap_label_n_words: int) -> str:
    if edge.data is None:
        return " -.-> " if edge.conditional else " --> "
    label = str(edge.data)
    words = label.split()
    if len(words) > wrap_label_n_words:
        label = "&nbsp<br>&nbsp".join(
            " ".join(words[i : i + wrap_label_n_words])
            for i in range(0, len(words), wrap_label_n_words)
        )
    if edge.conditional:
        return f" -. &nbsp;{label}&nbsp; .-> "
    return f" -- &nbsp;{label}&nbsp; --> "


def _shared_parts(source: str, target: str) -> str:
    # Position by position, not a true common prefix: this is how LangGraph groups edges
    # into subgraphs, and a self-loop lands in a group named after its node.
    pairs = zip(source.split(":"), target.split(":"), strict=False)
    return ":".join(s for s, t in pairs if s == t)


def render_mermaid(
    nodes: Mapping[str, Node],
    edges: Sequence[Edge],
    *,
    first_node: str | None = None,
    last_node: str | None = None,
    with_styles: bool = True,
    curve_style: CurveStyle = CurveStyle.LINEAR,
    node_styles: NodeStyles | None = None,
    wrap_label_n_words: int = 9,
    frontmatter_config: Mapping[str, Any] | None = None,
) -> str:
    """Mermaid text; node ids with ``:`` are drawn inside nested ``subgraph`` blocks."""
    out: list[str] = []
    if with_styles:
        given = dict(frontmatter_config or {})
        config = dict(given.get("config", {}))
        flowchart = {**config.get("flowchart", {}), "curve": curve_style.value}
        front = {**given, "config": {**config, "flowchart": flowchart}}
        out.append("---\n" + dump_yaml(front) + "---\ngraph TD;\n")
    else:
        out.append("graph TD;\n")

    formats = {}
    if first_node is not None:
        formats[first_node] = _FIRST_FORMAT
    if last_node is not None:
        formats[last_node] = _LAST_FORMAT

    def node_line(key: str, node: Node) -> str:
        name = node.name.split(":")[-1]
        if name.startswith(_MARKDOWN_MARKERS) and name.endswith(_MARKDOWN_MARKERS):
            label = f"<p>{name}</p>"
        else:
            label = name
        lines = _metadata_lines(node.metadata or {})
        if lines:
            label = f"{label}<hr/><small><em>" + "\n".join(lines) + "</em></small>"
        return "\t" + formats.get(key, _NODE_FORMAT).format(safe_id(key), label) + "\n"

    top_nodes: dict[str, Node] = {}
    nodes_by_prefix: dict[str, dict[str, Node]] = {}
    for key, node in nodes.items():
        if ":" in key:
            nodes_by_prefix.setdefault(key.rsplit(":", 1)[0], {})[key] = node
        else:
            top_nodes[key] = node
    if with_styles:
        out.extend(node_line(key, node) for key, node in top_nodes.items())

    edge_groups: dict[str, list[Edge]] = {}
    for edge in edges:
        edge_groups.setdefault(_shared_parts(edge.source, edge.target), []).append(edge)

    seen: set[str] = set()

    def emit_group(group: list[Edge], prefix: str) -> None:
        self_loop = len(group) == 1 and group[0].source == group[0].target
        boxed = bool(prefix) and not self_loop
        if boxed:
            name = prefix.rsplit(":", 1)[-1]
            if name in seen:
                raise GraphValidationError(
                    f"Found duplicate subgraph '{name}' -- this likely means that you're "
                    "reusing a subgraph node with the same name. Please adjust your graph to "
                    "have subgraph nodes with unique names."
                )
            seen.add(name)
            out.append(f"\tsubgraph {name}\n")
            if with_styles:
                out.extend(node_line(k, n) for k, n in nodes_by_prefix.get(prefix, {}).items())
        for edge in group:
            arrow = _edge_arrow(edge, wrap_label_n_words)
            out.append(f"\t{safe_id(edge.source)}{arrow}{safe_id(edge.target)};\n")
        for nested, nested_group in edge_groups.items():
            if nested == prefix or not nested.startswith(prefix + ":"):
                continue
            if ":" in nested[len(prefix) + 1 :]:
                continue  # deeper levels are emitted by their parent
            emit_group(nested_group, nested)
        if boxed:
            out.append("\tend\n")

    emit_group(edge_groups.get("", []), "")
    for prefix, group in edge_groups.items():
        if prefix and ":" not in prefix:
            emit_group(group, prefix)
            seen.add(prefix)

    if with_styles:
        for prefix, members in nodes_by_prefix.items():
            if ":" not in prefix and prefix not in seen:
                out.append(f"\tsubgraph {prefix}\n")
                out.extend(node_line(k, n) for k, n in members.items())
                out.append("\tend\n")
                seen.add(prefix)
        for class_name, style in asdict(node_styles or NodeStyles()).items():
            out.append(f"\tclassDef {class_name} {style}\n")
    return "".join(out)


# --- the YAML front matter -----------------------------------------------------------------

# YAML 1.1 implicit types: a plain scalar matching one of these would not read back as a
# string, so PyYAML quotes it.
_NOT_A_STRING = re.compile(
    r"""(?x)
    yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
    |~|null|Null|NULL|<<|=
    |[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+
    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
    |[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[0-9]{4}-[0-9]{2}-[0-9]{2}
    |[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[\ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?
    (?:[\ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?
    """
)
_INDICATOR_START = frozenset("#,[]{}&*!|>'\"%@`")
_DOUBLE_QUOTE_ESCAPES = {
    "\0": "0",
    "\a": "a",
    "\b": "b",
    "\t": "t",
    "\n": "n",
    "\v": "v",
    "\f": "f",
    "\r": "r",
    "\x1b": "e",
    '"': '"',
    "\\": "\\",
    "\x85": "N",
    "\xa0": "_",
    "\u2028": "L",
    "\u2029": "P",
}


def _yaml_plain_ok(text: str) -> bool:
    """Whether PyYAML would write ``text`` as a plain (unquoted) block scalar."""
    if not text or text != text.strip() or _NOT_A_STRING.fullmatch(text):
        return False
    if text[0] in _INDICATOR_START:
        return False
    if text[0] in "?:-" and (len(text) == 1 or text[1] == " "):
        return False
    return ": " not in text and " #" not in text and not text.endswith(":")


def _yaml_double_quoted(text: str) -> str:
    out = []
    for ch in text:
        if ch in _DOUBLE_QUOTE_ESCAPES:
            out.append("\\" + _DOUBLE_QUOTE_ESCAPES[ch])
        elif " " <= ch <= "~":
            out.append(ch)
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02X}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(f"\\U{ord(ch):08X}")
    return '"' + "".join(out) + '"'


def _yaml_float(value: float) -> str:
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value).lower()
    return text.replace("e", ".0e", 1) if "." not in text and "e" in text else text


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _yaml_float(value)
    text = str(value)
    if not all(" " <= ch <= "~" for ch in text):
        return _yaml_double_quoted(text)  # PyYAML escapes anything outside printable ASCII
    if _yaml_plain_ok(text):
        return text
    return "'" + text.replace("'", "''") + "'"


def dump_yaml(value: Mapping[str, Any]) -> str:
    """Block-style YAML with sorted keys, as ``yaml.dump(default_flow_style=False)``.

    Covers what Mermaid front matter holds (nested mappings, lists, scalars) without making
    PyYAML a dependency of the runtime. Unlike PyYAML it never folds a long string over
    several lines (the text reads back the same).
    """
    lines: list[str] = []
    _yaml_mapping(value, 0, lines)
    return "".join(line + "\n" for line in lines)


def _yaml_mapping(value: Mapping[str, Any], indent: int, lines: list[str]) -> None:
    pad = " " * indent
    for key in sorted(value):
        item = value[key]
        head = f"{pad}{_yaml_scalar(key)}:"
        if isinstance(item, Mapping) and item:
            lines.append(head)
            _yaml_mapping(item, indent + 2, lines)
        elif isinstance(item, (list, tuple)) and item:
            lines.append(head)
            _yaml_sequence(item, indent, lines)
        else:
            lines.append(f"{head} {_yaml_empty_or_scalar(item)}")


def _yaml_sequence(value: Sequence[Any], indent: int, lines: list[str]) -> None:
    pad = " " * indent
    for item in value:
        if isinstance(item, Mapping) and item:
            nested: list[str] = []
            _yaml_mapping(item, indent + 2, nested)
            lines.append(f"{pad}- {nested[0].lstrip()}")
            lines.extend(nested[1:])
        elif isinstance(item, (list, tuple)) and item:
            nested = []
            _yaml_sequence(item, indent + 2, nested)
            lines.append(f"{pad}- {nested[0].lstrip()}")
            lines.extend(nested[1:])
        else:
            lines.append(f"{pad}- {_yaml_empty_or_scalar(item)}")


def _yaml_empty_or_scalar(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, (list, tuple)):
        return "[]"
    return _yaml_scalar(value)
