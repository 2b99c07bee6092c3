"""One source of truth, under random interleavings of events (hypothesis state machine):

- after every step, the run's records in a real Redis (written by the StoreRecorder from what the
  JobBook returned) hold, for every task and agent, exactly the state the JobBook has;
- at the end of every example, the decisions log of the whole sequence replays (plastic.core.book.replay)
  into a fresh book and gives the same commands and records.

The events are those of tests/core/book/jobbook_machine.py (its rules are reused).
"""

from __future__ import annotations

import itertools
import json
import uuid

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant

from plastic.core.book.events import RuntimeHistoryLoaded
from plastic.core.book.jobbook import JobBook
from plastic.core.book.replay import output_line, replay
from plastic.core.codec import encode
from plastic.framework.store_recorder import StoreRecorder
from plastic.store import Store, start_embedded
from tests.core.book.jobbook_machine import ESTIMATES, JobBookMachine

_server = None


def server(tmp_root="/tmp"):
    """One embedded Redis for this module's examples (hypothesis machines take no fixtures)."""
    global _server
    if _server is None:
        import tempfile

        _server = start_embedded(tempfile.mkdtemp(prefix="plastic-book-redis-", dir=tmp_root))
    return _server


def teardown_module():
    global _server
    if _server is not None:
        _server.stop()
        import shutil

        shutil.rmtree(_server.data_dir, ignore_errors=True)  # under /tmp (a short socket path): not left there
        _server = None


class BookAndRedisMachine(JobBookMachine):
    @initialize(may_grow=st.booleans(), rebalance=st.sampled_from(["ignore", "avoid-long", "drain"]))
    def start(self, may_grow, rebalance):
        self.client = server().client()
        self.store = Store(self.client, prefix=f"p-{uuid.uuid4().hex[:10]}:")
        self.run_id = self.store.create_run(fields={"workflow": "property"})
        self.recorder = StoreRecorder(self.store, self.run_id)
        self.book = JobBook(cluster_may_grow=may_grow, rebalance=rebalance, max_lost_relaunches=2)
        self.log = [{"kind": "book", "config": self.book.config()}]
        self.now = 0.0
        self.ended, self.noticed, self.issued, self.uuids, self.ids = {}, set(), set(), [], itertools.count()
        for tool, seconds in ESTIMATES.items():
            self.apply(RuntimeHistoryLoaded(tool, (seconds,)), 0.0)

    def apply(self, event, dt=1.0):
        at = self.now + dt
        decided = super().apply(event, dt)
        self.recorder.step(event, at, decided.records, decided.commands)
        self.log.append(json.loads(json.dumps({"kind": "event", "now": at, "event": encode(event)})))
        self.log += [output_line(c) for c in (*decided.records, *decided.commands)]
        return decided

    @invariant()
    def redis_holds_the_books_states(self):
        assert self.recorder.flush(10)
        assert self.recorder.writer.refused == 0 and self.recorder.writer.dropped == 0
        tasks = {t.id: t for t in self.store.get_tasks(self.run_id)}
        assert set(tasks) == set(self.book.jobs)
        for job_id, job in self.book.jobs.items():
            assert tasks[job_id].state == job.state, f"task {job_id}: Redis {tasks[job_id].state}, book {job.state}"
        for agent_id, state in self.book.agent_states.items():
            record = self.store.get_agent(agent_id)
            assert record is not None and record.state == state, f"agent {agent_id}: Redis {record}, book {state}"

    def teardown(self):
        try:
            result = replay(self.log)
            assert result.books == 1 and not result.mismatches, result.mismatches[:1]
        finally:
            self.recorder.close(5)
            self.client.close()


BookAndRedisMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None,
                                                 suppress_health_check=[HealthCheck.too_slow])
TestBookAndRedis = BookAndRedisMachine.TestCase
TestBookAndRedis.pytestmark = [pytest.mark.slow]  # make test-fast leaves it out
