"""Request bodies of graphrun serve: an option it cannot honour is refused, not ignored."""

from __future__ import annotations

import pydantic
import pytest

from workers.api._models import ThreadCreate, ThreadPatch


@pytest.mark.parametrize("body", [ThreadCreate, ThreadPatch])
def test_a_thread_ttl_is_refused_with_the_reason(body: type[pydantic.BaseModel]) -> None:
    with pytest.raises(pydantic.ValidationError, match="thread TTLs are not available"):
        body.model_validate({"ttl": {"strategy": "delete", "ttl": 5}})
    assert body.model_validate({"metadata": {"k": 1}, "ttl": None}).model_dump()["ttl"] is None


def test_a_patch_takes_only_metadata_and_ttl() -> None:
    with pytest.raises(pydantic.ValidationError, match="thread_id"):
        ThreadPatch.model_validate({"thread_id": "t-1"})
