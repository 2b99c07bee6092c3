"""plastic.cwl.loader: resolution, inference, scatter widths, flattening, document forms."""

from __future__ import annotations

import pytest

from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt
from plastic.cwl.loader import CwlWorkflow, StepRow, load_cwl
from tests.cwl.helpers import data, rows

# --- resolution order and sources ------------------------------------------------------------


@pytest.fixture(scope="module")
def resolution() -> dict[str, StepRow]:
    return rows(load_cwl(data("resolution.cwl")))


def test_step_hint_overrides_the_tools_own_hint_field_by_field(resolution):
    r = resolution["override"]
    assert (r.vcpus, r.vcpus_source) == (8, "hint")  # the step's
    assert (r.ram_mib, r.ram_source) == (4096, "hint")  # the tool's
    assert r.instance_type == "m5.xlarge"
    # the tool's own preempt beats the workflow-level preempt: 3
    assert (r.preempt, r.preempt_source) == (PREEMPTIBLE, "hint")


def test_plastic_hint_wins_over_resource_requirement(resolution):
    # hinted-tool.cwl also says ResourceRequirement coresMin 16 / ramMin 65536
    assert resolution["override"].vcpus == 8 and resolution["override"].ram_mib == 4096


def test_resource_requirement_floats_round_up(resolution):
    r = resolution["floats"]
    assert (r.vcpus, r.vcpus_source) == (3, "ResourceRequirement")
    assert (r.ram_mib, r.ram_source) == (1001, "ResourceRequirement")


def test_resource_requirement_max_used_when_alone(resolution):
    r = resolution["maxonly"]
    assert (r.vcpus, r.ram_mib) == (6, 700)
    assert r.vcpus_source == r.ram_source == "ResourceRequirement"


def test_workflow_level_preempt_applies_to_steps_without_their_own(resolution):
    for step in ("floats", "maxonly"):
        assert (resolution[step].preempt, resolution[step].preempt_source) == (Preempt(3), "workflow hint")


def test_use_preemptible_on_the_step_beats_the_workflow_hint(resolution):
    r = resolution["arv_only"]
    assert (r.preempt, r.preempt_source) == (RELIABLE, "UsePreemptible")


def test_plasticity_beats_use_preemptible_on_the_same_level(resolution):
    assert (resolution["both"].preempt, resolution["both"].preempt_source) == (PREEMPTIBLE, "hint")


def test_cwl_defaults(resolution):
    r = resolution["arv_only"]
    assert (r.vcpus, r.vcpus_source, r.ram_mib, r.ram_source) == (1, "default", 256, "default")
    assert r.instance_type is None and r.scatter_width is None and not r.width_dynamic


def test_workflow_hints_and_requirements_level_plasticity():
    r = rows(load_cwl(data("workflow-hints.cwl")))
    inherit, own = r["inherit"], r["own"]
    # workflow-level plastic values beat the tool's ResourceRequirement (plastic first)
    assert (inherit.vcpus, inherit.vcpus_source) == (2, "workflow hint")
    assert (inherit.ram_mib, inherit.ram_source) == (3000, "workflow hint")
    assert (inherit.preempt, inherit.preempt_source) == (PREEMPTIBLE, "workflow hint")
    # plastic:Plasticity under the step's `requirements:`
    assert (own.vcpus, own.vcpus_source) == (5, "hint")
    assert (own.ram_mib, own.ram_source) == (3000, "workflow hint")
    assert (own.preempt, own.preempt_source) == (RELIABLE, "hint")


# --- CWL versions ----------------------------------------------------------------------------


