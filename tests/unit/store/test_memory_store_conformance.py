"""InMemoryStore against the shared store contract."""

from __future__ import annotations

import pytest

from graphruntime.store.base import TTLConfig
from graphruntime.store.memory import InMemoryStore
from graphruntime.testing.store_conformance import FakeClock, StoreConformance, StoreFactory


class TestInMemoryStore(StoreConformance):
    @pytest.fixture
    def make_store(self) -> StoreFactory:
        def make(ttl: TTLConfig | None = None, clock: FakeClock | None = None) -> InMemoryStore:
            return InMemoryStore(ttl=ttl, clock=clock)

        return make
