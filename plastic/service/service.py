"""`plastic serve`: take submissions from Redis and run them, several at once, up to a limit.

Each run is a `plastic run --run-id ID --redis URL --quiet` child process (its own Toil leader,
its own local cluster unless the service was given `--master`), so a failing run cannot take
the service down, and every run records itself in Redis exactly as a run started by hand.

The service's own bookkeeping:

- at start, runs still SUBMITTED that are not in the queue (popped by a service that then
  died) are queued again; runs left RUNNING by a dead service whose process is gone are
  marked FAILED with the reason (issue 5 turns this into a resume);
- a child that exits while its run is not in a final state (killed, crashed) gets its run
  marked FAILED with the exit code, so `plastic status` never shows a run running forever.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from plastic.core.lifecycle import RunState, TransitionError
from plastic.procs import pid_alive
from plastic.store import Store

log = logging.getLogger(__name__)

FINAL = frozenset({RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED})


@dataclass
class Child:
    run_id: str
    process: subprocess.Popen
    log_path: Path


def submission_fields(workflow: Path, job: Path | None, outdir: Path, toil_args: tuple[str, ...]) -> dict[str, str]:
    return {"workflow": str(workflow.resolve()), "job": "" if job is None else str(job.resolve()),
            "outdir": str(outdir.resolve()), "toil_args": json.dumps(list(toil_args)), "submitted_pid": str(os.getpid())}


class Service:
    def __init__(self, store: Store, redis_url: str, *, runs_dir: Path, master: str | None = None,
                 max_runs: int = 2, poll_s: float = 1.0):
        self.store = store
        self.redis_url = redis_url
        self.runs_dir = runs_dir
        self.master = master
        self.max_runs = max_runs
        self.poll_s = poll_s
        self.children: dict[str, Child] = {}
        self.stopping = threading.Event()

    # ------------------------------------------------------------ start-up

    def recover(self) -> list[str]:
        """Queue again what a dead service popped; fail what a dead service left running."""
        queued = set()
        for raw in self.store.client.lrange(self.store.keys.submissions(), 0, -1):
            try:
                queued.add(json.loads(raw).get("run"))
            except ValueError:
                continue
        again: list[str] = []
        for run in self.store.list_runs(RunState.SUBMITTED):
            if run.id not in queued:
                self.store.push_submission({"run": run.id})
                again.append(run.id)
        for state in (RunState.PLANNING, RunState.RUNNING):
            for run in self.store.list_runs(state):
                pid = int(run.fields.get("pid") or 0)
                if pid and pid_alive(pid):
                    continue
                self._fail(run.id, "the service stopped while the run was in progress")
        return again

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
        argv = [sys.executable, "-m", "plastic", "run", f["workflow"]]
        if f.get("job"):
            argv.append(f["job"])
        argv += ["--run-id", run_id, "--redis", self.redis_url, "--outdir", f.get("outdir") or str(run_dir / "out"),
                 "--run-dir", str(run_dir), "--quiet"]
        if self.master:
            argv += ["--master", self.master]
        toil_args = json.loads(f.get("toil_args") or "[]")
        if toil_args:
            argv += ["--", *toil_args]
        log_path = run_dir / "plastic-run.log"
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        self.children[run_id] = Child(run_id, proc, log_path)
        log.info("run %s started (pid %d), log %s", run_id, proc.pid, log_path)

    def reap(self) -> None:
        for run_id, child in list(self.children.items()):
            code = child.process.poll()
            if code is None:
                continue
            del self.children[run_id]
            run = self.store.get_run(run_id)
            if run is not None and run.state not in FINAL:
                self._fail(run_id, f"plastic run exited with {code} before the run ended; see {child.log_path}")
            log.info("run %s ended (exit %d)", run_id, code)

    def _fail(self, run_id: str, reason: str) -> None:
        try:
            self.store.transition_run(run_id, RunState.FAILED, fields={"error": reason})
        except TransitionError as exc:
            log.warning("run %s: %s", run_id, exc)

    def shutdown(self, grace_s: float = 30.0) -> None:
        """Stop children (SIGINT: they cancel their runs and clean up), then reap them."""
        for child in self.children.values():
            if child.process.poll() is None:
                child.process.send_signal(signal.SIGINT)
        for child in list(self.children.values()):
            try:
                child.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait()
        self.reap()
