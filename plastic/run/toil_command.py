"""The toil-cwl-runner command line and environment that `plastic run` starts."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plastic.aws.job_store import TOIL_TAGS_ENV, toil_tags
from plastic.core.errors import InputError
from plastic.framework.task_info import EXECUTOR_ENV
from plastic.home import plastic_home
from plastic.store.urls import URL_ENV

CONTAINER_ENGINES = ("docker", "podman", "singularity", "apptainer")
RECORD_ENV = "PLASTIC_RECORD_LOG"
FILE_JOB_STORE = "file"  # a run's job store setting: Toil's file: job store in the run directory, or aws:...
FILE_JOB_STORE_DIR = "jobstore"
# The leader's temporary directory, in the run's: Toil 9.6 leaves files in $TMPDIR at every start (each
# Config makes a message bus file, which the leader's bus then writes; nothing deletes them), so a run
# left one to three files in /tmp for good.  Removed with the job store when the run succeeds; kept
# with it otherwise (`toil status` on the job store reads its bus there).  Toil's workers do not
# inherit the leader's TMPDIR (toil.worker drops it from the leader's environment).
LEADER_TMP = "toil-tmp"
# What /bin/sh splits or parses in an unquoted word (bash's brace expansion too); letters of any
# script, digits and the rest of the usual punctuation of paths are kept as they are.
SHELL_SPECIAL = frozenset(" \t\n|&;<>()$`\\\"'*?[]{}")


@dataclass(frozen=True)
class ToilInvocation:
    argv: list[str]
    env: dict[str, str]
    notes: tuple[str, ...]


def toil_runner() -> str:
    """toil-cwl-runner next to this Python (the same virtualenv), else on PATH."""
    here = Path(sys.executable).parent / "toil-cwl-runner"
    if here.exists():
        return str(here)
    found = shutil.which("toil-cwl-runner")
    if not found:
        raise InputError("toil-cwl-runner not found: install plastic with Toil (pip install 'toil[cwl]')",
                         source="plastic run")
    return found


def shell_special(path: Path) -> list[str]:
    """The characters of SHELL_SPECIAL in the path, each once, sorted."""
    return sorted(set(str(path)) & SHELL_SPECIAL)


def check_run_dir(run_dir: Path) -> None:
    """Refuse a directory Toil cannot run from (a run's, or the service's runs), before anything is
    written there.

    Toil writes each job's command line (``_toil_worker NAME file:JOBSTORE ID``) without quoting the
    job store's path and runs it through /bin/sh, on the leader and on the agents: a space splits the
    path and a parenthesis is a syntax error, so every job fails (toil-cwl-runner alone does the same)."""
    if special := shell_special(run_dir):
        shown = ", ".join({" ": "a space", "\t": "a tab", "\n": "a newline"}.get(c, repr(c)) for c in special)
        raise InputError(f"has {shown}, which Toil's job commands do not quote: every job would fail; choose a "
                         "directory without such characters (--run-dir, --runs-dir)", source=str(run_dir))


def default_run_dir(run_id: str) -> tuple[Path, str | None]:
    """A run's directory when none is given: .plastic/runs/RUN_ID here, or, when this directory's path
    is one Toil cannot run from (check_run_dir), $PLASTIC_HOME/runs/RUN_ID, with a note why."""
    here = (Path(".plastic") / "runs" / run_id).resolve()
    if not shell_special(here):
        return here, None
    elsewhere = (plastic_home() / "runs" / run_id).resolve()
    return elsewhere, (f"this directory's path has characters Toil's job commands do not quote: the run's files "
                       f"are in {elsewhere}")


def needs_unchained(policy: Mapping[str, Any]) -> bool:
    """Chaining runs a successor under its predecessor's placement: refuse it when steps carry their
    own instance type or preempt budget (Toil itself keeps preemptible and resources apart)."""
    for entry in (policy.get("tools") or {}).values():
        preempt = entry.get("preempt")
        if entry.get("instance_type") or (isinstance(preempt, int) and not isinstance(preempt, bool)):
            return True
    return False


def build_invocation(*, workflow: Path, job: Path | None, outdir: Path, run_dir: Path, master: str,
                     redis_url: str, run_id: str, policy_path: Path, policy: Mapping[str, Any],
                     extra: Sequence[str] = (), environ: Mapping[str, str] | None = None,
                     executor: str = "plastic", job_store: str = FILE_JOB_STORE,
                     out_url: str | None = None) -> ToilInvocation:
    """``job_store``: FILE_JOB_STORE (Toil's file: job store in the run directory) or an S3 job store's
    ``aws:REGION:NAME`` (its bucket tagged with the run); ``out_url``: an ``s3://`` URL the outputs are
    exported to (Toil's --destBucket) instead of ``outdir``."""
    env = dict(os.environ if environ is None else environ)
    env[EXECUTOR_ENV] = executor  # how the batch system's tasks run (plastic.framework.task_info)
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = bin_dir + (os.pathsep + env["PATH"] if env.get("PATH") else "")
    env[RECORD_ENV] = str(run_dir / "decisions.jsonl")
    env[URL_ENV] = redis_url  # not on the command line, which Toil logs and keeps in its job store
    (run_dir / LEADER_TMP).mkdir(mode=0o700, exist_ok=True)  # an absent TMPDIR is silently /tmp again
    env["TMPDIR"] = str(run_dir / LEADER_TMP)
    notes: list[str] = []
    argv = [toil_runner(), "--batchSystem", "plastic", "--plasticMaster", master,
            "--plasticRun", run_id, "--plasticPolicy", str(policy_path),
            "--jobStore", toil_job_store(job_store, run_dir), "--outdir", str(outdir),
            "--enableUnlimitedPreemptibleRetries", "true"]
    if job_store != FILE_JOB_STORE:
        env[TOIL_TAGS_ENV] = toil_tags(run_id)  # the tags Toil's leader gives the bucket it makes
    if out_url:
        argv += ["--destBucket", out_url]
    if needs_unchained(policy):
        argv += ["--disableChaining", "true"]
    if "--no-container" not in extra and not any(shutil.which(e, path=env.get("PATH")) for e in CONTAINER_ENGINES):
        argv.append("--no-container")
        notes.append("no container engine on this machine: tools run without containers (--no-container)")
    argv += list(extra)
    argv.append(str(workflow))
    if job is not None:
        argv.append(str(job))
    return ToilInvocation(argv, env, tuple(notes))


def toil_job_store(job_store: str, run_dir: Path) -> str:
    """Toil's --jobStore: the run directory's ``file:`` job store, or the S3 one as it is."""
    return f"file:{run_dir / FILE_JOB_STORE_DIR}" if job_store == FILE_JOB_STORE else job_store


def remove_leader_tmp(run_dir: Path) -> None:
    """The leader's temporary files, once the run succeeded (Toil has deleted its job store then)."""
    shutil.rmtree(run_dir / LEADER_TMP, ignore_errors=True)
