"""Embeddings for vector search: the embed functions, the texts to embed, cosine similarity.

No LangChain import: an object with LangChain's ``Embeddings`` methods is used
as it is (duck typing), and plain functions are wrapped.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
from collections.abc import Generator, Sequence
from typing import Any

from graphruntime._internal._twin import Call, Request, aperform, either, perform
from graphruntime.store._errors import InvalidStoreRequestError
from graphruntime.store._types import Embeddings, IndexConfig

__all__ = (
    "Embedder",
    "Embeddings",
    "check_index_config",
    "cosine_similarity",
    "ensure_embeddings",
    "get_text_at_path",
    "index_fields",
    "tokenize_path",
)


class Embedder:
    """One interface over a sync function, an async function or an ``Embeddings`` object.

    An async-only function cannot serve the sync methods (the store's sync calls
    may run inside an event loop): they raise, naming the async twin to use.
    """

    __slots__ = ("_afunc", "_func", "_obj", "dims")

    def __init__(self, embed: Any, dims: int | None = None) -> None:
        self.dims = dims
        self._obj: Any = None
        self._func: Any = None
        self._afunc: Any = None
        if isinstance(embed, str):
            raise InvalidStoreRequestError(
                f"embed={embed!r}: provider strings need LangChain's init_embeddings, which "
                "graphruntime does not use; pass the Embeddings object or a function instead"
            )
        if hasattr(embed, "embed_documents") and hasattr(embed, "embed_query"):
            self._obj = embed
        elif _is_async_callable(embed):
            self._afunc = embed
        elif callable(embed):
            self._func = embed
        else:
            raise InvalidStoreRequestError(
                "index['embed'] must be a function of a list of texts (sync or async) or an "
                f"object with embed_documents/embed_query, got {type(embed).__name__}"
            )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return perform(self._embedding(texts, is_async=False))

    def _embedding(
        self, texts: list[str], *, is_async: bool
    ) -> Generator[Request, Any, list[list[float]]]:
        """:meth:`embed_documents` and :meth:`aembed_documents`, written once (``_twin.py``):
        an async run without an async function embeds with the sync one, in a thread."""
        if self._obj is not None:
            method = (
                getattr(self._obj, "aembed_documents", None)
                if is_async
                else self._obj.embed_documents
            )
        else:
            method = self._afunc if is_async else self._func
        if method is None and is_async:
            return (yield Call(None, asyncio.to_thread, self.embed_documents, texts))  # type: ignore[no-any-return]
        if method is None:
            raise InvalidStoreRequestError(
                "The store's embed function is async: use the async methods (aput, asearch, "
                "abatch) or give the store a sync function"
            )
        return self._check((yield either(method, texts)), len(texts))

    def embed_query(self, text: str) -> list[float]:
        if self._obj is not None:
            return self._check([self._obj.embed_query(text)], 1)[0]
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await aperform(self._embedding(texts, is_async=True))

    async def aembed_query(self, text: str) -> list[float]:
        if self._obj is not None:
            method = getattr(self._obj, "aembed_query", None)
            if method is None:
                return await asyncio.to_thread(self.embed_query, text)
            return self._check([await method(text)], 1)[0]
        return (await self.aembed_documents([text]))[0]

    def _check(self, vectors: Any, expected: int) -> list[list[float]]:
        out = [[float(x) for x in v] for v in vectors]
        if len(out) != expected:
            raise InvalidStoreRequestError(
                f"The embed function returned {len(out)} vectors for {expected} texts"
            )
        if self.dims is not None:
            for v in out:
                if len(v) != self.dims:
                    raise InvalidStoreRequestError(
                        f"The embed function returned a vector of {len(v)} dimensions, "
                        f"the store's index has dims={self.dims}"
                    )
        return out


def _is_async_callable(func: Any) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 - an object with an async __call__
    )


def ensure_embeddings(embed: Any, dims: int | None = None) -> Embedder:
    """``embed`` (a sync or async function, or an ``Embeddings`` object) as an Embedder."""
    if embed is None:
        raise InvalidStoreRequestError("index needs 'embed': the function computing embeddings")
    return Embedder(embed, dims)


def tokenize_path(path: str) -> list[str]:
    """``"a.b[*].c"`` -> ``["a", "b", "[*]", "c"]``; ``{x,y}`` groups stay one token."""
    tokens: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(path):
        char = path[i]
        if char in "[{":
            if current:
                tokens.append("".join(current))
                current = []
            close = "]" if char == "[" else "}"
            depth, j = 0, i
            while j < len(path):
                if path[j] == char:
                    depth += 1
                elif path[j] == close:
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            tokens.append(path[i : j + 1])
            i = j + 1
            continue
        if char == ".":
            if current:
                tokens.append("".join(current))
                current = []
        else:
            current.append(char)
        i += 1
    if current:
        tokens.append("".join(current))
    return tokens


def _as_text(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool | int | float):
        return [str(value)]
    if isinstance(value, list | dict):
        return [json.dumps(value, sort_keys=True, ensure_ascii=False)]
    return []


def get_text_at_path(obj: Any, path: str | list[str]) -> list[str]:
    """The texts at ``path`` in ``obj`` (one per match); ``"$"`` is the whole value as JSON.

    Paths: ``a.b`` (fields), ``a[0]``/``a[-1]``/``a[*]`` (array elements),
    ``*`` (every field or element), ``{a,b.c}`` (several fields).
    """
    if not path or path == "$":
        return [json.dumps(obj, sort_keys=True, ensure_ascii=False)]
    tokens = tokenize_path(path) if isinstance(path, str) else path
    return _extract(obj, tokens, 0)


def _extract(obj: Any, tokens: Sequence[str], pos: int) -> list[str]:
    if pos == len(tokens):
        return _as_text(obj)
    token = tokens[pos]
    out: list[str] = []
    if token.startswith("[") and token.endswith("]"):
        if not isinstance(obj, list):
            return []
        index = token[1:-1]
        if index == "*":
            for item in obj:
                out.extend(_extract(item, tokens, pos + 1))
            return out
        try:
            i = int(index)
        except ValueError:
            return []
        if -len(obj) <= i < len(obj):
            return _extract(obj[i], tokens, pos + 1)
        return []
    if token.startswith("{") and token.endswith("}"):
        if not isinstance(obj, dict):
            return []
        for field in token[1:-1].split(","):
            current: Any = obj
            for part in tokenize_path(field.strip()):
                if not isinstance(current, dict) or part not in current:
                    current = None
                    break
                current = current[part]
            if current is not None:
                out.extend(_as_text(current))
        return out
    if token == "*":
        children = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else ()
        for child in children:
            out.extend(_extract(child, tokens, pos + 1))
        return out
    if isinstance(obj, dict) and token in obj:
        return _extract(obj[token], tokens, pos + 1)
    return []


def cosine_similarity(query: Sequence[float], vector: Sequence[float]) -> float:
    """Cosine of the angle between two vectors; 0.0 when either is all zeros."""
    dot = math.fsum(a * b for a, b in zip(query, vector, strict=True))
    norm = math.sqrt(math.fsum(a * a for a in query)) * math.sqrt(math.fsum(b * b for b in vector))
    return dot / norm if norm else 0.0


def index_fields(config: IndexConfig) -> list[str]:
    """The paths an item is embedded at by default."""
    return list(config.get("fields") or ["$"])


def check_index_config(config: IndexConfig) -> tuple[IndexConfig, Embedder]:
    """A copy of ``config`` once valid, and the :class:`Embedder` of its ``embed``."""
    if not isinstance(config, dict):
        raise InvalidStoreRequestError(f"index is an IndexConfig dict, got {type(config).__name__}")
    unknown = set(config) - set(IndexConfig.__annotations__)
    if unknown:
        raise InvalidStoreRequestError(
            f"Unknown IndexConfig keys {sorted(unknown)}: expected dims, embed and fields"
        )
    dims = config.get("dims")
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise InvalidStoreRequestError(f"index needs 'dims', a positive int, got {dims!r}")
    fields = config.get("fields")
    if fields is not None and (
        not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields)
    ):
        raise InvalidStoreRequestError(f"index 'fields' is a list of paths, got {fields!r}")
    return IndexConfig(**config), ensure_embeddings(config.get("embed"), dims)
