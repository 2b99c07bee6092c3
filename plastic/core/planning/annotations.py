"""The `plastic:Plasticity` annotation: validation of its fields.

Pure: takes the mapping the CWL loader found and returns a typed hint, or
raises AnnotationError naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plastic.core.errors import AnnotationError
from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt

PLASTIC_NAMESPACE = "https://w3id.org/plastic/cwl#"
PLASTICITY_CLASS = PLASTIC_NAMESPACE + "Plasticity"
ARVADOS_USE_PREEMPTIBLE = "http://arvados.org/cwl#UsePreemptible"

_FIELDS = ("vcpus", "vram", "preempt", "instanceType")


@dataclass(frozen=True, slots=True)
class PlasticityHint:
    vcpus: int | None = None
    ram_mib: int | None = None
    preempt: Preempt | None = None
    instance_type: str | None = None


def _short(key: str) -> str:
    """`https://w3id.org/plastic/cwl#vcpus` or `plastic:vcpus` -> `vcpus`."""
    for prefix in (PLASTIC_NAMESPACE, "plastic:"):
        if key.startswith(prefix):
            return key[len(prefix):]
    if "#" in key:
        return key.rsplit("#", 1)[1]
    return key


def positive_int(value: Any, *, source: str | None, field: str) -> int:
    """An integer >= 1 (booleans and floats with a fraction are refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AnnotationError(f"must be an integer >= 1, got {value!r}", source=source, field=field)
    if isinstance(value, float):
        if not value.is_integer():
            raise AnnotationError(f"must be an integer >= 1, got {value!r}", source=source, field=field)
        value = int(value)
    if value < 1:
        raise AnnotationError(f"must be an integer >= 1, got {value!r}", source=source, field=field)
    return value


def parse_preempt(value: Any, *, source: str | None, field: str = "preempt") -> Preempt:
    """`true` -> unlimited, `false` or `0` -> reliable only, N >= 1 -> escalate after N."""
    if value is True:
        return PREEMPTIBLE
    if value is False:
        return RELIABLE
    if isinstance(value, int):
        if value < 0:
            raise AnnotationError(
                f"must be true, false or an integer >= 0, got {value!r}", source=source, field=field
            )
        return Preempt(value)
    raise AnnotationError(
        f"must be true, false or an integer >= 0, got {value!r}", source=source, field=field
    )


def parse_plasticity(mapping: Mapping[str, Any], *, source: str | None = None) -> PlasticityHint:
    """Validate a `plastic:Plasticity` hint/requirement body."""
    if not isinstance(mapping, Mapping):
        raise AnnotationError(f"must be a mapping, got {type(mapping).__name__}", source=source,
                              field="plastic:Plasticity")
    values: dict[str, Any] = {}
    for raw_key, value in mapping.items():
        if raw_key == "class":
            continue
        key = _short(str(raw_key))
        if key not in _FIELDS:
            raise AnnotationError(
                f"unknown field (expected one of {', '.join(_FIELDS)})",
                source=source, field=f"plastic:Plasticity.{raw_key!r}" if not str(raw_key).isprintable()
                else f"plastic:Plasticity.{raw_key}",
            )
        values[key] = value
    vcpus = ram = preempt = itype = None
    if values.get("vcpus") is not None:
        vcpus = positive_int(values["vcpus"], source=source, field="plastic:Plasticity.vcpus")
    if values.get("vram") is not None:
        ram = positive_int(values["vram"], source=source, field="plastic:Plasticity.vram")
    if "preempt" in values and values["preempt"] is not None:
        preempt = parse_preempt(values["preempt"], source=source, field="plastic:Plasticity.preempt")
    if values.get("instanceType") is not None:
        itype = values["instanceType"]
        if not isinstance(itype, str) or not itype.strip():
            raise AnnotationError(
                f"must be an instance type name, got {itype!r}",
                source=source, field="plastic:Plasticity.instanceType",
            )
        itype = itype.strip()
    return PlasticityHint(vcpus=vcpus, ram_mib=ram, preempt=preempt, instance_type=itype)


def parse_use_preemptible(mapping: Mapping[str, Any], *, source: str | None = None) -> Preempt:
    """Arvados' `arv:UsePreemptible {usePreemptible: true|false}`."""
    value = None
    for raw_key, v in mapping.items():
        if _short(str(raw_key)) == "usePreemptible":
            value = v
    if not isinstance(value, bool):
        raise AnnotationError(
            f"must be true or false, got {value!r}", source=source, field="arv:UsePreemptible.usePreemptible"
        )
    return PREEMPTIBLE if value else RELIABLE
