"""`plastic plan` as a user runs it: a real process, real files, exit codes and stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirun import REPO, assert_one_line_error, plastic
from tests.data_paths import WFINSTANCES, needs

DATA = Path(__file__).resolve().parent / "data"
TRACE = DATA / "tiny-trace.json"
SCATTER = REPO / "cwl-examples" / "scatter-gather"


def plan_json(*args: str) -> dict:
    res = plastic("plan", *args, "--format", "json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


# ---------------------------------------------------------------- the plan JSON

def test_concurrent_plan_places_every_task_exactly_once_within_capacity():
    doc = plan_json(str(TRACE), "--concurrent")
    assert doc["schema"] == "plastic.plan/v1"
    ids = [tid for node in doc["nodes"] for tid in node["tasks"]]
    assert sorted(ids) == sorted(t["id"] for t in doc["tasks"])
    assert len(ids) == len(set(ids)) == 5
    tasks = {t["id"]: t for t in doc["tasks"]}
    for node in doc["nodes"]:
        assert sum(tasks[i]["vcpus"] for i in node["tasks"]) <= node["capacity"]["vcpus"]
        assert sum(tasks[i]["ram_mib"] for i in node["tasks"]) <= node["capacity"]["ram_mib"]
        for i in node["tasks"]:
            if tasks[i]["preempt"] is False:
                assert node["market"] == "on-demand"
    assert any(n["market"] == "on-demand" for n in doc["nodes"])
    assert doc["cost_per_hour"] == pytest.approx(sum(n["usd_per_hour"] for n in doc["nodes"]), abs=1e-5)
    assert doc["lower_bound_usd_per_hour"] <= doc["cost_per_hour"] + 1e-9
    assert doc["on_demand_cost_per_hour"] >= doc["cost_per_hour"]


def test_trace_rules_reach_the_plan():
    doc = plan_json(str(TRACE), "--concurrent")
    tasks = {t["id"]: t for t in doc["tasks"]}
    assert tasks["work_2"] == {**tasks["work_2"], "vcpus": 2, "ram_mib": 2048, "runtime_s": 30}
    assert tasks["merge_5"]["vcpus"] == 4 and tasks["merge_5"]["ram_mib"] == 4096
    # replicated "work" tasks are inferred preemptible, the lone split and merge reliable
    assert tasks["work_3"]["preempt"] is True
    assert tasks["split_1"]["preempt"] is False and tasks["merge_5"]["preempt"] is False


def test_waves_plan_is_no_dearer_than_concurrent_and_says_so():
    waves = plan_json(str(TRACE))
    concurrent = plan_json(str(TRACE), "--concurrent")
    assert waves["mode"] == "waves"
    assert waves["cost_per_hour"] <= concurrent["cost_per_hour"] + 1e-9
    assert any("waves" in a for a in waves["assumptions"])
    ids = [tid for node in waves["nodes"] for tid in node["tasks"]]
    assert sorted(ids) == sorted(t["id"] for t in waves["tasks"])


def test_preempt_none_is_all_on_demand_and_all_is_cheaper():
    none = plan_json(str(TRACE), "--concurrent", "--preempt", "none")
    every = plan_json(str(TRACE), "--concurrent", "--preempt", "all")
    assert all(n["market"] == "on-demand" for n in none["nodes"])
    assert every["cost_per_hour"] < none["cost_per_hour"]
    assert any(n["market"] == "on-demand" for n in every["nodes"])  # the reliable node stays


def test_yaml_and_table_formats(tmp_path):
    out = tmp_path / "plan.yaml"
    res = plastic("plan", TRACE, "--format", "yaml", "-o", out)
    assert res.returncode == 0, res.stderr
    import yaml

    assert yaml.safe_load(out.read_text())["schema"] == "plastic.plan/v1"
    table = plastic("plan", TRACE)
    assert table.returncode == 0
    for word in ("cluster", "core", "savings", "lower bound"):
        assert word in table.stdout


def test_budget_limits_the_plan_or_says_what_binds():
    full = plan_json(str(TRACE), "--concurrent")
    cheapest = full["cost_per_hour"] * 0.6
    limited = plastic("plan", TRACE, "--concurrent", "--budget-per-hour", f"{cheapest:.4f}", "--format", "json")
    if limited.returncode == 0:
        doc = json.loads(limited.stdout)
        assert doc["mode"] == "budget"
        assert doc["cost_per_hour"] <= cheapest + 1e-6
        ids = [tid for node in doc["nodes"] for tid in node["tasks"]]
        assert sorted(ids) == sorted(t["id"] for t in doc["tasks"])
    else:
        assert_one_line_error(limited, "budget")
    res = plastic("plan", TRACE, "--budget-per-hour", "0.01")
    assert_one_line_error(res, "--budget-per-hour", "cheapest feasible plan")


def test_reserve_shrinks_capacity():
    doc = plan_json(str(TRACE), "--concurrent", "--reserve-vcpus", "1", "--reserve-ram-mib", "512")
    for node in doc["nodes"]:
        assert node["capacity"]["vcpus"] < 16 or node["instance_type"].endswith("4xlarge")
    c5_large = [n for n in doc["nodes"] if n["instance_type"] == "c5.large"]
    for n in c5_large:
        assert n["capacity"] == {"vcpus": 1, "ram_mib": 3584}


def test_output_file_written_atomically(tmp_path):
    out = tmp_path / "plan.json"
    res = plastic("plan", TRACE, "--format", "json", "-o", out)
    assert res.returncode == 0 and res.stdout == ""
    assert json.loads(out.read_text())["schema"] == "plastic.plan/v1"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


@needs(WFINSTANCES / "montage-chameleon-2mass-01d-001.json")
def test_real_trace_ids_are_kept():
    doc = plan_json(str(WFINSTANCES / "montage-chameleon-2mass-01d-001.json"), "--concurrent")
    src = json.loads((WFINSTANCES / "montage-chameleon-2mass-01d-001.json").read_text())
    want = {t["id"] for t in src["workflow"]["specification"]["tasks"]}
    assert {t["id"] for t in doc["tasks"]} == want
    assert sorted(i for n in doc["nodes"] for i in n["tasks"]) == sorted(want)


@pytest.mark.skipif(not SCATTER.is_dir(), reason="example missing")
def test_cwl_example_plans_a_hybrid_cloud():
    doc = plan_json(str(SCATTER / "scatter-gather.cwl"), str(SCATTER / "job.yml"), "--concurrent")
    markets = {n["market"] for n in doc["nodes"]}
    assert markets == {"on-demand", "spot"}
    merge = [t for t in doc["tasks"] if t["id"].endswith("merge")]
    assert merge and merge[0]["preempt"] is False
    node_of = {i: n for n in doc["nodes"] for i in n["tasks"]}
    assert node_of[merge[0]["id"]]["market"] == "on-demand"


@pytest.mark.slow
def test_a_process_of_a_graph_document_is_planned_by_its_fragment():
    # cwltool's `FILE#ID`: the CWL conformance suite names half its workflows so (`scatter-wf4.cwl#main`)
    packed = str(REPO / "tests" / "cwl" / "data" / "packed.cwl")
    job = str(REPO / "cwl-examples" / "nested-scatter" / "job.yml")
    whole = plan_json(str(REPO / "cwl-examples" / "nested-scatter" / "nested-scatter.cwl"), job)
    by_fragment = plan_json(packed + "#main", job)
    assert len(by_fragment["tasks"]) == len(whole["tasks"]) > 1
    assert by_fragment["cost_per_hour"] == whole["cost_per_hour"]
    assert len(plan_json(packed + "#sort-words.cwl")["tasks"]) == 1
    assert_one_line_error(plastic("plan", packed + "#nope"), "#nope")
    assert_one_line_error(plastic("plan", str(REPO / "nope.cwl") + "#main"), "nope.cwl#main", "no such file")


@pytest.mark.slow
def test_inputs_as_flags_plan_as_the_job_file_does(tmp_path):
    """`plastic plan WF --INPUT VALUE ...` (and `inspect`) as `plastic run` takes them: the same plan as
    the job file's; a flag that is no input, and flags for a trace, are one line."""
    sg = REPO / "cwl-examples" / "scatter-gather"
    parts = [w for i in range(1, 13) for w in ("--parts", str(i))]
    by_file = plan_json(str(sg / "scatter-gather.cwl"), str(sg / "job.yml"))
    by_flags = plan_json(str(sg / "scatter-gather.cwl"), "--text", str(sg / "input.txt"), *parts)
    assert [t["id"] for t in by_flags["tasks"]] == [t["id"] for t in by_file["tasks"]]
    assert by_flags["cost_per_hour"] == by_file["cost_per_hour"]
    fewer = plan_json(str(sg / "scatter-gather.cwl"), str(sg / "job.yml"), "--parts", "1", "--parts", "2")
    assert len(fewer["tasks"]) == 2 * 2 + 1 < len(by_file["tasks"])  # two parts (split, sort each) + merge
    shown = plastic("inspect", sg / "scatter-gather.cwl", "--text", sg / "input.txt", "--parts", "1", "--format",
                    "json")
    assert shown.returncode == 0, shown.stderr
    assert_one_line_error(plastic("plan", sg / "scatter-gather.cwl", "--text", sg / "input.txt", "--partz", "1"),
                          "--partz", "not an option of plastic plan or an input of scatter-gather.cwl")
    assert_one_line_error(plastic("inspect", sg / "scatter-gather.cwl", "--text", tmp_path / "none.txt"),
                          "inputs on the command line", "none.txt")
    assert_one_line_error(plastic("plan", TRACE, "--parts", "1"), "a WfCommons trace takes no job order")


