"""Paths and small helpers for the CWL tests."""

from __future__ import annotations

from pathlib import Path

from plastic.cwl.loader import CwlWorkflow, StepRow

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
EXAMPLES = ROOT / "cwl-examples"
PLASTIC = ROOT / ".venv" / "bin" / "plastic"
CWLTOOL = ROOT / ".venv" / "bin" / "cwltool"


def rows(wf: CwlWorkflow) -> dict[str, StepRow]:
    return {r.step_id: r for r in wf.rows}


def example(name: str) -> tuple[str, str]:
    """(workflow, job order) of an example in cwl-examples/."""
    return str(EXAMPLES / name / f"{name}.cwl"), str(EXAMPLES / name / "job.yml")


def data(name: str) -> str:
    return str(DATA / name)
