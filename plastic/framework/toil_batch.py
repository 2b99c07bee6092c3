"""PlasticBatchSystem: Toil's view of plastic's Mesos framework (registered by toil_batch_system_plastic).

Toil-facing shell only: every decision is the JobBook's (plastic.core.book.jobbook), every Mesos
interaction the Framework adapter's (plastic.framework.adapter).  See
docs/design/toil-batch-system.md for the contract this class signs.

- Local helper jobs (CWL `local=True`) go to BatchSystemLocalSupport's single-machine queue; a
  forwarder thread moves their completions into the one merged queue that getUpdatedBatchJob reads
  with a single blocking get, next to the completions the Framework reports.
- An id stays in getIssuedBatchJobIDs from issue until getUpdatedBatchJob hands it out or
  killBatchJobs kills it (so relaunches inside plastic never look MISSING to the leader).
- Killed jobs are never reported.
- Per-tool policy: with --plasticPolicy FILE every job's preempt budget, instance type, tool key and
  step come from the table entry named by the last component of its unitName
  (plastic.core.book.policy.resolve); without an entry, Toil's `preemptible` decides.
- State in Redis: with --plasticRedis URL (and --plasticRun ID, else a new run) every record goes to
  the run's event stream and task/agent records (plastic.framework.store_recorder), written by a
  background thread; without it only the JSON-lines log ($PLASTIC_RECORD_LOG) is kept.
- Spot notices: with --plasticRedis a thread follows the notices stream (plastic.framework.notices;
  `plastic agent-watch` publishes there) and hands each notice to the JobBook.
  --plasticRebalance says what a rebalance recommendation does (ignore / avoid-long / drain);
  --plasticIdleAgentSeconds and --plasticStarvingSeconds set when an idle burst agent or a job no
  live agent can hold is reported (records idle_agent / starving, and the scheduling status).
- Crash-resume (`plastic run --resume`: toil-cwl-runner --restart on the same job store and run):
  every leader of a run is an incarnation (counted in Redis); incarnation k numbers its batch jobs
  from (k-1) * JOB_ID_STRIDE, so task records and Mesos task ids never collide across leaders.
  From the second incarnation on, the batch system subscribes with the run's framework id (a
  failover: the old leader needs --plasticFailoverTimeout; when that ran out, the master removed
  the framework and killed its tasks, and the batch system subscribes anew), marks the old leader's queued tasks
  KILLED, and hands the old live tasks to the JobBook as orphans (Resumed): reconciled, adopted
  when they can finish within --plasticAdoptSeconds (their tool's runtime estimate less the time
  they already ran), killed otherwise.  It waits until none is left (at most the adopt window plus
  ORPHAN_KILL_WAIT_S) before Toil reads and cleans its job store: adopted work is kept, and no
  job's work can be committed twice.  Each task records its Toil jobStoreID.
- Configuration errors (no master, bad policy file, Redis unreachable, bad run id) are raised as
  Toil's InconsistentConfigurationError, which toil-cwl-runner prints as one line (exit 1); a bad
  --plasticPolicy given on the command line is already refused by the argument parser (exit 2).
"""

from __future__ import annotations

import logging
import math
import os
import queue
import shutil
import threading
import time
from argparse import ArgumentParser, ArgumentTypeError, _ArgumentGroup
from typing import Any

from toil.batchSystems.abstractBatchSystem import (
    EXIT_STATUS_UNAVAILABLE_VALUE,
    AbstractScalableBatchSystem,
    BatchJobExitReason,
    NodeInfo,
    UpdatedBatchJobInfo,
)
from toil.batchSystems.cleanup_support import BatchSystemCleanupSupport
from toil.common import InconsistentConfigurationError