def test_v1_0_workflow_with_job_order():
    wf = load_cwl(data("v10-workflow.cwl"), data("v10-job.yml"))
    r = rows(wf)
    assert (r["greet"].vcpus, r["greet"].ram_mib, r["greet"].scatter_width) == (3, 300, 5)
    assert r["greet"].vcpus_source == "ResourceRequirement"
    # cwltool's default RAM for a v1.0 document is 1024 MiB
    assert (r["gather"].vcpus, r["gather"].ram_mib, r["gather"].ram_source) == (1, 1024, "default")
    assert r["gather"].parents == ("greet",)
    # plastic:Plasticity under a v1.0 step's `requirements:`
    assert (r["gather"].preempt, r["gather"].preempt_source) == (RELIABLE, "hint")
    assert wf.assumptions == ()


def test_v1_1_plasticity_under_requirements_and_use_preemptible():
    r = rows(load_cwl(data("v11-workflow.cwl")))
    first, second = r["first"], r["second"]
    # the tool's own `requirements: plastic:Plasticity`, the step's `requirements` for preempt
    assert (first.vcpus, first.ram_mib, first.vcpus_source) == (2, 2048, "hint")
    assert (first.preempt, first.preempt_source) == (Preempt(4), "hint")
    # a step-level hint beats the tool's requirement; UsePreemptible gives preempt
    assert (second.vcpus, second.ram_mib) == (1, 2048)
    assert (second.preempt, second.preempt_source) == (PREEMPTIBLE, "UsePreemptible")
    assert second.parents == ("first",)


def test_v1_2_top_level_tool_evaluates_expressions_with_the_job_order():
    wf = load_cwl(data("sized-reads.cwl"), data("sized-reads-job.yml"))
    (r,) = wf.rows
    # coresMin $(inputs.threads) -> the default 2; ramMin 5120 B / 1024 * 2.5 = 12.5 -> 13
    assert (r.step_id, r.vcpus, r.ram_mib) == ("sized-reads", 2, 13)
    assert r.vcpus_source == r.ram_source == "ResourceRequirement"
    (task,) = wf.workload().tasks
    assert (task.id, task.vcpus, task.ram_mib, task.parents) == ("sized-reads", 2, 13, ())


def test_top_level_tool_without_job_order_is_dynamic():
    wf = load_cwl(data("sized-reads.cwl"))
    (r,) = wf.rows
    assert (r.vcpus, r.vcpus_source, r.ram_mib, r.ram_source) == (1, "dynamic", 256, "dynamic")
    assert len(wf.assumptions) == 2
    assert all("no job order" in a for a in wf.assumptions)
    assert any("ramMin" in a and "256 MiB" in a for a in wf.assumptions)


# --- preempt inference -----------------------------------------------------------------------


@pytest.mark.parametrize("infer", [True, False])
def test_inference_and_explicit_annotations(infer):
    r = rows(load_cwl(data("inference.cwl"), data("inference-job.yml"), infer_preempt=infer))
    if infer:
        assert (r["scattered"].preempt, r["scattered"].preempt_source) == (PREEMPTIBLE, "inferred")
    else:
        assert (r["scattered"].preempt, r["scattered"].preempt_source) == (RELIABLE, "default")
    # an explicit annotation wins over inference, either way
    assert (r["scattered_reliable"].preempt, r["scattered_reliable"].preempt_source) == (RELIABLE, "hint")
    assert (r["single"].preempt, r["single"].preempt_source) == (RELIABLE, "default")
    assert r["single"].parents == ("scattered", "scattered_reliable")


def test_inference_reaches_steps_inside_a_scattered_subworkflow(nested_scatter):
    r = rows(nested_scatter)
    assert (r["per_sample/sort"].preempt, r["per_sample/sort"].preempt_source) == (PREEMPTIBLE, "inferred")
    # explicit `preempt: 2` wins over inference
    assert (r["per_sample/count"].preempt, r["per_sample/count"].preempt_source) == (Preempt(2), "hint")
    assert (r["gather"].preempt, r["gather"].preempt_source) == (RELIABLE, "hint")


# --- scatter widths --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def methods() -> CwlWorkflow:
    return load_cwl(data("scatter-methods.cwl"), data("scatter-methods-job.yml"))


