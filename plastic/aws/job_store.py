"""A run's Toil job store in S3: its locator, the bucket made private and encrypted, found and removed.

On EC2 no file system is shared between the leader and the instances, so a run keeps Toil's job store
in S3: ``aws:REGION:NAME`` (Toil 9's AWS job store is S3 only), in the bucket ``NAME--toil``, NAME
from plastic.core.naming.job_store_name.  Toil's leader creates the bucket when the run starts, with
the run's tags (``TOIL_AWS_TAGS``, set by plastic.run.toil_command), and deletes it when the workflow
succeeds; a run that failed or stopped keeps it, so that `plastic run --resume` can go on, until
`plastic cloud down RUN_ID` removes it (every object version first).

Toil's leader makes the bucket able to hold public objects and customer-key encryption (its own
features, which a CWL run does not use).  plastic's batch system, which Toil starts once the job store
is made, takes that back (`harden`): every public access blocked, and default encryption at rest
(SSE-S3), before any job runs.  No object is ever made public: the public access block only ensures
it cannot be.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from plastic.aws.ec2_cloud import TAG_RUN, Aws, tag_list
from plastic.aws.session import describe, error_code
from plastic.core.errors import InputError, ProviderError
from plastic.core.naming import (
    JOB_STORE_BUCKET_SUFFIX,
    JOB_STORE_PREFIX,
    is_job_store_name,
    job_store_name,
    job_store_slug,
)

log = logging.getLogger(__name__)

SCHEME = "aws"
ROOT_JOB_KEY = "rootJobStoreID"  # a shared file of Toil's, in the bucket's root: the workflow's root job is saved
TOIL_TAGS_ENV = "TOIL_AWS_TAGS"  # the tags Toil's leader puts on the buckets it creates (JSON)
PRIVATE = {"BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True,
           "RestrictPublicBuckets": True}
ENCRYPTED = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"},
                        "BucketKeyEnabled": True}]}


@dataclass(frozen=True)
class S3JobStore:
    region: str
    name: str

    @property
    def locator(self) -> str:
        return f"{SCHEME}:{self.region}:{self.name}"

    @property
    def bucket(self) -> str:
        return self.name + JOB_STORE_BUCKET_SUFFIX


def is_s3_locator(locator: str | None) -> bool:
    return bool(locator) and str(locator).startswith(SCHEME + ":")


def parse(locator: str, *, field: str = "--job-store") -> S3JobStore:
    """``aws:REGION:NAME`` as a job store; InputError naming the field when it is not one Toil takes."""
    parts = locator.split(":")
    if len(parts) != 3 or parts[0] != SCHEME or not parts[1]:
        raise InputError("an S3 job store is aws:REGION:NAME", source=locator, field=field)
    if not is_job_store_name(parts[2]):
        raise InputError("a job store's NAME is 3-56 lower-case letters, digits and '-', starting and ending "
                         "with a letter or digit, without '--'", source=locator, field=field)
    return S3JobStore(parts[1], parts[2])


def for_run(aws: Aws, run_id: str) -> S3JobStore:
    """The run's job store in this account and region (the account asked of STS, which needs no permission)."""
    account = "(the account)" if aws.dry_run else str(aws.call("sts", "get_caller_identity")["Account"])
    return S3JobStore(aws.region, job_store_name(run_id, account, aws.region))


def toil_tags(run_id: str) -> str:
    """``TOIL_AWS_TAGS`` for the leader: the run's tags, as every resource of the run carries them."""
    return json.dumps({t["Key"]: t["Value"] for t in tag_list(run_id)})


def harden(aws: Aws, store: S3JobStore) -> None:
    """Every public access to the bucket blocked, and its objects encrypted at rest by default."""
    aws.call("s3", "put_public_access_block", Bucket=store.bucket, PublicAccessBlockConfiguration=PRIVATE)
    aws.call("s3", "put_bucket_encryption", Bucket=store.bucket, ServerSideEncryptionConfiguration=ENCRYPTED)
    log.info("job store %s: public access blocked, encrypted at rest (SSE-S3)", store.bucket)


def secure(locator: str) -> None:
    """`harden` the job store at ``locator``, from its own region; ProviderError when AWS refuses."""
    store = parse(locator, field="jobStore")
    try:
        harden(Aws.connect(store.region), store)
    except InputError:
        raise
    except Exception as exc:
        raise ProviderError(f"cannot make the job store's bucket private and encrypted ({describe(exc)})",
                            source=store.bucket) from None


