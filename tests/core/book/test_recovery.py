"""Recovery after a crash (plastic.core.book.recovery) and what a Toil leader's end means (plastic.core.book.run_end)."""

from __future__ import annotations

from plastic.core.book.lifecycle import RunState
from plastic.core.book.recovery import (
    FailRun,
    ResumeRun,
    child_ended,
    orphaned_run,
    queue_again,
    toil_start,
)
from plastic.core.book.run_end import run_end


def test_toil_restarts_on_a_saved_workflow_else_starts_again_wiping_what_it_left():
    assert toil_start(True, True) == toil_start(True, False)
    assert toil_start(True, True).restart and not toil_start(True, True).wipe
    assert toil_start(False, True).wipe and not toil_start(False, True).restart
    assert not toil_start(False, False).wipe


def test_an_orphaned_run_is_resumed_a_bounded_number_of_times():
    assert orphaned_run(RunState.RUNNING, 0, True, "gone", "run.json") == ResumeRun("gone")
    assert orphaned_run(RunState.RUNNING, 3, True, "gone", "run.json") == FailRun(
        "gone; resumed 3 times already, not again")
    assert orphaned_run(RunState.RUNNING, 0, False, "gone", "d/run.json") == FailRun(
        "gone; no d/run.json to resume it from")
    # killed while planning or starting its cluster: its plan and run file are on disk
    assert orphaned_run(RunState.PLANNING, 0, True, "gone", "run.json") == ResumeRun("gone")
    assert orphaned_run(RunState.SUBMITTED, 0, True, "gone", "run.json") == FailRun(
        "gone; it was SUBMITTED, nothing to resume")
    assert orphaned_run(RunState.SUCCEEDED, 0, True, "gone", "run.json") == FailRun(
        "gone; it was SUCCEEDED, nothing to resume")


def test_a_watched_child_that_ended():
    kw = dict(pid=7, exit_code=1, log_path="log", resumes=0, has_run_file=True, run_file="run.json")
    assert child_ended(RunState.SUCCEEDED, adopted=False, stopping=False, **kw) is None
    assert child_ended(None, adopted=True, stopping=False, **kw) is None
    assert child_ended(RunState.RUNNING, adopted=False, stopping=False, **kw) == FailRun(
        "plastic run exited with 1 before the run ended; see log")
    assert isinstance(child_ended(RunState.RUNNING, adopted=True, stopping=True, **kw), FailRun)
    assert isinstance(child_ended(RunState.RUNNING, adopted=True, stopping=False, **kw), ResumeRun)


def test_a_popped_submission_is_queued_again_only_when_nothing_runs_it():
    assert queue_again(RunState.SUBMITTED, queued=False, alive=False)
    assert not queue_again(RunState.SUBMITTED, queued=True, alive=False)
    assert not queue_again(RunState.SUBMITTED, queued=False, alive=True)
    assert not queue_again(RunState.RUNNING, queued=False, alive=False)


def test_run_end():
    assert (run_end(0, cancelled=False).state, run_end(0, cancelled=False).exit_code) == (RunState.SUCCEEDED, 0)
    assert (run_end(3, cancelled=False).outcome, run_end(3, cancelled=False).exit_code) == ("failed", 1)
    # a CWL runner's "unsupported requirement" is passed on, as callers of CWL runners expect
    assert (run_end(33, cancelled=False).state, run_end(33, cancelled=False).exit_code) == (RunState.FAILED, 33)
    assert run_end(None, cancelled=True).exit_code == 130 and run_end(0, cancelled=True).state is RunState.CANCELLED


def test_a_leader_that_did_not_succeed_on_a_full_disk_is_a_stopped_run_left_running():
    stopped = run_end(1, cancelled=False, out_of_space=True)
    assert (stopped.outcome, stopped.state, stopped.exit_code) == ("stopped", RunState.RUNNING, 75)
    assert run_end(0, cancelled=False, out_of_space=True).state is RunState.SUCCEEDED  # it finished anyway
    assert run_end(None, cancelled=True, out_of_space=True).state is RunState.CANCELLED


def test_a_run_missing_from_redis_is_recorded_again_only_if_it_started_nothing():
    from plastic.core.book.recovery import record_again

    assert record_again(None, started=False)
    assert record_again(RunState.SUBMITTED, started=False)
    assert not record_again(None, started=True)  # it had a record: this is another Redis
    assert not record_again(RunState.SUBMITTED, started=True)
    for state in RunState:
        if state is not RunState.SUBMITTED:
            assert not record_again(state, started=False)
