"""Run delta-channel conformance capabilities against AsyncPostgresSaver."""

from __future__ import annotations

import pytest
from graphruntime.checkpoint.conformance import validate
from graphruntime.checkpoint.conformance.initializer import checkpointer_test

from checkpoint_pg.aio import AsyncPostgresSaver
from tests.upstream_pg.conftest import DEFAULT_URI


@pytest.mark.asyncio
async def test_delta_channel_conformance():
    @checkpointer_test(name="AsyncPostgresSaver")
    async def postgres_saver():
        async with AsyncPostgresSaver.from_conn_string(DEFAULT_URI) as saver:
            await saver.setup()
            yield saver

    report = await validate(
        postgres_saver,
        capabilities={
            "delta_channel_history",
        },
    )
    for cap, result in report.results.items():
        if result.passed is False:
            details = "\n".join(result.failures or [])
            pytest.fail(f"Capability {cap} failed:\n{details}")