def test_a_plan_at_its_lower_bound_is_never_printed_below_it():
    """The dynamic scatter plans one c5.large, the LP bound itself: float noise once printed '-0.0%'."""
    example = REPO / "cwl-examples" / "dynamic-scatter"
    res = plastic("plan", str(example / "dynamic-scatter.cwl"), str(example / "job.yml"))
    assert res.returncode == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("lower bound"))
    assert "(plan is 0.0% above it)" in line, line
    text = " ".join(res.stdout.split())  # the notes are folded to the terminal's width
    assert "the widest has 1 task;" in text and "each of 3 waves" in text
    assert "an elastic `plastic run` grows the cluster for the width it finds" in text


@pytest.mark.slow
def test_preemptible_tasks_bigger_than_the_on_demand_nodes_are_warned_of():
    """A table gets a `warning:` line, the other formats one line on stderr (their output stays pure);
    the example workflow, whose core node holds every task, gets none."""
    data = DATA / "big-preemptible"
    args = (data / "big-preemptible.cwl", data / "job.yml")
    table = plastic("plan", *args)
    assert table.returncode == 0, table.stderr
    assert "warning: on a cluster that cannot grow (--static, --master), 2 preemptible task(s) of big" in \
        " ".join(table.stdout.split())
    doc = plastic("plan", *args, "--format", "json")
    assert doc.returncode == 0 and json.loads(doc.stdout)["schema"] == "plastic.plan/v1"
    assert doc.stderr.startswith("plastic: warning: ") and len(doc.stderr.splitlines()) == 1, doc.stderr
    calm = plastic("plan", SCATTER / "scatter-gather.cwl", SCATTER / "job.yml")
    assert calm.returncode == 0 and "warning" not in calm.stdout + calm.stderr


