"""The words after WORKFLOW [JOB] of `plastic run` and `plastic submit`: the workflow's inputs as flags
(plastic.cwl.job_flags) and toil-cwl-runner's options, each checked before anything starts."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plastic.core.errors import InputError

JOBS_DIR = "jobs"  # under $PLASTIC_HOME: the job orders made from flags, one per run


def _is_option(word: str | Path | None) -> bool:
    return word is not None and str(word).startswith("-") and str(word) != "-"  # `-` is standard input


def _first_option(words: Sequence[str]) -> str:
    """The word to name for words nobody takes: the first option, rather than its value."""
    return next((w for w in words if w.startswith("-")), words[0])


def refuse_option(word: str | Path | None) -> None:
    """WORKFLOW is a word that starts with `-`: an option of nobody's (those before WORKFLOW are plastic's own;
    unknown ones are let through to be read as inputs or Toil options only after it)."""
    if _is_option(word):
        import click

        raise click.UsageError(f"No such option: {word}")


@dataclass(frozen=True)
class CommandLine:
    """What the words after WORKFLOW come to: the job order to run with and the options for Toil."""

    job: Path | None
    toil_args: tuple[str, ...]
    made: bool = False  # the job order was made from flags (and written for this run)

    @contextlib.contextmanager
    def refused_as_bad_input(self) -> Iterator[None]:
        """A job order made from flags goes when the run is refused as bad input, and the error names the
        command line, not that file."""
        try:
            yield
        except InputError as exc:
            if self.made and self.job is not None:
                self.job.unlink(missing_ok=True)
                if exc.source == str(self.job):
                    exc.source = "inputs on the command line"
            raise


def _flag_job(workflow: str, job: str | None, args: Sequence[str],
              check_rest: Callable[[list[str]], None]) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """(the job order the workflow's input flags among ``args`` make, None without any; the other words,
    once ``check_rest`` let them through)."""
    from plastic.cwl.glue import load_process, quiet_cwltool
    from plastic.cwl.job_flags import (
        input_names,
        job_order_from_flags,
        split_input_flags,
    )

    with quiet_cwltool():
        process = load_process(workflow)
        flags, rest = split_input_flags(args, input_names(process))
        check_rest(rest)
        return (job_order_from_flags(process, flags, job) if flags else None), tuple(rest)


def take_inputs(workflow: Path, job: Path | None, args: Sequence[str], run_id: str) -> CommandLine:
    """JOB and the words after it, WORKFLOW and JOB checked to be files.  When they hold workflow inputs,
    the job order they make (on top of JOB's values) is written to $PLASTIC_HOME/jobs/RUN_ID.json; an
    option that is neither an input nor Toil's is one line (InputError)."""
    from plastic.cwl import document_file

    if _is_option(job):
        job, args = None, (str(job), *args)  # no job order: click gave the first flag the JOB slot
    for path in (workflow, job):
        if path is not None and not Path(document_file(path)).is_file():
            raise InputError("no such file", source=str(path))
    if not args:
        return CommandLine(job, ())
    doc, rest = _flag_job(str(workflow), None if job is None else str(job), args,
                          lambda rest: check_toil_options(rest, workflow))
    if doc is None:
        return CommandLine(job, rest)
    from plastic.fileio import write_atomically
    from plastic.home import plastic_home
    from plastic.run.modes import private_dir
    from plastic.store.keys import check_run_id

    try:
        check_run_id(run_id)
    except ValueError as exc:
        raise InputError(str(exc), source="--run-id") from None
    path = private_dir(plastic_home() / JOBS_DIR) / f"{run_id}.json"
    write_atomically(str(path), json.dumps(doc, indent=2, default=str) + "\n")
    return CommandLine(path, rest, made=True)


@contextlib.contextmanager
def job_with_flags(workflow: str, job: str | None, args: Sequence[str], command: str) -> Iterator[str | None]:
    """For `plastic plan` and `inspect`: the job order to read, the workflow's inputs given as flags
    made a temporary one (gone afterwards); any other word there is one line (InputError)."""
    if _is_option(job):
        job, args = None, (job, *args)
    if not args:
        yield job
        return

    def refuse(rest: list[str]) -> None:
        if rest:
            raise InputError(f"{_first_option(rest)}: not an option of plastic {command} or an input of "
                             f"{Path(workflow).name}", source="command line")

    doc, _ = _flag_job(workflow, job, args, refuse)
    with tempfile.TemporaryDirectory(prefix="plastic-inputs-") as tmp:
        path = Path(tmp) / "inputs.json"
        path.write_text(json.dumps(doc, default=str), encoding="utf-8")
        with CommandLine(path, (), made=True).refused_as_bad_input():
            yield str(path)


def check_toil_options(args: Sequence[str], workflow: Path) -> None:
    """One line for a word of ``args`` that toil-cwl-runner would not take as its option (Toil's own
    parser says; a typo would otherwise surface only once Toil starts, after the cluster is up)."""
    if not args:
        return
    from toil.cwl.cwltoil import get_options

    placeholder = "plastic-lowered-workflow.cwl"
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
            options = get_options([*args, placeholder])
    except SystemExit as exc:
        if exc.code in (0, None):
            return  # --help, --version: Toil answers them itself when it starts
        last = [line for line in said.getvalue().splitlines() if line.strip()]
        raise InputError(last[-1].split("error: ", 1)[-1] if last else "bad Toil options",
                         source="toil-cwl-runner options") from None
    strays = [*([options.cwltool] if options.cwltool != placeholder else []),
              *(w for w in options.cwljob if w != placeholder)]
    if strays:
        raise InputError(f"{_first_option(strays)}: not an option of plastic, an input of {workflow.name} or an option "
                         f"of toil-cwl-runner", source="command line")
