"""The invariants of a JobBook (plastic.core.book.jobbook), checked after every step in the tests; pure."""

from __future__ import annotations

from typing import Any

from plastic.core.book.jobs import ENDED, LIVE
from plastic.core.book.lifecycle import TaskState

S = TaskState


def check_invariants(book: Any) -> None:
    """Raise AssertionError when an invariant of ``book`` does not hold."""
    for jid, job in book.jobs.items():
        assert job.job_id == jid
        assert job.state is not S.LOST, f"{jid}: LOST is transient"
        assert job.attempt == 1 + job.preemptions + job.losses + job.drops, jid
        ended = book.ended_count.get(jid, 0)
        assert ended == (1 if job.state in ENDED else 0), f"{jid}: ended {ended} times in {job.state}"
        if job.state in LIVE:
            assert job.agent_id is not None, jid
            assert job.agent_id not in book.gone, f"{jid} live on gone agent {job.agent_id}"
            assert job.current is not None and job.current.agent_id == job.agent_id, jid
            if job.launched_reliable_only:
                assert not book.agents[job.agent_id].preemptible, f"{jid}: reliable job on preemptible agent"
            assert (job.kill_cause is not None) <= (job.state is S.KILLING), jid
            assert not (job.kept_for_notice and job.state is S.KILLING), jid
            if job.kept_for_notice:
                assert job.agent_id in book.notices.draining, jid
        if job.state is S.QUEUED:
            assert job.agent_id is None and job.kill_cause is None and not job.kept_for_notice, jid
            assert job.current is None, f"{jid}: queued attempt already launched"
        else:
            assert not job.awaiting_job_store, f"{jid}: awaits the job store in {job.state}"
        for a, b in zip(job.attempts, job.attempts[1:]):
            assert a.attempt < b.attempt and a.end is not None, jid
    assert book.suppressed == (not book.queued()), "suppressed iff nothing is queued"
