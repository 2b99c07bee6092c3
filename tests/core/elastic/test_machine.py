"""plastic.core.elastic.machine: the controller and its observation's state, built again from what the log
holds (its configuration, through JSON) and stepped by the logged inputs."""

from __future__ import annotations

import json

import pytest

from plastic.core.codec import encode
from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.machine import ElasticMachine
from plastic.core.elastic.model import CreateNodes, CreateRefused, ElasticPolicy, NodesCreated
from plastic.core.elastic.observation import NodesListed, PlanAhead
from plastic.core.elastic.replay import read_event
from plastic.core.model import PREEMPTIBLE, Market, TaskSpec
from tests.fakes.catalogs import ELASTIC_SHAPES
from tests.fakes.jobbook import Harness

PLAN = (TaskSpec("split", 1, 1024, PREEMPTIBLE, 10.0),
        TaskSpec("sort[0]", 1, 1024, PREEMPTIBLE, 30.0, parents=("split",)))


def through_the_log(value):
    return read_event(json.loads(json.dumps(encode(value))))


def test_the_logged_configuration_builds_the_same_machine():
    controller = ElasticController(ELASTIC_SHAPES, ElasticPolicy(max_nodes=5, lead_s=20.0),
                                   cluster_names={("m5.large", Market.SPOT): "burst"})
    machine = ElasticMachine(controller, PlanAhead(PLAN))
    started = machine.started(started_at=12.5)
    # the plan's runtimes of each step: the spread of a step whose tool the book has not met
    assert machine.ahead == PlanAhead(PLAN, 12.5, (("sort", (30.0,)), ("split", (10.0,))))
    again = ElasticMachine.of(through_the_log(started))
    assert again.started() == started
    assert again.controller.shapes == controller.shapes
    assert all(isinstance(s.market, Market) for s in again.controller.shapes)
    assert again.controller.cluster_names == {("m5.large", Market.SPOT): "burst"}
    assert again.controller.policy == controller.policy and again.ahead == machine.ahead


def test_the_same_inputs_give_the_same_decisions_to_a_machine_built_from_the_log():
    """A queued job with no node: both machines ask for the same nodes; the provider's answers, read back
    from the log, leave them alike (a refused spot type is avoided by both)."""
    h = Harness()
    h.issue("j")
    first = ElasticMachine(ElasticController(ELASTIC_SHAPES, ElasticPolicy()))
    second = ElasticMachine.of(through_the_log(first.started()))
    look = NodesListed(())
    asked = first.handle(look, h.book, h.now)
    assert asked == second.handle(through_the_log(look), h.book, h.now)
    spot = next(c for c in asked if isinstance(c, CreateNodes) and c.market is Market.SPOT)
    for answer in (NodesCreated(spot.request, ()), CreateRefused(spot.request, spot.instance_type, Market.SPOT, "no")):
        read = through_the_log(answer)
        assert read == answer and first.handle(answer, h.book, h.now) == second.handle(read, h.book, h.now)
    assert first.controller.refused == second.controller.refused
    assert all(isinstance(market, Market) for _, market in second.controller.refused)
    h.now += 5
    assert first.handle(look, h.book, h.now) == second.handle(look, h.book, h.now)


def test_what_is_no_input_of_the_machine_is_refused_and_an_older_look_is_not_read():
    machine = ElasticMachine(ElasticController(ELASTIC_SHAPES))
    with pytest.raises(TypeError):
        machine.handle(PLAN[0], Harness().book, 0.0)
    assert read_event({"type": "ClusterObserved", "queued": 3, "nodes": {"ready": 2}}) is None
    assert read_event(None) is None
