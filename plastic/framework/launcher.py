"""The JobBook's launches carried out on the driver (plastic.framework.adapter), deciding nothing.

The offers are kept as the master sent them until the book uses or declines them; a LaunchTasks
becomes one ACCEPT of TaskInfos (plastic.framework.task_info) built from each job's command (what
the Toil leader issued) and the offer it was placed on.  A task whose job has no command here (a bug:
its TaskCommand was dropped) is not sent: it comes back as a TASK_ERROR event for the book.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from plastic.core.book import commands as cmd
from plastic.core.book import events as evt
from plastic.core.book.jobs import Job
from plastic.core.errors import PlasticError
from plastic.framework.task_info import LaunchSpec, TaskInfoBuilder
from plastic.mesos.offers import value_of

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TaskCommand:
    """What a task runs: a shell command with its environment (the adapter adds nothing to either)."""

    command: str
    environment: Mapping[str, str] = field(default_factory=dict)


class MissingTaskCommand(PlasticError):
    """The book launched a job whose command the shell does not have."""

    def __init__(self, job_id: str):
        super().__init__(f"plastic has no command for job {job_id} (it was dropped); the launch is not sent",
                         source=f"job {job_id}")
        self.job_id = job_id


class Launcher:
    """Offers as received, the jobs' commands, and the launches built from both."""

    def __init__(self, task_infos: TaskInfoBuilder):
        self.task_infos = task_infos
        self.commands: dict[str, TaskCommand] = {}  # job id -> what it runs
        self.offer_resources: dict[str, dict[str, Mapping[str, Any]]] = {}  # offer id -> name -> resource
        self.offers: dict[str, Mapping[str, Any]] = {}  # offer id -> the offer (its executor ids)

    def offered(self, offer: Mapping[str, Any]) -> None:
        oid = value_of(offer.get("id")) or ""
        self.offer_resources[oid] = {r["name"]: r for r in offer.get("resources") or ()}
        self.offers[oid] = offer

    def forget(self, offer_id: str) -> None:
        """The offer is used, declined or rescinded."""
        self.offer_resources.pop(offer_id, None)
        self.offers.pop(offer_id, None)

    def launch(self, driver: Any, launch: cmd.LaunchTasks, jobs: Mapping[str, Job]) -> list[evt.Event]:
        """Send the launch (or decline its offer when no task of it can be sent); the TASK_ERROR events
        of the tasks that could not be."""
        specs, errors = [], []
        for task in launch.tasks:
            try:
                specs.append(self._task_spec(task, jobs.get(task.job_id)))
            except MissingTaskCommand as error:
                log.error("%s", error)
                errors.append(evt.StatusReceived(task.mesos_task_id, "TASK_ERROR", message=str(error),
                                                 agent_id=task.agent_id))
        if specs:
            driver.launchTasks({"value": launch.offer_id}, self.task_infos.infos(
                specs, self.offers.get(launch.offer_id, {}), self.offer_resources.get(launch.offer_id, {})))
        else:
            driver.declineOffer([{"value": launch.offer_id}], {"refuse_seconds": 0.0})
        self.forget(launch.offer_id)
        return errors

    def _task_spec(self, task: cmd.TaskLaunch, job: Job | None) -> LaunchSpec:
        command = self.commands.get(task.job_id)
        if command is None:
            raise MissingTaskCommand(task.job_id)
        store_id = job.job_store_id if job is not None else None
        labels = [("plastic_job", task.job_id), ("plastic_attempt", str(task.attempt))]
        return LaunchSpec((job.name if job is not None and job.name else None) or f"toil-{task.job_id}",
                        task.mesos_task_id, task.agent_id, task.demand.vcpus, task.demand.ram_mib, command.command,
                        command.environment, labels + ([("plastic_job_store_id", store_id)] if store_id else []))
