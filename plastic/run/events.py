"""A run's decision events as the core's `RunEvent`s, read from the run's Redis stream."""

from __future__ import annotations

import json
from typing import Any

from plastic.core.report import RunEvent
from plastic.store import Store

_JSON_START = tuple('[{"-0123456789') + ("true", "false", "null")


def decode_value(text: str) -> Any:
    """Stream values are strings as written, or JSON for everything else (see plastic.store.records)."""
    if text.startswith(_JSON_START):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


class EventFollower:
    """Reads a run's stream from the start, a batch at a time (`poll`), remembering where it stopped."""

    def __init__(self, store: Store, run_id: str):
        self.store = store
        self.run_id = run_id
        self.last_id = "0-0"

    def poll(self, *, block_ms: int | None = None, count: int = 5000) -> list[RunEvent]:
        out: list[RunEvent] = []
        while True:
            batch = self.store.read_events(self.run_id, self.last_id, count=count, block_ms=block_ms)
            if not batch:
                return out
            self.last_id = batch[-1].id
            out.extend(RunEvent(e.type, e.at, {k: decode_value(v) for k, v in e.fields.items()}) for e in batch)
            if len(batch) < count:
                return out
            block_ms = None
