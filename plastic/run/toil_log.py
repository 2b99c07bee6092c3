"""What a failed run's Toil log says went wrong, for the one line `plastic run` ends with.

Toil copies a failed job's worker log into its own: cwltool's `[job NAME] exited
with status: N`, then `Failed command standard error:` and the command's standard
error, each line indented by a tab.  A CWL feature the runner does not support
ends in a line `...UnsupportedRequirement: WHY`.  NAME ends with the lowered
tool's id (`plastic_<step>`), which the run's policy maps back to the step the
user wrote.  Best effort: a log without these lines (a crash of the leader,
another Toil) gives the last line that says error or failed, as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_EXITED = re.compile(r"\[job ([^\]]+)\] exited with status: (-?\d+)")
_STDERR_HEAD = "Failed command standard error:"
_UNSUPPORTED = re.compile(r"UnsupportedRequirement: (.+?)\.?$")
_LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\dT")  # a new record of Toil's or cwltool's logging
_ERROR_WORDS = ("ERROR", "Error", "error", "failed", "Failed")
LINE_CHARS = 300


@dataclass(frozen=True, slots=True)
class LoggedFailure:
    step: str | None = None  # the step that failed, as the workflow names it (or cwltool's job name)
    exit_status: int | None = None
    stderr: str = ""  # the last line of its standard error
    unsupported: str = ""  # why, when the workflow needs a feature the runner does not support
    last_error: str = ""  # the fallback: the log's last line that says error or failed

    def describe(self) -> str:
        if self.unsupported:
            return f"it needs a feature the runner does not support: {self.unsupported}"
        if self.step is not None:
            what = f"step '{self.step}' exited with status {self.exit_status}"
            return f"{what}: {self.stderr}" if self.stderr else what
        return f"last error: {self.last_error}" if self.last_error else ""


def read_failure(lines: Sequence[str], steps_by_tool: Mapping[str, str]) -> LoggedFailure:
    """The first failed command of the log (its step, status and last line of standard error),
    why the runner refused the workflow, and the last line that says error or failed."""
    plain = [_printable(line.strip()) for line in lines]
    unsupported = next((m.group(1) for line in plain if (m := _UNSUPPORTED.search(line))), "")
    last_error = next((line for line in reversed(plain) if line and any(w in line for w in _ERROR_WORDS)),
                      plain[-1] if plain else "")
    for at, line in enumerate(plain):
        exited = _EXITED.search(line)
        if exited is None:
            continue
        return LoggedFailure(step=step_of(exited.group(1), steps_by_tool), exit_status=int(exited.group(2)),
                             stderr=_stderr_after(plain, at)[:LINE_CHARS], unsupported=unsupported[:LINE_CHARS],
                             last_error=last_error[-LINE_CHARS:])
    return LoggedFailure(unsupported=unsupported[:LINE_CHARS], last_error=last_error[-LINE_CHARS:])


def _printable(text: str) -> str:
    """A log line as one plain line of text: a tool's control characters (colours, cursor moves) as `?`."""
    return text if text.isprintable() else "".join(c if c.isprintable() else "?" for c in text)


def step_of(job_name: str, steps_by_tool: Mapping[str, str]) -> str:
    """cwltool's job name -> the step.  The name ends with the tool id, after the dotted path of a
    scatter's job (`main.2.plastic_align`) and before `_N` (the N-th job of one tool)."""
    tool = job_name.rpartition(".")[2]
    if tool in steps_by_tool:
        return steps_by_tool[tool]
    base, _, number = tool.rpartition("_")
    if number.isdigit() and base in steps_by_tool:
        return steps_by_tool[base]
    return job_name


def _stderr_after(lines: Sequence[str], at: int) -> str:
    """The last non-empty line of the standard error logged after line `at`, before the next record."""
    for start in range(at + 1, min(len(lines), at + 50)):
        if _STDERR_HEAD in lines[start]:
            text: list[str] = []
            for line in lines[start + 1:]:
                if _LOG_LINE.match(line):
                    break
                if line:
                    text.append(line)
            return text[-1] if text else ""
        if _EXITED.search(lines[start]):
            return ""
    return ""


__all__ = ["LINE_CHARS", "LoggedFailure", "read_failure", "step_of"]
