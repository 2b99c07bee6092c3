"""`Store`: plastic's state in Redis (runs, tasks, attempts, agents, events, history, queue).

One class over a redis-py client created with ``decode_responses=True``; keys come
from `plastic.store.keys.Keys`.  Every change of state goes through a Lua script
(`plastic.store.scripts`) that checks the current state against the lifecycle
table and updates the record, the per-state sets and the event stream atomically.

Writers take an optional ``pipeline`` (rq style): given one, they queue their
commands on it and return None; run it with `Store.execute`, which turns a refused
transition into the same TransitionError a direct call raises.  Each script stays
atomic inside a pipeline, but Redis does not roll back a MULTI: a refused transition
leaves the pipeline's other commands applied.

Thread-safe as far as redis-py's client is (one connection pool shared by threads);
blocking reads take their own connection from the pool.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from redis import Redis
from redis.client import Pipeline
from redis.exceptions import ResponseError

from plastic.core.book.lifecycle import AgentState, RunState, TaskState
from plastic.core.stats import percentile
from plastic.store.errors import translate
from plastic.store.keys import DEFAULT_PREFIX, Keys, check_run_id
from plastic.store.records import (
    AGENT_FIELDS,
    RUN_FIELDS,
    TASK_FIELDS,
    AgentRecord,
    AttemptRecord,
    Event,
    RunRecord,
    TaskRecord,
    Transition,
    encode,
)
from plastic.store.scripts import (
    ADD_TASKS,
    CREATE_RUN,
    INITIAL,
    PUBLISH_NOTICE,
    TRANSITION,
    UPSERT_AGENT,
    LuaScript,
    counted_pairs,
)
from plastic.store.transitions import TransitionCall, run_script, split_fields

# Task states in which a task occupies an agent.
ACTIVE_TASK_STATES: tuple[TaskState, ...] = (
    TaskState.LAUNCHING,
    TaskState.STARTING,
    TaskState.RUNNING,
    TaskState.KILLING,
)


def new_run_id() -> str:
    """A fresh run id that sorts by creation time: ``r20260101-120000-1a2b3c``."""
    return time.strftime("r%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(3)


class Store:
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

    # ------------------------------------------------------------------ runs

    def create_run(
        self, run_id: str | None = None, *, fields: Mapping[str, Any] | None = None, pipeline: Pipeline | None = None
    ) -> str:
        """Create a run in state SUBMITTED; RecordExistsError if the id is taken. Returns the id."""
        run_id = check_run_id(run_id) if run_id is not None else new_run_id()
        sets, _ = split_fields({k: v for k, v in (fields or {}).items() if v is not None}, RUN_FIELDS)
        state = INITIAL["run"]
        keys = [self.keys.run(run_id), self.keys.runs(), self.keys.run_state(state), self.keys.events(run_id)]
        run_script(self._create_run, keys, [run_id, state, str(self.events_maxlen), *counted_pairs(sets)], pipeline)
        return run_id

    def get_run(self, run_id: str) -> RunRecord | None:
        raw = self.client.hgetall(self.keys.run(run_id))
        return RunRecord.from_hash(raw) if raw else None

    def list_runs(self, state: RunState | str | None = None) -> list[RunRecord]:
        """Runs, newest first; only those in ``state`` when given."""
        if state is None:
            ids = self.client.zrevrange(self.keys.runs(), 0, -1)
        else:
            ids = list(self.client.smembers(self.keys.run_state(RunState(state))))
        runs = [r for r in self._hashes([self.keys.run(i) for i in ids], RunRecord.from_hash) if r is not None]
        return sorted(runs, key=lambda r: (r.created_at, r.id), reverse=True)

    def transition_run(
        self,
        run_id: str,
        new_state: RunState | str,
        *,
        expected: RunState | str | None = None,
        fields: Mapping[str, Any] | None = None,
        event: Mapping[str, Any] | None = None,
        pipeline: Pipeline | None = None,
    ) -> Transition | None:
        call = TransitionCall(
            "run", run_id, self.keys.run(run_id), self.keys.events(run_id), self.keys.run_state_prefix(), RUN_FIELDS
        )
        return call(
            self._transition,
            RunState(new_state),
            expected=None if expected is None else RunState(expected),
            fields=fields,
            event=event,
            maxlen=self.events_maxlen,
            pipeline=pipeline,
        )

    def set_run_fields(self, run_id: str, fields: Mapping[str, Any]) -> None:
        """Set (None: delete) caller fields of a run without a transition; store-managed names are refused."""
        sets, dels = split_fields(fields, RUN_FIELDS)
        key = self.keys.run(run_id)
        if sets:
            self.client.hset(key, mapping=sets)
        if dels:
            self.client.hdel(key, *dels)

    def count_run_field(self, run_id: str, name: str) -> int:
        """Add one to the counter field ``name`` of a run (0 when missing); atomic.  Returns the new count."""
        split_fields({name: 0}, RUN_FIELDS)  # refuses a store-managed name
        return int(self.client.hincrby(self.keys.run(run_id), name, 1))

    def save_framework_id(self, run_id: str, framework_id: str, *, pipeline: Pipeline | None = None) -> None:
        (pipeline or self.client).set(self.keys.framework_id(run_id), framework_id)

    def load_framework_id(self, run_id: str) -> str | None:
        return self.client.get(self.keys.framework_id(run_id))

    def next_incarnation(self, run_id: str) -> int:
        """Count one more Toil leader of the run (1 for the first); atomic."""
        return int(self.client.incr(self.keys.incarnation(run_id)))

    def incarnation(self, run_id: str) -> int:
        """How many Toil leaders the run has had (0: none yet)."""
        return int(self.client.get(self.keys.incarnation(run_id)) or 0)

    # ------------------------------------------------------------------ tasks

    def add_tasks(
        self,
        run_id: str,
        tasks: Mapping[str, Any] | Iterable[tuple[str, Any]],
        *,
        pipeline: Pipeline | None = None,
    ) -> list[str] | None:
        """Add tasks (id -> spec, any JSON value) in state QUEUED; ids already present are left alone.

        Returns the ids actually added (None with a pipeline).  Each chunk of ``add_chunk`` tasks is
        one atomic script; as the call is idempotent, retrying after a failure is safe."""
        items = list(tasks.items() if isinstance(tasks, Mapping) else tasks)
        state = INITIAL["task"]
        keys = [
            self.keys.run(run_id),
            self.keys.run_tasks(run_id),
            self.keys.task_state(run_id, state),
            self.keys.events(run_id),
        ]
        head = [run_id, state, self.keys.task_prefix(run_id), str(self.events_maxlen)]
        added: list[str] = []
        for start in range(0, len(items), self.add_chunk):
            args = list(head)
            for task_id, spec in items[start : start + self.add_chunk]:
                args += [str(task_id), json.dumps(spec, sort_keys=True)]
            result = run_script(self._add_tasks, keys, args, pipeline)
            if pipeline is None:
                added += result
        return None if pipeline is not None else added

    def get_task(self, run_id: str, task_id: str) -> TaskRecord | None:
        raw = self.client.hgetall(self.keys.task(run_id, task_id))
        return TaskRecord.from_hash(raw) if raw else None

    def get_tasks(self, run_id: str, task_ids: Iterable[str] | None = None) -> list[TaskRecord]:
        """Task records in the given order (default: every task, in the order added); unknown ids skipped."""
        ids = self.task_ids(run_id) if task_ids is None else list(task_ids)
        return [
            t for t in self._hashes([self.keys.task(run_id, i) for i in ids], TaskRecord.from_hash) if t is not None
        ]

    def task_ids(self, run_id: str) -> list[str]:
        return self.client.zrange(self.keys.run_tasks(run_id), 0, -1)

    def tasks_in_state(self, run_id: str, state: TaskState | str) -> set[str]:
        return set(self.client.smembers(self.keys.task_state(run_id, TaskState(state))))

    def task_counts(self, run_id: str) -> dict[TaskState, int]:
        """How many tasks of the run are in each state (one round trip)."""
        pipe = self.client.pipeline(transaction=False)
        for state in TaskState:
            pipe.scard(self.keys.task_state(run_id, state))
        return dict(zip(TaskState, pipe.execute(), strict=True))

    def tasks_on_agent(
        self, run_id: str, agent_id: str, states: Iterable[TaskState | str] = ACTIVE_TASK_STATES
    ) -> list[str]:
        """Ids of the run's tasks in ``states`` whose ``agent`` field names this agent."""
        pipe = self.client.pipeline(transaction=False)
        for state in states:
            pipe.smembers(self.keys.task_state(run_id, TaskState(state)))
        ids = sorted(set().union(*pipe.execute()))
        pipe = self.client.pipeline(transaction=False)
        for task_id in ids:
            pipe.hget(self.keys.task(run_id, task_id), "agent")
        return [task_id for task_id, agent in zip(ids, pipe.execute(), strict=True) if agent == agent_id]

    def transition_task(
        self,
        run_id: str,
        task_id: str,
        new_state: TaskState | str,
        *,
        expected: TaskState | str | None = None,
        fields: Mapping[str, Any] | None = None,
        incr: Mapping[str, int] | None = None,
        event: Mapping[str, Any] | None = None,
        attempt: AttemptRecord | None = None,
        pipeline: Pipeline | None = None,
    ) -> Transition | None:
        """Move a task to ``new_state`` if the table allows it (and it is in ``expected`` when given).

        In the same atomic step: set ``fields`` (None deletes a field; ``agent`` names the agent),
        add ``incr`` to counters, append ``attempt`` to the task's attempts and the transition
        event (with ``event``'s extra fields) to the run's stream.  Entering LAUNCHING counts a
        new attempt (``attempts`` + 1).  Raises TransitionError (both states) when refused,
        UnknownRecordError when the task does not exist."""
        new_state = TaskState(new_state)
        increments = dict(incr or {})
        if new_state is TaskState.LAUNCHING:
            increments["attempts"] = increments.get("attempts", 0) + 1
        call = TransitionCall(
            "task",
            task_id,
            self.keys.task(run_id, task_id),
            self.keys.events(run_id),
            self.keys.task_state_prefix(run_id),
            TASK_FIELDS,
            attempts_key=self.keys.task_attempts(run_id, task_id),
        )
        return call(
            self._transition,
            new_state,
            expected=None if expected is None else TaskState(expected),
            fields=fields,
            incr=increments,
            event=event,
            attempt=attempt,
            maxlen=self.events_maxlen,
            pipeline=pipeline,
        )

    def record_attempt(self, run_id: str, task_id: str, attempt: AttemptRecord, *, pipeline: Pipeline | None = None) -> None:
        """Append an ended attempt (prefer ``transition_task(..., attempt=)``, which does it atomically)."""
        (pipeline or self.client).rpush(self.keys.task_attempts(run_id, task_id), attempt.to_json())

    def attempts(self, run_id: str, task_id: str) -> list[AttemptRecord]:
        return [AttemptRecord.from_json(text) for text in self.client.lrange(self.keys.task_attempts(run_id, task_id), 0, -1)]

    # ------------------------------------------------------------------ agents

    def upsert_agent(
        self,
        agent_id: str,
        *,
        cluster: str | None = None,
        preemptible: bool | None = None,
        attributes: Mapping[str, Any] | None = None,
        hostname: str | None = None,
        resources: Mapping[str, Any] | None = None,
        fields: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        pipeline: Pipeline | None = None,
    ) -> bool | None:
        """Record an agent (new ones start ACTIVE) or update its attributes; never changes its state.

        Returns True when the agent was new (None with a pipeline).  The ``agent_added`` event goes
        to ``run_id``'s stream, or to the stream of events without a run."""
        sets, _ = split_fields({k: v for k, v in (fields or {}).items() if v is not None}, AGENT_FIELDS)
        given = {
            "cluster": cluster,
            "preemptible": None if preemptible is None else ("1" if preemptible else "0"),
            "attributes": None if attributes is None else json.dumps(dict(attributes), sort_keys=True),
            "hostname": hostname,
            "resources": None if resources is None else json.dumps(dict(resources), sort_keys=True),
        }
        sets.update({k: v for k, v in given.items() if v is not None})
        state = INITIAL["agent"]
        keys = [self.keys.agent(agent_id), self.keys.agents(), self.keys.agent_state(state), self.keys.events(run_id)]
        result = run_script(
            self._upsert_agent, keys, [agent_id, state, str(self.events_maxlen), *counted_pairs(sets)], pipeline
        )
        return None if pipeline is not None else bool(int(result[0]))

    def get_agent(self, agent_id: str) -> AgentRecord | None:
        raw = self.client.hgetall(self.keys.agent(agent_id))
        return AgentRecord.from_hash(raw) if raw else None

    def agents(self, state: AgentState | str | None = None) -> list[AgentRecord]:
        """Agents (all, or those in ``state``), oldest first."""
        key = self.keys.agents() if state is None else self.keys.agent_state(AgentState(state))
        ids = self.client.smembers(key)
        found = [a for a in self._hashes([self.keys.agent(i) for i in ids], AgentRecord.from_hash) if a is not None]
        return sorted(found, key=lambda a: (a.created_at, a.id))

    def transition_agent(
        self,
        agent_id: str,
        new_state: AgentState | str,
        *,
        expected: AgentState | str | None = None,
        fields: Mapping[str, Any] | None = None,
        event: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        pipeline: Pipeline | None = None,
    ) -> Transition | None:
        """Move an agent (ACTIVE/DRAINING/GONE) as the table allows; e.g. a notice:
        ``transition_agent(a, DRAINING, expected=ACTIVE, fields={"notice_at": t})`` succeeds once."""
        call = TransitionCall(
            "agent",
            agent_id,
            self.keys.agent(agent_id),
            self.keys.events(run_id),
            self.keys.agent_state_prefix(),
            AGENT_FIELDS,
        )
        return call(
            self._transition,
            AgentState(new_state),
            expected=None if expected is None else AgentState(expected),
            fields=fields,
            event=event,
            maxlen=self.events_maxlen,
            pipeline=pipeline,
        )

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

    # ------------------------------------------------------------------ runtime history

    def record_runtime(self, tool: str, seconds: float, *, pipeline: Pipeline | None = None) -> None:
        """Remember one runtime of ``tool``; only the newest ``runtime_cap`` are kept."""
        key = self.keys.runtime(tool)
        pipe = pipeline if pipeline is not None else self.client.pipeline(transaction=True)
        pipe.lpush(key, repr(float(seconds)))
        pipe.ltrim(key, 0, self.runtime_cap - 1)
        if pipeline is None:
            pipe.execute()

    def runtime_history(self, tool: str, limit: int | None = None) -> list[float]:
        """Recent runtimes of ``tool`` in seconds, newest first."""
        end = -1 if limit is None else limit - 1
        return [float(v) for v in self.client.lrange(self.keys.runtime(tool), 0, end)]

    def runtime_percentile(self, tool: str, q: float) -> float | None:
        """The q-th percentile (0-100) of ``tool``'s recent runtimes; None without history."""
        history = self.runtime_history(tool)
        return percentile(history, q) if history else None

    # ------------------------------------------------------------------ submissions

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

    # ------------------------------------------------------------------ helpers

    def _read_stream(self, key: str, since: str, count: int | None, block_ms: int | None) -> list[Event]:
        """XREAD of one stream after ``since``, as Events (RESP2 and RESP3 replies alike)."""
        reply = self.client.xread({key: since}, count=count, block=block_ms)
        if not reply:
            return []
        entries = next(iter(reply.values())) if isinstance(reply, dict) else reply[0][1]
        if isinstance(entries, list) and entries and isinstance(entries[0], list) and len(entries) == 1:
            entries = entries[0]  # RESP3 wraps the entries once more
        return [Event.from_entry(entry_id, raw) for entry_id, raw in entries]

    def _hashes(self, keys: Sequence[str], decode) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(key)
        return [decode(raw) if raw else None for raw in pipe.execute()]