# ---------------------------------------------------------------- bad input

def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def catalog(tmp_path: Path, body: str) -> Path:
    return write(tmp_path, "catalog.yaml", body)


GOOD_TYPE = "  - {name: t.small, vcpus: 2, ram_mib: 4096, on_demand_usd_per_hour: 0.1, spot_usd_per_hour: 0.03}\n"


def test_missing_input_file(tmp_path):
    assert_one_line_error(plastic("plan", tmp_path / "nope.cwl"), "nope.cwl")


def test_unparsable_trace_json(tmp_path):
    bad = write(tmp_path, "bad.json", '{"schemaVersion": "1.5", "workflow": {')
    assert_one_line_error(plastic("plan", bad), "bad.json")


def test_trace_with_a_cycle(tmp_path):
    doc = json.loads(TRACE.read_text())
    spec = doc["workflow"]["specification"]["tasks"]
    spec[0]["parents"] = ["merge_5"]
    spec[4]["children"] = ["split_1"]
    bad = write(tmp_path, "cycle.json", json.dumps(doc))
    assert_one_line_error(plastic("plan", bad), "cycle.json", "cycle")


def test_catalog_unknown_field(tmp_path):
    cat = catalog(tmp_path, "instance_types:\n  - {name: a, vcpus: 2, ram_mib: 1024, "
                            "on_demand_usd_per_hour: 0.1, gpus: 1}\n")
    assert_one_line_error(plastic("plan", TRACE, "--catalog", cat), "catalog.yaml", "gpus")


def test_catalog_missing_price(tmp_path):
    cat = catalog(tmp_path, "instance_types:\n  - {name: a, vcpus: 2, ram_mib: 1024}\n")
    assert_one_line_error(plastic("plan", TRACE, "--catalog", cat), "catalog.yaml", "on_demand_usd_per_hour")


def test_catalog_empty(tmp_path):
    cat = catalog(tmp_path, "instance_types: []\n")
    assert_one_line_error(plastic("plan", TRACE, "--catalog", cat), "catalog.yaml", "instance_types")


def test_catalog_unparsable_yaml(tmp_path):
    cat = catalog(tmp_path, "instance_types: [\n  - {name: a\n")
    assert_one_line_error(plastic("plan", TRACE, "--catalog", cat), "catalog.yaml")


