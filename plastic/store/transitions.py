"""Atomic compare-and-set of a record's state: the Python side of the TRANSITION script.

`TransitionCall` describes one state change (which record, which sets, what else to write)
and turns it into one script call: the script checks the current state (and the expected
one, when given) against the table generated from `plastic.core.book.lifecycle`, and in the same
atomic step moves the id between the per-state sets, writes the fields and counters,
appends the attempt (tasks) and the event.  A refusal raises TransitionError with the
record id and both states (at `Store.execute` when queued on a pipeline).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from redis.client import Pipeline
from redis.exceptions import ResponseError

from plastic.store.records import AttemptRecord, Transition, encode
from plastic.store.scripts import LuaScript, counted_list, counted_pairs
from plastic.store.store_errors import translate

# Fields every transition event carries; callers' extra event fields may not reuse them.
EVENT_FIELDS = frozenset({"type", "kind", "id", "from", "to", "at"})


def run_script(script: LuaScript, keys: Sequence[str], args: Sequence[Any], pipeline: Pipeline | None) -> Any:
    """Call a store script; its ``PLASTIC_*`` refusals become exceptions (see errors.translate)."""
    try:
        return script(keys, args, pipeline)
    except ResponseError as error:
        raise translate(error) from None


def split_fields(fields: Mapping[str, Any] | None, reserved: frozenset[str]) -> tuple[dict[str, str], list[str]]:
    """Caller fields as (to set, to delete): None deletes a field; store-managed names are refused."""
    sets: dict[str, str] = {}
    dels: list[str] = []
    for name, value in (fields or {}).items():
        if name in reserved:
            raise ValueError(f"field {name!r} is managed by the store")
        if value is None:
            dels.append(name)
        else:
            sets[name] = encode(value)
    return sets, dels


def event_fields(event: Mapping[str, Any] | None) -> dict[str, str]:
    extra = {name: encode(value) for name, value in (event or {}).items()}
    clash = EVENT_FIELDS & extra.keys()
    if clash:
        raise ValueError(f"event fields {sorted(clash)} are written by the store")
    return extra


@dataclass(frozen=True)
class TransitionCall:
    kind: str  # "task" | "agent" | "run": selects the table inside the script
    record_id: str
    record_key: str  # the record's hash (holds "state")
    stream_key: str  # where the transition event goes
    set_prefix: str  # per-state set key = set_prefix + state
    reserved: frozenset[str]  # fields callers may not write
    attempts_key: str | None = None  # tasks: where `attempt` is appended

    def __call__(
        self,
        script: LuaScript,
        new_state: str,
        *,
        expected: str | None = None,
        fields: Mapping[str, Any] | None = None,
        incr: Mapping[str, int] | None = None,
        event: Mapping[str, Any] | None = None,
        attempt: AttemptRecord | None = None,
        maxlen: int,
        pipeline: Pipeline | None = None,
    ) -> Transition | None:
        if attempt is not None and self.attempts_key is None:
            raise ValueError(f"a {self.kind} has no attempts")
        sets, dels = split_fields(fields, self.reserved)
        incrs = {name: str(int(delta)) for name, delta in (incr or {}).items()}
        keys = [self.record_key, self.stream_key] + ([self.attempts_key] if self.attempts_key else [])
        args = [
            self.kind,
            self.record_id,
            str(new_state),
            "" if expected is None else str(expected),
            self.set_prefix,
            str(maxlen),
            *counted_pairs(sets),
            *counted_list(dels),
            *counted_pairs(incrs),
            *counted_pairs(event_fields(event)),
            attempt.to_json() if attempt is not None else "",
        ]
        result = run_script(script, keys, args, pipeline)
        if pipeline is not None:
            return None
        previous, at, event_id = result
        return Transition(self.kind, self.record_id, previous, str(new_state), float(at), event_id)
