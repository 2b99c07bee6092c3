"""`plastic run --job-store s3` end to end: Toil's job store in (moto's) S3, the tasks on a local cluster.

The bundled scatter-gather example reads its input from this machine (Toil imports it into the bucket),
its workers read and write the job store through S3 only, and its output is exported to the user's
bucket (`--outdir s3://...`).  While it runs, the job store's bucket is tagged with the run, private and
encrypted; when it succeeds the bucket is gone.  A failing run keeps its bucket (for --resume) and says
so; `plastic cloud down` removes it.  moto runs as a server in this process (tests/aws/conftest.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from plastic.aws import cloud, job_store
from plastic.aws.ec2_cloud import Aws
from tests.aws.helpers import CALL_LOG, POLICY, allowed, recorded_calls
from tests.clirun import REPO, assert_one_line_error, plastic

pytest.importorskip("toil")

EXAMPLE = REPO / "cwl-examples" / "scatter-gather"
FAILING = """cwlVersion: v1.2
class: CommandLineTool
baseCommand: [sh, -c, "echo broken >&2; exit 3"]
inputs: []
outputs: []
"""


def run(tmp_path: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`plastic run ARGS`, every AWS call of it and of what it starts recorded in tmp_path/aws-calls."""
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    env["PYTHONPATH"] = os.pathsep.join([str(CALL_LOG), *filter(None, [env.get("PYTHONPATH")])])
    env["PLASTIC_TEST_AWS_CALLS"] = str(tmp_path / "aws-calls")
    return subprocess.run([sys.executable, "-m", "plastic", "run", "--run-dir", str(tmp_path / "run"), "--quiet",
                           *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=timeout, check=False)


class BucketWatch(threading.Thread):
    """What the job store's bucket is while the run goes (tags, public access, encryption), each change."""

    def __init__(self, store: job_store.S3JobStore):
        super().__init__(daemon=True)
        self.store, self.seen, self.stopped = store, [], threading.Event()

    def run(self) -> None:
        aws = Aws.connect(None)
        while not self.stopped.wait(0.2):
            try:
                now = job_store.describe_bucket(aws, self.store)
            except Exception:  # noqa: BLE001 - not made yet, being made, or gone
                continue
            if not self.seen or self.seen[-1] != now:
                self.seen.append(now)


@pytest.mark.toil_e2e
def test_a_workflow_runs_with_its_job_store_in_s3_and_its_outputs_go_to_a_bucket(endpoint, tmp_path):
    import boto3

    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="lab-results")
    store = job_store.for_run(Aws.connect(None), "s3e2e")
    watch = BucketWatch(store)
    watch.start()
    job = tmp_path / "job.yml"
    job.write_text(f"text: {{class: File, path: {EXAMPLE / 'input.txt'}}}\nparts: [1, 2, 3, 4]\n")
    try:
        res = run(tmp_path, str(EXAMPLE / "scatter-gather.cwl"), str(job), "--job-store", "s3", "--run-id", "s3e2e",
                  "--outdir", "s3://lab-results/runs/s3e2e")
    finally:
        watch.stopped.set()
        watch.join(5)
    assert res.returncode == 0, res.stderr[-4000:]
    outputs = json.loads(res.stdout)
    assert outputs["sorted"]["location"] == "s3://lab-results/runs/s3e2e/sorted.txt"
    body = s3.get_object(Bucket="lab-results", Key="runs/s3e2e/sorted.txt")["Body"].read()
    expected = json.loads((EXAMPLE / "expected-output.json").read_text())["sorted"]  # the same sort of the same text
    assert f"sha1${hashlib.sha1(body).hexdigest()}" == expected["checksum"] and len(body) == expected["size"]
    assert not (tmp_path / "sorted.txt").exists()  # nothing in the (unused) local outdir
    saved = json.loads((tmp_path / "run" / "run.json").read_text())
    assert saved["job_store"] == store.locator and saved["out_url"] == "s3://lab-results/runs/s3e2e"
    assert not (tmp_path / "run" / "jobstore").exists()
    # while the run went, the bucket was the run's, private and encrypted; afterwards it is gone
    assert {"tags": json.loads(job_store.toil_tags("s3e2e")), "private": True, "encryption": ["AES256"],
            "bucket": store.bucket} in watch.seen, watch.seen
    assert cloud.leftovers(Aws.connect(None), "s3e2e")["buckets"] == 0
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["lab-results"]
    # every AWS call of the run, its Toil leader and its workers is one deploy/aws/iam-policy.json allows
    calls = recorded_calls(tmp_path / "aws-calls")
    assert {"s3:CreateBucket", "s3:PutPublicAccessBlock", "s3:PutObject", "s3:GetObject",
            "s3:DeleteBucket"} <= set(calls)
    policy = json.loads(POLICY.read_text())
    missing = [c for c in calls if not allowed(c, policy)]
    assert not missing, f"deploy/aws/iam-policy.json does not allow {missing}"


@pytest.mark.toil_e2e
def test_a_failed_run_keeps_its_bucket_until_cloud_down(endpoint, tmp_path):
    (tmp_path / "broken.cwl").write_text(FAILING)
    res = run(tmp_path, "broken.cwl", "--job-store", "s3", "--run-id", "s3fail", "--", "--retryCount", "0")
    assert res.returncode == 1, res.stderr[-3000:]
    store = job_store.for_run(Aws.connect(None), "s3fail")
    notes = json.loads((tmp_path / "run" / "report.json").read_text())["notes"]  # and on stderr without --quiet
    assert any(f"stays in s3://{store.bucket}" in n and "plastic cloud down s3fail" in n for n in notes), notes
    policy = json.loads(POLICY.read_text())
    assert not [c for c in recorded_calls(tmp_path / "aws-calls") if not allowed(c, policy)]
    assert job_store.state(Aws.connect(None), store) == job_store.JobStoreState(True, True)
    down = plastic("cloud", "down", "s3fail", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert f"S3 bucket {store.bucket}" in down.stdout + down.stderr
    assert cloud.leftovers(Aws.connect(None), "s3fail") == {"instances": 0, "launch_templates": 0,
                                                             "security_groups": 0, "rules": 0, "queues": 0,
                                                             "buckets": 0}


@pytest.mark.parametrize(("args", "words"), [
    (("--job-store", "nfs"), ("--job-store", "file, s3 or aws:REGION:NAME")),
    (("--job-store", "aws:us-east-1:Lab_Store"), ("--job-store", "lower-case")),
    (("--outdir", "s3:///prefix-only"), ("--outdir", "names a bucket")),
    (("--outdir", "gs://elsewhere/x"), ("--outdir", "s3://BUCKET/PREFIX")),
])
def test_a_bad_job_store_or_outdir_is_one_line_and_nothing_is_written(endpoint, tmp_path, args, words):
    res = run(tmp_path, str(EXAMPLE / "scatter-gather.cwl"), str(EXAMPLE / "job.yml"), *args, timeout=120)
    assert_one_line_error(res, *words)
    assert not (tmp_path / "run").exists()