def test_task_larger_than_every_type(tmp_path):
    cat = catalog(tmp_path, "instance_types:\n" + GOOD_TYPE)
    assert_one_line_error(plastic("plan", TRACE, "--catalog", cat), "tiny-trace.json", "merge_5", "vcpus")


def test_reliable_task_without_on_demand_capacity_is_impossible_to_miss(tmp_path):
    # a catalog whose only type with room for merge_5 ... is too small in RAM
    cat = catalog(tmp_path, "instance_types:\n" + GOOD_TYPE +
                  "  - {name: t.wide, vcpus: 8, ram_mib: 2048, on_demand_usd_per_hour: 0.2}\n")
    assert_one_line_error(plastic("plan", TRACE, "--catalog", cat), "merge_5")


def test_reserve_larger_than_every_type(tmp_path):
    res = plastic("plan", TRACE, "--reserve-vcpus", "64")
    assert_one_line_error(res, "reserve")


def test_bad_budget_value():
    res = plastic("plan", TRACE, "--budget-per-hour", "-1")
    assert res.returncode == 2 and "Traceback" not in res.stderr and "budget" in res.stderr


def test_output_directory_missing(tmp_path):
    res = plastic("plan", TRACE, "-o", tmp_path / "no" / "such" / "plan.json")
    assert_one_line_error(res, "-o")


def test_job_order_with_a_trace(tmp_path):
    job = write(tmp_path, "job.yml", "x: 1\n")
    assert_one_line_error(plastic("plan", TRACE, job), "job.yml")


TOOL = """cwlVersion: v1.2
class: CommandLineTool
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
baseCommand: [echo, hi]
inputs: []
outputs: []
hints:
  plastic:Plasticity:
{body}
"""


def tool(tmp_path: Path, name: str, body: str) -> Path:
    return write(tmp_path, name, TOOL.format(body=body))


def test_cwl_instance_type_too_small(tmp_path):
    cwl = tool(tmp_path, "pinned.cwl", "    vcpus: 8\n    vram: 4096\n    instanceType: c5.large")
    assert_one_line_error(plastic("plan", cwl), "pinned.cwl", "instanceType", "c5.large")


def test_cwl_instance_type_unknown(tmp_path):
    cwl = tool(tmp_path, "unknown.cwl", "    vcpus: 1\n    instanceType: x9.huge")
    assert_one_line_error(plastic("plan", cwl), "unknown.cwl", "instanceType", "x9.huge")


def test_cwl_vram_larger_than_every_type(tmp_path):
    cwl = tool(tmp_path, "huge.cwl", "    vcpus: 1\n    vram: 900000")
    assert_one_line_error(plastic("plan", cwl), "huge.cwl", "vram")


def test_cwl_zero_vcpus(tmp_path):
    cwl = tool(tmp_path, "zero.cwl", "    vcpus: 0")
    assert_one_line_error(plastic("plan", cwl), "zero.cwl", "vcpus")


def test_cwl_preempt_of_a_wrong_type(tmp_path):
    cwl = tool(tmp_path, "yes.cwl", '    preempt: "yes"')
    assert_one_line_error(plastic("plan", cwl), "yes.cwl", "preempt")


def test_pinned_task_fits_its_type(tmp_path):
    cwl = tool(tmp_path, "fits.cwl", "    vcpus: 2\n    vram: 1024\n    instanceType: r5.large\n    preempt: false")
    doc = plan_json(str(cwl))
    (node,) = [n for n in doc["nodes"] if n["tasks"]]
    assert node["instance_type"] == "r5.large" and node["market"] == "on-demand"


def test_a_big_workload_plans_as_it_does_one_strategy_after_another(tmp_path):
    # from 2,000 tasks `plastic plan` runs the planner's strategies side by side (forked workers);
    # the plan must be the one the strategies give run one after another in this process
    from bench.synthetic import mixed_tasks, write_wfcommons
    from plastic.catalogs import load_catalog
    from plastic.core.planning.plan import PlanOptions, plan_to_json
    from plastic.core.planning.planner import one_by_one
    from plastic.core.planning.sizing import plan_workload
    from plastic.traces import load_trace

    trace = tmp_path / "big.json"
    write_wfcommons(mixed_tasks(2100, 11), trace)
    got = plan_json(str(trace), "--concurrent")
    want = plan_to_json(plan_workload(load_trace(trace), load_catalog(None), options=PlanOptions(concurrent=True),
                                      run_each=one_by_one))
    assert got == json.loads(json.dumps(want))
