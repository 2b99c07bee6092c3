"""`plastic run --provider ec2`: what the run does on AWS around Toil.

Before Toil starts: the run's EventBridge rule and SQS queue for spot events (tagged with the run),
and a `plastic sqs-watch` on that queue publishing interruption warnings and rebalance
recommendations into the run's Redis, where the execution manager drains the doomed agents.  The
nodes themselves are created and released by the batch system's ec2 provider (plastic.providers.ec2).
When the run ends, whatever way: the watcher stops and every resource tagged with the run is removed
(instances, launch templates, security group, rule, queue), as `plastic cloud down RUN_ID` would, but
the S3 job store of a run that did not succeed: `plastic run --resume` goes on from it (the job
store: plastic.run.job_store).
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
from plastic.procs import die_with_parent, stop_process
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
        try:  # the job store: plastic.run.job_store.end_job_store
            removed = cloud.down(aws, run_id, wait_s=settings.down_wait_s, job_stores=False)
        except Exception as error:  # noqa: BLE001 - say it and how to finish by hand; never hide it
            note(f"ec2: could not remove the run's resources ({error}); run: plastic cloud down {run_id} "
                 f"--region {aws.region}")
            return
        instances = sum(1 for r in removed if r.startswith("instance "))
        note(f"ec2: removed {len(removed)} resource(s) tagged plastic:run={run_id} ({instances} instance(s))")

    return stop
