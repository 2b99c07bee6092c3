"""Cluster names, pure: one rule for every place a cluster's name goes.

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
"""

from __future__ import annotations

import hashlib
import re

CLUSTER_NAME_MAX = 63
CLUSTER_NAME_RULE = "1-63 letters, digits, '.', '_' and '-', starting with a letter or digit"
_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_OUTSIDE = re.compile(r"[^A-Za-z0-9._-]")


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
