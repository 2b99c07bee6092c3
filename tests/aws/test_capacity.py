"""Spot capacity refused, on the HTTP path real AWS uses: a proxy in front of moto (server mode) answers
spot CreateFleet requests the way EC2 does when it has no capacity (a 200 reply whose errorSet names each
refused type, no instance), and passes everything else to moto.  moto itself never refuses.

- `plastic cloud up`: the spot clusters come back refused, as data, with the reason; the core is created.
- the elastic run's Provisioner with the ec2 provider: spot refused for two types -> the spot market counts
  as short -> preemptible work gets on-demand instances (reason spot_refused), which moto creates.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import httpx
import pytest

from plastic.aws.ec2_cloud import TAG_RUN, Aws, NodeSettings
from plastic.catalogs import load_catalog
from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.model import ElasticPolicy
from plastic.core.model import PREEMPTIBLE, Resources, node_shapes
from plastic.framework.adapter import Framework
from plastic.framework.launcher import TaskCommand
from plastic.framework.provisioner import Provisioner
from plastic.providers.ec2 import Ec2Provider
from tests.aws.helpers import tagged_instances, three_cluster_plan
from tests.clirun import plastic
from tests.fakes.clock import Clock
from tests.fakes.driver import FakeDriver
from tests.fakes.records import Kinds

pytest.importorskip("moto.server")

REFUSAL = ('<?xml version="1.0" encoding="UTF-8"?>\n<CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/'
           '2016-11-15/"><requestId>plastic-test</requestId><fleetId>fleet-refused</fleetId><errorSet>{errors}'
           '</errorSet><fleetInstanceSet/></CreateFleetResponse>')
ERROR = ('<item><launchTemplateAndOverrides><overrides><instanceType>{itype}</instanceType></overrides>'
         '</launchTemplateAndOverrides><lifecycle>spot</lifecycle><errorCode>InsufficientInstanceCapacity'
         '</errorCode><errorMessage>There is no Spot capacity available that matches your request.</errorMessage>'
         '</item>')


class NoSpotProxy(ThreadingHTTPServer):
    """Forwards to moto; a CreateFleet for spot capacity gets EC2's no-capacity reply instead."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.refused: list[list[str]] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: NoSpotProxy

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        if form.get("Action") == "CreateFleet" and \
                form.get("TargetCapacitySpecification.DefaultTargetCapacityType") == "spot":
            types = [v for k, v in sorted(form.items()) if k.startswith("LaunchTemplateConfigs.1.Overrides.")
                     and k.endswith(".InstanceType")]
            self.server.refused.append(types)
            self._answer(200, "text/xml", REFUSAL.format(errors="".join(ERROR.format(itype=t) for t in types))
                         .encode())
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
        reply = httpx.post(self.server.upstream + self.path, content=body, headers=headers, timeout=60)
        self._answer(reply.status_code, reply.headers.get("content-type", "text/xml"), reply.content)

    def do_GET(self):  # noqa: N802
        reply = httpx.get(self.server.upstream + self.path, timeout=60)
        self._answer(reply.status_code, reply.headers.get("content-type", "text/plain"), reply.content)

    def _answer(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def no_spot(endpoint, monkeypatch):
    proxy = NoSpotProxy(endpoint)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    yield proxy
    proxy.shutdown()
    proxy.server_close()


@pytest.mark.slow
def test_cloud_up_reports_refused_spot_clusters_as_data(no_spot, image_id, tmp_path):
    res = plastic("cloud", "up", three_cluster_plan(tmp_path / "plan.json"), "--run-id", "cap1", "--image-id", image_id)
    assert res.returncode == 0, res.stderr
    assert "cluster core: planned 1 c5.large on-demand; asked 1, obtained 1 c5.large" in res.stdout
    for line in [ln for ln in res.stdout.splitlines() if ln.startswith("cluster burst-")]:
        assert "obtained none; refused: InsufficientInstanceCapacity: There is no Spot capacity" in line, line
    # the planned type first, then the catalog's alternatives of its shape (same vCPUs, at least the RAM)
    assert sorted(no_spot.refused) == [["c5.2xlarge", "m5.2xlarge", "r5.2xlarge"], ["m5.large"]]
    spot = [i for i in tagged_instances("cap1") if i.get("InstanceLifecycle") == "spot"]
    assert spot == [] and len(tagged_instances("cap1")) == 1
    assert plastic("cloud", "down", "cap1").returncode == 0


@pytest.mark.slow
def test_the_elastic_run_falls_back_to_on_demand_when_ec2_has_no_spot(no_spot, image_id):
    catalog = load_catalog(None)
    shapes = node_shapes(catalog)
    clock, rec = Clock(), Kinds()
    fw = Framework("http://x", driver_factory=FakeDriver, clock=clock, wall_clock=clock, recorders=[rec])
    fw.registered(fw.driver, {"value": "fw-1"}, {})
    provider = Ec2Provider(Aws.connect(None), "cap2", NodeSettings(image_id=image_id, master="m:5050",
                                                                    redis="redis://r"), catalog)
    prov = Provisioner(fw, ElasticController(shapes, ElasticPolicy(idle_s=30)), provider, shapes)
    for i in range(4):
        fw.issue(f"j{i}", TaskCommand("true"), Resources(2, 4096), PREEMPTIBLE)
    for _ in range(6):
        clock.t += 5
        prov.tick()
    refused = rec.of("create_refused")
    assert len({r["instance_type"] for r in refused}) >= 2 and all(r["market"] == "spot" for r in refused)
    assert all("InsufficientInstanceCapacity" in r["reason"] for r in refused)
    requested = rec.of("node_requested")
    assert any(r["reason"] == "spot_refused" and r["market"] == "on-demand" for r in requested), requested
    instances = tagged_instances("cap2")
    assert instances and all(i.get("InstanceLifecycle") != "spot" for i in instances)
    assert all({t["Key"]: t["Value"] for t in i["Tags"]}[TAG_RUN] == "cap2" for i in instances)
    # one spot fleet request, refused for each type it offered (the planned one and its alternatives):
    # one refusal each, so the controller stops asking for spot at once
    assert sum(len(types) for types in no_spot.refused) == len(refused)
    assert {r["instance_type"] for r in refused} == {t for types in no_spot.refused for t in types}
