"""What to do with a run after a crash, pure: restart Toil or start it again, resume a run a dead
service left or fail it, queue a popped submission again.

The shell (plastic.run.runner, plastic.service.service) gathers the facts (the job store's files, the
run's record in Redis, whether a process lives) and carries out what these functions decide.
"""

from __future__ import annotations

from dataclasses import dataclass

from plastic.core.book.lifecycle import RunState

MAX_RESUMES = 3
FINAL = frozenset({RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED})
# a run is PLANNING from its plan and run file on disk until its cluster is up, then RUNNING: killed
# in either, `plastic run --resume` can go on from what it saved
RESUMABLE = frozenset({RunState.PLANNING, RunState.RUNNING})


@dataclass(frozen=True, slots=True)
class ToilStart:
    """How `plastic run --resume` starts Toil: ``restart`` on the job store it saved, or start the
    workflow again (``wipe``: after deleting the job store Toil left before saving its workflow)."""

    restart: bool
    wipe: bool

    @property
    def note(self) -> str:
        return ("toil-cwl-runner --restart on its job store" if self.restart
                else "Toil had saved nothing yet; starting it again")


def toil_start(workflow_saved: bool, job_store_exists: bool) -> ToilStart:
    """``workflow_saved``: Toil got as far as saving the workflow's root job (a --restart can go on)."""
    return ToilStart(restart=workflow_saved, wipe=not workflow_saved and job_store_exists)


def record_again(state: RunState | None, *, started: bool) -> bool:
    """`plastic run --resume` of a run that is not in Redis (``state`` None) or still SUBMITTED there:
    killed between writing its run file and going PLANNING, before it ``started`` anything (a cluster,
    a job store, a log, a report), it is recorded again and goes on as `plastic run` would have.  A
    run that started something had its record: missing, it is in another Redis, and the resume says so."""
    return (state is None or state is RunState.SUBMITTED) and not started


@dataclass(frozen=True, slots=True)
class ResumeRun:
    why: str


@dataclass(frozen=True, slots=True)
class FailRun:
    reason: str


def orphaned_run(state: RunState, resumes: int, has_run_file: bool, why: str, run_file: str,
                 *, max_resumes: int = MAX_RESUMES) -> ResumeRun | FailRun:
    """A run whose `plastic run` died without ending it (``why``): resume a PLANNING or RUNNING run
    that has its run file and was resumed fewer than ``max_resumes`` times, else fail it saying why not."""
    if state not in RESUMABLE:
        return FailRun(f"{why}; it was {state}, nothing to resume")
    if not has_run_file:
        return FailRun(f"{why}; no {run_file} to resume it from")
    if resumes >= max_resumes:
        return FailRun(f"{why}; resumed {resumes} times already, not again")
    return ResumeRun(why)


def child_ended(state: RunState | None, *, adopted: bool, stopping: bool, pid: int, exit_code: int | None,
                log_path: str, resumes: int, has_run_file: bool, run_file: str) -> ResumeRun | FailRun | None:
    """A `plastic run` the service watched ended; its run (``state``, None: gone from Redis) is over, or:
    a child of this service failed it; one left by a previous service is resumed (unless the service
    is stopping)."""
    if state is None or state in FINAL:
        return None
    if not adopted:
        return FailRun(f"plastic run exited with {exit_code} before the run ended; see {log_path}")
    if stopping:
        return FailRun(f"plastic run (pid {pid}) did not end its run when the service stopped")
    return orphaned_run(state, resumes, has_run_file,
                        f"its plastic run (pid {pid}, started by a previous service) ended before the run did",
                        run_file)


def queue_again(state: RunState, queued: bool, alive: bool) -> bool:
    """A SUBMITTED run a dead service popped: not in the queue and no live process runs it."""
    return state is RunState.SUBMITTED and not queued and not alive