def test_scatter_widths_for_each_method(methods):
    r = rows(methods)
    widths = {k: (v.scatter_width, v.width_dynamic) for k, v in r.items()}
    assert widths == {"dot": (3, False), "flat": (6, False), "nested": (6, False),
                      "chained": (3, False), "sized": (None, False), "conditional": (None, False)}


def test_scatter_over_a_scattered_steps_output_has_its_width(methods):
    r = rows(methods)
    assert r["chained"].parents == ("dot",)
    assert not r["chained"].width_dynamic


def test_value_from_and_parameter_references_in_resources(methods):
    sized = rows(methods)["sized"]
    # n = $(self.length) of a (3); mib = $(self.length * 150) of c (300, ramMax alone)
    assert (sized.vcpus, sized.ram_mib) == (3, 300)


def test_conditional_step_is_an_assumption(methods):
    assert methods.assumptions == ("Step 'conditional' is conditional (`when`); planned as if it runs.",)


def test_workload_expands_scatter_elements(methods):
    tasks = methods.workload().tasks
    ids = [t.id for t in tasks]
    assert len(tasks) == 3 + 6 + 6 + 3 + 1 + 1
    assert ids[:3] == ["dot[0]", "dot[1]", "dot[2]"]
    assert "sized" in ids and "flat[5]" in ids
    chained0 = next(t for t in tasks if t.id == "chained[0]")
    assert chained0.parents == ("dot[0]", "dot[1]", "dot[2]")
    assert chained0.preempt == PREEMPTIBLE


def test_without_job_order_widths_are_dynamic_and_assumed():
    wf = load_cwl(data("scatter-methods.cwl"), scatter_width_assumption=4)
    r = rows(wf)
    for step in ("dot", "flat", "nested", "chained"):
        assert (r[step].scatter_width, r[step].width_dynamic) == (4, True)
    assert r["sized"].vcpus_source == "dynamic" and r["sized"].ram_source == "dynamic"
    text = " ".join(wf.assumptions)
    assert ("Step 'dot': the scatter width is known only at run time (no job order was given); assumed 4: an "
            "elastic `plastic run` grows the cluster for the width it finds.") in wf.assumptions
    assert "Step 'chained'" in text and "output of step 'dot'" in text
    assert len([t for t in wf.workload().tasks if t.id.startswith("dot[")]) == 4


def test_empty_scatter_gives_no_tasks(tmp_path):
    job = tmp_path / "empty.yml"
    job.write_text("xs: []\n")
    wf = load_cwl(data("inference.cwl"), str(job))
    r = rows(wf)
    assert r["scattered"].scatter_width == 0
    assert [(t.id, t.parents) for t in wf.workload().tasks] == [("single", ())]


def test_empty_scatter_of_a_subworkflow_passes_dependencies_through(tmp_path):
    job = tmp_path / "empty.yml"
    job.write_text("xs: []\n")
    wf = load_cwl(data("nested-parents.cwl"), str(job))
    assert rows(wf)["outer/second"].scatter_width == 0
    assert [(t.id, t.parents) for t in wf.workload().tasks] == [("prepare", ()), ("finish", ("prepare",))]


def test_scatter_width_assumption_must_be_positive():
    from plastic.core.errors import WorkflowError

    with pytest.raises(WorkflowError):
        load_cwl(data("inference.cwl"), scatter_width_assumption=0)


# --- examples: demo, nested, dynamic ---------------------------------------------------------


def test_demo_scatter_gather_is_a_hybrid_workload(scatter_gather):
    r = rows(scatter_gather)
    assert list(r) == ["split", "sort", "merge"]
    assert r["split"].scatter_width == r["sort"].scatter_width == 12
    assert (r["sort"].vcpus, r["sort"].ram_mib, r["sort"].preempt) == (2, 2048, PREEMPTIBLE)
    assert (r["merge"].vcpus, r["merge"].ram_mib, r["merge"].preempt) == (2, 4096, RELIABLE)
    tasks = scatter_gather.workload().tasks
    assert len(tasks) == 25
    assert {t.preempt.preemptible for t in tasks} == {True, False}
    merge = tasks[-1]
    assert merge.id == "merge" and merge.parents == tuple(f"sort[{i}]" for i in range(12))
    assert scatter_gather.assumptions == ()


