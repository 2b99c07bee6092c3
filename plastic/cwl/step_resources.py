"""The cores and RAM one copy of a step asks for, as the walk of a workflow (plastic.cwl.walk) plans
them: plastic's resolved values, else the step's ResourceRequirement (evaluated by cwltool for the
copy's input object when it holds expressions), else CWL's defaults; each with where it came from.
Imports cwltool, so it is loaded lazily.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from cwltool.context import RuntimeContext
from cwltool.process import Process
from cwltool.update import ORIGINAL_CWLVERSION

from plastic.core.errors import PlasticError, WorkflowError
from plastic.cwl.glue import to_workflow_error
from plastic.cwl.resolve import Resolved
from plastic.cwl.steps import NO_JOB_ORDER, SOURCE_DEFAULT, SOURCE_DYNAMIC, SOURCE_RESOURCE_REQUIREMENT
from plastic.cwl.values import Unknown, first_unknown

_EVAL_DIR = "/nonexistent/plastic-evaluates-only"  # never created: nothing runs
_LOCATION = re.compile(r"^\S+?:(\d+):\d+:", re.MULTILINE)


def step_resources(resolved: Resolved, step_id: str, tool: Process, job: Mapping[str, Any], where: str, *,
                   note: Callable[[str], None] | None) -> tuple[int, str, int, str]:
    """(vcpus, its source, RAM in MiB, its source) of one copy of step `step_id` running `tool` on `job`.

    `note` takes the sentence saying an amount is known only at run time; None for the template of a
    step that never runs (then nothing is evaluated, and nothing noted).
    """
    r = resolved
    if r.vcpus is not None and r.ram_mib is not None:
        return r.vcpus, str(r.vcpus_source), r.ram_mib, str(r.ram_source)
    rr, _ = tool.get_requirement("ResourceRequirement")
    rr = rr or {}
    default_ram = 1024 if tool.metadata.get(ORIGINAL_CWLVERSION) == "v1.0" else 256
    picks: dict[str, tuple[str, Any] | None] = {}
    for kind in ("cores", "ram"):
        # as cwltool: the Min when set (and non-zero), else the Max
        name = next((f"{kind}{m}" for m in ("Min", "Max") if rr.get(f"{kind}{m}")), None)
        picks[kind] = (name, rr[name]) if name else None
    wanted = [k for k, have in (("cores", r.vcpus), ("ram", r.ram_mib)) if have is None]
    evaluated: dict[str, Any] | None = None
    blocker: Unknown | None = None
    if any(isinstance(picks[k][1], str) for k in wanted if picks[k]):
        blocker = first_unknown(job)
        if blocker is None and note is None:
            blocker = Unknown("the step does not run")
        if blocker is None:
            evaluated = _evaluate(tool, job, rr, where)
    results: dict[str, tuple[int, str]] = {}
    for kind in wanted:
        default = 1 if kind == "cores" else default_ram
        pick = picks[kind]
        if pick is None:
            results[kind] = (default, SOURCE_DEFAULT)
            continue
        name, raw = pick
        label = f"ResourceRequirement.{name}"
        if isinstance(raw, str):
            if evaluated is None:
                if note is not None:
                    reason = blocker.reason if blocker else NO_JOB_ORDER
                    unit = " core" if kind == "cores" else " MiB"
                    note(f"Step '{step_id}': {label} `{_brief(raw)}` is known only at run time "
                         f"({reason}); assumed the CWL default of {default}{unit}.")
                results[kind] = (default, SOURCE_DYNAMIC)
                continue
            raw = evaluated.get(f"{kind}Min")
        results[kind] = (_whole(raw, where=where, field=label), SOURCE_RESOURCE_REQUIREMENT)
    vcpus, vsrc = (r.vcpus, str(r.vcpus_source)) if r.vcpus is not None else results["cores"]
    ram, rsrc = (r.ram_mib, str(r.ram_source)) if r.ram_mib is not None else results["ram"]
    return vcpus, vsrc, ram, rsrc


def _evaluate(tool: Process, job: Mapping[str, Any], rr: Mapping[str, Any], where: str) -> dict[str, Any]:
    """ResourceRequirement evaluated by cwltool for this input object."""
    captured: dict[str, Any] = {}

    def select(request: dict[str, Any], _rc: RuntimeContext) -> dict[str, Any]:
        captured.update(request)
        return {"cores": 1, "ram": 1, "tmpdirSize": 1, "outdirSize": 1}

    rc = RuntimeContext()
    rc.outdir = rc.tmpdir = rc.stagedir = _EVAL_DIR
    rc.use_container = False
    rc.select_resources = select
    try:
        tool._init_job(copy.deepcopy(dict(job)), rc)
    except PlasticError:
        raise
    except Exception as exc:  # noqa: BLE001 - cwltool's WorkflowException, JS errors
        err = to_workflow_error(exc, default_source=where)
        text = str(exc)
        if "Invalid job input record" in text:
            raise WorkflowError(err.message, source=where, field="inputs") from exc
        raise WorkflowError(err.message, source=where,
                            field=_failed_field(rr, text)) from exc
    return captured


def _brief(text: str, limit: int = 70) -> str:
    """An expression on one short line, for a sentence."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _failed_field(rr: Mapping[str, Any], text: str) -> str:
    """Which ResourceRequirement field an evaluation error points at."""
    exprs = [k for k, v in rr.items() if isinstance(v, str) and k != "class"]
    if len(exprs) == 1:
        return f"ResourceRequirement.{exprs[0]}"
    lines = {int(m.group(1)) for m in _LOCATION.finditer(text)}
    lc = getattr(rr, "lc", None)
    for k in exprs:
        try:
            if lc is not None and lc.data[k][0] + 1 in lines:
                return f"ResourceRequirement.{k}"
        except (KeyError, AttributeError, IndexError, TypeError):
            continue
    return "ResourceRequirement"


def _whole(raw: Any, *, where: str, field: str) -> int:
    """A resource amount rounded up to a whole number >= 1."""
    bad_float = isinstance(raw, float) and not math.isfinite(raw)
    if isinstance(raw, bool) or not isinstance(raw, int | float) or bad_float:
        raise WorkflowError(f"must be a number or an expression giving one, got {raw!r}",
                            source=where, field=field)
    value = math.ceil(raw)
    if value < 1:
        raise WorkflowError(f"must be positive, got {raw!r}", source=where, field=field)
    return value
