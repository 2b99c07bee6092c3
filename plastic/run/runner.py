"""`plastic run`: the imperative shell around one workflow run.

    plan (or --plan) -> lower the workflow -> Redis (embedded unless --redis) -> run record
    -> local cluster shaped like the plan (unless --master) -> toil-cwl-runner --batchSystem plastic
    -> progress from the run's event stream -> outputs, report -> everything stopped

Every decision is made elsewhere: the plan by plastic.core.planning.sizing, the local cluster's shape by
plastic.core.planning.local_shape, placement by the batch system's JobBook, the report by
plastic.core.account.report.  Files of a run live in its run directory:

    plan.json  workflow/ (lowered copy + policy.json)  decisions.jsonl (JSON lines, every decision)
    toil.log (the Toil leader's stderr)  outputs.json  report.json  redis/ (embedded server, AOF)
    watch/AGENT.log (the spot-notice watchers' logs)  toil-tmp/ (the leader's TMPDIR, until success)

Crash-resume: the local cluster runs under a lease renewed at every poll (plastic.run.local_run_cluster)
instead of watching this process, and its workdir is in run_dir/cluster.json; Toil's
leader gets SIGKILL (not SIGTERM) when `plastic run` dies, so it dies like a crash: no batch-system
shutdown kills its tasks, and the framework stays registered for FAILOVER_S.  What a resume needs
is in run_dir/run.json.  `resume(run_dir)` (plastic run --resume RUN_DIR) brings the embedded Redis
back from its AOF, re-attaches to the cluster (or starts a new one if it is gone), restarts the
watchers and runs `toil-cwl-runner --restart` on the same job store and run id; the batch system
takes the framework over and adopts the old leader's running tasks that can finish within the adopt
window (`--adopt-seconds`), killing the rest (plastic.core.book.orphans).

On a local cluster every spot agent gets its `plastic agent-watch` (python -m plastic.watch) on
the agent's emulated IMDS, publishing notices into the run's Redis, where the batch system's
notices thread picks them up; the watchers die with the run (SIGTERM at the end, and the kernel's
parent-death signal if `plastic run` itself is killed).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plastic.aws.job_store import is_s3_locator
from plastic.core.account.progress import Progress
from plastic.core.account.report import AgentSpan, KnownAgent, RunTally, price_agents
from plastic.core.book.lifecycle import RunState
from plastic.core.book.recovery import RESUMABLE, record_again
from plastic.core.book.run_end import run_end
from plastic.core.elastic.controller import reliable_floor
from plastic.core.errors import InputError, PlanningError, RunFailedError
from plastic.core.model import Catalog
from plastic.core.planning.plan import Plan, plan_from_json
from plastic.fileio import write_atomically
from plastic.mesos.credential import check_credential, read_credential
from plastic.procs import die_with_parent, pid_alive, stop_process
from plastic.run.disk import DiskWatch, write_unless_full
from plastic.run.events import EventFollower
from plastic.run.job_store import resume_start
from plastic.run.local_run_cluster import follow_new_agents, start_cluster
from plastic.run.modes import private_dir, share_outputs, shared_dir
from plastic.run.request import Display, RunRequest, RunResult, request_from_json, settings_json
from plastic.run.run_redis import WAIT_S as REDIS_WAIT_S
from plastic.run.run_redis import RunRedis, password_needed
from plastic.run.toil_command import (
    FILE_JOB_STORE,
    build_invocation,
    check_run_dir,
    default_run_dir,
    remove_leader_tmp,
)
from plastic.store.urls import URL_ENV, is_redacted, redact

log = logging.getLogger(__name__)

POLL_S = 0.5
STOP_GRACE_S = 15.0
FAILOVER_S = 300.0
RUN_FILE = "run.json"
BEFORE_RECORD = frozenset({"plan.json", RUN_FILE, "workflow", "redis"})  # what a run writes before Redis has it


# ------------------------------------------------------------------ steps


def make_plan(request: RunRequest) -> Plan:
    if request.plan_path is not None:
        if not request.plan_path.is_file():
            raise InputError("no such file", source=str(request.plan_path), field="--plan")
        try:
            doc = json.loads(request.plan_path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"not a plan JSON document ({exc})", source=str(request.plan_path)) from None
        return plan_from_json(doc, source=str(request.plan_path))
    from plastic.catalogs import load_catalog
    from plastic.core.planning.sizing import plan_workload
    from plastic.cwl.loader import load_cwl

    workload = load_cwl(str(request.workflow), None if request.job is None else str(request.job)).workload()
    try:
        return plan_workload(workload, load_catalog(request.catalog_path))
    except PlanningError as exc:
        exc.source = f"{request.workflow}: {exc.source}" if exc.source else str(request.workflow)
        raise


def check_budget(request: RunRequest, plan: Plan) -> None:
    """An hourly budget must pay for the reliable node the run cannot do without (InputError, exit 2)."""
    if not request.elastic or request.budget_usd_per_hour is None:
        return
    from plastic.catalogs import load_catalog
    from plastic.core.model import node_shapes

    floor = reliable_floor(plan.tasks, node_shapes(load_catalog(request.catalog_path)))
    if floor is not None and request.budget_usd_per_hour < floor.usd_per_hour:
        raise InputError(f"{request.budget_usd_per_hour:g} USD per hour is below one reliable node ({floor.name} "
                         f"on demand at {floor.usd_per_hour:g} USD per hour)", field="--budget-per-hour")


def agent_spans(plan: Plan, catalog: Catalog, local_agents: list[Any], events: list[Any]) -> list[AgentSpan]:
    """The run's agents with prices (plastic.core.account.report.price_agents): local agents by their planned node."""
    known = [KnownAgent(a.id, a.cluster, a.preemptible, a.instance_type, a.node_id) for a in local_agents]
    return price_agents({n.id: n for n in plan.nodes}, known, events, catalog)


