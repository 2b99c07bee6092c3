"""`plastic serve`: take submissions from Redis and run them, several at once, up to a limit.

Each run is a `plastic run --run-id ID --quiet` child process, the service's Redis URL in its
environment (``PLASTIC_REDIS_URL``: a password is never on a command line), with its own Toil leader,
its own local cluster unless the service was given `--master`, so a failing run cannot take
the service down, and every run records itself in Redis exactly as a run started by hand.
Children run in their own sessions: they outlive a service that is killed.

The service's own bookkeeping:

- at start (`recover`), what a dead service left: a run whose `plastic run` is still alive (its
  `pid`, whose command line names the run; its directory under the runs directory) is watched by
  pid; a RUNNING run whose process
  is gone is resumed with `plastic run --resume RUN_DIR` as a new child (plastic.run.runner), at
  most MAX_RESUMES times per run (counted in its `resumes` field); one that cannot be resumed
  (no run.json, not yet RUNNING, resumed too often) is marked FAILED with the reason; runs still
  SUBMITTED, not in the queue and with no live process (popped by the dead service) are queued
  again;
- a watched process that goes while its run is not over was orphaned by the dead service: the
  run is resumed as above;
- a child of this service that exits while its run is not over (it failed, or was killed under
  a live service) gets its run marked FAILED with the exit code, so `plastic status` never shows
  a run running forever.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from redis.exceptions import RedisError

from plastic.core.book.lifecycle import RunState, TransitionError
from plastic.core.book.recovery import (
    MAX_RESUMES,
    FailRun,
    ResumeRun,
    child_ended,
    orphaned_run,
    queue_again,
)
from plastic.procs import cmdline_mentions, pid_alive
from plastic.run.request import RunRequest, request_from_json, run_args, settings_json
from plastic.run.runner import RUN_FILE
from plastic.store import RunRecord, Store
from plastic.store.urls import URL_ENV

log = logging.getLogger(__name__)

LOG_FILE = "plastic-run.log"


@dataclass
class Child:
    """A `plastic run` the service watches: one it started (process), or one a dead service started (pid only)."""

    run_id: str
    pid: int
    log_path: Path
    process: subprocess.Popen | None = None

    @property
    def adopted(self) -> bool:
        return self.process is None

    def running(self) -> bool:
        return pid_alive(self.pid) if self.process is None else self.process.poll() is None

    def send(self, signum: int) -> None:
        if self.process is not None:
            self.process.send_signal(signum)
            return
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def wait(self, timeout_s: float) -> bool:
        """True when the process ended within timeout_s."""
        deadline = time.monotonic() + timeout_s
        while self.running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
        return True

    @property
    def exit_code(self) -> int | None:
        """The exit code of a child that ended; None for an adopted process (not ours to wait for)."""
        return None if self.process is None else self.process.returncode


def submission_fields(workflow: Path, job: Path | None, outdir: Path | None, toil_args: tuple[str, ...],
                      executor: str = "plastic", *, out_url: str | None = None,
                      shipped: bool = False) -> dict[str, str]:
    """A submitted run's fields: the run's settings (plastic.run.request: the service starts `plastic run`
    with them), and the few that `plastic status` shows (``outdir`` empty: the run directory's).
    ``shipped``: the workflow and its files come in Redis (plastic.service.shipment), not from these paths."""
    request = RunRequest(workflow=workflow, job=job, outdir=outdir or Path("."), toil_args=toil_args,
                         executor=executor, out_url=out_url)
    settings = settings_json(request, redis_url=None, started_at=0.0)
    outdir_shown = out_url or ("" if outdir is None else str(outdir.resolve()))
    return {"workflow": str(workflow.resolve()), "job": "" if job is None else str(job.resolve()),
            "outdir": outdir_shown, "toil_args": json.dumps(list(toil_args)),
            "executor": executor, "settings": json.dumps(settings), "submitted_pid": str(os.getpid()),
            **({"shipped": "1"} if shipped else {})}


def submitted_request(fields: Mapping[str, str], run_dir: Path) -> RunRequest:
    """The settings of a submitted run (a submission of before 2026-11-29 has only its few fields)."""
    if fields.get("settings"):
        request = request_from_json(json.loads(fields["settings"]), run_dir=run_dir, redis_url=None)
    else:
        request = RunRequest(workflow=Path(fields["workflow"]), job=Path(fields["job"]) if fields.get("job") else None,
                             outdir=Path("."), toil_args=tuple(json.loads(fields.get("toil_args") or "[]")),
                             executor=fields.get("executor") or "plastic")
    local_outdir = fields.get("outdir") if not request.out_url else ""
    return dataclasses.replace(request, outdir=Path(local_outdir or run_dir / "out"))


class Service:
    def __init__(self, store: Store, redis_url: str, *, runs_dir: Path, master: str | None = None,
                 max_runs: int = 2, poll_s: float = 1.0, child_umask: int | None = None, job_store: str = ""):
        self.store = store
        self.child_umask = child_umask  # the user's, for the runs' outputs (plastic.run.modes); None: this one
        self.redis_url = redis_url
        self.runs_dir = runs_dir
        self.master = master
        self.max_runs = max_runs
        self.poll_s = poll_s
        self.children: dict[str, Child] = {}
        self.stopping = threading.Event()
        self.job_store = job_store  # every run's, unless its submission says (plastic run --job-store)

    # ------------------------------------------------------------ start-up

    def recover(self) -> list[str]:
        """Take over what a dead service left: watch live runs, resume or fail dead ones, queue popped
        submissions again (returns those)."""
        queued = {s.get("run") for s in self.store.queued_submissions()}
        again: list[str] = []
        for run in self.store.list_runs(RunState.SUBMITTED):
            if run.id in queued:
                continue
            if queue_again(run.state, queued=False, alive=self._adopt(run)):
                self.store.push_submission({"run": run.id})
                again.append(run.id)
        for state in (RunState.PLANNING, RunState.RUNNING):
            for run in self.store.list_runs(state):
                if not self._adopt(run):
                    self._carry_out(run.id, self._orphaned(run, "the service stopped while the run was in progress"))
        return again

    def _adopt(self, run: RunRecord) -> bool:
        """True when the run's process is alive; watched by pid when it is one of this service's runs
        (a run started by hand on the same Redis is left alone)."""
        pid = int(run.fields.get("pid") or 0)
        if not (pid and pid_alive(pid)):
            return False
        run_dir = self.runs_dir / run.id
        if not run_dir.is_dir():
            return True  # not this service's run: left alone
        if cmdline_mentions(pid, run.id) is False:  # our children name their run (--run-id, or its dir)
            log.warning("run %s: pid %d is alive but is not its plastic run (a reused pid)", run.id, pid)
            return False
        self.children[run.id] = Child(run.id, pid, run_dir / LOG_FILE)
        log.info("run %s: its plastic run (pid %d) outlived the previous service; watching it", run.id, pid)
        return True

    # ------------------------------------------------------------ the loop

    def serve(self) -> None:
        again = self.recover()
        if again:
            log.info("queued again: %s", ", ".join(again))
        try:
            while not self.stopping.is_set():
                self.reap()
                if len(self.children) >= self.max_runs:
                    self.stopping.wait(self.poll_s)
                    continue
                submission = self.store.pop_submission(timeout=self.poll_s)
                if submission is not None:
                    self.start(str(submission.get("run", "")))
        finally:
            self.shutdown()

    def start(self, run_id: str) -> None:
        run = self.store.get_run(run_id) if run_id else None
        if run is None:
            log.warning("submission for unknown run %r dropped", run_id)
            return
        if run.state is not RunState.SUBMITTED:
            log.warning("run %s is %s, not SUBMITTED: not started again", run_id, run.state)
            return
        f = run.fields
        run_dir = self.runs_dir / run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        request = submitted_request(f, run_dir)
        request = dataclasses.replace(request, run_id=run_id, run_dir=run_dir, master=self.master or request.master,
                                      job_store=request.job_store or self.job_store)
        if f.get("shipped"):
            request = self._unship(run_id, run_dir, request)
            if request is None:
                return
        argv = [sys.executable, "-m", "plastic", "run", "--quiet", *run_args(request)]
        child = self._spawn(run_id, argv, run_dir)
        # the child records the same pid itself once planning starts; recorded now, a service that dies
        # before then finds the child alive at its next start instead of queueing the run a second time
        self.store.set_run_fields(run_id, {"pid": child.pid})
        log.info("run %s started (pid %d), log %s", run_id, child.pid, child.log_path)

    def _unship(self, run_id: str, run_dir: Path, request: RunRequest) -> RunRequest | None:
        """The shipped workflow, job order and inputs written into the run directory, the request pointed
        at them; None (the run failed) when its files are not in Redis."""
        from plastic.service.shipment import unpack

        files = self.store.shipped_files(run_id)
        if not files:
            self._fail(run_id, "its shipped files are not in Redis (plastic submit --ship)")
            return None
        workflow, job = unpack(files, run_dir)
        self.store.drop_shipped_files(run_id)
        return dataclasses.replace(request, workflow=workflow, job=job)

    def resume(self, run_id: str, run_dir: Path) -> None:
        """`plastic run --resume RUN_DIR` as a child, counted in the run's `resumes` field."""
        count = self.store.count_run_field(run_id, "resumes")
        argv = [sys.executable, "-m", "plastic", "run", "--resume", str(run_dir), "--quiet"]
        child = self._spawn(run_id, argv, run_dir)
        log.info("run %s resumed (pid %d; resume %d of at most %d), log %s", run_id, child.pid, count, MAX_RESUMES,
                 child.log_path)

    def _spawn(self, run_id: str, argv: list[str], run_dir: Path) -> Child:
        log_path = run_dir / LOG_FILE
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, env={**os.environ, URL_ENV: self.redis_url},
                                    umask=-1 if self.child_umask is None else self.child_umask)
        self.children[run_id] = Child(run_id, proc.pid, log_path, proc)
        return self.children[run_id]

    def reap(self) -> None:
        for run_id, child in list(self.children.items()):
            if child.running():
                continue
            del self.children[run_id]
            log.info("run %s: plastic run (pid %d) ended, exit %s", run_id, child.pid,
                     "unknown (adopted)" if child.adopted else child.exit_code)
            run = self.store.get_run(run_id)
            run_dir = self.runs_dir / run_id
            decision = child_ended(None if run is None else run.state, adopted=child.adopted,
                                   stopping=self.stopping.is_set(), pid=child.pid, exit_code=child.exit_code,
                                   log_path=str(child.log_path),
                                   resumes=0 if run is None else int(run.fields.get("resumes") or 0),
                                   has_run_file=(run_dir / RUN_FILE).is_file(), run_file=str(run_dir / RUN_FILE))
            self._carry_out(run_id, decision)
            if not isinstance(decision, ResumeRun):
                self._archive(run_id, run_dir)

    def _archive(self, run_id: str, run_dir: Path) -> None:
        """The ended run's directory kept in Redis (plastic.service.archive), for readers elsewhere."""
        from plastic.service.archive import pack_run_dir

        if not run_dir.is_dir():
            return
        try:
            self.store.keep_run_archive(run_id, pack_run_dir(run_dir))
        except (OSError, RedisError) as error:  # the run's record stands without it
            log.warning("run %s: its directory was not kept in Redis (%s)", run_id, error)

    def _orphaned(self, run: RunRecord, why: str) -> ResumeRun | FailRun:
        run_dir = self.runs_dir / run.id
        return orphaned_run(run.state, int(run.fields.get("resumes") or 0), (run_dir / RUN_FILE).is_file(), why,
                            str(run_dir / RUN_FILE), max_resumes=MAX_RESUMES)

    def _carry_out(self, run_id: str, decision: ResumeRun | FailRun | None) -> None:
        if isinstance(decision, ResumeRun):
            log.info("run %s: %s; resuming it", run_id, decision.why)
            self.resume(run_id, self.runs_dir / run_id)
        elif isinstance(decision, FailRun):
            self._fail(run_id, decision.reason)

    def _fail(self, run_id: str, reason: str) -> None:
        try:
            self.store.transition_run(run_id, RunState.FAILED, fields={"error": reason})
        except TransitionError as exc:
            log.warning("run %s: %s", run_id, exc)
            return
        log.warning("run %s marked FAILED: %s", run_id, reason)

    def shutdown(self, grace_s: float = 30.0) -> None:
        """Stop children, adopted ones too (SIGINT: they cancel their runs and clean up), then reap them."""
        self.stopping.set()
        for child in self.children.values():
            if child.running():
                child.send(signal.SIGINT)
        for child in list(self.children.values()):
            if not child.wait(grace_s):
                child.send(signal.SIGKILL)
                child.wait(grace_s)
        self.reap()
