"""What the end of a run's Toil leader means, pure: the run's outcome, its final state, the exit code."""

from __future__ import annotations

from dataclasses import dataclass

from plastic.core.book.lifecycle import RunState

EXIT_CANCELLED = 130  # as a shell reports SIGINT
EXIT_STOPPED = 75  # EX_TEMPFAIL: stopped for want of disk space; `plastic run --resume` goes on
EXIT_UNSUPPORTED = 33  # a CWL runner's "unsupported requirement" (cwltool's, Toil's): passed on as it is


@dataclass(frozen=True, slots=True)
class RunEnd:
    outcome: str  # succeeded | failed | cancelled | stopped
    state: RunState
    exit_code: int  # of `plastic run`: 0, 1 (the workflow failed), 33 (it needs an unsupported feature),
    # 130 (cancelled), 75 (stopped)


def run_end(returncode: int | None, *, cancelled: bool, out_of_space: bool = False) -> RunEnd:
    """``out_of_space``: the run directory's disk is (nearly) full.  A leader that did not succeed
    then is not a failed workflow: the run stops and stays RUNNING, for `plastic run --resume`."""
    if cancelled:
        return RunEnd("cancelled", RunState.CANCELLED, EXIT_CANCELLED)
    if returncode == 0:
        return RunEnd("succeeded", RunState.SUCCEEDED, 0)
    if returncode == EXIT_UNSUPPORTED:  # what cwltest and other callers of a CWL runner look for
        return RunEnd("failed", RunState.FAILED, EXIT_UNSUPPORTED)
    if out_of_space:
        return RunEnd("stopped", RunState.RUNNING, EXIT_STOPPED)
    return RunEnd("failed", RunState.FAILED, 1)
