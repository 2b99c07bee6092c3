"""`StorePart`: what every part of `Store` (plastic.store.store) stands on.

`Store` is put together from one part per kind of state, each a class of its methods:
`RunRecords` (plastic.store.runs), `TaskRecords` (tasks and their attempts, plastic.store.tasks),
`AgentRecords` (plastic.store.agents), `EventStreams` (run events and spot notices,
plastic.store.streams), `RuntimeRecords` (plastic.store.runtimes) and `SubmissionQueue`
(plastic.store.submissions).  `Store.__init__` sets what the parts read: the attributes declared
here, and the Lua script each part declares for itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redis import Redis

    from plastic.store.keys import Keys
    from plastic.store.scripts import LuaScript


class StorePart:
    client: Redis  # created with decode_responses=True
    keys: Keys  # every key the parts use comes from here
    events_maxlen: int  # the approximate length every event stream is trimmed to
    _transition: LuaScript  # the compare-and-set behind every change of state (runs, tasks, agents)

    def _hashes(self, keys: Sequence[str], decode: Callable[[Mapping[str, str]], Any]) -> list[Any]:
        """The hashes at ``keys`` (one round trip), each decoded; None for a missing one."""
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(key)
        return [decode(raw) if raw else None for raw in pipe.execute()]