from plastic.core.book.commands import JobStoreQuestion, ReportJobEnd
from plastic.core.book.events import PriorTask
from plastic.core.book.health import DEFAULT_IDLE_AGENT_S, DEFAULT_STARVING_S
from plastic.core.book.jobbook import JobBook
from plastic.core.book.notices import REBALANCE_MODES
from plastic.core.book.orphans import LIVE_RECORDS
from plastic.core.book.policy import EMPTY, PolicyError, PolicyTable, resolve
from plastic.core.book.runtimes import planned_runtimes
from plastic.core.errors import InputError, PlasticError
from plastic.core.model import Resources
from plastic.framework.adapter import Framework, TaskCommand
from plastic.framework.elastic_options import OPTIONS as ELASTIC_OPTIONS
from plastic.framework.elastic_options import (
    add_elastic_options,
    build_provisioner,
    read_plan,
)
from plastic.framework.notices import NoticeFollower
from plastic.framework.provisioner import Provisioner
from plastic.framework.recorder import Recorder
from plastic.framework.run_store import (
    RunHandle,
    load_policy,
    open_run,
    runtime_history,
)
from plastic.mesos.credential import CREDENTIAL_ENV, read_credential
from plastic.mesos.errors import MesosFrameworkError
from plastic.store.urls import URL_ENV, with_ca

log = logging.getLogger(__name__)

MASTER_ENV = ("PLASTIC_MASTER", "PLASTIC_MASTER_URL")
RECORD_ENV = "PLASTIC_RECORD_LOG"
RUN_ENV = "PLASTIC_RUN_ID"
POLICY_ENV = "PLASTIC_POLICY"
REBALANCE_ENV = "PLASTIC_REBALANCE"
KILL_WAIT_S = 30.0
JOB_ID_STRIDE = 1_000_000
ORPHAN_KILL_WAIT_S = 60.0
DEFAULT_ADOPT_S = 300.0
ADOPT_ENV = "PLASTIC_ADOPT_SECONDS"
RECORD_FLUSH_S = 10.0
NOTHING_ISSUED_WAIT_S = 0.05  # see update_wait_s

_REASONS = {
    "finished": BatchJobExitReason.FINISHED,
    "failed": BatchJobExitReason.FAILED,
    "killed": BatchJobExitReason.KILLED,
    "lost_for_good": BatchJobExitReason.LOST,
}


def _env_master() -> str | None:
    return next((os.environ[n] for n in MASTER_ENV if os.environ.get(n)), None)


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def policy_file(value: str) -> str:
    """argparse type of --plasticPolicy: the file must be a valid policy; returns its absolute path."""
    path = os.path.abspath(value)
    try:
        load_policy(path)
    except PolicyError as error:
        raise ArgumentTypeError(str(error)) from None
    return path


def seconds_or_off(value: str) -> float:
    """argparse type of the health thresholds: seconds > 0, or 0 / "off" (0.0: no records; Toil's
    Config drops None values, so "off" cannot be None)."""
    if value.strip().lower() in ("off", "none"):
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        raise ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not 0 <= seconds < float("inf"):
        raise ArgumentTypeError(f"must be >= 0 seconds (0 or off: never), got {value!r}")
    return seconds


def _adopt_default() -> float:
    try:
        return seconds_or_off(_env(ADOPT_ENV) or str(DEFAULT_ADOPT_S))
    except ArgumentTypeError:
        return DEFAULT_ADOPT_S


def _threshold(config: Any, name: str, default: float) -> float | None:
    value = getattr(config, name, None)
    value = default if value is None else float(value)
    return value if value > 0 else None


def _unsuppress_logging() -> None:
    """Toil's set_logging_from_options raises every third-party top-level logger it finds ("plastic"
    included) to CRITICAL; give plastic's back to the root logger's level, so its warnings (Redis
    outages, refused transitions, unplaceable jobs) and run id reach the leader's log."""
    top = logging.getLogger("plastic")
    if top.level == logging.CRITICAL:
        top.setLevel(logging.NOTSET)


def _option(config: Any, name: str, env: str) -> Any:
    return getattr(config, name, None) or _env(env)


def demand_of(cores: float, memory_bytes: float) -> Resources:
    """Toil requirements (fractional cores, bytes) -> whole vCPUs (at least 1) and MiB, rounded up."""
    return Resources(max(1, math.ceil(cores - 1e-9)), max(1, math.ceil(memory_bytes / 2**20)))