def test_nested_subworkflow_is_flattened_with_parents(nested_scatter):
    r = rows(nested_scatter)
    assert list(r) == ["per_sample/sort", "per_sample/count", "gather"]
    assert r["per_sample/count"].parents == ("per_sample/sort",)
    assert r["gather"].parents == ("per_sample/count",)
    assert (r["per_sample/count"].ram_mib, r["per_sample/count"].ram_source) == (768, "workflow hint")
    assert r["per_sample/sort"].scatter_width == 4


def test_nested_parents_through_subworkflow_boundaries():
    wf = load_cwl(data("nested-parents.cwl"), data("nested-parents-job.yml"))
    r = rows(wf)
    assert {k: v.parents for k, v in r.items()} == {
        "prepare": (),
        "outer/first": ("prepare",),  # the enclosing step's parents
        "outer/second": ("outer/first",),
        "outer/side": ("prepare",),
        "finish": ("outer/second", "outer/side"),  # every last step of the subworkflow
    }
    tasks = {t.id: t.parents for t in wf.workload().tasks}
    # inside one scatter element, copies depend on the same element only
    assert tasks["outer/second[1]"] == ("outer/first[1]",)
    assert tasks["outer/first[2]"] == ("prepare",)
    assert tasks["finish"] == tuple(f"outer/second[{i}]" for i in range(3)) + tuple(
        f"outer/side[{i}]" for i in range(3))


def test_dynamic_resources_per_scatter_element(dynamic_resources):
    r = rows(dynamic_resources)
    sort = r["sort"]
    # 8 MiB per KiB of input, at least 64: small 7350 B, medium 25769 B, large 55019 B
    assert [i.ram_mib for i in sort.instances] == [64, 208, 432]
    assert (sort.ram_mib, sort.ram_source) == (432, "ResourceRequirement")
    assert [t.ram_mib for t in dynamic_resources.workload().tasks if t.id.startswith("sort[")] == [64, 208, 432]
    merge = r["merge"]
    assert (merge.vcpus, merge.vcpus_source, merge.ram_mib, merge.ram_source) == \
        (2, "ResourceRequirement", 256, "dynamic")
    (sentence,) = dynamic_resources.assumptions
    assert "merge" in sentence and "ramMin" in sentence and "output of step 'sort'" in sentence


# --- document forms --------------------------------------------------------------------------


def test_packed_document_reads_like_its_source(nested_scatter):
    from tests.cwl.helpers import EXAMPLES

    packed = load_cwl(data("packed.cwl"), str(EXAMPLES / "nested-scatter" / "job.yml"))
    assert [r.to_json() for r in packed.rows] == [r.to_json() for r in nested_scatter.rows]


def test_one_process_of_a_packed_document():
    (r,) = load_cwl(data("packed.cwl") + "#sort-words.cwl").rows
    assert r.step_id == "sort-words"


def test_import_of_a_tool_and_of_a_hint():
    (r,) = load_cwl(data("import.cwl")).rows
    assert (r.step_id, r.vcpus, r.ram_mib, r.vcpus_source) == ("imported", 3, 1536, "ResourceRequirement")
    assert (r.preempt, r.instance_type, r.preempt_source) == (Preempt(5), "c5.large", "hint")


def test_rows_serialise_to_json(scatter_gather):
    doc = scatter_gather.to_json()
    assert doc["rows"][0] == {
        "step_id": "split", "vcpus": 1, "vcpus_source": "hint", "ram_mib": 512, "ram_source": "hint",
        "preempt": True, "preempt_source": "inferred", "instance_type": None, "scatter_width": 12,
        "width_dynamic": False, "parents": [],
    }
