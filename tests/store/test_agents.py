"""Agents: upsert without touching state, transitions, notices handled once."""

from __future__ import annotations

import threading

import pytest

from plastic.core.book.lifecycle import AGENT_TRANSITIONS, AgentState, TransitionError
from plastic.store import UnknownRecordError

from .helpers import path_to

A = AgentState


def test_upsert_creates_active_then_updates_without_touching_state(store):
    assert (
        store.upsert_agent(
            "s0",
            cluster="burst-small",
            preemptible=True,
            attributes={"preemptible": "true", "cores": 2},
            hostname="10.0.0.5",
            resources={"cpus": 2, "mem": 2048},
        )
        is True
    )
    agent = store.get_agent("s0")
    assert (agent.state, agent.cluster, agent.preemptible, agent.hostname) == (
        A.ACTIVE,
        "burst-small",
        True,
        "10.0.0.5",
    )
    assert agent.attributes == {"preemptible": "true", "cores": 2} and agent.resources == {"cpus": 2, "mem": 2048}
    assert agent.notice_at is None
    store.transition_agent("s0", A.DRAINING)
    assert store.upsert_agent("s0", hostname="10.0.0.6", fields={"instance_type": "m5.large"}) is False
    agent = store.get_agent("s0")
    assert agent.state is A.DRAINING and agent.hostname == "10.0.0.6" and agent.cluster == "burst-small"
    assert agent.fields == {"instance_type": "m5.large"}
    assert [e.type for e in store.read_events(None)] == ["agent_added", "transition"]


def test_agents_by_state(store):
    for name, preemptible in (("core-0", False), ("s0", True), ("s1", True)):
        store.upsert_agent(name, preemptible=preemptible, cluster="core" if not preemptible else "burst")
    store.transition_agent("s0", A.DRAINING, fields={"notice_at": 1234.5})
    store.transition_agent("s1", A.GONE)
    assert [a.id for a in store.agents()] == ["core-0", "s0", "s1"]
    assert [a.id for a in store.agents(A.ACTIVE)] == ["core-0"]
    [draining] = store.agents("DRAINING")
    assert draining.id == "s0" and draining.notice_at == 1234.5
    assert [a.id for a in store.agents(A.GONE)] == ["s1"]
    assert store.get_agent("core-0").preemptible is False


@pytest.mark.parametrize("source,target", [(s, t) for s, targets in AGENT_TRANSITIONS.items() for t in sorted(targets)])
def test_every_allowed_agent_transition(store, run_id, source, target):
    store.upsert_agent("s0")
    for state in path_to("agent", "ACTIVE", source):
        store.transition_agent("s0", state)
    moved = store.transition_agent("s0", target, expected=source, run_id=run_id, event={"reason": "test"})
    assert (moved.previous, moved.current) == (source, target)
    assert {s for s in A if store.client.sismember(store.keys.agent_state(s), "s0")} == {target}
    last = store.read_events(run_id)[-1]  # agent events go to the run's stream when one is named
    assert (last.fields["kind"], last.fields["id"], last.fields["to"], last.fields["reason"]) == (
        "agent",
        "s0",
        target,
        "test",
    )


def test_refused_agent_transitions(store):
    store.upsert_agent("s0")
    with pytest.raises(TransitionError) as caught:
        store.transition_agent("s0", A.ACTIVE)
    assert (caught.value.kind, caught.value.record_id, caught.value.current, caught.value.wanted) == (
        "agent",
        "s0",
        "ACTIVE",
        "ACTIVE",
    )
    store.transition_agent("s0", A.GONE)
    for target in A:
        with pytest.raises(TransitionError):
            store.transition_agent("s0", target)
    with pytest.raises(UnknownRecordError):
        store.transition_agent("ghost", A.DRAINING)


def test_a_flood_of_duplicate_notices_drains_once(store):
    store.upsert_agent("s0", preemptible=True)
    barrier = threading.Barrier(12)
    wins, losses = [], []

    def notice(i: int) -> None:
        barrier.wait()
        try:
            wins.append(store.transition_agent("s0", A.DRAINING, expected=A.ACTIVE, fields={"notice_at": 100 + i}))
        except TransitionError as error:
            losses.append(error)

    threads = [threading.Thread(target=notice, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and len(losses) == 11
    assert all(e.current == "DRAINING" for e in losses)
    assert store.get_agent("s0").notice_at in {100.0 + i for i in range(12)}
    drains = [e for e in store.read_events(None) if e.fields.get("to") == "DRAINING"]
    assert len(drains) == 1
