"""Read an annotated CWL workflow: one row per (flattened) step, and a Workload.

Loading, validation, `run:`/`$import`/packed documents and expression
evaluation are cwltool's; this module walks the loaded `Process` objects.

Resolution of a step's values (see plastic.cwl.resolve for the levels):

* vcpus / RAM: the plastic annotation ("hint", or "workflow hint" when
  inherited from an enclosing workflow), else the effective
  `ResourceRequirement` exactly as cwltool - hence Toil - resolves it
  (coresMin, or coresMax when alone; ramMin, or ramMax when alone; floats
  rounded up), else the CWL default (1 core; 256 MiB, 1024 MiB for v1.0
  documents as cwltool does).  An expression that needs run-time values is
  "dynamic" and planned with the default, with an assumption recorded.
* preempt: the plastic annotation, then `arv:UsePreemptible`, then inference
  (a step in a scatter is preemptible, "inferred"), then reliable ("default").

With a job order, resource expressions and `valueFrom` are evaluated by cwltool
and scatter widths are counted.  The output of a scattered step is an array of
known length, so a scatter over it has a known width.  A width known only at
run time is planned as `scatter_width_assumption` copies: `scatter_width` then
holds that assumed count and `width_dynamic` is True.  Resources may differ
between the copies of a scattered step (expressions over each element); the
row shows the largest, `StepRow.instances` and `workload()` keep each.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from plastic.core.errors import PlasticError, WorkflowError
from plastic.core.model import Preempt, TaskSpec, Workload
from plastic.cwl.steps import (  # where a value came from, one copy of a step: shared with plastic.cwl.walk
    NO_JOB_ORDER,
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC,
    SOURCE_INFERRED,
    SOURCE_RESOURCE_REQUIREMENT,
    StepInstance,
)

log = logging.getLogger(__name__)

__all__ = ["NO_JOB_ORDER", "SOURCE_DEFAULT", "SOURCE_DYNAMIC", "SOURCE_INFERRED", "SOURCE_RESOURCE_REQUIREMENT",
           "CwlWorkflow", "StepInstance", "StepRow", "load_cwl"]


@dataclass(frozen=True)
class StepRow:
    """One row of `plastic inspect`: a flattened step and where its values came from."""

    step_id: str
    vcpus: int
    vcpus_source: str
    ram_mib: int
    ram_source: str
    preempt: Preempt
    preempt_source: str
    instance_type: str | None
    scatter_width: int | None  # None = not scattered; else the number of copies (assumed if dynamic)
    width_dynamic: bool
    parents: tuple[str, ...]  # flattened ids of upstream steps
    instances: tuple[StepInstance, ...] = field(default=(), repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "step_id": self.step_id,
            "vcpus": self.vcpus,
            "vcpus_source": self.vcpus_source,
            "ram_mib": self.ram_mib,
            "ram_source": self.ram_source,
            "preempt": self.preempt.to_json(),
            "preempt_source": self.preempt_source,
            "instance_type": self.instance_type,
            "scatter_width": self.scatter_width,
            "width_dynamic": self.width_dynamic,
            "parents": list(self.parents),
        }


def _compatible(child: tuple[tuple[str, int], ...], parent: tuple[tuple[str, int], ...]) -> bool:
    """Copies in the same element of a shared enclosing scatter, or no shared scatter."""
    mine = dict(child)
    return all(mine[s] == i for s, i in parent if s in mine)


@dataclass(frozen=True)
class CwlWorkflow:
    source: str
    rows: tuple[StepRow, ...]
    assumptions: tuple[str, ...]

    def _instances(self, row: StepRow) -> tuple[StepInstance, ...]:
        if row.instances or row.scatter_width == 0:
            return row.instances
        count = 1 if row.scatter_width is None else row.scatter_width
        return tuple(StepInstance((), row.vcpus, row.ram_mib) for _ in range(count))

    def workload(self) -> Workload:
        """One TaskSpec per step, or per scatter element ("step[0]".."step[N-1]")."""
        ids: dict[str, list[tuple[tuple[tuple[str, int], ...], str]]] = {}
        for row in self.rows:
            insts = self._instances(row)
            if row.scatter_width is None and len(insts) == 1:
                ids[row.step_id] = [(insts[0].scope, row.step_id)]
            else:
                ids[row.step_id] = [(inst.scope, f"{row.step_id}[{k}]") for k, inst in enumerate(insts)]
        by_id = {row.step_id: row for row in self.rows}

        def upstream(step_id: str, seen: frozenset[str] = frozenset()) -> list[str]:
            """Parent steps with tasks: a parent without any (empty scatter) passes its own on."""
            found: list[str] = []
            for parent in by_id[step_id].parents if step_id in by_id else ():
                if ids.get(parent):
                    found.append(parent)
                elif parent in by_id and parent not in seen:
                    found.extend(p for p in upstream(parent, seen | {parent}) if p not in found)
            return found

        tasks: list[TaskSpec] = []
        for row in self.rows:
            parent_steps = upstream(row.step_id)
            for inst, (scope, task_id) in zip(self._instances(row), ids[row.step_id], strict=True):
                parents = tuple(
                    pid for parent in parent_steps for pscope, pid in ids.get(parent, ())
                    if _compatible(scope, pscope)
                )
                tasks.append(TaskSpec(id=task_id, vcpus=inst.vcpus, ram_mib=inst.ram_mib,
                                      preempt=row.preempt, instance_type=row.instance_type,
                                      parents=parents))
        return Workload(tasks=tuple(tasks), assumptions=self.assumptions, source=self.source)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "rows": [r.to_json() for r in self.rows],
                "assumptions": list(self.assumptions)}


def load_cwl(path: str, job_path: str | None = None, *, infer_preempt: bool = True,
             scatter_width_assumption: int = 1) -> CwlWorkflow:
    """Load a CWL Workflow or CommandLineTool (v1.0-v1.2) and resolve every step.

    Raises WorkflowError / AnnotationError (one line each) for any bad input.
    """
    if isinstance(scatter_width_assumption, bool) or not isinstance(scatter_width_assumption, int) \
            or scatter_width_assumption < 1:
        raise WorkflowError(f"must be an integer >= 1, got {scatter_width_assumption!r}",
                            source=path, field="scatter_width_assumption")
    from plastic.cwl.glue import load_process, quiet_cwltool, to_workflow_error
    from plastic.cwl.walk import Walker

    with quiet_cwltool():
        process = load_process(path)
        job = None
        if job_path is not None:
            from plastic.cwl.values import load_job_order

            job = load_job_order(job_path, process)
        walker = Walker(infer_preempt=infer_preempt, width_assumption=scatter_width_assumption)
        try:
            walker.run(process, job)
        except PlasticError:
            raise
        except Exception as exc:  # noqa: BLE001 - a cwltool error not caught closer to its cause
            raise to_workflow_error(exc, default_source=path) from exc
    rows = tuple(_row(step) for step in walker.steps.values())
    return CwlWorkflow(source=path, rows=rows, assumptions=tuple(walker.assumptions))


def _row(step: Any) -> StepRow:
    insts = tuple(step.instances)
    best = max(range(len(insts)), key=lambda k: (insts[k].vcpus, -k)) if insts else None
    best_ram = max(range(len(insts)), key=lambda k: (insts[k].ram_mib, -k)) if insts else None
    vcpus, vsrc = (insts[best].vcpus, step.vcpus_sources[best]) if best is not None else step.template[:2]
    ram, rsrc = (insts[best_ram].ram_mib, step.ram_sources[best_ram]) if best_ram is not None \
        else step.template[2:]
    return StepRow(
        step_id=step.step_id,
        vcpus=vcpus, vcpus_source=vsrc, ram_mib=ram, ram_source=rsrc,
        preempt=step.preempt, preempt_source=step.preempt_source,
        instance_type=step.instance_type,
        scatter_width=len(insts) if step.replicated else None,
        width_dynamic=step.width_dynamic,
        parents=tuple(step.parents),
        instances=insts,
    )