def updated_info(ended: ReportJobEnd) -> UpdatedBatchJobInfo:
    """ReportJobEnd -> Toil's UpdatedBatchJobInfo (finished: 0/FINISHED, failed: N/FAILED, killed: KILLED,
    lost_for_good: LOST)."""
    reason = _REASONS[ended.outcome]
    status = 0 if ended.outcome == "finished" and ended.exit_code == 0 else ended.exit_code
    if ended.outcome != "finished" and status == 0:
        status = EXIT_STATUS_UNAVAILABLE_VALUE
    return UpdatedBatchJobInfo(jobID=int(ended.job_id), exitStatus=status, exitReason=reason,
                               wallTime=max(ended.wall_time_s, 0.001), backing_id=ended.mesos_task_id)


def update_wait_s(max_wait: float, anything_issued: bool) -> float:
    """How long getUpdatedBatchJob waits: Toil's maxWait while a job is out, else NOTHING_ISSUED_WAIT_S
    at most.  The leader asks with maxWait=2 at every turn, also with no job out while it cleans up
    finished ones (scatter, workflow, ResolveIndirect: one per turn), where no update can come: a run's
    end idled 8-10 s.  Not 0: a job waiting out a retry backoff would spin the loop."""
    wait_s = max(max_wait, 0.0)
    return wait_s if anything_issued else min(wait_s, NOTHING_ISSUED_WAIT_S)


