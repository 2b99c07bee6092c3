"""Bad input: one WorkflowError/AnnotationError naming the file and the field; no traceback.

Every case is checked twice: in-process (exception type, source, field) and
through `plastic inspect` in a subprocess (exit 2, one line on stderr with the
file name and the field, no "Traceback").  The subprocesses run in parallel.
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from plastic.core.errors import AnnotationError, InputError, WorkflowError
from plastic.cwl.loader import load_cwl
from tests.cwl.helpers import PLASTIC, ROOT

HEAD = """cwlVersion: v1.2
class: CommandLineTool
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
  arv: "http://arvados.org/cwl#"
baseCommand: echo
"""
TOOL = HEAD + "inputs: []\noutputs: []\n"
FILE_TOOL = HEAD + "inputs:\n  f: File\noutputs: []\n"


def tool_hint(body: str, key: str = "hints") -> str:
    return TOOL + f"{key}:\n  plastic:Plasticity:\n" + "".join(f"    {line}\n" for line in body.splitlines())


def workflow(steps: str, requirements: str = "") -> str:
    return ("cwlVersion: v1.2\nclass: Workflow\n$namespaces:\n  plastic: \"https://w3id.org/plastic/cwl#\"\n"
            + requirements + "inputs:\n  xs: int[]\n  ys: int[]\noutputs: []\nsteps:\n" + steps)


@dataclass(frozen=True)
class Case:
    name: str
    files: dict[str, str]
    args: tuple[str, ...]  # workflow [job]
    field: str  # exc.field (and on the stderr line)
    kind: type[InputError] = WorkflowError
    mentions: tuple[str, ...] = field(default=())  # more text expected in the message line
    in_job: bool = False  # the job order is at fault, not the workflow


ECHO_STEP = "  s:\n    run: echo.cwl\n    in: {}\n    out: []\n"
CASES = [
    Case("missing-file", {}, ("nothere.cwl",), "file"),
    Case("yaml", {"w.cwl": "cwlVersion: v1.2\nclass: CommandLineTool\nbaseCommand: [echo\ninputs: []\n"},
         ("w.cwl",), "YAML syntax"),
    Case("empty", {"w.cwl": ""}, ("w.cwl",), "document"),
    Case("not-a-mapping", {"w.cwl": "just words\n"}, ("w.cwl",), "document"),
    Case("invalid-cwl", {"w.cwl": TOOL.replace("baseCommand", "baseComand")}, ("w.cwl",), "baseComand"),
    Case("unsupported-version", {"w.cwl": TOOL.replace("v1.2", "v1.7")}, ("w.cwl",), "cwlVersion"),
    Case("missing-run", {"w.cwl": workflow("  s:\n    run: nothere.cwl\n    in: {}\n    out: []\n")},
         ("w.cwl",), "run", mentions=("nothere.cwl",)),
    Case("missing-import", {"w.cwl": workflow("  s:\n    run: {$import: gone.cwl}\n    in: {}\n    out: []\n")},
         ("w.cwl",), "run", mentions=("gone.cwl",)),
    Case("vcpus-zero", {"w.cwl": tool_hint("vcpus: 0")}, ("w.cwl",), "plastic:Plasticity.vcpus", AnnotationError),
    Case("vcpus-negative", {"w.cwl": tool_hint("vcpus: -3")}, ("w.cwl",), "plastic:Plasticity.vcpus",
         AnnotationError),
    Case("vcpus-string", {"w.cwl": tool_hint("vcpus: four")}, ("w.cwl",), "plastic:Plasticity.vcpus",
         AnnotationError),
    Case("vram-zero", {"w.cwl": tool_hint("vram: 0")}, ("w.cwl",), "plastic:Plasticity.vram", AnnotationError),
    Case("vram-zero-requirement", {"w.cwl": tool_hint("vram: 0", key="requirements")}, ("w.cwl",),
         "plastic:Plasticity.vram", AnnotationError),
    Case("preempt-yes", {"w.cwl": tool_hint('preempt: "yes"')}, ("w.cwl",), "plastic:Plasticity.preempt",
         AnnotationError),
    Case("preempt-negative", {"w.cwl": tool_hint("preempt: -1")}, ("w.cwl",), "plastic:Plasticity.preempt",
         AnnotationError),
    Case("preempt-fraction", {"w.cwl": tool_hint("preempt: 1.5")}, ("w.cwl",), "plastic:Plasticity.preempt",
         AnnotationError),
    Case("unknown-field-hint", {"w.cwl": tool_hint("vcpu: 2")}, ("w.cwl",), "plastic:Plasticity.vcpu",
         AnnotationError),
    Case("unknown-field-requirement", {"w.cwl": tool_hint("gpus: 1", key="requirements")}, ("w.cwl",),
         "plastic:Plasticity.gpus", AnnotationError),
    Case("instance-type-not-string", {"w.cwl": tool_hint("instanceType: 5")}, ("w.cwl",),
         "plastic:Plasticity.instanceType", AnnotationError),
    Case("use-preemptible-not-bool",
         {"w.cwl": TOOL + "hints:\n  arv:UsePreemptible:\n    usePreemptible: maybe\n"}, ("w.cwl",),
         "arv:UsePreemptible.usePreemptible", AnnotationError),
    Case("bad-step-annotation",
         {"echo.cwl": TOOL,
          "w.cwl": workflow(ECHO_STEP + "    hints:\n      plastic:Plasticity: {vcpus: 0}\n")},
         ("w.cwl",), "plastic:Plasticity.vcpus", AnnotationError, mentions=("(step s)",)),
    Case("resource-requirement-not-a-number",
         {"w.cwl": TOOL + "requirements:\n  ResourceRequirement:\n    coresMin: lots\n"}, ("w.cwl",),
         "coresMin"),
    Case("job-unparsable", {"w.cwl": FILE_TOOL, "job.yml": "f: [unclosed\n"}, ("w.cwl", "job.yml"),
         "YAML syntax", in_job=True),
    Case("job-not-a-mapping", {"w.cwl": FILE_TOOL, "job.yml": "hello\n"}, ("w.cwl", "job.yml"), "job order",
         in_job=True),
    Case("job-missing", {"w.cwl": FILE_TOOL}, ("w.cwl", "nojob.yml"), "job order", in_job=True),
    Case("job-missing-required-input", {"w.cwl": FILE_TOOL, "job.yml": "{}\n"}, ("w.cwl", "job.yml"), "f",
         in_job=True),
    Case("job-wrong-type", {"w.cwl": FILE_TOOL, "job.yml": "f: 12\n"}, ("w.cwl", "job.yml"), "f",
         in_job=True),
    Case("job-input-file-missing", {"w.cwl": FILE_TOOL, "job.yml": "f: {class: File, path: gone.txt}\n"},
         ("w.cwl", "job.yml"), "f", mentions=("gone.txt",), in_job=True),
    Case("expression-fails",
         {"w.cwl": TOOL + "requirements:\n  InlineJavascriptRequirement: {}\n  ResourceRequirement:\n"
                          "    ramMin: $(inputs.nothere.size * 2)\n"}, ("w.cwl",),
         "ResourceRequirement.ramMin", mentions=("TypeError",)),
    Case("expression-not-a-number",
         {"w.cwl": HEAD + "inputs:\n  s: string\noutputs: []\nrequirements:\n  ResourceRequirement:\n"
                          "    ramMin: $(inputs.s)\n", "job.yml": "s: lots\n"}, ("w.cwl", "job.yml"),
         "ResourceRequirement.ramMin"),
    Case("value-from-fails",
         {"echo.cwl": HEAD + "inputs:\n  x: Any?\noutputs: []\n",
          "w.cwl": workflow("  s:\n    run: echo.cwl\n    in:\n      x:\n        source: xs\n"
                            "        valueFrom: $(self.nope.deeper)\n    out: []\n",
                            "requirements:\n  StepInputExpressionRequirement: {}\n"
                            "  InlineJavascriptRequirement: {}\n"),
          "job.yml": "xs: [1]\nys: [2]\n"}, ("w.cwl", "job.yml"), "in.x.valueFrom"),
    Case("dotproduct-lengths",
         {"echo.cwl": HEAD + "inputs:\n  a: int\n  b: int\noutputs: []\n",
          "w.cwl": workflow("  s:\n    run: echo.cwl\n    scatter: [a, b]\n    scatterMethod: dotproduct\n"
                            "    in: {a: xs, b: ys}\n    out: []\n",
                            "requirements:\n  ScatterFeatureRequirement: {}\n"),
          "job.yml": "xs: [1, 2, 3]\nys: [1, 2]\n"}, ("w.cwl", "job.yml"), "scatter"),
]


# Also run through `plastic inspect` in a subprocess (about a second each): one or more of
# every kind - file, YAML, schema, run:, each annotation field, job order, expressions, scatter.
CLI_CASES = [c for c in CASES if c.name in {
    "missing-file", "yaml", "invalid-cwl", "missing-run", "vram-zero-requirement", "preempt-yes",
    "unknown-field-requirement", "bad-step-annotation", "job-unparsable", "job-missing-required-input",
    "expression-fails", "value-from-fails", "dotproduct-lengths",
}]


@pytest.fixture(scope="module")
def case_dirs(tmp_path_factory) -> dict[str, Path]:
    dirs = {}
    for case in CASES:
        d = tmp_path_factory.mktemp(case.name)
        for name, text in case.files.items():
            (d / name).write_text(text)
        dirs[case.name] = d
    return dirs


@pytest.fixture(scope="module")
def cli_results(case_dirs) -> dict[str, subprocess.CompletedProcess[str]]:
    def run(case: Case) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(PLASTIC), "inspect", *case.args], cwd=case_dirs[case.name],
                              capture_output=True, text=True, timeout=120)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip((c.name for c in CLI_CASES), pool.map(run, CLI_CASES), strict=True))


def test_at_least_twelve_distinct_bad_inputs():
    assert len({c.name for c in CASES}) >= 12
    assert len({c.name for c in CLI_CASES}) >= 12


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_input_raises_one_typed_error(case, case_dirs, monkeypatch):
    monkeypatch.chdir(case_dirs[case.name])
    with pytest.raises(InputError) as info:
        load_cwl(*case.args)
    exc = info.value
    assert isinstance(exc, case.kind), f"{type(exc).__name__}: {exc}"
    assert isinstance(exc, WorkflowError | AnnotationError)
    assert exc.field == case.field, str(exc)
    bad_file = case.args[1] if case.in_job else case.args[0]
    assert exc.source is not None and exc.source.startswith(bad_file), str(exc)
    assert "\n" not in str(exc)
    for text in case.mentions:
        assert text in str(exc)


@pytest.mark.parametrize("case", CLI_CASES, ids=lambda c: c.name)
@pytest.mark.slow
def test_cli_prints_one_line_and_exits_2(case, cli_results):
    result = cli_results[case.name]
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    (line,) = lines
    assert line.startswith("plastic: ")
    assert any(Path(arg).name in line for arg in case.args), line
    assert case.field in line
    assert result.stdout == ""


def test_cli_bad_option_value_is_refused():
    result = subprocess.run([str(PLASTIC), "inspect", "--scatter-width", "0", "w.cwl"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
