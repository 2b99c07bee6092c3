"""A run's Toil job store: which one, how a resume starts on it, and what the run's end leaves of it.

``file``: Toil's file: job store in the run directory (a local cluster; a Mesos cluster whose agents
mount the run directory at the same path).  An S3 job store (plastic.aws.job_store): ``aws:REGION:NAME``
in a bucket made for the run; the default with `--provider ec2`, where no file system is shared.
`job_store_setting` turns the run's setting into Toil's locator before anything starts (run.json keeps
it); `resume_start` is what `plastic run --resume` does with it; `end_job_store` says where an S3 one is
when the run ends.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from plastic.core.book.recovery import ToilStart, toil_start
from plastic.core.errors import InputError
from plastic.run.ec2 import Ec2Settings
from plastic.run.toil_command import FILE_JOB_STORE, FILE_JOB_STORE_DIR


def jobstore_initialized(job_store: Path) -> bool:
    """True when Toil got as far as saving the workflow's root job (a --restart can go on from it)."""
    return (job_store / "shared" / "rootJobStoreID").is_file()


def resume_start(job_store: str, run_dir: Path) -> ToilStart:
    """How a resume starts Toil on the run's job store: --restart, or anew (what Toil had made removed)."""
    if job_store != FILE_JOB_STORE:
        return job_store_start(job_store)
    path = run_dir / FILE_JOB_STORE_DIR
    start = toil_start(jobstore_initialized(path), path.exists())
    if start.wipe:
        shutil.rmtree(path)
    return start


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
