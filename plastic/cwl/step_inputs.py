"""A step's input object as the walk of a workflow (plastic.cwl.walk) sees it: its sources merged
(linkMerge, pickValue), defaults filled in, `valueFrom` evaluated where the values are known before
run time, and the object the process it runs is given.  Imports cwltool, so it is loaded lazily.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from cwl_utils import expression
from cwltool.process import Process, shortname
from cwltool.utils import aslist

from plastic.core.errors import WorkflowError
from plastic.cwl.glue import to_workflow_error
from plastic.cwl.values import Unknown, first_unknown, link_merge, pick_value


def merge_sources(param: Mapping[str, Any], vals: list[Any], where: str) -> Any:
    """The value of an input (or workflow output) `param` from its sources' values `vals`."""
    method = param.get("linkMerge") or ("merge_nested" if len(vals) > 1 else None)
    value = link_merge(vals, str(method)) if method else (vals[0] if vals else None)
    if "pickValue" in param:
        try:
            value = pick_value(value, str(param["pickValue"]))
        except ValueError as exc:
            raise WorkflowError(str(exc), source=where,
                                field=f"{shortname(param['id'])}.pickValue") from None
    return value


def step_inputs(step: Any, source_value: Callable[[str], Any], where: str) -> dict[str, Any]:
    """The step's input object (full input ids), before any scatter and `valueFrom`."""
    io: dict[str, Any] = {}
    for inp in step.tool["inputs"]:
        srcs = aslist(inp.get("source", []))
        value = merge_sources(inp, [source_value(s) for s in srcs], where)
        if value is None and "default" in inp:
            value = copy.deepcopy(inp["default"])
        io[inp["id"]] = value
    return io


def connected(step: Any, element: Mapping[str, Any]) -> dict[str, Any]:
    """The step's input object as the process it runs sees it (short names)."""
    unused = {inp["id"] for inp in step.tool["inputs"] if inp.get("not_connected")}
    return {shortname(k): v for k, v in element.items() if k not in unused}


def value_from(wf: Process, step: Any, element: dict[str, Any], where: str) -> dict[str, Any]:
    """`element` with each input's `valueFrom` evaluated (Unknown when what it reads is unknown)."""
    exprs = {inp["id"]: inp["valueFrom"] for inp in step.tool["inputs"] if "valueFrom" in inp}
    if not exprs:
        return element
    short = {shortname(k): v for k, v in element.items()}
    out = dict(element)
    for iid, expr in exprs.items():
        self_value = element.get(iid)
        needs_inputs = "inputs" in str(expr)
        blocker = first_unknown(self_value) or (first_unknown(short) if needs_inputs else None)
        if blocker is not None:
            out[iid] = Unknown(blocker.reason)
            continue
        try:
            out[iid] = expression.do_eval(expr, short, wf.requirements, None, None, {},
                                          context=self_value, timeout=60)
        except Exception as exc:  # noqa: BLE001 - JavaScript and parameter reference errors
            err = to_workflow_error(exc, default_source=where)
            raise WorkflowError(err.message, source=where,
                                field=f"in.{shortname(iid)}.valueFrom") from exc
    return out
