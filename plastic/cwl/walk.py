"""Walk cwltool's loaded Process objects: flatten subworkflows, expand scatters,
evaluate what can be evaluated before run time, and resolve every step.

Used by plastic.cwl.loader (it yields plastic.cwl.steps values); imports cwltool, so it is loaded lazily.
A step's input object is worked out in plastic.cwl.step_inputs, the resources of each copy of a step in
plastic.cwl.step_resources.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cwltool.process import Process, shortname
from cwltool.utils import aslist

from plastic.core.errors import WorkflowError
from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt
from plastic.cwl.glue import display_path
from plastic.cwl.resolve import Level, Resolved, resolve_annotations
from plastic.cwl.step_inputs import connected, merge_sources, step_inputs, value_from
from plastic.cwl.step_resources import step_resources
from plastic.cwl.steps import NO_JOB_ORDER, SOURCE_DEFAULT, SOURCE_INFERRED, StepInstance
from plastic.cwl.values import Unknown, scatter_elements, shaped

log = logging.getLogger(__name__)

Scope = tuple[tuple[str, int], ...]


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


@dataclass
class _Frame:
    """One (sub)workflow being walked: where it sits, and what its steps give as they are walked."""

    wf: Process
    prefix: str  # the flattened id of the step that calls it and "/" ("" at the top)
    inputs: Mapping[str, Any]  # its input object (short names)
    enclosing: tuple[Level, ...]  # the annotation levels around it, innermost first
    scope: Scope
    replicated: bool  # inside a scatter
    dynamic: bool  # inside a scatter whose width is known only at run time
    outer_parents: frozenset[str]  # the steps its steps wait for when they read none of their siblings
    phantom: bool  # never runs: only its rows are wanted
    wf_inputs: dict[str, str] = field(init=False)  # input id -> short name
    owner: dict[str, Any] = field(init=False)  # output id -> the step giving it
    values: dict[str, Any] = field(default_factory=dict)  # output id of a step walked -> its value
    consumed: set[str] = field(default_factory=set)  # ids of the steps whose outputs a sibling reads

    def __post_init__(self) -> None:
        self.wf_inputs = {inp["id"]: shortname(inp["id"]) for inp in self.wf.tool["inputs"]}
        self.owner = {}
        for step in self.wf.steps:
            for out in step.tool["out"]:
                self.owner[_out_id(out)] = step

    def source_value(self, src: str) -> Any:
        if src in self.wf_inputs:
            return self.inputs.get(self.wf_inputs[src])
        if src in self.values:
            return self.values[src]
        return Unknown(f"source '{shortname(src)}' is not known")


@dataclass(frozen=True)
class _StepCall:
    """One step of a walked (sub)workflow, called: its input object and the elements it runs on."""

    step: Any
    flat: str  # the flattened step id
    where: str
    io: dict[str, Any]  # its input object (full input ids), before any scatter
    elements: list[dict[str, Any]]  # one per copy (scatter element); none: it never runs
    scopes: list[Scope]  # of each element
    scattered: bool
    shape: list[int] | None  # of the scatter's outputs; None: unknown (or no scatter)
    width_dynamic: bool  # the number of elements is known only at run time
    replicated: bool  # scattered, or inside a scatter
    parents: frozenset[str]  # the steps it waits for


def _output_values(call: _StepCall, per_element: list[dict[str, Any]]) -> dict[str, Any]:
    """Output id -> value of a walked step, from the output values of each of its elements."""
    values: dict[str, Any] = {}
    for out in call.step.tool["out"]:
        oid = _out_id(out)
        name = shortname(oid)
        if not call.scattered:
            values[oid] = per_element[0].get(name, Unknown(f"output '{name}' of step '{call.flat}'")) \
                if per_element else Unknown(f"it depends on the output of step '{call.flat}'")
        elif call.shape is None:  # dynamic width: the output's length is unknown too
            values[oid] = Unknown(f"it depends on the output of step '{call.flat}'")
        else:
            values[oid] = shaped([e.get(name) for e in per_element], call.shape)
    return values


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

    def _order(self, ids: set[str] | frozenset[str]) -> tuple[str, ...]:
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
        frame = _Frame(wf, prefix, inputs, enclosing, scope, replicated, dynamic, outer_parents, phantom)
        for step in self._topological(wf.steps, frame.owner):
            call = self._call(frame, step)
            if step.embedded_tool.tool["class"] == "Workflow":
                per_element = self._walk_subworkflow(frame, call)
            else:
                per_element = self._walk_tool(frame, call)
            frame.values.update(_output_values(call, per_element))
        outputs: dict[str, Any] = {}
        for out in wf.tool["outputs"]:
            srcs = aslist(out.get("outputSource", []))
            outputs[shortname(out["id"])] = merge_sources(out, [frame.source_value(s) for s in srcs],
                                                          f"{_doc(wf.tool['id'])} (output {shortname(out['id'])})")
        sinks: set[str] = set()
        for step in wf.steps:
            if step.id not in frame.consumed:
                sinks |= self.producers.get(prefix + shortname(step.id), frozenset())
        return outputs, frozenset(sinks)

    def _call(self, frame: _Frame, step: Any) -> _StepCall:
        """The step called in this frame: what it waits for, its input object and its elements."""
        flat = frame.prefix + shortname(step.id)
        where = f"{_doc(step.id)} (step {flat})"
        parents = self._parents(frame, step)
        io = step_inputs(step, frame.source_value, where)
        scatter = [str(s) for s in aslist(step.tool.get("scatter", []))]
        elements, shape, width_dynamic = self._elements(frame, step, flat, io, scatter, where)
        if "when" in step.tool and not frame.phantom:
            self.note(f"Step '{flat}' is conditional (`when`); planned as if it runs.")
        if not frame.phantom:
            elements = [value_from(frame.wf, step, e, where) for e in elements]
        scopes = [frame.scope + ((flat, i),) if scatter else frame.scope for i in range(len(elements))]
        return _StepCall(step=step, flat=flat, where=where, io=io, elements=elements, scopes=scopes,
                     scattered=bool(scatter), shape=shape, width_dynamic=width_dynamic,
                     replicated=frame.replicated or bool(scatter), parents=parents)

    def _parents(self, frame: _Frame, step: Any) -> frozenset[str]:
        """The steps (flattened ids) a step waits for; marks the siblings it reads as consumed."""
        parents: set[str] = set()
        intra = False
        for inp in step.tool["inputs"]:
            for src in aslist(inp.get("source", [])):
                if src in frame.owner:
                    intra = True
                    frame.consumed.add(frame.owner[src].id)
                    parents |= self.producers.get(frame.prefix + shortname(frame.owner[src].id), frozenset())
        if not intra:
            parents |= frame.outer_parents
        return frozenset(parents)

    def _elements(self, frame: _Frame, step: Any, flat: str, io: dict[str, Any], scatter: list[str],
                  where: str) -> tuple[list[dict[str, Any]], list[int] | None, bool]:
        """The input objects a step runs on (one per scatter element), the scatter's shape when known,
        and whether their number is known only at run time."""
        if not scatter:
            return [io], None, frame.dynamic
        method = str(step.tool.get("scatterMethod") or "dotproduct")
        try:
            result = scatter_elements(io, scatter, method)
        except ValueError as exc:
            raise WorkflowError(str(exc), source=where, field="scatter") from None
        if not isinstance(result, Unknown):
            elements, shape = result
            return elements, shape, frame.dynamic
        if not frame.phantom:
            self.note(f"Step '{flat}': the scatter width is known only at run time "
                      f"({result.reason}); assumed {self.width_assumption}: an elastic `plastic run` "
                      f"grows the cluster for the width it finds.")
        element = dict(io)
        for sid in scatter:
            element[sid] = Unknown(result.reason)
        return [dict(element) for _ in range(self.width_assumption)], None, True

    def _walk_subworkflow(self, frame: _Frame, call: _StepCall) -> list[dict[str, Any]]:
        """Walk the subworkflow a step runs, once per element; return the outputs of each element."""
        step, flat = call.step, call.flat
        emb = step.embedded_tool
        sub = (Level.of(step.tool, inherited=True, uri=step.id),
               Level.of(emb.tool, inherited=True, uri=emb.tool["id"])) + frame.enclosing
        never = frame.phantom or not call.elements  # never runs: only its rows are wanted
        outs: list[dict[str, Any]] = []
        sinks: set[str] = set()
        runs = list(zip(call.elements, call.scopes, strict=True)) or [(dict(call.io), frame.scope + ((flat, 0),))]
        for element, el_scope in runs:
            sub_inputs = connected(step, element)
            if never:
                sub_inputs = {k: Unknown("the step never runs") for k in sub_inputs}
            o, s = self.walk(emb, flat + "/", sub_inputs, sub, el_scope, call.replicated,
                             call.width_dynamic, call.parents, phantom=never)
            outs.append(o)
            sinks |= s
        self.producers[flat] = frozenset(sinks) if sinks else call.parents
        return outs if call.elements else []

    def _walk_tool(self, frame: _Frame, call: _StepCall) -> list[dict[str, Any]]:
        """Register a step that runs a tool and each copy of it; its outputs are known at run time only."""
        step, flat = call.step, call.flat
        emb = step.embedded_tool
        levels = (Level.of(step.tool, inherited=False, uri=step.id),
                  Level.of(emb.tool, inherited=False, uri=emb.tool["id"])) + frame.enclosing
        acc = self.register(flat, levels, self._order(call.parents), call.replicated)
        acc.width_dynamic = acc.width_dynamic or call.width_dynamic
        if frame.phantom or not call.elements:
            acc.template = step_resources(acc.resolved, acc.step_id, emb, connected(step, call.io), call.where,
                                          note=None)
        for element, el_scope in zip(call.elements, call.scopes, strict=True):
            if not frame.phantom:
                self.add_instance(acc, emb, connected(step, element), el_scope, call.where)
        self.producers[flat] = frozenset({flat})
        unknown = Unknown(f"it depends on the output of step '{flat}'")
        return [{shortname(_out_id(o)): unknown for o in step.tool["out"]} for _ in call.elements]

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
        vcpus, vsrc, ram, rsrc = step_resources(acc.resolved, acc.step_id, tool, job, where, note=self.note)
        acc.instances.append(StepInstance(scope, vcpus, ram))
        acc.vcpus_sources.append(vsrc)
        acc.ram_sources.append(rsrc)
