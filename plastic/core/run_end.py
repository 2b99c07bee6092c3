"""What the end of a run's Toil leader means, pure: the run's outcome, its final state, the exit code."""

from __future__ import annotations

from dataclasses import dataclass

from plastic.core.lifecycle import RunState

EXIT_CANCELLED = 130  # as a shell reports SIGINT


@dataclass(frozen=True, slots=True)
class RunEnd:
    outcome: str  # succeeded | failed | cancelled
    state: RunState
    exit_code: int  # of `plastic run`: 0, 1 (the workflow failed), 130 (cancelled)


def run_end(returncode: int | None, *, cancelled: bool) -> RunEnd:
    if cancelled:
        return RunEnd("cancelled", RunState.CANCELLED, EXIT_CANCELLED)
    if returncode == 0:
        return RunEnd("succeeded", RunState.SUCCEEDED, 0)
    return RunEnd("failed", RunState.FAILED, 1)