# ------------------------------------------------------------------ the run


def execute(request: RunRequest, display: Display | None = None,
            on_started: Callable[[str, Path], None] | None = None) -> RunResult:
    """Run one workflow end to end; raises PlasticError subclasses for bad input or a failed run."""
    from plastic.cwl import document_file
    from plastic.cwl.lower import lower_workflow
    from plastic.store import new_run_id

    display = display or Display()
    if not Path(document_file(request.workflow)).is_file():
        raise InputError("no such file", source=str(request.workflow))
    if request.job is not None and not request.job.is_file():
        raise InputError("no such file", source=str(request.job))
    plan = make_plan(request)
    check_budget(request, plan)
    run_id = request.run_id or new_run_id()
    from plastic.store.keys import check_run_id

    try:
        check_run_id(run_id)
    except ValueError as exc:
        raise InputError(str(exc), source="--run-id") from None
    run_dir, moved = (request.run_dir.resolve(), None) if request.run_dir else default_run_dir(run_id)
    check_run_dir(run_dir)
    existing = next(p for p in (run_dir, *run_dir.parents) if p.exists())
    if (space := DiskWatch(existing)).low(now=True):  # before anything is written
        raise space.start_error(run_dir)
    from plastic.core.planning.plan import plan_to_json, static_risk
    from plastic.run.job_store import job_store_setting

    # before anything is written: a job store AWS refuses is one line
    request = dataclasses.replace(request, run_id=run_id,
                                  job_store=job_store_setting(request.job_store, request.ec2, run_id))
    notes: list[str] = [moved] if moved else []
    if not request.elastic and (risk := static_risk(plan)) is not None:
        notes.append(f"warning: {risk}")
    cleanups: list[Callable[[], None]] = []
    try:
        external = request.redis_url or os.environ.get(URL_ENV) or None
        # an external Redis is reached first: unreachable (or refusing us) is one line, and no run directory
        redis = RunRedis.open(external, run_dir) if external else None
        if redis is not None:
            cleanups.append(redis.close)
        fresh = not run_dir.exists()
        private_dir(run_dir)
        try:
            lowered = lower_workflow(str(request.workflow), str(run_dir / "workflow"),
                                     job_path=None if request.job is None else str(request.job))
        except BaseException:
            if fresh:
                shutil.rmtree(run_dir, ignore_errors=True)
            raise
        write_atomically(run_dir / "plan.json", json.dumps(plan_to_json(plan), indent=2) + "\n")
        # without the Redis URL's password: a resume asks again
        settings = settings_json(request, redis_url=redact(external),
                                 started_at=time.time())
        write_atomically(run_dir / RUN_FILE, json.dumps(settings, indent=2) + "\n")
        if redis is None:
            redis = RunRedis.open(None, run_dir)
            cleanups.append(redis.close)
        store, redis_url = redis.store, redis.url
        fields = _run_fields(request, run_dir, plan)
        existing = store.get_run(run_id)
        if existing is not None and existing.state is not RunState.SUBMITTED:
            raise InputError(f"run {run_id} is already {existing.state}", source="--run-id")
        redis.go_planning(run_id, create=existing is None, fields=fields)
        master, local_agents, lease = start_cluster(request, plan, run_dir, redis_url, notes, display, cleanups)
        store.transition_run(run_id, RunState.RUNNING, fields={"master": master})
        return _run_toil(request, plan, lowered, run_dir, run_id, redis, master, local_agents, lease,
                         notes, display, on_started, restart=False)
    finally:
        _stop_all(cleanups)


