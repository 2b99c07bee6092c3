"""The toil-cwl-runner command line and environment that `plastic run` starts."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plastic.core.errors import InputError

CONTAINER_ENGINES = ("docker", "podman", "singularity", "apptainer")
RECORD_ENV = "PLASTIC_RECORD_LOG"
REDIS_ENV = "PLASTIC_REDIS_URL"


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
                     extra: Sequence[str] = (), environ: Mapping[str, str] | None = None) -> ToilInvocation:
    env = dict(os.environ if environ is None else environ)
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = bin_dir + (os.pathsep + env["PATH"] if env.get("PATH") else "")
    env[RECORD_ENV] = str(run_dir / "decisions.jsonl")
    env[REDIS_ENV] = redis_url  # not on the command line, which Toil logs and keeps in its job store
    notes: list[str] = []
    argv = [toil_runner(), "--batchSystem", "plastic", "--plasticMaster", master,
            "--plasticRun", run_id, "--plasticPolicy", str(policy_path),
            "--jobStore", f"file:{run_dir / 'jobstore'}", "--outdir", str(outdir),
            "--enableUnlimitedPreemptibleRetries", "true"]
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
