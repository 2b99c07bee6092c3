"""Walk cwltool's loaded Process objects: flatten subworkflows, expand scatters,
evaluate what can be evaluated before run time, and resolve every step.

Used by plastic.cwl.loader (it yields plastic.cwl.steps values); imports cwltool, so it is loaded lazily.
"""

from __future__ import annotations

import copy
import heapq
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cwl_utils import expression
from cwltool.context import RuntimeContext
from cwltool.process import Process, shortname
from cwltool.update import ORIGINAL_CWLVERSION
from cwltool.utils import aslist

from plastic.core.errors import PlasticError, WorkflowError
from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt
from plastic.cwl.glue import display_path, to_workflow_error
from plastic.cwl.resolve import Level, Resolved, resolve_annotations
from plastic.cwl.steps import (
    NO_JOB_ORDER,
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC,
    SOURCE_INFERRED,
    SOURCE_RESOURCE_REQUIREMENT,
    StepInstance,
)
from plastic.cwl.values import (
    Unknown,
    first_unknown,
    link_merge,
    pick_value,
    scatter_elements,
    shaped,
)

log = logging.getLogger(__name__)

Scope = tuple[tuple[str, int], ...]
_EVAL_DIR = "/nonexistent/plastic-evaluates-only"  # never created: nothing runs
_LOCATION = re.compile(r"^\S+?:(\d+):\d+:", re.MULTILINE)


@dataclass
class StepAccumulator:
    """What the walk learns about one flattened step (over all its copies)."""

    step_id: str
    preempt: Preempt
    preempt_source: str
    instance_type: str | None
    parents: tuple[str, ...]
    replicated: bool
    width_dynamic: bool = False
    instances: list[StepInstance] = field(default_factory=list)
    vcpus_sources: list[str] = field(default_factory=list)
    ram_sources: list[str] = field(default_factory=list)
    template: tuple[int, str, int, str] = (1, SOURCE_DEFAULT, 256, SOURCE_DEFAULT)
    resolved: Resolved = field(default_factory=Resolved)


def _doc(uri: str) -> str:
    return display_path(uri)


def _line(obj: Any) -> int:
    lc = getattr(obj, "lc", None)
    line = getattr(lc, "line", None) if lc is not None else None
    return line if isinstance(line, int) else 1 << 30


def _out_id(entry: Any) -> str:
    return entry if isinstance(entry, str) else entry["id"]


def process_name(process: Process) -> str:
    """A short name for a bare tool: its fragment id, else its file name without extension."""
    pid = str(process.tool.get("id", ""))
    if "#" in pid:
        frag = pid.rsplit("#", 1)[1]
        if frag and frag != "main":
            return _strip_extension(frag.rsplit("/", 1)[-1])
    base = pid.rsplit("#", 1)[0].rsplit("/", 1)[-1]
    return _strip_extension(base) or "tool"


