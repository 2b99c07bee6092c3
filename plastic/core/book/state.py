"""The JobBook's state and its queries (plastic.core.book.jobbook), pure: what every event handler of
the book (leader_requests, offer_handling, status_handling, agent_handling, resume_handling, endings,
unplaceable) reads and changes, apart from the dispatch, so those modules depend on the state and not
on the book that calls them."""

from __future__ import annotations

from typing import Any

from plastic.core.book import placement as pl
from plastic.core.book.health import DEFAULT_IDLE_AGENT_S, DEFAULT_STARVING_S, ProvisioningHealth
from plastic.core.book.instances import AgentSighting, agent_of_instance
from plastic.core.book.jobs import LIVE, Job
from plastic.core.book.lifecycle import AgentState, TaskState
from plastic.core.book.notices import RebalanceMode, SpotNotices
from plastic.core.book.orphans import Orphans
from plastic.core.book.runtimes import RuntimeHistory

S = TaskState


class BookState:
    """What the JobBook holds (its configuration, jobs, agents, notices, health, runtimes, orphans) and
    the queries on it; the event handlers of the book's modules read and change it."""

    def __init__(
        self,
        *,
        notice_margin_s: float = 30.0,
        rebalance: RebalanceMode = "avoid-long",
        long_task_s: float = 600.0,
        max_lost_relaunches: int = 3,
        cluster_may_grow: bool = True,
        refuse_seconds: float = pl.DEFAULT_REFUSE_SECONDS,
        reconcile_every_s: float = 60.0,
        kill_retry_s: float = 30.0,
        idle_agent_s: float | None = DEFAULT_IDLE_AGENT_S,
        starving_s: float | None = DEFAULT_STARVING_S,
        adopt_s: float = 0.0,
    ):
        self.notices = SpotNotices(margin_s=notice_margin_s, rebalance=rebalance, long_task_s=long_task_s)
        self.health = ProvisioningHealth(idle_agent_s=idle_agent_s, starving_s=starving_s)
        self.runtimes = RuntimeHistory()
        self.max_lost_relaunches = max_lost_relaunches
        self.cluster_may_grow = cluster_may_grow
        self.refuse_seconds, self.reconcile_every_s, self.kill_retry_s = refuse_seconds, reconcile_every_s, kill_retry_s
        self.adopt_s = adopt_s  # after evt.Resumed: how long a running orphan may take to finish

        self.jobs: dict[str, Job] = {}
        self.agents: dict[str, pl.AgentInfo] = {}
        self.agent_states: dict[str, AgentState] = {}  # the agents' records (GONE is final there)
        self.gone: set[str] = set()
        self.ignored: set[str] = set()  # agents the Toil leader asked to give no new work
        self.suppressed = False
        self.seen_uuids: set[str] = set()
        self.ended_count: dict[str, int] = {}
        self.last_reconcile: float | None = None
        self.orphans: Orphans | None = None  # after evt.Resumed: the previous incarnation's tasks

    def config(self) -> dict[str, Any]:
        """The constructor's arguments: with the events, everything a replay needs."""
        n, h = self.notices, self.health
        return {"notice_margin_s": n.margin_s, "rebalance": n.rebalance, "long_task_s": n.long_task_s,
                "max_lost_relaunches": self.max_lost_relaunches, "cluster_may_grow": self.cluster_may_grow,
                "refuse_seconds": self.refuse_seconds, "reconcile_every_s": self.reconcile_every_s,
                "kill_retry_s": self.kill_retry_s, "idle_agent_s": h.idle_agent_s, "starving_s": h.starving_s,
                "adopt_s": self.adopt_s}

    # ------------------------------------------------------------ queries

    def estimate(self, tool: str | None) -> float | None:
        return self.runtimes.estimate(tool)

    def queued(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.state is S.QUEUED]

    def live(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.state in LIVE]

    def on_agent(self, agent_id: str) -> list[Job]:
        return [j for j in self.jobs.values() if j.state in LIVE and j.agent_id == agent_id]

    def cluster(self) -> dict[str, pl.AgentInfo]:
        """Agents that can take new work (for the "could ever fit" check): not gone, not draining."""
        return {a: info for a, info in self.agents.items() if a not in self.gone and a not in self.notices.draining}

    def running_job_ids(self) -> list[str]:
        return [j.job_id for j in self.jobs.values() if j.state in (S.STARTING, S.RUNNING, S.KILLING)]

    def agent_ids_at(self, address: str) -> list[str]:
        """Agent ids matching an address: "ip:port", a bare host (every agent on it) or an agent id."""
        ids = [a for a, info in self.agents.items() if a == address or info.address == address]
        if not ids:
            ids = [a for a, info in self.agents.items() if info.address and info.address.rsplit(":", 1)[0] == address]
        return ids

    def agent_of_instance(self, instance_id: str) -> str | None:
        """The agent on an EC2 instance (plastic.core.book.instances: the newest not gone)."""
        return agent_of_instance(AgentSighting(a, a in self.gone, float(order))
                                 for order, (a, info) in enumerate(self.agents.items())
                                 if info.instance_id == instance_id)

    def orphans_left(self) -> int:
        return 0 if self.orphans is None else len(self.orphans)

    def status_lines(self, now: float) -> list[str]:
        return self.health.status_lines(now, self.jobs, self.agents)