def _run_fields(request: RunRequest, run_dir: Path, plan: Plan) -> dict[str, Any]:
    """The run's fields in Redis as `plastic run` sets them going PLANNING."""
    return {"workflow": str(request.workflow.resolve()),
            "job": "" if request.job is None else str(request.job.resolve()),
            "run_dir": str(run_dir), "outdir": str(request.outdir.resolve()),
            "plan_usd_per_hour": plan.usd_per_hour, "pid": os.getpid()}


def _toil_invocation(request: RunRequest, lowered: Any, run_dir: Path, run_id: str, redis_url: str, master: str, *,
                     restart: bool, adopt_s: float | None) -> Any:
    """The Toil leader's command line and environment for this run."""
    extra = ["--plasticFailoverTimeout", f"{FAILOVER_S:g}", *request.batch_args(run_dir, master)]
    if request.mesos_credential is not None:  # the file's path: the secret stays in it
        extra += ["--plasticCredential", str(request.mesos_credential)]
    if restart:
        extra.append("--restart")
        if adopt_s is not None:
            extra += ["--plasticAdoptSeconds", f"{adopt_s:g}"]
    return build_invocation(workflow=Path(lowered.workflow_path), job=request.job and request.job.resolve(),
                            outdir=request.outdir.resolve(), run_dir=run_dir, master=master,
                            redis_url=redis_url, run_id=run_id, policy_path=Path(lowered.policy_path),
                            policy=lowered.policy, extra=(*extra, *request.toil_args), executor=request.executor,
                            job_store=request.job_store or FILE_JOB_STORE, out_url=request.out_url)


@dataclass
class _Watch:
    """What follows the leader while it runs: the run's events (folded into the report's tally and the
    progress display), the disk, Redis and the local cluster's lease."""

    follower: EventFollower
    tally: RunTally
    progress: Progress
    disk: DiskWatch
    redis: RunRedis
    lease: Any
    display: Display

    def events(self, evs: Iterable[Any]) -> None:
        for ev in evs:
            self.tally.add(ev)
            self.progress.apply(ev)
        self.display.update(self.progress)


def _follow_leader(proc: subprocess.Popen, watch: _Watch, run_id: str) -> tuple[bytes, bool, bool]:
    """Until the leader ends (or the disk fills, or Ctrl-C): its standard output, cancelled, out of space."""
    cancelled = out_of_space = False
    out_chunks: list[bytes] = []
    try:
        reader = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        while proc.poll() is None:
            if watch.disk.low():  # stop before the job store's writes fail
                out_of_space = True
                watch.display.note(watch.disk.message(run_id))
                stop_process(proc, STOP_GRACE_S)
                break
            watch.redis.keep_alive()
            if watch.lease is not None:
                watch.lease.touch_lease()
                follow_new_agents(watch.lease)
            watch.events(watch.follower.poll(block_ms=int(POLL_S * 1000)))
        reader.join(10)
    except KeyboardInterrupt:
        cancelled = True
        stop_process(proc, STOP_GRACE_S)
        out_chunks = []
    finally:
        watch.events(watch.follower.drain(wait_s=REDIS_WAIT_S if watch.redis.server is None else 10.0))
        watch.display.stop()
    return b"".join(out_chunks), cancelled, out_of_space


def _outputs(stdout: bytes, request: RunRequest, run_dir: Path, notes: list[str]) -> dict[str, Any] | None:
    """The workflow's outputs (the leader's JSON), kept in the run directory, shared in --outdir."""
    remove_leader_tmp(run_dir)
    try:
        outputs = json.loads(stdout.decode("utf-8") or "null")
    except ValueError:
        return None
    if outputs is not None:
        write_unless_full(run_dir / "outputs.json", json.dumps(outputs, indent=2) + "\n", notes)
        share_outputs(outputs, request.outdir)
    return outputs