def _strip_extension(name: str) -> str:
    for ext in (".cwl", ".yml", ".yaml", ".json"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


class Walker:
    def __init__(self, *, infer_preempt: bool, width_assumption: int) -> None:
        self.infer_preempt = infer_preempt
        self.width_assumption = width_assumption
        self.steps: dict[str, StepAccumulator] = {}
        self.producers: dict[str, frozenset[str]] = {}
        self.assumptions: list[str] = []

    # --- bookkeeping ---------------------------------------------------------------------------

    def note(self, sentence: str) -> None:
        if sentence not in self.assumptions:
            self.assumptions.append(sentence)

    def _order(self, ids: set[str]) -> tuple[str, ...]:
        index = {sid: k for k, sid in enumerate(self.steps)}
        return tuple(sorted(ids, key=lambda s: (index.get(s, 1 << 30), s)))

    # --- entry ---------------------------------------------------------------------------------

    def run(self, process: Process, job: Mapping[str, Any] | None) -> None:
        inputs: dict[str, Any] = {}
        for inp in process.tool["inputs"]:
            name = shortname(inp["id"])
            inputs[name] = job.get(name) if job is not None else Unknown(NO_JOB_ORDER)
        if process.tool["class"] == "Workflow":
            top = Level.of(process.tool, inherited=True, uri=process.tool["id"])
            self.walk(process, "", inputs, (top,), (), False, False, frozenset(), phantom=False)
        else:
            name = process_name(process)
            levels = (Level.of(process.tool, inherited=False, uri=process.tool["id"]),)
            acc = self.register(name, levels, (), replicated=False)
            self.add_instance(acc, process, inputs, (), where=f"{_doc(process.tool['id'])} (step {name})")

    # --- workflows -----------------------------------------------------------------------------

    def walk(self, wf: Process, prefix: str, inputs: Mapping[str, Any], enclosing: tuple[Level, ...],
             scope: Scope, replicated: bool, dynamic: bool, outer_parents: frozenset[str], *,
             phantom: bool) -> tuple[dict[str, Any], frozenset[str]]:
        """Walk one (sub)workflow; return its output values and its sink steps (flattened ids)."""
        wf_inputs = {inp["id"]: shortname(inp["id"]) for inp in wf.tool["inputs"]}
        owner: dict[str, Any] = {}
        for step in wf.steps:
            for out in step.tool["out"]:
                owner[_out_id(out)] = step
        values: dict[str, Any] = {}
        consumed: set[str] = set()

        def source_value(src: str) -> Any:
            if src in wf_inputs:
                return inputs.get(wf_inputs[src])
            if src in values:
                return values[src]
            return Unknown(f"source '{shortname(src)}' is not known")

        for step in self._topological(wf.steps, owner):
            flat = prefix + shortname(step.id)
            where = f"{_doc(step.id)} (step {flat})"
            parents: set[str] = set()
            intra = False
            for inp in step.tool["inputs"]:
                for src in aslist(inp.get("source", [])):
                    if src in owner:
                        intra = True
                        consumed.add(owner[src].id)
                        parents |= self.producers.get(prefix + shortname(owner[src].id), frozenset())
            if not intra:
                parents |= outer_parents
            io = self._step_inputs(step, source_value, where)
            scatter = [str(s) for s in aslist(step.tool.get("scatter", []))]
            method = str(step.tool.get("scatterMethod") or "dotproduct")
            shape: list[int] | None = None
            width_dynamic = dynamic
            if scatter:
                try:
                    result = scatter_elements(io, scatter, method)
                except ValueError as exc:
                    raise WorkflowError(str(exc), source=where, field="scatter") from None
                if isinstance(result, Unknown):
                    width_dynamic = True
                    if not phantom:
                        self.note(f"Step '{flat}': the scatter width is known only at run time "
                                  f"({result.reason}); assumed {self.width_assumption}: an elastic `plastic run` "
                                  f"grows the cluster for the width it finds.")
                    element = dict(io)
                    for sid in scatter:
                        element[sid] = Unknown(result.reason)
                    elements = [dict(element) for _ in range(self.width_assumption)]
                else:
                    elements, shape = result
            else:
                elements = [io]
            if "when" in step.tool and not phantom:
                self.note(f"Step '{flat}' is conditional (`when`); planned as if it runs.")
            if not phantom:
                elements = [self._value_from(wf, step, e, where) for e in elements]
            scopes = [scope + ((flat, i),) if scatter else scope for i in range(len(elements))]
            inner_replicated = replicated or bool(scatter)
            emb = step.embedded_tool
            if emb.tool["class"] == "Workflow":
                sub = (Level.of(step.tool, inherited=True, uri=step.id),
                       Level.of(emb.tool, inherited=True, uri=emb.tool["id"])) + enclosing
                outs: list[dict[str, Any]] = []
                sinks: set[str] = set()
                runs = list(zip(elements, scopes, strict=True)) or [(dict(io), scope + ((flat, 0),))]
                for element, el_scope in runs:
                    sub_inputs = self._connected(step, element)
                    if phantom or not elements:  # never runs: only its rows are wanted
                        sub_inputs = {k: Unknown("the step never runs") for k in sub_inputs}
                    o, s = self.walk(emb, flat + "/", sub_inputs, sub, el_scope, inner_replicated,
                                     width_dynamic, frozenset(parents),
                                     phantom=phantom or not elements)
                    outs.append(o)
                    sinks |= s
                self.producers[flat] = frozenset(sinks) if sinks else frozenset(parents)
                per_element = outs if elements else []
            else:
                levels = (Level.of(step.tool, inherited=False, uri=step.id),
                          Level.of(emb.tool, inherited=False, uri=emb.tool["id"])) + enclosing
                acc = self.register(flat, levels, self._order(parents), inner_replicated)
                acc.width_dynamic = acc.width_dynamic or width_dynamic
                if phantom or not elements:
                    acc.template = self.resources(acc, emb, self._connected(step, io), where, note=False)
                for element, el_scope in zip(elements, scopes, strict=True):
                    if not phantom:
                        self.add_instance(acc, emb, self._connected(step, element), el_scope, where)
                self.producers[flat] = frozenset({flat})
                unknown = Unknown(f"it depends on the output of step '{flat}'")
                per_element = [{shortname(_out_id(o)): unknown for o in step.tool["out"]}
                               for _ in elements]
            for out in step.tool["out"]:
                oid = _out_id(out)
                name = shortname(oid)
                if not scatter:
                    values[oid] = per_element[0].get(name, Unknown(f"output '{name}' of step '{flat}'")) \
                        if per_element else Unknown(f"it depends on the output of step '{flat}'")
                elif shape is None:  # dynamic width: the output's length is unknown too
                    values[oid] = Unknown(f"it depends on the output of step '{flat}'")
                else:
                    values[oid] = shaped([e.get(name) for e in per_element], shape)
        outputs: dict[str, Any] = {}
        for out in wf.tool["outputs"]:
            srcs = aslist(out.get("outputSource", []))
            outputs[shortname(out["id"])] = self._merge(out, [source_value(s) for s in srcs],
                                                        f"{_doc(wf.tool['id'])} (output {shortname(out['id'])})")
        sinks_all: set[str] = set()
        for step in wf.steps:
            if step.id not in consumed:
                sinks_all |= self.producers.get(prefix + shortname(step.id), frozenset())
        return outputs, frozenset(sinks_all)

    def _topological(self, steps: Sequence[Any], owner: Mapping[str, Any]) -> list[Any]:
        """Steps in dependency order; among ready steps, the one written first."""
        deps: dict[str, set[str]] = {s.id: set() for s in steps}
        children: dict[str, set[str]] = {s.id: set() for s in steps}
        for s in steps:
            for inp in s.tool["inputs"]:
                for src in aslist(inp.get("source", [])):
                    if src in owner and owner[src].id != s.id:
                        deps[s.id].add(owner[src].id)
                        children[owner[src].id].add(s.id)
        by_id = {s.id: s for s in steps}
        key = {s.id: (_line(s.tool), k) for k, s in enumerate(steps)}
        ready = [(key[sid], sid) for sid, d in deps.items() if not d]
        heapq.heapify(ready)
        order = []
        while ready:
            _, sid = heapq.heappop(ready)
            order.append(by_id[sid])
            for child in children[sid]:
                deps[child].discard(sid)
                if not deps[child]:
                    heapq.heappush(ready, (key[child], child))
        if len(order) != len(steps):
            stuck = sorted(shortname(sid) for sid, d in deps.items() if d)
            raise WorkflowError(f"steps form a cycle: {', '.join(stuck)}",
                                source=_doc(steps[0].id), field="steps")
        return order

    # --- step inputs ---------------------------------------------------------------------------

    def _merge(self, inp: Mapping[str, Any], vals: list[Any], where: str) -> Any:
        method = inp.get("linkMerge") or ("merge_nested" if len(vals) > 1 else None)
        value = link_merge(vals, str(method)) if method else (vals[0] if vals else None)
        if "pickValue" in inp:
            try:
                value = pick_value(value, str(inp["pickValue"]))
            except ValueError as exc:
                raise WorkflowError(str(exc), source=where,
                                    field=f"{shortname(inp['id'])}.pickValue") from None
        return value

    def _step_inputs(self, step: Any, source_value: Callable[[str], Any], where: str) -> dict[str, Any]:
        io: dict[str, Any] = {}
        for inp in step.tool["inputs"]:
            srcs = aslist(inp.get("source", []))
            value = self._merge(inp, [source_value(s) for s in srcs], where)
            if value is None and "default" in inp:
                value = copy.deepcopy(inp["default"])
            io[inp["id"]] = value
        return io

    @staticmethod
    def _connected(step: Any, element: Mapping[str, Any]) -> dict[str, Any]:
        """The step's input object as the process it runs sees it (short names)."""
        unused = {inp["id"] for inp in step.tool["inputs"] if inp.get("not_connected")}
        return {shortname(k): v for k, v in element.items() if k not in unused}

    def _value_from(self, wf: Process, step: Any, element: dict[str, Any], where: str) -> dict[str, Any]:
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

    # --- steps ---------------------------------------------------------------------------------

    def register(self, flat: str, levels: tuple[Level, ...], parents: tuple[str, ...],
                 replicated: bool) -> StepAccumulator:
        acc = self.steps.get(flat)
        if acc is not None:
            return acc
        resolved = resolve_annotations(levels, step_label=flat)
        if resolved.preempt is not None:
            preempt, source = resolved.preempt, str(resolved.preempt_source)
        elif self.infer_preempt and replicated:
            preempt, source = PREEMPTIBLE, SOURCE_INFERRED
        else:
            preempt, source = RELIABLE, SOURCE_DEFAULT
        acc = StepAccumulator(step_id=flat, preempt=preempt, preempt_source=source,
                              instance_type=resolved.instance_type, parents=parents,
                              replicated=replicated, resolved=resolved)
        self.steps[flat] = acc
        return acc

    def add_instance(self, acc: StepAccumulator, tool: Process, job: Mapping[str, Any], scope: Scope,
                     where: str) -> None:
        vcpus, vsrc, ram, rsrc = self.resources(acc, tool, job, where, note=True)
        acc.instances.append(StepInstance(scope, vcpus, ram))
        acc.vcpus_sources.append(vsrc)
        acc.ram_sources.append(rsrc)

    def resources(self, acc: StepAccumulator, tool: Process, job: Mapping[str, Any], where: str, *,
                  note: bool) -> tuple[int, str, int, str]:
        r = acc.resolved
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
            if blocker is None and not note:
                blocker = Unknown("the step does not run")
            if blocker is None:
                evaluated = self._evaluate(tool, job, rr, where)
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
                    if note:
                        reason = blocker.reason if blocker else NO_JOB_ORDER
                        unit = " core" if kind == "cores" else " MiB"
                        self.note(f"Step '{acc.step_id}': {label} `{_brief(raw)}` is known only at run time "
                                  f"({reason}); assumed the CWL default of {default}{unit}.")
                    results[kind] = (default, SOURCE_DYNAMIC)
                    continue
                raw = evaluated.get(f"{kind}Min")
            results[kind] = (_whole(raw, where=where, field=label), SOURCE_RESOURCE_REQUIREMENT)
        vcpus, vsrc = (r.vcpus, str(r.vcpus_source)) if r.vcpus is not None else results["cores"]
        ram, rsrc = (r.ram_mib, str(r.ram_source)) if r.ram_mib is not None else results["ram"]
        return vcpus, vsrc, ram, rsrc

    def _evaluate(self, tool: Process, job: Mapping[str, Any], rr: Mapping[str, Any],
                  where: str) -> dict[str, Any]:
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
