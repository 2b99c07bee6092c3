"""What a walk of a CWL workflow yields (plastic.cwl.walk, read by plastic.cwl.loader): where each
resolved value came from, and one scheduled copy of a step."""

from __future__ import annotations

from dataclasses import dataclass

SOURCE_RESOURCE_REQUIREMENT = "ResourceRequirement"
SOURCE_DEFAULT = "default"
SOURCE_DYNAMIC = "dynamic"
SOURCE_INFERRED = "inferred"

NO_JOB_ORDER = "no job order was given"


@dataclass(frozen=True)
class StepInstance:
    """One scheduled copy of a step (one scatter element).

    `scope` lists, outermost first, the scattered steps (flattened ids) this
    copy belongs to and its element index in each.
    """

    scope: tuple[tuple[str, int], ...]
    vcpus: int
    ram_mib: int
