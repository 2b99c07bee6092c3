"""What `plastic run` is asked to do (RunRequest: the run's settings, with their defaults), what it
answers (RunResult), and what shows the run while it works (Display): shared by the runner, the local
cluster it starts, and the CLI's view.

The settings are kept in the run directory's run.json by one pair of functions, `settings_json` and
`request_from_json`, so a resumed run has every setting of the first (a field added to RunRequest is
saved and read back with nothing else to change; fields marked ``kept=False`` are not kept).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plastic.core.account.progress import Progress
from plastic.core.account.report import RunReport
from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S
from plastic.core.elastic.model import DEFAULT_NODE_IDLE_S
from plastic.run.ec2 import Ec2Settings

log = logging.getLogger(__name__)


_NOT_KEPT = {"kept": False}  # a setting of this invocation only, not kept in run.json


@dataclass
class RunRequest:
    workflow: Path
    job: Path | None
    outdir: Path
    plan_path: Path | None = field(default=None, metadata=_NOT_KEPT)  # the run directory keeps plan.json
    master: str | None = None
    redis_url: str | None = field(default=None, metadata=_NOT_KEPT)  # kept without its password (below)
    report_path: Path | None = None
    run_dir: Path | None = field(default=None, metadata=_NOT_KEPT)  # where run.json is
    run_id: str | None = None
    catalog_path: str | None = None
    max_agents: int = 8
    interrupt_rate: float | None = None
    notice_seconds: float = INTERRUPTION_NOTICE_S
    seed: int | None = None
    toil_args: tuple[str, ...] = ()
    static: bool = False  # the plan's cluster, fixed (else elastic: it grows and shrinks with the work)
    max_nodes: int | None = None  # elastic: live nodes at most (default: max_agents on a local cluster)
    idle_s: float = DEFAULT_NODE_IDLE_S
    budget_usd_per_hour: float | None = None
    budget_usd: float | None = None
    boot_s: float = 0.0  # local cluster: how long a new agent takes to boot
    makespan_allowance: float = 0.0  # elastic, looking ahead: work may start this fraction later for fewer nodes
    refuse_spot: str = ""  # local cluster: spot types it refuses to create (an emulated shortage; * = all)
    ec2: Ec2Settings | None = None  # --provider ec2: nodes are EC2 instances joining --master
    mesos_credential: Path | None = None  # --master authenticates frameworks: the credential's file
    executor: str = "plastic"  # plastic's executor (one per agent) or "command" (Mesos' command executor)
    rebalance: str | None = None  # EC2 rebalance recommendations: ignore | avoid-long | drain (None: avoid-long)
    # Toil's job store: '' (S3 with --provider ec2, else the run directory), file, s3, or aws:REGION:NAME;
    # run.json keeps the locator the run got (plastic.run.job_store.job_store_setting)
    job_store: str = ""
    out_url: str | None = None  # --outdir s3://BUCKET/PREFIX: the outputs exported there (outdir unused)

    @property
    def elastic(self) -> bool:
        """Elastic on a local cluster plastic starts, or on EC2 (a given --master needs a provider)."""
        return not self.static and (not self.master or self.ec2 is not None)

    def batch_args(self, run_dir: Path, master: str) -> list[str]:
        """The batch system's options these settings give (plastic.framework.toil_options)."""
        rebalance = ["--plasticRebalance", self.rebalance] if self.rebalance else []
        return [*rebalance, *self._elastic_args(run_dir, master)]

    def _elastic_args(self, run_dir: Path, master: str) -> list[str]:
        """The batch system's options for the elastic provisioner (plastic.framework.elastic_options)."""
        if not self.elastic:
            return []
        args = ["--plasticPlan", str(run_dir / "plan.json"), "--plasticIdleSeconds", f"{self.idle_s:g}",
                "--plasticMaxNodes", str(self.max_nodes or self.max_agents)]
        if self.ec2 is not None:  # boot time: the provider's default unless given
            args += ["--plasticProvider", "ec2", *self.ec2.batch_args()]
            args += ["--plasticBootSeconds", f"{self.boot_s:g}"] if self.boot_s else []
        else:
            args += ["--plasticProvider", "local", "--plasticProviderUrl", master,
                     "--plasticBootSeconds", f"{self.boot_s:g}"]
        if self.catalog_path:
            args += ["--plasticCatalog", str(Path(self.catalog_path).resolve())]
        if self.budget_usd_per_hour is not None:
            args += ["--plasticBudgetPerHour", f"{self.budget_usd_per_hour:g}"]
        if self.budget_usd is not None:
            args += ["--plasticBudgetUsd", f"{self.budget_usd:g}"]
        if self.makespan_allowance:
            args += ["--plasticMakespanAllowance", f"{self.makespan_allowance:g}"]
        return args


