"""`plastic run --provider ec2`: what the run does on AWS around Toil.

Before Toil starts: the run's EventBridge rule and SQS queue for spot events (tagged with the run),
and a `plastic sqs-watch` on that queue publishing interruption warnings and rebalance
recommendations into the run's Redis, where the execution manager drains the doomed agents.  The
nodes themselves are created and released by the batch system's ec2 provider (plastic.providers.ec2).
When the run ends, whatever way: the watcher stops and every resource tagged with the run is removed
(instances, launch templates, security group, rule, queue), as `plastic cloud down RUN_ID` would, but
the S3 job store of a run that did not succeed: `plastic run --resume` goes on from it.

The job store (plastic.aws.job_store): on EC2 a run's is in S3 unless `--job-store file` says
otherwise (then the run directory must be on a file system every instance mounts).  `job_store_setting`
turns the run's setting into Toil's locator before anything starts; `job_store_start` is what a
resume does with it; `end_job_store` says where it is when the run ends.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from plastic.compose import AGENT_IMAGE
from plastic.core.book.recovery import ToilStart, toil_start
from plastic.core.errors import InputError
from plastic.procs import die_with_parent, stop_process
from plastic.run.toil_command import FILE_JOB_STORE
from plastic.store.urls import URL_ENV

log = logging.getLogger(__name__)

WATCH_STOP_S = 10.0


@dataclass(frozen=True)
class Ec2Settings:
    image_id: str
    region: str | None = None
    subnet: str | None = None
    key_name: str | None = None
    instance_profile: str | None = None
    agent_image: str = AGENT_IMAGE
    down_wait_s: float = 600.0  # at the end: how long to wait for instances to go before removing the group

    def batch_args(self) -> list[str]:
        """The batch system's options for the ec2 provider (plastic.framework.elastic_options)."""
        args = ["--plasticImageId", self.image_id, "--plasticAgentImage", self.agent_image]
        for flag, value in (("--plasticRegion", self.region), ("--plasticSubnet", self.subnet),
                            ("--plasticKeyName", self.key_name), ("--plasticInstanceProfile", self.instance_profile)):
            if value:
                args += [flag, value]
        return args


def start(settings: Ec2Settings, run_id: str, run_dir: Path, redis_url: str,
          note: Callable[[str], None]) -> Callable[[], None]:
    """The spot-events path and its watcher; returns what to call when the run ends (stop and tear down)."""
    from plastic.aws import cloud
    from plastic.aws.ec2_cloud import Aws

    aws = Aws.connect(settings.region)
    queue_url, _created = cloud.spot_events(aws, run_id)
    argv = [sys.executable, "-m", "plastic", "sqs-watch", "--queue-url", queue_url or "", "--region", aws.region,
            "--wait-seconds", "2"]
    env = {**os.environ, URL_ENV: redis_url}  # not on the command line
    with open(run_dir / "sqs-watch.log", "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=run_dir, env=env,
                                preexec_fn=die_with_parent())  # noqa: PLW1509
    note(f"ec2 ({aws.region}): spot events through {queue_url}")

    def stop() -> None:
        stop_process(proc, WATCH_STOP_S)
        try:  # the job store: end_job_store
            removed = cloud.down(aws, run_id, wait_s=settings.down_wait_s, job_stores=False)
        except Exception as error:  # noqa: BLE001 - say it and how to finish by hand; never hide it
            note(f"ec2: could not remove the run's resources ({error}); run: plastic cloud down {run_id} "
                 f"--region {aws.region}")
            return
        instances = sum(1 for r in removed if r.startswith("instance "))
        note(f"ec2: removed {len(removed)} resource(s) tagged plastic:run={run_id} ({instances} instance(s))")

    return stop


S3_JOB_STORE = "s3"  # the run's bucket in this account and region (plastic.core.naming.job_store_name)


def job_store_setting(given: str, ec2_settings: Ec2Settings | None, run_id: str) -> str:
    """The run's job store as Toil's locator is made of it: FILE_JOB_STORE, or ``aws:REGION:NAME``.
    ``given``: '' (S3 on EC2, the run directory otherwise), FILE_JOB_STORE, S3_JOB_STORE (the run's
    bucket in --region, else boto3's region) or a locator of the user's."""
    from plastic.aws import job_store
    from plastic.aws.ec2_cloud import Aws
    from plastic.aws.session import describe

    choice = given or (S3_JOB_STORE if ec2_settings is not None else FILE_JOB_STORE)
    if choice == FILE_JOB_STORE:
        return choice
    if choice != S3_JOB_STORE:
        if not job_store.is_s3_locator(choice):
            raise InputError(f"a job store is {FILE_JOB_STORE}, {S3_JOB_STORE} or aws:REGION:NAME", source=choice,
                             field="--job-store")
        return job_store.parse(choice).locator
    aws = Aws.connect(ec2_settings.region if ec2_settings is not None else None)
    try:
        return job_store.for_run(aws, run_id).locator
    except Exception as exc:  # STS answers any credentials that AWS knows
        raise InputError(f"AWS does not accept these credentials ({describe(exc)})", field="--job-store") from None


def job_store_start(locator: str) -> ToilStart:
    """A resume's start on an S3 job store: --restart when Toil saved the workflow there, else from the
    beginning, its bucket removed first when Toil had made it (Toil makes it anew)."""
    from plastic.aws import job_store
    from plastic.aws.ec2_cloud import Aws

    store = job_store.parse(locator)
    aws = Aws.connect(store.region)
    found = job_store.state(aws, store)
    start = toil_start(found.initialized, found.exists)
    if start.wipe:
        job_store.remove_bucket(aws, store.bucket)
    return start


def end_job_store(locator: str, run_id: str, succeeded: bool, note: Callable[[str], None]) -> None:
    """A run's S3 job store when the run ends: Toil removed it when the workflow succeeded (any bucket
    left then is removed); otherwise it stays for `plastic run --resume`, and the note says so."""
    from plastic.aws import job_store
    from plastic.aws.ec2_cloud import Aws

    store = job_store.parse(locator)
    try:
        aws = Aws.connect(store.region)
        if not succeeded:
            if job_store.state(aws, store).exists:
                note(f"the run's job store stays in s3://{store.bucket} for `plastic run --resume`; "
                     f"`plastic cloud down {run_id} --region {store.region}` removes it")
            return
        if job_store.state(aws, store).exists:
            job_store.remove_bucket(aws, store.bucket)
            note(f"removed the job store's bucket {store.bucket}, which Toil left")
    except Exception as error:  # noqa: BLE001 - say it and how to finish by hand; never hide it
        note(f"could not check the job store's bucket {store.bucket} ({error}); "
             f"`plastic cloud down {run_id} --region {store.region}` removes it")
