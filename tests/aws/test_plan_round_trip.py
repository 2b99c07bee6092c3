"""Every plan `plastic plan` writes is one `plastic cloud up` and the compose cluster accept (issue "From
an AWS account to a finished run", item 1): the cluster names keep to one rule (plastic.core.naming)
everywhere they go.  Dry runs only: no AWS, no endpoint."""

from __future__ import annotations

import json
import re

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bench.synthetic import mixed_tasks, write_wfcommons
from plastic import render
from plastic.aws import cloud
from plastic.aws.ec2_cloud import Aws, NodeSettings
from plastic.core.elastic.controller import ElasticController
from plastic.core.model import PREEMPTIBLE, RELIABLE, Catalog, InstanceType, TaskSpec, Workload, node_shapes
from plastic.core.naming import is_cluster_name
from plastic.core.planning.plan import plan_to_json
from plastic.core.planning.sizing import plan_workload
from plastic.local.config import load_plan_file
from tests.clirun import assert_one_line_error, plastic

TEMPLATE_NAME = re.compile(r"^[a-zA-Z0-9().\-/_]{3,128}$")  # EC2's rule for a launch template's name


def test_the_forty_task_plan_that_cloud_up_refused_is_accepted_as_json_and_yaml(tmp_path):
    """The issue's example: 40 mixed tasks, the default catalog, clusters named after instance types."""
    write_wfcommons(mixed_tasks(40, 1), tmp_path / "mixed.json")
    for fmt in ("json", "yaml"):
        made = plastic("plan", tmp_path / "mixed.json", "--format", fmt, "-o", tmp_path / f"plan.{fmt}")
        assert made.returncode == 0, made.stderr
    names = [c["name"] for c in json.loads((tmp_path / "plan.json").read_text())["clusters"]]
    assert "burst-c5.4xlarge" in names and len(names) > 4, names
    for fmt in ("json", "yaml"):
        up = plastic("cloud", "up", tmp_path / f"plan.{fmt}", "--run-id", "lab1", "--image-id", "ami-0",
                     "--region", "us-east-1", "--dry-run")
        assert up.returncode == 0, up.stderr
        templates = re.findall(r'"LaunchTemplateName": "([^"]+)"', up.stdout)
        assert sorted(templates) == sorted(f"plastic-lab1-{n}" for n in names)
    compose = plastic("plan", tmp_path / "mixed.json", "--format", "compose", "-o", tmp_path / "compose.yml")
    assert compose.returncode == 0, compose.stderr
    services = yaml.safe_load((tmp_path / "compose.yml").read_text())["services"]
    labelled = {s["labels"]["plastic.cluster"] for s in services.values() if "labels" in s}
    assert labelled == set(names)
    assert load_plan_file(str(tmp_path / "plan.yaml")).cluster_names == tuple(names)


def test_a_cluster_name_a_place_would_refuse_is_one_line_naming_the_field(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"schema": "plastic.plan/v1", "clusters": [
        {"name": "core", "instance_type": "c5.large", "market": "on-demand", "count": 1},
        {"name": "burst/large", "instance_type": "m5.large", "market": "spot", "count": 2}]}))
    res = plastic("cloud", "up", plan, "--run-id", "lab1", "--image-id", "ami-0", "--region", "us-east-1",
                  "--dry-run")
    assert_one_line_error(res, "plan.json", "clusters[1].name", "burst/large")
    plan.write_text("schema: [unclosed\n")
    assert_one_line_error(plastic("cloud", "up", plan, "--run-id", "lab1", "--image-id", "ami-0", "--region",
                                  "us-east-1", "--dry-run"), "plan.json", "YAML")


# ------------------------------------------------------------ any plan, any catalog

TYPE_NAMES = st.one_of(
    st.from_regex(r"\A[a-z][a-z0-9]{0,4}\.[a-z0-9]{1,12}\Z"),  # as EC2 names them
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=90))


@st.composite
def catalogs(draw) -> Catalog:
    """4 to 6 types of distinct sizes, each the cheapest for its size (so a workload of every size plans
    one cluster per type: more than three per market, named after the types), most with a spot price."""
    names = draw(st.lists(TYPE_NAMES, min_size=4, max_size=6, unique=True))
    sizes = sorted(draw(st.lists(st.sampled_from([1, 2, 4, 8, 16, 32]), min_size=len(names), max_size=len(names),
                                 unique=True)))
    types = []
    for name, vcpus in zip(names, sizes, strict=True):
        on_demand = vcpus * 0.05 * draw(st.floats(0.9, 1.0))
        spot = draw(st.one_of(st.none(), st.floats(0.2, 0.5).map(lambda f, od=on_demand: od * f)))
        types.append(InstanceType(name, vcpus, vcpus * 2048, on_demand, spot))
    if all(t.spot_usd_per_hour is None for t in types):
        t = types[0]
        types[0] = InstanceType(t.name, t.vcpus, t.ram_mib, t.on_demand_usd_per_hour, t.on_demand_usd_per_hour / 3)
    return Catalog(tuple(types), source="hypothesis")


@st.composite
def planned(draw):
    catalog = draw(catalogs())
    sizes = [(t.vcpus, t.ram_mib) for t in catalog.instance_types]
    tasks = []
    for i in range(draw(st.integers(1, 30))):
        vcpus, ram = draw(st.sampled_from(sizes))
        tasks.append(TaskSpec(f"t{i}", vcpus, ram, draw(st.sampled_from([PREEMPTIBLE, PREEMPTIBLE, RELIABLE])),
                              runtime_s=60.0))
    return catalog, plan_workload(Workload(tuple(tasks)), catalog)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(planned())
def test_every_plan_is_accepted_by_cloud_up_and_compose_and_its_names_are_valid_everywhere(tmp_path, case):
    catalog, plan = case
    doc = plan_to_json(plan)
    (tmp_path / "plan.json").write_text(json.dumps(doc))
    (tmp_path / "plan.yaml").write_text(render.plan_as_yaml(plan))
    names = {c["name"] for c in doc["clusters"]}
    event(f"{len(names)} clusters")
    assert all(is_cluster_name(n) for n in names), names
    for path in ("plan.json", "plan.yaml"):
        orders = cloud.read_orders(str(tmp_path / path), catalog)
        assert {o.cluster for o in orders} == names
        aws = Aws("us-east-1", dry_run=True)
        cloud.up(aws, "r-1", orders, catalog, NodeSettings(image_id="ami-0", master="10.0.0.1:5050",
                                                           redis="redis://10.0.0.1:6379/0"))
        templates = [p["LaunchTemplateName"] for _s, op, p in aws.calls if op == "CreateLaunchTemplate"]
        tokens = [p["ClientToken"] for _s, op, p in aws.calls if op == "CreateFleet"]
        assert len(templates) == len(tokens) == len([o for o in orders if o.count > 0])
        assert all(TEMPLATE_NAME.match(t) for t in templates), templates
        assert all(len(t) <= 64 for t in tokens) and len(set(tokens)) == len(tokens), tokens
    services = yaml.safe_load(render.plan_as_compose(plan))["services"]
    assert {s["labels"]["plastic.cluster"] for s in services.values() if "labels" in s} == names
    controller = ElasticController(node_shapes(catalog))
    assert all(is_cluster_name(controller.cluster_of(s)) for s in node_shapes(catalog))
