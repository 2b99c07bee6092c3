"""Crash-resume, the batch system's side: a new leader of a run (`plastic run --resume`:
toil-cwl-runner --restart on the same job store and run) takes over what the previous one left.

Every leader of a run is an incarnation (counted in Redis); incarnation k numbers its batch jobs
from (k-1) * JOB_ID_STRIDE, so task records and Mesos task ids never collide across leaders.
From the second incarnation on, the batch system subscribes with the run's framework id (a
failover: the old leader needs --plasticFailoverTimeout; when that ran out, the master removed
the framework and killed its tasks, and the batch system subscribes anew), marks the old
leader's queued tasks KILLED, and hands the old live tasks to the JobBook as orphans (Resumed):
reconciled, adopted when they can finish within --plasticAdoptSeconds (their tool's runtime
estimate less the time they already ran), killed otherwise.  It waits until none is left (at
most the adopt window plus ORPHAN_KILL_WAIT_S) before Toil reads and cleans its job store:
adopted work is kept, and no job's work can be committed twice (each task records its Toil
jobStoreID).
"""

from __future__ import annotations

import logging
import time

from plastic.core.book.events import PriorTask
from plastic.core.book.orphans import LIVE_RECORDS
from plastic.framework.adapter import Framework
from plastic.framework.run_store import RunHandle
from plastic.mesos.driver_errors import MesosFrameworkError

log = logging.getLogger(__name__)

JOB_ID_STRIDE = 1_000_000
ORPHAN_KILL_WAIT_S = 60.0


def first_job_id(incarnation: int) -> int:
    """Where leader incarnation ``incarnation`` (1: the run's first leader) starts numbering its batch jobs."""
    return (incarnation - 1) * JOB_ID_STRIDE


def previous_incarnation(run: RunHandle) -> tuple[str | None, list[PriorTask]]:
    """The framework id to take over and the run's records of the previous leaders' unfinished
    tasks (queued or live), for the book to decide what becomes of each (Resumed)."""
    store, run_id = run.store, run.run_id
    prior: list[PriorTask] = []
    now = time.time()
    for state in ("QUEUED", *LIVE_RECORDS):
        ids = store.tasks_in_state(run_id, state)
        for task in store.get_tasks(run_id, sorted(ids)):
            spec = task.spec if isinstance(task.spec, dict) else {}
            prior.append(PriorTask(task.id, state, task.fields.get("mesos_task") or None, task.agent,
                                   spec.get("tool") or None, spec.get("job_store_id") or None,
                                   max(now - task.state_at, 0.0)))
    return store.load_framework_id(run_id), prior


def start_framework(framework: Framework, *, incarnation: int, framework_id: str | None,
                    failover: float | None) -> bool:
    """Start ``framework``: from the second incarnation on, a failover onto the previous leader's
    framework, or a new framework when the master removed that one (then True)."""
    try:
        framework.start()
    except MesosFrameworkError as error:
        if incarnation <= 1 or not framework_id or not failover:
            raise
        log.warning("plastic: %s: the previous leader's framework %s is gone (its failover timeout ran "
                    "out; the master killed its tasks); subscribing as a new framework",
                    error, framework_id)
        framework.start_anew()
        return True
    return False


def resume(framework: Framework, prior: list[PriorTask], *, incarnation: int, run_id: str | None,
           framework_removed: bool, adopt_s: float | None) -> None:
    """Hand the previous leader's tasks to the book (kill the queued ones, adopt or kill the live ones)
    and wait until none is left."""
    log.info("plastic: leader incarnation %d of run %s (framework %s); %d unfinished task record(s) "
             "of the previous leader", incarnation, run_id, framework.framework_id, len(prior))
    framework.resume(prior, framework_removed=framework_removed)
    wait_s = (adopt_s or 0.0) + ORPHAN_KILL_WAIT_S
    left = framework.wait_orphans(wait_s)
    if left:
        log.warning("plastic: %d task(s) of the previous leader still not ended after %.0f s", left, wait_s)