@dataclass(frozen=True)
class JobStoreState:
    exists: bool
    initialized: bool  # Toil saved the workflow's root job: `toil-cwl-runner --restart` can go on


def state(aws: Aws, store: S3JobStore) -> JobStoreState:
    try:
        aws.call("s3", "head_bucket", Bucket=store.bucket)
    except Exception as exc:
        if error_code(exc) in ("404", "NoSuchBucket", "NotFound"):
            return JobStoreState(False, False)
        raise
    try:
        aws.call("s3", "head_object", Bucket=store.bucket, Key=ROOT_JOB_KEY)
    except Exception as exc:
        if error_code(exc) in ("404", "NoSuchKey", "NotFound"):
            return JobStoreState(True, False)
        raise
    return JobStoreState(True, True)


def run_buckets(aws: Aws, run_id: str) -> list[str]:
    """The run's job store buckets: named as the run's are, kept only when tagged with the run."""
    prefix = JOB_STORE_PREFIX + job_store_slug(run_id)
    found = []
    for bucket in aws.call("s3", "list_buckets", Prefix=prefix).get("Buckets", []):
        name = bucket["Name"]
        if not name.endswith(JOB_STORE_BUCKET_SUFFIX):
            continue
        try:
            tags = aws.call("s3", "get_bucket_tagging", Bucket=name).get("TagSet", [])
        except Exception as exc:
            if error_code(exc) in ("NoSuchTagSet", "NoSuchBucket"):
                continue
            raise
        if any(t["Key"] == TAG_RUN and t["Value"] == run_id for t in tags):
            found.append(name)
    return found


def remove(aws: Aws, run_id: str) -> list[str]:
    """Every job store bucket of the run emptied (all object versions) and deleted; one line each."""
    removed = []
    for name in run_buckets(aws, run_id):
        remove_bucket(aws, name)
        removed.append(f"S3 bucket {name}")
    return removed


def remove_bucket(aws: Aws, bucket: str) -> None:
    """The bucket emptied (every object version) and deleted."""
    _empty(aws, bucket)
    aws.call("s3", "delete_bucket", Bucket=bucket)


def _empty(aws: Aws, bucket: str) -> None:
    """Every unfinished upload aborted (a killed worker's), every object version and delete marker gone:
    the first 1,000 listed, deleted, until none is listed (no page marker is carried over keys that are
    already deleted)."""
    while uploads := aws.call("s3", "list_multipart_uploads", Bucket=bucket).get("Uploads", []):
        for upload in uploads:
            aws.call("s3", "abort_multipart_upload", Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
    while True:
        page = aws.call("s3", "list_object_versions", Bucket=bucket, MaxKeys=1000)
        doomed = [{"Key": v["Key"], "VersionId": v["VersionId"]} for kind in ("Versions", "DeleteMarkers")
                  for v in page.get(kind, [])]
        if not doomed:
            return
        reply = aws.call("s3", "delete_objects", Bucket=bucket, Delete={"Objects": doomed, "Quiet": True})
        if reply.get("Errors"):
            first = reply["Errors"][0]
            raise ProviderError(f"cannot delete {len(reply['Errors'])} object(s) of the job store, "
                                f"{first.get('Key')}: {first.get('Code')}", source=bucket)


def describe_bucket(aws: Aws, store: S3JobStore) -> dict[str, Any]:
    """What the bucket is (tags, public access block, default encryption), for status and tests."""
    tags = {t["Key"]: t["Value"] for t in aws.call("s3", "get_bucket_tagging", Bucket=store.bucket).get("TagSet", [])}
    block = aws.call("s3", "get_public_access_block", Bucket=store.bucket).get("PublicAccessBlockConfiguration", {})
    rules = aws.call("s3", "get_bucket_encryption", Bucket=store.bucket).get(
        "ServerSideEncryptionConfiguration", {}).get("Rules", [])
    algorithms = [r.get("ApplyServerSideEncryptionByDefault", {}).get("SSEAlgorithm") for r in rules]
    return {"bucket": store.bucket, "tags": tags, "private": all(block.get(k) for k in PRIVATE),
            "encryption": [a for a in algorithms if a]}
