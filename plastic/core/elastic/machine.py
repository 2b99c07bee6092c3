"""The elastic controller with its observation: one machine whose inputs are all in the decisions log, pure.

`ElasticMachine` holds the ElasticController (plastic.core.elastic.controller) and the plan-ahead state
of its observation (plastic.core.elastic.observation) and takes the elastic events the decisions log
holds, each with the book's ``now``:

    ElasticStarted               its configuration, logged once per book when the provisioner starts
    NodesListed                  a look: the book (read, never changed) and the listed nodes are
                                 observed (ClusterObserved), then the controller decides
    NodesCreated / CreateRefused the provider's answers to a CreateNodes, to the controller

The provisioner (plastic.framework.provisioner) and the replay (plastic.core.elastic.replay) both step
through it, so a replay runs the same code on the same inputs and must decide the same.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from plastic.core.book.state import BookState
from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.model import ClusterObserved, CreateRefused, ElasticPolicy, NodesCreated
from plastic.core.elastic.observation import NodesListed, PlanAhead, observe, shapes_by_type
from plastic.core.elastic.spread import plan_spreads
from plastic.core.model import Market, NodeShape, TaskSpec


@dataclass(frozen=True, slots=True)
class ElasticStarted:
    """The elastic controller started (once per book): what a replay builds the same machine from."""

    policy: ElasticPolicy
    shapes: tuple[NodeShape, ...]
    cluster_names: tuple[tuple[str, Market, str], ...] = ()  # (instance type, market, cluster): the plan's
    plan_tasks: tuple[TaskSpec, ...] = ()  # expected until the Toil leader issues them
    started_at: float | None = None  # when the elastic cluster started (book clock); None: at the first look


ElasticInput = NodesListed | NodesCreated | CreateRefused


class ElasticMachine:
    """The controller and the plan-ahead state of its observation (see the module docstring)."""

    def __init__(self, controller: ElasticController, ahead: PlanAhead = PlanAhead()):
        self.controller = controller
        # each step's runtimes in the plan: the spread of a step whose tool the book has not met yet
        self.ahead = replace(ahead, priors=ahead.priors or plan_spreads(ahead.tasks))
        self.shapes = shapes_by_type(controller.shapes)  # a node's capacity and price, by its type and market
        self.observed: ClusterObserved | None = None  # the last look's observation

    @classmethod
    def of(cls, started: ElasticStarted) -> ElasticMachine:
        """The machine a logged ElasticStarted describes (enums read back from their values)."""
        shapes = [replace(s, market=Market(s.market)) for s in started.shapes]
        names = {(itype, Market(market)): cluster for itype, market, cluster in started.cluster_names}
        controller = ElasticController(shapes, started.policy, cluster_names=names)
        return cls(controller, PlanAhead(tuple(started.plan_tasks), started.started_at))

    def started(self, started_at: float | None = None) -> ElasticStarted:
        """Its configuration as it starts (before any event), the elastic cluster starting at ``started_at``
        when given; the plan-ahead state takes that start."""
        if started_at is not None:
            self.ahead = replace(self.ahead, started_at=started_at)
        c = self.controller
        names = tuple((itype, market, cluster) for (itype, market), cluster in c.cluster_names.items())
        return ElasticStarted(c.policy, c.shapes, names, self.ahead.tasks, self.ahead.started_at)

    def handle(self, event: ElasticInput, book: BookState, now: float) -> list:
        """The controller's records and commands for one input (the book is only read)."""
        match event:
            case NodesListed():
                seen = observe(book, event, self.shapes, self.controller.policy, self.ahead, now)
                self.ahead, self.observed = seen.ahead, seen.observed
                return self.controller.handle(seen.observed, now)
            case NodesCreated() | CreateRefused():
                return self.controller.handle(event, now)
            case _:
                raise TypeError(f"not an elastic machine's input: {event!r}")
