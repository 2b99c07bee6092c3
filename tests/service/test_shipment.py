"""What `plastic submit` ships to a service on another machine (plastic.service.shipment): the packed
workflow, the job order with its local files named beside it, and nothing it cannot carry."""

from __future__ import annotations

import json

import pytest

from plastic.core.errors import InputError
from plastic.cwl.loader import load_cwl
from plastic.service import shipment
from tests.clirun import REPO

SG = REPO / "cwl-examples" / "scatter-gather"


def test_the_example_ships_whole_and_loads_again_where_it_is_unpacked(tmp_path):
    shipped = shipment.make_shipment(SG / "scatter-gather.cwl", SG / "job.yml")
    assert sorted(shipped.files) == ["inputs/0-input.txt", shipment.JOB, shipment.WORKFLOW]
    assert shipped.files["inputs/0-input.txt"] == (SG / "input.txt").read_bytes()
    job = json.loads(shipped.files[shipment.JOB])
    assert job["text"] == {"class": "File", "location": "inputs/0-input.txt"} and job["parts"] == list(range(1, 13))
    workflow, job_path = shipment.unpack(shipped.files, tmp_path / "run")
    assert workflow.parent == job_path.parent == tmp_path / "run" / shipment.SUBMITTED
    loaded = load_cwl(str(workflow), str(job_path))  # the same workflow, nothing left behind on this machine
    original = load_cwl(str(SG / "scatter-gather.cwl"), str(SG / "job.yml")).workload().tasks
    shape = lambda tasks: [(t.id, t.vcpus, t.ram_mib) for t in tasks]  # noqa: E731
    assert shape(loaded.workload().tasks) == shape(original)


def test_urls_stay_urls_secondary_files_ship_and_a_local_directory_is_refused(tmp_path):
    (tmp_path / "ref.fa").write_text(">chr1\nACGT\n")
    (tmp_path / "ref.fa.fai").write_text("chr1\t4\n")
    job = tmp_path / "job.yml"
    job.write_text("reads: {class: File, location: s3://lab/reads.fq}\n"
                   "ref: {class: File, path: ref.fa, secondaryFiles: [{class: File, location: ref.fa.fai}]}\n")
    shipped = shipment.make_shipment(SG / "scatter-gather.cwl", job)
    order = json.loads(shipped.files[shipment.JOB])
    assert order["reads"] == {"class": "File", "location": "s3://lab/reads.fq"}
    assert order["ref"]["location"].endswith("-ref.fa") and "path" not in order["ref"]
    assert order["ref"]["secondaryFiles"][0]["location"].endswith("-ref.fa.fai")
    assert len([n for n in shipped.files if n.startswith("inputs/")]) == 2
    job.write_text(f"data: {{class: Directory, location: {tmp_path}}}\n")
    with pytest.raises(InputError, match="Directory"):
        shipment.make_shipment(SG / "scatter-gather.cwl", job)
    job.write_text("data: {class: File, path: nowhere.txt}\n")
    with pytest.raises(InputError, match="cannot read an input file"):
        shipment.make_shipment(SG / "scatter-gather.cwl", job)


def test_a_shipment_over_the_limit_is_one_line(monkeypatch):
    monkeypatch.setattr(shipment, "MAX_BYTES", 1000)
    with pytest.raises(InputError, match="put the large inputs in S3") as err:
        shipment.make_shipment(SG / "scatter-gather.cwl", SG / "job.yml")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("url", "local"), [(None, True), ("unix:///tmp/r.sock", True),
                                            ("redis://localhost:6379/0", True),
                                            ("rediss://:pw@127.0.0.1:6379/0", True), ("redis://[::1]:6379", True),
                                            ("rediss://:pw@203.0.113.7:6379/0", False),
                                            ("redis://redis.lab.example:6379/0", False)])
def test_a_redis_on_this_machine_gets_paths_and_another_gets_a_shipment(url, local):
    assert shipment.is_local_redis(url) is local


def test_unpack_never_writes_outside_the_run_directory(tmp_path):
    with pytest.raises(InputError, match="leaves its directory"):
        shipment.unpack({"../../evil": b"x"}, tmp_path / "run")
    assert not (tmp_path / "evil").exists()
