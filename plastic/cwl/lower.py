"""Lower `plastic:Plasticity` to what cwltool and Toil understand, and write the policy table.

Toil ignores the plastic hint: it reads resources from `ResourceRequirement`,
preemptibility only from the hint `arv:UsePreemptible`, and names each job
(`unitName`) with dotted parts ending in the short name of the tool's id.  So
`lower_workflow` writes into an output directory

* `packed.cwl`: one self-contained JSON document (cwltool's packing, then
  rewritten) in which every step that runs a process other than a workflow -
  at any depth, through subworkflows and scatters - runs its **own** copy of
  that process, with an explicit, dot-free id derived from the step's path
  (`sort` -> `plastic_sort`, `per_sample/sort` -> `plastic_per_sample_sort`;
  characters outside [A-Za-z0-9_-] become `_`; a clash gets `_2`, `_3`...).
  Subworkflows are copied per calling step as well (`plastic_per_sample`), so
  a subworkflow called from two steps yields distinct tool ids.  Toil's
  `unitName` then ends with that id for every job, scatter elements included.
* `policy.json`: `{"version": "plastic.policy/v1", "workflow": <absolute path of
  the original>, "tools": {<tool id>: {preempt, instance_type, step, vcpus,
  ram_mib}}}`, for `toil-cwl-runner --batchSystem plastic --plasticPolicy`.

Values are those of the plan: every step is resolved by `plastic.cwl.loader.load_cwl`
(step hint over tool hint over workflow hint; `arv:UsePreemptible` for
preempt; preempt inferred for steps in a scatter unless `infer_preempt=False`,
as `plastic plan --no-infer-preempt`).  `step` in the policy is the loader's
flattened step id (`per_sample/sort`), the same id `plastic inspect` shows
and the plan's task ids start with.

Decisions:

* A tool copy whose step has `vcpus` and/or `vram` from plastic gets one
  `ResourceRequirement` under its own `requirements` - the most specific place
  there is, so it beats any other ResourceRequirement (a requirement beats every
  hint, the process's own beats the step's and the workflow's).  Its other
  fields (tmpdir/outdir, and cores or RAM when plastic sets only one of them)
  are the ResourceRequirement cwltool resolved for the step before lowering,
  expressions kept as they are (with whatever InlineJavascriptRequirement
  applied, which stays where it was).  Plastic's value is written as `coresMin`/
  `ramMin` and the matching `coresMax`/`ramMax` is dropped (cwltool then takes
  Max = Min, exactly the planned amount).  Any ResourceRequirement left among
  the copy's own hints is dropped, being dead.
* A tool without plastic vcpus/vram keeps its ResourceRequirement untouched, except
  that a tool without any RAM request gets the plan's default as `ramMin` when
  packing changes the default cwltool would give it (a v1.0 tool packed into a
  v1.2 document: 1024 MiB, not 256).
* Every tool copy gets `arv:UsePreemptible {usePreemptible: <bool>}` among its
  own hints (true for preempt true or N >= 1, false for false/0, including the
  plan's defaults), replacing any of its own; its own hint beats step and
  workflow hints in cwltool, so Toil's `preemptible` is the plan's.
* Every class of a requirement or hint that names an http(s) IRI outside CWL
  (`http://arvados.org/cwl#UsePreemptible` always) is declared in the
  document's `$namespaces` as a term standing for itself
  (`"http://arvados.org/cwl#UsePreemptible": "http://arvados.org/cwl#UsePreemptible"`).
  schema-salad (in cwltool and so in Toil) otherwise checks such a class link
  with an HTTP HEAD request (`Loader.validate_link` -> `DefaultFetcher.check_exists`),
  never remembers a failure, and re-resolves the whole packed document for every
  step it loads: steps x occurrences requests, ~10^4 for 100 steps, minutes to
  hours without a network.  A link that is a term of the document's vocabulary
  is not checked; expanding `arv:UsePreemptible` still gives the full IRI,
  which is what Toil looks up.
* `plastic:Plasticity` is removed everywhere (workflows, steps, tools): plain
  cwltool and Toil warn about it as a hint and reject it under `requirements`;
  the policy carries what they cannot (preempt N, instanceType).  The
  `plastic` namespace declaration stays (harmless).
* Policy `vcpus`/`ram_mib` are the plan's values, `null` when the amount is an
  expression evaluated per job at run time (then the batch system learns it
  from Toil's `cores`/`memory`).
* ids that `$import` left on requirement/hint entries are dropped (copies would
  otherwise repeat them).

Seen from the batch system (Toil 9.6, `toil-cwl-runner --batchSystem ...`):
a tool's job is a `CWLJob` whose `unitName` ends in `.<tool id>`
(`main.0.plastic_sort` for element 0 of scatter step `sort`,
`plastic_per_sample.sort.plastic_per_sample_sort` inside a subworkflow).  A
tool with resource expressions first gets a `CWLJobWrapper` with Toil's
default resources and a `unitName` ending in `.<tool id>._wrapper`; helpers
(CWLWorkflow, CWLGather, ResolveIndirect) carry other names.  Toil chains a
successor that fits into its predecessor's worker without issuing it, so not
every tool id is necessarily seen (`--disableChaining true` issues every job).

What each tool copy gets (its id, its ResourceRequirement, the policy's values)
is worked out in plastic.cwl.lower_plan; this module rewrites the packed document.
Packing, validation and the atomic writes are in plastic.cwl.lower_io: the
lowered document is validated with cwltool before either file takes its final
name, and a failure leaves the output directory as it was.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from plastic.core.errors import InputError, WorkflowError
from plastic.core.planning.annotations import ARVADOS_USE_PREEMPTIBLE, PLASTICITY_CLASS
from plastic.cwl import document_file
from plastic.cwl.lower_io import LOWERED_NAME, POLICY_NAME
from plastic.cwl.lower_plan import LoweredStep, ToolPlan, plan_tools, processes_by_step, tool_id_for, unique_name

POLICY_VERSION = "plastic.policy/v1"
ARVADOS_NAMESPACE = "http://arvados.org/cwl#"

_PROCESS_CLASSES = ("Workflow", "CommandLineTool", "ExpressionTool", "Operation")


@dataclass(frozen=True)
class Lowered:
    source: str  # the original workflow (absolute path)
    workflow_path: str  # the lowered document: out_dir/packed.cwl (absolute)
    policy_path: str  # out_dir/policy.json (absolute)
    policy: dict[str, Any]
    steps: tuple[LoweredStep, ...]

    def by_step(self) -> dict[str, LoweredStep]:
        return {s.step: s for s in self.steps}

    def by_tool_id(self) -> dict[str, LoweredStep]:
        return {s.tool_id: s for s in self.steps}


# --- entry -------------------------------------------------------------------------------------


def lower_workflow(workflow_path: str, out_dir: str, *, job_path: str | None = None,
                   infer_preempt: bool = True) -> Lowered:
    """Write `out_dir/packed.cwl` and `out_dir/policy.json` for WORKFLOW (see the module doc).

    `job_path`, when given, is validated against the workflow (as `plastic plan`
    does); the lowered workflow runs with the same job order, left where it is.
    Raises WorkflowError / AnnotationError / InputError, one line each.
    """
    from plastic.cwl.glue import load_process, quiet_cwltool
    from plastic.cwl.loader import load_cwl
    from plastic.cwl.lower_io import commit, pack, to_json_text

    out_dir = os.path.abspath(out_dir)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise InputError("exists and is not a directory", source=out_dir, field="--outdir")
    targets = (os.path.join(out_dir, LOWERED_NAME), os.path.join(out_dir, POLICY_NAME))
    with quiet_cwltool():
        wf = load_cwl(workflow_path, job_path, infer_preempt=infer_preempt)
        real_targets = {os.path.realpath(t) for t in targets}
        for given, what in ((workflow_path, "workflow"), (job_path, "job order")):
            if given is not None and os.path.realpath(document_file(given)) in real_targets:
                raise InputError(f"the output would overwrite the {what}", source=given, field="--outdir")
        process = load_process(workflow_path)  # cached by cwltool: cheap after load_cwl
        packed = pack(workflow_path)
        version = str(packed.get("cwlVersion", ""))
        plans = plan_tools(wf.rows, processes_by_step(process), version, _taken_names(packed),
                           source=workflow_path)
        document = _Rewriter(packed, plans, workflow_path).document()
        text = to_json_text(document)
        steps = tuple(p.step for p in plans.values())
        source = os.path.abspath(document_file(workflow_path))
        policy = {"version": POLICY_VERSION, "workflow": source,
                  "tools": {s.tool_id: s.to_policy() for s in steps}}
        commit(out_dir, text, json.dumps(policy, indent=2) + "\n", workflow_path)
    return Lowered(source=source, workflow_path=targets[0], policy_path=targets[1],
                   policy=policy, steps=steps)


# --- rewriting the packed document ------------------------------------------------------------


def _taken_names(packed: Any) -> set[str]:
    """First parts of every fragment id in the packed document (tool ids must not clash with them)."""
    taken = {"main"}

    def visit(node: Any) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key in ("id", "name") and isinstance(value, str) and value.startswith("#"):
                    taken.add(value[1:].split("/", 1)[0])
                visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    visit(packed)
    return taken


def _rename(node: Any, old: str, new: str) -> Any:
    """Every reference to `old` or below it (`old/...`) now points at `new`."""
    if isinstance(node, str):
        if node == old:
            return new
        if node.startswith(old + "/"):
            return new + node[len(old):]
        return node
    if isinstance(node, Mapping):
        return {key: _rename(value, old, new) for key, value in node.items()}
    if isinstance(node, list):
        return [_rename(item, old, new) for item in node]
    return node


def _entries(obj: Mapping[str, Any], key: str) -> list[Any]:
    """`requirements`/`hints` as a list (the map form `{Class: {...}}` too)."""
    raw = obj.get(key)
    if raw is None:
        return []
    if isinstance(raw, Mapping):
        return [{"class": cls, **(body if isinstance(body, Mapping) else {})} for cls, body in raw.items()]
    return list(raw)


def _class_of(entry: Any, namespaces: Mapping[str, str]) -> str | None:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("class"), str):
        return None
    cls = entry["class"]
    prefix, sep, rest = cls.partition(":")
    if sep and prefix in namespaces and not rest.startswith("//"):
        return namespaces[prefix] + rest
    return cls


class _Rewriter:
    def __init__(self, packed: Mapping[str, Any], plans: Mapping[str, ToolPlan], source: str):
        self.packed = packed
        self.plans = plans
        self.source = source
        self.namespaces: dict[str, str] = dict(packed.get("$namespaces") or {})
        self.graph = {entry["id"]: entry for entry in packed.get("$graph", ())
                      if isinstance(entry, Mapping) and isinstance(entry.get("id"), str)}
        self.taken = _taken_names(packed) | {p.step.tool_id for p in plans.values()}
        self.out: list[dict[str, Any]] = []
        self.done: set[str] = set()
        if self.namespaces.get("arv", ARVADOS_NAMESPACE) == ARVADOS_NAMESPACE:
            self.namespaces["arv"] = ARVADOS_NAMESPACE
            self.arv_class = "arv:UsePreemptible"
        else:  # "arv" means something else here: the full name needs no prefix
            self.arv_class = ARVADOS_USE_PREEMPTIBLE

    def fail(self, message: str) -> WorkflowError:
        return WorkflowError(f"cannot lower: {message}", source=self.source, field="steps")

    def document(self) -> dict[str, Any]:
        main = self.graph.get("#main")
        if main is None:
            raise self.fail("no #main process in the packed document")
        doc: dict[str, Any] = {"cwlVersion": self.packed["cwlVersion"]}
        if main.get("class") == "Workflow":
            main = self._strip(copy.deepcopy(main))
            self._clean(main)
            self._workflow(main, "")
            body: dict[str, Any] = {"$graph": [main, *self.out]}
        else:  # a bare tool: one process, named like a step
            (flat, plan), = self.plans.items()
            body = self._copy(copy.deepcopy(main), "#main", plan.step.tool_id)
            self._tool(body, flat)
        missing = [flat for flat in self.plans if flat not in self.done]
        if missing:
            raise self.fail(f"step '{missing[0]}' not found in the packed document")
        self._declare_classes(body)
        doc["$namespaces"] = self.namespaces
        if self.packed.get("$schemas"):
            doc["$schemas"] = self.packed["$schemas"]
        doc.update(body)
        return doc

    def _declare_classes(self, body: Mapping[str, Any]) -> None:
        """Each http(s) class of a requirement or hint, as a term of `$namespaces` naming itself.

        schema-salad's link check (`Loader.validate_link`) leaves alone a link that
        is a key of the vocabulary, which `$namespaces` adds to; anything else that
        is not a CWL term or an id of the document costs a HEAD request per
        occurrence, repeated for every step cwltool loads from the packed document.
        """
        processes = body.get("$graph", [body])
        found: set[str] = set()
        for process in processes:
            for owner in (process, *(s for s in process.get("steps") or () if isinstance(s, Mapping))):
                for key in ("requirements", "hints"):
                    for entry in _entries(owner, key):
                        cls = _class_of(entry, self.namespaces)
                        if cls is not None and urlsplit(cls).scheme in ("http", "https"):
                            found.add(cls)
        for iri in sorted(found):
            self.namespaces.setdefault(iri, iri)

    @staticmethod
    def _strip(process: dict[str, Any]) -> dict[str, Any]:
        for key in ("cwlVersion", "$namespaces", "$schemas"):
            process.pop(key, None)
        return process

    def _copy(self, target: dict[str, Any], old: str, new: str) -> dict[str, Any]:
        target = self._strip(_rename(target, old, "#" + new))
        target["id"] = "#" + new
        return target

    def _set(self, obj: dict[str, Any], key: str, entries: list[Any]) -> None:
        if entries:
            obj[key] = entries
        else:
            obj.pop(key, None)

    def _clean(self, obj: dict[str, Any]) -> None:
        """Drop plastic:Plasticity, and the ids `$import` left, from a process's or step's entries."""
        for key in ("requirements", "hints"):
            if key not in obj:
                continue
            kept = []
            for entry in _entries(obj, key):
                if _class_of(entry, self.namespaces) == PLASTICITY_CLASS:
                    continue
                if isinstance(entry, Mapping) and "id" in entry:
                    entry = {k: v for k, v in entry.items() if k != "id"}
                kept.append(entry)
            self._set(obj, key, kept)

    def _workflow(self, wf: dict[str, Any], prefix: str) -> None:
        from cwltool.process import shortname

        steps = wf.get("steps")
        if not isinstance(steps, list):
            raise self.fail(f"workflow {wf.get('id')} has no list of steps")
        for step in steps:
            self._clean(step)
            flat = prefix + shortname(step["id"])
            run = step.get("run")
            if isinstance(run, str):
                if run not in self.graph:
                    raise self.fail(f"step '{flat}' runs '{run}', not in the packed document")
                target, old = copy.deepcopy(self.graph[run]), run
            elif isinstance(run, Mapping):
                target, old = dict(run), self._inline_id(run, step["id"])
            else:
                raise self.fail(f"step '{flat}' has no `run`")
            if target.get("class") == "Workflow":
                new = unique_name(tool_id_for(flat), self.taken)
            elif target.get("class") in _PROCESS_CLASSES:
                plan = self.plans.get(flat)
                if plan is None or flat in self.done:
                    raise self.fail(f"step '{flat}' was not resolved by the loader")
                new = plan.step.tool_id
            else:
                raise self.fail(f"step '{flat}' runs a {target.get('class')!r}")
            target = self._copy(target, old, new)
            step["run"] = "#" + new
            self.out.append(target)
            self._clean(target)
            if target["class"] == "Workflow":
                self._workflow(target, flat + "/")
            else:
                self._tool(target, flat)

    @staticmethod
    def _inline_id(run: Mapping[str, Any], step_id: str) -> str:
        """The id an inline process's own ids sit under: its id, else where its inputs/outputs say."""
        if isinstance(run.get("id"), str) and run["id"].startswith("#"):
            return run["id"]
        for key in ("inputs", "outputs"):
            for param in run.get(key) or ():
                pid = param.get("id") if isinstance(param, Mapping) else None
                if isinstance(pid, str) and pid.startswith("#") and "/" in pid:
                    return pid.rsplit("/", 1)[0]
        return step_id + "/run"

    def _tool(self, tool: dict[str, Any], flat: str) -> None:
        plan = self.plans[flat]
        self.done.add(flat)
        self._clean(tool)
        requirements = _entries(tool, "requirements")
        hints = [e for e in _entries(tool, "hints")
                 if _class_of(e, self.namespaces) != ARVADOS_USE_PREEMPTIBLE]
        if plan.resource is not None:
            requirements = [e for e in requirements if _class_of(e, self.namespaces) != "ResourceRequirement"]
            requirements.append(dict(plan.resource))
            hints = [e for e in hints if _class_of(e, self.namespaces) != "ResourceRequirement"]
        hints.append({"class": self.arv_class, "usePreemptible": plan.step.preempt.preemptible})
        self._set(tool, "requirements", requirements)
        self._set(tool, "hints", hints)


__all__ = ["LOWERED_NAME", "POLICY_NAME", "POLICY_VERSION", "Lowered", "LoweredStep", "lower_workflow",
           "tool_id_for"]
