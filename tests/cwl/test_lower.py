"""`plastic lower`: plastic:Plasticity lowered to ResourceRequirement + arv:UsePreemptible, one tool copy
per step with a step-derived id, and the policy table keyed by that id.

cwltool runs (about 1.5 s each) are run two at a time; the Toil run is marked toil_e2e.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plastic.cli.lower import lower
from plastic.core.errors import AnnotationError, InputError, WorkflowError
from plastic.cwl.loader import CwlWorkflow, load_cwl
from plastic.cwl.lower import (
    LOWERED_NAME,
    POLICY_NAME,
    POLICY_VERSION,
    Lowered,
    lower_workflow,
)
from tests.clirun import assert_one_line_error
from tests.cwl.helpers import CWLTOOL, EXAMPLES, ROOT, data, example
from tests.cwl.netrecord import proxy_env, proxy_recorder

VENV_BIN = Path(sys.executable).parent
LOWER = Path(__file__).resolve().parent / "data" / "lower"
NAMES = ("scatter-gather", "nested-scatter", "dynamic-resources")
ARV = "arv:UsePreemptible"
SAFE_ID = re.compile(r"^[A-Za-z0-9_-]+$")


@pytest.fixture(scope="module")
def lowered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Lowered]:
    base = tmp_path_factory.mktemp("lowered")
    return {name: lower_workflow(example(name)[0], str(base / name), job_path=example(name)[1]) for name in NAMES}


@pytest.fixture(scope="module")
def plans() -> dict[str, CwlWorkflow]:
    return {name: load_cwl(*example(name)) for name in NAMES}


def graph(result: Lowered) -> dict[str, dict[str, Any]]:
    doc = json.loads(Path(result.workflow_path).read_text())
    return {entry["id"].lstrip("#"): entry for entry in doc["$graph"]}


def requirement(process: dict[str, Any], key: str, cls: str) -> dict[str, Any] | None:
    found = [e for e in process.get(key, []) if e["class"] == cls]
    assert len(found) <= 1, found
    return found[0] if found else None


def cwltool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CWLTOOL), "--quiet", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120, check=False)


# --- the policy and the lowered document --------------------------------------------------------


@pytest.mark.slow
def test_layout_and_api(lowered):
    r = lowered["nested-scatter"]
    out = Path(r.workflow_path).parent
    assert sorted(p.name for p in out.iterdir()) == [LOWERED_NAME, POLICY_NAME]  # no temporary left
    assert Path(r.policy_path) == out / POLICY_NAME
    assert json.loads(Path(r.policy_path).read_text()) == r.policy
    assert r.source == str(EXAMPLES / "nested-scatter" / "nested-scatter.cwl")
    assert r.policy == {
        "version": POLICY_VERSION,
        "workflow": r.source,
        "tools": {
            "plastic_per_sample_sort": {"preempt": True, "instance_type": None, "step": "per_sample/sort",
                                        "vcpus": 1, "ram_mib": 1024},
            "plastic_per_sample_count": {"preempt": 2, "instance_type": None, "step": "per_sample/count",
                                         "vcpus": 1, "ram_mib": 768},
            "plastic_gather": {"preempt": False, "instance_type": None, "step": "gather",
                               "vcpus": 1, "ram_mib": 512},
        },
    }
    step = r.by_step()["per_sample/count"]
    assert (step.tool_id, step.vcpus, step.ram_mib, str(step.preempt), step.instance_type) == \
        ("plastic_per_sample_count", 1, 768, "2", None)
    assert set(r.by_tool_id()) == set(r.policy["tools"])


@pytest.mark.parametrize("name", NAMES)
def test_policy_matches_the_plan(lowered, plans, name):
    r = lowered[name]
    rows = {row.step_id: row for row in plans[name].rows}
    assert [s.step for s in r.steps] == list(rows)
    for s in r.steps:
        row = rows[s.step]
        entry = r.policy["tools"][s.tool_id]
        assert entry["step"] == s.step
        assert entry["preempt"] == row.preempt.to_json() and s.preempt == row.preempt
        assert entry["instance_type"] == row.instance_type
        dynamic_ram = name == "dynamic-resources"  # both steps: ramMin is an expression
        assert entry["vcpus"] == row.vcpus
        assert entry["ram_mib"] == (None if dynamic_ram else row.ram_mib)


@pytest.mark.parametrize("name", NAMES)
def test_ids_are_unique_dot_free_and_per_step(lowered, name):
    r = lowered[name]
    doc = json.loads(Path(r.workflow_path).read_text())
    ids = [entry["id"] for entry in doc["$graph"]]
    assert len(ids) == len(set(ids))
    assert ids[0] == "#main"
    tools = {i.lstrip("#") for i, e in zip(ids, doc["$graph"], strict=True) if e["class"] != "Workflow"}
    assert tools == set(r.policy["tools"])
    for tool_id in tools:
        assert SAFE_ID.match(tool_id) and "." not in tool_id
    runs = [step["run"] for entry in doc["$graph"] for step in entry.get("steps", [])]
    assert len(runs) == len(set(runs))  # no two steps share a copy
    assert all(isinstance(run, str) and run.lstrip("#") in {i.lstrip("#") for i in ids} for run in runs)
    assert "Plasticity" not in Path(r.workflow_path).read_text()
    assert doc["$namespaces"]["arv"] == "http://arvados.org/cwl#"


@pytest.mark.parametrize("name", NAMES)
def test_requirements_carry_the_plan(lowered, plans, name):
    r = lowered[name]
    rows = {row.step_id: row for row in plans[name].rows}
    procs = graph(r)
    for s in r.steps:
        tool = procs[s.tool_id]
        arv = requirement(tool, "hints", ARV)
        assert arv == {"class": ARV, "usePreemptible": rows[s.step].preempt.preemptible}
        assert requirement(tool, "hints", "ResourceRequirement") is None or \
            rows[s.step].vcpus_source not in ("hint", "workflow hint")
        rr = requirement(tool, "requirements", "ResourceRequirement")
        if rows[s.step].vcpus_source in ("hint", "workflow hint"):
            assert rr is not None and rr["coresMin"] == s.vcpus and "coresMax" not in rr
        if rows[s.step].ram_source in ("hint", "workflow hint"):
            assert rr is not None and rr["ramMin"] == s.ram_mib and "ramMax" not in rr


def test_scatter_gather_values(lowered):
    procs = graph(lowered["scatter-gather"])
    got = {tid: (procs[tid]["requirements"][-1], requirement(procs[tid], "hints", ARV)["usePreemptible"])
           for tid in ("plastic_split", "plastic_sort", "plastic_merge")}
    assert got == {
        "plastic_split": ({"class": "ResourceRequirement", "coresMin": 1, "ramMin": 512}, True),  # inferred
        "plastic_sort": ({"class": "ResourceRequirement", "coresMin": 2, "ramMin": 2048}, True),
        "plastic_merge": ({"class": "ResourceRequirement", "coresMin": 2, "ramMin": 4096}, False),
    }
    # sort-chunk.cwl's own ResourceRequirement hint (1 core, 1024 MiB) lost to plastic's: dropped
    assert requirement(procs["plastic_sort"], "hints", "ResourceRequirement") is None


def test_dynamic_resources_keep_their_expressions(lowered):
    r = lowered["dynamic-resources"]
    procs = graph(r)
    sort_rr = requirement(procs["plastic_sort"], "requirements", "ResourceRequirement")
    assert sort_rr["coresMin"] == 1 and sort_rr["ramMin"].startswith("$(Math.max(64")
    assert requirement(procs["plastic_sort"], "requirements", "InlineJavascriptRequirement") is not None
    merge_rr = requirement(procs["plastic_merge"], "requirements", "ResourceRequirement")
    assert merge_rr["coresMin"] == 2 and "inputs.parts.reduce" in merge_rr["ramMin"]
    assert {t: (e["vcpus"], e["ram_mib"]) for t, e in r.policy["tools"].items()} == \
        {"plastic_sort": (1, None), "plastic_merge": (2, None)}


@pytest.mark.slow
def test_inline_tools_and_subworkflows(tmp_path):
    r = lower_workflow(str(LOWER / "shapes.cwl"), str(tmp_path / "out"), job_path=str(LOWER / "shapes-job.yml"))
    procs = graph(r)
    assert set(procs) == {"main", "plastic_make", "plastic_sub", "plastic_sub_inner"}
    assert r.policy["tools"] == {
        "plastic_make": {"preempt": True, "instance_type": "c5.large", "step": "make", "vcpus": 1, "ram_mib": 300},
        "plastic_sub_inner": {"preempt": False, "instance_type": None, "step": "sub/inner", "vcpus": 1,
                              "ram_mib": 700},
    }
    inner = procs["plastic_sub_inner"]
    # plastic sets only vram: the tool's own cores (and coresMax) stay, its ramMin is replaced
    assert inner["requirements"] == [{"class": "ResourceRequirement", "coresMin": 1, "coresMax": 1, "ramMin": 700}]
    assert all(p["id"].startswith("#plastic_sub_inner/") for p in inner["inputs"] + inner["outputs"])
    assert procs["plastic_sub"]["steps"][0]["run"] == "#plastic_sub_inner"
    assert procs["plastic_sub"]["outputs"][0]["outputSource"] == "#plastic_sub/inner/out"


def test_one_subworkflow_called_twice(tmp_path):
    r = lower_workflow(str(LOWER / "twice.cwl"), str(tmp_path / "out"))
    assert {s.step: (s.tool_id, s.vcpus, s.ram_mib, s.preempt.to_json()) for s in r.steps} == {
        "a/first": ("plastic_a_first", 2, 600, False),
        "a/second": ("plastic_a_second", 1, 600, False),
        "b/first": ("plastic_b_first", 2, 900, 1),
        "b/second": ("plastic_b_second", 1, 900, 1),
        "a_first": ("plastic_a_first_2", 1, 256, False),  # "a_first" clashes with "a/first"
    }
    procs = graph(r)
    assert procs["plastic_a"]["steps"][0]["run"] != procs["plastic_b"]["steps"][0]["run"]


def test_resolution_levels(tmp_path):
    wf = load_cwl(data("resolution.cwl"))
    r = lower_workflow(data("resolution.cwl"), str(tmp_path / "out"))
    procs = graph(r)
    for row in wf.rows:
        step = r.by_step()[row.step_id]
        assert step.preempt == row.preempt
        assert requirement(procs[step.tool_id], "hints", ARV)["usePreemptible"] == row.preempt.preemptible
    override = procs[r.by_step()["override"].tool_id]
    # step hint vcpus 8 + the tool's hint vram 4096 beat the tool's ResourceRequirement hint (16, 65536)
    assert override["requirements"] == [{"class": "ResourceRequirement", "coresMin": 8, "ramMin": 4096}]
    assert "hints" in override and requirement(override, "hints", "ResourceRequirement") is None
    assert r.by_step()["override"].instance_type == "m5.xlarge"
    floats = procs[r.by_step()["floats"].tool_id]  # no plastic resources: untouched
    assert floats["requirements"] == [{"class": "ResourceRequirement", "coresMin": 2.5, "ramMin": 1000.5}]
    assert (r.by_step()["floats"].vcpus, r.by_step()["floats"].ram_mib) == (3, 1001)
    assert requirement(procs[r.by_step()["arv_only"].tool_id], "hints", ARV)["usePreemptible"] is False


def test_v10_tool_keeps_its_default_ram(tmp_path):
    r = lower_workflow(str(LOWER / "mixed.cwl"), str(tmp_path / "out"))
    plan = {row.step_id: row for row in load_cwl(str(LOWER / "mixed.cwl")).rows}
    procs = graph(r)
    for s in r.steps:
        assert s.ram_mib == plan[s.step].ram_mib
    # packing moves the v1.0 tool to v1.2, whose default is 256 MiB: the plan's 1024 is written out
    assert requirement(procs["plastic_cat"], "requirements", "ResourceRequirement") == \
        {"class": "ResourceRequirement", "coresMin": 2, "ramMin": 1024}


def test_bare_tool(tmp_path):
    r = lower_workflow(data("hinted-tool.cwl"), str(tmp_path / "out"))
    doc = json.loads(Path(r.workflow_path).read_text())
    assert "$graph" not in doc and doc["id"] == "#plastic_hinted-tool"
    assert r.policy["tools"] == {"plastic_hinted-tool": {"preempt": True, "instance_type": "m5.xlarge",
                                                         "step": "hinted-tool", "vcpus": 4, "ram_mib": 4096}}
    assert doc["requirements"] == [{"class": "ResourceRequirement", "coresMin": 4, "ramMin": 4096}]


def test_infer_preempt_off(tmp_path):
    r = lower_workflow(example("scatter-gather")[0], str(tmp_path / "out"), infer_preempt=False)
    assert r.policy["tools"]["plastic_split"]["preempt"] is False
    assert requirement(graph(r)["plastic_split"], "hints", ARV)["usePreemptible"] is False


# --- cwltool accepts and runs the lowered documents ---------------------------------------------


@pytest.mark.slow
def test_lowered_documents_validate_with_plain_cwltool(tmp_path):
    # (the examples are validated by running them, below; that this needs no network is in
    # test_lower_offline.py)
    extra = [lower_workflow(data(name), str(tmp_path / name))
             for name in ("v11-workflow.cwl", "import.cwl")]  # v11: plastic under a tool's requirements
    extra.append(lower_workflow(str(LOWER / "twice.cwl"), str(tmp_path / "twice")))
    paths = [r.workflow_path for r in extra]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda p: cwltool("--validate", p, cwd=tmp_path), paths))
    for path, res in zip(paths, results, strict=True):
        assert res.returncode == 0, (path, res.stderr[-2000:])
        assert "is valid CWL" in res.stdout
        assert "Plasticity" not in res.stderr


@pytest.mark.slow
def test_a_step_named_like_an_output_survives_packing_and_runs(tmp_path):
    # cwltool's packing turned the second object of a shared id into an `$import` of the first:
    # the step `tally` became the output `tally`, and lowering failed with KeyError: 'id'
    r = lower_workflow(str(LOWER / "shared-names.cwl"), str(tmp_path / "out"))
    assert {s.step for s in r.steps} == {"per_text/words", "per_text/count", "tally"}
    text = Path(r.workflow_path).read_text()
    assert "$import" not in text
    procs = graph(r)
    assert [s["id"] for s in procs["main"]["steps"]] == ["#main/per_text", "#main/tally"]
    assert [o["id"] for o in procs["main"]["outputs"]] == ["#main/counts", "#main/tally"]
    words = procs[r.by_step()["per_text/words"].tool_id]
    assert [p["id"].rsplit("/", 1)[1] for p in words["inputs"] + words["outputs"]] == ["words", "words"]
    assert requirement(words, "requirements", "ResourceRequirement") == \
        {"class": "ResourceRequirement", "coresMin": 1, "ramMin": 300}
    res = cwltool("--no-container", "--outdir", str(tmp_path / "run"), r.workflow_path,
                  "--texts", "a b", "--texts", "c d e", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout)
    assert [c["checksum"] for c in got["counts"]] == ["sha1$7448d8798a4380162d4b56f9b452e2f6f9e24e7a",
                                                      "sha1$a3db5c13ff90a36963278c6a39e4ee3c22e2a436"]
    assert (tmp_path / "run" / "tally.txt").read_text() == "2\n3\n"


@pytest.mark.slow
def test_a_record_type_of_the_workflow_and_its_tool_lowers_and_runs(tmp_path):
    # packing made the workflow's copy of the type an `$import` of the tool's, whose id lowering drops
    # (each step has its own tool copy): "Reference '#pair-type.yml/pair' not found"
    r = lower_workflow(str(LOWER / "schemadef-twice.cwl"), str(tmp_path / "out"),
                       job_path=str(LOWER / "schemadef-twice-job.yml"))
    assert "$import" not in Path(r.workflow_path).read_text()
    res = cwltool("--no-container", "--outdir", str(tmp_path / "run"), r.workflow_path,
                  str(LOWER / "schemadef-twice-job.yml"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "run" / "pair.txt").read_text() == "hello world\n"


@pytest.mark.slow
def test_floats_reach_the_command_line_as_the_source_wrote_them(tmp_path):
    # cwltool formats a float as ruamel writes it back: the lowered JSON used to say 25000.0 for 2.5e4
    source = LOWER / "written-floats.cwl"
    r = lower_workflow(str(source), str(tmp_path / "out"))
    text = Path(r.workflow_path).read_text()
    assert '"default": 2.5e4' in text and '"default": -7.5E+3' in text
    assert json.loads(text)["inputs"]  # still JSON

    def run(path: str, name: str) -> str:
        res = cwltool("--outdir", str(tmp_path / name), path, cwd=tmp_path)
        assert res.returncode == 0, res.stderr[-3000:]
        return (tmp_path / name / "line.txt").read_text()

    assert run(r.workflow_path, "lowered") == run(str(source), "source") == "0.000025 25000 40000.0 -7500"


def _check_outputs(name: str, res: subprocess.CompletedProcess[str]) -> None:
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout)
    expected = json.loads((EXAMPLES / name / "expected-output.json").read_text())
    assert set(got) == set(expected)
    for key, want in expected.items():
        assert {k: got[key][k] for k in ("basename", "checksum", "class", "size")} == want


@pytest.mark.slow
def test_lowered_examples_run_with_cwltool(lowered, tmp_path):
    def run(name: str) -> subprocess.CompletedProcess[str]:
        work = tmp_path / name
        work.mkdir()
        if name == "scatter-gather":  # the job order by a relative path, from its own directory
            return cwltool("--no-container", "--outdir", str(work / "out"), lowered[name].workflow_path, "job.yml",
                           cwd=EXAMPLES / name)
        return cwltool("--no-container", "--outdir", str(work / "out"), lowered[name].workflow_path,
                       example(name)[1], cwd=work)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(NAMES, pool.map(run, NAMES), strict=True))
    for name, res in results.items():
        _check_outputs(name, res)


# --- Toil: the last dotted part of unitName is the policy key ---------------------------------------

RECORDER = '''
"""Scratch batch system for plastic's tests: single_machine, logging every issued job."""
import json
import os