def _record_end(redis: RunRedis, run_id: str, end: Any, rc: int | None, report: Any, disk: DiskWatch) -> None:
    """The run's end in Redis: its final state, or RUNNING with why it stopped (for --resume)."""
    store = redis.store
    if end.state is RunState.RUNNING:  # stopped for want of space: left RUNNING for --resume
        try:  # informative only, and Redis may itself be unable to write on the full disk: one try
            redis.when_answering(lambda: store.set_run_fields(run_id, {"stopped": disk.message()}), run_id,
                                 wait_s=0.0)
        except RunFailedError as error:
            log.warning("%s", error)
    else:
        redis.when_answering(lambda: store.transition_run(run_id, end.state, fields={
            "exit_code": rc, "makespan_s": report.makespan_s, "cost_usd": report.cost_usd}), run_id)


def _run_toil(request: RunRequest, plan: Plan, lowered: Any, run_dir: Path, run_id: str, redis: RunRedis, master: str,
              local_agents: list[Any], lease: Any, notes: list[str], display: Display,
              on_started: Callable[[str, Path], None] | None, *, restart: bool,
              adopt_s: float | None = None, started_at: float | None = None) -> RunResult:
    """Toil's leader (fresh, or --restart on the run's job store) until it ends; outputs, report, run state."""
    for text in notes:
        display.note(text)
    cleanups: list[Callable[[], None]] = []
    try:
        shared_dir(request.outdir)  # the user's results: their umask's modes (plastic.run.modes)
        inv = _toil_invocation(request, lowered, run_dir, run_id, redis.url, master, restart=restart, adopt_s=adopt_s)
        notes.extend(inv.notes)
        for text in inv.notes:
            display.note(text)
        if request.ec2 is not None and request.elastic:
            from plastic.run import ec2

            cleanups.append(ec2.start(request.ec2, run_id, run_dir, redis.url, display.note))
        if on_started is not None:
            on_started(run_id, run_dir)
        started = time.time() if started_at is None else started_at  # a resume reports the whole run
        # the report's figures are folded as the events come: no list of them is kept
        watch = _Watch(EventFollower(redis.store, run_id), RunTally(), Progress({a.id: a.cluster for a in local_agents}),
                       DiskWatch(run_dir), redis, lease, display)
        if watch.disk.low(now=True):
            raise watch.disk.error(run_id)
        with open(run_dir / "toil.log", "ab") as toil_log:
            proc = subprocess.Popen(inv.argv, env=inv.env, stdout=subprocess.PIPE, stderr=toil_log,
                                    stdin=subprocess.DEVNULL, cwd=run_dir,
                                    preexec_fn=die_with_parent(signal.SIGKILL))  # noqa: PLW1509
            cleanups.append(lambda: stop_process(proc, STOP_GRACE_S))
            display.start(watch.progress, len(plan.tasks))
            stdout, cancelled, out_of_space = _follow_leader(proc, watch, run_id)
        if watch.follower.note():
            notes.append(str(watch.follower.note()))
        if redis.restarts:
            notes.append(f"the run's embedded Redis died and was started again {redis.restarts} time(s)")
        ended = time.time()
        rc = proc.returncode
        out_of_space = out_of_space or (rc != 0 and not cancelled and watch.disk.low(now=True))
        if out_of_space:
            notes.append(watch.disk.message(run_id))
        outputs = _outputs(stdout, request, run_dir, notes) if not cancelled and rc == 0 else None
        end = run_end(rc, cancelled=cancelled, out_of_space=out_of_space)
        if is_s3_locator(request.job_store):
            from plastic.run.job_store import end_job_store

            def note(text: str) -> None:
                notes.append(text)
                display.note(text)

            end_job_store(request.job_store, run_id, end.state is RunState.SUCCEEDED, note)
        from plastic.catalogs import load_catalog

        catalog = load_catalog(request.catalog_path)  # the run's prices, and its floor's shapes
        report = watch.tally.report(run_id=run_id, workflow=str(request.workflow), outcome=end.outcome,
                                    started_at=started, ended_at=ended, notes=notes, catalog=catalog,
                                    agents=agent_spans(plan, catalog, local_agents, watch.tally.kept_events))
        text = json.dumps(report.to_json(), indent=2) + "\n"
        write_unless_full(run_dir / "report.json", text, notes)
        if request.report_path is not None:
            write_atomically(request.report_path, text)
        _record_end(redis, run_id, end, rc, report, watch.disk)
        return RunResult(run_id, run_dir, end.exit_code, outputs, report, notes,
                         stopped=watch.disk.message(run_id) if out_of_space else None)
    finally:
        _stop_all(cleanups)


