"""`SubmissionQueue`: the submissions part of `Store` (plastic.store.part): the queue of work for
`plastic serve`."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plastic.store.part import StorePart

if TYPE_CHECKING:
    from redis.client import Pipeline


class SubmissionQueue(StorePart):
    def push_submission(self, payload: Mapping[str, Any], *, pipeline: Pipeline | None = None) -> None:
        """Queue a submission (a JSON object, e.g. ``{"run": id}``) for `plastic serve`."""
        (pipeline or self.client).lpush(self.keys.submissions(), json.dumps(dict(payload), sort_keys=True))

    def pop_submission(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The oldest submission, or None.  ``timeout``: None does not wait; > 0 waits that many seconds.

        A popped submission is gone from the queue: a service that crashes after the pop finds the
        work again through its run record (a run still SUBMITTED), not through the queue."""
        if timeout is None:
            raw = self.client.rpop(self.keys.submissions())
        else:
            if timeout <= 0:
                raise ValueError("timeout must be > 0 (or None for no wait)")
            reply = self.client.brpop([self.keys.submissions()], timeout=timeout)
            raw = reply[1] if reply else None
        return json.loads(raw) if raw is not None else None

    def pending_submissions(self) -> int:
        return self.client.llen(self.keys.submissions())

    def queued_submissions(self) -> list[dict[str, Any]]:
        """Every submission still queued, oldest last (a malformed one is left out)."""
        out = []
        for raw in self.client.lrange(self.keys.submissions(), 0, -1):
            try:
                doc = json.loads(raw)
            except ValueError:
                continue
            if isinstance(doc, dict):
                out.append(doc)
        return out

    def ship_files(self, run_id: str, files: Mapping[str, bytes], *, pipeline: Pipeline | None = None) -> None:
        """A submission's files (plastic.service.shipment), kept until the service takes them."""
        if files:
            (pipeline or self.client).hset(self.keys.shipped(run_id),
                                           mapping={name: base64.b64encode(data).decode() for name, data in files.items()})

    def shipped_files(self, run_id: str) -> dict[str, bytes]:
        """The run's shipped files (none: {}); they stay until `drop_shipped_files` (after the service has
        written them: a service that dies between the two finds them again)."""
        raw = self.client.hgetall(self.keys.shipped(run_id))
        return {str(name): base64.b64decode(value) for name, value in raw.items()}

    def drop_shipped_files(self, run_id: str) -> None:
        self.client.delete(self.keys.shipped(run_id))

    def keep_run_archive(self, run_id: str, data: bytes) -> None:
        """An ended served run's directory (plastic.service.archive), for readers on other machines."""
        self.client.set(self.keys.archive(run_id), base64.b64encode(data).decode())

    def run_archive(self, run_id: str) -> bytes | None:
        raw = self.client.get(self.keys.archive(run_id))
        return None if raw is None else base64.b64decode(raw)