class PlasticBatchSystem(BatchSystemCleanupSupport, AbstractScalableBatchSystem):
    """Runs Toil jobs as tasks of plastic's Mesos framework."""

    @classmethod
    def supportsAutoDeployment(cls) -> bool:
        return False

    @classmethod
    def add_options(cls, parser: ArgumentParser | _ArgumentGroup) -> None:
        parser.add_argument("--plasticMaster", dest="plastic_master", default=_env_master(),
                            help="Mesos master for the plastic batch system: http://HOST:PORT or "
                                 "zk://HOSTS/mesos (default: $PLASTIC_MASTER)")
        parser.add_argument("--plasticFailoverTimeout", dest="plastic_failover_timeout", type=float,
                            default=None,
                            help="Mesos failover timeout of plastic's framework, in seconds (default: none, "
                                 "the framework is torn down at shutdown)")
        parser.add_argument("--plasticCredential", dest="plastic_credential", default=_env(CREDENTIAL_ENV),
                            help="a file holding the framework's credential for a master that authenticates "
                                 "frameworks: JSON {\"principal\": ..., \"secret\": ...} or one line "
                                 "PRINCIPAL SECRET (default: $PLASTIC_MESOS_CREDENTIAL; the secret is never "
                                 "taken on the command line)")
        parser.add_argument("--plasticRedis", dest="plastic_redis", default=None,  # $PLASTIC_REDIS_URL when used:
                            # not kept in Toil's config (pickled into the job store) with its password
                            help="Redis URL where plastic records the run's events, tasks and agents "
                                 "(redis://[USER:PASSWORD@]HOST:PORT/DB, rediss://... for TLS, or unix:///PATH; "
                                 "default: $PLASTIC_REDIS_URL; none: nothing is written to Redis)")
        parser.add_argument("--plasticRedisCa", dest="plastic_redis_ca", default=None, metavar="FILE",
                            help="CA file (PEM) that signs a rediss:// Redis's TLS certificate (default: the URL's "
                                 "ssl_ca_certs parameter, else the system's CAs)")
        parser.add_argument("--plasticRun", dest="plastic_run", default=_env(RUN_ENV),
                            help="id of the plastic run record to write into (created when missing; default: "
                                 "$PLASTIC_RUN_ID, else a new run whose id is logged); needs --plasticRedis")
        parser.add_argument("--plasticPolicy", dest="plastic_policy", default=_env(POLICY_ENV), type=policy_file,
                            help="per-tool policy table (JSON, plastic.policy/v1): preempt budget and instance "
                                 "type by tool id, the last component of a job's unitName (default: "
                                 "$PLASTIC_POLICY; none: Toil's preemptible decides)")
        parser.add_argument("--plasticRebalance", dest="plastic_rebalance", choices=REBALANCE_MODES,
                            default=_env(REBALANCE_ENV) or "avoid-long",
                            help="what an EC2 rebalance recommendation for an agent does: ignore (a record "
                                 "only), avoid-long (no new long or unknown-length tasks there), drain (no new "
                                 "tasks there); running tasks are never touched (default: avoid-long)")
        parser.add_argument("--plasticIdleAgentSeconds", dest="plastic_idle_agent_s", type=seconds_or_off,
                            default=DEFAULT_IDLE_AGENT_S,
                            help="report a burst (preemptible) agent idle this long as a candidate for release "
                                 "(record idle_agent; 0 or off: never; default: 300)")
        parser.add_argument("--plasticAdoptSeconds", dest="plastic_adopt_s", type=seconds_or_off,
                            default=_env(ADOPT_ENV) or DEFAULT_ADOPT_S,
                            help="on --restart: let a task of the previous leader still running finish (and "
                                 "keep its work) when it is expected to within this many seconds; Toil starts "
                                 "once they have (0 or off: kill them all; default: $PLASTIC_ADOPT_SECONDS "
                                 "or 300)")
        parser.add_argument("--plasticStarvingSeconds", dest="plastic_starving_s", type=seconds_or_off,
                            default=DEFAULT_STARVING_S,
                            help="report a job queued this long for a shape no live agent can hold (record "
                                 "starving; 0 or off: never; default: 300)")
        add_elastic_options(parser)

    @classmethod
    def setOptions(cls, setOption: Any) -> None:
        setOption("plastic_master")
        setOption("plastic_failover_timeout")
        setOption("plastic_credential")
        setOption("plastic_redis")
        setOption("plastic_redis_ca")
        setOption("plastic_run")
        setOption("plastic_policy")
        setOption("plastic_rebalance")
        setOption("plastic_idle_agent_s")
        setOption("plastic_starving_s")
        setOption("plastic_adopt_s")
        for name in ELASTIC_OPTIONS:
            setOption(name)

    def __init__(self, config: Any, maxCores: float, maxMemory: float, maxDisk: int) -> None:
        _unsuppress_logging()
        # configuration first: nothing is started yet when it is wrong
        master = getattr(config, "plastic_master", None) or _env_master()
        if not master:
            raise InconsistentConfigurationError(
                "the plastic batch system needs --plasticMaster URL (or $PLASTIC_MASTER)")
        failover = getattr(config, "plastic_failover_timeout", None)
        credential_path = getattr(config, "plastic_credential", None) or _env(CREDENTIAL_ENV)
        try:
            credential = read_credential(credential_path) if credential_path else None
        except InputError as exc:
            raise InconsistentConfigurationError(f"--plasticCredential {exc}") from None
        self.policy = self._load_policy(config)
        book = self._book(config)
        self.run: RunHandle | None = self._open_run(config)
        self.incarnation = 0
        framework_id: str | None = None
        prior: list[PriorTask] = []
        try:
            if self.run is not None:
                self.incarnation = self.run.store.next_incarnation(self.run.run_id)
                if self.incarnation > 1:
                    framework_id, prior = self._previous_incarnation(self.run)
            super().__init__(config, maxCores, maxMemory, maxDisk)
        except BaseException:
            if self.run is not None:
                self.run.close()
            raise
        if self.incarnation > 1:
            with self.localBatch.jobIndexLock:
                self.localBatch.jobIndex = max(self.localBatch.jobIndex, (self.incarnation - 1) * JOB_ID_STRIDE)
        recorders: list[Recorder] = []
        if self.run is not None:
            recorders.append(self.run.recorder())
        worker = shutil.which("_toil_worker")
        self.worker_dir = os.path.dirname(worker) if worker else None
        self.updates: queue.Queue[UpdatedBatchJobInfo] = queue.Queue()
        self.state_lock = threading.Lock()
        self.issued: set[int] = set()  # ours and local: issued, not handed out, not killed
        self.local_ids: set[int] = set()
        self.ignored_nodes: set[str] = set()
        self._stopping = threading.Event()
        self.notices: NoticeFollower | None = None
        self.provisioner: Provisioner | None = None
        self._job_store: Any = None
        try:
            plan = read_plan(getattr(config, "plastic_plan", None))
            # a plan made from a trace gives each tool a prior, used until the store has that tool's history
            planned = planned_runtimes(plan.tasks, {tool: entry.step for tool, entry in self.policy.tools.items()})
            store = self.run.store if self.run is not None else None
            history = None if store is None and not planned else runtime_history(store, planned)
            self.framework = Framework(master, name=f"toil-{getattr(config, 'workflowID', '') or 'plastic'}",
                                       failover_timeout_s=failover, on_ended=self._ended,
                                       record_path=os.environ.get(RECORD_ENV) or None, recorders=recorders,
                                       record_flush_s=RECORD_FLUSH_S, book=book,
                                       framework_id=framework_id if failover else None,
                                       job_store=self._job_store_answer, runtime_history=history,
                                       credential=credential)
            framework_removed = False
            try:
                self.framework.start()
            except MesosFrameworkError as error:
                if self.incarnation <= 1 or not framework_id or not failover:
                    raise
                log.warning("plastic: %s: the previous leader's framework %s is gone (its failover timeout ran "
                            "out; the master killed its tasks); subscribing as a new framework",
                            error, framework_id)
                self.framework.start_anew()
                framework_removed = True
            if self.run is not None:  # before a resume: a notice may doom an adopted task
                self.notices = NoticeFollower(self.run.store, self.framework).start()
            self.provisioner = build_provisioner(config, self.framework, master=master, run_id=self.run_id,
                                                 plan=plan)
            if self.incarnation > 1:
                log.info("plastic: leader incarnation %d of run %s (framework %s); %d unfinished task record(s) "
                         "of the previous leader", self.incarnation, self.run_id, self.framework.framework_id,
                         len(prior))
                self.framework.resume(prior, framework_removed=framework_removed)
                wait_s = (book.adopt_s or 0.0) + ORPHAN_KILL_WAIT_S
                left = self.framework.wait_orphans(wait_s)
                if left:
                    log.warning("plastic: %d task(s) of the previous leader still not ended after %.0f s",
                                left, wait_s)
        except PlasticError as error:
            self._stop_started(recorders)
            raise InconsistentConfigurationError(f"plastic batch system: {error}") from None
        except BaseException:
            self._stop_started(recorders)
            raise
        if self.provisioner is not None:  # after a resume's wait: Toil is about to issue its jobs
            self.provisioner.start()
        self._forwarder = threading.Thread(target=self._forward_local, name="plastic-local-forwarder",
                                           daemon=True)
        self._forwarder.start()

    def _stop_started(self, recorders: list[Recorder]) -> None:
        """What the constructor started, stopped (it is failing)."""
        if self.notices is not None:
            self.notices.stop()
        if getattr(self, "framework", None) is not None:
            self.framework.close_recorders()
        else:
            for r in recorders:
                r.close(RECORD_FLUSH_S)
        if self.run is not None:
            self.run.close()
        self.shutdownLocal()

    @staticmethod
    def _book(config: Any) -> JobBook:
        rebalance = getattr(config, "plastic_rebalance", None) or _env(REBALANCE_ENV) or "avoid-long"
        if rebalance not in REBALANCE_MODES:
            raise InconsistentConfigurationError(
                f"plastic batch system: rebalance reaction must be one of {', '.join(REBALANCE_MODES)}, "
                f"not {rebalance!r}")
        return JobBook(rebalance=rebalance,
                       idle_agent_s=_threshold(config, "plastic_idle_agent_s", DEFAULT_IDLE_AGENT_S),
                       starving_s=_threshold(config, "plastic_starving_s", DEFAULT_STARVING_S),
                       adopt_s=_threshold(config, "plastic_adopt_s", _adopt_default()) or 0.0)

    @staticmethod
    def _load_policy(config: Any) -> PolicyTable:
        path = _option(config, "plastic_policy", POLICY_ENV)
        if not path:
            return EMPTY
        try:
            table = load_policy(path)
        except PolicyError as error:
            raise InconsistentConfigurationError(str(error)) from None
        log.info("plastic: policy %s (%d tools)", path, len(table.tools))
        return table

    @staticmethod
    def _open_run(config: Any) -> RunHandle | None:
        url = _option(config, "plastic_redis", URL_ENV)
        run_id = _option(config, "plastic_run", RUN_ENV)
        if not url:
            if run_id:
                log.warning("plastic: --plasticRun %s ignored without --plasticRedis", run_id)
            return None
        fields = {"source": "toil", "toil_workflow": getattr(config, "workflowID", None)}
        try:
            url = with_ca(url, getattr(config, "plastic_redis_ca", None), "--plasticRedisCa")
            return open_run(url, run_id, fields=fields)
        except PlasticError as error:
            raise InconsistentConfigurationError(f"plastic batch system: {error}") from None

    @staticmethod
    def _previous_incarnation(run: RunHandle) -> tuple[str | None, list[PriorTask]]:
        """The framework id to take over and the run's records of the previous leaders' unfinished
        tasks (queued or live), for the book to decide what becomes of each (Resumed)."""
        store, run_id = run.store, run.run_id
        prior: list[PriorTask] = []
        now = time.time()
        for state in ("QUEUED", *LIVE_RECORDS):
            ids = store.tasks_in_state(run_id, state)
            for task in store.get_tasks(run_id, sorted(ids)):
                spec = task.spec if isinstance(task.spec, dict) else {}
                prior.append(PriorTask(task.id, state, task.fields.get("mesos_task") or None, task.agent,
                                       spec.get("tool") or None, spec.get("job_store_id") or None,
                                       max(now - task.state_at, 0.0)))
        return store.load_framework_id(run_id), prior

    @property
    def run_id(self) -> str | None:
        return self.run.run_id if self.run is not None else None

    # ------------------------------------------------------------ completions

    def _ended(self, ended: ReportJobEnd) -> None:  # Framework thread (under its lock): never block
        self.updates.put(updated_info(ended))

    def _forward_local(self) -> None:
        while not self._stopping.is_set():
            try:
                info = self.getUpdatedLocalJob(1)
            except Exception:
                log.exception("local batch system update failed")
                time.sleep(1)
                continue
            if info is not None:
                self.updates.put(info)

    # ------------------------------------------------------------ AbstractBatchSystem

    def issueBatchJob(self, command: str, job_desc: Any, job_environment: dict[str, str] | None = None) -> int:
        local_id = self.handleLocalJob(command, job_desc)
        if local_id is not None:
            with self.state_lock:
                self.local_ids.add(local_id)
                self.issued.add(local_id)
            return local_id
        self.check_resource_request(job_desc)
        job_id = self.getNextJobID()
        env = dict(self.environment)
        env.update(job_environment or {})
        path = env.get("PATH") or os.environ.get("PATH", "")
        if self.worker_dir and self.worker_dir not in path.split(os.pathsep):
            path = self.worker_dir + (os.pathsep + path if path else "")
        env["PATH"] = path
        name = getattr(job_desc, "displayName", None) or getattr(job_desc, "jobName", None) or f"toil-{job_id}"
        policy = resolve(getattr(job_desc, "unitName", None), bool(getattr(job_desc, "preemptible", False)),
                         self.policy)
        with self.state_lock:
            self.issued.add(job_id)
        store_id = getattr(job_desc, "jobStoreID", None)
        self.framework.issue(str(job_id), TaskCommand(command, env), demand_of(job_desc.cores, job_desc.memory),
                             policy.preempt, instance_type=policy.instance_type, tool=policy.tool, name=str(name),
                             step=policy.step, job_store_id=None if store_id is None else str(store_id))
        return job_id

    def _job_store_answer(self, store_id: str, question: JobStoreQuestion) -> bool:
        """The job store's answer about Toil job ``store_id`` (the Framework asks it off its lock):
        ``gone``, the job is no longer in the store (a requeued job whose killed attempt had already
        committed it; the Toil leader makes the same check when a batch system reports a failure);
        ``committed``, the job is gone or its body has run (a previous leader's task whose end the
        master could not tell)."""
        job_store = self._open_job_store()
        if job_store is None:
            return False
        if not job_store.job_exists(store_id):
            return True
        return question == "committed" and not job_store.load_job(store_id).has_body()

    def _open_job_store(self) -> Any:
        """Toil's job store of this workflow (opened once), or None when the config names none."""
        locator = getattr(self.config, "jobStore", None)
        if self._job_store is None and locator:
            from toil.common import Toil

            self._job_store = Toil.getJobStore(locator)
        return self._job_store

    def killBatchJobs(self, jobIDs: list[int]) -> None:
        with self.state_lock:
            local = [j for j in jobIDs if j in self.local_ids]
            ours = [j for j in jobIDs if j not in self.local_ids]
            for j in jobIDs:
                self.issued.discard(j)
                self.local_ids.discard(j)
        if local:
            self.killLocalJobs(local)
        for j in ours:
            if not self.framework.kill(str(j), wait_s=KILL_WAIT_S):
                log.warning("job %d: no TASK_KILLED within %.0f s; abandoned", j, KILL_WAIT_S)

    def getIssuedBatchJobIDs(self) -> list[int]:
        with self.state_lock:
            return sorted(self.issued)

    def getRunningBatchJobIDs(self) -> dict[int, float]:
        with self.state_lock:
            issued = set(self.issued)
        out = {int(j): s for j, s in self.framework.running().items() if int(j) in issued}
        out.update({j: s for j, s in self.getRunningLocalJobIDs().items() if j in issued})
        return out

    def getUpdatedBatchJob(self, maxWait: int) -> UpdatedBatchJobInfo | None:
        with self.state_lock:
            anything_issued = bool(self.issued)
        deadline = time.monotonic() + update_wait_s(maxWait, anything_issued)
        while True:
            if self.framework.failed_event.is_set():  # the driver gave up: end the leader, do not wait forever
                raise MesosFrameworkError(f"the Mesos driver gave up: {self.framework.last_error}",
                                          call_type="SUBSCRIBE")
            left = deadline - time.monotonic()
            try:
                info = self.updates.get(timeout=left) if left > 0 else self.updates.get_nowait()
            except queue.Empty:
                return None
            with self.state_lock:
                if info.jobID not in self.issued:  # killed, or reported already: never twice
                    continue
                self.issued.discard(info.jobID)
                self.local_ids.discard(info.jobID)
            return info

    def getSchedulingStatusMessage(self) -> str | None:
        return self.framework.scheduling_status()

    def shutdown(self) -> None:
        self._stopping.set()
        if self.provisioner is not None:
            self.provisioner.stop()
        if self.notices is not None:
            self.notices.stop()
        try:
            self.framework.stop(kill_tasks=True,
                                failover=bool(self.framework.failover_timeout_s))
        finally:
            if self.run is not None:
                self.run.close()
            self.shutdownLocal()
            self._forwarder.join(timeout=5)

    # ------------------------------------------------------------ AbstractScalableBatchSystem

    def getNodes(self, preemptible: bool | None = None, timeout: int = 600) -> dict[str, NodeInfo]:
        fw = self.framework
        with fw.lock:
            out: dict[str, NodeInfo] = {}
            for agent_id, info in fw.agents().items():
                if preemptible is not None and info.preemptible != preemptible:
                    continue
                jobs = fw.book.on_agent(agent_id)
                cores = sum(j.demand.vcpus for j in jobs)
                mem = sum(j.demand.ram_mib for j in jobs)
                cap = info.capacity
                out[fw.address_of(agent_id)] = NodeInfo(
                    coresUsed=cores / cap.vcpus if cap.vcpus else 0.0,
                    memoryUsed=mem / cap.ram_mib if cap.ram_mib else 0.0,
                    coresTotal=cap.vcpus, memoryTotal=cap.ram_mib * 2**20,
                    requestedCores=cores, requestedMemory=mem * 2**20, workers=len(jobs))
        return out

    def nodeInUse(self, nodeIP: str) -> bool:
        fw = self.framework
        with fw.lock:
            return any(fw.book.on_agent(a) for a in fw.agent_ids_at(nodeIP))

    def ignoreNode(self, nodeAddress: str) -> None:
        self.ignored_nodes.add(nodeAddress)
        self.framework.ignore(nodeAddress)

    def unignoreNode(self, nodeAddress: str) -> None:
        self.ignored_nodes.discard(nodeAddress)
        self.framework.unignore(nodeAddress)
