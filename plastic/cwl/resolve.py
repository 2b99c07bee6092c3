"""Which plasticity annotation applies to a step, and where each value came from.

A step sees a stack of *levels*, most specific first:

1. the step itself (`steps: x: hints/requirements`),
2. the process it runs (`run:`'s own `hints/requirements`),
3. for a step inside a subworkflow: the enclosing subworkflow step, then the
   subworkflow document, and so on outwards, ending with the top workflow.

Levels 1-2 are the step's *own* annotations (source "hint"); the others are
inherited (source "workflow hint").  At one level `requirements` beat `hints`.
Each field (vcpus, vram, preempt, instanceType) is taken from the most specific
level that sets it, so a workflow-wide `preempt: true` combines with a tool's
own `vcpus: 4`.  `arv:UsePreemptible` counts for `preempt` at its level, after
`plastic:Plasticity` of the same level.

Every annotation on every level is validated, even when a more specific one
overrides it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plastic.core.model import Preempt
from plastic.core.planning.annotations import (
    ARVADOS_USE_PREEMPTIBLE,
    PLASTICITY_CLASS,
    PlasticityHint,
    parse_plasticity,
    parse_use_preemptible,
)
from plastic.cwl.glue import display_path

SOURCE_HINT = "hint"
SOURCE_WORKFLOW_HINT = "workflow hint"
SOURCE_USE_PREEMPTIBLE = "UsePreemptible"
_IDENTIFIERS = ("id",)
_CLASSES = (PLASTICITY_CLASS, ARVADOS_USE_PREEMPTIBLE)


@dataclass(frozen=True)
class Level:
    """The annotations of one level (a step, a process) and where they live."""

    entries: tuple[Mapping[str, Any], ...]  # requirements first, then hints
    inherited: bool
    uri: str  # the document the level lives in

    @staticmethod
    def of(obj: Mapping[str, Any], *, inherited: bool, uri: str) -> Level:
        entries: list[Mapping[str, Any]] = []
        for key in ("requirements", "hints"):
            for entry in obj.get(key) or ():
                if isinstance(entry, Mapping) and entry.get("class") in _CLASSES:
                    entries.append(entry)
        return Level(tuple(entries), inherited, uri)


@dataclass(frozen=True)
class Resolved:
    vcpus: int | None = None
    vcpus_source: str | None = None
    ram_mib: int | None = None
    ram_source: str | None = None
    preempt: Preempt | None = None
    preempt_source: str | None = None
    instance_type: str | None = None


def _where(entry: Mapping[str, Any], uri: str, step_label: str | None) -> str:
    filename = uri
    line = None
    lc = getattr(entry, "lc", None)
    if lc is not None:
        filename = getattr(lc, "filename", None) or uri
        line = getattr(lc, "line", None)
    where = display_path(filename)
    if isinstance(line, int) and line >= 0:
        where = f"{where}:{line + 1}"
    if step_label:
        where = f"{where} (step {step_label})"
    return where


def resolve_annotations(levels: Sequence[Level], *, step_label: str | None) -> Resolved:
    """Merge the levels field by field; raise AnnotationError for any invalid annotation."""
    vcpus = ram = itype = None
    vcpus_src = ram_src = None
    preempt: Preempt | None = None
    preempt_src = None
    for level in levels:
        source = SOURCE_WORKFLOW_HINT if level.inherited else SOURCE_HINT
        label = None if level.inherited else step_label
        # within a level, plastic:Plasticity beats arv:UsePreemptible for preempt
        plastic: list[PlasticityHint] = []
        arv: list[Preempt] = []
        for entry in level.entries:
            where = _where(entry, level.uri, label)
            # as cwltool does for hints, ignore the identifier the loader gives an $import-ed entry
            body = {k: v for k, v in entry.items() if k not in _IDENTIFIERS}
            if entry.get("class") == PLASTICITY_CLASS:
                plastic.append(parse_plasticity(body, source=where))
            else:
                arv.append(parse_use_preemptible(body, source=where))
        for hint in plastic:
            if vcpus is None and hint.vcpus is not None:
                vcpus, vcpus_src = hint.vcpus, source
            if ram is None and hint.ram_mib is not None:
                ram, ram_src = hint.ram_mib, source
            if preempt is None and hint.preempt is not None:
                preempt, preempt_src = hint.preempt, source
            if itype is None and hint.instance_type is not None:
                itype = hint.instance_type
        if preempt is None and arv:
            preempt, preempt_src = arv[0], SOURCE_USE_PREEMPTIBLE
    return Resolved(vcpus, vcpus_src, ram, ram_src, preempt, preempt_src, itype)
