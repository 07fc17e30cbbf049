"""A v2 stream part in the protocol event envelope."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from graphruntime.stream._types import ProtocolEvent, _ProtocolEventParams


def convert_to_protocol_event(part: Mapping[str, Any]) -> ProtocolEvent:
    """``{"type", "ns", "data"[, "interrupts"]}`` -> ``{"type": "event", "method", "params"}``."""
    params: _ProtocolEventParams = {
        "namespace": list(part["ns"]),
        "timestamp": int(time.time() * 1000),
        "data": part["data"],
    }
    if "interrupts" in part:
        params["interrupts"] = part["interrupts"]
    return {"type": "event", "method": part["type"], "params": params}
