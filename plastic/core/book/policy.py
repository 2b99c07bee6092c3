"""The per-tool policy table the Toil plugin reads (``--plasticPolicy``), and its lookup.

The CWL lowering step gives every step its own tool copy with a dot-free id and writes one
table entry per id::

    {"version": "plastic.policy/v1",
     "tools": {"plastic_sort": {"preempt": 2, "instance_type": "m5.large", "step": "main/sort"}}}

Toil names a CWLJob by a dotted ``unitName`` whose last component is that tool id
(``wf.cwl.sort.plastic_sort``, ``wf.cwl.0.plastic_sort`` for a scatter element), so the
plugin looks the last component up.  A job without an entry keeps what Toil says:
``preemptible`` True -> preemptible without limit, False -> reliable only.

Pure: `parse_policy_text` / `parse_policy` validate and raise PolicyError (an InputError)
naming the file and the field; `resolve` is the lookup.  Reading the file is the caller's job.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from plastic.core.errors import InputError
from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt

POLICY_VERSION = "plastic.policy/v1"
ENTRY_FIELDS = ("preempt", "instance_type", "step", "vcpus", "ram_mib")  # vcpus, ram_mib: informative


class PolicyError(InputError):
    """The policy file is not valid (source: the file, field: where in it)."""


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """One table entry; None fields leave the decision to Toil's job description."""

    preempt: Preempt | None = None
    instance_type: str | None = None
    step: str | None = None


@dataclass(frozen=True, slots=True)
class PolicyTable:
    tools: Mapping[str, ToolPolicy] = field(default_factory=dict)
    source: str | None = None


EMPTY = PolicyTable()


@dataclass(frozen=True, slots=True)
class ResolvedPolicy:
    """What the plugin hands the job book for one job."""

    preempt: Preempt
    instance_type: str | None
    tool: str | None  # the runtime-history key: the table key, else the whole unitName
    step: str | None


def tool_key(unit_name: str | None) -> str:
    """The last dot-separated component of a Toil unitName ("" for none)."""
    return (unit_name or "").rsplit(".", 1)[-1]


def resolve(unit_name: str | None, preemptible: bool, table: PolicyTable = EMPTY) -> ResolvedPolicy:
    """The table entry named by the unitName's last component wins; else Toil's ``preemptible``."""
    fallback = PREEMPTIBLE if preemptible else RELIABLE
    key = tool_key(unit_name)
    entry = table.tools.get(key) if key else None
    if entry is None:
        return ResolvedPolicy(fallback, None, unit_name or None, None)
    return ResolvedPolicy(entry.preempt if entry.preempt is not None else fallback,
                          entry.instance_type, key, entry.step)


# ------------------------------------------------------------------ parsing


def _preempt(value: Any, source: str, where: str) -> Preempt | None:
    if value is None:
        return None
    if value is True:
        return PREEMPTIBLE
    if value is False:
        return RELIABLE
    if isinstance(value, int) and value >= 0:
        return Preempt(value)
    raise PolicyError(f"must be true, false or an integer >= 0, got {value!r}", source=source, field=where)


def _optional_text(value: Any, source: str, where: str, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise PolicyError(f"must be {what} or null, got {value!r}", source=source, field=where)
    return value.strip()


def _entry(key: Any, body: Any, source: str) -> tuple[str, ToolPolicy]:
    where = f"tools.{key}"
    if not isinstance(key, str) or not key or "." in key:
        raise PolicyError(f"tool keys must be non-empty and dot-free, got {key!r}", source=source, field=where)
    if not isinstance(body, Mapping):
        raise PolicyError(f"must be an object, got {type(body).__name__}", source=source, field=where)
    unknown = sorted(str(k) for k in body if k not in ENTRY_FIELDS)
    if unknown:
        raise PolicyError(f"unknown field {unknown[0]!r} (expected {', '.join(ENTRY_FIELDS)})",
                          source=source, field=where)
    return key, ToolPolicy(
        preempt=_preempt(body.get("preempt"), source, f"{where}.preempt"),
        instance_type=_optional_text(body.get("instance_type"), source, f"{where}.instance_type",
                                     "an instance type name"),
        step=_optional_text(body.get("step"), source, f"{where}.step", "a step name"),
    )


def parse_policy(doc: Any, *, source: str) -> PolicyTable:
    """Validate a decoded policy document."""
    if not isinstance(doc, Mapping):
        raise PolicyError(f"must be a JSON object, got {type(doc).__name__}", source=source)
    if doc.get("version") != POLICY_VERSION:
        raise PolicyError(f"must be {POLICY_VERSION!r}, got {doc.get('version')!r}", source=source, field="version")
    unknown = sorted(str(k) for k in doc if k not in ("version", "workflow", "tools"))
    if unknown:
        raise PolicyError("unknown top-level field (expected version, workflow, tools)", source=source,
                          field=unknown[0])
    tools = doc.get("tools", {})
    if not isinstance(tools, Mapping):
        raise PolicyError(f"must be an object, got {type(tools).__name__}", source=source, field="tools")
    return PolicyTable(dict(_entry(k, v, source) for k, v in tools.items()), source)


def parse_policy_text(text: str, *, source: str) -> PolicyTable:
    """Decode and validate the policy file's text (JSON)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as error:
        raise PolicyError(f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
                          source=source) from None
    return parse_policy(doc, source=source)
