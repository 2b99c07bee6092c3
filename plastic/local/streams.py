"""The scheduler API's event streams: one open SUBSCRIBE response each, one RecordIO record a chunk."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from typing import Any

from plastic.mesos.recordio import encode


class Stream:
    """One open SUBSCRIBE response: events are queued and written one RecordIO record per chunk."""

    def __init__(self, stream_id: str):
        self.stream_id = stream_id
        self.queue: deque[bytes | None] = deque()
        self.wakeup = asyncio.Event()
        self.ended = False

    def push(self, record: bytes | None) -> None:
        self.queue.append(record)
        self.wakeup.set()

    async def pump(self, resp: Any) -> None:
        """Write the queued records to ``resp`` (an aiohttp StreamResponse) as they come, until None ends
        the stream (terminating chunk); a connection gone or a cancelled handler ends it too."""
        try:
            while True:
                while not self.queue:
                    self.wakeup.clear()
                    await self.wakeup.wait()
                record = self.queue.popleft()
                if record is None:
                    self.ended = True
                    await resp.write_eof()
                    return
                await resp.write(record)
        except (ConnectionError, asyncio.CancelledError):
            self.ended = True
            raise


def frame(event: dict[str, Any]) -> bytes:
    """One event as one RecordIO record of compact JSON, as a real master writes it."""
    return encode(json.dumps(event, separators=(",", ":")).encode())
