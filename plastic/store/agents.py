"""`AgentRecords`: the agents part of `Store` (plastic.store.part): the agents seen, whatever the run,
and their states (ACTIVE, DRAINING, GONE)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plastic.core.book.lifecycle import AgentState
from plastic.store.part import StorePart
from plastic.store.records import AGENT_FIELDS, AgentRecord, Transition
from plastic.store.scripts import INITIAL, counted_pairs
from plastic.store.transitions import TransitionCall, run_script, split_fields

if TYPE_CHECKING:
    from redis.client import Pipeline

    from plastic.store.scripts import LuaScript


class AgentRecords(StorePart):
    _upsert_agent: LuaScript

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
