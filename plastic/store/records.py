"""The records the store hands back, and how they are read from Redis hashes.

Redis hashes hold strings only.  Fields the store owns are decoded here (times to
float, ``spec``/``attributes``/``resources`` from JSON, ``preemptible`` from 0/1);
every other field a caller wrote is kept as the raw string in ``fields``.
Times are seconds since the epoch on the Redis server's clock (one clock for
every writer, whichever machine it runs on).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from plastic.core.book.lifecycle import AgentState, AttemptOutcome, RunState, TaskState

# Fields the store writes itself; callers may not set them through `fields=`.
COMMON_FIELDS = frozenset({"id", "state", "created_at", "updated_at", "state_at"})
RUN_FIELDS = COMMON_FIELDS
# a run's fields that hold numbers or a list (written as JSON, read back typed by RunRecord.typed_fields)
RUN_NUMBERS = frozenset({"exit_code", "makespan_s", "cost_usd", "plan_usd_per_hour", "pid", "resumes"})
RUN_LISTS = frozenset({"toil_args"})
RUN_OBJECTS = frozenset({"settings"})  # a submitted run's settings (plastic.run.request.settings_json)
TASK_FIELDS = COMMON_FIELDS | {"run", "spec", "attempts"}
AGENT_FIELDS = COMMON_FIELDS


def encode(value: Any) -> str:
    """A hash or stream value: strings as they are, everything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _time(raw: Mapping[str, str], name: str) -> float | None:
    value = raw.get(name)
    return float(value) if value not in (None, "") else None


def _rest(raw: Mapping[str, str], known: frozenset[str] | set[str]) -> dict[str, str]:
    return {k: v for k, v in raw.items() if k not in known}


@dataclass(frozen=True)
class RunRecord:
    id: str
    state: RunState
    created_at: float
    updated_at: float
    state_at: float
    fields: dict[str, str]

    @classmethod
    def from_hash(cls, raw: Mapping[str, str]) -> RunRecord:
        return cls(
            id=raw["id"],
            state=RunState(raw["state"]),
            created_at=float(raw["created_at"]),
            updated_at=float(raw["updated_at"]),
            state_at=float(raw["state_at"]),
            fields=_rest(raw, RUN_FIELDS),
        )

    def typed_fields(self) -> dict[str, Any]:
        """The fields with the numbers (RUN_NUMBERS) as numbers, the lists (RUN_LISTS) as lists and the
        objects (RUN_OBJECTS) as objects; one that does not read as what it should be is left out."""
        out: dict[str, Any] = {}
        for key, value in self.fields.items():
            if key not in RUN_NUMBERS and key not in RUN_LISTS and key not in RUN_OBJECTS:
                out[key] = value
                continue
            try:
                typed = json.loads(value)
            except ValueError:
                continue
            if key in RUN_LISTS and isinstance(typed, list) or key in RUN_OBJECTS and isinstance(typed, dict):
                out[key] = typed
            elif key in RUN_NUMBERS and isinstance(typed, int | float) and not isinstance(typed, bool):
                out[key] = typed
        return out

    def to_json(self, tasks: Mapping[str, int]) -> dict[str, Any]:
        """The run as `plastic status --format json` prints it, alone or in a list: one flat object."""
        return {"id": self.id, "state": str(self.state), "created_at": self.created_at, "updated_at": self.updated_at,
                "state_at": self.state_at, **self.typed_fields(), "tasks": dict(tasks)}


@dataclass(frozen=True)
class TaskRecord:
    run: str
    id: str
    spec: Any
    state: TaskState
    attempts: int
    agent: str | None
    created_at: float
    updated_at: float
    state_at: float
    fields: dict[str, str]

    @classmethod
    def from_hash(cls, raw: Mapping[str, str]) -> TaskRecord:
        return cls(
            run=raw["run"],
            id=raw["id"],
            spec=json.loads(raw["spec"]),
            state=TaskState(raw["state"]),
            attempts=int(raw.get("attempts", 0)),
            agent=raw.get("agent") or None,
            created_at=float(raw["created_at"]),
            updated_at=float(raw["updated_at"]),
            state_at=float(raw["state_at"]),
            fields=_rest(raw, TASK_FIELDS | {"agent"}),
        )


@dataclass(frozen=True)
class AgentRecord:
    id: str
    state: AgentState
    cluster: str | None
    preemptible: bool
    attributes: dict[str, Any]
    hostname: str | None
    resources: dict[str, Any]
    notice_at: float | None
    created_at: float
    updated_at: float
    state_at: float
    fields: dict[str, str]

    @classmethod
    def from_hash(cls, raw: Mapping[str, str]) -> AgentRecord:
        return cls(
            id=raw["id"],
            state=AgentState(raw["state"]),
            cluster=raw.get("cluster") or None,
            preemptible=raw.get("preemptible") == "1",
            attributes=json.loads(raw.get("attributes") or "{}"),
            hostname=raw.get("hostname") or None,
            resources=json.loads(raw.get("resources") or "{}"),
            notice_at=_time(raw, "notice_at"),
            created_at=float(raw["created_at"]),
            updated_at=float(raw["updated_at"]),
            state_at=float(raw["state_at"]),
            fields=_rest(
                raw, AGENT_FIELDS | {"cluster", "preemptible", "attributes", "hostname", "resources", "notice_at"}
            ),
        )


@dataclass(frozen=True)
class AttemptRecord:
    """One ended attempt of a task, as kept in ``run:R:attempts:T`` (one JSON object each)."""

    number: int
    outcome: AttemptOutcome
    agent: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    reason: str | None = None  # Mesos reason or message, notice action, ...
    exit_code: int | None = None
    mesos_task_id: str | None = None
    notice_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        doc = asdict(self)
        doc["outcome"] = str(self.outcome)
        return json.dumps(doc, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> AttemptRecord:
        doc = json.loads(text)
        doc["outcome"] = AttemptOutcome(doc["outcome"])
        return cls(**doc)


@dataclass(frozen=True)
class Event:
    """One entry of an event stream: its stream id, its type and its fields (strings)."""

    id: str
    type: str
    fields: dict[str, str]

    @property
    def at(self) -> float:
        """When it happened: the ``at`` field if the writer set one, else the stream id's milliseconds."""
        written = _time(self.fields, "at")
        return written if written is not None else int(self.id.split("-")[0]) / 1000.0

    @classmethod
    def from_entry(cls, entry_id: str, raw: Mapping[str, str]) -> Event:
        fields = dict(raw)
        return cls(id=entry_id, type=fields.pop("type", ""), fields=fields)


@dataclass(frozen=True)
class Transition:
    """A state change the store made: what moved from which state to which, when, and its event id."""

    kind: str
    id: str
    previous: str
    current: str
    at: float
    event_id: str
