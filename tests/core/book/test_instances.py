"""The agent of an EC2 instance (plastic.core.book.instances), and the JobBook's use of it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from plastic.core.book.events import AgentLost, AgentSeen
from plastic.core.book.instances import AgentSighting, agent_of_instance
from plastic.core.book.jobbook import JobBook
from plastic.core.book.placement import AgentInfo
from plastic.core.model import Resources


def test_the_newest_live_agent_of_an_instance():
    assert agent_of_instance([]) is None
    old, new = AgentSighting("a1", True, 1.0), AgentSighting("a2", False, 2.0)
    assert agent_of_instance([old, new]) == "a2"
    assert agent_of_instance([AgentSighting("a1", False, 1.0), AgentSighting("a2", True, 2.0)]) == "a1"
    assert agent_of_instance([AgentSighting("a1", True, 1.0), AgentSighting("a2", True, 2.0)]) == "a2"


@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.booleans(), st.integers(0, 5)), min_size=1))
def test_the_answer_is_one_of_them_and_live_when_any_is(rows):
    sightings = [AgentSighting(a, gone, float(t)) for a, gone, t in rows]
    best = agent_of_instance(sightings)
    assert best in {s.agent_id for s in sightings}
    assert agent_of_instance(reversed(sightings)) == best  # the order given does not matter
    if any(not s.gone for s in sightings):
        assert any(s.agent_id == best and not s.gone for s in sightings)


def test_a_notice_for_an_instance_reaches_the_agent_that_runs_there_now():
    """An agent restarted without its work directory registers with a new id on the same instance."""
    book = JobBook()
    for agent_id in ("old", "new"):
        book.handle(AgentSeen(AgentInfo(agent_id, Resources(2, 4096), preemptible=True, cluster="burst",
                                        instance_type="m5.large", instance_id="i-1")), 0.0)
        if agent_id == "old":
            book.handle(AgentLost("old"), 1.0)
    assert book.agent_of_instance("i-1") == "new"
    assert book.agent_of_instance("i-2") is None
