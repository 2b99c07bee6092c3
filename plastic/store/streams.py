"""`EventStreams`: the streams part of `Store` (plastic.store.part): each run's event stream (and the
one of events without a run), and the stream of spot notices, published once each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plastic.store.part import StorePart
from plastic.store.records import Event, encode
from plastic.store.scripts import counted_pairs

if TYPE_CHECKING:
    from redis.client import Pipeline

    from plastic.store.scripts import LuaScript


class EventStreams(StorePart):
    _publish: LuaScript

    # ------------------------------------------------------------------ events

    def append_event(
        self,
        run_id: str | None,
        type: str,
        fields: Mapping[str, Any] | None = None,
        *,
        pipeline: Pipeline | None = None,
    ) -> str | None:
        """Append an event (placed, declined, notice, requeue, ...) to the run's stream; returns its id."""
        entry = {"type": type, **{k: encode(v) for k, v in (fields or {}).items() if k != "type"}}
        result = (pipeline or self.client).xadd(
            self.keys.events(run_id), entry, maxlen=self.events_maxlen, approximate=True
        )
        return None if pipeline is not None else result

    def read_events(
        self, run_id: str | None, since: str = "0-0", *, count: int | None = None, block_ms: int | None = None
    ) -> list[Event]:
        """Events after stream id ``since`` (``"0-0"``: from the start; ``"$"``: only new ones).

        With ``block_ms`` wait up to that long for an event when there is none yet (0 waits forever);
        follow a stream by passing the last id read as the next ``since``."""
        return self._read_stream(self.keys.events(run_id), since, count, block_ms)

    def last_events(self, run_id: str | None, count: int) -> list[Event]:
        """The newest ``count`` events of the run's stream, oldest first (what `plastic status RUN` shows)."""
        entries = self.client.xrevrange(self.keys.events(run_id), count=count)
        return [Event.from_entry(entry_id, raw) for entry_id, raw in reversed(entries)]

    # ------------------------------------------------------------------ spot notices

    def publish_notice(self, kind: str, target: str, fields: Mapping[str, Any], *,
                       marker_ttl_s: int = 86_400) -> str | None:
        """Publish a notice once: the first call for (kind, target) appends it to the notices stream
        and returns its stream id; every later call (a watcher polling again, a second source, a
        duplicate SQS message) returns None.  ``target`` names what the notice is about
        (``agent:<id>``, ``instance:<i-...>``); ``fields`` says the rest (terminate_at, source, ...)."""
        marker = self.keys.notice_marker(kind, target)
        entry = {"kind": kind, "target": target, **{k: encode(v) for k, v in fields.items() if v is not None}}
        # One script: the marker and the stream entry are written together or not at all.
        return self._publish([marker, self.keys.notices()],
                             [str(marker_ttl_s), str(self.events_maxlen), *counted_pairs(entry)]) or None

    def read_notices(self, since: str = "0-0", *, count: int | None = None,
                     block_ms: int | None = None) -> list[Event]:
        """Notices after stream id ``since`` (``"$"``: only new ones), waiting up to ``block_ms``."""
        return self._read_stream(self.keys.notices(), since, count, block_ms)

    def _read_stream(self, key: str, since: str, count: int | None, block_ms: int | None) -> list[Event]:
        """XREAD of one stream after ``since``, as Events (RESP2 and RESP3 replies alike)."""
        reply = self.client.xread({key: since}, count=count, block=block_ms)
        if not reply:
            return []
        entries = next(iter(reply.values())) if isinstance(reply, dict) else reply[0][1]
        if isinstance(entries, list) and entries and isinstance(entries[0], list) and len(entries) == 1:
            entries = entries[0]  # RESP3 wraps the entries once more
        return [Event.from_entry(entry_id, raw) for entry_id, raw in entries]