_PATHS = {"workflow", "job", "outdir", "report_path", "mesos_credential"}  # kept absolute
_BEFORE_STATIC = {"static": True}  # run.json of before the elastic default: the plan's cluster, fixed


def settings_json(request: RunRequest, *, redis_url: str | None, started_at: float) -> dict[str, object]:
    """The run's settings as run.json keeps them (``redis_url``: the URL without its password)."""
    doc: dict[str, object] = {"run_id": request.run_id, "redis_url": redis_url, "started_at": started_at}
    for f in dataclasses.fields(RunRequest):
        if not f.metadata.get("kept", True) or f.name == "run_id":
            continue
        value = getattr(request, f.name)
        if f.name in _PATHS and value is not None:
            value = str(Path(value).resolve())
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Ec2Settings):
            value = dataclasses.asdict(value)
        doc[f.name] = value
    return doc


def request_from_json(doc: Mapping[str, object], *, run_dir: Path, redis_url: str | None) -> RunRequest:
    """The settings run.json keeps, back as the request (a setting it lacks: its default)."""
    given: dict[str, object] = {"run_dir": run_dir, "redis_url": redis_url}
    for f in dataclasses.fields(RunRequest):
        if not f.metadata.get("kept", True):
            continue
        value = doc.get(f.name, _BEFORE_STATIC.get(f.name, dataclasses.MISSING))
        if value is dataclasses.MISSING or (value is None and f.default is not None
                                            and f.default is not dataclasses.MISSING):
            continue  # the field's default
        if f.name in _PATHS and value is not None:
            value = Path(str(value))
        elif f.name == "toil_args":
            value = tuple(str(a) for a in value or ())  # type: ignore[attr-defined]
        elif f.name == "ec2" and value is not None:
            value = Ec2Settings(**value)  # type: ignore[arg-type]
        given[f.name] = value
    return RunRequest(**given)  # type: ignore[arg-type]


_FLAGS = {"plan_path": "--plan", "report_path": "--report", "catalog_path": "--catalog", "redis_url": "--redis",
          "idle_s": "--idle-seconds", "boot_s": "--boot-seconds", "budget_usd_per_hour": "--budget-per-hour",
          "out_url": "--outdir"}
_POSITIONAL = {"workflow", "job", "toil_args", "ec2"}


def run_args(request: RunRequest) -> list[str]:
    """`plastic run`'s arguments that give these settings: WORKFLOW [JOB], an option for each setting
    away from its default (its flag: the setting's name, dashed, but for those in _FLAGS), then `--` and
    Toil's options.  `plastic serve` starts a submitted run with them."""
    args = [str(request.workflow), *([str(request.job)] if request.job is not None else [])]
    defaults = RunRequest(workflow=request.workflow, job=None, outdir=request.outdir)
    for f in dataclasses.fields(RunRequest):
        value = getattr(request, f.name)
        if f.name in _POSITIONAL or value is None or (f.name != "outdir" and value == getattr(defaults, f.name)):
            continue
        if f.name == "outdir" and request.out_url:
            continue  # --outdir is the URL (below)
        flag = _FLAGS.get(f.name, "--" + f.name.replace("_", "-"))
        args += [flag] if value is True else [flag, str(value)]
    if request.ec2 is not None:
        args += ["--provider", "ec2"]
        for name, value in dataclasses.asdict(request.ec2).items():
            args += [] if value is None else ["--" + name.replace("_", "-"), str(value)]
    return [*args, *(["--", *request.toil_args] if request.toil_args else [])]


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    exit_code: int
    outputs: dict[str, Any] | None
    report: RunReport
    notes: list[str] = field(default_factory=list)
    stopped: str | None = None  # why the run stopped and can be resumed (no disk space)


class Display:
    """What the runner shows while it works (the CLI gives a rich one; tests a silent one)."""

    def note(self, text: str) -> None:
        log.info("%s", text)

    def start(self, progress: Progress, total_hint: int) -> None:
        pass

    def update(self, progress: Progress) -> None:
        pass

    def stop(self) -> None:
        pass
