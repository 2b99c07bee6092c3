"""`RunRecords`: the runs part of `Store` (plastic.store.part): run records and their states, and
what a run keeps beside its record (its Mesos framework id, its count of Toil leaders)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plastic.core.book.lifecycle import RunState
from plastic.store.keys import check_run_id
from plastic.store.part import StorePart
from plastic.store.records import RUN_FIELDS, RunRecord, Transition
from plastic.store.scripts import INITIAL, counted_pairs
from plastic.store.transitions import TransitionCall, run_script, split_fields

if TYPE_CHECKING:
    from redis.client import Pipeline

    from plastic.store.scripts import LuaScript


def new_run_id() -> str:
    """A fresh run id that sorts by creation time: ``r20260101-120000-1a2b3c``."""
    return time.strftime("r%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(3)


class RunRecords(StorePart):
    _create_run: LuaScript

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
