"""The cluster most tests of tests/local run on (tests/local/conftest.py's `cluster` and `fresh_cluster`,
and the tests that start their own with other options): one on-demand core agent, two small spot ones."""

from __future__ import annotations

SPEC = {"clusters": [
    {"name": "core", "count": 1, "cpus": 4, "ram_mib": 8192, "preemptible": False, "instance_type": "m5.xlarge"},
    {"name": "burst-small", "count": 2, "cpus": 1, "ram_mib": 2048, "preemptible": True,
     "instance_type": "c5.large"},
]}
