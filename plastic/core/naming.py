"""Names that go into other systems, pure: one rule for every place a cluster's name goes, and the
name of a run's S3 job store.

A cluster's name is in the plan (`plastic plan`), the elastic controller's records and requests, the
EC2 tags (`plastic:cluster`) and launch template names (``plastic-RUN-CLUSTER``) of `plastic cloud up`
and the EC2 provider, the agents' Mesos attributes (``cluster:NAME``), the compose cluster's labels,
and the local cluster's YAML.  The narrowest of these (a Mesos attribute's text value: letters,
digits, '_', '/', '.', '-'; a compose service name: letters, digits, '.', '_', '-'; a launch template
name of at most 128 characters, the run id's 40 and ``plastic-`` included) gives the rule: 1 to 63
letters, digits, '.', '_' and '-', starting with a letter or digit.  Instance types (``c5.4xlarge``)
fit it as they are.

Names made from an instance type (`cluster_name`: ``burst-c5.4xlarge``) keep to the rule whatever the
catalog calls its types: a character outside it becomes '-', and a name longer than 63 characters is
cut and given a short digest of the whole, so two long types do not share a cluster.

A run's S3 job store (`job_store_name`) is Toil's ``aws:REGION:NAME``, in the bucket ``NAME--toil``.
S3 bucket names are global across accounts, and Toil's rule for NAME is narrower than S3's: 3 to 56
lower-case letters, digits and '-', neither first nor last, and no '--'.  The name is ``plastic-``,
the run id in that alphabet (cut to fit), and a digest of account, region and run id: the same run in
the same account always has the same bucket (`plastic cloud down` finds it again), and two accounts
running a run of the same id never ask for the same one.
"""

from __future__ import annotations

import hashlib
import re

CLUSTER_NAME_MAX = 63
CLUSTER_NAME_RULE = "1-63 letters, digits, '.', '_' and '-', starting with a letter or digit"
_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_OUTSIDE = re.compile(r"[^A-Za-z0-9._-]")

JOB_STORE_PREFIX = "plastic-"
JOB_STORE_NAME_MAX = 56  # Toil's: the bucket is NAME--toil, at most 63
JOB_STORE_BUCKET_SUFFIX = "--toil"
_JOB_STORE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{1,54}[a-z0-9]$")
_DIGEST_LENGTH = 8


def is_cluster_name(name: object) -> bool:
    return isinstance(name, str) and _CLUSTER_NAME.match(name) is not None


def cluster_name_problem(name: object) -> str | None:
    """None for a cluster name; else why it is not one, in one line that names it."""
    return None if is_cluster_name(name) else f"cluster name {name!r}: a cluster's name is {CLUSTER_NAME_RULE}"


def cluster_name(stem: str, suffix: str) -> str:
    """``stem-suffix`` within the rule (`is_cluster_name` holds of it for any stem that does)."""
    name = _OUTSIDE.sub("-", f"{stem}-{suffix}")
    if len(name) <= CLUSTER_NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:CLUSTER_NAME_MAX - len(digest) - 1]}-{digest}"


def is_job_store_name(name: object) -> bool:
    """Toil's rule for the NAME of ``aws:REGION:NAME`` (its bucket is NAME--toil)."""
    return isinstance(name, str) and _JOB_STORE_NAME.match(name) is not None and "--" not in name


def job_store_slug(run_id: str) -> str:
    """The run id in a job store name's alphabet, cut so that the prefix, it and a digest fit: the part
    every job store name of this run id starts with after JOB_STORE_PREFIX."""
    slug = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", run_id.lower())).strip("-")
    room = JOB_STORE_NAME_MAX - len(JOB_STORE_PREFIX) - _DIGEST_LENGTH - 1
    return slug[:room].rstrip("-")


def job_store_name(run_id: str, account_id: str, region: str) -> str:
    """The NAME of the run's S3 job store in this account and region (`is_job_store_name` holds of it)."""
    digest = hashlib.sha256(f"{account_id}:{region}:{run_id}".encode()).hexdigest()[:_DIGEST_LENGTH]
    slug = job_store_slug(run_id)
    return f"{JOB_STORE_PREFIX}{slug}-{digest}" if slug else f"{JOB_STORE_PREFIX}{digest}"
