"""`Store`: plastic's state in Redis (runs, tasks, attempts, agents, events, history, queue).

One class over a redis-py client created with ``decode_responses=True``; keys come
from `plastic.store.keys.Keys`.  Every change of state goes through a Lua script
(`plastic.store.scripts`) that checks the current state against the lifecycle
table and updates the record, the per-state sets and the event stream atomically.

Its methods come in parts, one per kind of state (see plastic.store.part): runs
(`plastic.store.runs`), tasks and attempts (`tasks`), agents (`agents`), event and
notice streams (`streams`), runtime history (`runtimes`), submissions (`submissions`).
`Store` sets what they share and adds the pipeline plumbing.

Writers take an optional ``pipeline`` (rq style): given one, they queue their
commands on it and return None; run it with `Store.execute`, which turns a refused
transition into the same TransitionError a direct call raises.  Each script stays
atomic inside a pipeline, but Redis does not roll back a MULTI: a refused transition
leaves the pipeline's other commands applied.

Thread-safe as far as redis-py's client is (one connection pool shared by threads);
blocking reads take their own connection from the pool.
"""

from __future__ import annotations

from typing import Any

from redis import Redis
from redis.client import Pipeline
from redis.exceptions import ResponseError

from plastic.store.agents import AgentRecords
from plastic.store.keys import DEFAULT_PREFIX, Keys
from plastic.store.runs import RunRecords, new_run_id
from plastic.store.runtimes import RuntimeRecords
from plastic.store.scripts import ADD_TASKS, CREATE_RUN, PUBLISH_NOTICE, TRANSITION, UPSERT_AGENT, LuaScript
from plastic.store.store_errors import translate
from plastic.store.streams import EventStreams
from plastic.store.submissions import SubmissionQueue
from plastic.store.tasks import ACTIVE_TASK_STATES, TaskRecords


class Store(RunRecords, TaskRecords, AgentRecords, EventStreams, RuntimeRecords, SubmissionQueue):
    def __init__(
        self,
        client: Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        events_maxlen: int = 100_000,
        runtime_cap: int = 200,
        add_chunk: int = 500,
    ):
        if not client.get_encoder().decode_responses:
            raise ValueError("Store needs a redis client created with decode_responses=True")
        self.client = client
        self.keys = Keys(prefix)
        self.events_maxlen = events_maxlen
        self.runtime_cap = runtime_cap
        self.add_chunk = add_chunk
        self._transition = LuaScript(client, TRANSITION)
        self._create_run = LuaScript(client, CREATE_RUN)
        self._add_tasks = LuaScript(client, ADD_TASKS)
        self._upsert_agent = LuaScript(client, UPSERT_AGENT)
        self._publish = LuaScript(client, PUBLISH_NOTICE)

    # ------------------------------------------------------------------ plumbing

    def pipeline(self, transaction: bool = True) -> Pipeline:
        return self.client.pipeline(transaction=transaction)

    def execute(self, pipeline: Pipeline) -> list[Any]:
        """Run a pipeline; raise the first refusal as TransitionError / UnknownRecordError / ..."""
        results = pipeline.execute(raise_on_error=False)
        for result in results:
            if isinstance(result, Exception):
                raise translate(result) if isinstance(result, ResponseError) else result
        return results


__all__ = ["ACTIVE_TASK_STATES", "Store", "new_run_id"]
