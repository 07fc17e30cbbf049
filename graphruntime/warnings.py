"""Deprecation warnings, as ``langgraph.warnings``.

A ported ``pytest.warns(LangGraphDeprecatedSinceV10)`` or ``filterwarnings`` entry
keeps working: the classes carry the same names and the same version tags.
"""

from __future__ import annotations

__all__ = (
    "LangGraphDeprecatedSinceV05",
    "LangGraphDeprecatedSinceV10",
    "LangGraphDeprecatedSinceV11",
    "LangGraphDeprecationWarning",
)


class LangGraphDeprecationWarning(DeprecationWarning):
    """Something still works but is going away.

    Attributes:
        message: what is deprecated and what to use instead.
        since: the LangGraph version that deprecated it.
        expected_removal: the version expected to remove it.
    """

    message: str
    since: tuple[int, int]
    expected_removal: tuple[int, int]

    def __init__(
        self,
        message: str,
        *args: object,
        since: tuple[int, int],
        expected_removal: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(message, *args)
        self.message = message.rstrip(".")
        self.since = since
        self.expected_removal = expected_removal or (since[0] + 1, 0)

    def __str__(self) -> str:
        return (
            f"{self.message}. Deprecated in LangGraph V{self.since[0]}.{self.since[1]}"
            f" to be removed in V{self.expected_removal[0]}.{self.expected_removal[1]}."
        )


class LangGraphDeprecatedSinceV05(LangGraphDeprecationWarning):
    """Deprecated since LangGraph v0.5.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(0, 5), expected_removal=(2, 0))


class LangGraphDeprecatedSinceV10(LangGraphDeprecationWarning):
    """Deprecated since LangGraph v1.0.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(1, 0), expected_removal=(2, 0))


class LangGraphDeprecatedSinceV11(LangGraphDeprecationWarning):
    """Deprecated since LangGraph v1.1.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(1, 1), expected_removal=(3, 0))
