"""What each tool copy gets when plastic.cwl.lower lowers a workflow: its own tool id, the
ResourceRequirement written under its `requirements` (if any) and the plan's values for the policy.

The decisions are described in plastic.cwl.lower's module doc; imports cwltool (and the loader)
lazily, like plastic.cwl.lower.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plastic.core.errors import WorkflowError
from plastic.core.model import Preempt
from plastic.cwl.lower_io import plain

TOOL_ID_PREFIX = "plastic_"

_RESOURCE_FIELDS = tuple(f"{kind}{bound}" for kind in ("cores", "ram", "tmpdir", "outdir")
                         for bound in ("Min", "Max"))
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_V10_DEFAULT_RAM = 1024  # cwltool's default ramMin for v1.0 documents
_DEFAULT_RAM = 256  # and for later versions


@dataclass(frozen=True)
class LoweredStep:
    """One step that runs a tool, as lowered: its own tool id and the plan's values."""

    step: str  # the loader's flattened step id, e.g. "per_sample/sort"
    tool_id: str  # e.g. "plastic_per_sample_sort": the last dotted part of Toil's unitName
    vcpus: int | None  # None: an expression evaluated at run time
    ram_mib: int | None
    preempt: Preempt
    instance_type: str | None

    def to_policy(self) -> dict[str, Any]:
        return {"preempt": self.preempt.to_json(), "instance_type": self.instance_type,
                "step": self.step, "vcpus": self.vcpus, "ram_mib": self.ram_mib}


@dataclass(frozen=True)
class ToolPlan:
    step: LoweredStep
    resource: dict[str, Any] | None  # the ResourceRequirement the copy gets, if any


def tool_id_for(step: str) -> str:
    """The id a step's tool copy is named after (before making it unique)."""
    return TOOL_ID_PREFIX + _UNSAFE.sub("_", step.replace("/", "_"))


def unique_name(base: str, taken: set[str]) -> str:
    """`base`, else `base_2`, `base_3`...: the first not in `taken` (which then holds it)."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def processes_by_step(process: Any) -> dict[str, Any]:
    """Flattened step id -> the loaded cwltool Process it runs (with inherited requirements)."""
    from cwltool.process import shortname

    from plastic.cwl.walk import process_name

    if process.tool["class"] != "Workflow":
        return {process_name(process): process}
    found: dict[str, Any] = {}

    def visit(wf: Any, prefix: str) -> None:
        for step in wf.steps:
            flat = prefix + shortname(step.id)
            emb = step.embedded_tool
            if emb.tool["class"] == "Workflow":
                visit(emb, flat + "/")
            else:
                found.setdefault(flat, emb)

    visit(process, "")
    return found


def _dynamic(rr: Mapping[str, Any], kind: str) -> bool:
    """Whether the amount cwltool takes for `kind` (Min when set, else Max) is an expression."""
    for bound in ("Min", "Max"):
        value = rr.get(f"{kind}{bound}")
        if value:
            return isinstance(value, str)
    return False


def plan_tools(rows: Any, processes: Mapping[str, Any], version: str, taken: set[str], *,
               source: str) -> dict[str, ToolPlan]:
    """Flattened step id -> what its tool copy gets, for the loader's `rows` of a document packed at
    `version`; the tool ids are made unique against (and added to) `taken`."""
    from plastic.cwl.loader import SOURCE_DEFAULT
    from plastic.cwl.resolve import SOURCE_HINT, SOURCE_WORKFLOW_HINT

    plastic_sources = (SOURCE_HINT, SOURCE_WORKFLOW_HINT)  # values that came from plastic:Plasticity

    lowered_default_ram = _V10_DEFAULT_RAM if version == "v1.0" else _DEFAULT_RAM
    plans: dict[str, ToolPlan] = {}
    for row in rows:
        emb = processes.get(row.step_id)
        if emb is None:
            raise WorkflowError(f"cannot lower: step '{row.step_id}' not found", source=source, field="steps")
        found, _ = emb.get_requirement("ResourceRequirement")
        rr = {k: v for k, v in (found or {}).items() if k in _RESOURCE_FIELDS}
        plastic_cpu = row.vcpus_source in plastic_sources
        plastic_ram = row.ram_source in plastic_sources
        # cwltool's default RAM depends on the version of the document the tool came from (1024 MiB
        # for v1.0, else 256); packing may change that version: then the plan's default is written out
        pin_ram = (row.ram_source == SOURCE_DEFAULT and row.ram_mib != lowered_default_ram
                   and not rr.get("ramMin") and not rr.get("ramMax"))
        resource = None
        if plastic_cpu or plastic_ram or pin_ram:
            fields = dict(rr)
            if plastic_cpu:
                fields["coresMin"] = row.vcpus
                fields.pop("coresMax", None)
            if plastic_ram:
                fields["ramMin"] = row.ram_mib
                fields.pop("ramMax", None)
            elif pin_ram:
                fields["ramMin"] = row.ram_mib
            resource = {"class": "ResourceRequirement", **{k: plain(v) for k, v in fields.items()}}
        step = LoweredStep(
            step=row.step_id,
            tool_id=unique_name(tool_id_for(row.step_id), taken),
            vcpus=row.vcpus if plastic_cpu or not _dynamic(rr, "cores") else None,
            ram_mib=row.ram_mib if plastic_ram or not _dynamic(rr, "ram") else None,
            preempt=row.preempt,
            instance_type=row.instance_type,
        )
        plans[row.step_id] = ToolPlan(step, resource)
    return plans


__all__ = ["TOOL_ID_PREFIX", "LoweredStep", "ToolPlan", "plan_tools", "processes_by_step", "tool_id_for",
           "unique_name"]