def _run_redis(given: str | None, saved: str | None, run_dir: Path) -> str | None:
    """The Redis of a resumed run: --redis, else $PLASTIC_REDIS_URL (how `plastic serve` gives its own to
    the runs it resumes), else the URL run.json keeps (None: the embedded server), unless it was saved
    without its password: then the resume cannot go on."""
    given = given or os.environ.get(URL_ENV) or None
    if given or not is_redacted(saved):
        return given or saved
    raise password_needed(saved, run_dir)


def resume(run_dir: Path, redis_url: str | None = None, display: Display | None = None,
           on_started: Callable[[str, Path], None] | None = None, *, adopt_s: float | None = None) -> RunResult:
    """Go on with a run whose `plastic run` was killed (see the module docstring); ``adopt_s``: the
    batch system's adopt window for the killed run's still-running tasks (None: its default)."""
    from plastic.cwl.lower import lower_workflow

    display = display or Display()
    run_dir = run_dir.resolve()
    check_run_dir(run_dir)  # a run directory moved since (its first run could not have started)
    if (space := DiskWatch(run_dir)).low(now=True):
        raise space.start_error(run_dir)
    try:
        saved = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
        run_id = str(saved["run_id"])
    except (OSError, ValueError, KeyError):
        raise InputError(f"not the directory of a plastic run (no readable {RUN_FILE})", source=str(run_dir)) from None
    request = request_from_json(saved, run_dir=run_dir, redis_url=_run_redis(redis_url, saved.get("redis_url"), run_dir))
    if request.master and request.mesos_credential is not None:
        check_credential(request.master, read_credential(request.mesos_credential),
                         source=str(request.mesos_credential))
    cleanups: list[Callable[[], None]] = []
    try:
        redis = RunRedis.open(request.redis_url, run_dir)
        cleanups.append(redis.close)
        store, url = redis.store, redis.url
        plan = plan_from_json(json.loads((run_dir / "plan.json").read_text(encoding="utf-8")),
                              source=str(run_dir / "plan.json"))
        record = store.get_run(run_id)
        pid = 0 if record is None else int(record.fields.get("pid") or 0)
        if pid and pid != os.getpid() and pid_alive(pid):
            raise InputError(f"run {run_id} is still running (pid {pid})", source=str(run_dir))
        if record_again(None if record is None else record.state,
                        started=any(p.name not in BEFORE_RECORD for p in run_dir.iterdir())):
            redis.go_planning(run_id, create=record is None, fields=_run_fields(request, run_dir, plan))
            record = store.get_run(run_id)
        if record is None:
            raise InputError(f"run {run_id} is not in Redis at {redact(url)}", source=str(run_dir))
        if record.state not in RESUMABLE:
            raise InputError(f"run {run_id} is {record.state}: nothing to resume", source=str(run_dir))
        store.set_run_fields(run_id, {"pid": os.getpid()})
        lowered = lower_workflow(str(request.workflow), str(run_dir / "workflow"),
                                 job_path=None if request.job is None else str(request.job))
        notes: list[str] = []
        master, local_agents, lease = start_cluster(request, plan, run_dir, url, notes, display, cleanups, attach=True)
        if record.state is RunState.PLANNING:  # killed before its cluster was up, or just after
            store.transition_run(run_id, RunState.RUNNING, expected=RunState.PLANNING, fields={"master": master})
        else:
            store.set_run_fields(run_id, {"master": master})  # a new local cluster has a new address
        start = resume_start(request.job_store or FILE_JOB_STORE, run_dir)
        display.note(f"resuming run {run_id}: {start.note}")
        return _run_toil(request, plan, lowered, run_dir, run_id, redis, master, local_agents, lease,
                         notes, display, on_started, restart=start.restart, adopt_s=adopt_s,
                         started_at=saved.get("started_at"))
    finally:
        _stop_all(cleanups)


def _stop_all(cleanups: list[Callable[[], None]]) -> None:
    """Stop what a run started, newest first; one part failing to stop does not keep the others up."""
    for stop in reversed(cleanups):
        try:
            stop()
        except Exception:
            log.exception("stopping a part of the run failed")