from toil.batchSystems.registry import add_batch_system_factory


def _factory():
    from toil.batchSystems.singleMachine import SingleMachineBatchSystem

    class Recording(SingleMachineBatchSystem):
        @classmethod
        def add_options(cls, parser):
            pass  # single_machine's options are on the parser already

        def issueBatchJob(self, command, job_desc, job_environment=None):
            with open(os.environ["PLASTIC_LOWER_RECORD"], "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"jobName": job_desc.jobName, "unitName": job_desc.unitName,
                                     "cores": job_desc.cores, "memory": job_desc.memory,
                                     "preemptible": job_desc.preemptible}) + "\\n")
            return super().issueBatchJob(command, job_desc, job_environment)

    return Recording


add_batch_system_factory("plastic_lower_recorder", _factory)
'''


@pytest.mark.toil_e2e
def test_toil_unit_names_end_with_the_policy_keys(tmp_path):
    """Scatter elements, a subworkflow step and inline tools: each job is named after its tool copy.

    Run behind a local proxy that records every request: loading the lowered workflow needs no network
    (see test_lower_offline.py), and the jobs' `preemptible` still follows arv:UsePreemptible.
    """
    r = lower_workflow(str(LOWER / "shapes.cwl"), str(tmp_path / "lowered"), job_path=str(LOWER / "shapes-job.yml"))
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "toil_batch_system_plastic_lower_recorder.py").write_text(textwrap.dedent(RECORDER))
    record = tmp_path / "jobs.jsonl"
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(plugins), str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["PLASTIC_LOWER_RECORD"] = str(record)
    cmd = [str(VENV_BIN / "toil-cwl-runner"), "--batchSystem", "plastic_lower_recorder", "--no-container",
           "--disableChaining", "true",  # else a job's successor may run in the same worker, unseen by the batch system
           "--jobStore", f"file:{tmp_path / 'js'}", "--outdir", str(tmp_path / "out"), "--workDir", str(tmp_path),
           r.workflow_path, "shapes-job.yml"]
    with proxy_recorder() as recorder:
        res = subprocess.run(cmd, cwd=LOWER, env=proxy_env(recorder.url, env), capture_output=True, text=True,
                             timeout=180, check=False)
    assert res.returncode == 0, res.stderr[-4000:]
    assert recorder.requests == []
    assert json.loads(res.stdout)["all"]["basename"] == "all.txt"
    assert (tmp_path / "out" / "all.txt").read_text() == "alpha\nbeta\n"
    jobs = [json.loads(line) for line in record.read_text().splitlines()]
    tool_jobs = [j for j in jobs if j["jobName"] == "CWLJob"]
    by_key: dict[str, list[dict[str, Any]]] = {}
    for job in tool_jobs:
        by_key.setdefault(job["unitName"].rsplit(".", 1)[-1], []).append(job)
    assert set(by_key) == set(r.policy["tools"]), [j["unitName"] for j in tool_jobs]
    assert len(by_key["plastic_make"]) == 2  # one per scatter element
    for key, seen in by_key.items():
        entry = r.policy["tools"][key]
        for job in seen:
            assert job["cores"] == entry["vcpus"]
            assert job["memory"] == entry["ram_mib"] * 2**20
            assert job["preemptible"] is (entry["preempt"] is not False)


# --- the command ----------------------------------------------------------------------------------------


def test_cli_lower(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    wf, job = example("nested-scatter")
    res = CliRunner().invoke(lower, [wf, job, "--outdir", "out"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "wrote the lowered workflow: out/packed.cwl"
    assert lines[1] == "wrote the policy (3 tools): out/policy.json"
    assert any(line.split()[:2] == ["per_sample/count", "plastic_per_sample_count"] for line in lines)
    assert lines[-1] == f"  toil-cwl-runner --batchSystem plastic --plasticPolicy out/policy.json ... out/packed.cwl {job}"
    assert json.loads((tmp_path / "out" / POLICY_NAME).read_text())["tools"]["plastic_gather"]["preempt"] is False


@pytest.mark.slow
def test_cli_lower_bad_input_is_one_line(tmp_path):
    (tmp_path / "bad.cwl").write_text(BAD_TOOL.format(hint="vcpus: 0"))
    res = subprocess.run([sys.executable, "-m", "plastic.cli.lower", "bad.cwl", "--outdir", "out"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, check=False)
    assert_one_line_error(res, "bad.cwl", "plastic:Plasticity.vcpus")
    assert not (tmp_path / "out").exists()


# --- bad input: one line, the right type, nothing written ------------------------------------------------

BAD_TOOL = """cwlVersion: v1.2
class: CommandLineTool
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
baseCommand: echo
inputs:
  f: File
outputs: []
hints:
  plastic:Plasticity:
    {hint}
"""


@pytest.mark.parametrize(("files", "args", "kind", "needles"), [
    pytest.param({}, ("nothere.cwl",), WorkflowError, ("nothere.cwl", "no such file"), id="missing-file"),
    pytest.param({"w.cwl": BAD_TOOL.format(hint="vcpus: 1").replace("baseCommand", "baseComand")}, ("w.cwl",),
                 WorkflowError, ("w.cwl", "baseComand"), id="invalid-cwl"),
    pytest.param({"w.cwl": "cwlVersion: v1.2\nclass: [\n"}, ("w.cwl",), WorkflowError, ("w.cwl", "YAML"),
                 id="yaml"),
    pytest.param({"w.cwl": BAD_TOOL.format(hint="vcpus: 0")}, ("w.cwl",), AnnotationError,
                 ("w.cwl", "plastic:Plasticity.vcpus", ">= 1"), id="bad-vcpus"),
    pytest.param({"w.cwl": BAD_TOOL.format(hint="preempt: maybe")}, ("w.cwl",), AnnotationError,
                 ("plastic:Plasticity.preempt",), id="bad-preempt"),
    pytest.param({"w.cwl": BAD_TOOL.format(hint="cpus: 2")}, ("w.cwl",), AnnotationError,
                 ("plastic:Plasticity.cpus", "unknown field"), id="unknown-field"),
    pytest.param({"w.cwl": BAD_TOOL.format(hint="vcpus: 1")}, ("w.cwl", "nojob.yml"), WorkflowError,
                 ("nojob.yml", "no such file"), id="missing-job"),
    pytest.param({"w.cwl": BAD_TOOL.format(hint="vcpus: 1"), "job.yml": "g: 1\n"}, ("w.cwl", "job.yml"),
                 WorkflowError, ("job.yml",), id="job-missing-input"),
])
def test_bad_input(tmp_path, monkeypatch, files, args, kind, needles):
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(kind) as info:
        lower_workflow(args[0], "out", job_path=args[1] if len(args) > 1 else None)
    line = str(info.value)
    assert "\n" not in line
    for needle in needles:
        assert needle in line, (needle, line)
    assert not (tmp_path / "out").exists()


def test_outdir_is_a_file(tmp_path):
    (tmp_path / "out").write_text("not a directory")
    with pytest.raises(InputError) as info:
        lower_workflow(example("scatter-gather")[0], str(tmp_path / "out"))
    assert info.value.field == "--outdir" and "not a directory" in str(info.value)


def test_outdir_would_overwrite_the_workflow(tmp_path):
    src = (LOWER / "echo-tool.cwl").read_text()
    (tmp_path / LOWERED_NAME).write_text(src)
    with pytest.raises(InputError) as info:
        lower_workflow(str(tmp_path / LOWERED_NAME), str(tmp_path))
    assert "overwrite the workflow" in str(info.value)
    assert (tmp_path / LOWERED_NAME).read_text() == src


def test_a_failure_leaves_the_previous_output(tmp_path, monkeypatch):
    out = tmp_path / "out"
    first = lower_workflow(str(LOWER / "twice.cwl"), str(out))
    before = {p.name: p.read_text() for p in out.iterdir()}
    # a bad annotation: nothing is touched
    (tmp_path / "bad.cwl").write_text(BAD_TOOL.format(hint="vram: -3"))
    with pytest.raises(AnnotationError):
        lower_workflow(str(tmp_path / "bad.cwl"), str(out))
    assert {p.name: p.read_text() for p in out.iterdir()} == before
    # the policy cannot take its name: the previous packed.cwl is put back
    real_replace = os.replace

    def failing_replace(src: Any, dst: Any) -> None:
        if str(dst).endswith(POLICY_NAME):
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(InputError) as info:
        lower_workflow(example("scatter-gather")[0], str(out))
    monkeypatch.undo()
    assert "No space left on device" in str(info.value)
    assert {p.name: p.read_text() for p in out.iterdir()} == before
    assert json.loads((out / POLICY_NAME).read_text()) == first.policy
