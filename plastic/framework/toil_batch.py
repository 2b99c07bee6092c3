"""PlasticBatchSystem: Toil's view of plastic's Mesos framework (registered by toil_batch_system_plastic).

Toil-facing shell only: every decision is the JobBook's (plastic.core.book.jobbook), every Mesos
interaction the Framework adapter's (plastic.framework.adapter).  See
docs/design/toil-batch-system.md for the contract this class signs.  Its options, their defaults
and the environment they fall back on: plastic.framework.toil_options.

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
- Crash-resume (`plastic run --resume`): a new leader of a run numbers its jobs after the previous
  leaders', takes their framework over and settles their tasks before Toil reads its job store
  (plastic.framework.toil_resume).  Each task records its Toil jobStoreID.
- An S3 job store (``aws:REGION:NAME``, `plastic run` on EC2), which Toil's leader has made by the time
  it starts the batch system, is made private and encrypted before any job runs (plastic.aws.job_store).
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
from argparse import ArgumentParser, _ArgumentGroup
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

from plastic.aws.job_store import is_s3_locator, secure
from plastic.core.book.commands import JobStoreQuestion, ReportJobEnd
from plastic.core.book.events import PriorTask
from plastic.core.book.policy import resolve
from plastic.core.book.runtimes import planned_runtimes
from plastic.core.errors import PlasticError
from plastic.core.model import Resources
from plastic.framework.adapter import Framework
from plastic.framework.elastic_options import RunPlan, build_provisioner, read_plan
from plastic.framework.launcher import TaskCommand
from plastic.framework.notices import NoticeFollower
from plastic.framework.provisioner import Provisioner
from plastic.framework.recorder import Recorder
from plastic.framework.run_store import RunHandle, runtime_history
from plastic.framework.toil_options import (
    BatchOptions,
    add_options,
    open_run_from,
    read_options,
    record_log_path,
    set_options,
)
from plastic.framework.toil_resume import first_job_id, previous_incarnation, resume, start_framework
from plastic.mesos.driver_errors import MesosFrameworkError

log = logging.getLogger(__name__)

KILL_WAIT_S = 30.0
RECORD_FLUSH_S = 10.0
NOTHING_ISSUED_WAIT_S = 0.05  # see update_wait_s

_REASONS = {
    "finished": BatchJobExitReason.FINISHED,
    "failed": BatchJobExitReason.FAILED,
    "killed": BatchJobExitReason.KILLED,
    "lost_for_good": BatchJobExitReason.LOST,
}


def _unsuppress_logging() -> None:
    """Toil's set_logging_from_options raises every third-party top-level logger it finds ("plastic"
    included) to CRITICAL; give plastic's back to the root logger's level, so its warnings (Redis
    outages, refused transitions, unplaceable jobs) and run id reach the leader's log."""
    top = logging.getLogger("plastic")
    if top.level == logging.CRITICAL:
        top.setLevel(logging.NOTSET)


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
        add_options(parser)

    @classmethod
    def setOptions(cls, setOption: Any) -> None:
        set_options(setOption)

    def __init__(self, config: Any, maxCores: float, maxMemory: float, maxDisk: int) -> None:
        _unsuppress_logging()
        options = read_options(config)  # configuration first: nothing is started yet when it is wrong
        self.policy = options.policy
        self.run: RunHandle | None = open_run_from(config)
        self.incarnation = 0
        framework_id: str | None = None
        prior: list[PriorTask] = []
        try:
            if self.run is not None:
                self.incarnation = self.run.store.next_incarnation(self.run.run_id)
                if self.incarnation > 1:
                    framework_id, prior = previous_incarnation(self.run)
            super().__init__(config, maxCores, maxMemory, maxDisk)
        except BaseException:
            if self.run is not None:
                self.run.close()
            raise
        if self.incarnation > 1:
            with self.localBatch.jobIndexLock:  # no id of a previous leader's comes back
                self.localBatch.jobIndex = max(self.localBatch.jobIndex, first_job_id(self.incarnation))
        recorders: list[Recorder] = []
        if self.run is not None:
            recorders.append(self.run.recorder())
        self._init_state()
        try:
            secure_job_store(getattr(config, "jobStore", None))  # Toil has made it: before any job runs
            plan = read_plan(getattr(config, "plastic_plan", None))
            self.framework = self._framework(config, options, plan, recorders, framework_id)
            framework_removed = start_framework(self.framework, incarnation=self.incarnation,
                                                framework_id=framework_id, failover=options.failover_timeout_s)
            if self.run is not None:  # before a resume: a notice may doom an adopted task
                self.notices = NoticeFollower(self.run.store, self.framework).start()
            self.provisioner = build_provisioner(config, self.framework, master=options.master, run_id=self.run_id,
                                                 plan=plan)
            if self.incarnation > 1:
                resume(self.framework, prior, incarnation=self.incarnation, run_id=self.run_id,
                       framework_removed=framework_removed, adopt_s=options.book.adopt_s)
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

    def _init_state(self) -> None:
        """The batch system's own state: issued jobs, the merged update queue, what it starts later."""
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

    def _framework(self, config: Any, options: BatchOptions, plan: RunPlan, recorders: list[Recorder],
                   framework_id: str | None) -> Framework:
        """The Framework (not started yet) that runs this leader's jobs, with the runtime history its book
        estimates from."""
        # a plan made from a trace gives each tool a prior, used until the store has that tool's history
        planned = planned_runtimes(plan.tasks, {tool: entry.step for tool, entry in self.policy.tools.items()})
        store = self.run.store if self.run is not None else None
        history = None if store is None and not planned else runtime_history(store, planned)
        failover = options.failover_timeout_s
        return Framework(options.master, name=f"toil-{getattr(config, 'workflowID', '') or 'plastic'}",
                         failover_timeout_s=failover, on_ended=self._ended,
                         record_path=record_log_path(), recorders=recorders,
                         record_flush_s=RECORD_FLUSH_S, book=options.book,
                         framework_id=framework_id if failover else None,
                         job_store=self._job_store_answer, runtime_history=history,
                         credential=options.credential)

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


def secure_job_store(locator: str | None) -> None:
    """An S3 job store's bucket made private and encrypted (plastic.aws.job_store); other kinds: nothing."""
    if is_s3_locator(locator):
        secure(str(locator))
