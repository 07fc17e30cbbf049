"""The READMEs' snippets parse and their links lead somewhere: every ```python block of
README.md is Python, and every relative link of README.md and deploy/README.md names a
file that exists and, with a #fragment, a heading of that file (GitHub's anchor)."""

from __future__ import annotations

import ast
import os
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "deploy/README.md")

FENCE = re.compile(r"^(```|~~~)(.*?)\n(.*?)^\1[ \t]*$", re.M | re.S)
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`[^`\n]*`")


def _prose(text: str) -> str:
    """The text without its fenced blocks and inline code (where brackets are code)."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line, code) of each fenced block tagged python."""
    return [
        (text[: m.start()].count("\n") + 1, m.group(3))
        for m in FENCE.finditer(text)
        if m.group(2).strip().lower() in ("python", "py")
    ]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor; repeated headings get -1, -2, … as on GitHub."""
    seen: Counter[str] = Counter()
    found = set()
    for line in FENCE.sub("", text).splitlines():
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            found.add(f"{base}-{seen[base]}" if seen[base] else base)
            seen[base] += 1
    return found


def relative_links(text: str) -> list[str]:
    return [
        target
        for target in LINK.findall(_prose(text))
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def test_the_helpers_find_what_they_look_for() -> None:
    text = "# Title\n## Quick start: `graphrun`!\n## Title\n```python\nx = [1](2)\n```\n"
    assert anchors(text) == {"title", "quick-start-graphrun", "title-1"}
    assert python_blocks(text) == [(4, "x = [1](2)\n")]
    assert relative_links(text + "[a](#title) [b](https://x.y) `[c](d)` [e](f.md#g)") == [
        "#title",
        "f.md#g",
    ]


def test_every_python_snippet_of_the_readme_parses() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    blocks = python_blocks(text)
    assert blocks
    for line, code in blocks:
        try:
            ast.parse(code)
        except SyntaxError as exc:
            pytest.fail(f"README.md: the python block at line {line} does not parse: {exc}")


@pytest.mark.parametrize("doc", DOCS)
def test_every_relative_link_resolves(doc: str) -> None:
    path = ROOT / doc
    text = path.read_text("utf-8")
    links = relative_links(text)
    assert links
    broken = []
    for link in links:
        target, _, fragment = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        if not file.exists():
            broken.append(f"{link}: no file {os.path.relpath(file, ROOT)}")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file.read_text("utf-8")):
            broken.append(f"{link}: no heading with the anchor #{fragment}")
    assert not broken, f"{doc}: " + "; ".join(broken)
